package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
)

// Conversation status (README, "Conversations: open, resolved, snoozed"): PATCH
// /v1/conversations/{contactId}, the list's ?status=, a snooze that ends by itself, what reopens a
// conversation, and conversation.status_changed on GET /v1/events.

// patchStatus sends PATCH /v1/conversations/{contactId} with body.
func patchStatus(t *testing.T, srv *server, key, contactID string, body any) response {
	t.Helper()
	return do(t, "PATCH", srv.URL+"/v1/conversations/"+url.PathEscape(contactID), key, body)
}

// setStatus gives the conversation a status through the API, which must answer 200 with it, and
// returns the conversation.
func setStatus(t *testing.T, srv *server, key, contactID, status string, until *time.Time) map[string]any {
	t.Helper()
	body := map[string]any{"status": status}
	if until != nil {
		body["snoozedUntil"] = until.Format(time.RFC3339Nano)
	}
	r := patchStatus(t, srv, key, contactID, body)
	expect(t, r, http.StatusOK, "")
	conv := r.JSON(t)
	if conv["status"] != status || conv["contact"].(map[string]any)["id"] != contactID {
		t.Fatalf("PATCH %s %s: %s", contactID, status, r.Body)
	}
	return conv
}

// statusOf is the conversation's status and snoozedUntil as GET /v1/conversations?status=all lists it.
func statusOf(t *testing.T, srv *server, key, contactID string) (status string, snoozedUntil any) {
	t.Helper()
	list, _ := conversationPage(t, srv, key, "status=all&limit=200")
	for _, c := range list {
		if c["contact"].(map[string]any)["id"] == contactID {
			return c["status"].(string), c["snoozedUntil"]
		}
	}
	t.Fatalf("the conversation of %s is not listed", contactID)
	return "", nil
}

// expectStatusEvent reads the stream until conversation.status_changed for the contact, which must
// carry status (and a snooze's end), and checks it against the document's ConversationStatus.
func expectStatusEvent(t *testing.T, s *eventStream, contactID, status string) map[string]any {
	t.Helper()
	rec := s.expect(t, 5*time.Second, models.EventConversationStatusChanged, func(m map[string]any) bool { return m["contactId"] == contactID })
	if rec["status"] != status {
		t.Fatalf("conversation.status_changed for %s: %v, want status %s", contactID, rec, status)
	}
	if status != models.ConversationSnoozed && rec["snoozedUntil"] != nil {
		t.Fatalf("a %s conversation with snoozedUntil: %v", status, rec)
	}
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.doc.Components.Schemas["ConversationStatus"].Value.VisitJSON(rec); err != nil {
		t.Fatalf("the event's data is not a ConversationStatus of api/%s: %v\n%v", openAPIFile, firstLine(err), rec)
	}
	return rec
}

