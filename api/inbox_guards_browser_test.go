package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"funnelchat/models"
)

// The pages of inbox_routing_test.go and inbox_fixes_test.go in a real browser, at laptop and phone
// size (screenshots with INBOX_SCREENSHOTS): the deliveries that gave up apart from those retrying,
// with the navigation's count; a member's read-only settings; the inbox's own 404 page; the
// conversation list paged back; and the Consent and Goal cards folded on a phone.

// visibleCount is the count a navigation entry shows ("" when none), without what only a screen
// reader reads.
func (b *inboxTab) visibleCount(name string) string {
	b.t.Helper()
	return evalJS[string](b, `(e => e ? [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim() : 'none')(document.querySelector('.navcount[data-count="`+name+`"]'))`)
}

// failedFor stores a team reply to the contact whose delivery failed: retrying (a next attempt in an
// hour) or given up (the receiver's final answer), as the worker records them.
func (f *teamFixture) failedFor(t *testing.T, contactID, body string, retrying bool) *models.Message {
	t.Helper()
	m, err := env.Store.HumanReply(t.Context(), f.acc.ID, contactID, f.owner, body, "")
	if err != nil {
		t.Fatal(err)
	}
	out := models.AttemptOutcome{StatusCode: 410, Error: "webhook answered 410: chat session closed"}
	if retrying {
		next := time.Now().Add(time.Hour)
		out = models.AttemptOutcome{StatusCode: 503, Error: "webhook answered 503: upstream unavailable", NextAttemptAt: &next}
	}
	if err := env.Store.RecordAttempt(t.Context(), m.ID, out); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInboxBrowserDeliveriesGaveUpAndRetrying(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "paula.rocha@northwind.example", "")
	ana := f.ingest(t, "web-61001", "Ana", "Souza", "Hi! Is my order on its way?")
	tom := f.ingest(t, "web-61002", "Tom", "Becker", "Can I change my size?")
	mia := f.ingest(t, "web-61003", "Mia", "Haddad", "Do you ship to Madeira?")
	old := f.failedFor(t, mia.ContactID, "Yes, we ship to Madeira: 3 to 5 business days.", false)
	teamSQL(t, "UPDATE messages SET given_up_at = ?, created_at = ? WHERE id = ?", time.Now().Add(-8*24*time.Hour).UTC(), time.Now().Add(-8*24*time.Hour).UTC(), old.ID)
	gaveUp := []*models.Message{
		f.failedFor(t, ana.ContactID, "Your order NW-2291 left our Lisbon warehouse this morning.", false),
		f.failedFor(t, tom.ContactID, "Here is your exchange label: print it and drop the parcel at any post office.", false),
	}
	retrying := []*models.Message{
		f.failedFor(t, ana.ContactID, "Thanks Ana! Size 39 is back in stock: shall I keep a pair aside?", true),
		f.failedFor(t, tom.ContactID, "Your fitting is booked for Saturday at 10:00 at our Porto store.", true),
	}
	rowIDs := func(b *inboxTab) []string {
		return evalJS[[]string](b, `[...document.querySelectorAll('#deliveries tbody tr')].map(tr => tr.dataset.messageId)`)
	}
	ids := func(ms ...*models.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		slices.Sort(out)
		slices.Reverse(out)
		return out
	}

	b := openInbox(t, startChromium(t), srv)
	b.use(laptopSize)
	b.signIn(f.acc.Email, inboxPassword)
	// The navigation counts the deliveries that gave up in the last 7 days, on every page.
	for _, page := range []string{"/inbox/", "/inbox/alerts", "/inbox/settings"} {
		b.open(page)
		if got := b.visibleCount("gaveUp"); got != "2" {
			b.fatalf("%s: the Deliveries entry shows %q, want 2 (the one 8 days old not counted)", page, got)
		}
	}
	if name := evalJS[string](b, `(a => a.textContent.replace(/\s+/g, ' ').trim())(document.querySelector('.top nav a[href="/inbox/deliveries"]'))`); name != "Deliveries: 2 gave up in the last 7 days" {
		b.fatalf("the Deliveries entry reads %q to a screen reader", name)
	}

	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		if status := b.click(`.top nav a[href="/inbox/deliveries"]`); status != http.StatusOK {
			b.fatalf("the Deliveries entry: %d", status)
		}
		tabs := evalJS[[]string](b, `[...document.querySelectorAll('.deliverytabs a')].map(a => a.textContent.replace(/\s+/g, ' ').trim() + (a.getAttribute('aria-current') ? ' (current)' : ''))`)
		if !slices.Equal(tabs, []string{"Gave up 3 (current)", "Retrying 2"}) {
			b.fatalf("the tabs on a %s read %q", v.name, tabs)
		}
		if got, want := rowIDs(b), ids(append([]*models.Message{old}, gaveUp...)...); !slices.Equal(got, want) {
			b.fatalf("Gave up lists %q, want %q", got, want)
		}
		if n := evalJS[int](b, `document.querySelectorAll('#deliveries .givenup').length`); n != 3 || strings.Contains(b.text(), "next ") {
			b.fatalf("Gave up shows %d rows that gave up, or a next attempt:\n%s", n, b.text())
		}
		b.nothingPastTheScreen("the deliveries that gave up on a " + v.name)
		b.saveWholePage("deliveries-gave-up-"+v.name+".png", v)
		if status := b.click(`.deliverytabs a[href="/inbox/deliveries?state=retrying"]`); status != http.StatusOK {
			b.fatalf("the Retrying tab: %d", status)
		}
		if got, want := rowIDs(b), ids(retrying...); !slices.Equal(got, want) {
			b.fatalf("Retrying lists %q, want %q", got, want)
		}
		if n := evalJS[int](b, `document.querySelectorAll('#deliveries .next time').length`); n != 2 || evalJS[int](b, `document.querySelectorAll('#deliveries .givenup').length`) != 0 {
			b.fatalf("Retrying shows %d next attempts", n)
		}
		if cur := evalJS[string](b, `document.querySelector('.deliverytabs a[aria-current=page]').textContent.replace(/\s+/g, ' ').trim()`); cur != "Retrying 2" {
			b.fatalf("the current tab is %q", cur)
		}
		b.nothingPastTheScreen("the deliveries retrying on a " + v.name)
		b.saveWholePage("deliveries-retrying-"+v.name+".png", v)
	}

	t.Run("Retry from the Retrying tab comes back to it", func(t *testing.T) {
		b.use(laptopSize)
		b.open("/inbox/deliveries?state=retrying")
		if status := b.click(`#deliveries tr[data-message-id="` + retrying[0].ID + `"] td.retry button`); status != http.StatusOK {
			b.fatalf("Retry: %d", status)
		}
		if p := b.path(); p != "/inbox/deliveries?state=retrying" {
			b.fatalf("Retry went to %s", p)
		}
		if got := rowIDs(b); !slices.Equal(got, []string{retrying[1].ID}) {
			b.fatalf("after Retry, Retrying lists %q", got)
		}
	})

	t.Run("the count follows a delivery that gives up, live", func(t *testing.T) {
		b.open("/inbox/")
		b.waitLive()
		b.mark()
		if err := env.Store.RecordAttempt(t.Context(), retrying[1].ID, models.AttemptOutcome{StatusCode: 410, Error: "webhook answered 410"}); err != nil {
			t.Fatal(err)
		}
		b.waitFor(liveWait, "the count of deliveries that gave up at 3", `document.querySelector('.navcount[data-count="gaveUp"]').firstChild && document.querySelector('.navcount[data-count="gaveUp"]').textContent.indexOf(': 3 ') === 0`)
		b.stillSamePage()
		if got := b.visibleCount("gaveUp"); got != "3" {
			b.fatalf("the count shows %q", got)
		}
	})
}

