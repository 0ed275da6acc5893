package api_test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/jobs"
	"funnelchat/models"
)

// hookBodies are the bodies of the messages a sink received for one contact, in order.
func hookBodies(hook *sink, contactID string) []string {
	var out []string
	for _, d := range hook.deliveries() {
		var p struct{ ContactID, Body string }
		if json.Unmarshal(d.Body, &p) == nil && p.ContactID == contactID {
			out = append(out, p.Body)
		}
	}
	return out
}

// chatIncoming posts a message from fromID on channel and returns the response.
func chatIncoming(t testing.TB, srv *server, key, sid, fromID, channel, body string) response {
	t.Helper()
	return do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, map[string]any{
		"customData": map[string]any{"messageSid": sid, "fromId": fromID, "toId": "biz-1", "body": body, "channel": channel},
	})
}

// senderOf is the contact of the incoming message r accepted.
func senderOf(t testing.TB, srv *server, key string, r response) string {
	t.Helper()
	m := do(t, "GET", srv.URL+"/v1/messages/"+r.JSON(t)["messageId"].(string), key, nil)
	expect(t, m, http.StatusOK, "")
	return m.JSON(t)["contactId"].(string)
}

// consentOf reads GET /v1/contacts/{id}/consent.
func consentOf(t testing.TB, srv *server, key, contactID string) (channels map[string]any, events []map[string]any) {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/contacts/"+contactID+"/consent", key, nil)
	expect(t, r, http.StatusOK, "")
	body := r.JSON(t)
	for _, e := range body["events"].([]any) {
		events = append(events, e.(map[string]any))
	}
	return body["channels"].(map[string]any), events
}

func statusOn(channels map[string]any, channel string) string {
	st, _ := channels[channel].(map[string]any)
	s, _ := st["status"].(string)
	return s
}

