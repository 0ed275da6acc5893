package api_test

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

// twilioSign signs a webhook the way Twilio does: HMAC-SHA1 over the URL and the sorted form fields.
func twilioSign(token, fullURL string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	data := fullURL
	for _, k := range keys {
		data += k + form.Get(k)
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(data))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func metaSign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestSMSCampaignAndInboundReplies(t *testing.T) {
	var twilio *sink
	twilio = newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"sid":"SM` + strings.Repeat("0", 31) + `"}`))
	})
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t, "SMS_API_BASE_URL="+twilio.URL)
	_, key := newAccount(t)

	r := do(t, "PUT", srv.URL+"/v1/settings/channels/sms", key, map[string]any{"accountSid": "AC123", "authToken": "tok-secret", "from": "+1 415 555 9000"})
	expect(t, r, http.StatusOK, "")
	if strings.Contains(string(r.Body), "tok-secret") || r.JSON(t)["from"] != "+14155559000" {
		t.Fatalf("settings response: %s", r.Body)
	}
	for name, body := range map[string]map[string]any{
		"missing token": {"accountSid": "AC1", "from": "+14155559000"},
		"bad from":      {"accountSid": "AC1", "authToken": "x", "from": "555"},
	} {
		t.Run("rejects "+name, func(t *testing.T) {
			if r := do(t, "PUT", srv.URL+"/v1/settings/channels/sms", key, body); r.Status != 400 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
		})
	}

	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"channel": "sms"})
	contact := namedContact(t, srv, key, "+14155559101", "Rita")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": contact}), http.StatusCreated, "")
	waitFor(t, 10*time.Second, "the SMS opening at the provider", func() bool { return len(twilio.deliveries()) == 1 })
	sent := twilio.deliveries()[0]
	form, _ := url.ParseQuery(string(sent.Body))
	user, pass, _ := (&http.Request{Header: sent.Header}).BasicAuth()
	if form.Get("To") != "+14155559101" || form.Get("From") != "+14155559000" || form.Get("Body") != "Hi Rita, thanks for signing up!" || user != "AC123" || pass != "tok-secret" {
		t.Fatalf("SMS request: %v auth %s:%s", form, user, pass)
	}
	opening := campaignMessages(t, campaignID)[0]
	waitFor(t, 5*time.Second, "the opening to be sent", func() bool { return messageField(t, srv, key, opening.ID, "status") == "sent" })
	if ch := messageField(t, srv, key, opening.ID, "channel"); ch != "sms" {
		t.Fatalf("channel %v", ch)
	}

	inboundURL := srv.URL + "/v1/channels/sms/inbound"
	inbound := url.Values{"MessageSid": {"SMin1"}, "AccountSid": {"AC123"}, "From": {"+14155559101"}, "To": {"+14155559000"}, "Body": {"Yes, tell me more"}}
	post := func(form url.Values, signature string) response {
		return do(t, "POST", inboundURL, "", form.Encode(), "Content-Type: application/x-www-form-urlencoded", "X-Twilio-Signature: "+signature)
	}
	t.Run("a bad signature is refused", func(t *testing.T) {
		expect(t, post(inbound, twilioSign("wrong-token", inboundURL, inbound)), 403, "FORBIDDEN")
		expect(t, post(inbound, ""), 403, "FORBIDDEN")
	})
	for i := 0; i < 2; i++ { // the second is Twilio retrying: de-duplicated by MessageSid
		r := post(inbound, twilioSign("tok-secret", inboundURL, inbound))
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "<Response>") {
			t.Fatalf("inbound: %d %s", r.Status, r.Body)
		}
	}
	waitFor(t, 10*time.Second, "the bot's SMS reply", func() bool { return len(twilio.deliveries()) == 2 })
	reply, _ := url.ParseQuery(string(twilio.deliveries()[1].Body))
	if reply.Get("To") != "+14155559101" || !strings.Contains(reply.Get("Body"), "Rita") {
		t.Fatalf("reply: %v", reply)
	}
	// The reply is stored once the provider has answered, so it may show a moment after the call.
	var conv []any
	waitFor(t, 10*time.Second, "the reply stored", func() bool {
		conv = do(t, "GET", srv.URL+"/v1/contacts/"+contact+"/messages", key, nil).JSON(t)["data"].([]any)
		return len(conv) >= 3
	})
	if len(conv) != 3 {
		t.Fatalf("conversation has %d messages, want opening, inbound and reply: %v", len(conv), conv)
	}
}

func TestWhatsAppCampaignAndInboundReplies(t *testing.T) {
	meta := newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"messaging_product":"whatsapp","messages":[{"id":"wamid.X"}]}`))
	})
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t, "WHATSAPP_API_BASE_URL="+meta.URL)
	_, key := newAccount(t)
	r := do(t, "PUT", srv.URL+"/v1/settings/channels/whatsapp", key, map[string]any{
		"phoneNumberId": "1098765", "accessToken": "wa-token", "appSecret": "app-secret", "verifyToken": "verify-me",
	})
	expect(t, r, http.StatusOK, "")
	if strings.Contains(string(r.Body), "wa-token") || strings.Contains(string(r.Body), "app-secret") {
		t.Fatalf("secrets returned: %s", r.Body)
	}

	_, listID := liveCampaign(t, srv, key, map[string]any{"channel": "whatsapp", "whatsappTemplate": "welcome_lead"})
	contact := namedContact(t, srv, key, "+14155559201", "Wes")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": contact}), http.StatusCreated, "")
	waitFor(t, 10*time.Second, "the WhatsApp opening", func() bool { return len(meta.deliveries()) == 1 })
	first := meta.deliveries()[0]
	var tmpl map[string]any
	_ = json.Unmarshal(first.Body, &tmpl)
	if tmpl["type"] != "template" || tmpl["to"] != "14155559201" || first.Header.Get("Authorization") != "Bearer wa-token" ||
		!strings.Contains(string(first.Body), `"welcome_lead"`) || !strings.Contains(string(first.Body), `"Wes"`) {
		t.Fatalf("opening outside the 24-hour window should be the template: %s", first.Body)
	}

	hookURL := srv.URL + "/v1/channels/whatsapp/inbound"
	t.Run("subscription challenge", func(t *testing.T) {
		r := do(t, "GET", hookURL+"?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=12345", "", nil)
		if r.Status != 200 || string(r.Body) != "12345" {
			t.Fatalf("challenge: %d %s", r.Status, r.Body)
		}
		expect(t, do(t, "GET", hookURL+"?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1", "", nil), 403, "FORBIDDEN")
	})
	body := []byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"value":{"metadata":{"phone_number_id":"1098765"},` +
		`"contacts":[{"wa_id":"14155559201","profile":{"name":"Wes"}}],` +
		`"messages":[{"from":"14155559201","id":"wamid.in1","type":"text","text":{"body":"What does it cost?"}}]}}]}]}`)
	t.Run("a bad signature is refused", func(t *testing.T) {
		expect(t, do(t, "POST", hookURL, "", body, "X-Hub-Signature-256: "+metaSign("other", body)), 403, "FORBIDDEN")
	})
	expect(t, do(t, "POST", hookURL, "", body, "X-Hub-Signature-256: "+metaSign("app-secret", body)), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the bot's WhatsApp reply", func() bool { return len(meta.deliveries()) == 2 })
	var text map[string]any
	_ = json.Unmarshal(meta.deliveries()[1].Body, &text)
	if text["type"] != "text" || text["to"] != "14155559201" {
		t.Fatalf("a reply inside the window should be text: %s", meta.deliveries()[1].Body)
	}
	// The reply is stored once the provider has answered, so it may show a moment after the call.
	var conv []any
	waitFor(t, 10*time.Second, "the reply stored", func() bool {
		conv = do(t, "GET", srv.URL+"/v1/contacts/"+contact+"/messages", key, nil).JSON(t)["data"].([]any)
		return len(conv) >= 3
	})
	if len(conv) != 3 {
		t.Fatalf("the inbound WhatsApp message should join the contact's conversation: %v", conv)
	}
}
