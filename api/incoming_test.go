package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"funnelchat/models"
)

// A 1x1 PNG, so the sniffed type is image/png.
var pngPixel, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func TestIncomingRejectsBadInput(t *testing.T) {
	srv := startServer(t, "MAX_MEDIA_BYTES=1024", "MAX_BODY_BYTES=65536")
	_, key := newAccount(t)
	url := srv.URL + "/v1/incoming_custom_channel_message"
	valid := func(mutate func(cd map[string]any)) map[string]any {
		cd := map[string]any{"messageSid": "sid-1", "fromId": "user-1", "toId": "biz", "body": "hello"}
		mutate(cd)
		return map[string]any{"customData": cd}
	}
	dataURI := func(typ string, data []byte) string {
		return "data:" + typ + ";base64," + base64.StdEncoding.EncodeToString(data)
	}
	cases := []struct {
		name   string
		body   any
		status int
	}{
		{"missing fromId", valid(func(cd map[string]any) { delete(cd, "fromId") }), 400},
		{"missing toId", valid(func(cd map[string]any) { delete(cd, "toId") }), 400},
		{"missing body", valid(func(cd map[string]any) { delete(cd, "body") }), 400},
		{"missing messageSid and id", valid(func(cd map[string]any) { delete(cd, "messageSid") }), 400},
		{"empty body", valid(func(cd map[string]any) { cd["body"] = "" }), 400},
		{"whitespace-only body", valid(func(cd map[string]any) { cd["body"] = " \n\t " }), 400},
		{"empty fromId", valid(func(cd map[string]any) { cd["fromId"] = "  " }), 400},
		{"fromId as a number", valid(func(cd map[string]any) { cd["fromId"] = 42 }), 400},
		{"body as an object", valid(func(cd map[string]any) { cd["body"] = map[string]any{"text": "hi"} }), 400},
		{"customData as a string", map[string]any{"customData": "hello"}, 400},
		{"no customData", map[string]any{"messageType": "text"}, 400},
		{"unknown messageType", valid(func(cd map[string]any) {}), 0}, // replaced below
		{"mediaUrl without mediaContentType", valid(func(cd map[string]any) { cd["mediaUrl"] = "https://example.com/a.jpg" }), 400},
		{"mediaUrl neither link nor data URI", valid(func(cd map[string]any) { cd["mediaUrl"] = "ftp://x/a.jpg"; cd["mediaContentType"] = "image/jpeg" }), 400},
		{"data URI with bad base64", valid(func(cd map[string]any) {
			cd["mediaUrl"] = "data:image/png;base64,@@@"
			cd["mediaContentType"] = "image/png"
		}), 400},
		{"data URI whose content is not the declared type", valid(func(cd map[string]any) {
			cd["mediaUrl"] = dataURI("image/jpeg", pngPixel)
			cd["mediaContentType"] = "image/jpeg"
		}), 400},
		{"data URI type differs from mediaContentType", valid(func(cd map[string]any) {
			cd["mediaUrl"] = dataURI("image/png", pngPixel)
			cd["mediaContentType"] = "image/jpeg"
		}), 400},
		{"data URI over MAX_MEDIA_BYTES", valid(func(cd map[string]any) {
			cd["mediaUrl"] = dataURI("application/pdf", append([]byte("%PDF-1.4\n"), make([]byte, 2000)...))
			cd["mediaContentType"] = "application/pdf"
		}), 413},
		{"body with a NUL character", valid(func(cd map[string]any) { cd["body"] = "a\x00b" }), 400},
		{"overlong messageSid", valid(func(cd map[string]any) { cd["messageSid"] = strings.Repeat("s", 300) }), 400},
		{"empty request body", "", 400},
		{"not JSON", "customData=hello", 400},
		{"truncated JSON", `{"customData":{"messageSid":"x"`, 400},
		{"JSON array", `[1,2]`, 400},
	}
	cases[11] = struct {
		name   string
		body   any
		status int
	}{"unknown messageType", map[string]any{"messageType": "sticker", "customData": valid(func(map[string]any) {})["customData"]}, 400}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "POST", url, key, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if msg, ok := r.JSON(t)["error"].(string); !ok || msg == "" {
				t.Fatalf("want the string error form: %s", r.Body)
			}
		})
	}
	t.Run("other methods are 405 before authentication, in the string form", func(t *testing.T) {
		for _, method := range []string{"GET", "PUT", "PATCH", "DELETE"} {
			r := do(t, method, url, "", nil)
			if r.Status != http.StatusMethodNotAllowed {
				t.Fatalf("%s: status %d", method, r.Status)
			}
			if _, ok := r.JSON(t)["error"].(string); !ok {
				t.Fatalf("%s: want the string error form: %s", method, r.Body)
			}
		}
	})
	t.Run("missing key is 401 in the string form", func(t *testing.T) {
		r := do(t, "POST", url, "", valid(func(map[string]any) {}))
		if r.Status != 401 {
			t.Fatalf("status %d", r.Status)
		}
		if _, ok := r.JSON(t)["error"].(string); !ok {
			t.Fatalf("want the string error form: %s", r.Body)
		}
	})
	t.Run("nothing was stored", func(t *testing.T) {
		n, err := env.Store.DB().NewSelect().TableExpr("messages").Where("external_id = ?", "sid-1").Count(context.Background())
		if err != nil || n != 0 {
			t.Fatalf("%d messages stored (err %v)", n, err)
		}
	})
}

