package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// teamAccount is an account with a member besides its owner, a webhook sink and one conversation.
type teamAccount struct {
	key       string
	acc       *models.Account
	member    *models.AddedUser
	contactID string
	hook      *sink
}

func newTeamAccount(t *testing.T, srv *server) teamAccount {
	t.Helper()
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	acc, err := env.Store.Authenticate(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	member, err := env.Store.AddUser(context.Background(), acc.ID, "member-"+acc.ID+"@example.com", models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	id := incoming(t, srv, key, "team-"+acc.ID, "tia-"+acc.ID, "hello").JSON(t)["messageId"].(string)
	contactID, _ := messageField(t, srv, key, id, "contactId").(string)
	return teamAccount{key: key, acc: acc, member: member, contactID: contactID, hook: hook}
}

func TestTeamUsersAndAssignment(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	a, b := newTeamAccount(t, srv), newTeamAccount(t, srv)

	users := do(t, "GET", srv.URL+"/v1/users", a.key, nil)
	expect(t, users, http.StatusOK, "")
	list, _ := users.JSON(t)["data"].([]any)
	if len(list) != 2 {
		t.Fatalf("users: %s", users.Body)
	}
	for _, u := range list {
		u := u.(map[string]any)
		if u["available"] != true || (u["role"] != "owner" && u["role"] != "member") {
			t.Fatalf("user %v", u)
		}
	}

	// Assign to the member, then unassign; the conversation list carries it and filters by it.
	r := do(t, "PUT", srv.URL+"/v1/contacts/"+a.contactID+"/assignee", a.key, map[string]any{"userId": a.member.User.ID})
	expect(t, r, http.StatusOK, "")
	if got := r.JSON(t)["assignee"].(map[string]any); got["userId"] != a.member.User.ID || got["email"] != a.member.User.Email {
		t.Fatalf("assignee %v", got)
	}
	convs := func(query string) []any {
		r := do(t, "GET", srv.URL+"/v1/conversations"+query, a.key, nil)
		expect(t, r, http.StatusOK, "")
		data, _ := r.JSON(t)["data"].([]any)
		return data
	}
	if mine := convs("?assignee=" + a.member.User.ID); len(mine) != 1 || mine[0].(map[string]any)["assignee"].(map[string]any)["userId"] != a.member.User.ID {
		t.Fatalf("the member's conversations: %v", mine)
	}
	if none := convs("?assignee=none"); len(none) != 0 {
		t.Fatalf("unassigned conversations while assigned: %v", none)
	}
	expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+a.contactID+"/assignee", a.key, map[string]any{"userId": nil}), http.StatusOK, "")
	if none := convs("?assignee=none"); len(none) != 1 || none[0].(map[string]any)["assignee"] != nil {
		t.Fatalf("unassigned conversations: %v", none)
	}

	// Bad input, and another account's users and contacts.
	for _, body := range []any{
		map[string]any{"userId": b.member.User.ID}, // another account's user
		map[string]any{"userId": "usr_unknown"},
		map[string]any{"userId": 42},
		map[string]any{},
	} {
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+a.contactID+"/assignee", a.key, body), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+b.contactID+"/assignee", a.key, map[string]any{"userId": nil}), http.StatusNotFound, "NOT_FOUND")
	expect(t, do(t, "PATCH", srv.URL+"/v1/users/"+b.member.User.ID, a.key, map[string]any{"available": false}), http.StatusNotFound, "NOT_FOUND")
	expect(t, do(t, "PATCH", srv.URL+"/v1/users/"+a.member.User.ID, a.key, map[string]any{}), http.StatusBadRequest, "VALIDATION_ERROR")
	if r := do(t, "PATCH", srv.URL+"/v1/users/"+a.member.User.ID, a.key, map[string]any{"available": false}); r.Status != http.StatusOK || r.JSON(t)["available"] != false {
		t.Fatalf("set available: %d %s", r.Status, r.Body)
	}
}

