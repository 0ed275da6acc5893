package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"funnelchat/models"
)

// liveCampaign creates a list and a live campaign on it that sends on the custom channel "chat".
func liveCampaign(t testing.TB, srv *server, key string, fields map[string]any) (campaignID, listID string) {
	t.Helper()
	listID = newList(t, srv, key, "funnel")
	body := map[string]any{
		"name": "Spring funnel", "type": "combined", "listId": listID, "channel": "custom:chat",
		"openingMessage": "Hi {{firstName}}, thanks for signing up!", "goal": "Book a demo call.",
		"status": "live", "sendRatePerMinute": 60,
	}
	for k, v := range fields {
		body[k] = v
		if v == nil { // leave the default out
			delete(body, k)
		}
	}
	r := do(t, "POST", srv.URL+"/v1/campaigns", key, body)
	expect(t, r, http.StatusCreated, "")
	return r.JSON(t)["id"].(string), listID
}

func namedContact(t testing.TB, srv *server, key, phone, first string) string {
	t.Helper()
	r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": phone, "firstName": first})
	expect(t, r, http.StatusCreated, "")
	return r.JSON(t)["id"].(string)
}

// campaignMessages lists the outgoing messages of a campaign stored in the database, oldest first.
func campaignMessages(t testing.TB, campaignID string) []models.Message {
	t.Helper()
	var msgs []models.Message
	err := env.Store.DB().NewSelect().Model(&msgs).Where("campaign_id = ? AND direction = ?", campaignID, "outgoing").Order("created_at").Scan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func TestCampaignsCRUDAndValidation(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	listID := newList(t, srv, key, "leads")

	r := do(t, "POST", srv.URL+"/v1/campaigns", key, map[string]any{"name": "Webinar"})
	expect(t, r, http.StatusCreated, "")
	c := r.JSON(t)
	id := c["id"].(string)
	if c["type"] != "combined" || c["status"] != "draft" || c["language"] != "en" || c["triggerOnListAdd"] != true ||
		fmt.Sprint(c["followUpDelaysHours"]) != "[24 72]" || c["listId"] != nil || c["createdAt"] == nil {
		t.Fatalf("defaults: %s", r.Body)
	}
	r = do(t, "PATCH", srv.URL+"/v1/campaigns/"+id, key, map[string]any{
		"listId": listID, "channel": "custom:web", "openingMessage": "Hi {{firstName}}", "status": "live", "language": "pt-br",
	})
	expect(t, r, http.StatusOK, "")
	if got := r.JSON(t); got["status"] != "live" || got["language"] != "pt-BR" || got["listId"] != listID || got["name"] != "Webinar" {
		t.Fatalf("patched: %s", r.Body)
	}
	if got := do(t, "GET", srv.URL+"/v1/campaigns/"+id, key, nil).JSON(t); got["channel"] != "custom:web" {
		t.Fatalf("get: %v", got)
	}
	if list := do(t, "GET", srv.URL+"/v1/campaigns", key, nil).JSON(t)["data"].([]any); len(list) != 1 {
		t.Fatalf("list: %v", list)
	}

	_, otherKey := newAccount(t)
	foreignList := newList(t, srv, otherKey, "theirs")
	bad := map[string]map[string]any{
		"missing name":                    {"type": "combined"},
		"unknown type":                    {"name": "x", "type": "broadcast"},
		"unknown status":                  {"name": "x", "status": "running"},
		"bad language":                    {"name": "x", "language": "not a language!"},
		"bad channel":                     {"name": "x", "channel": "telegram"},
		"empty custom label":              {"name": "x", "channel": "custom:"},
		"live without a list":             {"name": "x", "status": "live", "channel": "custom:c", "openingMessage": "hi"},
		"live without an opening":         {"name": "x", "status": "live", "channel": "custom:c", "listId": listID},
		"live without a channel":          {"name": "x", "status": "live", "listId": listID, "openingMessage": "hi"},
		"live SMS without credentials":    {"name": "x", "status": "live", "listId": listID, "openingMessage": "hi", "channel": "sms"},
		"another account's list":          {"name": "x", "listId": foreignList},
		"follow-up delay zero":            {"name": "x", "followUpDelaysHours": []float64{0}},
		"follow-up delays not increasing": {"name": "x", "followUpDelaysHours": []float64{48, 24}},
		"negative send rate":              {"name": "x", "sendRatePerMinute": -5},
		"opening delay too long":          {"name": "x", "openingDelayMinutes": 100000},
		"name wrong type":                 {"name": 5},
		"delays wrong type":               {"name": "x", "followUpDelaysHours": "24,72"},
	}
	for name, body := range bad {
		t.Run("rejects "+name, func(t *testing.T) {
			expect(t, do(t, "POST", srv.URL+"/v1/campaigns", key, body), 400, models.CodeValidation)
		})
	}
	t.Run("another account cannot see or change it", func(t *testing.T) {
		expect(t, do(t, "GET", srv.URL+"/v1/campaigns/"+id, otherKey, nil), 404, models.CodeNotFound)
		expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+id, otherKey, map[string]any{"status": "paused"}), 404, models.CodeNotFound)
		expect(t, do(t, "GET", srv.URL+"/v1/campaigns/cmp_nope", key, nil), 404, models.CodeNotFound)
	})
}

