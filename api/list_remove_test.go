package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"funnelchat/models"
)

// sendOf returns the campaign's send of the contact as GET /v1/campaigns/{id}/sends lists it.
func sendOf(t *testing.T, srv *server, key, campaignID, contactID string) map[string]any {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends?limit=200", key, nil)
	expect(t, r, http.StatusOK, "")
	for _, s := range r.JSON(t)["data"].([]any) {
		if s := s.(map[string]any); s["contactId"] == contactID {
			return s
		}
	}
	t.Fatalf("campaign %s lists no send for %s: %s", campaignID, contactID, r.Body)
	return nil
}

// listMemberIDs lists the contacts on the list, as GET /v1/lists/{id}/contacts answers.
func listMemberIDs(t *testing.T, srv *server, key, listID string) []string {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/lists/"+listID+"/contacts?limit=200", key, nil)
	expect(t, r, http.StatusOK, "")
	var ids []string
	for _, c := range r.JSON(t)["data"].([]any) {
		ids = append(ids, c.(map[string]any)["id"].(string))
	}
	return ids
}

// DELETE /v1/lists/{id}/contacts/{contactId}: 204, then the contact is off the list; each way of
// naming something that is not there (or not the account's) is a 404 saying which.
func TestRemoveContactFromList(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	_, key := newAccount(t)
	_, otherKey := newAccount(t)
	listID := newList(t, srv, key, "Webinar")
	ann := newContact(t, srv, key, "+14155556101")
	bob := newContact(t, srv, key, "+14155556102")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{ann, bob}}), http.StatusCreated, "")
	otherList := newList(t, srv, otherKey, "Theirs")
	otherContact := newContact(t, srv, otherKey, "+14155556103")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+otherList+"/contacts", otherKey, map[string]any{"contactId": otherContact}), http.StatusCreated, "")
	url := func(list, contact string) string { return srv.URL + "/v1/lists/" + list + "/contacts/" + contact }

	r := do(t, "DELETE", url(listID, ann), key, nil)
	expect(t, r, http.StatusNoContent, "")
	if len(r.Body) != 0 {
		t.Fatalf("204 with a body: %q", r.Body)
	}
	if got := listMemberIDs(t, srv, key, listID); !slices.Equal(got, []string{bob}) {
		t.Fatalf("members after removing Ann: %v, want only Bob %s", got, bob)
	}
	if r := do(t, "GET", srv.URL+"/v1/contacts/"+ann, key, nil); r.Status != http.StatusOK {
		t.Fatalf("the removed contact itself: %d %s", r.Status, r.Body)
	}

	for _, tc := range []struct {
		name, key, list, contact, message string
	}{
		{"the contact is not on the list (any more)", key, listID, ann, "the contact is not on this list"},
		{"an unknown list", key, "lst_nope", bob, "list not found"},
		{"an unknown contact", key, listID, "ct_nope", "contact not found"},
		{"another account's list", key, otherList, bob, "list not found"},
		{"another account's contact", key, listID, otherContact, "contact not found"},
		{"another account's list and contact, by an account that has neither", key, otherList, otherContact, "list not found"},
		{"an id too long to be one", key, listID, strings.Repeat("x", 300), "contact not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "DELETE", url(tc.list, tc.contact), tc.key, nil)
			expect(t, r, http.StatusNotFound, models.CodeNotFound)
			if msg := r.JSON(t)["error"].(map[string]any)["message"]; msg != tc.message {
				t.Fatalf("message %q, want %q", msg, tc.message)
			}
		})
	}
	// The other account's membership is untouched by the attempts.
	if got := listMemberIDs(t, srv, otherKey, otherList); !slices.Equal(got, []string{otherContact}) {
		t.Fatalf("the other account's list now holds %v", got)
	}
	// Re-adding works as any add.
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": ann}), http.StatusCreated, "")
}