func TestTeamNotes(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	a, b := newTeamAccount(t, srv), newTeamAccount(t, srv)
	url := srv.URL + "/v1/contacts/" + a.contactID + "/notes"
	for _, body := range []any{map[string]any{"body": ""}, map[string]any{"body": "  "}, map[string]any{"body": strings.Repeat("n", 4001)}, map[string]any{}} {
		expect(t, do(t, "POST", url, a.key, body), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	r := do(t, "POST", url, a.key, map[string]any{"body": "<b>VIP</b>: call back after 5"})
	expect(t, r, http.StatusCreated, "")
	note := r.JSON(t)
	if note["body"] != "<b>VIP</b>: call back after 5" || note["author"].(map[string]any)["userId"] != a.acc.OwnerUserID {
		t.Fatalf("note %v", note)
	}
	list := do(t, "GET", url, a.key, nil)
	expect(t, list, http.StatusOK, "")
	if data, _ := list.JSON(t)["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != note["id"] {
		t.Fatalf("notes: %s", list.Body)
	}
	// Not a message, not sent: the conversation and the webhook never see it.
	msgs := do(t, "GET", srv.URL+"/v1/contacts/"+a.contactID+"/messages", a.key, nil)
	if strings.Contains(string(msgs.Body), "VIP") {
		t.Fatalf("the note is in the messages: %s", msgs.Body)
	}
	for _, d := range a.hook.deliveries() {
		if strings.Contains(string(d.Body), "VIP") {
			t.Fatalf("the note was sent: %s", d.Body)
		}
	}
	// Another account's contact.
	expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+b.contactID+"/notes", a.key, map[string]any{"body": "x"}), http.StatusNotFound, "NOT_FOUND")
	expect(t, do(t, "GET", srv.URL+"/v1/contacts/"+b.contactID+"/notes", a.key, nil), http.StatusNotFound, "NOT_FOUND")
}