func TestIncomingMessageIsAnsweredThroughTheSignedWebhook(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, secret := messagingAccount(t, srv, hook)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("signing secret %q", secret)
	}

	r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message?apiKey="+key, "", map[string]any{
		"customData": map[string]any{
			"id": "ext-msg-1", "fromId": "visitor-42", "toId": "shop-1", "body": "Do you ship to Canada?",
			"channel": "live-chat", "firstName": "Ann", "email": "ann@example.com",
			"mediaUrl": "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngPixel), "mediaContentType": "image/png",
		},
		"messageType": "text",
	})
	expect(t, r, http.StatusOK, "")
	body := r.JSON(t)
	incomingID, _ := body["messageId"].(string)
	if body["success"] != true || incomingID == "" || body["duplicate"] != nil {
		t.Fatalf("unexpected response: %s", r.Body)
	}

	waitFor(t, 10*time.Second, "the reply at the sink", func() bool { return len(hook.deliveries()) == 1 })
	d := hook.deliveries()[0]
	var payload map[string]any
	if err := json.Unmarshal(d.Body, &payload); err != nil {
		t.Fatal(err)
	}
	in := do(t, "GET", srv.URL+"/v1/messages/"+incomingID, key, nil).JSON(t)
	if payload["toId"] != "visitor-42" || payload["channel"] != "live-chat" || payload["contactId"] != in["contactId"] ||
		payload["userId"] == "" || payload["body"] == "" || payload["messageId"] == "" {
		t.Fatalf("unexpected payload: %s", d.Body)
	}
	if !strings.Contains(payload["body"].(string), "Ann") {
		t.Fatalf("the offline bot should greet the contact by name: %s", payload["body"])
	}
	if in["status"] != "received" || in["direction"] != "incoming" || in["mediaContentType"] != "image/png" {
		t.Fatalf("incoming message: %v", in)
	}

	t.Run("the signature verifies with the published secret and not with another", func(t *testing.T) {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(d.Body, d.Header); err != nil {
			t.Fatalf("signature does not verify: %v (headers %v)", err, d.Header)
		}
		if d.Header.Get("webhook-id") != payload["messageId"] {
			t.Fatalf("webhook-id %q, want the message id %v", d.Header.Get("webhook-id"), payload["messageId"])
		}
		other, _ := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("another secret of 32 bytes......")))
		if err := other.Verify(d.Body, d.Header); err == nil {
			t.Fatal("signature verifies with another secret")
		}
	})
	t.Run("the reply is visible as sent", func(t *testing.T) {
		replyID := payload["messageId"].(string)
		waitFor(t, 5*time.Second, "status sent", func() bool {
			return do(t, "GET", srv.URL+"/v1/messages/"+replyID, key, nil).JSON(t)["status"] == "sent"
		})
		m := do(t, "GET", srv.URL+"/v1/messages/"+replyID, key, nil).JSON(t)
		if m["direction"] != "outgoing" || m["attempts"] != 1.0 || m["error"] != nil || m["sentAt"] == nil {
			t.Fatalf("reply: %v", m)
		}
		conv := do(t, "GET", srv.URL+"/v1/contacts/"+in["contactId"].(string)+"/messages", key, nil).JSON(t)["data"].([]any)
		if len(conv) != 2 || conv[0].(map[string]any)["id"] != incomingID || conv[1].(map[string]any)["id"] != replyID {
			t.Fatalf("conversation: %v", conv)
		}
	})
}

