package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/jobs"
	"funnelchat/models"
	"funnelchat/models/report"
)

// Funnel outcomes (README, "Campaign reports"): opening variants, goals and the campaign report,
// through the API with a real worker and webhook sink.

// outcomeServer is an api server whose key rate limit does not get in the way of a test that polls.
func outcomeServer(t *testing.T) *server {
	t.Helper()
	return startServer(t, "WEBHOOK_ALLOW_PRIVATE=true", "RATE_LIMIT_PER_MINUTE=1000000")
}

// variantCampaign creates a live campaign on listID that sends texts as its opening variants on the
// custom channel "chat", as fast as pacing allows, and returns its id.
func variantCampaign(t testing.TB, srv *server, key, listID string, texts []string, fields map[string]any) string {
	t.Helper()
	body := map[string]any{
		"name": "Variants", "type": "combined", "listId": listID, "channel": "custom:chat", "goal": "Book a demo call.",
		"openingMessages": texts, "status": "live", "sendRatePerMinute": 6000,
	}
	for k, v := range fields {
		body[k] = v
	}
	r := do(t, "POST", srv.URL+"/v1/campaigns", key, body)
	expect(t, r, http.StatusCreated, "")
	return r.JSON(t)["id"].(string)
}

// sendsOf lists every send of a campaign through GET /v1/campaigns/{id}/sends, by contact.
func sendsOf(t testing.TB, srv *server, key, campaignID string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	cursor := ""
	for {
		r := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends?limit=200&cursor="+cursor, key, nil)
		expect(t, r, http.StatusOK, "")
		page := r.JSON(t)
		for _, v := range page["data"].([]any) {
			s := v.(map[string]any)
			out[s["contactId"].(string)] = s
		}
		next, _ := page["nextCursor"].(string)
		if next == "" {
			return out
		}
		cursor = next
	}
}

// reportOf reads the campaign's JSON report.
func reportOf(t testing.TB, srv *server, key, campaignID string) map[string]any {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/report", key, nil)
	expect(t, r, http.StatusOK, "")
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("report Content-Type %q", ct)
	}
	return r.JSON(t)
}

// reachGoal posts POST /v1/contacts/{id}/goal with body (nil: no body at all) and expects 200.
func reachGoal(t testing.TB, srv *server, key, contactID string, body any) map[string]any {
	t.Helper()
	r := do(t, "POST", srv.URL+"/v1/contacts/"+contactID+"/goal", key, body)
	expect(t, r, http.StatusOK, "")
	return r.JSON(t)
}

// sendRow is a campaign send as the store keeps it.
type sendRow struct {
	ID             string     `bun:"id"`
	Status         string     `bun:"status"`
	Variant        int        `bun:"variant"`
	FollowUpsDone  bool       `bun:"follow_ups_done"`
	NextFollowUpAt *time.Time `bun:"next_follow_up_at"`
}

func sendRowOf(t testing.TB, campaignID, contactID string) sendRow {
	t.Helper()
	var rows []sendRow
	err := env.Store.DB().NewSelect().TableExpr("campaign_sends").Column("id", "status", "variant", "follow_ups_done", "next_follow_up_at").
		Where("campaign_id = ? AND contact_id = ?", campaignID, contactID).Scan(t.Context(), &rows)
	if err != nil || len(rows) != 1 {
		t.Fatalf("send of %s in %s: %v %v", contactID, campaignID, rows, err)
	}
	return rows[0]
}

// goalsOf is the contact's goals as the store keeps them.
func goalsOf(t testing.TB, accountID, contactID string) []models.Goal {
	t.Helper()
	goals, err := env.Store.GoalsOf(t.Context(), accountID, contactID)
	if err != nil {
		t.Fatal(err)
	}
	return goals
}

// checkGoalRecord validates a goal record (a response or an event's data) against the document's Goal.
func checkGoalRecord(t testing.TB, rec map[string]any) {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.doc.Components.Schemas["Goal"].Value.VisitJSON(rec); err != nil {
		t.Errorf("goal record is not a Goal of api/%s: %v\n%v", openAPIFile, firstLine(err), rec)
	}
}

// openingBody is the body of the first message the sink got for the contact ("" when none).
func openingBody(hook *sink, contactID string) string {
	if bodies := hookBodies(hook, contactID); len(bodies) > 0 {
		return bodies[0]
	}
	return ""
}

