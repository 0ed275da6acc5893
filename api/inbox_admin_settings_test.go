package api_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"funnelchat/models"
)

// The settings an account is set up with, in a real browser: each user's availability for hand-offs,
// the bot's hand-off settings, the canned replies, and the SMS, WhatsApp, Messenger and Instagram
// credentials with the webhook addresses to paste at the providers; and the owner-only routes refused
// to a member however the request is made.

// adminRun numbers the connections these tests make in this process, so that each gets ids of its
// own; adminEmails counts the uses of each email, so that a repeated run (-count) gets emails of its
// own while the first keeps the plain one (the screenshots show it).
var (
	adminRun    atomic.Int64
	adminEmails sync.Map
)

// adminScreenshots are the screenshots these tests take (the layout test leaves them): the settings
// page of an account set up with channels, canned replies and hand-off settings.
var adminScreenshots = map[string]bool{"settings-laptop.png": true}

// adminEmail is email the first time, then email with +2, +3, ... in it. Every browser test that names
// its accounts by a fixed email goes through it (adminAccount, newTeamFixture): two tests that pick the
// same email then get different ones in whichever order they run.
func adminEmail(email string) string {
	n, _ := adminEmails.LoadOrStore(email, new(atomic.Int64))
	if i := n.(*atomic.Int64).Add(1); i > 1 {
		return strings.Replace(email, "@", fmt.Sprintf("+%d@", i), 1)
	}
	return email
}

