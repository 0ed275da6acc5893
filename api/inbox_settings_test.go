package api_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"funnelchat/models"
)

var newKeyShown = regexp.MustCompile(`id="new-key">([^<]+)<`)

func TestInboxFormsAnswerWithARedirect(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	owner, _, oldKey := signedIn(t, srv)

	t.Run("generating a key: 303, shown once, a reload generates nothing", func(t *testing.T) {
		p := owner.post("/inbox/settings", "/inbox/settings/api-key", nil)
		if p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/inbox/settings?shown=") {
			t.Fatalf("generate key: %d %q, want 303 to the settings page", p.Status, p.Header.Get("Location"))
		}
		if newKeyShown.MatchString(p.Body) {
			t.Fatal("the key is in the POST's answer, where a reload would post again")
		}
		shown := owner.get(p.Header.Get("Location"))
		key := newKeyShown.FindStringSubmatch(shown.Body)
		if key == nil {
			t.Fatalf("the new key is not shown:\n%.1500s", shown.Body)
		}
		expect(t, do(t, "GET", srv.URL+"/v1/credits", oldKey, nil), http.StatusUnauthorized, models.CodeUnauthorized)
		// The reload: the same GET again.
		again := owner.get(p.Header.Get("Location"))
		if again.Status != http.StatusOK || newKeyShown.MatchString(again.Body) || !strings.Contains(again.Body, "shown once already") {
			t.Fatalf("the reload: %d\n%.1500s", again.Status, again.Body)
		}
		expect(t, do(t, "GET", srv.URL+"/v1/credits", key[1], nil), http.StatusOK, "")
	})

	t.Run("another session cannot take a reveal", func(t *testing.T) {
		p := owner.post("/inbox/settings", "/inbox/settings/api-key", nil)
		other, _, _ := signedIn(t, srv)
		if got := other.get(p.Header.Get("Location")); newKeyShown.MatchString(got.Body) {
			t.Fatal("another session's settings page showed the key")
		}
		if got := owner.get(p.Header.Get("Location")); !newKeyShown.MatchString(got.Body) {
			t.Fatal("the session that generated the key does not see it")
		}
	})

	t.Run("every state-changing form answers 303", func(t *testing.T) {
		for _, f := range []struct {
			action string
			form   url.Values
		}{
			{"/inbox/settings/webhook", url.Values{"url": {srv.URL + "/hook"}}},
			{"/inbox/settings/alert-webhook", url.Values{"url": {""}}},
			{"/inbox/settings/bot", url.Values{"active": {"true"}, "instructions": {"Be brief."}}},
			{"/inbox/settings/password", url.Values{"current": {"wrong one entirely"}, "new": {"whatever whatever"}}},
			{"/inbox/settings/team", url.Values{"email": {"bad address"}}},
		} {
			if p := owner.post("/inbox/settings", f.action, f.form); p.Status != http.StatusSeeOther {
				t.Errorf("%s: %d, want 303", f.action, p.Status)
			}
		}
	})
}

func TestInboxOwnerOnlySettings(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	owner, acc, key := signedIn(t, srv)
	r := do(t, "GET", srv.URL+"/v1/settings/webhook", key, nil)
	expect(t, r, http.StatusOK, "")
	secret := r.JSON(t)["signingSecret"].(string)
	if !strings.Contains(html.UnescapeString(owner.get("/inbox/settings").Body), secret) {
		t.Fatal("the owner does not see the signing secret")
	}

	email := fmt.Sprintf("member%d@example.com", time.Now().UnixNano())
	added, err := env.Store.AddUser(context.Background(), acc.ID, email, models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	member := newBrowserClient(t, srv)
	if p := member.signIn(email, added.Password); p.Status != http.StatusSeeOther {
		t.Fatalf("member sign-in: %d", p.Status)
	}
	page := member.get("/inbox/settings")
	if page.Status != http.StatusOK || strings.Contains(html.UnescapeString(page.Body), secret) || strings.Contains(page.Body, `action="/inbox/settings/api-key"`) {
		t.Fatalf("a member's settings page shows the secret or the key's form:\n%.2000s", page.Body)
	}
	// A crafted request is refused too: the member has the page's CSRF token, not the right.
	if p := member.post("/inbox/settings", "/inbox/settings/api-key", nil); p.Status != http.StatusForbidden {
		t.Fatalf("a member generating a key: %d, want 403", p.Status)
	}
	expect(t, do(t, "GET", srv.URL+"/v1/credits", key, nil), http.StatusOK, "")
}

// sectionOf returns the HTML of the page's <section id="id">.
func sectionOf(t *testing.T, body, id string) string {
	t.Helper()
	start := strings.Index(body, `<section class="card" id="`+id+`"`)
	if start < 0 {
		t.Fatalf("no section %s", id)
	}
	end := strings.Index(body[start:], "</section>")
	return body[start : start+end]
}

func TestInboxActionResultsShowInTheirSection(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	owner, _, _ := signedIn(t, srv)
	for _, c := range []struct {
		action, section, message string
		form                     url.Values
	}{
		{"/inbox/settings/webhook", "webhook", "Webhook saved.", url.Values{"url": {srv.URL + "/hook"}}},
		{"/inbox/settings/webhook", "webhook", "Enter the webhook URL.", url.Values{"url": {" "}}},
		{"/inbox/settings/bot", "bot", "Bot settings saved.", url.Values{"active": {"true"}, "language": {"en"}}},
		{"/inbox/settings/password", "password", "The current password is wrong.", url.Values{"current": {"nope nope nope"}, "new": {"whatever whatever"}}},
	} {
		p := owner.post("/inbox/settings", c.action, c.form)
		if p.Status != http.StatusSeeOther || !strings.HasSuffix(p.Header.Get("Location"), "#"+c.section) {
			t.Fatalf("%s: %d %q", c.action, p.Status, p.Header.Get("Location"))
		}
		body := owner.get("/inbox/settings").Body
		if !strings.Contains(sectionOf(t, body, c.section), c.message) {
			t.Fatalf("%q is not in the %s section:\n%s", c.message, c.section, sectionOf(t, body, c.section))
		}
		if strings.Count(body, c.message) != 1 {
			t.Fatalf("%q shown %d times", c.message, strings.Count(body, c.message))
		}
	}
}

func TestInboxListPreviewsNameTheAuthor(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	b, _, key := signedIn(t, srv)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", key, map[string]any{"url": hook.URL + "/hook"}), http.StatusOK, "")
	expect(t, incoming(t, srv, key, "prev-1", "visitor-prev", "Hello there"), http.StatusOK, "")
	waitFor(t, 10*time.Second, "the bot's reply", func() bool { return len(hook.deliveries()) == 1 })
	// The worker records the reply once the receiver has answered: on a loaded machine the page can
	// be read between the two, and still show the lead's message.
	list := b.get("/inbox/").Body
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(list, "Bot: ") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		list = b.get("/inbox/").Body
	}
	if !strings.Contains(list, "Bot: ") || strings.Contains(list, "You: ") {
		t.Fatalf("the preview of the bot's reply:\n%.3000s", list)
	}
	sendCustom(t, srv, key, "visitor-prev", "live-chat", "From the integration")
	if list := b.get("/inbox/").Body; !strings.Contains(list, "Sent: From the integration") {
		t.Fatalf("the preview of an API send:\n%.3000s", list)
	}
}