func TestVariantOpeningMessagesValidation(t *testing.T) {
	srv := outcomeServer(t)
	_, key := newAccount(t)
	listID := newList(t, srv, key, "leads")
	at := func(n int, s string) string { return strings.Repeat(s, n) }

	bad := map[string]map[string]any{
		"no texts":              {"openingMessages": []string{}},
		"one text":              {"openingMessages": []string{"Hi {{firstName}}"}},
		"six texts":             {"openingMessages": []string{"a", "b", "c", "d", "e", "f"}},
		"an empty text":         {"openingMessages": []string{"Hi", ""}},
		"a whitespace text":     {"openingMessages": []string{"Hi", " \t\n "}},
		"a text one over":       {"openingMessages": []string{"Hi", at(16385, "x")}},
		"a text one rune over":  {"openingMessages": []string{at(16385, "é"), "Hi"}},
		"texts of another type": {"openingMessages": []any{"Hi", 5}},
		"a string, not a list":  {"openingMessages": "Hi"},
		"both forms":            {"openingMessage": "Hi", "openingMessages": []string{"A", "B"}},
		"both forms, one empty": {"openingMessage": "", "openingMessages": []string{"A", "B"}},
	}
	t.Run("POST refuses", func(t *testing.T) {
		for name, fields := range bad {
			t.Run(name, func(t *testing.T) {
				body := map[string]any{"name": "Bad"}
				for k, v := range fields {
					body[k] = v
				}
				expect(t, do(t, "POST", srv.URL+"/v1/campaigns", key, body), http.StatusBadRequest, models.CodeValidation)
			})
		}
		r := do(t, "GET", srv.URL+"/v1/campaigns?limit=200", key, nil)
		expect(t, r, http.StatusOK, "")
		if n := len(r.JSON(t)["data"].([]any)); n != 0 {
			t.Fatalf("%d campaigns created by refused requests", n)
		}
	})

	r := do(t, "POST", srv.URL+"/v1/campaigns", key, map[string]any{"name": "Draft", "openingMessage": "Hello"})
	expect(t, r, http.StatusCreated, "")
	draft := r.JSON(t)["id"].(string)
	get := func(id string) map[string]any {
		t.Helper()
		r := do(t, "GET", srv.URL+"/v1/campaigns/"+id, key, nil)
		expect(t, r, http.StatusOK, "")
		return r.JSON(t)
	}
	before := get(draft)
	t.Run("PATCH refuses and changes nothing", func(t *testing.T) {
		for name, fields := range bad {
			t.Run(name, func(t *testing.T) {
				expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+draft, key, fields), http.StatusBadRequest, models.CodeValidation)
			})
		}
		if after := get(draft); !reflect.DeepEqual(after, before) {
			t.Fatalf("refused patches changed the campaign:\nbefore %v\nafter  %v", before, after)
		}
		if _, ok := before["openingMessages"]; ok || before["openingMessage"] != "Hello" {
			t.Fatalf("a campaign with one opening message: %v", before)
		}
	})

	t.Run("2 and 5 variants, trimmed, and the limit itself", func(t *testing.T) {
		for _, texts := range [][]string{
			{"Hi {{firstName}}!", "  {{firstName}}, a question?  "},
			{"A", "B", "C", "D", at(16384, "é")},
		} {
			r := do(t, "POST", srv.URL+"/v1/campaigns", key, map[string]any{"name": "AB", "openingMessages": texts})
			expect(t, r, http.StatusCreated, "")
			created := r.JSON(t)
			want := make([]any, len(texts))
			for i, s := range texts {
				want[i] = strings.TrimSpace(s)
			}
			got := get(created["id"].(string))
			if !reflect.DeepEqual(created["openingMessages"], want) || !reflect.DeepEqual(got["openingMessages"], want) ||
				got["openingMessage"] != "" {
				t.Fatalf("created %v, read back %v (openingMessage %q); want openingMessages %d texts, trimmed",
					created["openingMessages"], got["openingMessages"], got["openingMessage"], len(want))
			}
		}
	})

	t.Run("setting one form clears the other", func(t *testing.T) {
		r := do(t, "PATCH", srv.URL+"/v1/campaigns/"+draft, key, map[string]any{"openingMessages": []string{"One", "Two", "Three"}})
		expect(t, r, http.StatusOK, "")
		if c := get(draft); c["openingMessage"] != "" || !reflect.DeepEqual(c["openingMessages"], []any{"One", "Two", "Three"}) {
			t.Fatalf("after PATCH openingMessages: %v", c)
		}
		// A patch of anything else keeps the variants.
		expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+draft, key, map[string]any{"name": "Renamed"}), http.StatusOK, "")
		if c := get(draft); len(c["openingMessages"].([]any)) != 3 {
			t.Fatalf("a patch of the name dropped the variants: %v", c)
		}
		r = do(t, "PATCH", srv.URL+"/v1/campaigns/"+draft, key, map[string]any{"openingMessage": "Only one"})
		expect(t, r, http.StatusOK, "")
		if _, ok := r.JSON(t)["openingMessages"]; ok {
			t.Fatalf("the PATCH answer still has variants: %s", r.Body)
		}
		if c := get(draft); c["openingMessage"] != "Only one" || c["openingMessages"] != nil {
			t.Fatalf("after PATCH openingMessage: %v", c)
		}
		if _, ok := get(draft)["openingMessages"]; ok {
			t.Fatal("GET returns openingMessages after they were cleared")
		}
	})

	t.Run("going live with openingMessages alone", func(t *testing.T) {
		live := map[string]any{"name": "Live AB", "status": "live", "listId": listID, "channel": "custom:chat"}
		expect(t, do(t, "POST", srv.URL+"/v1/campaigns", key, live), http.StatusBadRequest, models.CodeValidation)
		live["openingMessages"] = []string{"Hi A", "Hi B"}
		r := do(t, "POST", srv.URL+"/v1/campaigns", key, live)
		expect(t, r, http.StatusCreated, "")
		c := r.JSON(t)
		if c["status"] != "live" || c["openingMessage"] != "" || len(c["openingMessages"].([]any)) != 2 {
			t.Fatalf("live campaign: %v", c)
		}
		id := c["id"].(string)
		// Clearing the variants with an empty openingMessage would leave a live campaign without an opening.
		expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+id, key, map[string]any{"openingMessage": ""}), http.StatusBadRequest, models.CodeValidation)
		if c := get(id); len(c["openingMessages"].([]any)) != 2 {
			t.Fatalf("a refused patch cleared the variants: %v", c)
		}
		// A draft with variants goes live by PATCH too.
		r = do(t, "POST", srv.URL+"/v1/campaigns", key, map[string]any{"name": "Later", "listId": listID, "channel": "custom:chat", "openingMessages": []string{"X", "Y"}})
		expect(t, r, http.StatusCreated, "")
		later := r.JSON(t)["id"].(string)
		r = do(t, "PATCH", srv.URL+"/v1/campaigns/"+later, key, map[string]any{"status": "live"})
		expect(t, r, http.StatusOK, "")
		if r.JSON(t)["status"] != "live" {
			t.Fatalf("PATCH to live: %s", r.Body)
		}
	})
}

