package api_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// whatsAppGraph is a real HTTP server that plays the WhatsApp Cloud API: sends (POST
// /v21.0/{number}/messages) and media (GET /v21.0/{media id} answers a download URL on the same server,
// whose GET answers the file). Media calls need the access token "wa-token"; every call is recorded.
type whatsAppGraph struct {
	*sink
	mu    sync.Mutex
	files map[string][]byte // by media id
	// downloadFails answers the download of these media ids with 500.
	downloadFails map[string]bool
}

func newWhatsAppGraph(t *testing.T) *whatsAppGraph {
	g := &whatsAppGraph{files: map[string][]byte{}, downloadFails: map[string]bool{}}
	g.sink = newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			_, _ = fmt.Fprintf(w, `{"messaging_product":"whatsapp","messages":[{"id":"wamid.out%d"}]}`, n)
			return
		}
		if r.Header.Get("Authorization") != "Bearer wa-token" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Invalid OAuth access token.","type":"OAuthException","code":190}}`))
			return
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if id, ok := strings.CutPrefix(r.URL.Path, "/download/"); ok {
			if g.downloadFails[id] {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write(g.files[id])
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/v21.0/")
		if _, ok := g.files[id]; !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = fmt.Fprintf(w, `{"error":{"message":"Unsupported get request. Object with ID '%s' does not exist","type":"GraphMethodException","code":100}}`, id)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"messaging_product": "whatsapp", "id": id, "url": g.URL + "/download/" + id, "file_size": len(g.files[id]),
		})
	})
	return g
}

func (g *whatsAppGraph) serve(mediaID string, file []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.files[mediaID] = file
}

// whatsAppNumber connects a new account's WhatsApp channel with a phone number id of its own and the
// app secret, and returns the account, its key and the number.
func whatsAppNumber(t *testing.T, srv *server, appSecret string) (*models.Account, string, string) {
	t.Helper()
	acc, key := newAccount(t)
	number := fmt.Sprint(time.Now().UnixNano())
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/channels/whatsapp", key, map[string]any{
		"phoneNumberId": number, "accessToken": "wa-token", "appSecret": appSecret,
	}), http.StatusOK, "")
	return acc, key, number
}

// waNotification is a WhatsApp webhook notification of one business account with changes.
func waNotification(changes ...map[string]any) []byte {
	raw, _ := json.Marshal(map[string]any{
		"object": "whatsapp_business_account",
		"entry":  []any{map[string]any{"id": "102290129340398", "changes": changes}},
	})
	return raw
}

// waMessages is a "messages" change of the phone number id number holding messages from +1 415 555 9301.
func waMessages(number string, messages ...map[string]any) map[string]any {
	return map[string]any{"field": "messages", "value": map[string]any{
		"messaging_product": "whatsapp",
		"metadata":          map[string]any{"display_phone_number": "15550001234", "phone_number_id": number},
		"contacts":          []any{map[string]any{"wa_id": "14155559301", "profile": map[string]any{"name": "Vera"}}},
		"messages":          messages,
	}}
}

func waText(id, text string) map[string]any {
	return map[string]any{"from": "14155559301", "id": id, "timestamp": "1732350000", "type": "text", "text": map[string]any{"body": text}}
}

// waStatuses is a "messages" change of number that only reports the delivery of our own message.
func waStatuses(number string) map[string]any {
	return map[string]any{"field": "messages", "value": map[string]any{
		"messaging_product": "whatsapp",
		"metadata":          map[string]any{"display_phone_number": "15550001234", "phone_number_id": number},
		"statuses": []any{map[string]any{
			"id": "wamid.out1", "status": "delivered", "timestamp": "1732350001", "recipient_id": "14155559301",
		}},
	}}
}

var (
	waTemplateStatus = map[string]any{"field": "message_template_status_update", "value": map[string]any{
		"event": "APPROVED", "message_template_id": 594425479261596, "message_template_name": "welcome_lead",
		"message_template_language": "en_US", "reason": "NONE",
	}}
	waAccountUpdate = map[string]any{"field": "account_update", "value": map[string]any{
		"phone_number": "15550001234", "event": "VERIFIED_ACCOUNT",
	}}
)

// postWhatsApp posts a notification to the WhatsApp webhook, signed with secret ("" unsigned).
func postWhatsApp(t *testing.T, srv *server, body []byte, secret string) response {
	t.Helper()
	var headers []string
	if secret != "" {
		headers = append(headers, "X-Hub-Signature-256: "+metaSign(secret, body))
	}
	return do(t, "POST", srv.URL+"/v1/channels/whatsapp/inbound", "", body, headers...)
}