// TestKeywordsOnEveryPath walks one contact through STOP, the paths an opt-out closes, HELP and START,
// with a real worker and webhook sink.
func TestKeywordsOnEveryPath(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	settings := do(t, "GET", srv.URL+"/v1/settings/compliance", key, nil).JSON(t)
	optOut, optIn, help := settings["optOutConfirmation"].(string), settings["optInConfirmation"].(string), settings["helpText"].(string)

	r := chatIncoming(t, srv, key, "kw-1", "nora", "live-chat", "hello")
	expect(t, r, http.StatusOK, "")
	contact := senderOf(t, srv, key, r)
	waitFor(t, 10*time.Second, "the bot's reply", func() bool { return len(hookBodies(hook, contact)) == 1 })
	// The offline bot's reply goes out before it is stored (jobs.Handler.sendsBeforeStoring): its record,
	// landing later, would move the count of stored messages the refused sends below are checked by.
	first := r.JSON(t)["messageId"].(string)
	waitFor(t, 10*time.Second, "the bot's reply stored", func() bool { return messageField(t, srv, key, first, "botStatus") == "done" })

	// STOP, in a form people type: opted out before the answer, one confirmation, no bot reply.
	expect(t, chatIncoming(t, srv, key, "kw-2", "nora", "live-chat", "  Stop! "), http.StatusOK, "")
	channels, events := consentOf(t, srv, key, contact)
	if statusOn(channels, "live-chat") != models.ConsentOptedOut || len(events) != 1 {
		t.Fatalf("right after STOP: channels %v, events %v", channels, events)
	}
	if e := events[0]; e["source"] != "keyword" || e["text"] != "  Stop! " || e["messageId"] == nil || e["channel"] != "live-chat" {
		t.Fatalf("the event: %v", e)
	}
	waitFor(t, 10*time.Second, "the opt-out confirmation", func() bool { return len(hookBodies(hook, contact)) == 2 })
	if got := hookBodies(hook, contact)[1]; got != optOut {
		t.Fatalf("answer to STOP %q, want the confirmation %q", got, optOut)
	}

	// Every path that would write to the contact on that channel is closed.
	stored := func() int {
		n, err := env.Store.DB().NewSelect().Model((*models.Message)(nil)).Where("contact_id = ?", contact).Count(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	before := stored()
	expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/messages", key, map[string]any{"body": "Hi Nora", "channel": "live-chat"}),
		http.StatusConflict, "OPTED_OUT")
	expect(t, do(t, "POST", srv.URL+"/v1/send_custom_channel_message", key, map[string]any{
		"customData": map[string]any{"fromId": "nora", "customChannel": "live-chat", "body": "Hi Nora"},
	}), http.StatusConflict, "OPTED_OUT")
	if n := stored(); n != before {
		t.Fatalf("%d messages stored by refused sends", n-before)
	}
	// Another STOP records and sends nothing; a plain message is stored and shown, and unanswered.
	expect(t, chatIncoming(t, srv, key, "kw-3", "nora", "live-chat", "STOP"), http.StatusOK, "")
	expect(t, chatIncoming(t, srv, key, "kw-4", "nora", "live-chat", "are you still there?"), http.StatusOK, "")
	if _, events := consentOf(t, srv, key, contact); len(events) != 1 {
		t.Fatalf("a repeated STOP recorded an event: %v", events)
	}
	msgs := do(t, "GET", srv.URL+"/v1/contacts/"+contact+"/messages", key, nil).JSON(t)["data"].([]any)
	if last := msgs[len(msgs)-1].(map[string]any); last["body"] != "are you still there?" || last["direction"] != "incoming" {
		t.Fatalf("the message sent while opted out is not the latest stored: %v", last)
	}

	// HELP is answered while opted out, and the bot stays silent.
	expect(t, chatIncoming(t, srv, key, "kw-5", "nora", "live-chat", "help"), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the help text", func() bool { return len(hookBodies(hook, contact)) == 3 })
	waitDrained(t, mustAccountID(t, key), retryHorizon) // a reply to the messages sent while opted out would still be in a task
	if got := hookBodies(hook, contact); len(got) != 3 || got[2] != help {
		t.Fatalf("after STOP, STOP, a message and HELP the contact got %q; want only the help text %q", got[2:], help)
	}

	// START opts in again with its confirmation, and the bot answers again.
	expect(t, chatIncoming(t, srv, key, "kw-6", "nora", "live-chat", "START"), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the opt-in confirmation", func() bool { return len(hookBodies(hook, contact)) == 4 })
	if got := hookBodies(hook, contact)[3]; got != optIn {
		t.Fatalf("answer to START %q, want %q", got, optIn)
	}
	expect(t, chatIncoming(t, srv, key, "kw-7", "nora", "live-chat", "what are your hours?"), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the bot's reply after START", func() bool { return len(hookBodies(hook, contact)) == 5 })
	channels, events = consentOf(t, srv, key, contact)
	if statusOn(channels, "live-chat") != models.ConsentOptedIn || len(events) != 2 || events[1]["status"] != "opted_in" || events[1]["text"] != "START" {
		t.Fatalf("after START: channels %v, events %v", channels, events)
	}
	// The contact object carries its consent.
	if c := do(t, "GET", srv.URL+"/v1/contacts/"+contact, key, nil).JSON(t); statusOn(c["consent"].(map[string]any), "live-chat") != "opted_in" {
		t.Fatalf("contact: %v", c)
	}

	t.Run("an opt-out on one channel leaves the others open", func(t *testing.T) {
		expect(t, chatIncoming(t, srv, key, "kw-8", "nora", "whatsapp-like", "unsubscribe"), http.StatusOK, "")
		expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/messages", key, map[string]any{"body": "On live chat", "channel": "live-chat"}),
			http.StatusCreated, "")
		expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/messages", key, map[string]any{"body": "There", "channel": "whatsapp-like"}),
			http.StatusConflict, "OPTED_OUT")
	})

	t.Run("the account's own words", func(t *testing.T) {
		expect(t, do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"optOutKeywords": []string{"Basta"}, "optOutConfirmation": "Ciao!"}),
			http.StatusOK, "")
		r := chatIncoming(t, srv, key, "kw-9", "luca", "live-chat", "basta.")
		expect(t, r, http.StatusOK, "")
		luca := senderOf(t, srv, key, r)
		if channels, _ := consentOf(t, srv, key, luca); statusOn(channels, "live-chat") != models.ConsentOptedOut {
			t.Fatalf("'basta.' did not opt out: %v", channels)
		}
		waitFor(t, 10*time.Second, "the account's confirmation", func() bool {
			b := hookBodies(hook, luca)
			return len(b) == 1 && b[0] == "Ciao!"
		})
	})

	t.Run("a keyword inside a sentence is the bot's to read", func(t *testing.T) {
		r := chatIncoming(t, srv, key, "kw-10", "ana", "live-chat", "please don't stop the music")
		expect(t, r, http.StatusOK, "")
		ana := senderOf(t, srv, key, r)
		waitFor(t, 10*time.Second, "the bot's reply", func() bool { return len(hookBodies(hook, ana)) == 1 })
		if channels, _ := consentOf(t, srv, key, ana); len(channels) != 0 {
			t.Fatalf("a sentence with 'stop' in it changed consent: %v", channels)
		}
	})

	t.Run("the offline bot reads a request to stop in plain words", func(t *testing.T) {
		r := chatIncoming(t, srv, key, "kw-11", "jo", "live-chat", "Please stop texting me, thanks")
		expect(t, r, http.StatusOK, "")
		jo := senderOf(t, srv, key, r)
		waitFor(t, 10*time.Second, "the opt-out by the bot", func() bool {
			channels, _ := consentOf(t, srv, key, jo)
			return statusOn(channels, "live-chat") == models.ConsentOptedOut
		})
		_, events := consentOf(t, srv, key, jo)
		if len(events) != 1 || events[0]["source"] != "bot" || events[0]["text"] != "Please stop texting me, thanks" {
			t.Fatalf("events: %v", events)
		}
		waitFor(t, 10*time.Second, "its confirmation", func() bool { return len(hookBodies(hook, jo)) == 1 })
		if b := hookBodies(hook, jo); b[0] != "Ciao!" {
			t.Fatalf("the bot's opt-out answered %q, want the account's confirmation", b[0])
		}
	})

	// Requests a user reported as answered with the bot's greeting and goal.
	for i, text := range []string{"stop sending me this", "STOP sending me this", "stop sending this", "stop sending me stuff"} {
		t.Run("the offline bot answers "+text+" with the confirmation", func(t *testing.T) {
			r := chatIncoming(t, srv, key, fmt.Sprintf("kw-stop-%d", i), fmt.Sprintf("stopper-%d", i), "live-chat", text)
			expect(t, r, http.StatusOK, "")
			contact := senderOf(t, srv, key, r)
			waitFor(t, 10*time.Second, "the answer", func() bool { return len(hookBodies(hook, contact)) > 0 })
			if b := hookBodies(hook, contact); len(b) != 1 || b[0] != "Ciao!" {
				t.Fatalf("%q was answered %q, want only the account's confirmation", text, b)
			}
			channels, events := consentOf(t, srv, key, contact)
			if statusOn(channels, "live-chat") != models.ConsentOptedOut || len(events) != 1 || events[0]["source"] != "bot" ||
				events[0]["text"] != text {
				t.Fatalf("consent after %q: channels %v, events %v", text, channels, events)
			}
		})
	}
}