// TestVariantOpeningsEndToEnd: each contact added gets one variant at random and keeps it; the message
// delivered is exactly that variant with {{firstName}} filled in or cleanly removed; the report
// compares the variants and names a winner only past noise.
func TestVariantOpeningsEndToEnd(t *testing.T) {
	srv := outcomeServer(t)
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	listID := newList(t, srv, key, "ab")
	texts := []string{"Hi {{firstName}}, thanks for signing up!", "{{ firstName }}, quick question: want a demo?"}
	campaignID := variantCampaign(t, srv, key, listID, texts, nil)

	const n = 60 // enough that each variant gets at least 10, but once in 10^7 runs
	ids := make([]string, n)
	phones := make([]string, n)
	first := map[string]string{}
	for i := range ids {
		phones[i] = fmt.Sprintf("+1415556%04d", i)
		if i%2 == 0 {
			name := fmt.Sprintf("Lee%d", i)
			ids[i] = namedContact(t, srv, key, phones[i], name)
			first[ids[i]] = name
		} else {
			ids[i] = newContact(t, srv, key, phones[i])
		}
	}
	r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids})
	expect(t, r, http.StatusCreated, "")

	waitFor(t, 60*time.Second, "every opening delivered", func() bool {
		for _, id := range ids {
			if sendRowOf(t, campaignID, id).Status != models.SendSent || openingBody(hook, id) == "" {
				return false
			}
		}
		return true
	})
	want := func(variant int, name string) string {
		switch {
		case variant == 0 && name != "":
			return "Hi " + name + ", thanks for signing up!"
		case variant == 0:
			return "Hi, thanks for signing up!"
		case name != "":
			return name + ", quick question: want a demo?"
		default:
			return "Quick question: want a demo?"
		}
	}
	sends := sendsOf(t, srv, key, campaignID)
	if len(sends) != n {
		t.Fatalf("%d sends listed, want %d", len(sends), n)
	}
	byVariant := map[int][]string{}
	stored := map[string]string{}
	for _, m := range campaignMessages(t, campaignID) {
		if _, dup := stored[m.ContactID]; dup {
			t.Fatalf("contact %s got two campaign messages", m.ContactID)
		}
		stored[m.ContactID] = m.Body
	}
	for _, id := range ids {
		s := sends[id]
		v, ok := s["variant"].(float64)
		if !ok || (v != 0 && v != 1) {
			t.Fatalf("send of %s: variant %v, want 0 or 1", id, s["variant"])
		}
		variant := int(v)
		if row := sendRowOf(t, campaignID, id); row.Variant != variant {
			t.Fatalf("send of %s: the API says variant %d, the store %d", id, variant, row.Variant)
		}
		byVariant[variant] = append(byVariant[variant], id)
		if got, w := openingBody(hook, id), want(variant, first[id]); got != w {
			t.Errorf("contact %s (first name %q, variant %d) got %q, want %q", id, first[id], variant, got, w)
		}
		if got := hookBodies(hook, id); len(got) != 1 {
			t.Errorf("contact %s got %d messages, want its one opening: %q", id, len(got), got)
		}
		if stored[id] != openingBody(hook, id) {
			t.Errorf("contact %s: stored %q, delivered %q", id, stored[id], openingBody(hook, id))
		}
	}
	if len(byVariant[0]) < 10 || len(byVariant[1]) < 10 {
		t.Fatalf("variants split %d/%d: want both used (and at least 10 each for the report's test)", len(byVariant[0]), len(byVariant[1]))
	}

	t.Run("re-adding changes nothing", func(t *testing.T) {
		r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids})
		expect(t, r, http.StatusOK, "") // nothing added
		if added, existing := r.JSON(t)["added"].([]any), r.JSON(t)["existing"].([]any); len(added) != 0 || len(existing) != len(ids) {
			t.Fatalf("re-adding: added %v, existing %d", added, len(existing))
		}
		for _, id := range ids[:5] {
			expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": id}), http.StatusOK, "")
		}
		// A contact added after them is a barrier: once its opening is delivered, an opening the
		// re-adding had queued would have gone too.
		barrier := namedContact(t, srv, key, "+14155569999", "Zed")
		expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": barrier}), http.StatusCreated, "")
		waitFor(t, 30*time.Second, "the barrier's opening", func() bool { return openingBody(hook, barrier) != "" })
		again := sendsOf(t, srv, key, campaignID)
		delete(again, barrier)
		if !reflect.DeepEqual(again, sends) {
			t.Fatalf("the sends changed after re-adding:\nbefore %v\nafter  %v", sends, again)
		}
		for _, id := range ids {
			if got := hookBodies(hook, id); len(got) != 1 {
				t.Fatalf("contact %s got %d messages after re-adding, want its one opening", id, len(got))
			}
		}
		if n := len(campaignMessages(t, campaignID)); n != len(ids)+1 {
			t.Fatalf("%d campaign messages, want %d", n, len(ids)+1)
		}
	})

	t.Run("the report compares the variants", func(t *testing.T) {
		report := reportOf(t, srv, key, campaignID)
		if report["bestVariant"] != nil {
			t.Fatalf("bestVariant %v before any reply", report["bestVariant"])
		}
		// Replies: all but 5 of variant 1, 5 of variant 0: variant 1 wins on replies.
		repliers := append(append([]string{}, byVariant[0][:5]...), byVariant[1][5:]...)
		phoneOf := map[string]string{}
		for i, id := range ids {
			phoneOf[id] = phones[i]
		}
		for i, id := range repliers {
			expect(t, chatIncoming(t, srv, key, fmt.Sprintf("ab-reply-%d", i), phoneOf[id], "chat", "Tell me more"), http.StatusOK, "")
		}
		waitFor(t, 30*time.Second, "the replies counted", func() bool {
			return reportOf(t, srv, key, campaignID)["replied"] == float64(len(repliers))
		})
		report = reportOf(t, srv, key, campaignID)
		if best := report["bestVariant"]; !reflect.DeepEqual(best, map[string]any{"index": 1.0, "metric": "replyRate"}) {
			t.Fatalf("bestVariant %v, want variant 1 by replyRate: %v", best, report["variants"])
		}
		// Goals: all but 5 of variant 0, 5 of variant 1: once anyone reached the goal, the goal rate decides.
		reachers := append(append([]string{}, byVariant[0][5:]...), byVariant[1][:5]...)
		for _, id := range reachers {
			reachGoal(t, srv, key, id, map[string]any{"campaignId": campaignID})
		}
		report = reportOf(t, srv, key, campaignID)
		if best := report["bestVariant"]; !reflect.DeepEqual(best, map[string]any{"index": 0.0, "metric": "goalRate"}) {
			t.Fatalf("bestVariant %v, want variant 0 by goalRate: %v", best, report["variants"])
		}
		n0, n1 := len(byVariant[0]), len(byVariant[1])
		rate := func(k, of int) float64 { return float64(int(float64(k)/float64(of)*10000+0.5)) / 10000 }
		wantVariants := []any{
			map[string]any{"index": 0.0, "letter": "A", "retired": false, "text": texts[0], "added": float64(n0), "opened": float64(n0), "replied": 5.0,
				"goalReached": float64(n0 - 5), "replyRate": rate(5, n0), "goalRate": rate(n0-5, n0)},
			map[string]any{"index": 1.0, "letter": "B", "retired": false, "text": texts[1], "added": float64(n1), "opened": float64(n1), "replied": float64(n1 - 5),
				"goalReached": 5.0, "replyRate": rate(n1-5, n1), "goalRate": rate(5, n1)},
		}
		// The barrier contact is variant 0 or 1 too; leave it out by comparing the others' counts.
		barrierVariant := -1
		for id, s := range sendsOf(t, srv, key, campaignID) {
			if _, known := sends[id]; !known {
				barrierVariant = int(s["variant"].(float64))
			}
		}
		if barrierVariant < 0 {
			t.Fatal("the barrier's send is not listed")
		}
		bv := wantVariants[barrierVariant].(map[string]any)
		bv["added"], bv["opened"] = bv["added"].(float64)+1, bv["opened"].(float64)+1
		opened := int(bv["opened"].(float64))
		if barrierVariant == 0 {
			bv["replyRate"], bv["goalRate"] = rate(5, opened), rate(n0-5, opened)
		} else {
			bv["replyRate"], bv["goalRate"] = rate(n1-5, opened), rate(5, opened)
		}
		if !reflect.DeepEqual(report["variants"], wantVariants) {
			t.Fatalf("variants\n got %v\nwant %v", report["variants"], wantVariants)
		}
		if report["added"] != float64(n+1) || report["opened"] != float64(n+1) || report["goalReached"] != float64(n0-5+5) {
			t.Fatalf("totals: %v", report)
		}
	})
}

