package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"funnelchat/models"
)

// Conversation status in the inbox, in a real browser: the list's Open / Snoozed / Resolved views,
// Resolve and Snooze on the conversation page, Shift+E, and the other tabs following each change live
// (the list loses or gains the row, another tab on the conversation changes its status controls).
func TestInboxBrowserConversationStatus(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	// The screenshots' names (README); a second fixture in the process gets "+n" addresses.
	f := newTeamFixture(t, "maria.santos@northwind.example", "jonas.weber@northwind.example")
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/compliance", f.acc.key, map[string]any{"timeZone": "Europe/Lisbon"}), http.StatusOK, "")
	ana := f.ingest(t, "ana-status", "Ana", "Souza", "Hi! Do you ship to Lisbon?")
	f.at(t, "messages", ana.ID, 30*time.Minute)
	leo := f.ingest(t, "leo-status", "Leo", "Park", "Where is my order NW-2291?")
	f.at(t, "messages", leo.ID, 20*time.Minute)
	tom := f.ingest(t, "tom-status", "Tom", "Becker", "The boots are a size too small.")
	f.at(t, "messages", tom.ID, 10*time.Minute)
	f.assign(t, leo.ContactID, f.owner)
	browser := startChromium(t)

	// One tab on the list, one on Ana's conversation where the buttons are pressed, and another on the
	// same conversation that only watches.
	list := openInbox(t, browser, srv)
	list.use(laptopSize)
	list.signIn(f.acc.Email, inboxPassword)
	rows := func(b *inboxTab) []string {
		return evalJS[[]string](b, `[...document.querySelectorAll('[data-live="list"] .conv')].map(c => c.dataset.contact)`)
	}
	if got := rows(list); strings.Join(got, " ") != strings.Join([]string{tom.ContactID, leo.ContactID, ana.ContactID}, " ") {
		list.fatalf("the Open view lists %q", got)
	}
	if views := evalJS[string](list, `[...document.querySelectorAll('nav.statusviews .view')].map(a => a.textContent + (a.getAttribute('aria-current') ? '*' : '')).join(' ')`); views != "Open* Snoozed Resolved" {
		list.fatalf("status views %q", views)
	}
	list.waitLive()
	list.mark()
	conv := openInbox(t, browser, srv)
	conv.use(laptopSize)
	if status := conv.open("/inbox/conversations/" + ana.ContactID); status != http.StatusOK {
		conv.fatalf("Ana's conversation: %d", status)
	}
	watch := openInbox(t, browser, srv)
	watch.use(laptopSize)
	if status := watch.open("/inbox/conversations/" + ana.ContactID); status != http.StatusOK {
		watch.fatalf("Ana's conversation: %d", status)
	}
	watch.waitLive()
	watch.mark()
	pill := func(b *inboxTab) string {
		return evalJS[string](b, `(document.querySelector('[data-live-part="status"] .pill') || {textContent: ''}).textContent.replace(/\s+/g, ' ').trim()`)
	}
	toggle := func(b *inboxTab) string {
		return evalJS[string](b, `(document.querySelector('[data-live-part="status"] form.statustoggle button') || {textContent: ''}).textContent.replace(/\s+/g, ' ').trim()`)
	}
	if p, b := pill(conv), toggle(conv); p != "Open" || b != "Resolve ⇧E" {
		conv.fatalf("a new conversation shows %q with %q", p, b)
	}
	// Ana's conversation was read by opening it: the unread count is Leo's and Tom's.
	if u, _, _ := conv.navCounts(); u != "2" {
		conv.fatalf("unread %q, want 2", u)
	}

	t.Run("Resolve", func(t *testing.T) {
		conv.saveScreenshot("conversation-status-laptop.png", false, 0)
		if status := conv.click(`[data-live-part="status"] form.statustoggle button`); status != http.StatusOK {
			conv.fatalf("Resolve: %d", status)
		}
		if p, b := pill(conv), toggle(conv); p != "Resolved" || b != "Reopen" {
			conv.fatalf("after Resolve: %q with %q", p, b)
		}
		if text := conv.text(); !strings.Contains(text, "Resolved: the conversation left the Open list.") {
			conv.fatalf("no word of the change:\n%s", text)
		}
		list.waitFor(liveWait, "Ana's row leaving the Open view", `![...document.querySelectorAll('[data-live="list"] .conv')].some(c => c.dataset.contact === '`+ana.ContactID+`')`)
		list.stillSamePage()
		watch.waitFor(liveWait, "the other tab showing Resolved", `document.querySelector('[data-live-part="status"] .pill').textContent.trim() === 'Resolved'`)
		watch.stillSamePage()
	})

	t.Run("the Resolved view, combined with Mine", func(t *testing.T) {
		if status := list.click(`nav.statusviews a[href*="status=resolved"]`); status != http.StatusOK {
			list.fatalf("Resolved view: %d", status)
		}
		if got := rows(list); len(got) != 1 || got[0] != ana.ContactID {
			list.fatalf("the Resolved view lists %q", got)
		}
		if !evalJS[bool](list, `!!document.querySelector('.conv .mark.resolved')`) {
			list.fatalf("a resolved conversation without its mark")
		}
		list.click(`nav[aria-label="Conversations by assignee"] a[href*="assignee=me"]`)
		if p := list.path(); !strings.Contains(p, "status=resolved") || !strings.Contains(p, "assignee=me") {
			list.fatalf("Mine from the Resolved view went to %s", p)
		}
		if got := rows(list); len(got) != 0 {
			list.fatalf("Mine and resolved lists %q (Ana's is unassigned)", got)
		}
		list.open("/inbox/?status=resolved")
		list.waitLive()
		list.mark()
	})

	t.Run("Shift+E reopens a resolved conversation, and resolves an open one", func(t *testing.T) {
		conv.waitLive()
		conv.press("E")
		conv.waitFor(liveWait, "the reopened conversation", `document.querySelector('[data-live-part="status"] .pill').textContent.trim() === 'Open'`)
		// The key submits the status form: the page that answers must have its script running before the
		// next key is pressed.
		conv.waitLive()
		list.waitFor(liveWait, "Ana's row leaving the Resolved view", `!document.querySelector('[data-live="list"] .conv')`)
		list.stillSamePage()
		watch.waitFor(liveWait, "the other tab showing Open", `document.querySelector('[data-live-part="status"] .pill').textContent.trim() === 'Open'`)
		watch.stillSamePage()
		// "e" alone is the alert's key, and Shift+E is documented in the help.
		conv.press("?")
		conv.waitFor(liveWait, "the shortcuts' help", `document.getElementById('shortcuts').open`)
		if help := evalJS[string](conv, `[...document.querySelectorAll('#shortcuts dl > div')].map(d => d.querySelector('dt').textContent.replace(/\s+/g, ' ').trim() + ': ' + d.querySelector('dd').textContent).join('\n')`); !strings.Contains(help, "Shift + E: Resolve the conversation (Reopen when it is resolved)") {
			conv.fatalf("the help: %s", help)
		}
		conv.press("\x1b")
		conv.waitFor(liveWait, "the help closed", `!document.getElementById('shortcuts').open`)
		conv.press("E")
		conv.waitFor(liveWait, "the conversation resolved by the key", `document.querySelector('[data-live-part="status"] .pill').textContent.trim() === 'Resolved'`)
		conv.waitLive()
		list.waitFor(liveWait, "Ana's row back in the Resolved view", `[...document.querySelectorAll('[data-live="list"] .conv')].some(c => c.dataset.contact === '`+ana.ContactID+`')`)
		list.stillSamePage()
		// Reopened again for what follows.
		conv.press("E")
		conv.waitFor(liveWait, "the conversation open again", `document.querySelector('[data-live-part="status"] .pill').textContent.trim() === 'Open'`)
		conv.waitLive()
	})

	t.Run("Snooze until tomorrow 9:00 in the account's time zone", func(t *testing.T) {
		list.open("/inbox/?status=snoozed")
		list.waitLive()
		list.mark()
		openSnooze(conv)
		conv.saveScreenshot("conversation-snooze-laptop.png", false, 0)
		lisbon, _ := time.LoadLocation("Europe/Lisbon")
		tomorrow := func() time.Time {
			d := time.Now().In(lisbon).AddDate(0, 0, 1)
			return time.Date(d.Year(), d.Month(), d.Day(), 9, 0, 0, 0, lisbon)
		}
		before := tomorrow()
		if status := conv.click(`details.snooze button[value="tomorrow"]`); status != http.StatusOK {
			conv.fatalf("Snooze: %d", status)
		}
		after := tomorrow()
		until, err := time.Parse(time.RFC3339, evalJS[string](conv, `document.querySelector('[data-live-part="status"] .pill time').getAttribute('datetime')`))
		if err != nil || !(until.Equal(before) || until.Equal(after)) {
			conv.fatalf("snoozed until %v (%v), want %v", until, err, before)
		}
		if !strings.HasPrefix(pill(conv), "Snoozed until") || toggle(conv) != "Resolve ⇧E" {
			conv.fatalf("after Snooze: %q with %q", pill(conv), toggle(conv))
		}
		if text := conv.text(); !strings.Contains(text, "09:00 (Europe/Lisbon)") {
			conv.fatalf("the snooze's time in the account's zone is not said:\n%s", text)
		}
		list.waitFor(liveWait, "Ana's row in the Snoozed view", `[...document.querySelectorAll('[data-live="list"] .conv')].some(c => c.dataset.contact === '`+ana.ContactID+`' && c.querySelector('.mark.snoozed'))`)
		list.stillSamePage()
		list.saveScreenshot("conversations-snoozed-laptop.png", false, 0)
		watch.waitFor(liveWait, "the other tab showing the snooze", `document.querySelector('[data-live-part="status"] .pill').textContent.includes('Snoozed until')`)
		watch.stillSamePage()
		// The API opens it again: the views follow.
		expect(t, patchStatus(t, srv, f.acc.key, ana.ContactID, map[string]any{"status": "open"}), http.StatusOK, "")
		list.waitFor(liveWait, "Ana's row leaving the Snoozed view", `!document.querySelector('[data-live="list"] .conv')`)
		list.stillSamePage()
		conv.waitFor(liveWait, "the page showing Open", `document.querySelector('[data-live-part="status"] .pill').textContent.trim() === 'Open'`)
	})

	t.Run("the counts count open conversations", func(t *testing.T) {
		list.open("/inbox/")
		list.waitLive()
		list.mark()
		list.waitCounts("two unread", "2", "", "(2) Conversations · Inbox")
		expect(t, patchStatus(t, srv, f.acc.key, tom.ContactID, map[string]any{"status": "resolved"}), http.StatusOK, "")
		list.waitCounts("Tom's resolved conversation not counted", "1", "", "(1) Conversations · Inbox")
		// The live updates fetch the counts and the list with separate requests (inbox/static/app.js):
		// the list may still show Tom's row a moment after the counts changed.
		list.waitFor(liveWait, "Tom's row leaving the Open view", `[...document.querySelectorAll('[data-live="list"] .conv')].map(c => c.dataset.contact).join(' ') === '`+leo.ContactID+` `+ana.ContactID+`'`)
		if got := rows(list); strings.Join(got, " ") != strings.Join([]string{leo.ContactID, ana.ContactID}, " ") {
			list.fatalf("the Open view lists %q", got)
		}
		// Tom writes again: his conversation is open, unread, and back in the list.
		f.ingest(t, "tom-status", "", "", "Hello? Any news about the exchange?")
		list.waitCounts("Tom's new message", "2", "", "(2) Conversations · Inbox")
		list.waitFor(liveWait, "Tom's row back in the Open view", `document.querySelector('[data-live="list"] .conv').dataset.contact === '`+tom.ContactID+`'`)
		list.stillSamePage()
		list.saveScreenshot("conversations-status-laptop.png", false, 0)
	})

	t.Run("a bad form changes nothing", func(t *testing.T) {
		for _, js := range []string{
			`document.querySelector('form.statustoggle input[name=status]').value = 'closed'; document.querySelector('form.statustoggle').requestSubmit()`,
			`document.querySelector('details.snooze').open = true; document.querySelector('details.snooze button[value="week"]').value = 'forever'; document.querySelector('details.snooze button[value="forever"]').click()`,
		} {
			conv.open("/inbox/conversations/" + ana.ContactID)
			evalJS[any](conv, `(() => { `+js+`; return null })()`)
			conv.waitFor(liveWait, "the refusal", `(document.querySelector('#status .flash.bad') || {}).textContent`)
			if p := pill(conv); p != "Open" {
				conv.fatalf("after a refused form: %q", p)
			}
		}
		if !strings.Contains(conv.text(), "Choose how long to snooze") {
			conv.fatalf("the snooze refusal:\n%s", conv.text())
		}
	})

	t.Run("on a phone", func(t *testing.T) {
		list.use(phoneSize)
		list.open("/inbox/")
		list.nothingPastTheScreen("the list on a phone")
		list.saveScreenshot("conversations-status-phone.png", false, 0)
		conv.use(phoneSize)
		conv.open("/inbox/conversations/" + ana.ContactID)
		conv.nothingPastTheScreen("the conversation on a phone")
		openSnooze(conv)
		conv.nothingPastTheScreen("the Snooze menu on a phone")
		evalJS[any](conv, `(window.scrollTo(0, 0), null)`)
		conv.saveScreenshot("conversation-snooze-phone.png", false, 0)
		if status := conv.click(`details.snooze button[value="hour"]`); status != http.StatusOK {
			conv.fatalf("Snooze for an hour: %d", status)
		}
		if !strings.HasPrefix(pill(conv), "Snoozed until") {
			conv.fatalf("after Snooze on a phone: %q", pill(conv))
		}
		st, _ := statusOf(t, srv, f.acc.key, ana.ContactID)
		if st != models.ConversationSnoozed {
			t.Fatalf("stored status %s", st)
		}
	})
}

// openSnooze opens the conversation page's Snooze menu as a user does, by clicking it.
func openSnooze(b *inboxTab) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(`details.snooze summary`))); err != nil {
		b.fatalf("open the Snooze menu: %v", err)
	}
	b.waitFor(liveWait, "the Snooze menu", `document.querySelector('details.snooze').open`)
}