// TestOptOutSuppressesWhatCampaignsOwe: a queued opening to a contact who opts out on the campaign's
// channel is suppressed (OPTED_OUT), never sent; a contact opted out before being added gets a
// suppressed send at once; one opted out on another channel gets its opening.
func TestOptOutSuppressesWhatCampaignsOwe(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"openingDelayMinutes": 1})
	_, laterList := liveCampaign(t, srv, key, nil)

	waiting := namedContact(t, srv, key, "+14155559001", "Wes")
	before := namedContact(t, srv, key, "+14155559002", "Bea")
	other := namedContact(t, srv, key, "+14155559003", "Oli")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": waiting}), http.StatusCreated, "")
	// Wes's opening waits out the campaign's one-minute delay; he opts out on its channel meanwhile.
	expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+waiting+"/consent", key, map[string]any{"channel": "chat", "status": "opted_out", "text": "called to say stop"}),
		http.StatusOK, "")
	sends := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends", key, nil).JSON(t)["data"].([]any)
	if s := sends[0].(map[string]any); len(sends) != 1 || s["status"] != "suppressed" || !strings.HasPrefix(errorText(s["reason"]), "OPTED_OUT") {
		t.Fatalf("Wes's send: %v", sends)
	}
	if s := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID, key, nil).JSON(t)["sends"].(map[string]any); s["suppressed"] != 1.0 || s["queued"] != 0.0 {
		t.Fatalf("counts: %v", s)
	}

	// Opted out before the addition: the opening task finds it and suppresses the send.
	expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+before+"/consent", key, map[string]any{"status": "opted_out", "source": "phone call"}), http.StatusOK, "")
	expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+other+"/consent", key, map[string]any{"channel": "sms", "status": "opted_out"}), http.StatusOK, "")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+laterList+"/contacts", key, map[string]any{"contactIds": []string{before, other}}), http.StatusCreated, "")
	waitFor(t, 10*time.Second, "Oli's opening", func() bool { return len(hookBodies(hook, other)) == 1 })
	// An opening to Bea would still be in a task: at once, or paced a slot (3 s at the default rate)
	// later. Wes's opening task is scheduled a minute out, beyond the horizon; his send is suppressed
	// already (checked above).
	waitDrained(t, mustAccountID(t, key), retryHorizon)
	if b := hookBodies(hook, before); len(b) != 0 {
		t.Fatalf("Bea, opted out on every channel, got %q", b)
	}
	if b := hookBodies(hook, waiting); len(b) != 0 {
		t.Fatalf("Wes got %q", b)
	}
}