// A contact removed from a list before its opening was written never gets it: the send owed while the
// campaign was paused (held) is skipped with the reason, and going live sends the openings of the
// contacts still on the list only; one owed by a live campaign with an opening delay (queued) is
// skipped too. Re-adding the contact owes nothing again.
func TestRemovedContactGetsNoOpening(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"status": "paused"})
	stays := namedContact(t, srv, key, "+14155556201", "Stays")
	leaves := namedContact(t, srv, key, "+14155556202", "Leaves")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{stays, leaves}}), http.StatusCreated, "")
	if s := sendOf(t, srv, key, campaignID, leaves); s["status"] != "queued" || s["reason"] != "paused" {
		t.Fatalf("before the removal: %v, want queued (paused)", s)
	}

	expect(t, do(t, "DELETE", srv.URL+"/v1/lists/"+listID+"/contacts/"+leaves, key, nil), http.StatusNoContent, "")
	s := sendOf(t, srv, key, campaignID, leaves)
	if s["status"] != "skipped" || s["reason"] != models.ReasonRemovedFromList {
		t.Fatalf("after the removal: %v, want skipped with %s", s, models.ReasonRemovedFromList)
	}
	if s := sendOf(t, srv, key, campaignID, stays); s["status"] != "queued" {
		t.Fatalf("the contact still on the list: %v, want queued", s)
	}
	if counts := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID, key, nil).JSON(t)["sends"].(map[string]any); counts["skipped"] != 1.0 || counts["queued"] != 1.0 {
		t.Fatalf("the campaign's counts: %v", counts)
	}

	expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+campaignID, key, map[string]any{"status": "live"}), http.StatusOK, "")
	waitFor(t, deliveryWait, "the opening of the contact still on the list", func() bool {
		return sendOf(t, srv, key, campaignID, stays)["status"] == "sent"
	})
	// Both sends were settled by the resume: the one still queued went, the skipped one was never
	// queued again. Every opening the campaign wrote is the one contact's.
	for _, m := range campaignMessages(t, campaignID) {
		if m.ContactID != stays {
			t.Fatalf("an opening went to %s, who was removed from the list", m.ContactID)
		}
	}
	if n := len(hook.deliveries()); n != 1 {
		t.Fatalf("%d deliveries, want the one opening", n)
	}

	// Re-added, the contact owes nothing again: its send stays skipped.
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": leaves}), http.StatusCreated, "")
	if s := sendOf(t, srv, key, campaignID, leaves); s["status"] != "skipped" {
		t.Fatalf("re-added: %v, want still skipped", s)
	}

	t.Run("a queued opening of a live campaign", func(t *testing.T) {
		// The opening delay keeps the send queued (its task is scheduled an hour ahead).
		campaignID, listID := liveCampaign(t, srv, key, map[string]any{"openingDelayMinutes": 60})
		late := namedContact(t, srv, key, fmt.Sprintf("+1415555%04d", 6203), "Late")
		expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": late}), http.StatusCreated, "")
		if s := sendOf(t, srv, key, campaignID, late); s["status"] != "queued" {
			t.Fatalf("before the removal: %v", s)
		}
		expect(t, do(t, "DELETE", srv.URL+"/v1/lists/"+listID+"/contacts/"+late, key, nil), http.StatusNoContent, "")
		if s := sendOf(t, srv, key, campaignID, late); s["status"] != "skipped" {
			t.Fatalf("after the removal: %v, want skipped", s)
		}
		// Its task, run now as the worker would at its time, writes nothing.
		var sendID string
		if err := env.Store.DB().NewSelect().TableExpr("campaign_sends").Column("id").
			Where("campaign_id = ? AND contact_id = ?", campaignID, late).Scan(t.Context(), &sendID); err != nil {
			t.Fatal(err)
		}
		send, err := env.Store.CampaignSend(t.Context(), sendID)
		if err != nil {
			t.Fatal(err)
		}
		c, err := env.Store.Campaign(t.Context(), campaignID)
		if err != nil {
			t.Fatal(err)
		}
		ct, err := env.Store.ContactByID(t.Context(), c.AccountID, late)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := env.Store.WriteOpening(t.Context(), send, models.OutgoingMessage{Campaign: c, Contact: ct, Body: "Hi", ToID: "x"}); err != nil || m != nil {
			t.Fatalf("the opening of a skipped send was written: %+v, %v", m, err)
		}
	})
}
