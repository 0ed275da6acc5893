package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"funnelchat/models"
)

// chat posts a custom-channel message from fromID, with person's customData fields (firstName,
// lastName, email) for a new contact, and returns the message's id and its contact's id.
func chat(t *testing.T, srv *server, key, sid, fromID, body string, person map[string]any) (messageID, contactID string) {
	t.Helper()
	data := map[string]any{"messageSid": sid, "fromId": fromID, "toId": "biz-1", "body": body, "channel": "live-chat"}
	for k, v := range person {
		data[k] = v
	}
	r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, map[string]any{"customData": data})
	expect(t, r, http.StatusOK, "")
	messageID, _ = r.JSON(t)["messageId"].(string)
	m := do(t, "GET", srv.URL+"/v1/messages/"+messageID, key, nil)
	expect(t, m, http.StatusOK, "")
	contactID, _ = m.JSON(t)["contactId"].(string)
	if messageID == "" || contactID == "" {
		t.Fatalf("message %q of contact %q: %s", messageID, contactID, m.Body)
	}
	return messageID, contactID
}

// conversationPage is GET /v1/conversations?query, which must answer 200; next is "" on the last page.
func conversationPage(t *testing.T, srv *server, key, query string) (list []map[string]any, next string) {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/conversations?"+query, key, nil)
	expect(t, r, http.StatusOK, "")
	body := r.JSON(t)
	data, ok := body["data"].([]any)
	if !ok {
		t.Fatalf("no data array: %s", r.Body)
	}
	for _, item := range data {
		list = append(list, item.(map[string]any))
	}
	next, _ = body["nextCursor"].(string)
	return list, next
}

// conversationContacts is the contact ids of GET /v1/conversations?query, in the order listed (all
// on one page).
func conversationContacts(t *testing.T, srv *server, key, query string) []string {
	t.Helper()
	list, next := conversationPage(t, srv, key, query)
	if next != "" {
		t.Fatalf("?%s: more than one page", query)
	}
	ids := []string{}
	for _, c := range list {
		ids = append(ids, c["contact"].(map[string]any)["id"].(string))
	}
	return ids
}

// conversationOf is the contact's line of GET /v1/conversations (nil when it is not listed).
func conversationOf(t *testing.T, srv *server, key, contactID string) map[string]any {
	t.Helper()
	list, _ := conversationPage(t, srv, key, "limit=200")
	for _, c := range list {
		if c["contact"].(map[string]any)["id"] == contactID {
			return c
		}
	}
	return nil
}

// marker reads one boolean marker of the contact's conversation, which must be listed.
func marker(t *testing.T, srv *server, key, contactID, name string) bool {
	t.Helper()
	c := conversationOf(t, srv, key, contactID)
	if c == nil {
		t.Fatalf("the conversation of %s is not listed", contactID)
	}
	v, ok := c[name].(bool)
	if !ok {
		t.Fatalf("%s is not a boolean: %v", name, c)
	}
	return v
}

