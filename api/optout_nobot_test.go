package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"funnelchat/models"
)

// A request in plain words to hear no more is honoured when no bot reads the message: with the
// account's bot switched off, and in a conversation the team took (the bot paused for the contact).
// The contact is opted out and gets the confirmation, and nothing else.
func TestPlainOptOutWithoutABot(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	confirmation := do(t, "GET", srv.URL+"/v1/settings/compliance", key, nil).JSON(t)["optOutConfirmation"]

	optedOut := func(t *testing.T, contact string) {
		t.Helper()
		waitFor(t, 10*time.Second, "the opt-out", func() bool {
			ch, _ := consentOf(t, srv, key, contact)
			return statusOn(ch, "live-chat") == models.ConsentOptedOut
		})
	}
	bodiesTo := func(to string) []any {
		var out []any
		for _, d := range hook.deliveries() {
			var p map[string]any
			_ = json.Unmarshal(d.Body, &p)
			if p["toId"] == to {
				out = append(out, p["body"])
			}
		}
		return out
	}

	t.Run("the team took the conversation", func(t *testing.T) {
		r := incoming(t, srv, key, "nb-1", "nora", "hi there")
		expect(t, r, http.StatusOK, "")
		contact := senderOf(t, srv, key, r)
		waitFor(t, 10*time.Second, "the bot's first answer", func() bool { return len(bodiesTo("nora")) == 1 })
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+contact+"/bot", key, map[string]any{"active": false}), http.StatusOK, "")
		expect(t, incoming(t, srv, key, "nb-2", "nora", "stop sending me this"), http.StatusOK, "")
		optedOut(t, contact)
		waitFor(t, 10*time.Second, "the confirmation", func() bool { return len(bodiesTo("nora")) == 2 })
		if got := bodiesTo("nora"); got[1] != confirmation {
			t.Fatalf("answers %q, want the bot's first answer and then the confirmation %q", got, confirmation)
		}
	})
	t.Run("the account's bot is off", func(t *testing.T) {
		putBotSettings(t, srv, key, map[string]any{"active": false})
		r := incoming(t, srv, key, "nb-3", "omar", "please stop texting me")
		expect(t, r, http.StatusOK, "")
		optedOut(t, senderOf(t, srv, key, r))
		waitFor(t, 10*time.Second, "the confirmation", func() bool { return len(bodiesTo("omar")) == 1 })
		if got := bodiesTo("omar"); len(got) != 1 || got[0] != confirmation {
			t.Fatalf("answers to omar %q, want only the confirmation", got)
		}
		// An ordinary message still gets nothing while the bot is off.
		plain := incoming(t, srv, key, "nb-4", "pia", "what are your hours?").JSON(t)["messageId"].(string)
		waitFor(t, 10*time.Second, "the ordinary message skipped", func() bool {
			return messageField(t, srv, key, plain, "botStatus") == "skipped"
		})
		if got := bodiesTo("pia"); len(got) != 0 {
			t.Fatalf("answers to pia %q while the bot is off", got)
		}
	})
}