// TestQuietHoursDeferCampaignOpenings: an opening whose time falls in the contact's quiet hours is
// deferred to the window's end (notBefore), never dropped, and goes once the window allows it; a
// contact whose zone is outside the window gets it at once; replies are never deferred. The window
// is chosen around the current time, in zones chosen relative to it: nothing waits for real hours.
func TestQuietHoursDeferCampaignOpenings(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)

	// Quiet for two hours around now in UTC; a contact six hours east is outside them.
	now := time.Now().UTC()
	window := map[string]any{"start": now.Add(-time.Hour).Format("15:04"), "end": now.Add(time.Hour).Format("15:04")}
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"quietHours": window, "timeZone": "UTC"}), http.StatusOK, "")
	campaignID, listID := liveCampaign(t, srv, key, nil)

	mk := func(phone, name, zone string) string {
		body := map[string]any{"phone": phone, "firstName": name}
		if zone != "" {
			body["timeZone"] = zone
		}
		r := do(t, "POST", srv.URL+"/v1/contacts", key, body)
		expect(t, r, http.StatusCreated, "")
		return r.JSON(t)["id"].(string)
	}
	// +44 numbers imply Europe/London, which may be inside or outside: these contacts carry a zone.
	inside := mk("+447700900101", "In", "UTC")
	outside := mk("+447700900102", "Out", "Etc/GMT-6") // UTC+6
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{inside, outside}}), http.StatusCreated, "")

	waitFor(t, 10*time.Second, "the opening outside quiet hours", func() bool { return len(hookBodies(hook, outside)) == 1 })
	var deferred map[string]any
	waitFor(t, 10*time.Second, "the other send to be deferred", func() bool {
		for _, v := range do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends?status=deferred", key, nil).JSON(t)["data"].([]any) {
			deferred = v.(map[string]any)
		}
		return deferred != nil
	})
	notBefore, err := time.Parse(time.RFC3339Nano, deferred["notBefore"].(string))
	if err != nil || deferred["contactId"] != inside {
		t.Fatalf("deferred send %v (%v)", deferred, err)
	}
	wantEnd := now.Add(time.Hour).Truncate(time.Minute)
	if !notBefore.Equal(wantEnd) {
		t.Fatalf("notBefore %s, want the window's end %s", notBefore, wantEnd)
	}
	if b := hookBodies(hook, inside); len(b) != 0 {
		t.Fatalf("an opening went inside quiet hours: %q", b)
	}

	// A reply to the contact's own message is not deferred, nor is a team member's typed reply.
	expect(t, chatIncoming(t, srv, key, "qh-1", "+447700900101", "chat", "hi, who is this?"), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the bot's reply inside quiet hours", func() bool { return len(hookBodies(hook, inside)) == 1 })
	expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+inside+"/messages", key, map[string]any{"body": "It's Ada from the shop", "channel": "chat"}),
		http.StatusCreated, "")
	waitFor(t, 10*time.Second, "the team reply inside quiet hours", func() bool { return len(hookBodies(hook, inside)) == 2 })

	// The window ends (the account ends it: the clock is not waited for) and the deferred opening goes
	// when its task runs: it was deferred, not dropped. The contact has replied meanwhile, so the
	// campaign's "lead wrote first" rule does not apply (no opening delay); the opening still goes.
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"quietHours": nil}), http.StatusOK, "")
	runScheduledNow(t, "opening:"+sendIDOf(t, campaignID, inside))
	waitFor(t, 10*time.Second, "the deferred opening", func() bool { return len(hookBodies(hook, inside)) == 3 })
	if b := hookBodies(hook, inside)[2]; !strings.HasPrefix(b, "Hi In,") {
		t.Fatalf("third message to the contact %q, want its opening", b)
	}
}