func TestGoalEndpoint(t *testing.T) {
	srv := outcomeServer(t)
	account, key := newAccount(t)
	other, otherKey := newAccount(t)
	contact := namedContact(t, srv, key, "+14155557001", "Gia")
	draft := do(t, "POST", srv.URL+"/v1/campaigns", key, map[string]any{"name": "Demo", "openingMessage": "Hi"})
	expect(t, draft, http.StatusCreated, "")
	campaignID := draft.JSON(t)["id"].(string)
	theirCampaign := do(t, "POST", srv.URL+"/v1/campaigns", otherKey, map[string]any{"name": "Theirs"})
	expect(t, theirCampaign, http.StatusCreated, "")
	theirCampaignID := theirCampaign.JSON(t)["id"].(string)
	theirContact := namedContact(t, srv, otherKey, "+14155557002", "Tom")

	t.Run("without a body: the account's own bot, once", func(t *testing.T) {
		before := time.Now().Add(-time.Second)
		g := reachGoal(t, srv, key, contact, nil)
		checkGoalRecord(t, g)
		if g["contactId"] != contact || g["campaignId"] != nil || g["source"] != "api" || g["note"] != "" || g["summary"] != "" {
			t.Fatalf("goal %v", g)
		}
		if at := parseTime(t, g["at"]); at.Before(before) || at.After(time.Now().Add(time.Second)) {
			t.Fatalf("at %v", at)
		}
		again := reachGoal(t, srv, key, contact, map[string]any{"note": "a second time"})
		if !reflect.DeepEqual(again, g) {
			t.Fatalf("second call %v, want the first record %v", again, g)
		}
	})

	t.Run("for a campaign, with a note", func(t *testing.T) {
		g := reachGoal(t, srv, key, contact, map[string]any{"campaignId": campaignID, "note": "  Booked for Tuesday  "})
		checkGoalRecord(t, g)
		if g["campaignId"] != campaignID || g["note"] != "Booked for Tuesday" || g["source"] != "api" {
			t.Fatalf("goal %v", g)
		}
		raw := do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/goal", key, map[string]any{"campaignId": campaignID, "note": "changed"})
		expect(t, raw, http.StatusOK, "")
		if again := raw.JSON(t); !reflect.DeepEqual(again, g) {
			t.Fatalf("second call %v, want the first record %v", again, g)
		}
		goals := goalsOf(t, account.ID, contact)
		if len(goals) != 2 || goals[0].CampaignID != nil || goals[1].CampaignID == nil || *goals[1].CampaignID != campaignID {
			t.Fatalf("stored goals %+v, want the bot's and the campaign's", goals)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		stored := len(goalsOf(t, account.ID, contact))
		long := strings.Repeat("é", 2001)
		cases := []struct {
			name, contact, key string
			body               any
			status             int
			code               string
		}{
			{"another account's contact", theirContact, key, nil, 404, models.CodeNotFound},
			{"my contact with another account's key", contact, otherKey, nil, 404, models.CodeNotFound},
			{"an unknown contact", "ct_01jd8z6q6v3j7x0zj5s1v9k2qg", key, nil, 404, models.CodeNotFound},
			{"an over-long contact id", strings.Repeat("c", 100), key, nil, 404, models.CodeNotFound},
			{"another account's campaign", contact, key, map[string]any{"campaignId": theirCampaignID}, 404, models.CodeNotFound},
			{"an unknown campaign", contact, key, map[string]any{"campaignId": "cmp_01jd8z6q6v3j7x0zj5s1v9k2qh"}, 404, models.CodeNotFound},
			{"an empty campaign id", contact, key, map[string]any{"campaignId": ""}, 404, models.CodeNotFound},
			{"a note one over 2000", contact, key, map[string]any{"campaignId": campaignID, "note": long}, 400, models.CodeValidation},
			{"a note one over, for the account's bot", contact, key, map[string]any{"note": strings.Repeat("x", 2001)}, 400, models.CodeValidation},
			{"a note of another type", contact, key, map[string]any{"note": 5}, 400, models.CodeValidation},
			{"a campaign id of another type", contact, key, map[string]any{"campaignId": []string{campaignID}}, 400, models.CodeValidation},
			{"a body that is not JSON", contact, key, "goal!", 400, models.CodeInvalidJSON},
			{"truncated JSON", contact, key, `{"note": "x"`, 400, models.CodeInvalidJSON},
			{"a JSON array", contact, key, `[]`, 400, models.CodeInvalidJSON},
			{"two objects", contact, key, `{} {}`, 400, models.CodeInvalidJSON},
			{"a repeated member", contact, key, `{"campaignId":"x","campaignId":"y"}`, 400, models.CodeInvalidJSON},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+tc.contact+"/goal", tc.key, tc.body), tc.status, tc.code)
			})
		}
		expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/goal", "", nil), http.StatusUnauthorized, models.CodeUnauthorized)
		if n := len(goalsOf(t, account.ID, contact)); n != stored {
			t.Fatalf("%d goals stored by refused calls", n-stored)
		}
		if n := len(goalsOf(t, other.ID, theirContact)); n != 0 {
			t.Fatalf("another account's contact has %d goals", n)
		}
		// 2000 characters (not bytes) is the limit itself.
		fresh := namedContact(t, srv, key, "+14155557003", "Liz")
		g := reachGoal(t, srv, key, fresh, map[string]any{"campaignId": campaignID, "note": strings.Repeat("é", 2000)})
		if g["note"] != strings.Repeat("é", 2000) {
			t.Fatalf("a note of 2000 characters came back as %d characters", len([]rune(g["note"].(string))))
		}
	})

	t.Run("concurrent calls record one goal", func(t *testing.T) {
		racer := namedContact(t, srv, key, "+14155557004", "Ray")
		s := openEvents(t, srv, key)
		const callers = 20
		answers := make([]response, callers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				answers[i] = do(t, "POST", srv.URL+"/v1/contacts/"+racer+"/goal", key, map[string]any{"campaignId": campaignID, "note": fmt.Sprintf("caller %d", i)})
			}()
		}
		close(start)
		wg.Wait()
		var first map[string]any
		for i, r := range answers {
			if r.Status != http.StatusOK {
				t.Fatalf("caller %d: %d %s", i, r.Status, r.Body)
			}
			g := r.JSON(t)
			if first == nil {
				first = g
			}
			if !reflect.DeepEqual(g, first) {
				t.Fatalf("caller %d got %v, caller 0 %v", i, g, first)
			}
		}
		goals := goalsOf(t, account.ID, racer)
		if len(goals) != 1 || goals[0].CampaignID == nil || *goals[0].CampaignID != campaignID ||
			first["note"] != goals[0].Note || !parseTime(t, first["at"]).Equal(goals[0].At) {
			t.Fatalf("stored %+v, answered %v", goals, first)
		}
		// One event for the one goal: a goal for another contact afterwards is a barrier, the events
		// of one account arriving in the order they were published.
		barrier := namedContact(t, srv, key, "+14155557005", "Bea")
		reachGoal(t, srv, key, barrier, map[string]any{"campaignId": campaignID})
		events := 0
		s.expect(t, 10*time.Second, models.EventGoalReached, func(m map[string]any) bool { return m["contactId"] == barrier }, func(f sseFrame) {
			if f.Type == models.EventGoalReached && f.record(t)["contactId"] == racer {
				events++
				checkGoalRecord(t, f.record(t))
				if rec := f.record(t); !reflect.DeepEqual(rec, first) {
					t.Errorf("event %v, answer %v", rec, first)
				}
			}
		})
		if events != 1 {
			t.Fatalf("%d goal.reached events for one goal, want 1", events)
		}
	})
}