// TestInboxReplyBoxShowsWhereTheReplyGoes: the page tells the channel the reply takes, and the reply
// takes it. After a message to the lead on another channel, the box used to name that channel while
// the reply went to the channel the lead wrote on.
func TestInboxReplyBoxShowsWhereTheReplyGoes(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	b, _, key := signedIn(t, srv)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", key, map[string]any{"url": hook.URL + "/hook"}), http.StatusOK, "")
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/bot", key, map[string]any{"active": false}), http.StatusOK, "")
	r := incoming(t, srv, key, "route-1", "lead-route", "I have a question") // on live-chat
	expect(t, r, http.StatusOK, "")
	contactID := messageField(t, srv, key, r.JSON(t)["messageId"].(string), "contactId").(string)
	sendCustom(t, srv, key, "lead-route", "sms", "Our SMS offer") // the latest message is now on sms

	page := b.get("/inbox/conversations/" + contactID).Body
	if !strings.Contains(page, "Write a reply on live-chat") {
		t.Fatalf("the reply box does not say live-chat:\n%.3000s", page)
	}
	p := b.post("/inbox/conversations/"+contactID, "/inbox/conversations/"+contactID+"/reply", url.Values{"body": {"Happy to help"}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("reply: %d", p.Status)
	}
	msgs := do(t, "GET", srv.URL+"/v1/contacts/"+contactID+"/messages", key, nil).JSON(t)["data"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)
	if last["body"] != "Happy to help" || last["channel"] != "live-chat" {
		t.Fatalf("the reply went as %v", last)
	}
}

// The compliance section saves the default country: in any case, refused when it is not a country
// (nothing saved), cleared when emptied; the placeholder shows the time zone's country then.
func TestInboxSavesTheDefaultCountry(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	b, _, key := signedIn(t, srv)
	settings := func() map[string]any {
		t.Helper()
		return do(t, "GET", srv.URL+"/v1/settings/compliance", key, nil).JSON(t)
	}
	// The form as the page sends it: every field, with the one under test changed.
	save := func(country string) string {
		t.Helper()
		cur := settings()
		form := url.Values{
			"optOutConfirmation": {cur["optOutConfirmation"].(string)}, "optInConfirmation": {cur["optInConfirmation"].(string)},
			"helpText": {cur["helpText"].(string)}, "noQuietHours": {"true"}, "timeZone": {"America/New_York"},
			"defaultCountry": {country},
		}
		p := b.post("/inbox/settings", "/inbox/settings/compliance", form)
		switch p.Status {
		case http.StatusSeeOther:
			return html.UnescapeString(sectionOf(t, b.get(p.Header.Get("Location")).Body, "compliance"))
		case http.StatusUnprocessableEntity: // refused: the form again, as typed, with the reasons
			return html.UnescapeString(sectionOf(t, p.Body, "compliance"))
		}
		t.Fatalf("saving defaultCountry %q: %d\n%.1000s", country, p.Status, p.Body)
		return ""
	}

	section := save("gb")
	if s := settings(); s["defaultCountry"] != "GB" || s["timeZone"] != "America/New_York" {
		t.Fatalf("after saving gb: %v\n%s", s, section)
	}
	if !strings.Contains(section, `name="defaultCountry" value="GB"`) {
		t.Fatalf("the form does not show GB:\n%s", section)
	}

	section = save("XX")
	if !strings.Contains(section, "Default country must be an ISO 3166 alpha-2 country code") || !strings.Contains(section, "Nothing was saved.") ||
		!strings.Contains(section, `name="defaultCountry" value="XX"`) {
		t.Fatalf("saving XX says:\n%s", section)
	}
	if s := settings(); s["defaultCountry"] != "GB" {
		t.Fatalf("a refused country was saved: %v", s)
	}

	section = save("")
	if s := settings(); s["defaultCountry"] != nil {
		t.Fatalf("an emptied country was kept: %v", s)
	}
	if !strings.Contains(section, `name="defaultCountry" value="" placeholder="US, the time zone's"`) {
		t.Fatalf("the form does not offer the time zone's country:\n%s", section)
	}
}