// whatsAppStored is the incoming WhatsApp message with the external id, nil when none is stored.
func whatsAppStored(t *testing.T, externalID string) *models.Message {
	t.Helper()
	var msgs []models.Message
	err := env.Store.DB().NewSelect().Model(&msgs).Where("external_id = ? AND channel = ?", externalID, models.ChannelWhatsApp).Scan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) > 1 {
		t.Fatalf("%d messages with the external id %s", len(msgs), externalID)
	}
	if len(msgs) == 0 {
		return nil
	}
	return &msgs[0]
}

// TestWhatsAppInboundAcknowledgesWhatItIgnores: Meta's notifications that are not messages (template
// status, account updates, delivery statuses) or that name a phone number id no account has are
// answered 200 and store nothing; a message batched with them is stored; only a bad signature is 403.
func TestWhatsAppInboundAcknowledgesWhatItIgnores(t *testing.T) {
	srv := startServer(t)
	acc, _, number := whatsAppNumber(t, srv, "secret-a")
	unknown := number + "9" // configured by no account
	id := func(name string) string { return "wamid." + number + "." + name }

	cases := []struct {
		name      string
		changes   []map[string]any
		secret    string
		status    int
		stored    []string // external ids stored for the account
		notStored []string
	}{
		{name: "template status update", changes: []map[string]any{waTemplateStatus}, secret: "secret-a", status: 200},
		{name: "account update", changes: []map[string]any{waAccountUpdate}, secret: "secret-a", status: 200},
		{name: "delivery statuses of a configured number", changes: []map[string]any{waStatuses(number)}, secret: "secret-a", status: 200},
		{name: "messages for a phone number id no account has", secret: "secret-a", status: 200,
			changes: []map[string]any{waMessages(unknown, waText(id("u1"), "hello?"))}, notStored: []string{id("u1")}},
		{name: "a message batched with changes that are ignored", secret: "secret-a", status: 200,
			changes: []map[string]any{
				waMessages(unknown, waText(id("u2"), "not ours")), waTemplateStatus, waStatuses(number),
				waMessages(number, waText(id("a1"), "How much is it?")), waAccountUpdate,
			},
			stored: []string{id("a1")}, notStored: []string{id("u2")}},
		{name: "a bad signature", secret: "not-the-app-secret", status: 403,
			changes: []map[string]any{waMessages(number, waText(id("a2"), "forged"))}, notStored: []string{id("a2")}},
		{name: "a bad signature on a batch with ignored changes", secret: "not-the-app-secret", status: 403,
			changes: []map[string]any{waTemplateStatus, waMessages(number, waText(id("a3"), "forged"))}, notStored: []string{id("a3")}},
		{name: "an unsigned notification", status: 403, changes: []map[string]any{waTemplateStatus}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := postWhatsApp(t, srv, waNotification(tc.changes...), tc.secret)
			if tc.status == 403 {
				expect(t, r, 403, models.CodeForbidden)
			} else {
				expect(t, r, tc.status, "")
			}
			for _, ext := range tc.stored {
				m := whatsAppStored(t, ext)
				if m == nil || m.AccountID != acc.ID || m.Body != "How much is it?" || m.FromID != "+14155559301" {
					t.Fatalf("message %s stored as %+v", ext, m)
				}
			}
			for _, ext := range tc.notStored {
				if m := whatsAppStored(t, ext); m != nil {
					t.Fatalf("message %s stored: %+v", ext, m)
				}
			}
		})
	}
}

// TestWhatsAppIgnoredChangesAreLogged: what a notification holds that the service ignores is logged at
// info, with the phone number ids no account has.
func TestWhatsAppIgnoredChangesAreLogged(t *testing.T) {
	out := &logBuffer{}
	srv := startServerWith(t, slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo})))
	_, _, number := whatsAppNumber(t, srv, "secret-a")
	unknown := number + "9"
	body := waNotification(waTemplateStatus, waStatuses(number), waMessages(unknown, waText("wamid."+unknown, "hi")))
	expect(t, postWhatsApp(t, srv, body, "secret-a"), 200, "")
	lines := out.lines(t)
	changes := find(lines, map[string]string{"level": "INFO", "msg": "whatsapp notification: changes without messages acknowledged and ignored"})
	numbers := find(lines, map[string]string{"level": "INFO", "msg": "whatsapp notification for phone number ids no account has configured: acknowledged and ignored"})
	if fmt.Sprint(changes["changes"]) != "[message_template_status_update statuses]" || fmt.Sprint(numbers["phone_number_ids"]) != "["+unknown+"]" {
		t.Fatalf("ignored changes not logged at info:\n%s", out.text())
	}
}