// TestGoalStopsFollowUpsAndIsPublished: a goal ends the contact's pending follow-ups of that campaign
// (also when the goal came before the opening was delivered) and is published as goal.reached;
// another contact's follow-ups go on.
func TestGoalStopsFollowUpsAndIsPublished(t *testing.T) {
	srv := outcomeServer(t)
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	s := openEvents(t, srv, key)
	// One follow-up an hour after the opening: the test runs it at once through asynq's inspector.
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"followUpsEnabled": true, "followUpDelaysHours": []float64{1}})
	gil := namedContact(t, srv, key, "+14155557101", "Gil")
	hal := namedContact(t, srv, key, "+14155557102", "Hal")
	ivy := namedContact(t, srv, key, "+14155557103", "Ivy")
	// Ivy reached the goal before the campaign wrote to her.
	early := reachGoal(t, srv, key, ivy, map[string]any{"campaignId": campaignID})
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{gil, hal, ivy}}), http.StatusCreated, "")
	waitFor(t, 20*time.Second, "the three openings delivered", func() bool {
		for _, c := range []string{gil, hal, ivy} {
			if sendRowOf(t, campaignID, c).Status != models.SendSent {
				return false
			}
		}
		return true
	})
	for _, c := range []string{gil, hal} {
		if row := sendRowOf(t, campaignID, c); row.FollowUpsDone || row.NextFollowUpAt == nil {
			t.Fatalf("send of %s before any goal: %+v, want a follow-up scheduled", c, row)
		}
	}
	if row := sendRowOf(t, campaignID, ivy); !row.FollowUpsDone || row.NextFollowUpAt != nil {
		t.Fatalf("send of Ivy, who reached the goal before her opening: %+v, want no follow-up", row)
	}
	s.expect(t, 10*time.Second, models.EventGoalReached, func(m map[string]any) bool { return reflect.DeepEqual(m, early) })

	// Without a body, the goal is the conversation's campaign: the one whose opening Gil got.
	g := reachGoal(t, srv, key, gil, nil)
	if g["campaignId"] != campaignID || g["contactId"] != gil || g["source"] != "api" {
		t.Fatalf("goal %v", g)
	}
	rec := s.expect(t, 10*time.Second, models.EventGoalReached, func(m map[string]any) bool { return m["contactId"] == gil })
	checkGoalRecord(t, rec)
	if !reflect.DeepEqual(rec, g) {
		t.Fatalf("event %v, answer %v", rec, g)
	}
	if row := sendRowOf(t, campaignID, gil); !row.FollowUpsDone || row.NextFollowUpAt != nil {
		t.Fatalf("Gil's send after the goal: %+v, want follow-ups done and none scheduled", row)
	}
	if row := sendRowOf(t, campaignID, hal); row.FollowUpsDone || row.NextFollowUpAt == nil {
		t.Fatalf("Hal's send changed with Gil's goal: %+v", row)
	}

	// Both follow-up tasks run now: Hal's is sent, Gil's writes nothing.
	inspector := asynq.NewInspector(env.Asynq)
	t.Cleanup(func() { _ = inspector.Close() })
	taskOf := func(contact string) string { return fmt.Sprintf("followup:%s:1", sendRowOf(t, campaignID, contact).ID) }
	for _, c := range []string{gil, hal} {
		id := taskOf(c)
		waitFor(t, 10*time.Second, "follow-up task "+id+" to wait for its time", func() bool {
			return inspector.RunTask(jobs.QueueLow, id) == nil
		})
	}
	perContact := func(contact string) int {
		n := 0
		for _, m := range campaignMessages(t, campaignID) {
			if m.ContactID == contact {
				n++
			}
		}
		return n
	}
	waitFor(t, 20*time.Second, "Hal's follow-up, and Gil's task done", func() bool {
		_, err := inspector.GetTaskInfo(jobs.QueueLow, taskOf(gil))
		return perContact(hal) == 2 && errors.Is(err, asynq.ErrTaskNotFound)
	})
	if n := perContact(gil); n != 1 {
		t.Fatalf("Gil has %d campaign messages after his goal, want only the opening", n)
	}
	if got := hookBodies(hook, gil); len(got) != 1 {
		t.Fatalf("Gil got %q after his goal, want only the opening", got)
	}
	if n := perContact(ivy); n != 1 {
		t.Fatalf("Ivy has %d campaign messages, want only the opening", n)
	}
}