func TestConversationsList(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)

	// No worker: nothing answers, so each conversation's newest message is the last one posted here.
	_, alice := chat(t, srv, key, "c-1", "alice-web", "hello", map[string]any{"firstName": "Alice", "lastName": "Zephyrine", "email": "alice.z@example.com"})
	_, bob := chat(t, srv, key, "c-2", "+14155550142", "hi there", map[string]any{"firstName": "Bob"})
	carolMsg, carol := chat(t, srv, key, "c-3", "carol-web", "question", map[string]any{"firstName": "Carol", "lastName": "Q_uote%"})
	aliceLast, _ := chat(t, srv, key, "c-4", "alice-web", "anyone?", nil)
	newContact(t, srv, key, "+14155550199") // a contact without messages has no conversation

	t.Run("shape and newest activity first", func(t *testing.T) {
		list, next := conversationPage(t, srv, key, "")
		if next != "" || len(list) != 3 {
			t.Fatalf("%d conversations, next %q: %v", len(list), next, list)
		}
		var order []string
		for _, c := range list {
			order = append(order, c["contact"].(map[string]any)["id"].(string))
		}
		if want := []string{alice, carol, bob}; !slices.Equal(order, want) {
			t.Fatalf("order %v, want %v (alice, carol, bob)", order, want)
		}
		first := list[0]
		contact := first["contact"].(map[string]any)
		last := first["lastMessage"].(map[string]any)
		if contact["firstName"] != "Alice" || contact["email"] != "alice.z@example.com" {
			t.Fatalf("contact: %v", contact)
		}
		if last["id"] != aliceLast || last["contactId"] != alice || last["body"] != "anyone?" || last["direction"] != "incoming" {
			t.Fatalf("lastMessage: %v", last)
		}
		if list[1]["lastMessage"].(map[string]any)["id"] != carolMsg {
			t.Fatalf("carol's lastMessage: %v", list[1]["lastMessage"])
		}
		if list[2]["contact"].(map[string]any)["phone"] != "+14155550142" {
			t.Fatalf("bob's phone: %v", list[2]["contact"])
		}
		for _, c := range list {
			if c["unread"] != true || c["needsHuman"] != false || c["failed"] != false {
				t.Fatalf("markers of a new conversation: %v", c)
			}
		}
	})

	t.Run("search", func(t *testing.T) {
		for _, tc := range []struct {
			q    string
			want []string
		}{
			// The contact search (GET /v1/contacts?q=, TestSearchContacts): prefixes, in any case.
			{"zephyr", []string{alice}},          // last name, its start
			{"ephyrine", []string{}},             // not a prefix
			{"ALICE ZEPH", []string{alice}},      // first and last name, any case
			{"alice.z@EXAMPLE", []string{alice}}, // email
			{"alice-w", []string{alice}},         // sender id
			{"+14155550142", []string{bob}},      // phone as stored
			{"(415) 555-0142", []string{bob}},    // phone in another notation
			{"415 555 01", []string{bob}},        // the start of the phone's national number
			{"555 01", []string{}},               // digits further in
			{"bob", []string{bob}},
			{"q_uote%", []string{carol}}, // LIKE's wildcards are literal
			{"c", []string{carol}},       // Carol, carol-web
			{"a", []string{alice}},       // Alice, alice-web
			{"_", []string{}},
			{"%", []string{}},
			{"nobody", []string{}},
			{"  carol  ", []string{carol}}, // trimmed
		} {
			if got := conversationContacts(t, srv, key, "q="+url.QueryEscape(tc.q)); !slices.Equal(got, tc.want) {
				t.Errorf("q=%q: %v, want %v", tc.q, got, tc.want)
			}
		}
		long := do(t, "GET", srv.URL+"/v1/conversations?q="+strings.Repeat("a", 201), key, nil)
		expect(t, long, http.StatusBadRequest, models.CodeValidation)
		expect(t, do(t, "GET", srv.URL+"/v1/conversations?q="+strings.Repeat("a", 200), key, nil), http.StatusOK, "")
	})

	t.Run("filters", func(t *testing.T) {
		check := func(query string, want ...string) {
			t.Helper()
			if want == nil {
				want = []string{}
			}
			if got := conversationContacts(t, srv, key, query); !slices.Equal(got, want) {
				t.Errorf("?%s: %v, want %v", query, got, want)
			}
		}
		check("unread=true", alice, carol, bob)
		check("unread=false")
		expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+alice+"/read", key, nil), http.StatusNoContent, "")
		check("unread=true", carol, bob)
		check("unread=false", alice)

		check("needsHuman=true")
		check("needsHuman=false", alice, carol, bob)
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+bob+"/bot", key, map[string]any{"active": false}), http.StatusOK, "")
		check("needsHuman=true", bob)
		check("needsHuman=false", alice, carol)

		check("failed=true")
		check("failed=false", alice, carol, bob)

		// Filters combine with each other and with the search.
		check("unread=true&needsHuman=false", carol)
		check("unread=true&needsHuman=true&failed=false", bob)
		check("unread=false&needsHuman=true")
		check("needsHuman=false&q=alice", alice)
		check("needsHuman=true&q=alice")

		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+bob+"/bot", key, map[string]any{"active": true}), http.StatusOK, "")
		check("needsHuman=true")
	})

	t.Run("a filter that is not true or false", func(t *testing.T) {
		for _, query := range []string{"unread=yes", "unread=1", "needsHuman=TRUE", "failed=no", "unread=true&failed=maybe"} {
			r := do(t, "GET", srv.URL+"/v1/conversations?"+query, key, nil)
			expect(t, r, http.StatusBadRequest, models.CodeValidation)
		}
		for _, query := range []string{"limit=0", "limit=201", "limit=x", "cursor=" + url.QueryEscape("not a cursor!")} {
			expect(t, do(t, "GET", srv.URL+"/v1/conversations?"+query, key, nil), http.StatusBadRequest, models.CodeValidation)
		}
	})

	t.Run("another account sees none of them", func(t *testing.T) {
		_, other := newAccount(t)
		for _, query := range []string{"", "q=alice", "q=" + url.QueryEscape("+14155550142"), "unread=true"} {
			if got := conversationContacts(t, srv, other, query); len(got) != 0 {
				t.Fatalf("?%s as another account: %v", query, got)
			}
		}
		// Marking as another account (404) does not read this account's conversation.
		expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+carol+"/read", other, nil), http.StatusNotFound, models.CodeNotFound)
		if !marker(t, srv, key, carol, "unread") {
			t.Fatal("another account's read marked this account's conversation read")
		}
	})
}