// TestWhatsAppBatchForSeveralNumbersIsJudgedPerNumber: a notification naming the numbers of two
// accounts stores the messages of the number whose account's app secret signed it, and not the other
// account's: one account's secret never vouches for another's messages.
func TestWhatsAppBatchForSeveralNumbersIsJudgedPerNumber(t *testing.T) {
	srv := startServer(t)
	accA, _, numberA := whatsAppNumber(t, srv, "secret-a")
	accB, _, numberB := whatsAppNumber(t, srv, "secret-b")

	batch := func(round string) (body []byte, idA, idB string) {
		idA, idB = "wamid."+numberA+"."+round, "wamid."+numberB+"."+round
		return waNotification(waMessages(numberB, waText(idB, "for B")), waMessages(numberA, waText(idA, "for A"))), idA, idB
	}
	t.Run("signed by A's app", func(t *testing.T) {
		body, idA, idB := batch("1")
		expect(t, postWhatsApp(t, srv, body, "secret-a"), 200, "")
		if m := whatsAppStored(t, idA); m == nil || m.AccountID != accA.ID {
			t.Fatalf("A's message: %+v", m)
		}
		if m := whatsAppStored(t, idB); m != nil {
			t.Fatalf("B's message stored on A's signature: %+v", m)
		}
	})
	t.Run("signed by B's app", func(t *testing.T) {
		body, idA, idB := batch("2")
		expect(t, postWhatsApp(t, srv, body, "secret-b"), 200, "")
		if m := whatsAppStored(t, idB); m == nil || m.AccountID != accB.ID {
			t.Fatalf("B's message: %+v", m)
		}
		if m := whatsAppStored(t, idA); m != nil {
			t.Fatalf("A's message stored on B's signature: %+v", m)
		}
	})
	t.Run("signed by neither", func(t *testing.T) {
		body, idA, idB := batch("3")
		expect(t, postWhatsApp(t, srv, body, "secret-c"), 403, models.CodeForbidden)
		if whatsAppStored(t, idA) != nil || whatsAppStored(t, idB) != nil {
			t.Fatal("a message was stored from a notification neither app signed")
		}
	})
}

