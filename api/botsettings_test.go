package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"funnelchat/models"
)

// botSettings reads GET /v1/settings/bot.
func botSettings(t *testing.T, srv *server, key string) map[string]any {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/settings/bot", key, nil)
	expect(t, r, http.StatusOK, "")
	return r.JSON(t)
}

// putBotSettings sends PUT /v1/settings/bot and expects 200 with the full settings.
func putBotSettings(t *testing.T, srv *server, key string, body any) map[string]any {
	t.Helper()
	r := do(t, "PUT", srv.URL+"/v1/settings/bot", key, body)
	expect(t, r, http.StatusOK, "")
	return r.JSON(t)
}

func TestBotSettings(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	_, otherKey := newAccount(t)
	handoff := map[string]any{"handoffMessage": models.DefaultHandoffMessage, "handoffEscalationMinutes": float64(15), "botResumeMinutes": nil}
	withHandoff := func(m map[string]any) map[string]any {
		for k, v := range handoff {
			m[k] = v
		}
		return m
	}
	defaults := withHandoff(map[string]any{"active": true, "instructions": "", "goal": "", "language": "en"})

	if diff := cmp.Diff(defaults, botSettings(t, srv, key)); diff != "" {
		t.Fatalf("a new account's settings (-want +got):\n%s", diff)
	}

	// Partial updates keep the other fields; texts are trimmed; the language is normalized.
	want := withHandoff(map[string]any{"active": true, "instructions": "", "goal": "Book a demo call.", "language": "en"})
	if diff := cmp.Diff(want, putBotSettings(t, srv, key, map[string]any{"goal": "  Book a demo call.\n"})); diff != "" {
		t.Fatalf("PUT goal (-want +got):\n%s", diff)
	}
	want["instructions"] = "Be brief.\nwhen price: From $10 a month."
	want["language"] = "pt-BR"
	got := putBotSettings(t, srv, key, map[string]any{"instructions": "Be brief.\nwhen price: From $10 a month.", "language": "pt-br"})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("PUT instructions and language (-want +got):\n%s", diff)
	}
	want["active"] = false
	if diff := cmp.Diff(want, putBotSettings(t, srv, key, map[string]any{"active": false})); diff != "" {
		t.Fatalf("PUT active (-want +got):\n%s", diff)
	}
	// Unknown fields are ignored, as on every other endpoint; an empty object changes nothing.
	if diff := cmp.Diff(want, putBotSettings(t, srv, key, map[string]any{"colour": "blue"})); diff != "" {
		t.Fatalf("PUT with an unknown field (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, putBotSettings(t, srv, key, map[string]any{})); diff != "" {
		t.Fatalf("PUT {} (-want +got):\n%s", diff)
	}
	// Texts of exactly 8000 characters are accepted.
	full := strings.Repeat("é", 8000)
	want["goal"] = full
	if diff := cmp.Diff(want, putBotSettings(t, srv, key, map[string]any{"goal": full})); diff != "" {
		t.Fatalf("PUT an 8000-character goal (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, botSettings(t, srv, key)); diff != "" {
		t.Fatalf("GET after the updates (-want +got):\n%s", diff)
	}

	bad := []struct {
		name  string
		body  any
		code  string
		field string // named in the message
	}{
		{"invalid language", map[string]any{"language": "xx-!!"}, models.CodeValidation, "language"},
		{"empty language", map[string]any{"language": " "}, models.CodeValidation, "language"},
		{"active is not a boolean", map[string]any{"active": "yes"}, models.CodeValidation, "active"},
		{"instructions over 8000 characters", map[string]any{"instructions": strings.Repeat("a", 8001)}, models.CodeValidation, "instructions"},
		{"goal over 8000 characters", map[string]any{"goal": strings.Repeat("é", 8001)}, models.CodeValidation, "goal"},
		{"goal with a NUL", map[string]any{"goal": "a\x00b"}, models.CodeValidation, "goal"},
		{"instructions is not a string", map[string]any{"instructions": 5}, models.CodeValidation, "instructions"},
		{"a valid field with an invalid one stores neither", map[string]any{"active": true, "goal": "Other goal", "language": "xx-!!"}, models.CodeValidation, "language"},
		{"empty body", "", models.CodeInvalidJSON, ""},
		{"malformed JSON", `{"active":`, models.CodeInvalidJSON, ""},
		{"not an object", `[{"active":true}]`, models.CodeInvalidJSON, ""},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "PUT", srv.URL+"/v1/settings/bot", key, tc.body)
			expect(t, r, http.StatusBadRequest, tc.code)
			msg, _ := r.JSON(t)["error"].(map[string]any)["message"].(string)
			if !strings.Contains(msg, tc.field) {
				t.Errorf("message %q does not name %s", msg, tc.field)
			}
			if diff := cmp.Diff(want, botSettings(t, srv, key)); diff != "" {
				t.Fatalf("settings changed by a refused request (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("accounts do not share settings", func(t *testing.T) {
		if diff := cmp.Diff(defaults, botSettings(t, srv, otherKey)); diff != "" {
			t.Fatalf("another account's settings changed with this one's (-want +got):\n%s", diff)
		}
		mine := map[string]any{"active": true, "instructions": "Mine.", "goal": "Mine too.", "language": "fr"}
		if diff := cmp.Diff(withHandoff(mine), putBotSettings(t, srv, otherKey, mine)); diff != "" {
			t.Fatalf("PUT as the other account (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, botSettings(t, srv, key)); diff != "" {
			t.Fatalf("the other account's PUT changed this one's settings (-want +got):\n%s", diff)
		}
	})

	t.Run("the key is required", func(t *testing.T) {
		expect(t, do(t, "GET", srv.URL+"/v1/settings/bot", "", nil), http.StatusUnauthorized, models.CodeUnauthorized)
		expect(t, do(t, "PUT", srv.URL+"/v1/settings/bot", "", map[string]any{"active": false}), http.StatusUnauthorized, models.CodeUnauthorized)
	})
}

// replyBodies are the bodies of the replies the sink received, checked against the signing secret.
func replyBodies(t *testing.T, hook *sink, secret string) []string {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, d := range hook.deliveries() {
		if err := wh.Verify(d.Body, d.Header); err != nil {
			t.Fatalf("reply signature: %v", err)
		}
		var p map[string]any
		_ = json.Unmarshal(d.Body, &p)
		body, _ := p["body"].(string)
		bodies = append(bodies, body)
	}
	return bodies
}

func TestOfflineBotUsesTheAccountsSettings(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, secret := messagingAccount(t, srv, hook)
	putBotSettings(t, srv, key, map[string]any{
		"language":     "es",
		"goal":         "reservar una demo",
		"instructions": "Eres el asistente de Acme. Responde con brevedad.\nwhen precio, coste, tarifa: Los planes empiezan en 10 € al mes.",
	})

	// No campaign: the account's settings are the bot's voice.
	r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, map[string]any{
		"customData": map[string]any{"messageSid": "es-1", "fromId": "lucia", "toId": "biz-1", "body": "¿Cuál es el precio?", "channel": "live-chat", "firstName": "Lucía"},
	})
	expect(t, r, http.StatusOK, "")
	waitFor(t, 10*time.Second, "the reply", func() bool { return len(hook.deliveries()) == 1 })
	want := "¡Hola, Lucía! Los planes empiezan en 10 € al mes. ¿Damos juntos el siguiente paso? Reservar una demo."
	if got := replyBodies(t, hook, secret); len(got) != 1 || got[0] != want {
		t.Fatalf("reply %q, want %q", got, want)
	}

	// A message no rule matches gets the usual answer, in Spanish too.
	expect(t, incoming(t, srv, key, "es-2", "lucia", "Gracias"), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the second reply", func() bool { return len(hook.deliveries()) == 2 })
	want = `¡Hola, Lucía! Gracias por tu mensaje: "Gracias". ¿Damos juntos el siguiente paso? Reservar una demo.`
	if got := replyBodies(t, hook, secret); got[1] != want {
		t.Fatalf("reply %q, want %q", got[1], want)
	}
}

func TestLLMBotGetsTheAccountsSettings(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	llm := newFakeLLM(t, func(int) (int, map[string]any) {
		return 200, map[string]any{"role": "assistant", "content": "Os planos começam em 10 reais."}
	})
	llmWorker(t, llm)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	putBotSettings(t, srv, key, map[string]any{
		"language": "pt-br", "goal": "Start a free trial.", "instructions": "You answer for Acme.\nwhen price: Plans start at $10 a month.",
	})
	incoming(t, srv, key, "llm-pt-1", "joao", "Quanto custa?")
	waitFor(t, 10*time.Second, "the reply", func() bool { return len(hook.deliveries()) == 1 })

	llm.mu.Lock()
	req := llm.requests[0]
	llm.mu.Unlock()
	msgs, _ := req["messages"].([]any)
	system, _ := msgs[0].(map[string]any)
	prompt, _ := system["content"].(string)
	for _, want := range []string{
		"You answer for Acme.\nwhen price: Plans start at $10 a month.",
		"Goal of the conversation: Start a free trial.",
		"Answer in Brazilian Portuguese (pt-BR)",
	} {
		if system["role"] != "system" || !strings.Contains(prompt, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, prompt)
		}
	}
}

func TestBotSwitchStopsEveryReplyOfTheAccount(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, secret := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"channel": "custom:live-chat"})
	if got := putBotSettings(t, srv, key, map[string]any{"active": false})["active"]; got != false {
		t.Fatalf("active %v after switching the bot off", got)
	}

	// settled waits until the bot is done with an incoming message and returns its botStatus.
	settled := func(id string) any {
		t.Helper()
		var status any
		waitFor(t, 10*time.Second, "the worker to take message "+id, func() bool {
			status = messageField(t, srv, key, id, "botStatus")
			return status != "pending"
		})
		return status
	}

	// The campaign's opening still goes.
	lead := namedContact(t, srv, key, "+14155557101", "Ann")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": lead}), http.StatusCreated, "")
	waitFor(t, 10*time.Second, "the campaign's opening", func() bool { return len(hook.deliveries()) == 1 })
	if got := replyBodies(t, hook, secret); got[0] != "Hi Ann, thanks for signing up!" {
		t.Fatalf("opening %q", got[0])
	}
	if n := len(campaignMessages(t, campaignID)); n != 1 {
		t.Fatalf("%d campaign messages, want the opening", n)
	}

	// A message in the conversation the campaign owns, and one with no campaign: both stored, neither
	// answered.
	r := incoming(t, srv, key, "off-1", "+14155557101", "Tell me more")
	expect(t, r, http.StatusOK, "")
	owned := r.JSON(t)["messageId"].(string)
	r = incoming(t, srv, key, "off-2", "walk-in", "Hello?")
	expect(t, r, http.StatusOK, "")
	plain := r.JSON(t)["messageId"].(string)
	for _, id := range []string{owned, plain} {
		if status := settled(id); status != models.BotSkipped {
			t.Fatalf("message %s: botStatus %v, want skipped", id, status)
		}
	}
	if got := messageField(t, srv, key, owned, "contactId"); got != lead {
		t.Fatalf("the lead's message went to contact %v, want %s", got, lead)
	}
	conversation := do(t, "GET", srv.URL+"/v1/contacts/"+lead+"/messages", key, nil).JSON(t)["data"].([]any)
	if len(conversation) != 2 {
		t.Fatalf("the lead's conversation: %v", conversation)
	}
	if m := conversation[1].(map[string]any); m["id"] != owned || m["body"] != "Tell me more" || m["botStatus"] != models.BotSkipped {
		t.Fatalf("the stored message: %v", m)
	}
	if got := replyBodies(t, hook, secret); len(got) != 1 {
		t.Fatalf("deliveries %q while the bot is off, want the opening only", got)
	}

	// Switched on again, the bot answers new messages (the skipped ones stay skipped).
	if got := putBotSettings(t, srv, key, map[string]any{"active": true})["active"]; got != true {
		t.Fatalf("active %v after switching the bot on", got)
	}
	r = incoming(t, srv, key, "on-1", "walk-in", "Anyone there?")
	expect(t, r, http.StatusOK, "")
	waitFor(t, 10*time.Second, "the reply after switching on", func() bool { return len(hook.deliveries()) == 2 })
	if got := replyBodies(t, hook, secret)[1]; got != `Hi! Thanks for your message: "Anyone there?". How can I help you?` {
		t.Fatalf("reply %q", got)
	}
	if status := settled(r.JSON(t)["messageId"].(string)); status != "done" {
		t.Fatalf("botStatus %v after switching on, want done", status)
	}
	if status := messageField(t, srv, key, plain, "botStatus"); status != models.BotSkipped {
		t.Fatalf("the skipped message's botStatus became %v", status)
	}
}