func TestConversationsPaging(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	const n = 7
	var want []string // newest activity first
	for i := range n {
		_, contact := chat(t, srv, key, fmt.Sprintf("pg-%d", i), fmt.Sprintf("pager-%d", i), "hi", nil)
		want = append([]string{contact}, want...)
	}
	// New activity moves a conversation to the front; a second message of the same contact does not
	// make a second line.
	chat(t, srv, key, "pg-again", "pager-2", "me again", nil)
	moved := want[n-1-2]
	want = append([]string{moved}, slices.DeleteFunc(slices.Clone(want), func(id string) bool { return id == moved })...)

	for _, limit := range []int{1, 2, 3, n, 200} {
		var got []string
		cursor, pages := "", 0
		for {
			query := "limit=" + strconv.Itoa(limit)
			if cursor != "" {
				query += "&cursor=" + url.QueryEscape(cursor)
			}
			list, next := conversationPage(t, srv, key, query)
			pages++
			if len(list) > limit || (next != "" && len(list) != limit) {
				t.Fatalf("limit %d: a page of %d with next %q", limit, len(list), next)
			}
			for _, c := range list {
				got = append(got, c["contact"].(map[string]any)["id"].(string))
			}
			if next == "" {
				break
			}
			if pages > n+1 {
				t.Fatalf("limit %d: paging does not end", limit)
			}
			cursor = next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: visited %v, want each once in order %v", limit, got, want)
		}
	}

	t.Run("pages of a filtered list", func(t *testing.T) {
		for _, id := range want[:3] {
			expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+id+"/read", key, nil), http.StatusNoContent, "")
		}
		var got []string
		cursor := ""
		for {
			query := "unread=true&limit=2"
			if cursor != "" {
				query += "&cursor=" + url.QueryEscape(cursor)
			}
			list, next := conversationPage(t, srv, key, query)
			for _, c := range list {
				got = append(got, c["contact"].(map[string]any)["id"].(string))
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(got, want[3:]) {
			t.Fatalf("unread pages: %v, want %v", got, want[3:])
		}
	})
}

func TestConversationRead(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	_, contact := chat(t, srv, key, "r-1", "reader-1", "hi", nil)
	chat(t, srv, key, "r-2", "reader-1", "are you there?", nil)
	if !marker(t, srv, key, contact, "unread") {
		t.Fatal("a new conversation is read")
	}

	r := do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/read", key, nil)
	expect(t, r, http.StatusNoContent, "")
	if len(r.Body) != 0 {
		t.Fatalf("204 with a body: %q", r.Body)
	}
	if marker(t, srv, key, contact, "unread") {
		t.Fatal("unread after POST /read")
	}
	// Marking again changes nothing.
	expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/read", key, nil), http.StatusNoContent, "")
	if marker(t, srv, key, contact, "unread") {
		t.Fatal("unread after a second POST /read")
	}

	// A new incoming message makes it unread again, until the next read.
	chat(t, srv, key, "r-3", "reader-1", "hello??", nil)
	if !marker(t, srv, key, contact, "unread") {
		t.Fatal("a new incoming message did not make the conversation unread")
	}
	expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/read", key, nil), http.StatusNoContent, "")
	if marker(t, srv, key, contact, "unread") {
		t.Fatal("unread after reading the new message")
	}

	// An outgoing message (a team member's reply) is not something to read.
	expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/messages", key, map[string]any{"body": "Here!"}), http.StatusCreated, "")
	if c := conversationOf(t, srv, key, contact); c["unread"] != false || c["lastMessage"].(map[string]any)["direction"] != "outgoing" {
		t.Fatalf("after an outgoing message: %v", c)
	}

	t.Run("a contact without messages", func(t *testing.T) {
		quiet := newContact(t, srv, key, "+14155550177")
		expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+quiet+"/read", key, nil), http.StatusNoContent, "")
		if conversationOf(t, srv, key, quiet) != nil {
			t.Fatal("a contact without messages is listed")
		}
	})

	t.Run("unknown and other accounts' contacts", func(t *testing.T) {
		_, other := newAccount(t)
		_, theirs := chat(t, srv, other, "r-x", "stranger", "hi", nil)
		for _, id := range []string{theirs, "ct_01jd8z6q6v3j7x0zj5s1v9k2qh", "nope", strings.Repeat("x", 300)} {
			expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+url.PathEscape(id)+"/read", key, nil), http.StatusNotFound, models.CodeNotFound)
		}
		if !marker(t, srv, other, theirs, "unread") {
			t.Fatal("the refused read marked the other account's conversation read")
		}
	})
}