func TestCampaignOpeningMessagesOnListAdd(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, nil)
	names := []string{"Ann", "Bo", "Cy", "Di", "Ed", "Flo"}
	var ids []string
	for i, n := range names {
		ids = append(ids, namedContact(t, srv, key, fmt.Sprintf("+1415555%04d", 2000+i), n))
	}
	r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids})
	expect(t, r, http.StatusCreated, "")

	waitFor(t, 30*time.Second, "six opening messages", func() bool { return len(hook.deliveries()) == 6 })
	var bodies []string
	for _, d := range hook.deliveries() {
		var p map[string]any
		_ = json.Unmarshal(d.Body, &p)
		bodies = append(bodies, p["body"].(string))
	}
	sort.Strings(bodies)
	for i, n := range []string{"Ann", "Bo", "Cy", "Di", "Ed", "Flo"} {
		if bodies[i] != "Hi "+n+", thanks for signing up!" {
			t.Fatalf("opening %d: %q", i, bodies[i])
		}
	}
	msgs := campaignMessages(t, campaignID)
	if len(msgs) != 6 {
		t.Fatalf("%d opening messages stored, want 6", len(msgs))
	}
	// Three at once, then one per second (60/min): no burst above the rate.
	for i := 3; i < len(msgs); i++ {
		if gap := msgs[i].CreatedAt.Sub(msgs[i-1].CreatedAt); gap < 900*time.Millisecond {
			t.Fatalf("opening %d came %s after the previous one, faster than 60/min", i+1, gap)
		}
	}
	if span := msgs[2].CreatedAt.Sub(msgs[0].CreatedAt); span > 900*time.Millisecond {
		t.Fatalf("the first three took %s; they should go at once", span)
	}

	t.Run("re-adding contacts sends nothing", func(t *testing.T) {
		r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids})
		expect(t, r, http.StatusOK, "")
		// An opening is written only for a send, and an add records its sends in its own transaction:
		// no new send, no new opening, without waiting for the worker.
		if n := len(campaignSends(t, campaignID)); n != 6 {
			t.Fatalf("%d openings owed after re-adding, want 6", n)
		}
		if n := len(campaignMessages(t, campaignID)); n != 6 {
			t.Fatalf("%d openings after re-adding, want 6", n)
		}
	})
	t.Run("a single add triggers too", func(t *testing.T) {
		one := namedContact(t, srv, key, "+14155553000", "Gil")
		expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": one}), http.StatusCreated, "")
		waitFor(t, 10*time.Second, "the seventh opening", func() bool { return len(hook.deliveries()) == 7 })
	})
}