func TestRepeatedMessageSidIsProcessedOnce(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)

	const n = 100
	var wg sync.WaitGroup
	ids := make([]string, n)
	firsts := make([]bool, n)
	var unavailable atomic.Int32
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := incoming(t, srv, key, "same-sid", "visitor-1", "hi there")
			// A 503 (stored, not queued: a machine too loaded to queue the reply in time) asks the
			// sender to retry with the same id, as an integration would. Its retry is a duplicate.
			for try := 1; r.Status == http.StatusServiceUnavailable && try < 5; try++ {
				unavailable.Add(1)
				t.Logf("503, retrying: %s", r.Body)
				r = incoming(t, srv, key, "same-sid", "visitor-1", "hi there")
			}
			if r.Status != http.StatusOK {
				t.Errorf("status %d: %s", r.Status, r.Body)
				return
			}
			body := r.JSON(t)
			ids[i], _ = body["messageId"].(string)
			firsts[i] = body["duplicate"] == nil
		}(i)
	}
	wg.Wait()
	first := 0
	for i := range ids {
		if ids[i] == "" || ids[i] != ids[0] {
			t.Fatalf("response %d has messageId %q, response 0 %q", i, ids[i], ids[0])
		}
		if firsts[i] {
			first++
		}
	}
	// One request stored the message and says so, unless its answer was a 503 (then its retry, and
	// every other request, is a duplicate).
	if first > 1 || first == 0 && unavailable.Load() == 0 {
		t.Fatalf("%d responses were not marked duplicate, want 1", first)
	}
	accountID := mustAccountID(t, key)
	count, err := env.Store.DB().NewSelect().TableExpr("messages").Where("account_id = ? AND external_id = ?", accountID, "same-sid").Count(context.Background())
	if err != nil || count != 1 {
		t.Fatalf("%d messages stored (err %v)", count, err)
	}
	waitFor(t, 10*time.Second, "one reply", func() bool { return len(hook.deliveries()) >= 1 })
	waitDrained(t, accountID, retryHorizon) // a second reply, if one were coming, would still be in a task
	if got := len(hook.deliveries()); got != 1 {
		t.Fatalf("%d replies delivered, want 1", got)
	}
	t.Run("a sid the fast path does not know is answered by the database", func(t *testing.T) {
		// The Redis key that remembers a sid is named by the API key (api/checks.go, dedupeKey): a
		// rotated key finds none, as an api finds none during the deploy that renamed those keys. The
		// database's unique index answers, the same as the first time, and queues no second reply.
		rotated := do(t, "POST", srv.URL+"/v1/api_key", key, nil)
		expect(t, rotated, http.StatusCreated, "")
		newKey, _ := rotated.JSON(t)["apiKey"].(string)
		r := incoming(t, srv, newKey, "same-sid", "visitor-1", "hi there")
		expect(t, r, http.StatusOK, "")
		if body := r.JSON(t); body["messageId"] != ids[0] || body["duplicate"] != true {
			t.Fatalf("the sid again with the rotated key: %s, want messageId %s and duplicate", r.Body, ids[0])
		}
		waitDrained(t, mustAccountID(t, newKey), retryHorizon)
		if got := len(hook.deliveries()); got != 1 {
			t.Fatalf("%d replies delivered, want 1", got)
		}
	})
	t.Run("de-duplication is per account", func(t *testing.T) {
		otherKey, _ := messagingAccount(t, srv, hook)
		r := incoming(t, srv, otherKey, "same-sid", "visitor-1", "hi there")
		expect(t, r, http.StatusOK, "")
		if r.JSON(t)["messageId"] == ids[0] || r.JSON(t)["duplicate"] != nil {
			t.Fatalf("another account's message was taken for a duplicate: %s", r.Body)
		}
	})
}