// handoffAlert has the offline bot hand a new contact's conversation off (the contact asks for a
// human) and returns the alert the worker raised and the contact's id.
func handoffAlert(t *testing.T, srv *server, key, fromID string) (alert map[string]any, contactID string) {
	t.Helper()
	_, contactID = chat(t, srv, key, fromID+"-sid", fromID, "Can I talk to a human please?", nil)
	waitFor(t, 10*time.Second, "the handoff alert", func() bool {
		for _, a := range alertList(t, srv, key, "") {
			if a["contactId"] == contactID {
				alert = a
				return true
			}
		}
		return false
	})
	return alert, contactID
}

// alertList is the data of GET /v1/alerts?query, which must answer 200.
func alertList(t *testing.T, srv *server, key, query string) []map[string]any {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/alerts?"+query, key, nil)
	expect(t, r, http.StatusOK, "")
	var out []map[string]any
	for _, a := range r.JSON(t)["data"].([]any) {
		out = append(out, a.(map[string]any))
	}
	return out
}

func hasAlert(alerts []map[string]any, id any) map[string]any {
	for _, a := range alerts {
		if a["id"] == id {
			return a
		}
	}
	return nil
}

func TestResolveAlert(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	key, _ := messagingAccount(t, srv, newSink(t, nil))

	alert, contact := handoffAlert(t, srv, key, "helpme")
	if alert["resolvedAt"] != nil {
		t.Fatalf("a new alert is resolved: %v", alert)
	}
	if !marker(t, srv, key, contact, "needsHuman") {
		t.Fatal("needsHuman is false with an open alert")
	}
	id := alert["id"].(string)

	r := do(t, "POST", srv.URL+"/v1/alerts/"+id+"/resolve", key, nil)
	expect(t, r, http.StatusOK, "")
	resolved := r.JSON(t)
	at, _ := resolved["resolvedAt"].(string)
	when, err := time.Parse(time.RFC3339Nano, at)
	if err != nil || time.Since(when) > time.Minute || time.Until(when) > time.Minute {
		t.Fatalf("resolvedAt %q (%v): %s", at, err, r.Body)
	}
	for _, field := range []string{"id", "contactId", "messageId", "reason", "createdAt"} {
		if resolved[field] != alert[field] {
			t.Fatalf("%s changed: %v, was %v", field, resolved[field], alert[field])
		}
	}

	if hasAlert(alertList(t, srv, key, ""), id) != nil || hasAlert(alertList(t, srv, key, "all=false"), id) != nil {
		t.Fatal("a resolved alert is still listed as open")
	}
	if a := hasAlert(alertList(t, srv, key, "all=true"), id); a == nil || a["resolvedAt"] != at {
		t.Fatalf("?all=true: %v", a)
	}

	// Resolving again changes nothing.
	again := do(t, "POST", srv.URL+"/v1/alerts/"+id+"/resolve", key, nil)
	expect(t, again, http.StatusOK, "")
	if string(again.Body) != string(r.Body) {
		t.Fatalf("resolving again: %s, first %s", again.Body, r.Body)
	}

	// The handoff paused the bot: the conversation still needs a person until the bot is resumed.
	if !marker(t, srv, key, contact, "needsHuman") {
		t.Fatal("needsHuman is false while the bot is paused")
	}
	expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+contact+"/bot", key, map[string]any{"active": true}), http.StatusOK, "")
	if marker(t, srv, key, contact, "needsHuman") {
		t.Fatal("needsHuman after resolving and resuming")
	}

	t.Run("an open alert alone needs a human", func(t *testing.T) {
		alert, contact := handoffAlert(t, srv, key, "helpme-too")
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+contact+"/bot", key, map[string]any{"active": true}), http.StatusOK, "")
		if !marker(t, srv, key, contact, "needsHuman") {
			t.Fatal("needsHuman is false with an open alert and the bot resumed")
		}
		if got := conversationContacts(t, srv, key, "needsHuman=true"); !slices.Equal(got, []string{contact}) {
			t.Fatalf("needsHuman=true: %v", got)
		}
		expect(t, do(t, "POST", srv.URL+"/v1/alerts/"+alert["id"].(string)+"/resolve", key, nil), http.StatusOK, "")
		if marker(t, srv, key, contact, "needsHuman") {
			t.Fatal("needsHuman after resolving")
		}
	})

	t.Run("all must be true or false", func(t *testing.T) {
		for _, v := range []string{"yes", "1", "TRUE", "all"} {
			expect(t, do(t, "GET", srv.URL+"/v1/alerts?all="+v, key, nil), http.StatusBadRequest, models.CodeValidation)
		}
	})

	t.Run("another account's and unknown alerts", func(t *testing.T) {
		otherKey, _ := messagingAccount(t, srv, newSink(t, nil))
		theirs, _ := handoffAlert(t, srv, otherKey, "their-contact")
		theirID := theirs["id"].(string)
		for _, target := range []string{theirID, unknownID(theirID), "alr_nope", strings.Repeat("a", 300)} {
			r := do(t, "POST", srv.URL+"/v1/alerts/"+url.PathEscape(target)+"/resolve", key, nil)
			expect(t, r, http.StatusNotFound, models.CodeNotFound)
			if strings.Contains(string(r.Body), theirs["contactId"].(string)) {
				t.Fatalf("the refusal shows the other account's contact: %s", r.Body)
			}
		}
		if a := hasAlert(alertList(t, srv, otherKey, ""), theirID); a == nil || a["resolvedAt"] != nil {
			t.Fatalf("the other account's alert after refused resolves: %v", a)
		}
		if hasAlert(alertList(t, srv, key, "all=true"), theirID) != nil {
			t.Fatal("the other account's alert is listed here")
		}
	})
}