// adminAccount creates an account whose owner, email, signs in with inboxPassword.
func adminAccount(t *testing.T, email, name string) browserAccount {
	t.Helper()
	email = adminEmail(email)
	created, err := env.Store.CreateAccount(t.Context(), models.NewAccount{Email: email, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.SetPassword(t.Context(), created.Account.OwnerUserID, inboxPassword); err != nil {
		t.Fatal(err)
	}
	return browserAccount{Account: created.Account, key: created.APIKey}
}

// adminMember adds a member to the account and signs them in over HTTP.
func adminMember(t *testing.T, srv *server, acc browserAccount, email string) (*browserClient, *models.User) {
	t.Helper()
	email = adminEmail(email)
	added, err := env.Store.AddUser(t.Context(), acc.ID, email, models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	member := newBrowserClient(t, srv)
	if p := member.signIn(email, added.Password); p.Status != http.StatusSeeOther {
		t.Fatalf("member sign-in: %d", p.Status)
	}
	return member, added.User
}

// adminOwnerClient signs the account's owner in over HTTP (for the requests a form cannot make).
func adminOwnerClient(t *testing.T, srv *server, acc browserAccount) *browserClient {
	t.Helper()
	c := newBrowserClient(t, srv)
	if p := c.signIn(acc.Email, inboxPassword); p.Status != http.StatusSeeOther {
		t.Fatalf("owner sign-in: %d", p.Status)
	}
	return c
}

// adminAvailable reports whether the user takes hand-offs, as the store has it.
func adminAvailable(t *testing.T, accountID, userID string) bool {
	t.Helper()
	members, err := env.Store.TeamMembers(t.Context(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if m.ID == userID {
			return m.Available
		}
	}
	t.Fatalf("no user %s in the team", userID)
	return false
}

// adminFlash is the text of the flash shown in the element matching selector ("" when none).
func (b *inboxTab) adminFlash(selector string) string {
	b.t.Helper()
	return evalJS[string](b, `(e => e ? e.textContent.trim() : '')(document.querySelector('`+selector+` .flash'))`)
}

// adminSettings opens the settings page, fails unless it answers 200, and goes to the section (a
// navigation that changes only the fragment would load nothing).
func (b *inboxTab) adminSettings(section string) {
	b.t.Helper()
	if status := b.open("/inbox/settings"); status != http.StatusOK {
		b.fatalf("settings: %d", status)
	}
	evalJS[bool](b, `location.hash = '#`+section+`', true`)
}

// adminOpen opens the <details> matching selector, as a click on its summary does.
func (b *inboxTab) adminOpen(selector string) {
	b.t.Helper()
	if !evalJS[bool](b, `(d => d ? (d.open = true, true) : false)(document.querySelector('`+selector+`'))`) {
		b.fatalf("no %s on the page", selector)
	}
}

// adminValue is the value of the form field matching selector.
func (b *inboxTab) adminValue(selector string) string {
	b.t.Helper()
	return evalJS[string](b, `document.querySelector('`+selector+`').value`)
}

func TestInboxAdminAvailabilityAndHandoff(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := adminAccount(t, "ines.ferreira@northwind.example", "Northwind")
	member, memberUser := adminMember(t, srv, acc, "tiago.reis@northwind.example")
	b := acc.signedIn(t, srv)

	t.Run("the availability toggle changes the store, for the signed-in user only", func(t *testing.T) {
		if !adminAvailable(t, acc.ID, acc.OwnerUserID) {
			t.Fatal("a new user is not available")
		}
		b.adminSettings("availability")
		if got := evalJS[string](b, `document.querySelector('#availability .pill').textContent`); got != "Available" {
			b.fatalf("the availability reads %q", got)
		}
		if status := b.click(`#availability button[type=submit]`); status != http.StatusOK {
			b.fatalf("away: %d", status)
		}
		if adminAvailable(t, acc.ID, acc.OwnerUserID) || !adminAvailable(t, acc.ID, memberUser.ID) {
			t.Fatal("after the owner's Away: the owner is still available, or the member is not")
		}
		if p := b.path(); p != "/inbox/settings" {
			b.fatalf("went to %s", p)
		}
		if flash := b.adminFlash("#availability"); !strings.HasPrefix(flash, "You are away") {
			b.fatalf("the section says %q", flash)
		}
		if got := evalJS[string](b, `document.querySelector('#availability .pill').textContent`); got != "Away" {
			b.fatalf("the availability reads %q after Away", got)
		}
		b.click(`#availability button[type=submit]`)
		if !adminAvailable(t, acc.ID, acc.OwnerUserID) {
			t.Fatal("the owner is not available again")
		}
		// The member's own form changes the member alone; a stale page posting the state again
		// changes nothing.
		for range 2 {
			if p := member.post("/inbox/settings", "/inbox/settings/availability", url.Values{"available": {"false"}}); p.Status != http.StatusSeeOther {
				t.Fatalf("the member's Away: %d", p.Status)
			}
		}
		if adminAvailable(t, acc.ID, memberUser.ID) || !adminAvailable(t, acc.ID, acc.OwnerUserID) {
			t.Fatal("the member's Away changed the wrong user")
		}
		if p := member.post("/inbox/settings", "/inbox/settings/availability", url.Values{"available": {"maybe"}}); p.Status != http.StatusSeeOther ||
			adminAvailable(t, acc.ID, memberUser.ID) {
			t.Fatalf("a nonsense availability: %d", p.Status)
		}
		// The owner's team list shows who is away.
		b.adminSettings("team")
		team := evalJS[string](b, `document.querySelector('#team .team').innerText.replace(/\s+/g, ' ')`)
		if !strings.Contains(team, memberUser.Email+" member away") || !strings.Contains(team, "owner available") {
			b.fatalf("the team reads %q", team)
		}
	})

	t.Run("hand-off settings save and show", func(t *testing.T) {
		b.adminSettings("bot")
		if got := b.adminValue(`#bot textarea[name=handoffMessage]`); got != models.DefaultHandoffMessage {
			b.fatalf("the hand-off message shows %q, want the default", got)
		}
		if hint := evalJS[string](b, `document.querySelector('#bot fieldset.handoff').textContent`); !strings.Contains(hint, "The default is: “"+models.DefaultHandoffMessage+"”") ||
			!strings.Contains(hint, "Leave it empty to send nothing") {
			b.fatalf("the hand-off part reads %q", hint)
		}
		// Saving the bot's form unchanged keeps the default as the default (it follows the service's).
		b.click(`#bot button[type=submit]`)
		var stored sql.NullString
		if err := env.Store.DB().NewRaw("SELECT handoff_message FROM accounts WHERE id = ?", acc.ID).Scan(t.Context(), &stored); err != nil {
			t.Fatal(err)
		}
		if stored.Valid {
			t.Fatalf("an unchanged form stored the hand-off message %q", stored.String)
		}

		const message = "Thanks! Ines or Tiago from Northwind will answer you here within the hour."
		b.fill(`#bot textarea[name=handoffMessage]`, message)
		b.fill(`#bot input[name=handoffEscalationMinutes]`, "45")
		b.fill(`#bot input[name=botResumeMinutes]`, "120")
		if status := b.click(`#bot button[type=submit]`); status != http.StatusOK {
			b.fatalf("save: %d", status)
		}
		if flash := b.adminFlash("#bot"); flash != "Bot settings saved." {
			b.fatalf("the bot section says %q", flash)
		}
		bot, err := env.Store.BotSettings(t.Context(), acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if bot.HandoffMessage != message || bot.HandoffEscalationMinutes != 45 || bot.BotResumeMinutes == nil || *bot.BotResumeMinutes != 120 {
			t.Fatalf("stored: %q %d %v", bot.HandoffMessage, bot.HandoffEscalationMinutes, bot.BotResumeMinutes)
		}
		if got := []string{b.adminValue(`#bot textarea[name=handoffMessage]`), b.adminValue(`#bot input[name=handoffEscalationMinutes]`), b.adminValue(`#bot input[name=botResumeMinutes]`)}; !slices.Equal(got, []string{message, "45", "120"}) {
			b.fatalf("the form shows %q after saving", got)
		}

		// Empty message: nothing is sent; 0: never escalate; empty resume: never.
		b.fill(`#bot textarea[name=handoffMessage]`, "")
		b.fill(`#bot input[name=handoffEscalationMinutes]`, "0")
		b.fill(`#bot input[name=botResumeMinutes]`, "")
		b.click(`#bot button[type=submit]`)
		if bot, err = env.Store.BotSettings(t.Context(), acc.ID); err != nil {
			t.Fatal(err)
		}
		if bot.HandoffMessage != "" || bot.HandoffEscalationMinutes != 0 || bot.BotResumeMinutes != nil {
			t.Fatalf("stored after clearing: %q %d %v", bot.HandoffMessage, bot.HandoffEscalationMinutes, bot.BotResumeMinutes)
		}
		if got := b.adminValue(`#bot input[name=botResumeMinutes]`); got != "" || b.adminValue(`#bot textarea[name=handoffMessage]`) != "" {
			b.fatalf("the form shows %q after clearing", got)
		}

		// Out of range (the browser's own limits are crafted around): the store's reason, nothing saved.
		owner := adminOwnerClient(t, srv, acc)
		for _, c := range []struct {
			form url.Values
			want string
		}{
			{url.Values{"active": {"true"}, "language": {"en"}, "handoffEscalationMinutes": {"20000"}, "handoffMessage": {"Changed"}},
				"Escalate after must be from 0 (never) to 10080. Nothing was saved."},
			{url.Values{"active": {"true"}, "language": {"en"}, "botResumeMinutes": {"0"}}, "Resume the bot after must be empty (never) or from 1 to 10080. Nothing was saved."},
			{url.Values{"active": {"true"}, "language": {"en"}, "botResumeMinutes": {"soon"}}, "Resume the bot after must be a whole number of minutes, or empty for never. Nothing was saved."},
			{url.Values{"active": {"true"}, "language": {"en"}, "handoffMessage": {strings.Repeat("x", 1001)}}, "The hand-off message must be at most 1000 characters. Nothing was saved."},
		} {
			if p := owner.post("/inbox/settings", "/inbox/settings/bot", c.form); p.Status != http.StatusSeeOther {
				t.Fatalf("%v: %d", c.form, p.Status)
			}
			if got := sectionOf(t, owner.get("/inbox/settings").Body, "bot"); !strings.Contains(got, c.want) {
				t.Fatalf("after %v the bot section lacks %q:\n%s", c.form, c.want, got)
			}
			if again, _ := env.Store.BotSettings(t.Context(), acc.ID); again.HandoffMessage != "" || again.HandoffEscalationMinutes != 0 || again.BotResumeMinutes != nil {
				t.Fatalf("a refused save stored %+v", again)
			}
		}
	})
}

// adminCanned returns the account's canned replies by shortcut.
func adminCanned(t *testing.T, accountID string) map[string]string {
	t.Helper()
	rs, err := env.Store.CannedReplies(t.Context(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rs {
		out[r.Shortcut] = r.Body
	}
	return out
}

func TestInboxAdminCannedReplies(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := adminAccount(t, "ines.ferreira@northwind.example", "Northwind")
	b := acc.signedIn(t, srv)
	dialogs := b.acceptDialogs()
	b.adminSettings("canned")
	if text := evalJS[string](b, `document.getElementById('canned').innerText`); !strings.Contains(text, "No canned replies yet.") ||
		!strings.Contains(text, "{{firstName}}") || !strings.Contains(text, "/hours") {
		b.fatalf("the empty section reads %q", text)
	}

	add := func(shortcut, body string) int64 {
		t.Helper()
		b.fill(`#canned-new input[name=shortcut]`, shortcut)
		b.fill(`#canned-new textarea[name=body]`, body)
		return b.click(`#canned-new button[type=submit]`)
	}
	const hours = "Hi {{firstName}}, we are open from 9:00 to 18:00, Monday to Saturday."
	if status := add("hours", hours); status != http.StatusOK {
		b.fatalf("add: %d", status)
	}
	if flash := b.adminFlash("#canned"); flash != "Canned reply /hours added." {
		b.fatalf("the section says %q", flash)
	}
	const hostile = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">Sure, see you then!`
	add("/xss", hostile) // the leading slash, as typed in the reply box, is dropped
	if got := adminCanned(t, acc.ID); got["hours"] != hours || got["xss"] != hostile || len(got) != 2 {
		t.Fatalf("stored: %q", got)
	}

	t.Run("a body with markup is shown as text", func(t *testing.T) {
		shown := evalJS[string](b, `document.querySelector('#canned .savedreplies li:last-child .savedreplytext').textContent`)
		if shown != hostile {
			b.fatalf("the reply shows %q", shown)
		}
		if n := evalJS[int](b, `document.querySelectorAll('#canned script, #canned img').length`); n != 0 {
			b.fatalf("%d script or img elements in the section", n)
		}
		b.adminOpen(`#canned .savedreplies li:last-child details`)
		if got := b.adminValue(`#canned .savedreplies li:last-child textarea[name=body]`); got != hostile {
			b.fatalf("the edit form holds %q", got)
		}
		if evalJS[bool](b, `window.__pwned !== undefined`) {
			b.fatalf("the body ran")
		}
	})

	t.Run("a duplicate shortcut and bad input show the store's message and keep what was typed", func(t *testing.T) {
		for _, c := range []struct{ shortcut, body, want string }{
			{"HOURS", "We open at nine.", "The shortcut /HOURS is taken. Nothing was saved."},
			{"opening hours", "We open at nine.", "Shortcut must be one word: no spaces or slashes. Nothing was saved."},
			{"hours/today", "We open at nine.", "Shortcut must be one word: no spaces or slashes. Nothing was saved."},
		} {
			b.adminSettings("canned")
			if status := add(c.shortcut, c.body); status != http.StatusUnprocessableEntity {
				b.fatalf("%q: %d, want 422", c.shortcut, status)
			}
			if got := evalJS[string](b, `document.querySelector('#canned-new .flash.bad').textContent`); got != c.want {
				b.fatalf("%q: the form says %q, want %q", c.shortcut, got, c.want)
			}
			if got := []string{b.adminValue(`#canned-new input[name=shortcut]`), b.adminValue(`#canned-new textarea[name=body]`)}; !slices.Equal(got, []string{c.shortcut, c.body}) {
				b.fatalf("the form kept %q", got)
			}
			// In view: the browser went to the form (its action's fragment).
			if top := evalJS[float64](b, `document.querySelector('#canned-new .flash').getBoundingClientRect().top`); top < 0 || top > 800 {
				b.fatalf("the message is at %v px, off screen", top)
			}
		}
		if got := adminCanned(t, acc.ID); len(got) != 2 {
			t.Fatalf("a refused reply was stored: %q", got)
		}
	})

	t.Run("edit and delete", func(t *testing.T) {
		b.adminSettings("canned")
		li := `#canned .savedreplies li:first-child`
		b.adminOpen(li + ` details`)
		const changed = "Hi {{firstName}}! We are open 9:00-18:00 Monday to Saturday, and 10:00-14:00 on Sundays."
		b.fill(li+` input[name=shortcut]`, "opening-hours")
		b.fill(li+` textarea[name=body]`, changed)
		if status := b.click(li + ` form:not(.deleteform) button[type=submit]`); status != http.StatusOK {
			b.fatalf("save: %d", status)
		}
		if flash := b.adminFlash("#canned"); flash != "Canned reply /opening-hours saved." {
			b.fatalf("the section says %q", flash)
		}
		if got := adminCanned(t, acc.ID); got["opening-hours"] != changed || len(got) != 2 {
			t.Fatalf("stored after the edit: %q", got)
		}
		// An edit to a taken shortcut: the message in that reply's form, open, with what was typed.
		b.adminOpen(li + ` details`)
		b.fill(li+` input[name=shortcut]`, "XSS")
		if status := b.click(li + ` form:not(.deleteform) button[type=submit]`); status != http.StatusUnprocessableEntity {
			b.fatalf("a taken shortcut: %d", status)
		}
		if !evalJS[bool](b, `document.querySelector('`+li+` details').open`) || b.adminValue(li+` input[name=shortcut]`) != "XSS" ||
			evalJS[string](b, `document.querySelector('`+li+` .flash.bad').textContent`) != "The shortcut /XSS is taken. Nothing was saved." {
			b.fatalf("the refused edit is not shown in its form")
		}
		// Delete, after the confirmation.
		b.adminSettings("canned")
		b.adminOpen(`#canned .savedreplies li:last-child details`)
		if status := b.click(`#canned .savedreplies li:last-child .deleteform button`); status != http.StatusOK {
			b.fatalf("delete: %d", status)
		}
		if d := dialogs(); len(d) != 1 || d[0] != "Delete the canned reply /xss?" {
			b.fatalf("confirmations: %q", d)
		}
		if got := adminCanned(t, acc.ID); len(got) != 1 || got["opening-hours"] != changed {
			t.Fatalf("stored after the delete: %q", got)
		}
	})

	t.Run("members manage them too; another account's are out of reach", func(t *testing.T) {
		member, _ := adminMember(t, srv, acc, "tiago.reis@northwind.example")
		if p := member.post("/inbox/settings", "/inbox/settings/canned", url.Values{"shortcut": {"thanks"}, "body": {"Thank you, {{firstName}}!"}}); p.Status != http.StatusSeeOther {
			t.Fatalf("a member's add: %d", p.Status)
		}
		rs, _ := env.Store.CannedReplies(t.Context(), acc.ID)
		var thanks *models.CannedReply
		for i := range rs {
			if rs[i].Shortcut == "thanks" {
				thanks = &rs[i]
			}
		}
		if thanks == nil {
			t.Fatalf("the member's reply is not stored: %+v", rs)
		}
		if p := member.post("/inbox/settings", "/inbox/settings/canned/"+thanks.ID+"/delete", nil); p.Status != http.StatusSeeOther {
			t.Fatalf("a member's delete: %d", p.Status)
		}
		other := adminAccount(t, "owner@other-shop.example", "Other shop")
		theirs, err := env.Store.SaveCannedReply(t.Context(), other.ID, "", "promo", "Secret promo text")
		if err != nil {
			t.Fatal(err)
		}
		member.post("/inbox/settings", "/inbox/settings/canned/"+theirs.ID, url.Values{"shortcut": {"promo"}, "body": {"Changed"}})
		member.post("/inbox/settings", "/inbox/settings/canned/"+theirs.ID+"/delete", nil)
		if got := adminCanned(t, other.ID); got["promo"] != "Secret promo text" {
			t.Fatalf("another account's reply after a member's crafted posts: %q", got)
		}
		if got := adminCanned(t, acc.ID); len(got) != 1 {
			t.Fatalf("the account's replies: %q", got)
		}
		if body := member.get("/inbox/settings").Body; strings.Contains(body, "Secret promo text") {
			t.Fatal("another account's reply is on the page")
		}
	})
}

// The credentials the channel tests save: every secret is unique, so that a page carrying one is
// caught.
const (
	adminSMSToken        = "twilio-auth-token-6c1f0e9d2b"
	adminMessengerToken  = "EAAGpage-access-token-7d21c9"
	adminMessengerSecret = "meta-app-secret-5b8e31"
	adminMessengerVerify = "northwind-verify-9f04"
	adminWhatsAppToken   = "EAAGwhatsapp-token-a41e77"
)

// adminIDs are the ids of an account's connections, each connected to one account at most: the
// Twilio account SID (with the number), the WhatsApp phone number id, the Facebook page id.
type adminIDs struct{ SID, PhoneNumberID, PageID string }

func adminChannelIDs() adminIDs {
	n := adminRun.Add(1)
	// Prefixes no other test of the package uses: a connection belongs to one account.
	return adminIDs{SID: fmt.Sprintf("AC5ef8732a3c49700934481addd5c%05d", n), PhoneNumberID: fmt.Sprintf("9290403522%05d", n),
		PageID: fmt.Sprintf("9190576%05d", n)}
}

func TestInboxAdminChannels(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := adminAccount(t, "ines.ferreira@northwind.example", "Northwind")
	ids := adminChannelIDs()
	b := acc.signedIn(t, srv)
	session := browserSessionCookie + "=" + b.cookie(browserSessionCookie)
	// rawSettings is the settings page's HTML as the server sends it.
	rawSettings := func() string {
		t.Helper()
		res, body := inboxRequest(t, "GET", srv.URL+"/inbox/settings", nil, session)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("settings: %d", res.StatusCode)
		}
		return body
	}
	noSecrets := func(what, html string, secrets ...string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(html, s) {
				t.Fatalf("%s carries the secret %q", what, s)
			}
		}
	}
	connect := func(kind string, values map[string]string) int64 {
		t.Helper()
		b.adminSettings("channel-" + kind)
		b.adminOpen("#channel-" + kind)
		for name, v := range values {
			b.fill(`#channel-`+kind+` input[name=`+name+`]`, v)
		}
		return b.click(`#channel-` + kind + ` form button[type=submit]`)
	}

	t.Run("the webhook addresses to paste at the providers", func(t *testing.T) {
		b.adminSettings("channels")
		for _, kind := range []string{"sms", "whatsapp", "messenger", "instagram"} {
			got := evalJS[string](b, `document.querySelector('#channel-`+kind+` .webhookurl code').textContent`)
			if want := srv.URL + "/v1/channels/" + kind + "/inbound"; got != want {
				b.fatalf("%s's webhook address reads %q, want %q", kind, got, want)
			}
			if state := evalJS[string](b, `document.querySelector('#channel-`+kind+` summary .pill').textContent`); state != "Not connected" {
				b.fatalf("%s reads %q before any save", kind, state)
			}
		}
	})

	t.Run("SMS: saved, shown as set, the secret never on the page, and kept when left empty", func(t *testing.T) {
		if status := connect("sms", map[string]string{"accountSid": ids.SID, "authToken": adminSMSToken, "from": "+1 415 555 0143"}); status != http.StatusOK {
			b.fatalf("connect SMS: %d", status)
		}
		if flash := b.adminFlash("#channel-sms"); !strings.HasPrefix(flash, "SMS connected.") {
			b.fatalf("the SMS block says %q", flash)
		}
		sms, err := env.Store.SMSSettings(t.Context(), acc.ID)
		if err != nil || *sms != (models.SMSSettings{AccountSID: ids.SID, AuthToken: adminSMSToken, From: "+14155550143"}) {
			t.Fatalf("stored: %+v %v", sms, err)
		}
		summary := evalJS[string](b, `document.querySelector('#channel-sms summary').innerText.replace(/\s+/g, ' ')`)
		if !strings.Contains(summary, "Connected") || !strings.Contains(summary, "+14155550143") {
			b.fatalf("the SMS summary reads %q", summary)
		}
		token := evalJS[[]string](b, `(i => [i.type, i.value, i.closest('label').querySelector('.pill').textContent])(document.querySelector('#channel-sms input[name=authToken]'))`)
		if !slices.Equal(token, []string{"password", "", "set"}) {
			b.fatalf("the auth token field: %q", token)
		}
		noSecrets("the settings page", rawSettings(), adminSMSToken)
		noSecrets("the page in the browser", evalJS[string](b, `document.documentElement.outerHTML`), adminSMSToken)

		// The address shown is the one Twilio's signature is checked against, with the token saved.
		inboundURL := evalJS[string](b, `document.querySelector('#channel-sms .webhookurl code').textContent`)
		inbound := url.Values{"MessageSid": {"SMadmin1"}, "AccountSid": {ids.SID}, "From": {"+14155550199"}, "To": {"+14155550143"}, "Body": {"Hi there"}}
		if r := do(t, "POST", inboundURL, "", inbound.Encode(), "Content-Type: application/x-www-form-urlencoded",
			"X-Twilio-Signature: "+twilioSign(adminSMSToken, inboundURL, inbound)); r.Status != http.StatusOK {
			t.Fatalf("a Twilio message at the address shown: %d %s", r.Status, r.Body)
		}

		// A new number, the token left empty: the saved token stays.
		if status := connect("sms", map[string]string{"accountSid": ids.SID, "from": "+1 415 555 0144"}); status != http.StatusOK {
			b.fatalf("save SMS: %d", status)
		}
		if flash := b.adminFlash("#channel-sms"); flash != "SMS settings saved." {
			b.fatalf("the SMS block says %q", flash)
		}
		if sms, err = env.Store.SMSSettings(t.Context(), acc.ID); err != nil || sms.AuthToken != adminSMSToken || sms.From != "+14155550144" {
			t.Fatalf("stored after a save without the token: %+v %v", sms, err)
		}
		// A bad number: the store's reason in the form's words, what was typed kept, nothing saved.
		if status := connect("sms", map[string]string{"accountSid": "ACother", "authToken": "typed-but-refused-token", "from": "555 0143"}); status != http.StatusUnprocessableEntity {
			b.fatalf("a bad number: %d, want 422", status)
		}
		msg := evalJS[string](b, `document.querySelector('#channel-sms .flash.bad').textContent`)
		if !strings.HasPrefix(msg, `Sender number "555 0143" has no country code`) || !strings.HasSuffix(msg, "Nothing was saved.") {
			b.fatalf("the SMS block says %q", msg)
		}
		if b.adminValue(`#channel-sms input[name=accountSid]`) != "ACother" || b.adminValue(`#channel-sms input[name=authToken]`) != "" {
			b.fatalf("the refused form does not keep what was typed, or carries the secret")
		}
		noSecrets("the refused form", evalJS[string](b, `document.documentElement.outerHTML`), "typed-but-refused-token", adminSMSToken)
		if sms, _ = env.Store.SMSSettings(t.Context(), acc.ID); sms.AccountSID != ids.SID || sms.From != "+14155550144" {
			t.Fatalf("a refused save changed the settings: %+v", sms)
		}
	})

	t.Run("Messenger: every field the first time; then saved, set, and the verify token works", func(t *testing.T) {
		if status := connect("messenger", map[string]string{"pageId": ids.PageID, "pageAccessToken": adminMessengerToken, "verifyToken": adminMessengerVerify}); status != http.StatusUnprocessableEntity {
			b.fatalf("without the app secret: %d, want 422", status)
		}
		msg := evalJS[string](b, `document.querySelector('#channel-messenger .flash.bad').textContent`)
		if !strings.HasPrefix(msg, "App secret is required.") || !strings.Contains(msg, "Every field is needed the first time") {
			b.fatalf("the Messenger block says %q", msg)
		}
		if b.adminValue(`#channel-messenger input[name=pageId]`) != ids.PageID {
			b.fatalf("the page id typed is gone")
		}
		noSecrets("the refused form", evalJS[string](b, `document.documentElement.outerHTML`), adminMessengerToken, adminMessengerVerify)
		if _, err := env.Store.MetaSettings(t.Context(), acc.ID, models.ChannelMessenger); models.ErrorCode(err) != models.CodeNotFound {
			t.Fatalf("a refused first save stored something: %v", err)
		}
		if status := connect("messenger", map[string]string{"pageId": ids.PageID, "pageAccessToken": adminMessengerToken, "appSecret": adminMessengerSecret,
			"verifyToken": adminMessengerVerify}); status != http.StatusOK {
			b.fatalf("connect Messenger: %d", status)
		}
		meta, err := env.Store.MetaSettings(t.Context(), acc.ID, models.ChannelMessenger)
		if err != nil || *meta != (models.MetaSettings{ID: ids.PageID, AccessToken: adminMessengerToken, AppSecret: adminMessengerSecret, VerifyToken: adminMessengerVerify}) {
			t.Fatalf("stored: %+v %v", meta, err)
		}
		if got := evalJS[[]string](b, `[...document.querySelectorAll('#channel-messenger label .pill')].map(p => p.textContent)`); !slices.Equal(got, []string{"set", "set", "set"}) {
			b.fatalf("the Messenger secrets read %q", got)
		}
		noSecrets("the settings page", rawSettings(), adminSMSToken, adminMessengerToken, adminMessengerSecret, adminMessengerVerify)
		// Meta's check of the address shown, with the verify token saved.
		check := evalJS[string](b, `document.querySelector('#channel-messenger .webhookurl code').textContent`) +
			"?hub.mode=subscribe&hub.verify_token=" + adminMessengerVerify + "&hub.challenge=1158201444"
		if r := do(t, "GET", check, "", nil); r.Status != http.StatusOK || string(r.Body) != "1158201444" {
			t.Fatalf("Meta's check at the address shown: %d %s", r.Status, r.Body)
		}
	})

	t.Run("WhatsApp without its optional secrets, Instagram with a bad id", func(t *testing.T) {
		if status := connect("whatsapp", map[string]string{"phoneNumberId": ids.PhoneNumberID, "accessToken": adminWhatsAppToken}); status != http.StatusOK {
			b.fatalf("connect WhatsApp: %d", status)
		}
		wa, err := env.Store.WhatsAppSettings(t.Context(), acc.ID)
		if err != nil || wa.PhoneNumberID != ids.PhoneNumberID || wa.AccessToken != adminWhatsAppToken || wa.AppSecret != "" {
			t.Fatalf("stored: %+v %v", wa, err)
		}
		if got := evalJS[[]string](b, `[...document.querySelectorAll('#channel-whatsapp label .pill')].map(p => p.textContent)`); !slices.Equal(got, []string{"set", "not set", "not set"}) {
			b.fatalf("the WhatsApp secrets read %q", got)
		}
		if status := connect("instagram", map[string]string{"accountId": "northwind.shoes", "accessToken": "x", "appSecret": "y", "verifyToken": "z"}); status != http.StatusUnprocessableEntity {
			b.fatalf("a bad Instagram id: %d", status)
		}
		if msg := evalJS[string](b, `document.querySelector('#channel-instagram .flash.bad').textContent`); msg != "Instagram account ID must be the numeric id Meta shows for it. Nothing was saved." {
			b.fatalf("the Instagram block says %q", msg)
		}
		noSecrets("the settings page", rawSettings(), adminWhatsAppToken)
	})

	t.Run("a member sees the state, not the forms or the secrets", func(t *testing.T) {
		member, _ := adminMember(t, srv, acc, "tiago.reis@northwind.example")
		page := member.get("/inbox/settings")
		section := html.UnescapeString(sectionOf(t, page.Body, "channels"))
		if strings.Contains(section, `action="/inbox/settings/channels/`) || !strings.Contains(section, "Only the account's owners can change these settings.") ||
			!strings.Contains(section, "+14155550144") || strings.Count(section, `<span class="pill on">Connected</span>`) != 3 {
			t.Fatalf("a member's channels section:\n%s", section)
		}
		noSecrets("a member's settings page", page.Body, adminSMSToken, adminMessengerToken, adminMessengerSecret, adminMessengerVerify, adminWhatsAppToken)
	})
}

// TestInboxAdminOwnerOnlyRoutes: every route that only owners may use refuses a member's request made
// by hand (the member has a session and the CSRF token, not the right), with 403, and changes nothing.
func TestInboxAdminOwnerOnlyRoutes(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	acc := adminAccount(t, "ines.ferreira@northwind.example", "Northwind")
	ids := adminChannelIDs()
	r := do(t, "PUT", srv.URL+"/v1/settings/channels/sms", acc.key, map[string]any{"accountSid": ids.SID, "authToken": adminSMSToken, "from": "+14155550143"})
	expect(t, r, http.StatusOK, "")
	r = do(t, "PUT", srv.URL+"/v1/settings/webhook", acc.key, map[string]any{"url": srv.URL + "/hook"})
	expect(t, r, http.StatusOK, "")
	signingSecret := r.JSON(t)["signingSecret"].(string)
	member, memberUser := adminMember(t, srv, acc, "tiago.reis@northwind.example")
	tz := "Europe/Lisbon"
	if _, err := env.Store.UpdateComplianceSettings(t.Context(), acc.ID, models.ComplianceInput{TimeZone: &tz}); err != nil {
		t.Fatal(err)
	}
	users := func() []string {
		us, err := env.Store.Users(t.Context(), acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(us))
		for i, u := range us {
			out[i] = u.Email + " " + u.Role
		}
		return out
	}
	before := users()

	for _, c := range []struct {
		action string
		form   url.Values
	}{
		{"/inbox/settings/api-key", nil},
		{"/inbox/settings/team", url.Values{"email": {"intruder@example.com"}, "role": {"owner"}}},
		{"/inbox/settings/team/" + acc.OwnerUserID + "/remove", nil},
		{"/inbox/settings/compliance", url.Values{"timeZone": {"UTC"}, "noQuietHours": {"true"}}},
		{"/inbox/settings/channels/sms", url.Values{"accountSid": {"ACintruder"}, "authToken": {"intruder"}, "from": {"+14155550100"}}},
		{"/inbox/settings/channels/whatsapp", url.Values{"phoneNumberId": {"1"}, "accessToken": {"intruder"}}},
		{"/inbox/settings/channels/messenger", url.Values{"pageId": {"1"}, "pageAccessToken": {"a"}, "appSecret": {"b"}, "verifyToken": {"c"}}},
		{"/inbox/settings/channels/instagram", url.Values{"accountId": {"1"}, "accessToken": {"a"}, "appSecret": {"b"}, "verifyToken": {"c"}}},
	} {
		p := member.post("/inbox/settings", c.action, c.form)
		if p.Status != http.StatusForbidden || !strings.Contains(html.UnescapeString(p.Body), "Only the account's owners") {
			t.Errorf("a member's POST %s: %d, want 403", c.action, p.Status)
		}
	}
	expect(t, do(t, "GET", srv.URL+"/v1/credits", acc.key, nil), http.StatusOK, "") // the key was not replaced
	if got := users(); !slices.Equal(got, before) {
		t.Fatalf("the team changed: %q, was %q", got, before)
	}
	if cs, err := env.Store.ComplianceSettings(t.Context(), acc.ID); err != nil || cs.TimeZone != tz {
		t.Fatalf("the compliance settings changed: %+v %v", cs, err)
	}
	if sms, err := env.Store.SMSSettings(t.Context(), acc.ID); err != nil || sms.AccountSID != ids.SID || sms.AuthToken != adminSMSToken {
		t.Fatalf("the SMS settings changed: %+v %v", sms, err)
	}
	for _, kind := range []string{models.ChannelWhatsApp} {
		if _, err := env.Store.WhatsAppSettings(t.Context(), acc.ID); models.ErrorCode(err) != models.CodeNotFound {
			t.Fatalf("%s settings stored by a member: %v", kind, err)
		}
	}
	for _, kind := range []string{models.ChannelMessenger, models.ChannelInstagram} {
		if _, err := env.Store.MetaSettings(t.Context(), acc.ID, kind); models.ErrorCode(err) != models.CodeNotFound {
			t.Fatalf("%s settings stored by a member: %v", kind, err)
		}
	}
	if !adminAvailable(t, acc.ID, memberUser.ID) {
		t.Fatal("the member's availability changed")
	}
	// Nor does the member's page carry what only owners see.
	page := member.get("/inbox/settings").Body
	for _, s := range []string{signingSecret, adminSMSToken, `action="/inbox/settings/api-key"`, `action="/inbox/settings/team"`, `action="/inbox/settings/channels/`} {
		if strings.Contains(page, s) {
			t.Fatalf("a member's settings page carries %q", s)
		}
	}
	// The owner, with the same requests, may.
	owner := adminOwnerClient(t, srv, acc)
	if p := owner.post("/inbox/settings", "/inbox/settings/channels/whatsapp", url.Values{"phoneNumberId": {ids.PhoneNumberID}, "accessToken": {adminWhatsAppToken}}); p.Status != http.StatusSeeOther {
		t.Fatalf("the owner's WhatsApp save: %d", p.Status)
	}
	if p := owner.post("/inbox/settings", "/inbox/settings/channels/telegram", url.Values{"token": {"x"}}); p.Status != http.StatusNotFound {
		t.Fatalf("an unknown channel: %d, want 404", p.Status)
	}
	// Without the CSRF token, nobody may.
	session := browserSessionCookie + "=" + owner.cookie(browserSessionCookie).Value
	for _, action := range []string{"/inbox/settings/canned", "/inbox/settings/availability", "/inbox/settings/channels/sms",
		"/inbox/deliveries/retry-all", "/inbox/campaigns/new"} {
		if res, _ := inboxRequest(t, "POST", srv.URL+action, url.Values{"shortcut": {"x"}, "body": {"y"}, "available": {"false"}}, session); res.StatusCode != http.StatusForbidden {
			t.Fatalf("POST %s without the CSRF token: %d, want 403", action, res.StatusCode)
		}
	}
	if got := adminCanned(t, acc.ID); len(got) != 0 || !adminAvailable(t, acc.ID, acc.OwnerUserID) {
		t.Fatalf("a form without its CSRF token changed something: %q", got)
	}
	// The new pages answer HEAD, as every page does, and send a signed-out browser to the sign-in form.
	for _, page := range []string{"/inbox/deliveries", "/inbox/campaigns/new", "/inbox/settings"} {
		if res, body := inboxRequest(t, "HEAD", srv.URL+page, nil, session); res.StatusCode != http.StatusOK || body != "" {
			t.Fatalf("HEAD %s: %d", page, res.StatusCode)
		}
		if res, _ := inboxRequest(t, "GET", srv.URL+page, nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("GET %s signed out: %d, want 303", page, res.StatusCode)
		}
	}
}

// TestInboxAdminSettingsLayout looks at a set-up account's settings at laptop and phone size, with
// and without script: nothing makes the page scroll sideways, and the forms work without script.
// With INBOX_SCREENSHOTS set to a directory it saves settings-laptop.png there.
func TestInboxAdminSettingsLayout(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	acc := adminAccount(t, "maria.santos@northwind.example", "Northwind")
	ids := adminChannelIDs()
	ctx := t.Context()
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", acc.key, map[string]any{"url": "https://hooks.northwind.example/funnelchat"}), http.StatusOK, "")
	resume := 120
	esc := 30
	msg := "Thanks! Someone from the Northwind team will answer you here shortly."
	active, goal, instr := true, "Book a free fitting at your nearest store", "You answer for Northwind, a shoe shop in Lisbon and Porto.\nBe brief and friendly."
	if _, err := env.Store.UpdateBotSettings(ctx, acc.ID, models.BotSettingsInput{Active: &active, Goal: &goal, Instructions: &instr,
		HandoffMessage: &msg, HandoffEscalationMinutes: &esc, SetBotResume: true, BotResumeMinutes: &resume}); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]string{
		{"hours", "Hi {{firstName}}, we are open from 9:00 to 18:00, Monday to Saturday."},
		{"fitting", "You can book a free fitting at any of our stores: just tell me the day and time that suit you, {{firstName}}."},
		{"returns", "Returns are free within 30 days: bring the shoes to any store, or use the label in your parcel."},
	} {
		if _, err := env.Store.SaveCannedReply(ctx, acc.ID, "", r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Store.SetSMSSettings(ctx, acc.ID, models.SMSSettings{AccountSID: ids.SID, AuthToken: adminSMSToken, From: "+14155550143"}); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.SetMetaSettings(ctx, acc.ID, models.ChannelMessenger, models.MetaSettings{ID: ids.PageID, AccessToken: adminMessengerToken,
		AppSecret: adminMessengerSecret, VerifyToken: adminMessengerVerify}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.AddUser(ctx, acc.ID, adminEmail("tiago.reis@northwind.example"), models.RoleMember); err != nil {
		t.Fatal(err)
	}

	browser := startChromium(t)
	b := openInbox(t, browser, srv)
	b.use(laptopSize)
	b.signIn(acc.Email, inboxPassword)
	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		b.adminSettings("availability")
		// Open a connected channel's block, as an owner checking it would.
		b.adminOpen("#channel-sms")
		b.nothingWider("the settings on a " + v.name)
		b.adminOpen("#canned .savedreplies li details")
		b.adminOpen("#channel-messenger")
		b.nothingWider("the settings with the forms open on a " + v.name)
		if size := evalJS[float64](b, `Math.min(...[...document.querySelectorAll('#channels label, #canned summary, .hint, .toc a')].map(e => parseFloat(getComputedStyle(e).fontSize)))`); size < 12 {
			b.fatalf("text of %v px on a %s", size, v.name)
		}
		if !v.mobile {
			b.open("/inbox/settings")
			b.adminOpen("#channel-sms")
			b.saveScreenshot("settings-laptop.png", true, 6000)
		}
	}

	t.Run("without JavaScript", func(t *testing.T) {
		noJS := openInbox(t, browser, srv) // the same browser context: signed in
		noJS.use(phoneSize)
		if _, err := chromedp.Call(noJS.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatal(err)
		}
		noJS.adminSettings("availability")
		if status := noJS.click(`#availability button[type=submit]`); status != http.StatusOK || adminAvailable(t, acc.ID, acc.OwnerUserID) {
			noJS.fatalf("Away without script: %d", status)
		}
		noJS.adminSettings("canned")
		noJS.fill(`#canned-new input[name=shortcut]`, "directions")
		noJS.fill(`#canned-new textarea[name=body]`, "Our Lisbon store is at Rua Augusta 120, next to the arch.")
		if status := noJS.click(`#canned-new button[type=submit]`); status != http.StatusOK || adminCanned(t, acc.ID)["directions"] == "" {
			noJS.fatalf("adding a canned reply without script: %d", status)
		}
		// Delete has no confirmation without script: the form posts at once.
		noJS.adminOpen(`#canned li:first-child details`)
		if status := noJS.click(`#canned li:first-child .deleteform button`); status != http.StatusOK || adminCanned(t, acc.ID)["directions"] != "" {
			noJS.fatalf("deleting without script: %d", status)
		}
		noJS.nothingWider("the settings without script on a phone")
	})
}

// adminButtonNames returns the accessible name of every button the tab's page has, as a screen reader
// would announce it.
func (b *inboxTab) adminButtonNames() []string {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		b.fatalf("the accessibility tree: %v", err)
	}
	var names []string
	for _, n := range res.Nodes {
		if n.Ignored || n.Role == nil || n.Name == nil {
			continue
		}
		var role, name string
		if json.Unmarshal(n.Role.Value, &role) != nil || role != "button" {
			continue
		}
		_ = json.Unmarshal(n.Name.Value, &name)
		names = append(names, name)
	}
	return names
}