func TestInboxBrowserMemberSeesWhereMessagesGoReadOnly(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	acc := adminAccount(t, "carla.mendes@northwind.example", "Northwind")
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", acc.key, map[string]any{"url": "https://hooks.northwind.example/funnelchat/replies"}), http.StatusOK, "")
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/alert_webhook", acc.key, map[string]any{"url": "https://hooks.northwind.example/funnelchat/alerts"}), http.StatusOK, "")
	added, err := env.Store.AddUser(t.Context(), acc.ID, adminEmail("rui.pinto@northwind.example"), models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	b := openInbox(t, startChromium(t), srv)
	b.use(laptopSize)
	b.signIn(added.User.Email, added.Password)
	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		if status := b.open("/inbox/settings"); status != http.StatusOK {
			b.fatalf("settings: %d", status)
		}
		for _, c := range []struct{ section, shown string }{
			{"webhook", "https://hooks.northwind.example/funnelchat/replies"},
			{"alerts", "https://hooks.northwind.example/funnelchat/alerts"},
		} {
			text := evalJS[string](b, `document.getElementById('`+c.section+`').innerText`)
			if evalJS[bool](b, `!!document.querySelector('#`+c.section+` input[name=url]')`) || !strings.Contains(text, c.shown) || !strings.Contains(text, "Only the account's owners can change where") {
				b.fatalf("a member's %s section on a %s:\n%s", c.section, v.name, text)
			}
		}
		bot := evalJS[string](b, `document.getElementById('bot').innerText`)
		if evalJS[bool](b, `!!document.querySelector('#bot input[name=active]')`) || !strings.Contains(bot, "Bot on") || !strings.Contains(bot, "Only the account's owners can switch the bot off.") {
			b.fatalf("a member's bot section on a %s:\n%s", v.name, bot)
		}
		b.nothingPastTheScreen("a member's settings on a " + v.name)
		evalJS[bool](b, `document.getElementById('webhook').scrollIntoView(), true`)
		b.saveScreenshot("settings-member-"+v.name+".png", false, 0)
	}
	// The member saves the rest of the bot's form; the bot stays on.
	b.use(laptopSize)
	b.open("/inbox/settings")
	b.fill(`#bot textarea[name=instructions]`, "Answer in one sentence.")
	if status := b.click(`#bot button[type=submit]`); status != http.StatusOK {
		b.fatalf("saving the bot form: %d", status)
	}
	if flash := b.adminFlash("#bot"); flash != "Bot settings saved." {
		b.fatalf("the bot section says %q", flash)
	}
	if bot, err := env.Store.BotSettings(t.Context(), acc.ID); err != nil || !bot.Active || bot.Instructions != "Answer in one sentence." {
		t.Fatalf("after the member's save: %+v %v", bot, err)
	}
}