func TestConversationFailedMarker(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	// The webhook refuses the replies to "broken" with a final 400 until healed.
	var healed atomic.Bool
	var hook *sink
	hook = newSink(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if !healed.Load() && strings.Contains(string(hook.deliveries()[n-1].Body), `"toId":"broken"`) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	key, _ := messagingAccount(t, srv, hook)
	_, broken := chat(t, srv, key, "f-1", "broken", "hi", nil)
	_, fine := chat(t, srv, key, "f-2", "fine", "hi", nil)

	var reply map[string]any
	waitFor(t, 15*time.Second, "the failed reply to show", func() bool {
		c := conversationOf(t, srv, key, broken)
		reply, _ = c["lastMessage"].(map[string]any)
		return c["failed"] == true
	})
	if reply["direction"] != "outgoing" || reply["status"] != "failed" || reply["authorType"] != "bot" {
		t.Fatalf("the failed conversation's last message: %v", reply)
	}
	waitFor(t, 15*time.Second, "the other reply to be sent", func() bool {
		last, _ := conversationOf(t, srv, key, fine)["lastMessage"].(map[string]any)
		return last["direction"] == "outgoing" && last["status"] == "sent"
	})
	if marker(t, srv, key, fine, "failed") {
		t.Fatal("a delivered conversation is marked failed")
	}
	if got := conversationContacts(t, srv, key, "failed=true"); !slices.Equal(got, []string{broken}) {
		t.Fatalf("failed=true: %v", got)
	}
	if got := conversationContacts(t, srv, key, "failed=false"); !slices.Equal(got, []string{fine}) {
		t.Fatalf("failed=false: %v", got)
	}

	// Delivered on a redelivery: no longer failed.
	healed.Store(true)
	expect(t, do(t, "POST", srv.URL+"/v1/messages/"+reply["id"].(string)+"/redeliver", key, nil), http.StatusOK, "")
	waitFor(t, 15*time.Second, "the redelivery", func() bool { return !marker(t, srv, key, broken, "failed") })
	if got := conversationContacts(t, srv, key, "failed=true"); len(got) != 0 {
		t.Fatalf("failed=true after the redelivery: %v", got)
	}
}

// Every new endpoint asks for a key before anything else.
func TestConversationEndpointsNeedAKey(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	_, contact := chat(t, srv, key, "k-1", "keyless", "hi", nil)
	for _, req := range []struct{ method, path string }{
		{"GET", "/v1/conversations"},
		{"GET", "/v1/conversations?unread=true"},
		{"POST", "/v1/contacts/" + contact + "/read"},
		{"POST", "/v1/alerts/alr_01jd8z6q6v3j7x0zj5s1v9k2qh/resolve"},
		{"GET", "/v1/alerts?all=true"},
		{"GET", "/v1/events"},
	} {
		for _, bad := range []string{"", "not-a-key"} {
			r := do(t, req.method, srv.URL+req.path, bad, nil)
			expect(t, r, http.StatusUnauthorized, models.CodeUnauthorized)
		}
	}
	if !marker(t, srv, key, contact, "unread") {
		t.Fatal("an unauthenticated read marked the conversation read")
	}
}