func TestCampaignsThatMustNotSend(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	type setup struct{ campaignID, listID, contactID string }
	cases := []struct {
		name   string
		fields map[string]any
	}{
		{"draft", map[string]any{"status": "draft"}},
		{"trigger off", map[string]any{"triggerOnListAdd": false}},
		{"incoming", map[string]any{"type": "incoming"}},
	}
	setups := make(map[string]setup)
	for i, tc := range cases {
		campaignID, listID := liveCampaign(t, srv, key, tc.fields)
		contact := namedContact(t, srv, key, fmt.Sprintf("+1415555%04d", 4000+i), tc.name)
		expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": contact}), http.StatusCreated, "")
		setups[tc.name] = setup{campaignID, listID, contact}
	}
	// An opening is written only for a send, and an add records its sends in its own transaction: the
	// sends' absence below is the proof, without waiting for the worker.
	if n := len(hook.deliveries()); n != 0 {
		t.Fatalf("%d messages sent", n)
	}
	for name, s := range setups {
		if n := len(campaignMessages(t, s.campaignID)); n != 0 {
			t.Fatalf("campaign %s (%s) wrote %d messages", s.campaignID, name, n)
		}
		if sends := campaignSends(t, s.campaignID); len(sends) != 0 {
			t.Fatalf("campaign %s (%s) owes %d openings", s.campaignID, name, len(sends))
		}
	}

	// Going live triggers on contacts added from then on, not on those already on the list. A contact
	// added after the switch gets its opening, which shows that the worker would have sent any other.
	// (A paused campaign holds what it owes instead: TestContactsAddedWhilePausedGetTheirOpeningWhenLive.)
	for i, name := range []string{"draft"} {
		t.Run("switching to live sends nothing to contacts already on the list: "+name, func(t *testing.T) {
			s := setups[name]
			expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+s.campaignID, key, map[string]any{"status": "live", "triggerOnListAdd": true}), http.StatusOK, "")
			if sends := campaignSends(t, s.campaignID); len(sends) != 0 {
				t.Fatalf("going live recorded %d openings for the contacts on the list", len(sends))
			}
			newcomer := namedContact(t, srv, key, fmt.Sprintf("+1415555%04d", 4100+i), "New "+name)
			expect(t, do(t, "POST", srv.URL+"/v1/lists/"+s.listID+"/contacts", key, map[string]any{"contactId": newcomer}), http.StatusCreated, "")
			waitFor(t, 15*time.Second, "the newcomer's opening to be delivered", func() bool {
				for _, d := range hook.deliveries() {
					var p map[string]any
					if json.Unmarshal(d.Body, &p) == nil && p["contactId"] == newcomer {
						return true
					}
				}
				return false
			})
			// Openings are written only for sends, all recorded when contacts are added: one send, one
			// opening, whatever the worker still has queued.
			sends := campaignSends(t, s.campaignID)
			if len(sends) != 1 || sends[0] != newcomer {
				t.Errorf("openings owed to %v, want to the newcomer %s alone", sends, newcomer)
			}
			var to []string
			for _, m := range campaignMessages(t, s.campaignID) {
				to = append(to, m.ContactID)
			}
			if len(to) != 1 || to[0] != newcomer {
				t.Errorf("campaign messages to %v, want the newcomer's opening alone", to)
			}
			n, err := env.Store.DB().NewSelect().Model((*models.Message)(nil)).
				Where("contact_id = ? AND direction = ?", s.contactID, "outgoing").Count(t.Context())
			if err != nil || n != 0 {
				t.Errorf("%d messages (err %v) to the contact that was on the list before, want none", n, err)
			}
			for _, d := range hook.deliveries() {
				var p map[string]any
				if json.Unmarshal(d.Body, &p) == nil && p["contactId"] == s.contactID {
					t.Errorf("a message went to the contact that was on the list before: %s", d.Body)
				}
			}
		})
	}
}

// campaignSends returns the contacts a campaign owes (or sent) an opening, as the store records them
// before anything is queued.
func campaignSends(t testing.TB, campaignID string) []string {
	t.Helper()
	var contacts []string
	err := env.Store.DB().NewSelect().TableExpr("campaign_sends").Column("contact_id").
		Where("campaign_id = ?", campaignID).Scan(t.Context(), &contacts)
	if err != nil {
		t.Fatal(err)
	}
	return contacts
}

