package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"funnelchat/models"
	"funnelchat/models/report"
)

// The team's side of the inbox in a real browser: the counts of what waits (navigation and title, kept
// live), the Mine / Unassigned / All views and the assign control, private notes, who wrote each
// message, canned replies in the reply box, alerts that wait and escalate, keyboard shortcuts, and
// the same forms with script off.

// teamScreenshots are the screenshots TestInboxTeamScreenshots takes (the layout test leaves them).
var teamScreenshots = map[string]bool{
	"conversations-laptop.png": true, "conversation-laptop.png": true, "conversation-phone.png": true, "alerts-laptop.png": true,
}

// teamRun numbers the team fixtures made in this process, in the emails it makes for those given
// none; a fixed email is made unique by adminEmail.
var teamRun atomic.Int64

// teamFixture is an account with two people on its team and conversations written through the store.
type teamFixture struct {
	acc                     browserAccount
	owner, member           string // user ids
	ownerEmail, memberEmail string
}

// newTeamFixture makes an account whose owner (ownerEmail, "" for a unique one) signs in with
// inboxPassword, and a member of its team.
func newTeamFixture(t *testing.T, ownerEmail, memberEmail string) *teamFixture {
	t.Helper()
	n := teamRun.Add(1)
	if ownerEmail == "" {
		ownerEmail = fmt.Sprintf("owner-team-%d-%d@example.com", time.Now().UnixNano(), n)
	} else {
		ownerEmail = adminEmail(ownerEmail)
	}
	if memberEmail == "" {
		memberEmail = fmt.Sprintf("member-team-%d-%d@example.com", time.Now().UnixNano(), n)
	} else {
		memberEmail = adminEmail(memberEmail)
	}
	created, err := env.Store.CreateAccount(t.Context(), models.NewAccount{Email: ownerEmail, Name: "Northwind"})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.SetPassword(t.Context(), created.Account.OwnerUserID, inboxPassword); err != nil {
		t.Fatal(err)
	}
	member, err := env.Store.AddUser(t.Context(), created.Account.ID, memberEmail, models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	return &teamFixture{acc: browserAccount{Account: created.Account, key: created.APIKey}, owner: created.Account.OwnerUserID,
		ownerEmail: created.Account.Email, member: member.User.ID, memberEmail: member.User.Email}
}

// ingest stores an incoming live-chat message from fromID (named first last) and returns it.
func (f *teamFixture) ingest(t *testing.T, fromID, first, last, body string) *models.Message {
	t.Helper()
	in := models.IncomingInput{ExternalID: fmt.Sprintf("%s-%s-%d", f.acc.ID, fromID, time.Now().UnixNano()), FromID: fromID, ToID: "northwind",
		Body: body, Channel: "live-chat", FirstName: first, LastName: last}
	if err := in.Validate(1 << 20); err != nil {
		t.Fatal(err)
	}
	m, _, err := env.Store.IngestIncoming(t.Context(), f.acc.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sql runs a statement on the test database (to set what the store stamps with the clock).
func teamSQL(t *testing.T, query string, args ...any) {
	t.Helper()
	if _, err := env.Store.DB().NewRaw(query, args...).Exec(t.Context()); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// bot stores the bot's answer to the incoming message, delivered.
func (f *teamFixture) bot(t *testing.T, incoming *models.Message, body string) *models.Message {
	t.Helper()
	m, _, err := env.Store.CreateBotReply(t.Context(), incoming, nil, body, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	teamSQL(t, "UPDATE messages SET status = ? WHERE id = ?", models.StatusSent, m.ID)
	return m
}

// team stores a reply written by the user, delivered.
func (f *teamFixture) team(t *testing.T, contactID, userID, body string) *models.Message {
	t.Helper()
	m, err := env.Store.HumanReply(t.Context(), f.acc.ID, contactID, userID, body, "")
	if err != nil {
		t.Fatal(err)
	}
	teamSQL(t, "UPDATE messages SET status = ? WHERE id = ?", models.StatusSent, m.ID)
	return m
}

// opening sends the contacts (written to from fromIDs) a live campaign's opening, delivered.
func (f *teamFixture) opening(t *testing.T, contactIDs, fromIDs []string) *models.Campaign {
	t.Helper()
	ctx := t.Context()
	list, err := env.Store.CreateList(ctx, f.acc.ID, "Spring newsletter sign-ups")
	if err != nil {
		t.Fatal(err)
	}
	name, channel, status := "Spring collection welcome", "custom:live-chat", models.CampaignLive
	opening := "Hi {{firstName}}, thanks for signing up! Our spring collection is out today: shall we save you a free fitting this week?"
	campaign, err := env.Store.CreateCampaign(ctx, f.acc.ID, models.CampaignInput{Name: &name, Channel: &channel, Status: &status,
		OpeningMessage: &opening, ListID: &list.ID})
	if err != nil {
		t.Fatal(err)
	}
	added, err := env.Store.AddToList(ctx, f.acc.ID, list.ID, contactIDs)
	if err != nil {
		t.Fatal(err)
	}
	to := map[string]string{}
	for i, id := range contactIDs {
		to[id] = fromIDs[i]
	}
	for _, d := range added.Sends {
		send, err := env.Store.CampaignSend(ctx, d.SendID)
		if err != nil {
			t.Fatal(err)
		}
		contact, err := env.Store.ContactByID(ctx, f.acc.ID, send.ContactID)
		if err != nil {
			t.Fatal(err)
		}
		m, err := env.Store.WriteOpening(ctx, send, models.OutgoingMessage{Campaign: campaign, Contact: contact,
			Body: models.Personalize(campaign.OpeningFor(0), contact), ToID: to[contact.ID]})
		if err != nil || m == nil {
			t.Fatalf("write the opening: %v", err)
		}
		if _, err := env.Store.SettleOpening(ctx, m.ID, true, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
		teamSQL(t, "UPDATE messages SET status = ? WHERE id = ?", models.StatusSent, m.ID)
	}
	return campaign
}

// assign gives the conversation to the user ("" unassigns it) through the store.
func (f *teamFixture) assign(t *testing.T, contactID, userID string) {
	t.Helper()
	var id *string
	if userID != "" {
		id = &userID
	}
	if _, err := env.Store.Assign(t.Context(), f.acc.ID, contactID, id); err != nil {
		t.Fatal(err)
	}
}

// assigneeOf is the conversation's assignee as stored ("" unassigned).
func (f *teamFixture) assigneeOf(t *testing.T, contactID string) string {
	t.Helper()
	c, err := env.Store.ContactByID(t.Context(), f.acc.ID, contactID)
	if err != nil {
		t.Fatal(err)
	}
	if c.AssigneeID == nil {
		return ""
	}
	return *c.AssigneeID
}

// press presses keys in the tab, as a keyboard does: a printable key is one keydown carrying its text
// (so that a page that handles the keydown keeps the character from being typed), then its keyup.
func (b *inboxTab) press(keys ...string) {
	b.t.Helper()
	for _, k := range keys {
		events := kb.Encode([]rune(k)[0])
		if len(events) == 3 { // keydown, char, keyup
			down := *events[0]
			down.Text, down.UnmodifiedText = events[1].Text, events[1].UnmodifiedText
			events = []*input.DispatchKeyEventParams{&down, events[2]}
		}
		for _, e := range events {
			if _, err := chromedp.Call(b.ctx, input.DispatchKeyEvent, *e); err != nil {
				b.fatalf("press %q: %v", k, err)
			}
		}
	}
}

// noScript turns the tab's script off (the page must be loaded again).
func (b *inboxTab) noScript() {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		b.t.Fatal(err)
	}
}

// choose selects the option with the value in the select, as a user does.
func (b *inboxTab) choose(selector, value string) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, chromedp.SetValue(chromedp.CSS(selector), value)); err != nil {
		b.fatalf("choose %q in %s: %v", value, selector, err)
	}
}

// navCounts is what the navigation shows beside Conversations and Alerts ("" at 0) and the title.
func (b *inboxTab) navCounts() (unread, alerts, title string) {
	b.t.Helper()
	v := evalJS[[]string](b, `[...['unread', 'openAlerts'].map(n => (document.querySelector('.navcount[data-count="' + n + '"]') || {textContent: 'none'}).textContent.replace(/\D+/g, '')), document.title]`)
	return v[0], v[1], v[2]
}

func (b *inboxTab) waitCounts(what, unread, alerts, title string) {
	b.t.Helper()
	js, _ := json.Marshal([]string{unread, alerts, title})
	b.waitFor(liveWait, what, `JSON.stringify([...['unread', 'openAlerts'].map(n => document.querySelector('.navcount[data-count="' + n + '"]').textContent.replace(/\D+/g, '')), document.title]) === '`+string(js)+`'`)
}

// sessionCookie is the tab's session cookie as a Cookie header's pair.
func (b *inboxTab) sessionCookie() string {
	b.t.Helper()
	return browserSessionCookie + "=" + b.cookie(browserSessionCookie)
}

// csrf is the CSRF token of the page's forms.
func (b *inboxTab) csrf() string {
	b.t.Helper()
	return evalJS[string](b, `document.querySelector('input[name=csrf_token]').value`)
}

func TestInboxTeamCounts(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	acc := f.acc
	browser := startChromium(t)
	b := openInbox(t, browser, srv)
	b.use(laptopSize)
	b.signIn(acc.Email, inboxPassword)

	if u, a, title := b.navCounts(); u != "" || a != "" || title != "Conversations · Inbox" {
		b.fatalf("with nothing waiting: unread %q, alerts %q, title %q", u, a, title)
	}
	if n := evalJS[int](b, `document.querySelectorAll('.top nav .navcount[aria-live="polite"]').length`); n != 3 {
		b.fatalf("%d counts are live regions, want 3 (unread, open alerts, deliveries that gave up)", n)
	}

	b.waitLive()
	b.mark()
	_, ana := acc.say(t, srv, "count-1", "ana-count", "Ana", "Souza", "Hi! Do you ship to Lisbon?")
	b.waitCounts("one unread in the open list", "1", "", "(1) Conversations · Inbox")
	b.stillSamePage()
	// What a screen reader reads (the phone's short label is hidden from it).
	if name := evalJS[string](b, `(a => (a.querySelectorAll('[aria-hidden]').forEach(e => e.remove()), a.textContent.replace(/\s+/g, ' ').trim()))(document.querySelector('.top nav a[href="/inbox/"]').cloneNode(true))`); name != "Conversations: 1 unread" {
		b.fatalf("the Conversations entry reads %q to a screen reader", name)
	}

	// A page without a live region (Settings) counts live too.
	s := openInbox(t, browser, srv)
	s.use(laptopSize)
	if status := s.open("/inbox/settings"); status != http.StatusOK {
		s.fatalf("settings: %d", status)
	}
	if _, _, title := s.navCounts(); title != "(1) Settings · Inbox" {
		s.fatalf("the settings page's title is %q", title)
	}
	s.waitLive()
	s.mark()
	leoMessage, leo := acc.say(t, srv, "count-2", "leo-count", "Leo", "Park", "Where is my order?")
	b.waitCounts("two unread in the list", "2", "", "(2) Conversations · Inbox")
	s.waitCounts("two unread on the settings page", "2", "", "(2) Settings · Inbox")

	// An alert opens: both count it.
	incoming, err := env.Store.MessageByID(t.Context(), acc.ID, leoMessage)
	if err != nil {
		t.Fatal(err)
	}
	alert, err := env.Store.Handoff(t.Context(), incoming, "The contact asked for a person")
	if err != nil {
		t.Fatal(err)
	}
	b.waitCounts("the open alert in the list", "2", "1", "(2) Conversations · Inbox")
	s.waitCounts("the open alert on the settings page", "2", "1", "(2) Settings · Inbox")
	s.stillSamePage()
	b.stillSamePage()

	t.Run("GET /inbox/counts needs the session", func(t *testing.T) {
		res, body := inboxRequest(t, "GET", srv.URL+"/inbox/counts", nil, b.sessionCookie())
		var got map[string]int
		if res.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || got["unread"] != 2 || got["openAlerts"] != 1 {
			t.Fatalf("GET /inbox/counts: %d %s", res.StatusCode, body)
		}
		if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("Cache-Control %q", cc)
		}
		if res, _ := inboxRequest(t, "GET", srv.URL+"/inbox/counts", nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("without a session: %d, want 303 to the sign-in form", res.StatusCode)
		}
		if res, body := inboxRequestWith(t, "GET", srv.URL+"/inbox/counts", nil, http.Header{"X-Inbox-Live": {"counts"}}); res.StatusCode != http.StatusUnauthorized || strings.Contains(body, "unread") {
			t.Fatalf("the script's request without a session: %d %s", res.StatusCode, body)
		}
		// Another account's user counts its own.
		other := newBrowserAccount(t).signedIn(t, srv)
		if _, body := inboxRequest(t, "GET", srv.URL+"/inbox/counts", nil, other.sessionCookie()); body != `{"unread":0,"openAlerts":0,"gaveUp":0}` {
			t.Fatalf("another account's counts: %s", body)
		}
	})

	t.Run("reading a conversation counts it read", func(t *testing.T) {
		if status := b.click(`.conv[data-contact="` + ana + `"] a`); status != http.StatusOK {
			b.fatalf("opening Ana's conversation: %d", status)
		}
		if u, a, title := b.navCounts(); u != "1" || a != "1" || title != "(1) Ana Souza · Inbox" {
			b.fatalf("after reading Ana's conversation: unread %q, alerts %q, title %q", u, a, title)
		}
		// A message that arrives in the open conversation is read as it shows.
		b.waitLive()
		b.mark()
		acc.say(t, srv, "count-3", "ana-count", "", "", "And do you have it in green?")
		b.waitFor(liveWait, "Ana's second message", `document.querySelectorAll('.msg.incoming').length === 2`)
		waitFor(t, liveWait, "the message read", func() bool {
			n, err := report.New(env.Store).Counts(t.Context(), acc.ID, f.owner)
			return err == nil && n.Unread == 1
		})
		b.waitCounts("still one unread after the message was read", "1", "1", "(1) Ana Souza · Inbox")
		b.stillSamePage()
		// Leo's conversation is the unread one.
		if status := b.open("/inbox/?unread=true"); status != http.StatusOK {
			b.fatalf("unread list: %d", status)
		}
		if ids := evalJS[[]string](b, `[...document.querySelectorAll('.conv')].map(c => c.dataset.contact)`); len(ids) != 1 || ids[0] != leo {
			b.fatalf("unread conversations %q, want Leo's", ids)
		}
	})

	t.Run("resolving the alert", func(t *testing.T) {
		if _, err := env.Store.ResolveAlert(t.Context(), acc.ID, alert.ID, f.owner); err != nil {
			t.Fatal(err)
		}
		s.waitCounts("no open alert on the settings page", "1", "", "(1) Settings · Inbox")
		s.stillSamePage()
	})
}

func TestInboxTeamAssignment(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	mine := f.ingest(t, "ana-assign", "Ana", "Souza", "Hi! Do you ship to Lisbon?").ContactID
	theirs := f.ingest(t, "leo-assign", "Leo", "Park", "Where is my order?").ContactID
	nobody := f.ingest(t, "tom-assign", "Tom", "Becker", "The boots are a size too small.").ContactID
	f.assign(t, mine, f.owner)
	f.assign(t, theirs, f.member)
	browser := startChromium(t)
	b := openInbox(t, browser, srv)
	b.use(laptopSize)
	b.signIn(f.acc.Email, inboxPassword)

	rows := func(b *inboxTab) map[string]string {
		b.t.Helper()
		var out map[string]string
		raw := evalJS[string](b, `JSON.stringify(Object.fromEntries([...document.querySelectorAll('.conv')].map(c => [c.dataset.contact, c.querySelector('.owner').textContent.replace('Assigned to ', '').trim()])))`)
		if err := json.Unmarshal([]byte(raw), &out); err != nil {
			b.t.Fatal(err)
		}
		return out
	}
	view := func(label, wantPath string, want map[string]string) {
		t.Helper()
		if status := b.click(`.views a.view:nth-child(` + map[string]string{"Mine": "1", "Unassigned": "2", "All": "3"}[label] + `)`); status != http.StatusOK {
			b.fatalf("%s: %d", label, status)
		}
		if p := b.path(); p != wantPath {
			b.fatalf("%s went to %s, want %s", label, p, wantPath)
		}
		if cur := evalJS[string](b, `document.querySelector('.views [aria-current="page"]').textContent`); cur != label {
			b.fatalf("the current view reads %q, want %s", cur, label)
		}
		if got := rows(b); fmt.Sprint(got) != fmt.Sprint(want) {
			b.fatalf("%s lists %v, want %v", label, got, want)
		}
	}

	t.Run("Mine, Unassigned and All", func(t *testing.T) {
		all := map[string]string{mine: f.ownerEmail, theirs: f.memberEmail, nobody: "Unassigned"}
		if got := rows(b); fmt.Sprint(got) != fmt.Sprint(all) {
			b.fatalf("the list shows %v, want %v", got, all)
		}
		view("Mine", "/inbox/?assignee=me", map[string]string{mine: f.ownerEmail})
		view("Unassigned", "/inbox/?assignee=none", map[string]string{nobody: "Unassigned"})
		view("All", "/inbox/", all)
	})

	t.Run("the views keep the other filters", func(t *testing.T) {
		if _, err := report.New(env.Store).ConversationFor(t.Context(), f.acc.ID, nobody, "", 1); err != nil {
			t.Fatal(err)
		}
		if err := env.Store.MarkRead(t.Context(), f.acc.ID, f.owner, theirs); err != nil {
			t.Fatal(err)
		}
		if status := b.open("/inbox/?unread=true&q=t"); status != http.StatusOK {
			b.fatalf("filtered list: %d", status)
		}
		hrefs := evalJS[[]string](b, `[...document.querySelectorAll('.views a')].map(a => a.getAttribute('href'))`)
		want := []string{"/inbox/?assignee=me&q=t&unread=true", "/inbox/?assignee=none&q=t&unread=true", "/inbox/?q=t&unread=true"}
		if fmt.Sprint(hrefs) != fmt.Sprint(want) {
			b.fatalf("the views link to %q, want %q", hrefs, want)
		}
		view("Unassigned", "/inbox/?assignee=none&q=t&unread=true", map[string]string{nobody: "Unassigned"})
		// The search form keeps the view.
		b.fill(`input[name=q]`, "tom")
		if status := b.click(`.filters button[type=submit]`); status != http.StatusOK {
			b.fatalf("search: %d", status)
		}
		if p := b.path(); !strings.Contains(p, "assignee=none") || !strings.Contains(p, "q=tom") {
			b.fatalf("searching within Unassigned went to %s", p)
		}
		if got := rows(b); len(got) != 1 || got[nobody] != "Unassigned" {
			b.fatalf("the search lists %v", got)
		}
		if href := evalJS[string](b, `document.querySelector('.filters .clear').getAttribute('href')`); href != "/inbox/?assignee=none" {
			b.fatalf("Clear links to %q, want the view without filters", href)
		}
	})

	conv := "/inbox/conversations/" + nobody
	t.Run("assigning through the control, seen live in another tab", func(t *testing.T) {
		list := openInbox(t, browser, srv)
		list.use(laptopSize)
		list.open("/inbox/")
		list.waitLive()
		list.mark()
		other := openInbox(t, browser, srv)
		other.use(laptopSize)
		if status := other.open(conv); status != http.StatusOK {
			other.fatalf("conversation in the second tab: %d", status)
		}
		other.waitLive()
		other.mark()

		if status := b.open(conv); status != http.StatusOK {
			b.fatalf("conversation: %d", status)
		}
		if got := evalJS[string](b, `(s => s.value + '|' + s.selectedOptions[0].textContent)(document.querySelector('#assign select[name=userId]'))`); got != "|Unassigned" {
			b.fatalf("the assign control shows %q, want Unassigned", got)
		}
		if label := evalJS[string](b, `document.querySelector('label[for="assignee"]').textContent`); label != "Assigned to" {
			b.fatalf("the control's label reads %q", label)
		}
		b.choose(`#assignee`, f.member)
		if status := b.click(`.assignform button[type=submit]`); status != http.StatusOK {
			b.fatalf("Assign: %d", status)
		}
		if p := b.path(); p != conv {
			b.fatalf("Assign went to %s", p)
		}
		if flash := evalJS[string](b, `(document.querySelector('#assign .flash.ok') || {}).textContent || ''`); flash != "Assigned to "+f.memberEmail+"." {
			b.fatalf("the assign section says %q", flash)
		}
		if got := f.assigneeOf(t, nobody); got != f.member {
			t.Fatalf("the store has the conversation with %q, want the member %q", got, f.member)
		}
		if got := evalJS[string](b, `document.querySelector('#assignee').value`); got != f.member {
			b.fatalf("after Assign the control shows %q", got)
		}
		other.waitFor(liveWait, "the assignee in the second tab", `document.querySelector('#assignee').value === '`+f.member+`'`)
		other.stillSamePage()
		list.waitFor(liveWait, "the assignee in the list", `document.querySelector('.conv[data-contact="`+nobody+`"] .owner').textContent.includes('`+f.memberEmail+`')`)
		list.stillSamePage()

		// Assign to me, then nobody.
		if status := b.click(`.assignme button[type=submit]`); status != http.StatusOK {
			b.fatalf("Assign to me: %d", status)
		}
		if got := f.assigneeOf(t, nobody); got != f.owner {
			t.Fatalf("after Assign to me the store has %q, want the owner", got)
		}
		if flash := evalJS[string](b, `document.querySelector('#assign .flash.ok').textContent`); flash != "Assigned to you." {
			b.fatalf("Assign to me says %q", flash)
		}
		if evalJS[bool](b, `!!document.querySelector('.assignme')`) {
			b.fatalf("Assign to me is offered on a conversation that is mine")
		}
		other.waitFor(liveWait, "the second tab following", `document.querySelector('#assignee').value === '`+f.owner+`'`)
		b.choose(`#assignee`, "")
		b.click(`.assignform button[type=submit]`)
		if got := f.assigneeOf(t, nobody); got != "" {
			t.Fatalf("after Unassigned the store has %q", got)
		}
		other.waitFor(liveWait, "the second tab unassigned", `document.querySelector('#assignee').value === ''`)
		other.stillSamePage()
	})

	t.Run("without script", func(t *testing.T) {
		noJS := openInbox(t, browser, srv)
		noJS.use(laptopSize)
		noJS.noScript()
		if status := noJS.open(conv); status != http.StatusOK {
			noJS.fatalf("conversation without script: %d", status)
		}
		noJS.choose(`#assignee`, f.member)
		if status := noJS.click(`.assignform button[type=submit]`); status != http.StatusOK {
			noJS.fatalf("Assign without script: %d", status)
		}
		if got := f.assigneeOf(t, nobody); got != f.member {
			t.Fatalf("without script the store has %q, want the member", got)
		}
		if !strings.Contains(noJS.text(), "Assigned to "+f.memberEmail+".") {
			noJS.fatalf("no confirmation without script")
		}
	})

	t.Run("another account's conversation is 404", func(t *testing.T) {
		other := newTeamFixture(t, "", "")
		theirContact := other.ingest(t, "bea-other", "Bea", "Secret", "my secret").ContactID
		if status := b.open(conv); status != http.StatusOK {
			b.fatalf("conversation: %d", status)
		}
		cookie, token := b.sessionCookie(), b.csrf()
		for path, form := range map[string]url.Values{
			"/assignee": {"userId": {f.owner}, "csrf_token": {token}},
			"/notes":    {"body": {"written across accounts"}, "csrf_token": {token}},
		} {
			res, body := inboxRequest(t, "POST", srv.URL+"/inbox/conversations/"+theirContact+path, form, cookie)
			if res.StatusCode != http.StatusNotFound || strings.Contains(body, "Bea") {
				t.Fatalf("POST %s on another account's conversation: %d", path, res.StatusCode)
			}
		}
		if got := other.assigneeOf(t, theirContact); got != "" {
			t.Fatalf("the other account's conversation was assigned to %q", got)
		}
		if notes, err := env.Store.Notes(t.Context(), other.acc.ID, theirContact); err != nil || len(notes) != 0 {
			t.Fatalf("the other account's conversation has notes %v (%v)", notes, err)
		}
		// Someone who is not on the team cannot be assigned.
		res, _ := inboxRequest(t, "POST", srv.URL+conv+"/assignee", url.Values{"userId": {other.owner}, "csrf_token": {token}}, cookie)
		if res.StatusCode != http.StatusSeeOther || f.assigneeOf(t, nobody) != f.member {
			t.Fatalf("assigning another account's user: %d, assignee %q", res.StatusCode, f.assigneeOf(t, nobody))
		}
		flash := ""
		for _, c := range res.Cookies() {
			if c.Name == "inbox_flash" {
				flash, _ = url.QueryUnescape(c.Value)
			}
		}
		if !strings.HasPrefix(flash, "error:assign:") || !strings.Contains(flash, "not on the team") {
			t.Fatalf("assigning someone not on the team leaves the message %q", flash)
		}
	})
}

func TestInboxTeamNotes(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	acc := f.acc
	_, contactID := acc.say(t, srv, "note-1", "rita-note", "Rita", "Lopes", "Hi, can I change my delivery address?")
	conv := "/inbox/conversations/" + contactID
	browser := startChromium(t)
	b := openInbox(t, browser, srv)
	b.use(laptopSize)
	dialogs := b.acceptDialogs()
	b.signIn(acc.Email, inboxPassword)
	b.open(conv)
	other := openInbox(t, browser, srv)
	other.use(laptopSize)
	otherDialogs := other.acceptDialogs()
	other.open(conv)
	other.waitLive()
	other.mark()
	apiMessages := func() []any {
		t.Helper()
		return do(t, "GET", srv.URL+"/v1/contacts/"+contactID+"/messages", acc.key, nil).JSON(t)["data"].([]any)
	}

	addNote := func(b *inboxTab, body string) {
		t.Helper()
		// Reply is the box shown first; Note switches to the note's.
		if evalJS[bool](b, `document.getElementById('note-body').offsetParent !== null`) {
			b.fatalf("the note box shows before Note is chosen")
		}
		if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(`label.mode-note`))); err != nil {
			b.fatalf("click Note: %v", err)
		}
		if !evalJS[bool](b, `document.getElementById('note-body').offsetParent !== null && (!document.getElementById('reply-body') || document.getElementById('reply-body').offsetParent === null)`) {
			b.fatalf("Note does not show the note box instead of the reply box")
		}
		b.fill(`#note-body`, body)
		if status := b.click(`#note button[type=submit]`); status != http.StatusOK {
			b.fatalf("Add note: %d", status)
		}
		if p := b.path(); p != conv {
			b.fatalf("Add note went to %s", p)
		}
	}

	const note = "Called her: she moved to Rua das Flores 12. Update the order before it ships."
	addNote(b, note)
	notes, err := env.Store.Notes(t.Context(), acc.ID, contactID)
	if err != nil || len(notes) != 1 || notes[0].Body != note || notes[0].Author.UserID != f.owner {
		t.Fatalf("the notes stored: %+v (%v)", notes, err)
	}
	shown := evalJS[[]string](b, `(n => n ? [n.querySelector('.notebody').textContent, n.querySelector('.author').textContent, n.textContent.replace(/\s+/g, ' '), n.className] : [])(document.querySelector('[data-live="conversation"] li.note'))`)
	if len(shown) != 4 || shown[0] != note || shown[1] != acc.Email || !strings.Contains(shown[2], "Private note, not sent") || !strings.Contains(shown[2], "Note") || strings.Contains(shown[3], "msg") {
		b.fatalf("the note shows as %q", shown)
	}
	if n := evalJS[int](b, `document.querySelectorAll('.msg').length`); n != 1 {
		b.fatalf("%d messages shown after the note, want the 1 incoming", n)
	}
	if bg := evalJS[string](b, `getComputedStyle(document.querySelector('.note .notecard')).backgroundColor`); bg != "rgb(255, 247, 209)" {
		b.fatalf("the note's card is %s, want the notes' yellow", bg)
	}
	other.waitFor(liveWait, "the note in the second tab", `[...document.querySelectorAll('li.note .notebody')].some(e => e.textContent === `+jsString(note)+`)`)
	other.stillSamePage()

	t.Run("a note is never a message", func(t *testing.T) {
		msgs := apiMessages()
		if len(msgs) != 1 {
			t.Fatalf("GET messages lists %d, want the 1 incoming", len(msgs))
		}
		for _, m := range msgs {
			if strings.Contains(fmt.Sprint(m), "Rua das Flores") {
				t.Fatalf("the note is in the messages: %v", m)
			}
		}
	})

	t.Run("a note is text, not markup", func(t *testing.T) {
		const xss = `<script>alert(1)</script>`
		b.open(conv)
		addNote(b, xss)
		if got := evalJS[string](b, `[...document.querySelectorAll('li.note .notebody')].pop().textContent`); got != xss {
			b.fatalf("the note reads %q, want the characters %q", got, xss)
		}
		for name, tab := range map[string]*inboxTab{"the tab": b, "the live tab": other} {
			if name == "the live tab" {
				tab.waitFor(liveWait, "the second note live", `document.querySelectorAll('li.note').length === 2`)
				tab.stillSamePage()
			}
			if n := evalJS[int](tab, `document.querySelectorAll('main script, .notebody *').length`); n != 0 {
				tab.fatalf("%s: %d elements made from the note", name, n)
			}
		}
		time.Sleep(200 * time.Millisecond)
		if got := append(dialogs(), otherDialogs()...); len(got) != 0 {
			t.Fatalf("the note ran as script: dialogs %q", got)
		}
	})

	t.Run("notes among the messages, by time", func(t *testing.T) {
		other.mark()
		acc.say(t, srv, "note-2", "rita-note", "", "", "Thanks! Also, can you gift-wrap it?")
		other.waitFor(liveWait, "the new message after the notes", `document.querySelectorAll('.msg.incoming').length === 2`)
		other.stillSamePage()
		order := evalJS[[]string](other, `[...document.querySelectorAll('.messages > li')].map(li => li.classList.contains('note') ? 'note' : 'msg')`)
		if fmt.Sprint(order) != "[msg note note msg]" {
			other.fatalf("the timeline reads %v, want the notes between the two messages", order)
		}
		if live := evalJS[string](other, `document.querySelector('.messages').getAttribute('aria-live')`); live != "polite" {
			other.fatalf("the timeline's aria-live is %q", live)
		}
	})

	t.Run("an empty note is refused where the box is", func(t *testing.T) {
		res, _ := inboxRequest(t, "POST", srv.URL+conv+"/notes", url.Values{"body": {"   "}, "csrf_token": {b.csrf()}}, b.sessionCookie())
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasSuffix(loc, "#compose") {
			t.Fatalf("an empty note: %d to %q", res.StatusCode, loc)
		}
		// In the browser (the box's required attribute taken off, as an old browser would ignore it).
		b.open(conv)
		evalJS[bool](b, `document.getElementById('mode-note').checked = true, document.getElementById('note-body').required = false, document.getElementById('note-body').value = '   ', true`)
		if status := b.click(`#note button[type=submit]`); status != http.StatusOK {
			b.fatalf("an empty note: %d", status)
		}
		if flash := evalJS[string](b, `(document.querySelector('#compose .flash.bad') || {}).textContent || ''`); flash != "No note was added: the note is empty." {
			b.fatalf("the compose zone says %q", flash)
		}
		if notes, _ := env.Store.Notes(t.Context(), acc.ID, contactID); len(notes) != 2 {
			t.Fatalf("%d notes after an empty one, want 2", len(notes))
		}
	})

	t.Run("note and reply without script", func(t *testing.T) {
		noJS := openInbox(t, browser, srv)
		noJS.use(laptopSize)
		noJS.noScript()
		if status := noJS.open(conv); status != http.StatusOK {
			noJS.fatalf("conversation without script: %d", status)
		}
		if evalJS[bool](noJS, `document.documentElement.classList.contains('js')`) {
			noJS.fatalf("the script ran")
		}
		addNote(noJS, "Without script: gift wrap is free over €30.")
		if notes, _ := env.Store.Notes(t.Context(), acc.ID, contactID); len(notes) != 3 {
			t.Fatalf("%d notes after the note without script, want 3", len(notes))
		}
		if !strings.Contains(noJS.text(), "Without script: gift wrap is free") {
			noJS.fatalf("the note is not shown after adding it without script")
		}
		// Reply is the box shown when the page loads.
		noJS.fill(`#reply-body`, "Hi Rita, done: gift-wrapped and on its way to Rua das Flores.")
		if status := noJS.click(`#reply button[type=submit]`); status != http.StatusOK {
			noJS.fatalf("reply without script: %d", status)
		}
		msgs := apiMessages()
		last := msgs[len(msgs)-1].(map[string]any)
		if len(msgs) != 3 || last["direction"] != "outgoing" || !strings.HasPrefix(fmt.Sprint(last["body"]), "Hi Rita, done") {
			t.Fatalf("after the reply without script: %v", msgs)
		}
		if got := evalJS[string](noJS, `document.querySelector('.msg.outgoing .meta .author').textContent`); got != acc.Email {
			noJS.fatalf("the reply's author reads %q, want %s", got, acc.Email)
		}
	})
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// storyContact is a conversation with every kind of author: a campaign's opening, the lead's answer,
// the bot's reply, a hand-off (the alert and the bot's hand-off message), a teammate's note and a
// team reply.
type storyContact struct {
	contactID, fromID string
	alert             *models.Alert
	team, bot         *models.Message
	note              *models.Note
}

func (f *teamFixture) story(t *testing.T) *storyContact {
	t.Helper()
	s := &storyContact{fromID: "web-48213"}
	first := f.ingest(t, s.fromID, "Sofia", "Almeida", "Hi! I just signed up for your newsletter.")
	s.contactID = first.ContactID
	f.opening(t, []string{s.contactID}, []string{s.fromID})
	q := f.ingest(t, s.fromID, "", "", "Yes please! Do you have the Trail Runner in 39?")
	s.bot = f.bot(t, q, "All sizes from 36 to 46 are in stock, the Trail Runner in 39 too. Shall I book you a free fitting?")
	ask := f.ingest(t, s.fromID, "", "", "We are 6 friends running a marathon in May. Is there a group discount? I'd like to talk to someone.")
	var err error
	if s.alert, err = env.Store.Handoff(t.Context(), ask, "The contact asked for a person: group discount for 6 pairs"); err != nil {
		t.Fatal(err)
	}
	if s.alert.HandoffReply != nil {
		teamSQL(t, "UPDATE messages SET status = ? WHERE id = ?", models.StatusSent, s.alert.HandoffReply.ID)
	}
	if s.note, err = env.Store.AddNote(t.Context(), f.acc.ID, s.contactID, f.member,
		"Lena approved 15% off for groups of 5 or more this month. Offer Saturday 10:00, the store is quiet then."); err != nil {
		t.Fatal(err)
	}
	s.team = f.team(t, s.contactID, f.owner, "Hi Sofia, Maria here! Yes: 15% off all six pairs, and we can fit you all on Saturday at 10:00. Shall I book it?")
	// The story took the last hour: the sign-up 52 minutes ago, the hand-off 27, the note 9, the reply 3.
	var ids []string
	if err := env.Store.DB().NewSelect().Model((*models.Message)(nil)).Column("id").Where("contact_id = ?", s.contactID).Order("id").Scan(t.Context(), &ids); err != nil {
		t.Fatal(err)
	}
	ago := []time.Duration{52 * time.Minute, 51 * time.Minute, 44 * time.Minute, 43*time.Minute + 40*time.Second, 27 * time.Minute, 26*time.Minute + 55*time.Second, 3 * time.Minute}
	if len(ids) != len(ago) {
		t.Fatalf("Sofia's conversation has %d messages, want %d", len(ids), len(ago))
	}
	for i, id := range ids {
		f.at(t, "messages", id, ago[i])
	}
	f.at(t, "notes", s.note.ID, 9*time.Minute)
	f.at(t, "alerts", s.alert.ID, 27*time.Minute)
	return s
}

// at dates a row of the table (messages, notes, alerts) the duration ago.
func (f *teamFixture) at(t *testing.T, table, id string, ago time.Duration) {
	t.Helper()
	teamSQL(t, "UPDATE "+table+" SET created_at = ? WHERE id = ?", time.Now().Add(-ago).UTC(), id)
}

func TestInboxTeamAuthorsAndCannedReplies(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	s := f.story(t)
	sendCustom(t, srv, f.acc.key, s.fromID, "live-chat", "Your order NW-2291 has shipped.")
	for shortcut, body := range map[string]string{
		"hours":   "Hi {{firstName}}, we are open Monday to Saturday, 10:00 to 19:00.",
		"fitting": "Hi {{firstName}}, book a free fitting at northwind.example/fitting and we will keep your size ready.",
		"returns": "You can return any pair within 30 days, {{firstName}}: the label is free.",
	} {
		if _, err := env.Store.SaveCannedReply(t.Context(), f.acc.ID, "", shortcut, body); err != nil {
			t.Fatal(err)
		}
	}
	conv := "/inbox/conversations/" + s.contactID
	browser := startChromium(t)
	b := openInbox(t, browser, srv)
	b.use(laptopSize)
	b.signIn(f.acc.Email, inboxPassword)
	if status := b.open(conv); status != http.StatusOK {
		b.fatalf("conversation: %d", status)
	}

	t.Run("who wrote each message", func(t *testing.T) {
		authors := evalJS[[]string](b, `[...document.querySelectorAll('.msg.outgoing')].map(m => m.className.replace(/\s+/g, ' ') + ' = ' + m.querySelector('.meta .author').textContent)`)
		want := []string{
			"msg outgoing by-campaign = Campaign",
			"msg outgoing by-bot = Bot",
			"msg outgoing by-bot = Bot", // the hand-off message
			"msg outgoing by-human = " + f.ownerEmail,
			"msg outgoing by-api = API",
		}
		if fmt.Sprint(authors) != fmt.Sprint(want) {
			b.fatalf("the outgoing messages read\n%q\nwant\n%q", authors, want)
		}
		// The kinds look apart at a glance: each its own bubble and label colour.
		styles := evalJS[[]string](b, `['by-campaign', 'by-bot', 'by-human'].map(k => (m => getComputedStyle(m.querySelector('.bubble')).backgroundColor + ' ' + getComputedStyle(m.querySelector('.author')).color)(document.querySelector('.msg.' + k)))`)
		if styles[0] == styles[1] || styles[1] == styles[2] || styles[0] == styles[2] {
			b.fatalf("bot, campaign and team messages share a style: %q", styles)
		}
		if got := evalJS[string](b, `document.querySelector('.msg.by-human .author').title`); got != "Written by "+f.ownerEmail {
			b.fatalf("the team reply's author title reads %q", got)
		}
		// The member's note names the member.
		if got := evalJS[string](b, `document.querySelector('li.note .author').textContent`); got != f.memberEmail {
			b.fatalf("the note's author reads %q, want %s", got, f.memberEmail)
		}
	})

	t.Run("typing /ho offers hours, Enter puts it in filled", func(t *testing.T) {
		before := evalJS[int](b, `document.querySelectorAll('.msg').length`)
		b.mark()
		if err := chromedp.Do(b.ctx, chromedp.SendKeys(`#reply-body`, "/")); err != nil {
			b.fatal(err)
		}
		b.waitFor(liveWait, "the suggestions", `!!document.querySelector('#canned-suggest [role=option]')`)
		if all := evalJS[[]string](b, `[...document.querySelectorAll('#canned-suggest [role=option] code')].map(c => c.textContent)`); fmt.Sprint(all) != "[/fitting /hours /returns]" {
			b.fatalf("/ offers %q", all)
		}
		b.press("h", "o")
		b.waitFor(liveWait, "the suggestions for /ho", `document.querySelectorAll('#canned-suggest [role=option]').length === 1`)
		option := evalJS[[]string](b, `(o => [o.querySelector('code').textContent, o.querySelector('.prev').textContent, o.getAttribute('aria-selected'), document.getElementById('reply-body').getAttribute('aria-activedescendant'), document.getElementById('reply-body').getAttribute('aria-expanded')])(document.querySelector('#canned-suggest [role=option]'))`)
		if option[0] != "/hours" || option[1] != "Hi Sofia, we are open Monday to Saturday, 10:00 to 19:00." || option[2] != "true" || option[3] != "canned-option-0" || option[4] != "true" {
			b.fatalf("/ho offers %q", option)
		}
		b.press(kb.Enter)
		if got := evalJS[string](b, `document.getElementById('reply-body').value`); got != "Hi Sofia, we are open Monday to Saturday, 10:00 to 19:00." {
			b.fatalf("Enter put %q in the reply box", got)
		}
		if evalJS[bool](b, `!!document.getElementById('canned-suggest')`) {
			b.fatalf("the suggestions stay open after choosing")
		}
		b.stillSamePage()
		if n := evalJS[int](b, `document.querySelectorAll('.msg').length`); n != before {
			b.fatalf("Enter on a suggestion sent the reply")
		}
		// A click chooses too, and the arrows move.
		b.fill(`#reply-body`, "/")
		b.waitFor(liveWait, "the suggestions", `document.querySelectorAll('#canned-suggest [role=option]').length === 3`)
		b.press(kb.ArrowDown)
		if sel := evalJS[string](b, `document.querySelector('#canned-suggest [aria-selected=true] code').textContent`); sel != "/hours" {
			b.fatalf("ArrowDown selects %q", sel)
		}
		if err := chromedp.Do(b.ctx, chromedp.Click(chromedp.CSS(`#canned-suggest [data-index="0"]`))); err != nil {
			b.fatal(err)
		}
		if got := evalJS[string](b, `document.getElementById('reply-body').value`); !strings.HasPrefix(got, "Hi Sofia, book a free fitting") {
			b.fatalf("a click put %q in the reply box", got)
		}
		// Escape closes the suggestions, and the text stays.
		b.fill(`#reply-body`, "/ho")
		b.waitFor(liveWait, "the suggestions", `!!document.getElementById('canned-suggest')`)
		b.press(kb.Escape)
		if evalJS[bool](b, `!!document.getElementById('canned-suggest')`) || evalJS[string](b, `document.getElementById('reply-body').value`) != "/ho" {
			b.fatalf("Escape did not just close the suggestions")
		}
	})

	t.Run("without script, the list of canned replies", func(t *testing.T) {
		noJS := openInbox(t, browser, srv)
		noJS.use(laptopSize)
		noJS.noScript()
		noJS.open(conv)
		if err := chromedp.Do(noJS.ctx, chromedp.Click(chromedp.CSS(`details.canned summary`))); err != nil {
			noJS.fatal(err)
		}
		items := evalJS[[]string](noJS, `[...document.querySelectorAll('details.canned[open] li')].map(li => li.textContent.replace(/\s+/g, ' ').trim())`)
		if len(items) != 3 || items[1] != "/hours Hi Sofia, we are open Monday to Saturday, 10:00 to 19:00." {
			noJS.fatalf("the canned replies read %q", items)
		}
	})
}

// nothingPastTheScreen fails when the page scrolls sideways or an element reaches past the screen's
// edges; the lines of a phone's conversation header, cut with an ellipsis on purpose, are not counted.
func (b *inboxTab) nothingPastTheScreen(what string) {
	b.t.Helper()
	b.noHorizontalOverflow(what)
	wide := evalJS[[]string](b, `[...document.querySelectorAll('body *')].filter(e => {
		const r = e.getBoundingClientRect();
		return r.width > 0 && !e.closest('.convhead .title p, .sr-only') && (r.right > window.innerWidth + 0.5 || r.left < -0.5);
	}).slice(0, 8).map(e => e.tagName.toLowerCase() + (e.getAttribute('class') ? '.' + e.getAttribute('class') : '') + ' ' + Math.round(e.getBoundingClientRect().left) + '..' + Math.round(e.getBoundingClientRect().right))`)
	if len(wide) > 0 {
		b.fatalf("%s: elements past the screen: %q", what, wide)
	}
}

// saveWholePage saves a screenshot of the page (INBOX_SCREENSHOTS): on a laptop the whole page (up
// to 2000 px), taken in a window that tall so that what sticks to the bottom of the screen (the reply
// box) is drawn at the bottom; on a phone what the screen shows.
func (b *inboxTab) saveWholePage(name string, v screenSize) {
	b.t.Helper()
	if v.mobile || screenshotsDir() == "" {
		b.saveScreenshot(name, false, 0)
		return
	}
	h := min(2000, evalJS[float64](b, `document.documentElement.scrollHeight`))
	b.use(screenSize{name: v.name, width: v.width, height: max(v.height, int64(h))})
	b.waitFor(liveWait, "the page laid out in the tall window", `document.documentElement.scrollHeight <= window.innerHeight + 2 || window.innerHeight >= 2000`)
	time.Sleep(200 * time.Millisecond)
	b.saveScreenshot(name, false, 0)
	b.use(v)
}

// fatal ends the test with what the tab shows.
func (b *inboxTab) fatal(err error) { b.t.Helper(); b.fatalf("%v", err) }

var waitingText = regexp.MustCompile(`^waiting (2[34]) min$`)

func TestInboxTeamAlerts(t *testing.T) {
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	s := f.story(t)
	fresh := f.ingest(t, "leo-alerts", "Leo", "Park", "The app crashes when I pay.")
	freshAlert, err := env.Store.BotFailed(t.Context(), fresh, "The bot could not answer: payment problem")
	if err != nil {
		t.Fatal(err)
	}
	// Sofia's alert has waited 23 minutes.
	teamSQL(t, "UPDATE alerts SET created_at = ? WHERE id = ?", time.Now().Add(-23*time.Minute-10*time.Second).UTC(), s.alert.ID)
	// Escalation counts team replies since the alert: the reply of the story came after it.
	teamSQL(t, "UPDATE messages SET created_at = ? WHERE id = ?", time.Now().Add(-30*time.Minute).UTC(), s.team.ID)
	browser := startChromium(t)
	b := openInbox(t, browser, srv)
	b.use(laptopSize)
	b.signIn(f.acc.Email, inboxPassword)
	if status := b.open("/inbox/alerts"); status != http.StatusOK {
		b.fatalf("alerts: %d", status)
	}
	row := func(id string) string { return `document.querySelector('.alert[data-alert="` + id + `"]')` }
	if got := evalJS[string](b, row(s.alert.ID)+`.querySelector('.waiting').textContent`); !waitingText.MatchString(got) {
		b.fatalf("Sofia's alert reads %q, want waiting 23 min", got)
	}
	if got := evalJS[string](b, row(freshAlert.ID)+`.querySelector('.waiting').textContent`); got != "waiting under a minute" {
		b.fatalf("the new alert reads %q", got)
	}
	for id, want := range map[string]string{s.alert.ID: "Resolve alert for Sofia Almeida", freshAlert.ID: "Resolve alert for Leo Park"} {
		if got := evalJS[string](b, row(id)+`.querySelector('button').getAttribute('aria-label')`); got != want {
			b.fatalf("the Resolve button's name is %q, want %q", got, want)
		}
	}
	if got := evalJS[string](b, row(s.alert.ID)+`.querySelector('.reason').textContent`); got != "The contact asked for a person: group discount for 6 pairs" {
		b.fatalf("the reason reads %q", got)
	}
	if evalJS[bool](b, `!!document.querySelector('.mark.escalated')`) {
		b.fatalf("an alert is marked escalated before it was")
	}

	t.Run("an escalated alert shows its mark, live", func(t *testing.T) {
		b.waitLive()
		b.mark()
		escalated, err := env.Store.EscalateAlerts(t.Context(), time.Now(), 100)
		if err != nil {
			t.Fatal(err)
		}
		ours := 0
		for _, a := range escalated {
			if a.AccountID == f.acc.ID {
				ours++
				if a.ID != s.alert.ID {
					t.Fatalf("escalated %s, want only Sofia's %s", a.ID, s.alert.ID)
				}
			}
		}
		if ours != 1 {
			t.Fatalf("%d of the account's alerts escalated, want Sofia's", ours)
		}
		b.waitFor(liveWait, "the escalated mark", row(s.alert.ID)+`.classList.contains('escalated') && !!`+row(s.alert.ID)+`.querySelector('.mark.escalated time')`)
		b.stillSamePage()
		if got := evalJS[string](b, row(s.alert.ID)+`.querySelector('.mark.escalated').textContent`); !strings.HasPrefix(got, "Escalated ") {
			b.fatalf("the mark reads %q", got)
		}
		if evalJS[bool](b, `!!`+row(freshAlert.ID)+`.querySelector('.mark.escalated')`) {
			b.fatalf("the new alert is marked escalated")
		}
		// The conversation's banner says so too, and its button names the contact.
		b.open("/inbox/conversations/" + s.contactID)
		banner := evalJS[[]string](b, `(a => [a.textContent.replace(/\s+/g, ' '), a.querySelector('button').getAttribute('aria-label')])(document.querySelector('[data-live="conversation"] .alert'))`)
		if !strings.Contains(banner[0], "Escalated") || !strings.Contains(banner[0], "waiting 2") || banner[1] != "Resolve alert for Sofia Almeida" {
			b.fatalf("the conversation's alert reads %q", banner)
		}
	})
}

func TestInboxTeamKeyboard(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	var ids []string
	for _, c := range []struct{ from, first, body string }{
		{"ana-keys", "Ana", "Do you ship to Lisbon?"}, {"leo-keys", "Leo", "Where is my order?"}, {"tom-keys", "Tom", "Can I talk to someone?"},
	} {
		ids = append(ids, f.ingest(t, c.from, c.first, "Keys", c.body).ContactID)
	}
	tom := ids[2]
	tomMsg, err := report.New(env.Store).ConversationFor(t.Context(), f.acc.ID, tom, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	alert, err := env.Store.Handoff(t.Context(), &tomMsg.Messages[0], "The contact asked for a person")
	if err != nil {
		t.Fatal(err)
	}
	b := openInbox(t, startChromium(t), srv)
	b.use(laptopSize)
	b.signIn(f.acc.Email, inboxPassword)
	// Newest activity first: Tom, Leo, Ana.
	order := evalJS[[]string](b, `[...document.querySelectorAll('.conv')].map(c => c.dataset.contact)`)
	if fmt.Sprint(order) != fmt.Sprint([]string{ids[2], ids[1], ids[0]}) {
		b.fatalf("the list's order is %q", order)
	}
	focused := func() string {
		return evalJS[string](b, `(document.activeElement.closest('.conv') || {dataset: {}}).dataset.contact || document.activeElement.id || document.activeElement.tagName`)
	}

	t.Run("skip link and live regions", func(t *testing.T) {
		first := evalJS[[]string](b, `(a => [a.tagName, a.textContent, a.getAttribute('href')])(document.querySelector('body a, body button, body input'))`)
		if fmt.Sprint(first) != "[A Skip to content #main]" {
			b.fatalf("the first control is %q, want the Skip to content link", first)
		}
		b.press(kb.Tab)
		if got := evalJS[string](b, `document.activeElement.textContent`); got != "Skip to content" {
			b.fatalf("Tab first focuses %q", got)
		}
		if box := evalJS[[]float64](b, `(r => [r.top, r.height])(document.activeElement.getBoundingClientRect())`); box[0] < 0 || box[1] == 0 {
			b.fatalf("the focused skip link is off screen: %v", box)
		}
		b.press(kb.Enter)
		if got := evalJS[string](b, `document.activeElement.id`); got != "main" {
			b.fatalf("Skip to content moved the focus to %q", got)
		}
	})

	t.Run("j and k move in the list, Enter opens", func(t *testing.T) {
		b.press("j")
		if got := focused(); got != ids[2] {
			b.fatalf("j focuses %q, want the first conversation", got)
		}
		b.press("j", "j")
		if got := focused(); got != ids[0] {
			b.fatalf("j j focuses %q, want the third", got)
		}
		b.press("j")
		if got := focused(); got != ids[0] {
			b.fatalf("j past the end focuses %q", got)
		}
		b.press("k")
		if got := focused(); got != ids[1] {
			b.fatalf("k focuses %q, want the second", got)
		}
		if !evalJS[bool](b, `document.querySelector('.conv[data-contact="`+ids[1]+`"]').classList.contains('selected')`) {
			b.fatalf("the selected conversation is not marked")
		}
		b.press(kb.Enter)
		b.waitFor(liveWait, "Leo's conversation", `location.pathname === '/inbox/conversations/`+ids[1]+`' && document.readyState === 'complete'`)
	})

	t.Run("j and k on a conversation go to the next and previous of the list", func(t *testing.T) {
		b.press("j")
		b.waitFor(liveWait, "the next conversation (Ana)", `location.pathname === '/inbox/conversations/`+ids[0]+`' && document.readyState === 'complete'`)
		b.press("k")
		b.waitFor(liveWait, "back to Leo", `location.pathname === '/inbox/conversations/`+ids[1]+`' && document.readyState === 'complete'`)
		b.press("k")
		b.waitFor(liveWait, "Tom, the first", `location.pathname === '/inbox/conversations/`+tom+`' && document.readyState === 'complete'`)
		b.mark()
		b.press("k")
		time.Sleep(300 * time.Millisecond)
		b.stillSamePage()
		if got := evalJS[string](b, `(document.querySelector('.toast') || {}).textContent || ''`); got != "No previous conversation in the list" {
			b.fatalf("k on the first conversation says %q", got)
		}
	})

	t.Run("r focuses the reply box, keys typed there are text", func(t *testing.T) {
		b.press("r")
		if got := focused(); got != "reply-body" {
			b.fatalf("r focuses %q", got)
		}
		b.press("j", "k", "e", "?")
		if got := evalJS[string](b, `document.getElementById('reply-body').value`); got != "jke?" {
			b.fatalf("the reply box holds %q", got)
		}
		if p := b.path(); p != "/inbox/conversations/"+tom || evalJS[bool](b, `document.getElementById('shortcuts').open`) {
			b.fatalf("keys typed in the reply box acted as shortcuts")
		}
		b.press(kb.Escape)
		if got := focused(); got == "reply-body" {
			b.fatalf("Escape leaves the focus in the reply box")
		}
		b.press("n")
		if got := focused(); got != "note-body" || !evalJS[bool](b, `document.getElementById('mode-note').checked`) {
			b.fatalf("n focuses %q", got)
		}
		b.press(kb.Escape)
		evalJS[bool](b, `document.getElementById('reply-body').value = '', true`)
	})

	t.Run("? opens the help, Escape closes it", func(t *testing.T) {
		b.press("?")
		if !evalJS[bool](b, `document.getElementById('shortcuts').open`) {
			b.fatalf("? did not open the help")
		}
		help := evalJS[string](b, `document.getElementById('shortcuts').innerText`)
		for _, want := range []string{"Keyboard shortcuts", "Next / previous conversation", "Write a reply", "Resolve the conversation's alert"} {
			if !strings.Contains(help, want) {
				b.fatalf("the help reads %q, want %q in it", help, want)
			}
		}
		b.press(kb.Escape)
		if evalJS[bool](b, `document.getElementById('shortcuts').open`) {
			b.fatalf("Escape did not close the help")
		}
	})

	t.Run("e resolves the conversation's alert", func(t *testing.T) {
		if !evalJS[bool](b, `!!document.querySelector('[data-live="conversation"] .alert')`) {
			b.fatalf("Tom's conversation shows no alert")
		}
		b.press("e")
		b.waitFor(liveWait, "the alert resolved", `!document.querySelector('[data-live="conversation"] .alert') && document.body.innerText.includes('Alert resolved.')`)
		a, err := env.Store.AlertByID(t.Context(), alert.ID)
		if err != nil || a.ResolvedAt == nil {
			t.Fatalf("the alert after e: %+v (%v)", a, err)
		}
		if got := evalJS[string](b, `document.querySelector('.flash').getAttribute('aria-live')`); got != "polite" {
			b.fatalf("the flash message's aria-live is %q", got)
		}
	})
}

// TestInboxTeamScreenshots fills an account with a team's day (assignees, a note among the messages,
// team replies with their authors, the bot's and a campaign's messages, an escalated alert) and looks
// at the list, a conversation and the alerts at laptop and phone size: nothing may reach past the
// screen, and on a phone the reply box and the conversation's header stay on screen. With
// INBOX_SCREENSHOTS set to a directory, it saves conversations-laptop.png, conversation-laptop.png,
// conversation-phone.png and alerts-laptop.png there.
func TestInboxTeamScreenshots(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "maria.santos@northwind.example", "jonas.weber@northwind.example")
	// The conversations in the order of their last messages (the list's order is the messages').
	ana := f.ingest(t, "web-50390", "Ana", "Souza", "Hi! Do you ship to Lisbon?")
	f.at(t, "messages", ana.ID, 35*time.Minute)
	f.at(t, "messages", f.bot(t, ana, "We ship across Europe in 3 to 5 business days, free over €60.").ID, 35*time.Minute-15*time.Second)
	f.at(t, "messages", f.ingest(t, "web-50390", "", "", "Great, thanks! Is the green one in stock in 39?").ID, 33*time.Minute)
	s := f.story(t)
	for shortcut, body := range map[string]string{
		"hours":   "Hi {{firstName}}, we are open Monday to Saturday, 10:00 to 19:00.",
		"fitting": "Hi {{firstName}}, book a free fitting at northwind.example/fitting and we will keep your size ready.",
	} {
		if _, err := env.Store.SaveCannedReply(t.Context(), f.acc.ID, "", shortcut, body); err != nil {
			t.Fatal(err)
		}
	}
	f.assign(t, s.contactID, f.owner)
	// Sofia's hand-off waited 27 minutes: it was escalated 17 minutes after it was raised, before
	// Maria's reply (3 minutes ago).
	f.at(t, "messages", s.team.ID, 40*time.Minute)
	if _, err := env.Store.EscalateAlerts(t.Context(), time.Now().Add(-10*time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	f.at(t, "messages", s.team.ID, 3*time.Minute)
	tom := f.ingest(t, "web-51877", "Tom", "Becker", "Hi, the boots I got yesterday are a size too small.")
	f.at(t, "messages", tom.ID, 21*time.Minute)
	f.at(t, "messages", f.bot(t, tom, "Sorry about that! You can exchange them for free within 30 days: shall I send you a label?").ID, 21*time.Minute-20*time.Second)
	tomAsk := f.ingest(t, "web-51877", "", "", "Yes please, and can I talk to a person about the colour?")
	f.at(t, "messages", tomAsk.ID, 6*time.Minute)
	alert, err := env.Store.Handoff(t.Context(), tomAsk, "The contact asked for a person: exchange and colour")
	if err != nil {
		t.Fatal(err)
	}
	f.at(t, "alerts", alert.ID, 6*time.Minute)
	if alert.HandoffReply != nil {
		f.at(t, "messages", alert.HandoffReply.ID, 6*time.Minute-5*time.Second)
	}
	f.assign(t, tom.ContactID, f.member)
	f.at(t, "messages", f.team(t, tom.ContactID, f.member, "Hi Tom, Jonas here. The label is in your inbox; the brown ones are back on Friday.").ID, 2*time.Minute)
	lukas := f.ingest(t, "web-52240", "Lukas", "Meyer", "Do you have the Trail Runner in size 44?")
	f.at(t, "messages", lukas.ID, time.Minute)
	f.bot(t, lukas, "All sizes from 36 to 46 are in stock.")
	if err := env.Store.MarkRead(t.Context(), f.acc.ID, f.owner, ana.ContactID); err != nil {
		t.Fatal(err)
	}

	b := openInbox(t, startChromium(t), srv)
	b.use(laptopSize)
	b.signIn(f.acc.Email, inboxPassword)
	conv := "/inbox/conversations/" + s.contactID
	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		for _, p := range []struct{ path, name string }{{"/inbox/", "conversations"}, {conv, "conversation"}, {"/inbox/alerts", "alerts"}} {
			if status := b.open(p.path); status != http.StatusOK {
				b.fatalf("GET %s: %d", p.path, status)
			}
			b.nothingPastTheScreen(p.name + " on a " + v.name)
			if size := evalJS[float64](b, `Math.min(...[...document.querySelectorAll('main *')].filter(e => e.offsetParent && !e.closest('.convhead') && e.childNodes.length && [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())).map(e => parseFloat(getComputedStyle(e).fontSize)))`); size < 11 {
				b.fatalf("%s on a %s has text of %v px", p.name, v.name, size)
			}
			switch p.name {
			case "conversations":
				if got := evalJS[string](b, `document.querySelector('.conv[data-contact="`+s.contactID+`"] .owner').textContent`); !strings.Contains(got, f.ownerEmail) {
					b.fatalf("Sofia's row shows the assignee %q", got)
				}
			case "conversation":
				b.waitFor(liveWait, "the conversation scrolled to its end", `window.innerHeight + window.scrollY >= document.body.scrollHeight - 2`)
				onScreen := []string{"#reply textarea", "#reply button", "label.mode-reply", "label.mode-note"}
				if v.mobile {
					onScreen = append(onScreen, ".convhead h1", ".convhead .botstate button")
				}
				for _, sel := range onScreen {
					box := evalJS[[]float64](b, `(r => [r.left, r.top, r.right, r.bottom, r.width, r.height])(document.querySelector('`+sel+`').getBoundingClientRect())`)
					w, h := float64(v.width), float64(v.height)
					if box[4] == 0 || box[5] == 0 || box[0] < 0 || box[1] < 0 || box[2] > w || box[3] > h {
						b.fatalf("%s on a %s is not on screen: %v in %vx%v", sel, v.name, box, w, h)
					}
				}
				kinds := evalJS[[]string](b, `[...document.querySelectorAll('.messages > li')].map(li => li.classList.contains('note') ? 'note' : [...li.classList].filter(c => c.startsWith('by-') || c === 'incoming').join(''))`)
				want := "[incoming by-campaign incoming by-bot incoming by-bot note by-human]"
				if fmt.Sprint(kinds) != want {
					b.fatalf("Sofia's timeline is %v, want %s", kinds, want)
				}
				if v.mobile {
					// The note's card and the messages stay inside the screen.
					if box := evalJS[[]float64](b, `(r => [r.left, r.right])(document.querySelector('.note .notecard').getBoundingClientRect())`); box[0] < 0 || box[1] > float64(v.width) {
						b.fatalf("the note's card is at %v on a phone", box)
					}
				}
			case "alerts":
				if !evalJS[bool](b, `!!document.querySelector('.alert.escalated .mark.escalated')`) {
					b.fatalf("the escalated alert has no mark")
				}
			}
			if name := p.name + "-" + v.name + ".png"; teamScreenshots[name] {
				b.saveWholePage(name, v)
			}
		}
	}

	t.Run("the open canned replies and the help on a phone", func(t *testing.T) {
		b.use(phoneSize)
		b.open(conv)
		if err := chromedp.Do(b.ctx, chromedp.SendKeys(`#reply-body`, "/")); err != nil {
			b.fatal(err)
		}
		b.waitFor(liveWait, "the suggestions", `!!document.querySelector('#canned-suggest [role=option]')`)
		b.nothingPastTheScreen("the canned suggestions on a phone")
		if box := evalJS[[]float64](b, `(r => [r.top, r.bottom])(document.getElementById('canned-suggest').getBoundingClientRect())`); box[0] < 0 {
			b.fatalf("the suggestions start above the screen: %v", box)
		}
		b.press(kb.Escape, kb.Escape)
		b.press("?")
		b.nothingPastTheScreen("the help on a phone")
		b.press(kb.Escape)
		b.use(laptopSize)
	})
}