func TestTeamCannedReplies(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true") // newTeamAccount's webhook is the sink's http URL
	a, b := newTeamAccount(t, srv), newTeamAccount(t, srv)
	base := srv.URL + "/v1/canned_replies"
	r := do(t, "POST", base, a.key, map[string]any{"shortcut": "hours", "body": "Hi {{firstName}}, we open at 9."})
	expect(t, r, http.StatusCreated, "")
	id, _ := r.JSON(t)["id"].(string)
	expect(t, do(t, "POST", base, a.key, map[string]any{"shortcut": "Hours", "body": "dup"}), http.StatusConflict, "CONFLICT")
	for _, body := range []any{
		map[string]any{"shortcut": "", "body": "x"}, map[string]any{"shortcut": "two words", "body": "x"},
		map[string]any{"shortcut": strings.Repeat("s", 33), "body": "x"}, map[string]any{"shortcut": "ok", "body": ""},
		map[string]any{"shortcut": "ok", "body": strings.Repeat("b", 4001)},
	} {
		expect(t, do(t, "POST", base, a.key, body), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	// Another account has its own shortcuts, and cannot touch ours.
	expect(t, do(t, "POST", base, b.key, map[string]any{"shortcut": "hours", "body": "theirs"}), http.StatusCreated, "")
	expect(t, do(t, "PUT", base+"/"+id, b.key, map[string]any{"shortcut": "x", "body": "y"}), http.StatusNotFound, "NOT_FOUND")
	expect(t, do(t, "DELETE", base+"/"+id, b.key, nil), http.StatusNotFound, "NOT_FOUND")
	r = do(t, "PUT", base+"/"+id, a.key, map[string]any{"shortcut": "opening", "body": "We open at 9."})
	expect(t, r, http.StatusOK, "")
	if r.JSON(t)["shortcut"] != "opening" {
		t.Fatalf("update: %s", r.Body)
	}
	list := do(t, "GET", base, a.key, nil)
	if data, _ := list.JSON(t)["data"].([]any); len(data) != 1 || data[0].(map[string]any)["body"] != "We open at 9." {
		t.Fatalf("list: %s", list.Body)
	}
	expect(t, do(t, "DELETE", base+"/"+id, a.key, nil), http.StatusNoContent, "")
	if data, _ := do(t, "GET", base, a.key, nil).JSON(t)["data"].([]any); len(data) != 0 {
		t.Fatalf("after delete: %v", data)
	}
}

// TestTeamReplyAuthor: a team reply through the API records the owner as its author, and the reply
// webhook's userId is the author's.
func TestTeamReplyAuthor(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	a := newTeamAccount(t, srv)
	waitFor(t, 10*time.Second, "the bot's reply", func() bool { return len(a.hook.deliveries()) == 1 })
	r := do(t, "POST", srv.URL+"/v1/contacts/"+a.contactID+"/messages", a.key, map[string]any{"body": "A person here"})
	expect(t, r, http.StatusCreated, "")
	m := r.JSON(t)
	if author, _ := m["author"].(map[string]any); author["userId"] != a.acc.OwnerUserID || m["authorType"] != "human" {
		t.Fatalf("team reply %v", m)
	}
	waitFor(t, 10*time.Second, "the team reply's delivery", func() bool { return len(a.hook.deliveries()) == 2 })
	var payload map[string]any
	_ = json.Unmarshal(a.hook.deliveries()[1].Body, &payload)
	if payload["userId"] != a.acc.OwnerUserID || payload["body"] != "A person here" {
		t.Fatalf("webhook %v", payload)
	}
	checkWebhookPayload(t, "ReplyWebhookPayload", a.hook.deliveries()[1].Body)
	// The offline bot's reply goes out before it is stored (jobs.Handler.sendsBeforeStoring): nothing
	// above waited for its record, so the conversation may still lack it for a moment.
	var conv []any
	waitFor(t, 10*time.Second, "the bot's reply stored", func() bool {
		conv = do(t, "GET", srv.URL+"/v1/contacts/"+a.contactID+"/messages", a.key, nil).JSON(t)["data"].([]any)
		return len(conv) >= 3
	})
	if bot := conv[1].(map[string]any); bot["author"] != nil || bot["authorType"] != "bot" {
		t.Fatalf("bot reply %v", bot)
	}
}

// TestHandoffMessageEscalationAndResume: a hand-off sends the account's hand-off message once, the
// alert is escalated once after handoffEscalationMinutes (the alert webhook called again with
// escalated:true), and the bot resumes after botResumeMinutes of team silence. Minutes are made to
// pass by moving the alert's and the pause's times back, never by waiting.
func TestHandoffMessageEscalationAndResume(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	worker := startWorker(t) // SWEEP_INTERVAL=1s
	replies, alerts := newSink(t, nil), newSink(t, nil)
	key, _ := messagingAccount(t, srv, replies)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/alert_webhook", key, map[string]any{"url": alerts.URL + "/alerts"}), http.StatusOK, "")
	r := do(t, "PUT", srv.URL+"/v1/settings/bot", key, map[string]any{"handoffMessage": "Ana will answer you here.", "handoffEscalationMinutes": 5, "botResumeMinutes": 30})
	expect(t, r, http.StatusOK, "")
	if s := r.JSON(t); s["handoffEscalationMinutes"] != float64(5) || s["botResumeMinutes"] != float64(30) || s["handoffMessage"] != "Ana will answer you here." {
		t.Fatalf("bot settings %v", s)
	}
	for _, bad := range []map[string]any{{"handoffEscalationMinutes": -1}, {"handoffEscalationMinutes": 10081}, {"botResumeMinutes": 0}, {"handoffMessage": strings.Repeat("m", 1001)}} {
		expect(t, do(t, "PUT", srv.URL+"/v1/settings/bot", key, bad), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	id := incoming(t, srv, key, "esc-1", "ema", "I want to talk to a human").JSON(t)["messageId"].(string)
	waitFor(t, 10*time.Second, "the hand-off and its message", func() bool {
		return messageField(t, srv, key, id, "botStatus") == "handoff" && len(replies.deliveries()) == 1 && len(alerts.deliveries()) == 1
	})
	var reply map[string]any
	_ = json.Unmarshal(replies.deliveries()[0].Body, &reply)
	if reply["body"] != "Ana will answer you here." {
		t.Fatalf("hand-off message %v", reply)
	}
	contactID, _ := messageField(t, srv, key, id, "contactId").(string)
	// Six minutes pass: the alert is escalated, once.
	back := time.Now().Add(-6 * time.Minute).UTC()
	if _, err := env.Store.DB().NewRaw("UPDATE alerts SET created_at = ? WHERE contact_id = ?", back, contactID).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the escalation's webhook call", func() bool { return len(alerts.deliveries()) == 2 })
	var first, second map[string]any
	_ = json.Unmarshal(alerts.deliveries()[0].Body, &first)
	_ = json.Unmarshal(alerts.deliveries()[1].Body, &second)
	if first["escalated"] != false || second["escalated"] != true || second["alertId"] != first["alertId"] || second["contactId"] != contactID ||
		alerts.deliveries()[0].Header.Get("webhook-id") == alerts.deliveries()[1].Header.Get("webhook-id") {
		t.Fatalf("alert webhook calls %v then %v", first, second)
	}
	for _, d := range alerts.deliveries() {
		checkWebhookPayload(t, "AlertWebhookPayload", d.Body)
	}
	list := do(t, "GET", srv.URL+"/v1/alerts", key, nil).JSON(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["escalatedAt"] == nil || list[0].(map[string]any)["resolvedAt"] != nil {
		t.Fatalf("alerts after the escalation: %v", list)
	}
	// Two more sweeps, and the alert calls they might have queued: still escalated once.
	waitSweeps(t, worker, 2)
	waitDrained(t, mustAccountID(t, key), retryHorizon)
	if n := len(alerts.deliveries()); n != 2 {
		t.Fatalf("%d alert webhook calls, want 2", n)
	}
	// Thirty-one minutes of silence: the bot resumes and answers the next message.
	if _, err := env.Store.DB().NewRaw("UPDATE contacts SET bot_paused_at = ? WHERE id = ?", time.Now().Add(-31*time.Minute).UTC(), contactID).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the bot to resume", func() bool {
		c, err := env.Store.ContactByID(context.Background(), mustAccountID(t, key), contactID)
		return err == nil && !c.BotPaused
	})
	incoming(t, srv, key, "esc-2", "ema", "what are your hours?")
	waitFor(t, 10*time.Second, "the bot's answer", func() bool { return len(replies.deliveries()) == 2 })
}

// checkWebhookPayload validates the body of a webhook call against its schema in the OpenAPI document
// (the callbacks' request bodies are not checked by checkContract, which sees only the api's traffic).
func checkWebhookPayload(t *testing.T, schema string, body []byte) {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v: %s", schema, err, body)
	}
	if err := c.doc.Components.Schemas[schema].Value.VisitJSON(v); err != nil {
		t.Errorf("the webhook's body is not a %s of api/%s: %v\n%s", schema, openAPIFile, firstLine(err), body)
	}
}

func mustAccountID(t testing.TB, key string) string {
	t.Helper()
	acc, err := env.Store.Authenticate(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return acc.ID
}

// TestHandoffsRoundRobinThroughTheAPI: parallel hand-offs of new conversations are shared evenly
// between the available users.
func TestHandoffsRoundRobinThroughTheAPI(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	a := newTeamAccount(t, srv)
	var wg sync.WaitGroup
	ids := make([]string, 10)
	for i := range ids {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := incoming(t, srv, a.key, "rr-"+a.acc.ID+"-"+string(rune('a'+i)), "rr-"+string(rune('a'+i)), "a human please")
			ids[i], _ = r.JSON(t)["messageId"].(string)
		}(i)
	}
	wg.Wait()
	waitFor(t, 20*time.Second, "every hand-off", func() bool {
		for _, id := range ids {
			if messageField(t, srv, a.key, id, "botStatus") != "handoff" {
				return false
			}
		}
		return true
	})
	per := map[string]int{}
	for _, c := range do(t, "GET", srv.URL+"/v1/conversations?needsHuman=true", a.key, nil).JSON(t)["data"].([]any) {
		if as, ok := c.(map[string]any)["assignee"].(map[string]any); ok {
			per[as["userId"].(string)]++
		}
	}
	if per[a.acc.OwnerUserID] != 5 || per[a.member.User.ID] != 5 {
		t.Fatalf("hand-offs per user %v, want 5 each", per)
	}
}