// Media files as the Cloud API serves them: the first bytes of real files of each type.
var (
	oggOpus = append([]byte("OggS\x00\x02"+strings.Repeat("\x00", 22)+"OpusHead\x01\x02\x38\x01\x80\xbb\x00\x00\x00\x00\x00"), make([]byte, 32)...)
	mp4File = append([]byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom"), make([]byte, 32)...)
	pdfFile = []byte("%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")
)

// TestWhatsAppMediaMessagesAreStoredAsMedia: an image, audio, video or document message is stored with
// its caption as the body and the Graph API's media endpoint as its link; the worker fetches the file
// with the account's token, checks it as embedded media are checked (type sniffed, size at most
// MAX_MEDIA_BYTES) and stores it with the message. A file that cannot be fetched or fails the check
// leaves the message and its link, with the problem in mediaCheck, as a failing custom-channel link does.
func TestWhatsAppMediaMessagesAreStoredAsMedia(t *testing.T) {
	graph := newWhatsAppGraph(t)
	srv := startServer(t, "WHATSAPP_API_BASE_URL="+graph.URL, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t, "WHATSAPP_API_BASE_URL="+graph.URL, "MAX_MEDIA_BYTES=1024")
	_, key, number := whatsAppNumber(t, srv, "secret-a")
	files := newSink(t, func(_ int, w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })

	cases := []struct {
		name, kind string
		media      map[string]any
		file       []byte // served under the media id; nil: Graph knows no such media
		failing    bool   // the download answers 500
		body       string
		mediaType  string
		check      string // "ok" or the start of the problem
	}{
		{name: "image with a caption", kind: "image", file: pngPixel, body: "Our storefront", mediaType: "image/png", check: "ok",
			media: map[string]any{"mime_type": "image/png", "sha256": "x", "caption": "Our storefront"}},
		{name: "voice note", kind: "audio", file: oggOpus, body: "(audio)", mediaType: "audio/ogg", check: "ok",
			media: map[string]any{"mime_type": "audio/ogg; codecs=opus", "voice": true}},
		{name: "video", kind: "video", file: mp4File, body: "the demo", mediaType: "video/mp4", check: "ok",
			media: map[string]any{"mime_type": "video/mp4", "caption": "the demo"}},
		{name: "document", kind: "document", file: pdfFile, body: "(document) quote.pdf", mediaType: "application/pdf", check: "ok",
			media: map[string]any{"mime_type": "application/pdf", "filename": "quote.pdf"}},
		{name: "file of another type than WhatsApp named", kind: "image", file: pdfFile, body: "(image)", mediaType: "image/jpeg",
			check: "type mismatch: declared image/jpeg, the file is application/pdf", media: map[string]any{"mime_type": "image/jpeg"}},
		{name: "file larger than MAX_MEDIA_BYTES", kind: "image", file: append(append([]byte{}, pngPixel...), make([]byte, 1024)...),
			body: "big", mediaType: "image/png", check: "too large", media: map[string]any{"mime_type": "image/png", "caption": "big"}},
		{name: "media Graph does not know", kind: "image", body: "gone", mediaType: "image/png",
			check: "unreachable: HTTP 404 (whatsapp 100: Unsupported get request.", media: map[string]any{"mime_type": "image/png", "caption": "gone"}},
		{name: "download failing", kind: "document", file: pdfFile, failing: true, body: "(document)", mediaType: "application/pdf",
			check: "unreachable: HTTP 500", media: map[string]any{"mime_type": "application/pdf"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mediaID := fmt.Sprint(number, "0", i)
			if tc.file != nil {
				graph.serve(mediaID, tc.file)
			}
			graph.mu.Lock()
			graph.downloadFails[mediaID] = tc.failing
			graph.mu.Unlock()
			tc.media["id"] = mediaID
			ext := fmt.Sprint("wamid.", mediaID)
			msg := map[string]any{"from": "14155559301", "id": ext, "timestamp": "1732350000", "type": tc.kind, tc.kind: tc.media}
			expect(t, postWhatsApp(t, srv, waNotification(waMessages(number, msg)), "secret-a"), 200, "")
			stored := whatsAppStored(t, ext)
			if stored == nil {
				t.Fatal("the media message was not stored")
			}
			waitForMediaCheck(t, stored.ID)
			got := do(t, "GET", srv.URL+"/v1/messages/"+stored.ID, key, nil).JSON(t)
			if got["body"] != tc.body || got["mediaContentType"] != tc.mediaType {
				t.Fatalf("body %q, type %v; want %q, %s", got["body"], got["mediaContentType"], tc.body, tc.mediaType)
			}
			check, _ := got["mediaCheck"].(string)
			if !strings.HasPrefix(check, tc.check) {
				t.Fatalf("mediaCheck %q, want %q...", check, tc.check)
			}
			link := graph.URL + "/v21.0/" + mediaID
			want := link // a file that failed keeps its link, as a custom-channel link does
			if tc.check == "ok" {
				want = "data:" + tc.mediaType + ";base64," + base64.StdEncoding.EncodeToString(tc.file)
			}
			if got["mediaUrl"] != want {
				t.Fatalf("mediaUrl %.120v, want %.120s", got["mediaUrl"], want)
			}
			if tc.file != nil {
				var fetched bool
				for _, d := range graph.deliveries() {
					fetched = fetched || (d.Path == "/download/"+mediaID && d.Header.Get("Authorization") == "Bearer wa-token")
				}
				if !fetched {
					t.Fatal("the file was not downloaded with the account's access token")
				}
			}
		})
	}

	t.Run("a failing fetch reads like a failing custom-channel link", func(t *testing.T) {
		r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, map[string]any{"customData": map[string]any{
			"messageSid": "custom-" + number, "fromId": "olga", "toId": "biz", "body": "see attached",
			"mediaUrl": files.URL + "/gone.png", "mediaContentType": "image/png",
		}})
		expect(t, r, http.StatusOK, "")
		if check := waitForMediaCheck(t, r.JSON(t)["messageId"].(string)); check != "unreachable: HTTP 404" {
			t.Fatalf("custom link: mediaCheck %q", check)
		}
	})
}

// waitForMediaCheck waits until the worker has checked the message's media and returns the result. It
// reads the database, so that polling does not spend the account's request rate.
func waitForMediaCheck(t *testing.T, messageID string) string {
	t.Helper()
	var check *string
	waitFor(t, 10*time.Second, "the media check", func() bool {
		m, err := env.Store.Message(t.Context(), messageID)
		if err != nil {
			t.Fatal(err)
		}
		check = m.MediaCheck
		return check != nil && *check != models.MediaCheckPending
	})
	return *check
}