func TestPausingHoldsQueuedOpeningsAndResumingSendsThem(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"sendRatePerMinute": 20}) // one per 3 s after the first three
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, namedContact(t, srv, key, fmt.Sprintf("+1415555%04d", 5000+i), "P"))
	}
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids}), http.StatusCreated, "")
	waitFor(t, 10*time.Second, "the first three", func() bool { return len(campaignMessages(t, campaignID)) == 3 })
	expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+campaignID, key, map[string]any{"status": "paused"}), http.StatusOK, "")
	held := func() int64 {
		n, err := env.Store.DB().NewSelect().TableExpr("campaign_sends").Where("campaign_id = ? AND status = ?", campaignID, "held").Count(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitFor(t, 15*time.Second, "the other two to be held", func() bool { return held() == 2 })
	if n := len(campaignMessages(t, campaignID)); n != 3 {
		t.Fatalf("%d openings while paused, want 3", n)
	}
	expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+campaignID, key, map[string]any{"status": "live"}), http.StatusOK, "")
	waitFor(t, 20*time.Second, "the held two after resuming", func() bool { return len(campaignMessages(t, campaignID)) == 5 })
}

func TestFollowUpsAndRepliesInTheCampaignsVoice(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	// Follow-ups after about 1.8 s and 3.6 s: hours the test can wait for.
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{
		"followUpsEnabled": true, "followUpDelaysHours": []float64{0.0005, 0.001}, "goal": "Book a demo call.",
	})
	silent := namedContact(t, srv, key, "+14155556001", "Sal")
	talker := namedContact(t, srv, key, "+14155556002", "Tia")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{silent, talker}}), http.StatusCreated, "")
	waitFor(t, 10*time.Second, "both openings", func() bool { return len(campaignMessages(t, campaignID)) >= 2 })

	// Tia answers on the custom channel, from the id the opening went to (her phone).
	r := incoming(t, srv, key, "tia-1", "+14155556002", "Sounds good, tell me more")
	expect(t, r, http.StatusOK, "")
	replyTo := r.JSON(t)["messageId"].(string)
	if got := messageField(t, srv, key, replyTo, "contactId"); got != talker {
		t.Fatalf("Tia's reply went to contact %v, want %s", got, talker)
	}

	perContact := func(contactID string) []models.Message {
		var out []models.Message
		for _, m := range campaignMessages(t, campaignID) {
			if m.ContactID == contactID {
				out = append(out, m)
			}
		}
		return out
	}
	waitFor(t, 20*time.Second, "Sal's two follow-ups", func() bool { return len(perContact(silent)) == 3 })
	for _, m := range perContact(silent)[1:] {
		if m.Author != models.AuthorCampaign || !strings.Contains(m.Body, "Book a demo call") {
			t.Fatalf("follow-up %q by %s should steer toward the goal", m.Body, m.Author)
		}
	}
	// Tia got the opening and the bot's answer in the campaign's voice, and no follow-up.
	tia := perContact(talker)
	if len(tia) != 2 || tia[1].Author != models.AuthorBot || !strings.Contains(tia[1].Body, "Book a demo call") {
		var got []string
		for _, m := range tia {
			got = append(got, m.Author+": "+m.Body)
		}
		t.Fatalf("Tia's messages: %v", got)
	}
	// Her first follow-up fell due with Sal's: its task has run once her send's follow-ups are ended
	// (a reply ends them; a follow-up written anyway would be counted below).
	waitFor(t, 20*time.Second, "Tia's follow-ups to be ended", func() bool { return followUpsEnded(t, campaignID, talker) })
	if n := len(perContact(talker)); n != 2 {
		t.Fatalf("Tia has %d campaign messages, want 2: a reply cancels the follow-ups", n)
	}
}