func TestConversationStatus(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	acc, key := newAccount(t)
	events := openEvents(t, srv, key)
	_, ana := chat(t, srv, key, "st-1", "ana-status", "hello", map[string]any{"firstName": "Ana"})
	_, bob := chat(t, srv, key, "st-2", "bob-status", "hi", map[string]any{"firstName": "Bob"})
	_, cleo := chat(t, srv, key, "st-3", "cleo-status", "hey", map[string]any{"firstName": "Cleo"})
	list := func(query string, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if got := conversationContacts(t, srv, key, query); !slices.Equal(got, want) {
			t.Errorf("?%s: %v, want %v", query, got, want)
		}
	}

	t.Run("every conversation starts open", func(t *testing.T) {
		for _, id := range []string{ana, bob, cleo} {
			if st, until := statusOf(t, srv, key, id); st != "open" || until != nil {
				t.Fatalf("%s: %s until %v", id, st, until)
			}
		}
		list("", cleo, bob, ana)
		list("status=open", cleo, bob, ana)
		list("status=resolved")
		list("status=snoozed")
	})

	t.Run("resolved", func(t *testing.T) {
		conv := setStatus(t, srv, key, ana, "resolved", nil)
		if conv["snoozedUntil"] != nil || conv["lastMessage"].(map[string]any)["body"] != "hello" || conv["unread"] != true {
			t.Fatalf("the conversation PATCH answered: %v", conv)
		}
		expectStatusEvent(t, events, ana, "resolved")
		list("", cleo, bob)
		list("status=resolved", ana)
		list("status=all", cleo, bob, ana)
	})

	t.Run("snoozed, then open again by hand", func(t *testing.T) {
		until := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
		conv := setStatus(t, srv, key, bob, "snoozed", &until)
		if got, _ := time.Parse(time.RFC3339, conv["snoozedUntil"].(string)); !got.Equal(until) {
			t.Fatalf("snoozedUntil %v, want %v", conv["snoozedUntil"], until)
		}
		rec := expectStatusEvent(t, events, bob, "snoozed")
		if got, _ := time.Parse(time.RFC3339, rec["snoozedUntil"].(string)); !got.Equal(until) {
			t.Fatalf("the event's snoozedUntil %v, want %v", rec["snoozedUntil"], until)
		}
		list("", cleo)
		list("status=snoozed", bob)
		list("status=snoozed&q=bob", bob)
		list("status=snoozed&unread=false")
		setStatus(t, srv, key, bob, "open", nil)
		expectStatusEvent(t, events, bob, "open")
		list("", cleo, bob)
		list("status=snoozed")
	})

	t.Run("a snooze ends at its time", func(t *testing.T) {
		until := time.Now().Add(time.Hour)
		setStatus(t, srv, key, cleo, "snoozed", &until)
		expectStatusEvent(t, events, cleo, "snoozed")
		list("", bob)
		// The hour passes (the fixture moves the snooze's end into the past): nothing runs, and the
		// conversation is open.
		teamSQL(t, "UPDATE contacts SET snoozed_until = ? WHERE id = ?", time.Now().Add(-time.Second).UTC(), cleo)
		list("", cleo, bob)
		list("status=snoozed")
		if st, until := statusOf(t, srv, key, cleo); st != "open" || until != nil {
			t.Fatalf("after its snooze: %s until %v", st, until)
		}
		// It counts as unread and open for the team again, as the list says.
		n, err := report.New(env.Store).Counts(t.Context(), acc.ID, acc.OwnerUserID)
		if err != nil || n.Unread != 2 {
			t.Fatalf("unread open conversations: %+v (%v), want 2 (bob, cleo; ana is resolved)", n, err)
		}
		// Opening it is no change: nothing is written or published.
		conv := setStatus(t, srv, key, cleo, "open", nil)
		if conv["snoozedUntil"] != nil {
			t.Fatalf("%v", conv)
		}
	})

	t.Run("the same status again changes and publishes nothing", func(t *testing.T) {
		setStatus(t, srv, key, ana, "resolved", nil)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				r := patchStatus(t, srv, key, bob, map[string]any{"status": "resolved"})
				if r.Status != http.StatusOK {
					t.Errorf("concurrent resolve: %d %s", r.Status, r.Body)
				}
			})
		}
		wg.Wait()
		setStatus(t, srv, key, bob, "open", nil)
		// Up to bob's reopening: one change of bob's (four presses at once make one), none of ana's, and
		// none of cleo's (her snooze ended by itself, and opening her changed nothing).
		var seen []string
		events.expect(t, 5*time.Second, models.EventConversationStatusChanged, func(m map[string]any) bool {
			return m["contactId"] == bob && m["status"] == "open"
		}, func(f sseFrame) {
			if f.Type == models.EventConversationStatusChanged {
				rec := f.record(t)
				seen = append(seen, rec["contactId"].(string)+" "+rec["status"].(string))
			}
		})
		if want := []string{bob + " resolved", bob + " open"}; !slices.Equal(seen, want) {
			t.Fatalf("status events %q, want %q", seen, want)
		}
	})

	t.Run("status filter values", func(t *testing.T) {
		for _, q := range []string{"status=closed", "status=OPEN", "status=all%20", "status=none", "status=resolved,open"} {
			r := do(t, "GET", srv.URL+"/v1/conversations?"+q, key, nil)
			expect(t, r, http.StatusBadRequest, models.CodeValidation)
			if msg := r.JSON(t)["error"].(map[string]any)["message"]; !strings.Contains(msg.(string), "open, resolved, snoozed or all") {
				t.Errorf("?%s: %v", q, msg)
			}
		}
	})

	t.Run("invalid bodies", func(t *testing.T) {
		past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		for _, tc := range []struct {
			body any
			code string
			says string
		}{
			{map[string]any{}, models.CodeValidation, "status is required"},
			{map[string]any{"status": ""}, models.CodeValidation, "status is required"},
			{map[string]any{"status": "closed"}, models.CodeValidation, "open, resolved or snoozed"},
			{map[string]any{"status": "Resolved"}, models.CodeValidation, "open, resolved or snoozed"},
			{map[string]any{"status": 1}, models.CodeValidation, "status must be a string"},
			{map[string]any{"status": "snoozed"}, models.CodeValidation, "snoozedUntil is required"},
			{map[string]any{"status": "snoozed", "snoozedUntil": nil}, models.CodeValidation, "snoozedUntil is required"},
			{map[string]any{"status": "snoozed", "snoozedUntil": past}, models.CodeValidation, "in the future"},
			{map[string]any{"status": "snoozed", "snoozedUntil": "tomorrow"}, models.CodeValidation, "RFC 3339"},
			{map[string]any{"status": "snoozed", "snoozedUntil": "2030-01-02 09:00"}, models.CodeValidation, "RFC 3339"},
			{map[string]any{"status": "snoozed", "snoozedUntil": 1767340800}, models.CodeValidation, "snoozedUntil must be a string"},
			{map[string]any{"status": "resolved", "snoozedUntil": future}, models.CodeValidation, "only for status snoozed"},
			{map[string]any{"status": "open", "snoozedUntil": future}, models.CodeValidation, "only for status snoozed"},
			{"resolved", models.CodeInvalidJSON, "not valid JSON"},
			{"null", models.CodeInvalidJSON, "JSON object"},
			{[]any{"resolved"}, models.CodeInvalidJSON, "JSON object"},
		} {
			r := patchStatus(t, srv, key, cleo, tc.body)
			expect(t, r, http.StatusBadRequest, tc.code)
			if msg, _ := r.JSON(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, tc.says) {
				t.Errorf("%v: %q, want it to say %q", tc.body, msg, tc.says)
			}
		}
		if st, _ := statusOf(t, srv, key, cleo); st != "open" {
			t.Fatalf("a refused PATCH changed the status to %s", st)
		}
	})

	t.Run("unknown, other accounts' and message-less contacts", func(t *testing.T) {
		_, other := newAccount(t)
		_, theirs := chat(t, srv, other, "st-x", "stranger-status", "hi", nil)
		quiet := newContact(t, srv, key, "+14155550166")
		for _, id := range []string{theirs, quiet, "ct_01jd8z6q6v3j7x0zj5s1v9k2qh", "nope", strings.Repeat("x", 300)} {
			r := patchStatus(t, srv, key, id, map[string]any{"status": "resolved"})
			expect(t, r, http.StatusNotFound, models.CodeNotFound)
		}
		r := patchStatus(t, srv, key, quiet, map[string]any{"status": "resolved"})
		if msg := r.JSON(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "no messages") {
			t.Errorf("a contact without messages: %q", msg)
		}
		if st, _ := statusOf(t, srv, other, theirs); st != "open" {
			t.Fatalf("the refused PATCH resolved the other account's conversation: %s", st)
		}
	})
}