func TestInboxBrowserNotFoundPage(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	b := acc.signedIn(t, srv)
	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		if status := b.open("/inbox/nope"); status != http.StatusNotFound {
			b.fatalf("/inbox/nope: %d", status)
		}
		if h := evalJS[string](b, `document.querySelector('main h1').textContent`); h != "Not found" || !evalJS[bool](b, `!!document.querySelector('.top nav')`) {
			b.fatalf("the 404 page on a %s:\n%s", v.name, b.text())
		}
		b.nothingPastTheScreen("the 404 page on a " + v.name)
		b.saveScreenshot("not-found-"+v.name+".png", false, 0)
		if status := b.click(`main a[href="/inbox/"]`); status != http.StatusOK || b.path() != "/inbox/" {
			b.fatalf("the way back: %d %s", status, b.path())
		}
	}
}

func TestInboxBrowserConversationListPagesBack(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	// 65 conversations, the newest last; the list shows 30 a page.
	var contacts []string
	for i := range 65 {
		m := f.ingest(t, fmt.Sprintf("page-%02d", i), "Lead", fmt.Sprintf("%02d", i), fmt.Sprintf("Message %02d", i))
		contacts = append(contacts, m.ContactID)
	}
	slices.Reverse(contacts)
	b := openInbox(t, startChromium(t), srv)
	b.use(laptopSize)
	b.signIn(f.acc.Email, inboxPassword)
	listed := func() []string {
		return evalJS[[]string](b, `[...document.querySelectorAll('[data-live="list"] .conv')].map(li => li.dataset.contact)`)
	}
	links := func() []string {
		return evalJS[[]string](b, `[...document.querySelectorAll('.pager a')].map(a => a.textContent.trim())`)
	}
	b.open("/inbox/")
	if got := listed(); !slices.Equal(got, contacts[:30]) || !slices.Equal(links(), []string{"Older conversations"}) {
		b.fatalf("the first page: %d rows, links %q", len(got), links())
	}
	b.click(`.pager a.older`)
	if got := listed(); !slices.Equal(got, contacts[30:60]) || !slices.Equal(links(), []string{"Newest", "Newer conversations", "Older conversations"}) {
		b.fatalf("the second page: %d rows, links %q", len(got), links())
	}
	second := b.path()
	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		b.open(second)
		b.nothingPastTheScreen("the second page on a " + v.name)
		evalJS[bool](b, `document.querySelector('.pager').scrollIntoView({block: 'end'}), true`)
		b.saveScreenshot("conversations-page-2-"+v.name+".png", false, 0)
	}
	b.use(laptopSize)
	b.open(second)
	b.click(`.pager a.older`)
	if got := listed(); !slices.Equal(got, contacts[60:]) || !slices.Equal(links(), []string{"Newest", "Newer conversations"}) {
		b.fatalf("the third page: %d rows, links %q", len(got), links())
	}
	b.click(`.pager a.newer`)
	if got := listed(); !slices.Equal(got, contacts[30:60]) {
		b.fatalf("Newer from the third page lists %d rows, not the second page", len(got))
	}
	b.click(`.pager a.newer`)
	if got := listed(); !slices.Equal(got, contacts[:30]) || !slices.Equal(links(), []string{"Older conversations"}) {
		b.fatalf("Newer from the second page: %d rows, links %q, want the first page", len(got), links())
	}
	// The filters stay on: unread only (the owner read lead 64 and 63), both ways.
	for _, id := range contacts[:2] {
		if err := env.Store.MarkRead(t.Context(), f.acc.ID, f.owner, id); err != nil {
			t.Fatal(err)
		}
	}
	b.open("/inbox/?unread=true")
	b.click(`.pager a.older`)
	if got := listed(); !slices.Equal(got, contacts[32:62]) || !strings.Contains(b.path(), "unread=true") {
		b.fatalf("the second unread page (%s): %d rows", b.path(), len(got))
	}
	b.click(`.pager a.newer`)
	if got := listed(); !slices.Equal(got, contacts[2:32]) || !strings.Contains(b.path(), "unread=true") {
		b.fatalf("back to the first unread page (%s): %d rows", b.path(), len(got))
	}
	b.click(`.pager a.older`)
	b.click(`.pager a.newest`)
	if p := b.path(); p != "/inbox/?unread=true" {
		b.fatalf("Newest went to %s", p)
	}
	// A cursor the inbox did not make is the 404 page.
	if status := b.open("/inbox/?newer=" + strings.Repeat("x", 80)); status != http.StatusNotFound {
		b.fatalf("a made-up newer: %d", status)
	}
}

