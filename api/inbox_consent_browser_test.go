package api_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"funnelchat/models"
)

// Consent and compliance in the inbox, in a real browser: the conversation's consent per channel, the
// form that records it by hand, the notice that replaces the reply box for a contact who opted out,
// their live updates, and the compliance section of the settings.

// setConsent records consent for the contact through the store, as the API or a keyword would.
func setConsent(t *testing.T, acc browserAccount, contactID string, in models.ConsentInput) {
	t.Helper()
	if err := in.Normalize("", models.ConsentSourceAPI); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.SetConsent(t.Context(), acc.ID, contactID, in); err != nil {
		t.Fatal(err)
	}
}

// consentEvents returns the contact's consent ledger, oldest first.
func consentEvents(t *testing.T, acc browserAccount, contactID string) []*models.ConsentEvent {
	t.Helper()
	cc, err := env.Store.ConsentOf(t.Context(), acc.ID, contactID)
	if err != nil {
		t.Fatal(err)
	}
	return cc.Events
}

// consentRowText is the text of the consent section's row for channel ("" when it has none).
func (b *inboxTab) consentRowText(channel string) string {
	b.t.Helper()
	return evalJS[string](b, `(e => e ? e.textContent.replace(/\s+/g, ' ').trim() : '')(document.querySelector('#consent li[data-channel="`+channel+`"]'))`)
}

// consentHistory is the text of each entry of the consent section's history, in the page's order.
func (b *inboxTab) consentHistory() []string {
	b.t.Helper()
	return evalJS[[]string](b, `[...document.querySelectorAll('#consent .consentevent')].map(e => e.textContent.replace(/\s+/g, ' ').trim())`)
}

// recordConsent fills the conversation's form to record consent and submits it.
func (b *inboxTab) recordConsent(channel, status, note string) int64 {
	b.t.Helper()
	// Open, and in the middle of the screen: the reply zone at the bottom stays over what scrolls
	// under it.
	evalJS[bool](b, `document.querySelector('#consent details').open = true, document.querySelector('#consent form').scrollIntoView({block: 'center'}), true`)
	if !evalJS[bool](b, `(s => (s.value = '`+channel+`', s.value === '`+channel+`'))(document.querySelector('#consent select[name=channel]'))`) {
		b.fatalf("the form offers no channel %s", channel)
	}
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(`#consent input[name=status][value=`+status+`]`))); err != nil {
		b.fatalf("choose %s: %v", status, err)
	}
	b.fill(`#consent textarea[name=note]`, note)
	return b.click(`#consent form button[type=submit]`)
}

// replyState tells what the reply zone shows: "box" (the reply form), "opted-out" (the notice) or
// "other".
func (b *inboxTab) replyState() string {
	b.t.Helper()
	return evalJS[string](b, `document.querySelector('#reply textarea') ? 'box' : document.querySelector('#reply.optedout') ? 'opted-out' : 'other'`)
}