func TestFromIDMapsToOneContact(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	_, key := newAccount(t)
	contactOf := func(r response) string {
		t.Helper()
		expect(t, r, http.StatusOK, "")
		m := do(t, "GET", srv.URL+"/v1/messages/"+r.JSON(t)["messageId"].(string), key, nil).JSON(t)
		return m["contactId"].(string)
	}
	a1 := contactOf(incoming(t, srv, key, "m1", "alice", "hi"))
	a2 := contactOf(incoming(t, srv, key, "m2", "alice", "again"))
	b := contactOf(incoming(t, srv, key, "m3", "bob", "hello"))
	if a1 != a2 || a1 == b {
		t.Fatalf("alice -> %s and %s, bob -> %s", a1, a2, b)
	}

	t.Run("concurrent first messages of one sender make one contact", func(t *testing.T) {
		var wg sync.WaitGroup
		contacts := make([]string, 20)
		for i := range contacts {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				// A 503 (stored, not queued: the machine too loaded to queue the reply in time) asks
				// the sender to retry with the same id, as an integration would.
				r := incoming(t, srv, key, fmt.Sprint("race-", i), "carol", "hi")
				for try := 1; r.Status == http.StatusServiceUnavailable && try < 5; try++ {
					t.Logf("message %d: 503, retrying: %s", i, r.Body)
					r = incoming(t, srv, key, fmt.Sprint("race-", i), "carol", "hi")
				}
				if r.Status != http.StatusOK {
					t.Errorf("status %d: %s", r.Status, r.Body)
					return
				}
				m := do(t, "GET", srv.URL+"/v1/messages/"+r.JSON(t)["messageId"].(string), key, nil).JSON(t)
				contacts[i], _ = m["contactId"].(string)
			}(i)
		}
		wg.Wait()
		for i := range contacts {
			if contacts[i] == "" || contacts[i] != contacts[0] {
				t.Fatalf("message %d went to contact %q, message 0 to %q", i, contacts[i], contacts[0])
			}
		}
		n, err := env.Store.DB().NewSelect().TableExpr("contact_identities").Where("account_id = ? AND external_id = ?", mustAccountID(t, key), "carol").Count(context.Background())
		if err != nil || n != 1 {
			t.Fatalf("%d identities (err %v)", n, err)
		}
	})
	t.Run("first name and email are used for a new contact", func(t *testing.T) {
		r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, map[string]any{
			"customData": map[string]any{"messageSid": "m4", "fromId": "dave", "toId": "biz", "body": "hi", "firstName": "Dave", "lastName": "Doe", "email": "Dave@Example.com"},
		})
		c := do(t, "GET", srv.URL+"/v1/contacts/"+contactOf(r), key, nil).JSON(t)
		if c["firstName"] != "Dave" || c["lastName"] != "Doe" || c["email"] != "dave@example.com" {
			t.Fatalf("contact: %v", c)
		}
	})
}

func TestReactionIsStoredWithoutAReply(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, map[string]any{
		"messageType": "reaction",
		"customData":  map[string]any{"messageSid": "react-1", "fromId": "erin", "toId": "biz", "body": "👍"},
	})
	expect(t, r, http.StatusOK, "")
	m := do(t, "GET", srv.URL+"/v1/messages/"+r.JSON(t)["messageId"].(string), key, nil).JSON(t)
	if m["messageType"] != "reaction" || m["body"] != "👍" {
		t.Fatalf("reaction: %v", m)
	}
	// A text message afterwards is answered, and only it.
	expect(t, incoming(t, srv, key, "text-1", "erin", "hello"), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the reply to the text", func() bool { return len(hook.deliveries()) == 1 })
	waitDrained(t, mustAccountID(t, key), retryHorizon) // a reply to the reaction, if one were coming, would still be in a task
	if n := len(hook.deliveries()); n != 1 {
		t.Fatalf("%d replies, want 1 (none for the reaction)", n)
	}
}

func TestSendCustomChannelMessage(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	url := srv.URL + "/v1/send_custom_channel_message"

	r := do(t, "POST", url, key, map[string]any{"customData": map[string]any{
		"fromId": "user-77", "customChannel": "support-chat", "body": "Your order shipped", "firstName": "Gus", "email": "gus@example.com",
	}})
	expect(t, r, http.StatusCreated, "")
	body := r.JSON(t)
	if body["success"] != true || body["messageId"] == nil || body["contactId"] == nil || body["message"] == "" {
		t.Fatalf("unexpected response: %s", r.Body)
	}
	waitFor(t, 10*time.Second, "the message at the sink", func() bool { return len(hook.deliveries()) == 1 })
	var payload map[string]any
	_ = json.Unmarshal(hook.deliveries()[0].Body, &payload)
	if payload["toId"] != "user-77" || payload["channel"] != "support-chat" || payload["body"] != "Your order shipped" ||
		payload["messageId"] != body["messageId"] || payload["contactId"] != body["contactId"] {
		t.Fatalf("payload: %v", payload)
	}
	c := do(t, "GET", srv.URL+"/v1/contacts/"+body["contactId"].(string), key, nil).JSON(t)
	if c["firstName"] != "Gus" || c["email"] != "gus@example.com" {
		t.Fatalf("contact: %v", c)
	}

	t.Run("a later message from the same fromId is the same contact", func(t *testing.T) {
		in := incoming(t, srv, key, "reply-1", "user-77", "thanks!")
		m := do(t, "GET", srv.URL+"/v1/messages/"+in.JSON(t)["messageId"].(string), key, nil).JSON(t)
		if m["contactId"] != body["contactId"] {
			t.Fatalf("contact %v, want %v", m["contactId"], body["contactId"])
		}
	})
	for name, cd := range map[string]map[string]any{
		"missing fromId":        {"customChannel": "c", "body": "b"},
		"missing customChannel": {"fromId": "f", "body": "b"},
		"missing body":          {"fromId": "f", "customChannel": "c"},
		"whitespace body":       {"fromId": "f", "customChannel": "c", "body": "  "},
		"bad email":             {"fromId": "f", "customChannel": "c", "body": "b", "email": "nope"},
		"body not a string":     {"fromId": "f", "customChannel": "c", "body": 5},
	} {
		t.Run("rejects "+name, func(t *testing.T) {
			expect(t, do(t, "POST", url, key, map[string]any{"customData": cd}), 400, models.CodeValidation)
		})
	}
}

