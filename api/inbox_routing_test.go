package api_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"funnelchat/models"
)

// Where the account's messages go is the owners' to change in the inbox (api/inbox/routing.go): the
// custom-channel webhook, the alert webhook, the channels and the bot's on/off switch. A member's
// request made by hand is refused with 403 and changes nothing; the member sees them read only; the
// owner keeps everything; the API, whose key is the account's, is unchanged.

// routingState is where an account's messages go, as the store has it.
type routingState struct {
	Webhook, AlertWebhook string
	BotActive             bool
	Instructions          string
}

func routingOf(t *testing.T, accountID string) routingState {
	t.Helper()
	acc, err := env.Store.AccountByID(t.Context(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	bot, err := env.Store.BotSettings(t.Context(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	var st routingState
	if acc.WebhookURL != nil {
		st.Webhook = *acc.WebhookURL
	}
	if acc.AlertWebhookURL != nil {
		st.AlertWebhook = *acc.AlertWebhookURL
	}
	st.BotActive, st.Instructions = bot.Active, bot.Instructions
	return st
}

// routingAccount is an account whose replies and alerts go to srv's /hook and /alerts, with its bot on
// and a member.
func routingAccount(t *testing.T, srv *server, owner, member string) (browserAccount, *browserClient, string) {
	t.Helper()
	acc := adminAccount(t, owner, "Northwind")
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", acc.key, map[string]any{"url": srv.URL + "/hook"}), http.StatusOK, "")
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/alert_webhook", acc.key, map[string]any{"url": srv.URL + "/alerts"}), http.StatusOK, "")
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/bot", acc.key, map[string]any{"active": true, "instructions": "Answer in two sentences."}), http.StatusOK, "")
	client, user := adminMember(t, srv, acc, member)
	return acc, client, user.Email
}

func TestInboxRoutingIsTheOwners(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	acc, member, _ := routingAccount(t, srv, "carla.mendes@northwind.example", "rui.pinto@northwind.example")
	want := routingState{Webhook: srv.URL + "/hook", AlertWebhook: srv.URL + "/alerts", BotActive: true, Instructions: "Answer in two sentences."}
	if got := routingOf(t, acc.ID); got != want {
		t.Fatalf("set up: %+v", got)
	}

	t.Run("a member's requests are refused and change nothing", func(t *testing.T) {
		for _, c := range []struct {
			what, action string
			form         url.Values
		}{
			{"the webhook", "/inbox/settings/webhook", url.Values{"url": {"https://intruder.example/hook"}}},
			{"the webhook, emptied", "/inbox/settings/webhook", url.Values{"url": {""}}},
			{"the alert webhook", "/inbox/settings/alert-webhook", url.Values{"url": {"https://intruder.example/alerts"}}},
			{"the alert webhook, off", "/inbox/settings/alert-webhook", url.Values{"url": {""}}},
			// The form's switch unticked: the bot off, with the rest of the form.
			{"the bot off, as the form sends it", "/inbox/settings/bot", url.Values{"activeShown": {"true"}, "instructions": {"Changed by a member."}}},
			{"the bot off, by hand", "/inbox/settings/bot", url.Values{"active": {"false"}, "instructions": {"Changed by a member."}}},
			{"a channel", "/inbox/settings/channels/sms", url.Values{"accountSid": {"ACintruder"}, "authToken": {"intruder"}, "from": {"+14155550100"}}},
		} {
			p := member.post("/inbox/settings", c.action, c.form)
			if p.Status != http.StatusForbidden || !strings.Contains(html.UnescapeString(p.Body), "Only the account's owners can change where messages go") {
				t.Errorf("%s: a member's POST %s answered %d, want 403 with the reason", c.what, c.action, p.Status)
			}
			if !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") {
				t.Errorf("%s: the refusal is %q, want the inbox's page", c.what, p.Header.Get("Content-Type"))
			}
			if got := routingOf(t, acc.ID); got != want {
				t.Fatalf("%s: a member's refused request changed %+v, want %+v", c.what, got, want)
			}
		}
		if _, err := env.Store.SMSSettings(t.Context(), acc.ID); models.ErrorCode(err) != models.CodeNotFound {
			t.Fatalf("SMS settings stored by a member: %v", err)
		}
	})

	t.Run("a member keeps the rest of the bot's settings", func(t *testing.T) {
		// Without the switch (the member's form has none), or with it as it is, the rest is saved.
		for _, form := range []url.Values{
			{"instructions": {"Answer in one sentence."}, "goal": {"Book a fitting"}, "language": {"en"}},
			{"active": {"true"}, "instructions": {"Answer in one sentence."}, "goal": {"Book a fitting"}, "language": {"en"}},
		} {
			if p := member.post("/inbox/settings", "/inbox/settings/bot", form); p.Status != http.StatusSeeOther {
				t.Fatalf("a member saving the instructions: %d, want 303", p.Status)
			}
			if got := routingOf(t, acc.ID); !got.BotActive || got.Instructions != "Answer in one sentence." {
				t.Fatalf("after a member's save: %+v", got)
			}
		}
		want.Instructions = "Answer in one sentence."
	})

	t.Run("a member sees them read only", func(t *testing.T) {
		body := member.get("/inbox/settings").Body
		for _, c := range []struct{ section, value string }{{"webhook", srv.URL + "/hook"}, {"alerts", srv.URL + "/alerts"}} {
			s := html.UnescapeString(sectionOf(t, body, c.section))
			if strings.Contains(s, `name="url"`) || !strings.Contains(s, c.value) || !strings.Contains(s, "Only the account's owners can change where") {
				t.Fatalf("a member's %s section:\n%s", c.section, s)
			}
		}
		for _, action := range []string{`action="/inbox/settings/webhook"`, `action="/inbox/settings/alert-webhook"`, `action="/inbox/settings/channels/`} {
			if strings.Contains(body, action) {
				t.Fatalf("a member's settings page has the form %s", action)
			}
		}
		bot := html.UnescapeString(sectionOf(t, body, "bot"))
		if strings.Contains(bot, `name="active"`) || strings.Contains(bot, `name="activeShown"`) || !strings.Contains(bot, "Bot on") ||
			!strings.Contains(bot, "Only the account's owners can switch the bot off.") || !strings.Contains(bot, `name="instructions"`) {
			t.Fatalf("a member's bot section:\n%s", bot)
		}
		// The test event goes to the webhook set: it changes nothing, and stays open to everyone.
		if !strings.Contains(sectionOf(t, body, "webhook"), `action="/inbox/settings/webhook/test"`) {
			t.Fatal("a member has no Send test event")
		}
	})

	t.Run("the owner changes each", func(t *testing.T) {
		owner := adminOwnerClient(t, srv, acc)
		body := owner.get("/inbox/settings").Body
		for _, field := range []string{`action="/inbox/settings/webhook"`, `action="/inbox/settings/alert-webhook"`, `name="activeShown"`, `name="active"`} {
			if !strings.Contains(body, field) {
				t.Fatalf("the owner's settings page lacks %s", field)
			}
		}
		steps := []struct {
			action string
			form   url.Values
			after  func(*routingState)
		}{
			{"/inbox/settings/webhook", url.Values{"url": {srv.URL + "/hook2"}}, func(s *routingState) { s.Webhook = srv.URL + "/hook2" }},
			{"/inbox/settings/alert-webhook", url.Values{"url": {""}}, func(s *routingState) { s.AlertWebhook = "" }},
			{"/inbox/settings/alert-webhook", url.Values{"url": {srv.URL + "/alerts2"}}, func(s *routingState) { s.AlertWebhook = srv.URL + "/alerts2" }},
			{"/inbox/settings/bot", url.Values{"activeShown": {"true"}, "instructions": {"Answer in one sentence."}, "language": {"en"}}, func(s *routingState) { s.BotActive = false }},
			{"/inbox/settings/bot", url.Values{"activeShown": {"true"}, "active": {"true"}, "instructions": {"Answer in one sentence."}, "language": {"en"}}, func(s *routingState) { s.BotActive = true }},
		}
		for _, step := range steps {
			if p := owner.post("/inbox/settings", step.action, step.form); p.Status != http.StatusSeeOther {
				t.Fatalf("the owner's POST %s %v: %d, want 303", step.action, step.form, p.Status)
			}
			step.after(&want)
			if got := routingOf(t, acc.ID); got != want {
				t.Fatalf("after the owner's POST %s: %+v, want %+v", step.action, got, want)
			}
		}
		// A member sees the bot off as off, and that only owners switch it on.
		if p := owner.post("/inbox/settings", "/inbox/settings/bot", url.Values{"activeShown": {"true"}, "instructions": {"x"}, "language": {"en"}}); p.Status != http.StatusSeeOther {
			t.Fatalf("the owner switching the bot off: %d", p.Status)
		}
		if bot := html.UnescapeString(sectionOf(t, member.get("/inbox/settings").Body, "bot")); !strings.Contains(bot, "Bot off") ||
			!strings.Contains(bot, "Only the account's owners can switch the bot on.") {
			t.Fatalf("a member's bot section with the bot off:\n%s", bot)
		}
		if p := member.post("/inbox/settings", "/inbox/settings/bot", url.Values{"active": {"true"}, "instructions": {"x"}}); p.Status != http.StatusForbidden {
			t.Fatalf("a member switching the bot on: %d, want 403", p.Status)
		}
		if routingOf(t, acc.ID).BotActive {
			t.Fatal("a member's refused request switched the bot on")
		}
	})

	t.Run("the API key is the account's: the API changes them as before", func(t *testing.T) {
		expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", acc.key, map[string]any{"url": srv.URL + "/hook3"}), http.StatusOK, "")
		expect(t, do(t, "PUT", srv.URL+"/v1/settings/alert_webhook", acc.key, map[string]any{"url": ""}), http.StatusOK, "")
		expect(t, do(t, "PUT", srv.URL+"/v1/settings/bot", acc.key, map[string]any{"active": true}), http.StatusOK, "")
		if got := routingOf(t, acc.ID); got.Webhook != srv.URL+"/hook3" || got.AlertWebhook != "" || !got.BotActive {
			t.Fatalf("after the API's changes: %+v", got)
		}
	})
}