// sendIDOf is the id of the campaign's send to the contact.
func sendIDOf(t testing.TB, campaignID, contactID string) string {
	t.Helper()
	var ids []string
	err := env.Store.DB().NewSelect().TableExpr("campaign_sends").Column("id").
		Where("campaign_id = ? AND contact_id = ?", campaignID, contactID).Scan(t.Context(), &ids)
	if err != nil || len(ids) != 1 {
		t.Fatalf("send of %s: %v %v", contactID, ids, err)
	}
	return ids[0]
}

// TestComplianceSettingsAPI: defaults, partial updates, quietHours null, and every validation rule
// with the field named.
func TestComplianceSettingsAPI(t *testing.T) {
	srv := startServer(t)
	acc, key := newAccount(t)
	r := do(t, "GET", srv.URL+"/v1/settings/compliance", key, nil)
	expect(t, r, http.StatusOK, "")
	got := r.JSON(t)
	if got["timeZone"] != "UTC" || len(got["optOutKeywords"].([]any)) != 0 || !strings.Contains(got["optOutConfirmation"].(string), acc.Name) ||
		!strings.Contains(got["helpText"].(string), "STOP") {
		t.Fatalf("defaults: %v", got)
	}
	// The api tests' store has no operator default (SetDefaultQuietHours(nil) in TestMain).
	if got["quietHours"] != nil {
		t.Fatalf("quietHours %v, want null without an operator default", got["quietHours"])
	}

	r = do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{
		"optOutKeywords": []string{"Basta", "arrêter", "basta"}, "quietHours": map[string]any{"start": "20:30", "end": "07:45"},
		"timeZone": "America/Chicago",
	})
	expect(t, r, http.StatusOK, "")
	got = r.JSON(t)
	if fmt.Sprint(got["optOutKeywords"]) != "[basta arrêter]" || fmt.Sprint(got["quietHours"]) != "map[end:07:45 start:20:30]" || got["timeZone"] != "America/Chicago" {
		t.Fatalf("after PUT: %v", got)
	}
	r = do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"helpText": "Call us."})
	expect(t, r, http.StatusOK, "")
	if got = r.JSON(t); got["helpText"] != "Call us." || got["timeZone"] != "America/Chicago" || got["quietHours"] == nil {
		t.Fatalf("a partial update changed other fields: %v", got)
	}
	r = do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"quietHours": nil})
	if got = r.JSON(t); got["quietHours"] != nil || got["helpText"] != "Call us." {
		t.Fatalf("quietHours null: %v", got)
	}

	for name, tc := range map[string]struct {
		body  map[string]any
		field string
	}{
		"time out of range":      {map[string]any{"quietHours": map[string]any{"start": "25:00", "end": "08:00"}}, "quietHours"},
		"time without two digit": {map[string]any{"quietHours": map[string]any{"start": "9:00", "end": "08:00"}}, "quietHours"},
		"empty window":           {map[string]any{"quietHours": map[string]any{"start": "08:00", "end": "08:00"}}, "quietHours"},
		"zone":                   {map[string]any{"timeZone": "Mars/Base"}, "timeZone"},
		"keyword with a space":   {map[string]any{"optOutKeywords": []string{"st op"}}, "optOutKeywords[0]"},
		"keyword with digits":    {map[string]any{"optInKeywords": []string{"go", "start2"}}, "optInKeywords[1]"},
		"keyword too long":       {map[string]any{"optOutKeywords": []string{strings.Repeat("a", 21)}}, "optOutKeywords[0]"},
		"empty keyword":          {map[string]any{"optOutKeywords": []string{""}}, "optOutKeywords[0]"},
		"long confirmation":      {map[string]any{"optOutConfirmation": strings.Repeat("x", 321)}, "optOutConfirmation"},
		"empty confirmation":     {map[string]any{"optInConfirmation": "  "}, "optInConfirmation"},
		"long help text":         {map[string]any{"helpText": strings.Repeat("h", 321)}, "helpText"},
		"keywords not a list":    {map[string]any{"optOutKeywords": "stop"}, "optOutKeywords"},
	} {
		t.Run(name, func(t *testing.T) {
			r := do(t, "PUT", srv.URL+"/v1/settings/compliance", key, tc.body)
			expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
			if msg := r.JSON(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, tc.field) {
				t.Fatalf("message %q does not name %s", msg, tc.field)
			}
		})
	}
	if got := do(t, "GET", srv.URL+"/v1/settings/compliance", key, nil).JSON(t); got["helpText"] != "Call us." || got["timeZone"] != "America/Chicago" {
		t.Fatalf("a refused update stored something: %v", got)
	}
	t.Run("another account sees its own", func(t *testing.T) {
		_, other := newAccount(t)
		if got := do(t, "GET", srv.URL+"/v1/settings/compliance", other, nil).JSON(t); got["helpText"] == "Call us." {
			t.Fatalf("settings leaked: %v", got)
		}
	})
}