func TestFollowUpsDueWhilePausedAreSentWhenLiveAtThePacingRate(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	worker := startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	// One follow-up about 5.4 s after each opening; one send a second after the first three.
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{
		"followUpsEnabled": true, "followUpDelaysHours": []float64{0.0015}, "sendRatePerMinute": 60,
	})
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, namedContact(t, srv, key, fmt.Sprintf("+1415555%04d", 7000+i), "F"))
	}
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids}), http.StatusCreated, "")
	waitFor(t, 10*time.Second, "the four openings", func() bool { return len(campaignMessages(t, campaignID)) == 4 })
	waitFor(t, 10*time.Second, "the four openings delivered", func() bool { return len(hook.deliveries()) == 4 })
	waitFor(t, 10*time.Second, "the four sends settled", func() bool {
		n, err := env.Store.DB().NewSelect().Table("campaign_sends").Where("campaign_id = ? AND status = 'sent'", campaignID).Count(t.Context())
		return err == nil && n == 4
	})
	r := do(t, "PATCH", srv.URL+"/v1/campaigns/"+campaignID, key, map[string]any{"status": "paused"})
	expect(t, r, http.StatusOK, "")
	if s := r.JSON(t)["sends"].(map[string]any); s["sent"] != 4.0 || s["queued"] != 0.0 {
		t.Fatalf("sends after the openings: %v", s)
	}

	held := func() int {
		n, err := env.Store.DB().NewSelect().Table("campaign_sends").Where("campaign_id = ? AND follow_up_held", campaignID).Count(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	waitFor(t, 20*time.Second, "the four follow-ups to fall due and be held", func() bool { return held() == 4 })
	// The sweep must not send held follow-ups either. It takes work owed for two of its intervals
	// (jobs/sweep.go): wait for a sweep that began that long after the last follow-up fell due,
	// then for what it may have queued to run.
	var sends []models.CampaignSend
	if err := env.Store.DB().NewSelect().Model(&sends).Where("campaign_id = ?", campaignID).Scan(t.Context()); err != nil {
		t.Fatal(err)
	}
	var lastDue time.Time
	for _, s := range sends {
		if s.NextFollowUpAt == nil {
			t.Fatalf("held send %s has no follow-up due", s.ID)
		}
		if s.NextFollowUpAt.After(lastDue) {
			lastDue = *s.NextFollowUpAt
		}
	}
	waitSweepAfter(t, worker, lastDue.Add(2*worker.Config.SweepInterval), "a sweep that takes the held follow-ups for owed")
	waitDrained(t, mustAccountID(t, key), retryHorizon)
	if n := len(campaignMessages(t, campaignID)); n != 4 {
		t.Fatalf("%d campaign messages while paused, want the 4 openings only", n)
	}

	expect(t, do(t, "PATCH", srv.URL+"/v1/campaigns/"+campaignID, key, map[string]any{"status": "live"}), http.StatusOK, "")
	waitFor(t, 20*time.Second, "the held follow-ups after going live", func() bool { return len(campaignMessages(t, campaignID)) == 8 })
	if n := held(); n != 0 {
		t.Fatalf("%d follow-ups still held", n)
	}
	var followUps []time.Time
	perContact := map[string]int{}
	for _, m := range campaignMessages(t, campaignID) {
		perContact[m.ContactID]++
		if perContact[m.ContactID] == 2 {
			followUps = append(followUps, m.CreatedAt)
		}
	}
	if len(followUps) != 4 || len(perContact) != 4 {
		t.Fatalf("follow-ups per contact: %v", perContact)
	}
	// Paced like openings: at 60 a minute no more than three go at once, so the last is at least about
	// a second after the first.
	if span := followUps[3].Sub(followUps[0]); span < 900*time.Millisecond {
		t.Fatalf("the four held follow-ups went out within %s: not paced", span)
	}
}

// followUpsEnded reports whether the campaign's send to the contact owes no more follow-ups.
func followUpsEnded(t testing.TB, campaignID, contactID string) bool {
	t.Helper()
	var done []bool
	err := env.Store.DB().NewSelect().Table("campaign_sends").Column("follow_ups_done").
		Where("campaign_id = ? AND contact_id = ?", campaignID, contactID).Scan(t.Context(), &done)
	if err != nil || len(done) != 1 {
		t.Fatalf("send of %s: %v %v", contactID, done, err)
	}
	return done[0]
}
