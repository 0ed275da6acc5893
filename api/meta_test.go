package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// graphAPI is a real HTTP server that plays Meta's Send API: it records every call and answers with a
// new message_id, or with what fail returns for the call (a status and a body) when it returns one.
type graphAPI struct {
	*sink
	mu   sync.Mutex
	fail func(call graphCall) (status int, body string)
}

// graphCall is one Send API request as the fake Graph API read it.
type graphCall struct {
	Path          string
	Authorization string
	Recipient     string
	MessagingType string
	Tag           string
	Text          string
}

func newGraphAPI(t *testing.T) *graphAPI {
	g := &graphAPI{}
	g.sink = newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		call := g.call(g.deliveries()[n-1])
		w.Header().Set("Content-Type", "application/json")
		g.mu.Lock()
		fail := g.fail
		g.mu.Unlock()
		if fail != nil {
			if status, body := fail(call); status != 0 {
				w.WriteHeader(status)
				_, _ = w.Write([]byte(body))
				return
			}
		}
		_, _ = fmt.Fprintf(w, `{"recipient_id":%q,"message_id":"m_out_%d"}`, call.Recipient, n)
	})
	return g
}

func (g *graphAPI) failWith(f func(call graphCall) (int, string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fail = f
}

func (g *graphAPI) call(d delivery) graphCall {
	var body struct {
		Recipient struct {
			ID string `json:"id"`
		} `json:"recipient"`
		MessagingType string `json:"messaging_type"`
		Tag           string `json:"tag"`
		Message       struct {
			Text string `json:"text"`
		} `json:"message"`
	}
	_ = json.Unmarshal(d.Body, &body)
	return graphCall{
		Path: d.Path, Authorization: d.Header.Get("Authorization"), Recipient: body.Recipient.ID,
		MessagingType: body.MessagingType, Tag: body.Tag, Text: body.Message.Text,
	}
}

// calls are the Send API requests so far, oldest first.
func (g *graphAPI) calls() []graphCall {
	var out []graphCall
	for _, d := range g.deliveries() {
		out = append(out, g.call(d))
	}
	return out
}

// callsTo are the calls whose recipient is psid.
func (g *graphAPI) callsTo(psid string) []graphCall {
	var out []graphCall
	for _, c := range g.calls() {
		if c.Recipient == psid {
			out = append(out, c)
		}
	}
	return out
}

// metaText is a messaging event with a text message from psid, as Meta sends it.
func metaText(psid, pageID, mid, text string) map[string]any {
	return map[string]any{
		"sender": map[string]any{"id": psid}, "recipient": map[string]any{"id": pageID}, "timestamp": 1732350000000,
		"message": map[string]any{"mid": mid, "text": text},
	}
}

// metaBatchBody is a webhook batch of object with one entry for pageID holding events.
func metaBatchBody(object, pageID string, events ...map[string]any) []byte {
	raw, _ := json.Marshal(map[string]any{
		"object": object,
		"entry":  []any{map[string]any{"id": pageID, "time": 1732350000000, "messaging": events}},
	})
	return raw
}

// postMeta posts a webhook batch to the channel's inbound endpoint, signed with secret ("" unsigned).
func postMeta(t *testing.T, srv *server, channel string, body []byte, secret string) response {
	t.Helper()
	var headers []string
	if secret != "" {
		headers = append(headers, "X-Hub-Signature-256: "+metaSign(secret, body))
	}
	return do(t, "POST", srv.URL+"/v1/channels/"+channel+"/inbound", "", body, headers...)
}

// contactMessages is the contact's conversation, oldest first.
func contactMessages(t *testing.T, srv *server, key, contactID string) []map[string]any {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/contacts/"+contactID+"/messages?limit=200", key, nil)
	expect(t, r, http.StatusOK, "")
	var out []map[string]any
	for _, m := range r.JSON(t)["data"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

// messageCount counts the account's stored incoming messages.
func messageCount(t *testing.T, accountID string) int {
	t.Helper()
	n, err := env.Store.DB().NewSelect().Table("messages").Where("account_id = ? AND direction = 'incoming'", accountID).Count(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// contactOfSender finds the contact of a Meta sender id ("messenger:<psid>") through its messages.
func contactOfSender(t *testing.T, accountID, senderID string) string {
	t.Helper()
	var ids []string
	err := env.Store.DB().NewSelect().Table("messages").Column("contact_id").
		Where("account_id = ? AND from_id = ?", accountID, senderID).Scan(t.Context(), &ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 {
		t.Fatalf("no message from %s", senderID)
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("the messages of %s belong to several contacts: %v", senderID, ids)
		}
	}
	return ids[0]
}

// backdateIncoming moves the contact's incoming messages into the past, so that Meta's messaging
// window counts from then.
func backdateIncoming(t *testing.T, contactID string, age time.Duration) {
	t.Helper()
	_, err := env.Store.DB().NewUpdate().Table("messages").Set("created_at = ?", time.Now().Add(-age)).
		Where("contact_id = ? AND direction = 'incoming'", contactID).Exec(t.Context())
	if err != nil {
		t.Fatal(err)
	}
}

// connectMessenger saves Messenger settings for a new account and returns the account id and key.
func connectMessenger(t *testing.T, srv *server, pageID string) (accountID, key string) {
	t.Helper()
	acc, key := newAccount(t)
	r := do(t, "PUT", srv.URL+"/v1/settings/channels/messenger", key, map[string]any{
		"pageId": pageID, "pageAccessToken": "page-token-" + pageID, "appSecret": "app-secret-" + pageID, "verifyToken": "verify-" + pageID,
	})
	expect(t, r, http.StatusOK, "")
	return acc.ID, key
}

func TestMessengerSettings(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	url := srv.URL + "/v1/settings/channels/messenger"
	valid := map[string]any{"pageId": "104857600001", "pageAccessToken": "EAAG-secret-token", "appSecret": "app-secret-1", "verifyToken": "verify-1"}

	r := do(t, "PUT", url, key, valid)
	expect(t, r, http.StatusOK, "")
	for _, secret := range []string{"EAAG-secret-token", "app-secret-1", "verify-1"} {
		if strings.Contains(string(r.Body), secret) {
			t.Fatalf("the answer shows a secret: %s", r.Body)
		}
	}
	if got := r.JSON(t); got["pageId"] != "104857600001" || got["pageAccessTokenSet"] != true {
		t.Fatalf("answer: %s", r.Body)
	}

	for name, body := range map[string]any{
		"no page id":           map[string]any{"pageAccessToken": "t", "appSecret": "s", "verifyToken": "v"},
		"no token":             map[string]any{"pageId": "1", "appSecret": "s", "verifyToken": "v"},
		"no app secret":        map[string]any{"pageId": "1", "pageAccessToken": "t", "verifyToken": "v"},
		"no verify token":      map[string]any{"pageId": "1", "pageAccessToken": "t", "appSecret": "s"},
		"a page id not digits": map[string]any{"pageId": "my-page", "pageAccessToken": "t", "appSecret": "s", "verifyToken": "v"},
		"a blank page id":      map[string]any{"pageId": "  ", "pageAccessToken": "t", "appSecret": "s", "verifyToken": "v"},
		"a token of a number":  map[string]any{"pageId": "1", "pageAccessToken": 5, "appSecret": "s", "verifyToken": "v"},
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			expect(t, do(t, "PUT", url, key, body), http.StatusBadRequest, "VALIDATION_ERROR")
		})
	}
	t.Run("refuses an empty body", func(t *testing.T) {
		r := do(t, "PUT", url, key, "")
		if r.Status != http.StatusBadRequest {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
	})
	t.Run("refuses malformed JSON", func(t *testing.T) {
		expect(t, do(t, "PUT", url, key, `{"pageId":`), http.StatusBadRequest, "INVALID_JSON")
	})
	t.Run("one page belongs to one account", func(t *testing.T) {
		_, other := newAccount(t)
		expect(t, do(t, "PUT", url, other, valid), http.StatusConflict, "CONFLICT")
		expect(t, do(t, "PUT", url, key, valid), http.StatusOK, "") // its own account may save it again
	})
	t.Run("needs a key", func(t *testing.T) {
		expect(t, do(t, "PUT", url, "", valid), http.StatusUnauthorized, "UNAUTHORIZED")
	})
	t.Run("the refusals stored nothing", func(t *testing.T) {
		n, err := env.Store.DB().NewSelect().Table("channel_credentials").Where("kind = 'messenger' AND lookup_key IN ('1', 'my-page')").Count(t.Context())
		if err != nil || n != 0 {
			t.Fatalf("%d rows stored for refused settings (%v)", n, err)
		}
	})
}

func TestMessengerSubscriptionCheck(t *testing.T) {
	srv := startServer(t)
	connectMessenger(t, srv, "104857600002")
	url := srv.URL + "/v1/channels/messenger/inbound"

	r := do(t, "GET", url+"?hub.mode=subscribe&hub.verify_token=verify-104857600002&hub.challenge=1158201444", "", nil)
	if r.Status != http.StatusOK || string(r.Body) != "1158201444" || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("challenge: %d %q %s", r.Status, r.Body, r.Header.Get("Content-Type"))
	}
	for name, target := range map[string]string{
		"a verify token mismatch": url + "?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1",
		"no verify token":         url + "?hub.mode=subscribe&hub.challenge=1",
		"another mode":            url + "?hub.mode=unsubscribe&hub.verify_token=verify-104857600002&hub.challenge=1",
		// The token is Messenger's: Instagram's and WhatsApp's checks do not know it.
		"instagram's endpoint": srv.URL + "/v1/channels/instagram/inbound?hub.mode=subscribe&hub.verify_token=verify-104857600002&hub.challenge=1",
		"whatsapp's endpoint":  srv.URL + "/v1/channels/whatsapp/inbound?hub.mode=subscribe&hub.verify_token=verify-104857600002&hub.challenge=1",
	} {
		t.Run("403 for "+name, func(t *testing.T) {
			expect(t, do(t, "GET", target, "", nil), http.StatusForbidden, "FORBIDDEN")
		})
	}
}

func TestMessengerInboundBatchesRepliesAndReactions(t *testing.T) {
	graph := newGraphAPI(t)
	srv := startServer(t)
	startWorker(t, "MESSENGER_API_BASE_URL="+graph.URL+"/v23.0")
	const page = "104857600003"
	accountID, key := connectMessenger(t, srv, page)
	secret := "app-secret-" + page

	// One batch the way Meta sends it: two senders, a text and an image from the first, an echo of
	// the page's own message, a read receipt and a delivery receipt.
	batch := metaBatchBody("page", page,
		metaText("7001", page, "m_in_1", "Hi, do you ship to Lisbon?"),
		metaText("7002", page, "m_in_2", "Hello there"),
		map[string]any{"sender": map[string]any{"id": "7001"}, "recipient": map[string]any{"id": page}, "timestamp": 1732350000100,
			"message": map[string]any{"mid": "m_in_3", "attachments": []any{
				map[string]any{"type": "image", "payload": map[string]any{"url": "https://cdn.example.com/photo.jpg"}},
			}}},
		map[string]any{"sender": map[string]any{"id": page}, "recipient": map[string]any{"id": "7001"}, "timestamp": 1732350000200,
			"message": map[string]any{"mid": "m_echo_1", "text": "sent from the page inbox", "is_echo": true}},
		map[string]any{"sender": map[string]any{"id": "7002"}, "recipient": map[string]any{"id": page}, "timestamp": 1732350000300,
			"read": map[string]any{"watermark": 1732350000000}},
		map[string]any{"sender": map[string]any{"id": "7002"}, "recipient": map[string]any{"id": page}, "timestamp": 1732350000400,
			"delivery": map[string]any{"mids": []any{"m_out_1"}, "watermark": 1732350000000}},
	)
	r := postMeta(t, srv, "messenger", batch, secret)
	expect(t, r, http.StatusOK, "")
	if got := messageCount(t, accountID); got != 3 {
		t.Fatalf("%d messages stored, want the 3 the contacts wrote (no echo, no receipts)", got)
	}
	first, second := contactOfSender(t, accountID, "messenger:7001"), contactOfSender(t, accountID, "messenger:7002")
	if first == second {
		t.Fatal("two senders share one contact")
	}

	waitFor(t, 15*time.Second, "the bot's three replies at the Send API", func() bool { return len(graph.calls()) >= 3 })
	for _, call := range graph.calls() {
		if call.Path != "/v23.0/"+page+"/messages" || call.Authorization != "Bearer page-token-"+page ||
			call.MessagingType != "RESPONSE" || call.Tag != "" || call.Text == "" {
			t.Fatalf("Send API call: %+v", call)
		}
	}
	if n1, n2 := len(graph.callsTo("7001")), len(graph.callsTo("7002")); n1 != 2 || n2 != 1 {
		t.Fatalf("replies: %d to 7001 and %d to 7002, want 2 and 1", n1, n2)
	}

	// The offline bot's reply is stored once the Send API has answered (README, "Custom channels, the
	// bot and the reply webhook"), so it may show a moment after the call.
	var conv []map[string]any
	waitFor(t, 10*time.Second, "the first sender's two replies stored", func() bool {
		conv = contactMessages(t, srv, key, first)
		n := 0
		for _, m := range conv {
			if m["direction"] == "outgoing" {
				n++
			}
		}
		return n == 2
	})
	var image, reply map[string]any
	for _, m := range conv {
		if m["channel"] != "messenger" {
			t.Fatalf("message on channel %v: %v", m["channel"], m)
		}
		if m["messageSid"] == "m_in_3" {
			image = m
		}
		if m["direction"] == "outgoing" && reply == nil {
			reply = m
		}
	}
	if image == nil || image["mediaUrl"] != "https://cdn.example.com/photo.jpg" || image["mediaContentType"] != "image/*" || image["body"] != "(image)" {
		t.Fatalf("the image message: %v", image)
	}
	if image["mediaCheck"] == nil {
		t.Fatalf("the attachment was not given to the worker's media check: %v", image)
	}
	waitForMessage(t, srv, key, reply["id"].(string), 10*time.Second, "the reply to be sent", func(m map[string]any) bool {
		return m["status"] == "sent" && m["providerMessageId"] != nil
	})

	t.Run("a redelivered batch stores nothing twice", func(t *testing.T) {
		before, calls := messageCount(t, accountID), len(graph.calls())
		expect(t, postMeta(t, srv, "messenger", batch, secret), http.StatusOK, "")
		waitDrained(t, accountID, retryHorizon) // a wrongly queued reply would still be in a task
		if after := messageCount(t, accountID); after != before {
			t.Fatalf("redelivery stored %d more messages", after-before)
		}
		if n := len(graph.calls()); n != calls {
			t.Fatalf("redelivery sent %d more replies", n-calls)
		}
	})

	t.Run("a reaction is stored on the message it names", func(t *testing.T) {
		sent := waitForMessage(t, srv, key, reply["id"].(string), 5*time.Second, "the provider id", func(m map[string]any) bool {
			return m["providerMessageId"] != nil
		})
		reaction := metaBatchBody("page", page, map[string]any{
			"sender": map[string]any{"id": "7001"}, "recipient": map[string]any{"id": page}, "timestamp": 1732350009000,
			"reaction": map[string]any{"mid": sent["providerMessageId"], "action": "react", "reaction": "love", "emoji": "❤"},
		})
		calls := len(graph.calls())
		for i := 0; i < 2; i++ { // the second is a redelivery
			expect(t, postMeta(t, srv, "messenger", reaction, secret), http.StatusOK, "")
		}
		var reactions []map[string]any
		for _, m := range contactMessages(t, srv, key, first) {
			if m["messageType"] == "reaction" {
				reactions = append(reactions, m)
			}
		}
		if len(reactions) != 1 || reactions[0]["body"] != "❤" || reactions[0]["reactsToId"] != reply["id"] {
			t.Fatalf("reactions: %v (want one ❤ on %v)", reactions, reply["id"])
		}
		waitDrained(t, mustAccountID(t, key), retryHorizon) // a bot task for the reaction would still be pending
		if len(graph.calls()) != calls {
			t.Fatal("the bot answered a reaction")
		}
	})

	t.Run("bad batches get their 4xx and store nothing", func(t *testing.T) {
		fresh := metaBatchBody("page", page, metaText("7003", page, "m_in_bad", "should not be stored"))
		before := messageCount(t, accountID)
		expect(t, postMeta(t, srv, "messenger", fresh, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, postMeta(t, srv, "messenger", fresh, "not-the-app-secret"), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, do(t, "POST", srv.URL+"/v1/channels/messenger/inbound", "", fresh, "X-Hub-Signature-256: sha256=zz"), http.StatusUnauthorized, "UNAUTHORIZED")
		tampered := []byte(strings.Replace(string(fresh), "should not", "must not", 1))
		expect(t, do(t, "POST", srv.URL+"/v1/channels/messenger/inbound", "", tampered, "X-Hub-Signature-256: "+metaSign(secret, fresh)), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, postMeta(t, srv, "messenger", []byte(`{"object":"page","entry":[`), secret), http.StatusBadRequest, "INVALID_JSON")
		expect(t, postMeta(t, srv, "messenger", []byte(` `), secret), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, postMeta(t, srv, "messenger", metaBatchBody("instagram", page, metaText("7003", page, "m_in_bad", "x")), secret), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, postMeta(t, srv, "messenger", metaBatchBody("page", "", metaText("7003", page, "m_in_bad", "x")), secret), http.StatusBadRequest, "VALIDATION_ERROR")
		// A batch that also names another account's page must verify with that account's secret too.
		otherPage := "104857600033"
		connectMessenger(t, srv, otherPage)
		two, _ := json.Marshal(map[string]any{"object": "page", "entry": []any{
			map[string]any{"id": page, "messaging": []any{metaText("7003", page, "m_in_bad", "x")}},
			map[string]any{"id": otherPage, "messaging": []any{metaText("7004", otherPage, "m_in_bad2", "y")}},
		}})
		expect(t, postMeta(t, srv, "messenger", two, secret), http.StatusUnauthorized, "UNAUTHORIZED")
		if after := messageCount(t, accountID); after != before {
			t.Fatalf("refused batches stored %d messages", after-before)
		}
	})

	t.Run("a page no account has connected is acknowledged and ignored", func(t *testing.T) {
		unknown := metaBatchBody("page", "999999999", metaText("7005", "999999999", "m_in_unknown", "hello?"))
		expect(t, postMeta(t, srv, "messenger", unknown, "whatever-secret"), http.StatusOK, "")
		n, err := env.Store.DB().NewSelect().Table("messages").Where("external_id = 'm_in_unknown'").Count(t.Context())
		if err != nil || n != 0 {
			t.Fatalf("stored %d messages for an unknown page (%v)", n, err)
		}
	})

	t.Run("team replies: RESPONSE within 24 hours, HUMAN_AGENT to 7 days, nothing after", func(t *testing.T) {
		human := func(body string) string {
			r := do(t, "POST", srv.URL+"/v1/contacts/"+second+"/messages", key, map[string]any{"body": body})
			expect(t, r, http.StatusCreated, "")
			if ch := r.JSON(t)["channel"]; ch != "messenger" {
				t.Fatalf("a reply to a Messenger conversation went out on %v", ch)
			}
			return r.JSON(t)["id"].(string)
		}
		id := human("Yes, we do!")
		waitForMessage(t, srv, key, id, 10*time.Second, "the team reply to be sent", func(m map[string]any) bool { return m["status"] == "sent" })
		if last := graph.callsTo("7002"); last[len(last)-1].MessagingType != "RESPONSE" || last[len(last)-1].Text != "Yes, we do!" {
			t.Fatalf("team reply within 24 h: %+v", last[len(last)-1])
		}

		backdateIncoming(t, second, 3*24*time.Hour)
		id = human("Following up on your order")
		waitForMessage(t, srv, key, id, 10*time.Second, "the tagged reply to be sent", func(m map[string]any) bool { return m["status"] == "sent" })
		if last := graph.callsTo("7002"); last[len(last)-1].MessagingType != "MESSAGE_TAG" || last[len(last)-1].Tag != "HUMAN_AGENT" {
			t.Fatalf("team reply after 3 days: %+v", last[len(last)-1])
		}

		backdateIncoming(t, second, 8*24*time.Hour)
		calls := len(graph.calls())
		id = human("Are you still there?")
		m := waitForMessage(t, srv, key, id, 10*time.Second, "the reply to fail", func(m map[string]any) bool { return m["status"] == "failed" })
		if e, _ := m["error"].(string); !strings.HasPrefix(e, "OUTSIDE_MESSAGING_WINDOW: ") || m["nextAttemptAt"] != nil {
			t.Fatalf("a reply after 7 days: %v", m)
		}
		if len(graph.calls()) != calls {
			t.Fatal("the Send API was called outside the messaging window")
		}
	})

	t.Run("Graph errors: stored as code/subcode, throttling retried, others final", func(t *testing.T) {
		backdateIncoming(t, second, time.Hour)
		var throttledOnce, downOnce atomic.Bool
		graph.failWith(func(c graphCall) (int, string) {
			switch {
			case c.Text == "throttled" && !throttledOnce.Swap(true):
				return http.StatusBadRequest, `{"error":{"message":"(#613) Calls to this api have exceeded the rate limit.","type":"OAuthException","code":613,"fbtrace_id":"A1"}}`
			case c.Text == "outside":
				return http.StatusBadRequest, `{"error":{"message":"(#10) This message is sent outside of allowed window.","type":"OAuthException","code":10,"error_subcode":2018278,"fbtrace_id":"A2"}}`
			case c.Text == "down" && !downOnce.Swap(true):
				return http.StatusServiceUnavailable, `<html>unavailable</html>`
			}
			return 0, ""
		})
		defer graph.failWith(nil)
		for _, tc := range []struct{ body, status, errPrefix string }{
			{"outside", "failed", "10/2018278: (#10) This message is sent outside of allowed window."},
			{"throttled", "sent", ""},
			{"down", "sent", ""},
		} {
			r := do(t, "POST", srv.URL+"/v1/contacts/"+second+"/messages", key, map[string]any{"body": tc.body})
			expect(t, r, http.StatusCreated, "")
			m := waitForMessage(t, srv, key, r.JSON(t)["id"].(string), 15*time.Second, tc.body+" to settle", func(m map[string]any) bool {
				return m["status"] == tc.status && m["nextAttemptAt"] == nil
			})
			if e, _ := m["error"].(string); tc.errPrefix != "" && e != tc.errPrefix {
				t.Fatalf("%s: error %q, want %q", tc.body, e, tc.errPrefix)
			}
			wantAttempts := 2.0
			if tc.status == "failed" {
				wantAttempts = 1 // final at once
			}
			if m["attempts"] != wantAttempts {
				t.Fatalf("%s: %v attempts, want %v: %v", tc.body, m["attempts"], wantAttempts, m)
			}
		}
	})
}

func TestInstagramSharesTheMessengerPlatform(t *testing.T) {
	graph := newGraphAPI(t)
	srv := startServer(t)
	startWorker(t, "INSTAGRAM_API_BASE_URL="+graph.URL+"/v23.0", "MESSENGER_API_BASE_URL=http://127.0.0.1:1")
	acc, key := newAccount(t)
	const igAccount = "17841400000000001"
	r := do(t, "PUT", srv.URL+"/v1/settings/channels/instagram", key, map[string]any{
		"accountId": igAccount, "accessToken": "IGAA-token", "appSecret": "ig-secret", "verifyToken": "ig-verify",
	})
	expect(t, r, http.StatusOK, "")
	if strings.Contains(string(r.Body), "IGAA-token") || r.JSON(t)["accountId"] != igAccount {
		t.Fatalf("settings answer: %s", r.Body)
	}
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/channels/instagram", key, map[string]any{"accountId": igAccount}), http.StatusBadRequest, "VALIDATION_ERROR")
	r = do(t, "GET", srv.URL+"/v1/channels/instagram/inbound?hub.mode=subscribe&hub.verify_token=ig-verify&hub.challenge=42", "", nil)
	if r.Status != http.StatusOK || string(r.Body) != "42" {
		t.Fatalf("challenge: %d %s", r.Status, r.Body)
	}

	// Messenger's object on Instagram's endpoint is malformed there.
	expect(t, postMeta(t, srv, "instagram", metaBatchBody("page", igAccount, metaText("8001", igAccount, "ig_m_1", "hi")), "ig-secret"), http.StatusBadRequest, "VALIDATION_ERROR")
	batch := metaBatchBody("instagram", igAccount, metaText("8001", igAccount, "ig_m_1", "Is the blue one in stock?"))
	expect(t, postMeta(t, srv, "instagram", batch, "wrong"), http.StatusUnauthorized, "UNAUTHORIZED")
	expect(t, postMeta(t, srv, "instagram", batch, "ig-secret"), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the bot's Instagram reply", func() bool { return len(graph.calls()) == 1 })
	call := graph.calls()[0]
	if call.Path != "/v23.0/"+igAccount+"/messages" || call.Authorization != "Bearer IGAA-token" || call.Recipient != "8001" || call.MessagingType != "RESPONSE" {
		t.Fatalf("Send API call: %+v", call)
	}
	contact := contactOfSender(t, acc.ID, "instagram:8001")
	for _, m := range contactMessages(t, srv, key, contact) {
		if m["channel"] != "instagram" {
			t.Fatalf("message on %v", m["channel"])
		}
	}
}

func TestMetaCampaignOpenings(t *testing.T) {
	graph := newGraphAPI(t)
	srv := startServer(t)
	startWorker(t, "MESSENGER_API_BASE_URL="+graph.URL)
	const page = "104857600004"
	accountID, key := connectMessenger(t, srv, page)

	t.Run("a live Messenger campaign needs the page connected", func(t *testing.T) {
		_, bare := newAccount(t)
		list := newList(t, srv, bare, "leads")
		r := do(t, "POST", srv.URL+"/v1/campaigns", bare, map[string]any{
			"name": "x", "listId": list, "channel": "messenger", "openingMessage": "Hi", "status": "live",
		})
		expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, do(t, "POST", srv.URL+"/v1/campaigns", bare, map[string]any{"name": "x", "channel": "telegram"}), http.StatusBadRequest, "VALIDATION_ERROR")
	})

	// Three contacts: one wrote on Messenger just now, one wrote two days ago, one never did.
	expect(t, postMeta(t, srv, "messenger", metaBatchBody("page", page,
		metaText("9001", page, "m_c_1", "hello"), metaText("9002", page, "m_c_2", "hi")), "app-secret-"+page), http.StatusOK, "")
	recent, stale := contactOfSender(t, accountID, "messenger:9001"), contactOfSender(t, accountID, "messenger:9002")
	waitFor(t, 10*time.Second, "the bot's replies to the first messages", func() bool { return len(graph.calls()) == 2 })
	backdateIncoming(t, stale, 48*time.Hour)
	never := namedContact(t, srv, key, "+14155559301", "Nina")

	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"channel": "messenger", "openingMessage": "Hi {{firstName}}, our sale starts today!"})
	r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{recent, stale, never}})
	expect(t, r, http.StatusCreated, "")
	sends := func() map[string]any {
		r := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID, key, nil)
		expect(t, r, http.StatusOK, "")
		return r.JSON(t)["sends"].(map[string]any)
	}
	waitFor(t, 10*time.Second, "every send to be decided", func() bool {
		s := sends()
		return s["queued"] == 0.0 && s["sent"] == 1.0 && s["failed"] == 2.0
	})
	if s := sends(); s["skipped"] != 0.0 {
		t.Fatalf("sends: %v", s)
	}
	waitFor(t, 10*time.Second, "the one opening at the Send API", func() bool { return len(graph.callsTo("9001")) == 2 })
	opening := graph.callsTo("9001")[1]
	if opening.Text != "Hi, our sale starts today!" || opening.MessagingType != "RESPONSE" {
		t.Fatalf("opening: %+v", opening)
	}
	if n := len(graph.callsTo("9002")); n != 1 {
		t.Fatalf("the contact outside the window got %d calls, want only the bot's reply from before", n)
	}
	var details []string
	err := env.Store.DB().NewSelect().Table("campaign_sends").Column("detail").
		Where("campaign_id = ? AND status = 'failed'", campaignID).Order("detail").Scan(t.Context(), &details)
	if err != nil {
		t.Fatal(err)
	}
	if len(details) != 2 || !strings.HasPrefix(details[0], "NO_CHANNEL_IDENTITY: ") || !strings.HasPrefix(details[1], "OUTSIDE_MESSAGING_WINDOW: ") {
		t.Fatalf("failed sends' reasons: %q", details)
	}
}