func TestConversationReopens(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	acc, key := newAccount(t)
	events := openEvents(t, srv, key)

	t.Run("by a new incoming message", func(t *testing.T) {
		_, id := chat(t, srv, key, "ro-1", "reopen-msg", "hello", nil)
		setStatus(t, srv, key, id, "resolved", nil)
		expectStatusEvent(t, events, id, "resolved")
		// Replies to the contact leave it resolved: only the contact's side reopens it.
		expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+id+"/messages", key, map[string]any{"body": "Glad to help!"}), http.StatusCreated, "")
		if st, _ := statusOf(t, srv, key, id); st != "resolved" {
			t.Fatalf("after a team reply: %s", st)
		}
		chat(t, srv, key, "ro-2", "reopen-msg", "one more question", nil)
		if st, _ := statusOf(t, srv, key, id); st != "open" {
			t.Fatalf("after a new incoming message: %s", st)
		}
		expectStatusEvent(t, events, id, "open")
		// A snooze too.
		until := time.Now().Add(24 * time.Hour)
		setStatus(t, srv, key, id, "snoozed", &until)
		expectStatusEvent(t, events, id, "snoozed")
		chat(t, srv, key, "ro-3", "reopen-msg", "are you there?", nil)
		if st, until := statusOf(t, srv, key, id); st != "open" || until != nil {
			t.Fatalf("a snoozed conversation after a new incoming message: %s until %v", st, until)
		}
		expectStatusEvent(t, events, id, "open")
		// A duplicate of a message stored before reopens nothing.
		setStatus(t, srv, key, id, "resolved", nil)
		expectStatusEvent(t, events, id, "resolved")
		chat(t, srv, key, "ro-3", "reopen-msg", "are you there?", nil)
		if st, _ := statusOf(t, srv, key, id); st != "resolved" {
			t.Fatalf("after a repeated messageSid: %s", st)
		}
	})

	t.Run("by a hand-off", func(t *testing.T) {
		msgID, id := chat(t, srv, key, "ro-4", "reopen-handoff", "Can I talk to a person?", nil)
		// Resolved before the bot got to the message (no worker runs here); then it hands off.
		setStatus(t, srv, key, id, "resolved", nil)
		expectStatusEvent(t, events, id, "resolved")
		incoming, err := env.Store.MessageByID(t.Context(), acc.ID, msgID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Store.Handoff(t.Context(), incoming, "The contact asked for a person"); err != nil {
			t.Fatal(err)
		}
		if st, _ := statusOf(t, srv, key, id); st != "open" {
			t.Fatalf("after a hand-off: %s", st)
		}
		expectStatusEvent(t, events, id, "open")
	})

	t.Run("by an opt-out", func(t *testing.T) {
		_, id := chat(t, srv, key, "ro-5", "reopen-optout", "hi", nil)
		setStatus(t, srv, key, id, "resolved", nil)
		expectStatusEvent(t, events, id, "resolved")
		// Consent given leaves it resolved.
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+id+"/consent", key, map[string]any{"status": "opted_in", "text": "form"}), http.StatusOK, "")
		if st, _ := statusOf(t, srv, key, id); st != "resolved" {
			t.Fatalf("after an opt-in: %s", st)
		}
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+id+"/consent", key, map[string]any{"status": "opted_out", "text": "asked by phone"}), http.StatusOK, "")
		if st, _ := statusOf(t, srv, key, id); st != "open" {
			t.Fatalf("after an opt-out: %s", st)
		}
		expectStatusEvent(t, events, id, "open")
	})
}