func TestInboxBrowserConsent(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	acc.botOff(t, srv)
	_, contactID := acc.say(t, srv, "consent-1", "rita-web", "Rita", "Gomes", "Hello! Can you tell me about the spring sale?")
	setConsent(t, acc, contactID, models.ConsentInput{Channel: "sms", Status: models.ConsentOptedIn,
		Source: "landing-page form", Text: "Ticked the box on the spring sign-up form"})

	b := acc.openConversation(t, srv, contactID)

	t.Run("the consent section shows a state recorded through the store", func(t *testing.T) {
		row := b.consentRowText("sms")
		for _, want := range []string{"sms", "Opted in", "since", "landing-page form", "Ticked the box on the spring sign-up form"} {
			if !strings.Contains(row, want) {
				b.fatalf("the sms row reads %q, want it to contain %q", row, want)
			}
		}
		if got := b.replyState(); got != "box" {
			b.fatalf("the reply zone shows %s for a contact who did not opt out on live-chat, want the reply box", got)
		}
		// The channels the form offers: every channel, the reply's (chosen), and the one with a state.
		options := evalJS[[]string](b, `[...document.querySelectorAll('#consent select[name=channel] option')].map(o => o.value + (o.selected ? '*' : ''))`)
		if strings.Join(options, " ") != "* live-chat* sms" {
			b.fatalf("the form's channels are %q, want All channels, live-chat (chosen) and sms", options)
		}
	})

	t.Run("a reply box the server renders the same is left alone", func(t *testing.T) {
		b.waitLive()
		evalJS[bool](b, `document.querySelector('#reply').__kept = 1, document.querySelector('#consent li').__kept = 1, true`)
		// A new message refreshes the messages and the live parts; neither part changed.
		acc.say(t, srv, "consent-2", "rita-web", "", "", "Also, do you have the sale in the Porto store?")
		b.waitFor(liveWait, "the new message", `document.querySelectorAll('.msg.incoming').length === 2`)
		// The parts' answer follows the messages' closely; give it time to land.
		time.Sleep(500 * time.Millisecond)
		if !evalJS[bool](b, `document.querySelector('#reply').__kept === 1 && document.querySelector('#consent li').__kept === 1`) {
			b.fatalf("an unchanged live part was replaced")
		}
	})

	t.Run("an opt-out recorded elsewhere replaces the reply box live", func(t *testing.T) {
		b.waitLive()
		b.mark()
		setConsent(t, acc, contactID, models.ConsentInput{Channel: models.ConsentAllChannels, Status: models.ConsentOptedOut,
			Source: models.ConsentSourceKeyword, Text: "STOP"})
		b.waitFor(liveWait, "the opted-out notice", `!!document.querySelector('#reply.optedout') && !document.querySelector('#reply textarea')`)
		b.stillSamePage()
		notice := evalJS[string](b, `document.querySelector('#reply').textContent.replace(/\s+/g, ' ')`)
		if !strings.Contains(notice, "Opted out on live-chat (since ") || !strings.Contains(notice, "all channels") {
			b.fatalf("the notice reads %q", notice)
		}
		if row := b.consentRowText("*"); !strings.Contains(row, "All channels") || !strings.Contains(row, "Opted out") || !strings.Contains(row, "keyword") {
			b.fatalf("the all-channels row reads %q", row)
		}
		// Consent for every channel replaces each channel's own.
		if row := b.consentRowText("sms"); row != "" {
			b.fatalf("the sms row is still shown after an opt-out on all channels: %q", row)
		}
	})

	t.Run("recording consent by hand", func(t *testing.T) {
		const note = "Called us on 3 May and asked to get the offers again"
		before := len(consentEvents(t, acc, contactID))
		if status := b.recordConsent("live-chat", models.ConsentOptedIn, note); status != http.StatusOK {
			b.fatalf("recording consent landed on a %d page", status)
		}
		if p := b.path(); p != "/inbox/conversations/"+contactID {
			b.fatalf("recording consent went to %s", p)
		}
		flash := evalJS[string](b, `(document.querySelector('#consent .flash.ok') || {}).textContent || ''`)
		if flash != "Recorded: opted in on live-chat." {
			b.fatalf("the consent section says %q after recording", flash)
		}
		row := b.consentRowText("live-chat")
		for _, want := range []string{"live-chat", "Opted in", "inbox", note} {
			if !strings.Contains(row, want) {
				b.fatalf("the live-chat row reads %q, want it to contain %q", row, want)
			}
		}
		if got := b.replyState(); got != "box" {
			b.fatalf("the reply zone shows %s after opting in on live-chat, want the reply box", got)
		}
		events := consentEvents(t, acc, contactID)
		if len(events) != before+1 {
			t.Fatalf("%d events after recording, want %d", len(events), before+1)
		}
		e := events[len(events)-1]
		if e.Channel != "live-chat" || e.Status != models.ConsentOptedIn || e.Source != models.ConsentSourceInbox || e.Text != note ||
			e.UserID == nil || *e.UserID != acc.OwnerUserID || e.RecordedBy == nil || e.RecordedBy.Email != acc.Email {
			t.Fatalf("the recorded event: %+v (user %v, recorded by %+v)", e, e.UserID, e.RecordedBy)
		}
		// The history lists it first, with the user's email; the keyword's opt-out, recorded before, next.
		history := b.consentHistory()
		if len(history) < 2 {
			b.fatalf("the history lists %q", history)
		}
		for _, want := range []string{"Opted in", "live-chat", "inbox", "by " + acc.Email, note} {
			if !strings.Contains(history[0], want) {
				b.fatalf("the history's newest entry reads %q, want it to contain %q", history[0], want)
			}
		}
		if !strings.Contains(history[1], "Opted out") || !strings.Contains(history[1], "keyword") || strings.Contains(history[1], "by ") {
			b.fatalf("the history's second entry reads %q, want the keyword's opt-out, by no one", history[1])
		}

		// Opting out by hand: the reply box gives way to the notice.
		if status := b.recordConsent("live-chat", models.ConsentOptedOut, "Asked on the phone to stop the chat messages"); status != http.StatusOK {
			b.fatalf("recording the opt-out landed on a %d page", status)
		}
		if got := b.replyState(); got != "opted-out" {
			b.fatalf("the reply zone shows %s after opting out on live-chat, want the notice", got)
		}
		if notice := evalJS[string](b, `document.querySelector('#reply').textContent`); !strings.Contains(notice, "Opted out on live-chat (since ") {
			b.fatalf("the notice reads %q", notice)
		}
	})

	t.Run("an empty note is refused and nothing is recorded", func(t *testing.T) {
		before := len(consentEvents(t, acc, contactID))
		// Spaces pass the browser's required check; the server refuses them.
		if status := b.recordConsent("live-chat", models.ConsentOptedIn, "   "); status != http.StatusOK {
			b.fatalf("the form with an empty note landed on a %d page", status)
		}
		flash := evalJS[string](b, `(document.querySelector('#consent .flash.bad') || {}).textContent || ''`)
		if !strings.Contains(flash, "the note is required") || !strings.Contains(flash, "Nothing was recorded") {
			b.fatalf("the consent section says %q after an empty note", flash)
		}
		if !evalJS[bool](b, `document.querySelector('#consent details').open`) {
			b.fatalf("the form is closed after its error")
		}
		if n := len(consentEvents(t, acc, contactID)); n != before {
			t.Fatalf("%d events after an empty note, want %d", n, before)
		}
		if got := b.replyState(); got != "opted-out" {
			b.fatalf("the refused opt-in changed the reply zone to %s", got)
		}

		// Over HTTP: no note at all, and no status.
		session := browserSessionCookie + "=" + b.cookie(browserSessionCookie)
		token := evalJS[string](b, `document.querySelector('#consent input[name=csrf_token]').value`)
		action := srv.URL + "/inbox/conversations/" + contactID + "/consent"
		for name, form := range map[string]url.Values{
			"no note":   {"channel": {"live-chat"}, "status": {"opted_in"}},
			"no status": {"channel": {"live-chat"}, "note": {"a note"}},
		} {
			form.Set("csrf_token", token)
			if res, _ := inboxRequest(t, "POST", action, form, session); res.StatusCode != http.StatusSeeOther {
				t.Errorf("%s: %d, want 303", name, res.StatusCode)
			}
		}
		if n := len(consentEvents(t, acc, contactID)); n != before {
			t.Fatalf("%d events after refused forms, want %d", n, before)
		}
	})

	t.Run("a note is text, never markup", func(t *testing.T) {
		const script = `<script>window.__xss=1</script><img src=x onerror="window.__xss=2">`
		if status := b.recordConsent("sms", models.ConsentOptedOut, script); status != http.StatusOK {
			b.fatalf("recording consent landed on a %d page", status)
		}
		noMarkup := func(where string) {
			t.Helper()
			if got := evalJS[string](b, `String(window.__xss)`); got != "undefined" {
				b.fatalf("%s: a note ran as script: window.__xss = %s", where, got)
			}
			if n := evalJS[int](b, `document.querySelectorAll('main script, img[src="x"], img[onerror]').length`); n != 0 {
				b.fatalf("%s: %d elements made from a note", where, n)
			}
			if got := evalJS[string](b, `(document.querySelector('#consent li[data-channel="sms"] .consentnote') || {}).textContent || ''`); got != script {
				b.fatalf("%s: the note reads %q, want the text %q", where, got, script)
			}
		}
		noMarkup("the page")

		// And when the section is updated live.
		b.waitLive()
		b.mark()
		setConsent(t, acc, contactID, models.ConsentInput{Channel: "sms", Status: models.ConsentOptedOut, Source: "import", Text: script + " again"})
		b.waitFor(liveWait, "the sms row's new note", `document.querySelector('#consent li[data-channel="sms"]').textContent.includes('import')`)
		b.stillSamePage()
		if got := evalJS[string](b, `String(window.__xss)`); got != "undefined" {
			b.fatalf("a note updated live ran as script: window.__xss = %s", got)
		}
		if got := evalJS[string](b, `document.querySelector('#consent li[data-channel="sms"] .consentnote').textContent`); got != script+" again" {
			b.fatalf("the note updated live reads %q", got)
		}
	})

	t.Run("an opt-in recorded elsewhere brings the reply box back live", func(t *testing.T) {
		b.open("/inbox/conversations/" + contactID)
		b.waitLive()
		b.mark()
		setConsent(t, acc, contactID, models.ConsentInput{Channel: "live-chat", Status: models.ConsentOptedIn, Source: models.ConsentSourceKeyword, Text: "START"})
		b.waitFor(liveWait, "the reply box", `!!document.querySelector('#reply textarea')`)
		b.stillSamePage()
	})
}