func TestMetaChannelsIsolateAccounts(t *testing.T) {
	srv := startServer(t)
	const pageA, pageB = "104857600005", "104857600006"
	accountA, _ := connectMessenger(t, srv, pageA)
	accountB, keyB := connectMessenger(t, srv, pageB)
	batchA := metaBatchBody("page", pageA, metaText("9101", pageA, "m_iso_1", "for A only"))

	t.Run("another account's app secret does not sign for this page", func(t *testing.T) {
		expect(t, postMeta(t, srv, "messenger", batchA, "app-secret-"+pageB), http.StatusUnauthorized, "UNAUTHORIZED")
	})
	expect(t, postMeta(t, srv, "messenger", batchA, "app-secret-"+pageA), http.StatusOK, "")
	if a, b := messageCount(t, accountA), messageCount(t, accountB); a != 1 || b != 0 {
		t.Fatalf("A has %d messages and B %d, want 1 and 0", a, b)
	}
	contactA := contactOfSender(t, accountA, "messenger:9101")
	t.Run("another account cannot read or answer the conversation", func(t *testing.T) {
		expect(t, do(t, "GET", srv.URL+"/v1/contacts/"+contactA+"/messages", keyB, nil), http.StatusNotFound, "NOT_FOUND")
		expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+contactA+"/messages", keyB, map[string]any{"body": "hi", "channel": "messenger"}), http.StatusNotFound, "NOT_FOUND")
	})
	t.Run("the same sender on another account's page is another contact", func(t *testing.T) {
		batchB := metaBatchBody("page", pageB, metaText("9101", pageB, "m_iso_2", "for B only"))
		expect(t, postMeta(t, srv, "messenger", batchB, "app-secret-"+pageB), http.StatusOK, "")
		if contactB := contactOfSender(t, accountB, "messenger:9101"); contactB == contactA {
			t.Fatal("two accounts share a contact")
		}
	})
	t.Run("saving settings changes only the caller's", func(t *testing.T) {
		r := do(t, "PUT", srv.URL+"/v1/settings/channels/messenger", keyB, map[string]any{
			"pageId": pageB, "pageAccessToken": "new-token", "appSecret": "new-secret", "verifyToken": "new-verify",
		})
		expect(t, r, http.StatusOK, "")
		a, err := env.Store.MetaSettings(t.Context(), accountA, "messenger")
		if err != nil || a.AccessToken != "page-token-"+pageA || a.AppSecret != "app-secret-"+pageA {
			t.Fatalf("A's settings changed: %+v %v", a, err)
		}
	})
}