// TestConsentLedgerAPI: evidence given with a new contact, by hand, and with a list addition; the
// ledger oldest first; validation; another account's contact; the CSV export and its bounds.
func TestConsentLedgerAPI(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	given := "2026-11-20T09:30:00Z"
	r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{
		"phone": "+14155559101", "firstName": "Ivy", "timeZone": "America/Los_Angeles",
		"consent": map[string]any{"source": "landing-page form", "text": "I agree to receive texts", "ip": "203.0.113.7", "at": given},
	})
	expect(t, r, http.StatusCreated, "")
	ivy := r.JSON(t)
	id := ivy["id"].(string)
	if ivy["timeZone"] != "America/Los_Angeles" || statusOn(ivy["consent"].(map[string]any), "*") != "opted_in" {
		t.Fatalf("created contact: %v", ivy)
	}
	expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+id+"/consent", key, map[string]any{"channel": "sms", "status": "opted_out", "text": "asked by email"}),
		http.StatusOK, "")
	listID := newList(t, srv, key, "ledger")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{
		"contactId": id, "consent": map[string]any{"channel": "whatsapp", "source": "checkout", "text": "Yes, WhatsApp me"},
	}), http.StatusCreated, "")

	channels, events := consentOf(t, srv, key, id)
	if statusOn(channels, "*") != "opted_in" || statusOn(channels, "sms") != "opted_out" || statusOn(channels, "whatsapp") != "opted_in" {
		t.Fatalf("channels: %v", channels)
	}
	if len(events) != 3 {
		t.Fatalf("%d events: %v", len(events), events)
	}
	first := events[0]
	if first["source"] != "landing-page form" || first["ip"] != "203.0.113.7" || first["at"] != given || first["channel"] != "*" || first["text"] != "I agree to receive texts" {
		t.Fatalf("first event: %v", first)
	}
	if events[1]["source"] != "api" || events[1]["status"] != "opted_out" || events[2]["source"] != "checkout" {
		t.Fatalf("later events: %v", events[1:])
	}

	for name, tc := range map[string]struct {
		method, path string
		body         map[string]any
		code, field  string
	}{
		"status missing":   {"PUT", "/v1/contacts/" + id + "/consent", map[string]any{"channel": "sms"}, "VALIDATION_ERROR", "status"},
		"status unknown":   {"PUT", "/v1/contacts/" + id + "/consent", map[string]any{"status": "maybe"}, "VALIDATION_ERROR", "status"},
		"bad ip":           {"PUT", "/v1/contacts/" + id + "/consent", map[string]any{"status": "opted_in", "ip": "999.1.1.1"}, "VALIDATION_ERROR", "ip"},
		"future":           {"PUT", "/v1/contacts/" + id + "/consent", map[string]any{"status": "opted_in", "at": "2999-01-01T00:00:00Z"}, "VALIDATION_ERROR", "at"},
		"long source":      {"PUT", "/v1/contacts/" + id + "/consent", map[string]any{"status": "opted_in", "source": strings.Repeat("s", 101)}, "VALIDATION_ERROR", "source"},
		"contact evidence": {"POST", "/v1/contacts", map[string]any{"phone": "+14155559102", "consent": map[string]any{"status": "yes"}}, "VALIDATION_ERROR", "consent.status"},
		"bad zone":         {"POST", "/v1/contacts", map[string]any{"phone": "+14155559103", "timeZone": "Nowhere/City"}, "VALIDATION_ERROR", "timeZone"},
		"batch evidence":   {"POST", "/v1/lists/" + listID + "/contacts", map[string]any{"contactIds": []string{id}, "consent": map[string]any{}}, "VALIDATION_ERROR", "consent"},
	} {
		t.Run(name, func(t *testing.T) {
			r := do(t, tc.method, srv.URL+tc.path, key, tc.body)
			expect(t, r, http.StatusBadRequest, tc.code)
			if msg := r.JSON(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, tc.field) {
				t.Fatalf("message %q does not name %s", msg, tc.field)
			}
		})
	}
	// Nothing was created by the refused contact creations.
	expect(t, do(t, "GET", srv.URL+"/v1/contacts?phoneNumber=%2B14155559102", key, nil), http.StatusNotFound, "NOT_FOUND")

	t.Run("another account's contact", func(t *testing.T) {
		_, other := newAccount(t)
		expect(t, do(t, "GET", srv.URL+"/v1/contacts/"+id+"/consent", other, nil), http.StatusNotFound, "NOT_FOUND")
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+id+"/consent", other, map[string]any{"status": "opted_out"}), http.StatusNotFound, "NOT_FOUND")
		r := do(t, "GET", srv.URL+"/v1/consent/export", other, nil)
		expect(t, r, http.StatusOK, "")
		if rows := readCSV(t, r.Body); len(rows) != 1 {
			t.Fatalf("another account's export has %d rows: %v", len(rows), rows)
		}
	})

	t.Run("export", func(t *testing.T) {
		r := do(t, "GET", srv.URL+"/v1/consent/export", key, nil)
		expect(t, r, http.StatusOK, "")
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
			t.Fatalf("Content-Type %q", ct)
		}
		rows := readCSV(t, r.Body)
		if strings.Join(rows[0], ",") != "at,contact_id,phone,email,channel,status,source,text,ip,message_id,recorded_by" || len(rows) != 4 {
			t.Fatalf("export: %v", rows)
		}
		if rows[1][0] != given || rows[1][1] != id || rows[1][2] != "+14155559101" || rows[1][4] != "*" || rows[1][8] != "203.0.113.7" {
			t.Fatalf("first row: %v", rows[1])
		}
		// [from, to): the form's consent alone, then everything after it.
		only := readCSV(t, do(t, "GET", srv.URL+"/v1/consent/export?from=2026-11-20&to=2026-11-21", key, nil).Body)
		after := readCSV(t, do(t, "GET", srv.URL+"/v1/consent/export?from=2026-11-20T09:30:01Z", key, nil).Body)
		if len(only) != 2 || len(after) != 3 {
			t.Fatalf("bounded exports: %d and %d rows", len(only), len(after))
		}
		expect(t, do(t, "GET", srv.URL+"/v1/consent/export?from=yesterday", key, nil), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, do(t, "GET", srv.URL+"/v1/consent/export?from=2026-11-21&to=2026-11-20", key, nil), http.StatusBadRequest, "VALIDATION_ERROR")
	})
}

func readCSV(t testing.TB, body []byte) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(string(body))).ReadAll()
	if err != nil {
		t.Fatalf("CSV: %v\n%s", err, body)
	}
	return rows
}

// runScheduledNow makes the campaign task with id run now instead of at its scheduled time (a deferred
// or rescheduled task waits in asynq's retry or scheduled set), as an operator can in asynqmon.
func runScheduledNow(t testing.TB, taskID string) {
	t.Helper()
	inspector := asynq.NewInspector(env.Asynq)
	t.Cleanup(func() { _ = inspector.Close() })
	waitFor(t, 10*time.Second, "task "+taskID+" to wait for its time", func() bool {
		return inspector.RunTask(jobs.QueueOpenings, taskID) == nil
	})
}