func TestMediaLinksAreCheckedByTheWorker(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	files := newSink(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pixel.png" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(pngPixel)
	})
	_, key := newAccount(t)
	cases := []struct{ name, path, declared, want string }{
		{"matching type", "/pixel.png", "image/png", "ok"},
		{"declared type differs from the file", "/pixel.png", "application/pdf", "type mismatch"},
		{"missing file", "/gone.jpg", "image/jpeg", "unreachable: HTTP 404"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, map[string]any{"customData": map[string]any{
				"messageSid": fmt.Sprint("media-", i), "fromId": "olga", "toId": "biz", "body": "see attached",
				"mediaUrl": files.URL + tc.path, "mediaContentType": tc.declared,
			}})
			expect(t, r, http.StatusOK, "")
			id := r.JSON(t)["messageId"].(string)
			var got string
			waitFor(t, 10*time.Second, "the media check", func() bool {
				got, _ = do(t, "GET", srv.URL+"/v1/messages/"+id, key, nil).JSON(t)["mediaCheck"].(string)
				return got != "" && got != "pending"
			})
			if !strings.HasPrefix(got, tc.want) {
				t.Fatalf("mediaCheck %q, want %q...", got, tc.want)
			}
		})
	}
}

// TestSweepChecksMediaThatWasNeverQueued: a media link stored without its check queued (Redis failed
// right after the commit, or lost the task) is checked all the same: the worker's sweep queues it.
func TestSweepChecksMediaThatWasNeverQueued(t *testing.T) {
	ctx := context.Background()
	files := newSink(t, func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(pngPixel) })
	acc, _ := newAccount(t)
	// Stored as the api stores it, but never enqueued.
	in := models.IncomingInput{ExternalID: "lost-media-1", FromID: "nora", ToID: "biz", Body: "see attached",
		MediaURL: files.URL + "/pixel.png", MediaContentType: "image/png"}
	if err := in.Validate(1 << 20); err != nil {
		t.Fatal(err)
	}
	m, _, err := env.Store.IngestIncoming(ctx, acc.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaCheck == nil || *m.MediaCheck != models.MediaCheckPending {
		t.Fatalf("media check %v, want pending", m.MediaCheck)
	}
	startWorker(t) // SWEEP_INTERVAL=1s: work older than 2 s is re-enqueued
	var got *string
	waitFor(t, 20*time.Second, "the sweep to check the media link", func() bool {
		stored, err := env.Store.MessageByID(ctx, acc.ID, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		got = stored.MediaCheck
		return got != nil && *got != models.MediaCheckPending
	})
	if *got != "ok" {
		t.Fatalf("mediaCheck %q, want ok", *got)
	}
}

// The offline bot answers the message its task is for, even when the contact wrote more than a
// conversation window's worth of messages after it before the worker got to it (a backlog): each reply
// quotes its own message.
func TestOfflineBotAnswersEachMessageOfABacklog(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	const n = 25 // more than the 20 messages the bot's conversation window holds
	for i := range n {
		expect(t, incoming(t, srv, key, fmt.Sprintf("backlog-%d", i), "visitor-backlog", fmt.Sprintf("question number %d", i)), http.StatusOK, "")
	}
	startWorker(t)
	waitFor(t, 20*time.Second, "a reply to every message", func() bool { return len(hook.deliveries()) >= n })
	quoted := map[string]int{}
	for _, d := range hook.deliveries() {
		var payload struct{ Body string }
		if err := json.Unmarshal(d.Body, &payload); err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(payload.Body, `Thanks for your message: "`)
		quote, _, closed := strings.Cut(rest, `"`)
		if !ok || !closed {
			t.Fatalf("a reply without the quote of its message: %q", payload.Body)
		}
		quoted[quote]++
	}
	for i := range n {
		if q := fmt.Sprintf("question number %d", i); quoted[q] != 1 {
			t.Errorf("%q quoted by %d replies, want 1 (all: %v)", q, quoted[q], quoted)
		}
	}
}
