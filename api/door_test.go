package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestOneWhatsAppWindowOnEveryPath walks every path a message takes out of the service for one rule,
// WhatsApp's 24-hour window, which counts only the contact's messages on WhatsApp: a lead who wrote on
// another channel a moment ago is still outside it there.
func TestOneWhatsAppWindowOnEveryPath(t *testing.T) {
	meta := newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"messaging_product":"whatsapp","messages":[{"id":"wamid.D"}]}`))
	})
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t, "WHATSAPP_API_BASE_URL="+meta.URL)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/channels/whatsapp", key, map[string]any{
		"phoneNumberId": "2098765", "accessToken": "wa-token", "appSecret": "app-secret", "verifyToken": "verify-me",
	}), http.StatusOK, "")

	const phone = "+14155559301"
	ana := namedContact(t, srv, key, phone, "Ana")
	// Ana writes on the live chat, from her phone number: she is a contact in a conversation, but has
	// never written on WhatsApp.
	expect(t, incoming(t, srv, key, "ana-chat-1", phone, "Hi, is anyone there?"), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the bot's live-chat reply", func() bool { return len(hook.deliveries()) == 1 })

	whatsApp := func(i int) map[string]any {
		t.Helper()
		var body map[string]any
		if err := json.Unmarshal(meta.deliveries()[i].Body, &body); err != nil {
			t.Fatal(err)
		}
		return body
	}

	t.Run("opening and follow-up: the approved template, not free text", func(t *testing.T) {
		campaignID, listID := liveCampaign(t, srv, key, map[string]any{
			"channel": "whatsapp", "whatsappTemplate": "welcome_lead", "followUpsEnabled": true, "followUpDelaysHours": []float64{0.0005},
		})
		expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": ana}), http.StatusCreated, "")
		waitFor(t, 20*time.Second, "the opening and the follow-up at WhatsApp", func() bool { return len(meta.deliveries()) == 2 })
		for i, what := range []string{"opening", "follow-up"} {
			if b := whatsApp(i); b["type"] != "template" || !strings.Contains(string(meta.deliveries()[i].Body), `"welcome_lead"`) {
				t.Fatalf("the %s went as %v, want the template: %s", what, b["type"], meta.deliveries()[i].Body)
			}
		}
		if msgs := campaignMessages(t, campaignID); len(msgs) != 2 {
			t.Fatalf("campaign messages: %d, want opening and follow-up", len(msgs))
		}
	})

	t.Run("opening without a template: failed with the reason, no call", func(t *testing.T) {
		campaignID, listID := liveCampaign(t, srv, key, map[string]any{"channel": "whatsapp"})
		expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": ana}), http.StatusCreated, "")
		var detail []string
		waitFor(t, 10*time.Second, "the send to fail", func() bool {
			detail = nil
			err := env.Store.DB().NewSelect().Table("campaign_sends").Column("detail").
				Where("campaign_id = ? AND status = 'failed'", campaignID).Scan(t.Context(), &detail)
			return err == nil && len(detail) == 1
		})
		if !strings.HasPrefix(detail[0], "OUTSIDE_MESSAGING_WINDOW: ") || !strings.Contains(detail[0], "whatsappTemplate") {
			t.Fatalf("reason: %q", detail[0])
		}
		if n := len(meta.deliveries()); n != 2 {
			t.Fatalf("WhatsApp was called %d times, want still 2", n)
		}
	})

	teamReply := func(t *testing.T, body string) map[string]any {
		t.Helper()
		r := do(t, "POST", srv.URL+"/v1/contacts/"+ana+"/messages", key, map[string]any{"body": body, "channel": "whatsapp"})
		expect(t, r, http.StatusCreated, "")
		m := r.JSON(t)
		if m["channel"] != "whatsapp" {
			t.Fatalf("a team reply on WhatsApp went out on %v", m["channel"])
		}
		return waitForMessage(t, srv, key, m["id"].(string), 10*time.Second, "the team reply to settle", isFinal)
	}

	t.Run("team reply outside the window: failed with the reason, no call", func(t *testing.T) {
		m := teamReply(t, "Following up from the team")
		if m["status"] != "failed" || !strings.HasPrefix(errorText(m["error"]), "OUTSIDE_MESSAGING_WINDOW: ") {
			t.Fatalf("team reply: %v", m)
		}
		if n := len(meta.deliveries()); n != 2 {
			t.Fatalf("WhatsApp was called %d times, want still 2", n)
		}
	})

	t.Run("send_custom_channel_message: a custom channel has no provider window", func(t *testing.T) {
		before := len(hook.deliveries())
		id := sendCustom(t, srv, key, phone, "whatsapp", "Sent by the integration")
		m := waitForMessage(t, srv, key, id, 10*time.Second, "the custom send to settle", isFinal)
		if m["status"] != "sent" || len(hook.deliveries()) != before+1 {
			t.Fatalf("custom send: %v", m)
		}
	})

	// Ana now writes on WhatsApp: inside the window, free text goes.
	body := []byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"value":{"metadata":{"phone_number_id":"2098765"},` +
		`"contacts":[{"wa_id":"14155559301","profile":{"name":"Ana"}}],` +
		`"messages":[{"from":"14155559301","id":"wamid.ana1","type":"text","text":{"body":"What does it cost?"}}]}}]}]}`)
	expect(t, do(t, "POST", srv.URL+"/v1/channels/whatsapp/inbound", "", body, "X-Hub-Signature-256: "+metaSign("app-secret", body)), http.StatusOK, "")

	waitFor(t, 10*time.Second, "the paused bot to skip the message", func() bool {
		var status []string
		err := env.Store.DB().NewSelect().Table("messages").Column("bot_status").Where("external_id = 'wamid.ana1'").Scan(t.Context(), &status)
		return err == nil && len(status) == 1 && status[0] == "skipped"
	})

	t.Run("bot reply inside the window: text", func(t *testing.T) {
		// The contact's bot was paused by the team reply above; resume it and ask again.
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+ana+"/bot", key, map[string]any{"active": true}), http.StatusOK, "")
		again := []byte(strings.ReplaceAll(strings.ReplaceAll(string(body), "wamid.ana1", "wamid.ana2"), "What does it cost?", "And the price?"))
		expect(t, do(t, "POST", srv.URL+"/v1/channels/whatsapp/inbound", "", again, "X-Hub-Signature-256: "+metaSign("app-secret", again)), http.StatusOK, "")
		waitFor(t, 10*time.Second, "the bot's WhatsApp reply", func() bool { return len(meta.deliveries()) == 3 })
		if b := whatsApp(2); b["type"] != "text" {
			t.Fatalf("a bot reply inside the window went as %v", b["type"])
		}
	})

	t.Run("team reply inside the window: text", func(t *testing.T) {
		m := teamReply(t, "Happy to help")
		if m["status"] != "sent" || len(meta.deliveries()) != 4 {
			t.Fatalf("team reply: %v (%d calls)", m, len(meta.deliveries()))
		}
		if b := whatsApp(3); b["type"] != "text" || !strings.Contains(string(meta.deliveries()[3].Body), "Happy to help") {
			t.Fatalf("team reply at WhatsApp: %s", meta.deliveries()[3].Body)
		}
	})
}

// sendCustom sends a message with POST /v1/send_custom_channel_message and returns its id.
func sendCustom(t *testing.T, srv *server, key, fromID, channel, body string) string {
	t.Helper()
	r := do(t, "POST", srv.URL+"/v1/send_custom_channel_message", key, map[string]any{
		"customData": map[string]any{"fromId": fromID, "customChannel": channel, "body": body},
	})
	expect(t, r, http.StatusCreated, "")
	return r.JSON(t)["messageId"].(string)
}