// TestInboxBrowserConsentKeyword: a contact who writes STOP while the conversation is open is shown
// opted out at once, with the service's confirmation named as an auto-reply, here and in the list.
func TestInboxBrowserConsentKeyword(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	acc.botOff(t, srv)
	_, contactID := acc.say(t, srv, "kw-1", "omar-web", "Omar", "Haddad", "Hi, what time do you open on Sunday?")
	b := acc.openConversation(t, srv, contactID)
	if got := b.replyState(); got != "box" {
		b.fatalf("the reply zone shows %s before STOP, want the reply box", got)
	}
	b.waitLive()
	b.mark()
	acc.say(t, srv, "kw-2", "omar-web", "", "", "STOP")
	b.waitFor(liveWait, "the opted-out notice", `!!document.querySelector('#reply.optedout') && !document.querySelector('#reply textarea')`)
	b.waitFor(liveWait, "the confirmation", `!!document.querySelector('.msg.outgoing.by-system')`)
	b.stillSamePage()
	if row := b.consentRowText("live-chat"); !strings.Contains(row, "Opted out") || !strings.Contains(row, models.ConsentSourceKeyword) {
		b.fatalf("the live-chat row reads %q", row)
	}
	if got := evalJS[string](b, `document.querySelector('.msg.by-system .meta .author').textContent`); got != "Auto-reply" {
		b.fatalf("the confirmation's author reads %q, want Auto-reply", got)
	}
	if status := b.open("/inbox/"); status != http.StatusOK {
		b.fatalf("list page: %d", status)
	}
	if got := evalJS[string](b, `document.querySelector('.conv .preview').textContent`); !strings.HasPrefix(got, "Auto-reply: ") {
		b.fatalf("the list previews %q, want the auto-reply named", got)
	}
}