func TestInboxBrowserCompactPanelsOnAPhone(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := newTeamFixture(t, "sara.nunes@northwind.example", "")
	first := f.ingest(t, "web-70001", "Sofia", "Almeida", "Hi! We are 6 friends running a marathon in May.")
	f.bot(t, first, "Great! Our trail runners come in sizes 36 to 46.")
	f.ingest(t, "web-70001", "", "", "Is there a group discount?")
	f.team(t, first.ContactID, f.owner, "Yes: 15% off for groups of 5 or more this month.")
	f.ingest(t, "web-70001", "", "", "Perfect, can we come on Saturday?")
	f.team(t, first.ContactID, f.owner, "Saturday at 10:00 works. See you then!")
	setConsent(t, f.acc, first.ContactID, models.ConsentInput{Status: models.ConsentOptedIn, Text: "Ticked the box on the sign-up form"})
	if _, _, err := env.Store.ReachGoal(t.Context(), f.acc.ID, first.ContactID, models.GoalInput{Source: models.GoalSourceAPI, Note: "Booked the group fitting"}); err != nil {
		t.Fatal(err)
	}
	path := "/inbox/conversations/" + first.ContactID
	b := openInbox(t, startChromium(t), srv)
	b.use(laptopSize)
	b.signIn(f.acc.Email, inboxPassword)
	visible := func(sel string) bool {
		return evalJS[bool](b, `(e => !!e && e.checkVisibility() && e.getBoundingClientRect().height > 0)(document.querySelector('`+sel+`'))`)
	}

	// A laptop: both cards open, their contents shown.
	b.open(path)
	for _, sel := range []string{"#consent .consentlist", "#consent .consenthistory", "#goal .goallist"} {
		if !visible(sel) {
			b.fatalf("%s is hidden on a laptop", sel)
		}
	}
	b.saveWholePage("conversation-panels-laptop.png", laptopSize)

	// A phone: each card is one line saying its state, and the messages have the screen.
	b.use(phoneSize)
	b.open(path)
	for _, sel := range []string{"#consent .consentlist", "#consent .consentform", "#goal .goalstate"} {
		if visible(sel) {
			b.fatalf("%s is shown on a phone before it is opened", sel)
		}
	}
	sums := evalJS[[]string](b, `[...document.querySelectorAll('.panel > summary')].map(s => s.innerText.replace(/\s+/g, ' ').trim())`)
	if !slices.Equal(sums, []string{"Consent All channels: opted in", "Goal Reached"}) {
		b.fatalf("the cards' lines read %q", sums)
	}
	if show := evalJS[string](b, `getComputedStyle(document.querySelector('#consent > summary'), '::after').content`); show != `"Show"` {
		b.fatalf("a folded card offers %s, want Show", show)
	}
	height := evalJS[float64](b, `(r => r.height)(document.querySelector('.convpanels').getBoundingClientRect())`)
	if height > 110 {
		b.fatalf("the two cards take %v px of an 844 px screen", height)
	}
	// From the top of the page, the messages start right below the cards: more than two show.
	evalJS[bool](b, `window.scrollTo(0, 0), true`)
	shown := evalJS[int](b, `[...document.querySelectorAll('.messages > li')].filter(li => { const r = li.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight - document.querySelector('.replyzone').getBoundingClientRect().height; }).length`)
	if shown < 4 {
		b.fatalf("%d messages show under the cards on a phone", shown)
	}
	b.nothingPastTheScreen("the conversation on a phone")
	b.saveScreenshot("conversation-panels-phone.png", false, 0)

	// A tap opens a card; a link to it (the opted-out notice's) and an action's result open it too.
	if err := chromedp.Do(b.ctx, chromedp.Click(`#consent > summary`)); err != nil {
		b.fatal(err)
	}
	b.waitFor(liveWait, "the consent card open", `document.getElementById('consent').open`)
	if !visible("#consent .consentlist") {
		b.fatalf("the opened consent card hides its state")
	}
	evalJS[bool](b, `document.getElementById('consent').scrollIntoView(), true`)
	b.saveScreenshot("conversation-consent-open-phone.png", false, 0)
	b.open("/inbox/") // a new document: a fragment alone would load nothing
	b.open(path + "#goal")
	if !evalJS[bool](b, `document.getElementById('goal').open && !document.getElementById('consent').open`) {
		b.fatalf("the address #goal does not open the goal card alone")
	}
	b.open(path)
	b.adminOpen("#consent")
	b.adminOpen("#consent .consentform")
	evalJS[bool](b, `document.querySelector('#consent .consentform input[value=opted_out]').checked = true`)
	b.fill(`#consent .consentform textarea[name=note]`, "Asked by phone to get no more texts")
	if status := b.click(`#consent .consentform button[type=submit]`); status != http.StatusOK {
		b.fatalf("recording consent: %d", status)
	}
	if !evalJS[bool](b, `document.getElementById('consent').open`) || !visible("#consent .flash") {
		b.fatalf("the consent card with the result of recording consent is closed")
	}
	if sum := evalJS[string](b, `document.querySelector('#consent .panelsum').textContent.trim()`); !strings.HasPrefix(sum, "Opted out on") {
		b.fatalf("the consent card's line reads %q after opting out", sum)
	}
}
