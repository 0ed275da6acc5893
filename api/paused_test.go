package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// Contacts added to the list while the campaign is paused are owed their opening: counted as added,
// listed as queued with reason paused, and sent once the campaign is live again. A draft campaign
// triggers nothing.
func TestContactsAddedWhilePausedGetTheirOpeningWhenLive(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"status": "paused"})
	draftID, _ := liveCampaign(t, srv, key, map[string]any{"status": "draft", "listId": listID})

	var ids []string
	for i := range 9 {
		ids = append(ids, namedContact(t, srv, key, fmt.Sprintf("+1415555%04d", 7100+i), "Pat"))
	}
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids}), http.StatusCreated, "")

	r := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends", key, nil)
	expect(t, r, http.StatusOK, "")
	sends := r.JSON(t)["data"].([]any)
	if len(sends) != 9 {
		t.Fatalf("%d sends listed while paused, want 9", len(sends))
	}
	for _, s := range sends {
		if s := s.(map[string]any); s["status"] != "queued" || s["reason"] != "paused" {
			t.Fatalf("send while paused: %v, want queued with reason paused", s)
		}
	}
	if added := reportOf(t, srv, key, campaignID)["added"]; added != 9.0 {
		t.Fatalf("report counts %v added while paused, want 9", added)
	}
	if n := len(campaignSends(t, draftID)); n != 0 {
		t.Fatalf("a draft campaign owes %d openings, want none", n)
	}
	if n := len(hook.deliveries()); n != 0 {
		t.Fatalf("%d deliveries while paused", n)
	}

	expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+campaignID, key, map[string]any{"status": "live"}), http.StatusOK, "")
	waitFor(t, 30*time.Second, "nine openings once live", func() bool { return len(hook.deliveries()) == 9 })
	if n := len(campaignMessages(t, draftID)); n != 0 {
		t.Fatalf("the draft campaign wrote %d openings", n)
	}
}