func TestInboxBrowserComplianceSettings(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	b := acc.signedIn(t, srv)
	if status := b.open("/inbox/settings"); status != http.StatusOK {
		b.fatalf("settings page: %d", status)
	}
	sectionText := func() string {
		t.Helper()
		return evalJS[string](b, `document.getElementById('compliance').textContent.replace(/\s+/g, ' ')`)
	}
	if !evalJS[bool](b, `!!document.querySelector('#compliance form[action^="/inbox/settings/compliance"]')`) {
		b.fatalf("the owner's settings have no compliance form:\n%s", sectionText())
	}
	// save presses Save: a saved form goes back to the settings page (303), a refused one is shown
	// again as typed with what to fix (422).
	save := func(refused bool) {
		t.Helper()
		want, path := http.StatusOK, "/inbox/settings"
		if refused {
			want, path = http.StatusUnprocessableEntity, "/inbox/settings/compliance"
		}
		if status := b.click(`#compliance button[type=submit]`); status != int64(want) {
			b.fatalf("saving the compliance settings landed on a %d page, want %d", status, want)
		}
		if p := b.path(); p != path {
			b.fatalf("saving went to %s, want %s", p, path)
		}
	}
	setQuiet := func(none bool) {
		t.Helper()
		evalJS[bool](b, `(c => (c.checked = `+map[bool]string{true: "true", false: "false"}[none]+`, true))(document.querySelector('#compliance input[name=noQuietHours]'))`)
	}

	t.Run("saving", func(t *testing.T) {
		b.fill(`#compliance input[name=optOutKeywords]`, "Stopp, arret  basta")
		b.fill(`#compliance input[name=optInKeywords]`, "jaja")
		b.fill(`#compliance textarea[name=helpText]`, "Northwind shoes: write to us here. Reply STOP to opt out.")
		setQuiet(false)
		b.fill(`#compliance input[name=quietStart]`, "22:00")
		b.fill(`#compliance input[name=quietEnd]`, "07:30")
		b.fill(`#compliance input[name=timeZone]`, "Europe/Lisbon")
		save(false)
		if flash := evalJS[string](b, `(document.querySelector('#compliance .flash.ok') || {}).textContent || ''`); flash != "Compliance settings saved." {
			b.fatalf("the compliance section says %q after saving:\n%s", flash, sectionText())
		}
		cs, err := env.Store.ComplianceSettings(t.Context(), acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(cs.OptOutKeywords, ",") != "stopp,arret,basta" || strings.Join(cs.OptInKeywords, ",") != "jaja" ||
			cs.HelpText != "Northwind shoes: write to us here. Reply STOP to opt out." ||
			cs.QuietHours == nil || *cs.QuietHours != (models.QuietHours{Start: "22:00", End: "07:30"}) || cs.TimeZone != "Europe/Lisbon" {
			t.Fatalf("the saved settings: %+v (quiet hours %v)", cs, cs.QuietHours)
		}
		// The page shows what was saved.
		got := evalJS[[]string](b, `['optOutKeywords', 'quietStart', 'quietEnd', 'timeZone'].map(n => document.querySelector('#compliance [name=' + n + ']').value)`)
		if strings.Join(got, "|") != "stopp, arret, basta|22:00|07:30|Europe/Lisbon" {
			b.fatalf("the form shows %q after saving", got)
		}
	})

	t.Run("a bad time is refused and nothing is saved", func(t *testing.T) {
		b.fill(`#compliance input[name=quietStart]`, "25:00")
		b.fill(`#compliance input[name=timeZone]`, "America/New_York")
		save(true)
		flash := evalJS[string](b, `(document.querySelector('#compliance .flash.bad') || {}).textContent || ''`)
		if !strings.Contains(flash, `"25:00" is not a time of day`) || !strings.Contains(flash, "Nothing was saved") {
			b.fatalf("the compliance section says %q after 25:00:\n%s", flash, sectionText())
		}
		// What was typed is in the form again, to be fixed rather than typed anew.
		if got := evalJS[[]string](b, `['quietStart', 'timeZone'].map(n => document.querySelector('#compliance [name=' + n + ']').value)`); strings.Join(got, "|") != "25:00|America/New_York" {
			b.fatalf("the refused form shows %q", got)
		}
		cs, err := env.Store.ComplianceSettings(t.Context(), acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cs.QuietHours == nil || cs.QuietHours.Start != "22:00" || cs.TimeZone != "Europe/Lisbon" {
			t.Fatalf("a refused form changed the settings: %+v (quiet hours %v)", cs, cs.QuietHours)
		}
	})

	t.Run("field errors are named as the form names them", func(t *testing.T) {
		for _, c := range []struct{ field, value, want string }{
			{`input[name=timeZone]`, "Mars/Olympus", "Time zone must be an IANA time zone"},
			{`input[name=optOutKeywords]`, "stop2", `Opt-out keywords: "stop2" must be 1-20 letters`},
		} {
			b.open("/inbox/settings")
			b.fill(`#compliance `+c.field, c.value)
			save(true)
			if errs := evalJS[[]string](b, `[...document.querySelectorAll('#compliance .formerrors li')].map(li => li.textContent)`); len(errs) != 1 || !strings.HasPrefix(errs[0], c.want) {
				b.fatalf("%s %q: the section lists %q, want %q", c.field, c.value, errs, c.want)
			}
		}
	})

	t.Run("no quiet hours", func(t *testing.T) {
		b.open("/inbox/settings")
		setQuiet(true)
		save(false)
		cs, err := env.Store.ComplianceSettings(t.Context(), acc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if cs.QuietHours != nil {
			t.Fatalf("quiet hours %v after ticking No quiet hours", cs.QuietHours)
		}
		if !evalJS[bool](b, `document.querySelector('#compliance input[name=noQuietHours]').checked`) {
			b.fatalf("No quiet hours is not ticked after saving it")
		}
	})

	t.Run("members see the settings and cannot save them", func(t *testing.T) {
		email := "member." + acc.ID + "@example.com"
		added, err := env.Store.AddUser(t.Context(), acc.ID, email, models.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		member := newBrowserClient(t, srv)
		if p := member.signIn(email, added.Password); p.Status != http.StatusSeeOther {
			t.Fatalf("member sign-in: %d", p.Status)
		}
		page := member.get("/inbox/settings")
		section := sectionOf(t, page.Body, "compliance")
		if strings.Contains(section, `action="/inbox/settings/compliance`) || !strings.Contains(section, "Europe/Lisbon") ||
			!strings.Contains(section, "Only the account's owners can change these settings.") {
			t.Fatalf("a member's compliance section:\n%s", section)
		}
		if p := member.post("/inbox/settings", "/inbox/settings/compliance", url.Values{"timeZone": {"UTC"}}); p.Status != http.StatusForbidden {
			t.Fatalf("a member saving the compliance settings: %d, want 403", p.Status)
		}
		if cs, err := env.Store.ComplianceSettings(t.Context(), acc.ID); err != nil || cs.TimeZone != "Europe/Lisbon" {
			t.Fatalf("after a member's refused save: %v, %v", cs, err)
		}
	})
}

// TestInboxBrowserConsentLayout looks at the conversation of an opted-out contact and at the
// compliance settings at laptop and phone size: nothing makes the page scroll sideways, and the
// opted-out notice is on screen whole. With INBOX_SCREENSHOTS set to a directory, it saves them there.
func TestInboxBrowserConsentLayout(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	acc.botOff(t, srv)
	_, contactID := acc.say(t, srv, "layout-1", "carla-web", "Carla", "Mendes-Albuquerque",
		"Hi, I got your spring newsletter. Do the Trail Runners come in wide fit?")
	for i, body := range []string{
		"Also, is there a store in Braga?",
		"And do you take returns without the box?",
		"I ordered size 39 last week, it has not arrived yet.",
		"The order number is NW-2291-0043.",
		"Actually, please do not send me the newsletter in the chat any more.",
	} {
		acc.say(t, srv, "layout-"+strconv.Itoa(i+2), "carla-web", "", "", body)
	}
	// A history longer than the section lists at once: by the API, by keywords, by a team member.
	setConsent(t, acc, contactID, models.ConsentInput{Channel: "live-chat", Status: models.ConsentOptedIn,
		Source: "chat widget", Text: "Ticked “Chat with us about offers”", RecordedBy: models.RecordedByAPIKey(acc.key)})
	setConsent(t, acc, contactID, models.ConsentInput{Channel: "whatsapp", Status: models.ConsentOptedIn,
		Source: "checkout", Text: "Yes, send my order updates on WhatsApp", RecordedBy: models.RecordedByAPIKey(acc.key)})
	setConsent(t, acc, contactID, models.ConsentInput{Channel: "sms", Status: models.ConsentOptedIn,
		Source: "landing-page form", Text: "Ticked “Send me offers by text” on northwind.example/spring (form v3)",
		RecordedBy: models.RecordedByAPIKey(acc.key)})
	acc.say(t, srv, "layout-stop", "carla-web", "", "", "STOP")
	acc.say(t, srv, "layout-start", "carla-web", "", "", "START")
	setConsent(t, acc, contactID, models.ConsentInput{Channel: "live-chat", Status: models.ConsentOptedOut,
		Source: models.ConsentSourceInbox, Text: "Asked in the chat to stop the newsletter messages; confirmed by Maria on the phone",
		RecordedBy: models.RecordedByUser(acc.OwnerUserID, acc.Email)})

	b := acc.signedIn(t, srv)
	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		if status := b.open("/inbox/conversations/" + contactID); status != http.StatusOK {
			b.fatalf("conversation page: %d", status)
		}
		b.noHorizontalOverflow("the opted-out conversation on a " + v.name)
		b.waitFor(liveWait, "the conversation scrolled to its end", `window.innerHeight + window.scrollY >= document.body.scrollHeight - 2`)
		if got := b.replyState(); got != "opted-out" {
			b.fatalf("the reply zone shows %s, want the opted-out notice", got)
		}
		box := evalJS[[]float64](b, `(r => [r.left, r.top, r.right, r.bottom])(document.querySelector('#reply').getBoundingClientRect())`)
		if box[0] < 0 || box[1] < 0 || box[2] > float64(v.width) || box[3] > float64(v.height) {
			b.fatalf("the opted-out notice on a %s is not on screen whole: %v", v.name, box)
		}
		if size := evalJS[float64](b, `parseFloat(getComputedStyle(document.querySelector('#reply strong')).fontSize)`); size < 13 {
			b.fatalf("the notice's text is %vpx on a %s", size, v.name)
		}
		b.saveScreenshot("conversation-opted-out-"+v.name+".png", false, 0)
		// Scrolled back up, the notice stays at the bottom of the screen, as the reply box does.
		b.waitLive()
		evalJS[bool](b, `window.scrollTo(0, 0), true`)
		time.Sleep(300 * time.Millisecond) // what the stream's opening fetched has landed
		if y := evalJS[float64](b, `window.scrollY`); y != 0 {
			b.fatalf("the page scrolled to %v by itself", y)
		}
		if v.mobile && evalJS[float64](b, `document.body.scrollHeight - window.innerHeight`) < 100 {
			b.fatalf("the conversation fits a phone's screen: the notice's place when scrolled is not tested")
		}
		box = evalJS[[]float64](b, `(r => [r.left, r.top, r.right, r.bottom])(document.querySelector('#reply').getBoundingClientRect())`)
		if box[1] < 0 || box[3] > float64(v.height)+0.5 || box[3] < float64(v.height)-2 {
			b.fatalf("scrolled to the top on a %s, the notice is at %v, want it at the bottom of the screen", v.name, box)
		}
		b.saveScreenshot("conversation-opted-out-top-"+v.name+".png", false, 0)
		if v.mobile {
			// On a phone the consent is one line until it is opened; the notice's link opens it.
			if evalJS[bool](b, `document.getElementById('consent').open`) {
				b.fatalf("the consent card is open on a phone before it is asked for")
			}
			if err := chromedp.Do(b.ctx, chromedp.Click(`#reply a[href="#consent"]`)); err != nil {
				b.fatal(err)
			}
			b.waitFor(liveWait, "the consent card opened by the notice's link", `document.getElementById('consent').open`)
		}
		// The history: newest first, five on show and the oldest behind its switch; in each entry the
		// time stays on the line of the status and channel, and who recorded it takes one more line
		// (two for a long email on a phone) besides the note.
		history := b.consentHistory()
		if len(history) != 6 || !strings.Contains(history[0], "by "+acc.Email) || !strings.Contains(history[1], "START") ||
			!strings.Contains(history[4], "by API key …"+acc.key[len(acc.key)-4:]) || !strings.Contains(history[5], "chat widget") {
			b.fatalf("the history on a %s reads %q", v.name, history)
		}
		if n := evalJS[int](b, `[...document.querySelectorAll('#consent .consentevent')].filter(e => e.checkVisibility()).length`); n != 5 {
			b.fatalf("%d history entries on show on a %s, want 5", n, v.name)
		}
		lineHeight := evalJS[float64](b, `parseFloat(getComputedStyle(document.querySelector('#consent .consentevent')).lineHeight)`)
		entries := evalJS[[][]float64](b, `[...document.querySelectorAll('#consent .consentevent')].filter(e => e.checkVisibility()).map(e => [
			e.getBoundingClientRect().height - (n => n ? n.getBoundingClientRect().height : 0)(e.querySelector('.consentnote')),
			e.querySelector('.consentwhen').getBoundingClientRect().top - e.querySelector('.pill').getBoundingClientRect().top])`)
		for i, e := range entries {
			if e[0] > 3.5*lineHeight || e[1] > lineHeight/2 {
				b.fatalf("history entry %d on a %s: %vpx tall besides its note, its time %vpx below its status (line %vpx)", i, v.name, e[0], e[1], lineHeight)
			}
		}
		// The sticky reply zone would cover the section's lower part in the pictures.
		evalJS[bool](b, `document.querySelector('.replyzone').style.visibility = 'hidden', document.getElementById('consent').scrollIntoView(), true`)
		b.saveElementScreenshot("#consent", "conversation-consent-history-"+v.name+".png")
		evalJS[bool](b, `document.querySelectorAll('#consent details').forEach(d => d.open = true), true`)
		b.noHorizontalOverflow("the consent form on a " + v.name)
		b.saveElementScreenshot("#consent", "conversation-consent-"+v.name+".png")
		evalJS[bool](b, `document.querySelector('.replyzone').style.visibility = '', true`)

		if status := b.open("/inbox/settings#compliance"); status != http.StatusOK {
			b.fatalf("settings page: %d", status)
		}
		b.noHorizontalOverflow("the settings on a " + v.name)
		b.saveElementScreenshot("#compliance", "settings-compliance-"+v.name+".png")

		// The section with a refused time: its message where the form is.
		evalJS[bool](b, `document.querySelector('#compliance input[name=noQuietHours]').checked = false, true`)
		b.fill(`#compliance input[name=quietStart]`, "25:00")
		b.fill(`#compliance input[name=quietEnd]`, "07:00")
		if status := b.click(`#compliance button[type=submit]`); status != http.StatusUnprocessableEntity {
			b.fatalf("saving the compliance settings landed on a %d page, want 422", status)
		}
		if !evalJS[bool](b, `!!document.querySelector('#compliance .flash.bad')`) {
			b.fatalf("no error in the compliance section after 25:00")
		}
		b.noHorizontalOverflow("the settings' error on a " + v.name)
		b.saveElementScreenshot("#compliance", "settings-compliance-error-"+v.name+".png")
	}
}

// saveElementScreenshot writes a PNG of the element matching selector to $INBOX_SCREENSHOTS/name
// when that is set.
func (b *inboxTab) saveElementScreenshot(selector, name string) {
	b.t.Helper()
	dir := screenshotsDir()
	if dir == "" {
		return
	}
	box := evalJS[[]float64](b, `(r => [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height])(document.querySelector('`+selector+`').getBoundingClientRect())`)
	const margin = 8
	params := cdppage.CaptureScreenshotParams{Format: cdppage.CaptureScreenshotFormatPng, FromSurface: new(true), CaptureBeyondViewport: new(true),
		Clip: &cdppage.Viewport{X: max(0, box[0]-margin), Y: max(0, box[1]-margin), Width: box[2] + 2*margin, Height: box[3] + 2*margin, Scale: 1}}
	res, err := chromedp.Call(b.ctx, cdppage.CaptureScreenshot, params)
	if err != nil {
		b.fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), res.Data, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("saved %s (%d bytes)", name, len(res.Data))
}