func TestCampaignReport(t *testing.T) {
	srv := outcomeServer(t)
	startWorker(t)
	var hook *sink
	hook = newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if strings.Contains(string(hook.deliveries()[n-1].Body), "Hi Fay") {
			w.WriteHeader(http.StatusBadRequest) // final: a 4xx is not retried
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	key, _ := messagingAccount(t, srv, hook)
	// Days are counted in the account's time zone: one far from UTC, where the date often differs.
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"timeZone": "Pacific/Kiritimati"}), http.StatusOK, "")
	zone, err := time.LoadLocation("Pacific/Kiritimati")
	if err != nil {
		t.Fatal(err)
	}
	_, otherKey := newAccount(t)
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"openingMessage": "Hi {{firstName}}, welcome!"})
	theirs := do(t, "POST", srv.URL+"/v1/campaigns", otherKey, map[string]any{"name": "Theirs"})
	expect(t, theirs, http.StatusCreated, "")
	theirID := theirs.JSON(t)["id"].(string)

	t.Run("refusals", func(t *testing.T) {
		for _, q := range []string{"", "?format=json", "?format=csv"} {
			expect(t, do(t, "GET", srv.URL+"/v1/campaigns/cmp_01jd8z6q6v3j7x0zj5s1v9k2qh/report"+q, key, nil), http.StatusNotFound, models.CodeNotFound)
			expect(t, do(t, "GET", srv.URL+"/v1/campaigns/"+theirID+"/report"+q, key, nil), http.StatusNotFound, models.CodeNotFound)
			expect(t, do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/report"+q, otherKey, nil), http.StatusNotFound, models.CodeNotFound)
		}
		for _, q := range []string{"?format=xml", "?format=CSV", "?format=json,csv"} {
			expect(t, do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/report"+q, key, nil), http.StatusBadRequest, models.CodeValidation)
		}
		expect(t, do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/report", "", nil), http.StatusUnauthorized, models.CodeUnauthorized)
	})

	t.Run("a campaign without sends", func(t *testing.T) {
		r := do(t, "POST", srv.URL+"/v1/campaigns", key, map[string]any{"name": "Empty", "openingMessages": []string{"A", "B", "C"}})
		expect(t, r, http.StatusCreated, "")
		empty := r.JSON(t)["id"].(string)
		got := reportOf(t, srv, key, empty)
		want := map[string]any{
			"added": 0.0, "queued": 0.0, "pending": 0.0, "opened": 0.0, "failed": 0.0, "suppressed": 0.0, "deferred": 0.0, "skipped": 0.0,
			"replied": 0.0, "handedOff": 0.0, "goalReached": 0.0, "optedOut": 0.0, "replyRate": 0.0, "goalRate": 0.0,
			"medianMinutesToReply": nil, "medianMinutesToGoal": nil, "bestVariant": nil, "days": []any{}, "timeZone": "Pacific/Kiritimati",
			"variants": []any{
				map[string]any{"index": 0.0, "letter": "A", "retired": false, "text": "A", "added": 0.0, "opened": 0.0, "replied": 0.0, "goalReached": 0.0, "replyRate": 0.0, "goalRate": 0.0},
				map[string]any{"index": 1.0, "letter": "B", "retired": false, "text": "B", "added": 0.0, "opened": 0.0, "replied": 0.0, "goalReached": 0.0, "replyRate": 0.0, "goalRate": 0.0},
				map[string]any{"index": 2.0, "letter": "C", "retired": false, "text": "C", "added": 0.0, "opened": 0.0, "replied": 0.0, "goalReached": 0.0, "replyRate": 0.0, "goalRate": 0.0},
			},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("report\n got %v\nwant %v", got, want)
		}
		r = do(t, "GET", srv.URL+"/v1/campaigns/"+empty+"/report?format=csv", key, nil)
		expect(t, r, http.StatusOK, "")
		if rows := readCSV(t, r.Body); len(rows) != 1 || strings.Join(rows[0], ",") != strings.Join(report.CampaignReportCSVHeader, ",") {
			t.Fatalf("CSV of a campaign without sends: %q", rows)
		}
	})

	// The funnel: Ann replies, Ben replies asking for a human, Cat reaches the goal, Dan answers STOP (an
	// opt-out, not a reply), Eve stays silent, Fay's opening is refused by the webhook (she reaches the
	// goal anyway), and Gus had opted out on the channel before he was added.
	names := []string{"Ann", "Ben", "Cat", "Dan", "Eve", "Fay", "Gus"}
	ids, phones := map[string]string{}, map[string]string{}
	var order []string
	for i, n := range names {
		phones[n] = fmt.Sprintf("+1415555%04d", 7200+i)
		ids[n] = namedContact(t, srv, key, phones[n], n)
		order = append(order, ids[n])
	}
	expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+ids["Gus"]+"/consent", key, map[string]any{"channel": "chat", "status": "opted_out", "text": "said no"}),
		http.StatusOK, "")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": order}), http.StatusCreated, "")
	status := func(name string) string { return sendRowOf(t, campaignID, ids[name]).Status }
	waitFor(t, 30*time.Second, "every send settled", func() bool {
		for _, n := range []string{"Ann", "Ben", "Cat", "Dan", "Eve"} {
			if status(n) != models.SendSent {
				return false
			}
		}
		return status("Fay") == models.SendFailed && status("Gus") == models.SendSuppressed
	})
	expect(t, chatIncoming(t, srv, key, "rep-ann", phones["Ann"], "chat", "Sounds good, tell me more"), http.StatusOK, "")
	expect(t, chatIncoming(t, srv, key, "rep-ben", phones["Ben"], "chat", "Can I talk to a human please?"), http.StatusOK, "")
	expect(t, chatIncoming(t, srv, key, "rep-dan", phones["Dan"], "chat", "STOP"), http.StatusOK, "")
	catGoal := reachGoal(t, srv, key, ids["Cat"], nil)
	if catGoal["campaignId"] != campaignID {
		t.Fatalf("Cat's goal without a body: %v, want the campaign of her opening", catGoal)
	}
	reachGoal(t, srv, key, ids["Fay"], map[string]any{"campaignId": campaignID})
	waitFor(t, 20*time.Second, "Ben's hand-off", func() bool {
		n, err := env.Store.DB().NewSelect().TableExpr("alerts").Where("contact_id = ?", ids["Ben"]).Count(t.Context())
		return err == nil && n > 0
	})
	if ch, _ := consentOf(t, srv, key, ids["Dan"]); statusOn(ch, "chat") != models.ConsentOptedOut {
		t.Fatalf("Dan's consent after STOP: %v", ch)
	}

	got := reportOf(t, srv, key, campaignID)
	medianReply, _ := got["medianMinutesToReply"].(float64)
	medianGoal, _ := got["medianMinutesToGoal"].(float64)
	if got["medianMinutesToReply"] == nil || got["medianMinutesToGoal"] == nil || medianReply < 0 || medianReply > 5 || medianGoal < 0 || medianGoal > 5 {
		t.Fatalf("medians %v and %v, want the few seconds (0 to 5 minutes) the test took", got["medianMinutesToReply"], got["medianMinutesToGoal"])
	}
	if r10 := medianReply * 10; r10 != float64(int(r10)) {
		t.Fatalf("medianMinutesToReply %v is not rounded to 1 decimal", medianReply)
	}
	var dayOpened, dayReplied, dayGoal float64
	days := got["days"].([]any)
	today := time.Now().In(zone).Format(time.DateOnly)
	for i, v := range days {
		d := v.(map[string]any)
		dayOpened += d["opened"].(float64)
		dayReplied += d["replied"].(float64)
		dayGoal += d["goalReached"].(float64)
		if i > 0 {
			prev, _ := time.Parse(time.DateOnly, days[i-1].(map[string]any)["date"].(string))
			if date, _ := time.Parse(time.DateOnly, d["date"].(string)); !date.Equal(prev.AddDate(0, 0, 1)) {
				t.Fatalf("days are not consecutive: %v", days)
			}
		}
	}
	if len(days) == 0 || len(days) > 2 || days[len(days)-1].(map[string]any)["date"] != today || dayOpened != 5 || dayReplied != 2 || dayGoal != 1 {
		t.Fatalf("days %v: want today in Pacific/Kiritimati (%s) with 5 opened, 2 replied (Dan's STOP is an opt-out, not a reply), 1 goal in all", days, today)
	}
	delete(got, "medianMinutesToReply")
	delete(got, "medianMinutesToGoal")
	delete(got, "days")
	want := map[string]any{
		"added": 7.0, "queued": 0.0, "pending": 0.0, "opened": 5.0, "failed": 1.0, "suppressed": 1.0, "deferred": 0.0, "skipped": 0.0,
		"replied": 2.0, "handedOff": 1.0, "goalReached": 1.0, "optedOut": 1.0, "replyRate": 0.4, "goalRate": 0.2,
		"bestVariant": nil, "timeZone": "Pacific/Kiritimati",
		"variants": []any{map[string]any{"index": 0.0, "letter": "A", "retired": false, "text": "Hi {{firstName}}, welcome!", "added": 7.0, "opened": 5.0, "replied": 2.0,
			"goalReached": 1.0, "replyRate": 0.4, "goalRate": 0.2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("report\n got %v\nwant %v", got, want)
	}

	t.Run("CSV", func(t *testing.T) {
		r := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/report?format=csv", key, nil)
		expect(t, r, http.StatusOK, "")
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
			t.Fatalf("Content-Type %q", ct)
		}
		if cd := r.Header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") || !strings.Contains(cd, campaignID) {
			t.Fatalf("Content-Disposition %q", cd)
		}
		if line, _, _ := strings.Cut(string(r.Body), "\n"); line != "contact_id,first_name,phone,variant,opening_status,opened_at,first_reply_at,handed_off_at,goal_reached_at,opted_out_at" {
			t.Fatalf("header line %q", line)
		}
		rows := readCSV(t, r.Body)
		if len(rows) != 1+len(names) {
			t.Fatalf("%d lines, want the header and one per added contact: %q", len(rows), rows)
		}
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		stamp := func(row []string, name string) time.Time {
			t.Helper()
			v := row[col[name]]
			at, err := time.Parse(time.RFC3339, v)
			if err != nil || !strings.HasSuffix(v, "Z") {
				t.Fatalf("%s %q is not an RFC 3339 UTC time: %v", name, v, err)
			}
			return at
		}
		for i, row := range rows[1:] {
			n := names[i]
			if row[col["contact_id"]] != ids[n] || row[col["first_name"]] != n || row[col["phone"]] != phones[n] || row[col["variant"]] != "A" {
				t.Fatalf("row %d %q, want %s (%s) in the order added", i, row, n, ids[n])
			}
			// Which times each contact has: opened, replied, handed off, goal, opted out.
			has := map[string]string{
				"Ann": "opened_at first_reply_at", "Ben": "opened_at first_reply_at handed_off_at", "Cat": "opened_at goal_reached_at",
				"Dan": "opened_at opted_out_at", "Eve": "opened_at", "Fay": "goal_reached_at", "Gus": "",
			}[n]
			for _, field := range []string{"opened_at", "first_reply_at", "handed_off_at", "goal_reached_at", "opted_out_at"} {
				if want := strings.Contains(has, field); want != (row[col[field]] != "") {
					t.Fatalf("%s's %s is %q; want it set: %v (row %q)", n, field, row[col[field]], want, row)
				}
				if row[col[field]] != "" {
					stamp(row, field)
				}
			}
			wantStatus := map[string]string{"Fay": "failed", "Gus": "suppressed"}[n]
			if wantStatus == "" {
				wantStatus = "sent"
			}
			if row[col["opening_status"]] != wantStatus {
				t.Fatalf("%s's opening_status %q, want %s", n, row[col["opening_status"]], wantStatus)
			}
			if row[col["opened_at"]] != "" && row[col["first_reply_at"]] != "" && stamp(row, "first_reply_at").Before(stamp(row, "opened_at")) {
				t.Fatalf("%s replied before the opening was delivered: %q", n, row)
			}
		}
	})
}
