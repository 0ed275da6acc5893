package api_test

import (
	"encoding/csv"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"funnelchat/models"
	"funnelchat/models/report"
)

// The campaign page and the Goal reached button, in a real browser: a campaign whose every number is
// known (built through the store, as the worker and the API would), its funnel drawn to scale, its
// variants, days and sends, the same page with script turned off, its CSV, and goals recorded from a
// conversation that the page then counts.

// campaignFixture is a campaign of 70 contacts, 35 per opening variant, each brought to a planned
// point; the numbers the page must show follow from the plan (see buildCampaignFixture).
type campaignFixture struct {
	acc      browserAccount
	campaign *models.Campaign
	// contacts are the added contacts in the order they were added.
	contacts []string
	// buttonContact opened variant A and replied, with no goal: the Goal reached button's contact.
	buttonContact string
}

// The plan's totals, before the button records one more goal.
const (
	fxAdded, fxOpened, fxReplied, fxGoal = 70, 56, 28, 20
	fxQueued, fxPending, fxFailed        = 2, 1, 5
	fxSuppressed, fxDeferred, fxSkipped  = 3, 2, 1
	fxHandedOff, fxOptedOut              = 2, 1
)

// fxPlan is one contact's part in the campaign.
type fxPlan struct {
	variant         int
	status          string
	replied, goal   bool
	handoff, optOut bool
}

// campaignPlan lists the contacts' parts, the variants interleaved as they are added:
//
//	A (variant 0): 29 opened, 17 of them replied, 14 reached the goal, 2 handed off; 2 failed,
//	1 suppressed, 1 deferred, 1 queued, 1 pending
//	B (variant 1): 27 opened, 11 replied, 6 reached the goal, 1 opted out; 3 failed, 2 suppressed,
//	1 skipped, 1 deferred, 1 queued
//
// A's goal rate (14/29) is above B's (6/27) by a one-sided two-proportion test at 95% (z = 2.03), so
// A is the best variant, and stays it with one more goal for A (z = 2.28).
func campaignPlan() []fxPlan {
	side := func(variant, opened, replied, goals, handoffs, optOuts int, others ...string) []fxPlan {
		var out []fxPlan
		for i := range opened {
			p := fxPlan{variant: variant, status: models.SendSent, replied: i < replied, goal: i < goals}
			p.handoff = i >= goals && i < goals+handoffs
			p.optOut = i >= goals && i < goals+optOuts
			out = append(out, p)
		}
		for _, st := range others {
			out = append(out, fxPlan{variant: variant, status: st})
		}
		return out
	}
	a := side(0, 29, 17, 14, 2, 0, models.SendFailed, models.SendFailed, models.SendSuppressed, models.SendDeferred, models.SendQueued, models.SendPending)
	b := side(1, 27, 11, 6, 0, 1, models.SendFailed, models.SendFailed, models.SendFailed, models.SendSuppressed, models.SendSuppressed,
		models.SendSkipped, models.SendQueued, models.SendDeferred)
	var out []fxPlan
	for i := range max(len(a), len(b)) {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}

var fxFirst = []string{"Sofia", "Lucas", "Ana", "Tom", "Mia", "Jonas", "Lea", "Omar", "Ines", "Pedro", "Clara", "Ravi",
	"Emma", "Hugo", "Nora", "Diego", "Alma", "Felix", "Yara", "Theo", "Marta", "Ivan", "Lina"}
var fxLast = []string{"Costa", "Weber", "Souza", "Becker", "Haddad", "Silva", "Novak", "Moreau", "Ferreira", "Lindqvist", "Rossi",
	"Gomes", "Kaur"}

// campaignRun numbers the fixtures of this process, so that a repeated run (-count) gets its own
// owner email.
var campaignRun atomic.Int64

// buildCampaignFixture makes the account (its days are Lisbon's) and the campaign, adds the 70
// contacts and brings each to its planned point through the store: openings written and settled,
// replies ingested, goals reached, a hand-off, an opt-out. The times of what happened are then spread
// over the last six days (openings at different hours of five days, replies 5 minutes to 3 hours
// after, goals 1 to 11 hours after), as rows the store stamped with the clock.
func buildCampaignFixture(t *testing.T) *campaignFixture {
	t.Helper()
	ctx := t.Context()
	email := "maria@northwind.example"
	if n := campaignRun.Add(1); n > 1 {
		email = fmt.Sprintf("maria+%d@northwind.example", n)
	}
	created, err := env.Store.CreateAccount(ctx, models.NewAccount{Email: email, Name: "Northwind"})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.SetPassword(ctx, created.Account.OwnerUserID, inboxPassword); err != nil {
		t.Fatal(err)
	}
	f := &campaignFixture{acc: browserAccount{Account: created.Account, key: created.APIKey}}
	accID := f.acc.ID
	tz := "Europe/Lisbon"
	if _, err := env.Store.UpdateComplianceSettings(ctx, accID, models.ComplianceInput{TimeZone: &tz}); err != nil {
		t.Fatal(err)
	}
	list, err := env.Store.CreateList(ctx, accID, "Spring newsletter sign-ups")
	if err != nil {
		t.Fatal(err)
	}
	name, channel, status, goal := "Spring collection welcome", "custom:live-chat", models.CampaignLive, "Book a free fitting at your nearest store"
	variants := []string{
		"Hi {{firstName}}, thanks for signing up! Our spring collection is out today: shall we save you a free fitting this week?",
		"{{firstName}}, the spring collection just landed. Reply FIT and we will book you a free fitting at your nearest store.",
	}
	f.campaign, err = env.Store.CreateCampaign(ctx, accID, models.CampaignInput{Name: &name, Channel: &channel, Status: &status,
		OpeningMessages: &variants, Goal: &goal, ListID: &list.ID})
	if err != nil {
		t.Fatal(err)
	}

	plan := campaignPlan()
	fromID := func(i int) string { return fmt.Sprintf("lead-%s-%d", accID, i) }
	ingest := func(i int, body string) *models.Message {
		t.Helper()
		in := models.IncomingInput{ExternalID: fmt.Sprintf("%s-%d-%d", accID, i, time.Now().UnixNano()), FromID: fromID(i), ToID: "northwind",
			Body: body, Channel: "live-chat", FirstName: fxFirst[i%len(fxFirst)], LastName: fxLast[(i*5)%len(fxLast)]}
		if err := in.Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
		m, _, err := env.Store.IngestIncoming(ctx, accID, in)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	set := func(query string, args ...any) {
		t.Helper()
		if _, err := env.Store.DB().NewRaw(query, args...).Exec(ctx); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	for i := range plan {
		f.contacts = append(f.contacts, ingest(i, "Hi! I just signed up for the spring newsletter.").ContactID)
	}
	// Six days ago at 09:00 in Lisbon: every time below stays in the past.
	lisbon, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().In(lisbon)
	base := time.Date(now.Year(), now.Month(), now.Day()-6, 9, 0, 0, 0, lisbon).UTC()
	// The messages that made the contacts came before any opening (else they would count as replies).
	set("UPDATE messages SET created_at = ? WHERE account_id = ?", base.Add(-time.Hour), accID)

	added, err := env.Store.AddToList(ctx, accID, list.ID, f.contacts)
	if err != nil {
		t.Fatal(err)
	}
	if len(added.Sends) != len(plan) {
		t.Fatalf("AddToList owed %d openings, want %d", len(added.Sends), len(plan))
	}
	sends := map[string]string{}
	for _, d := range added.Sends {
		s, err := env.Store.CampaignSend(ctx, d.SendID)
		if err != nil {
			t.Fatal(err)
		}
		sends[s.ContactID] = s.ID
	}
	opened := 0
	for i, p := range plan {
		contactID, sendID := f.contacts[i], sends[f.contacts[i]]
		// The variant is the store's random pick; the plan fixes it.
		set("UPDATE campaign_sends SET variant = ? WHERE id = ?", p.variant, sendID)
		send, err := env.Store.CampaignSend(ctx, sendID)
		if err != nil {
			t.Fatal(err)
		}
		contact, err := env.Store.ContactByID(ctx, accID, contactID)
		if err != nil {
			t.Fatal(err)
		}
		write := func() *models.Message {
			t.Helper()
			m, err := env.Store.WriteOpening(ctx, send, models.OutgoingMessage{Campaign: f.campaign, Contact: contact,
				Body: models.Personalize(f.campaign.OpeningFor(p.variant), contact), ToID: fromID(i)})
			if err != nil || m == nil {
				t.Fatalf("write the opening of contact %d: %v", i, err)
			}
			return m
		}
		switch p.status {
		case models.SendSent:
			k := opened
			opened++
			sentAt := base.Add(time.Duration(k%5)*24*time.Hour + time.Duration(k*47%480)*time.Minute)
			m := write()
			set("UPDATE messages SET created_at = ?, status = ? WHERE id = ?", sentAt.Add(-time.Second), models.StatusSent, m.ID)
			if _, err := env.Store.SettleOpening(ctx, m.ID, true, sentAt, ""); err != nil {
				t.Fatal(err)
			}
			if p.replied {
				reply := ingest(i, "Yes please! Is Saturday morning possible?")
				set("UPDATE messages SET created_at = ? WHERE id = ?", sentAt.Add(time.Duration(5+k*29%170)*time.Minute), reply.ID)
				if p.handoff {
					if _, err := env.Store.Handoff(ctx, reply, "wants to talk to a person"); err != nil {
						t.Fatal(err)
					}
				}
			}
			if p.goal {
				in := models.GoalInput{CampaignID: &f.campaign.ID, Source: models.GoalSourceBot, Summary: "Booked a fitting in the Lisbon store"}
				if k%3 == 0 {
					in = models.GoalInput{CampaignID: &f.campaign.ID, Source: models.GoalSourceAPI, Note: "Booked through the website"}
				}
				g, created, err := env.Store.ReachGoal(ctx, accID, contactID, in)
				if err != nil || !created {
					t.Fatalf("goal of contact %d: created %v, %v", i, created, err)
				}
				set("UPDATE goals SET at = ? WHERE id = ?", sentAt.Add(time.Duration(60+k*53%600)*time.Minute), g.ID)
			}
			if p.optOut {
				setConsent(t, f.acc, contactID, models.ConsentInput{Channel: models.ConsentAllChannels, Status: models.ConsentOptedOut,
					Source: models.ConsentSourceKeyword, Text: "STOP"})
			}
			if p.variant == 0 && p.replied && !p.goal && !p.handoff && f.buttonContact == "" {
				f.buttonContact = contactID
			}
		case models.SendPending:
			write()
		case models.SendFailed:
			m := write()
			if _, err := env.Store.SettleOpening(ctx, m.ID, false, time.Now(), "webhook answered 410 Gone"); err != nil {
				t.Fatal(err)
			}
		case models.SendSuppressed:
			if err := env.Store.SetSendStatus(ctx, sendID, models.SendSuppressed, models.ReasonOptedOut); err != nil {
				t.Fatal(err)
			}
		case models.SendDeferred:
			if err := env.Store.DeferSend(ctx, sendID, time.Now().Add(3*time.Hour)); err != nil {
				t.Fatal(err)
			}
		case models.SendSkipped:
			if err := env.Store.SetSendStatus(ctx, sendID, models.SendSkipped, "the lead wrote first"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if f.buttonContact == "" {
		t.Fatal("the plan has no contact for the Goal reached button")
	}
	return f
}

// report is the campaign's report as the store computes it.
func (f *campaignFixture) report(t *testing.T) *report.CampaignReport {
	t.Helper()
	r, err := report.New(env.Store).CampaignReport(t.Context(), f.acc.ID, f.campaign.ID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// funnelBar is one bar of the campaign page's chart as the browser lays it out.
type funnelBar struct {
	Stage string  `json:"stage"`
	Count string  `json:"count"`
	Rate  string  `json:"rate"`
	Fill  float64 `json:"fill"`
	Track float64 `json:"track"`
}

func (b *inboxTab) funnelBars() []funnelBar {
	b.t.Helper()
	return evalJS[[]funnelBar](b, `[...document.querySelectorAll('#funnel .bar')].map(li => ({
		stage: li.dataset.stage, count: li.querySelector('.barcount').textContent.trim(),
		rate: ((li.querySelector('.barrate') || {}).textContent || '').trim(),
		fill: li.querySelector('svg.track rect.fill').getBoundingClientRect().width,
		track: li.querySelector('svg.track').getBoundingClientRect().width}))`)
}

// checkFunnel fails unless the chart shows the four stages with their numbers and rates, each bar as
// long as its share of the added contacts (to within 1.5 px) and every track equally long.
func (b *inboxTab) checkFunnel(what string, added, opened, replied, goal int) {
	b.t.Helper()
	bars := b.funnelBars()
	pct := func(n, of int) string {
		if of == 0 {
			return "0%"
		}
		return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)*100/float64(of)), "0"), ".") + "%"
	}
	want := []struct {
		stage string
		n     int
		rate  string
	}{
		{"added", added, ""}, {"opened", opened, pct(opened, added) + " of added"},
		{"replied", replied, pct(replied, opened) + " of opened"}, {"goal", goal, pct(goal, opened) + " of opened"},
	}
	if len(bars) != len(want) {
		b.fatalf("%s: %d bars, want %d: %+v", what, len(bars), len(want), bars)
	}
	for i, w := range want {
		got := bars[i]
		if got.Stage != w.stage || got.Count != fmt.Sprint(w.n) || got.Rate != w.rate {
			b.fatalf("%s: bar %d reads %+v, want %s %d %q", what, i, got, w.stage, w.n, w.rate)
		}
		if got.Track < 100 || math.Abs(got.Track-bars[0].Track) > 0.5 {
			b.fatalf("%s: the %s bar's track is %v px (the added one's %v)", what, w.stage, got.Track, bars[0].Track)
		}
		if exact := got.Track * float64(w.n) / float64(max(added, 1)); math.Abs(got.Fill-exact) > 1.5 {
			b.fatalf("%s: the %s bar is %.2f px of %.2f, want %.2f (%d of %d)", what, w.stage, got.Fill, got.Track, exact, w.n, added)
		}
	}
}

// nothingWider fails when the page scrolls sideways or any element reaches past the viewport's edges.
func (b *inboxTab) nothingWider(what string) {
	b.t.Helper()
	b.noHorizontalOverflow(what)
	sizes := evalJS[[]float64](b, `[document.scrollingElement.scrollWidth, window.innerWidth]`)
	if sizes[0] > sizes[1] {
		b.fatalf("%s: the page scrolls to %v px in a %v px viewport", what, sizes[0], sizes[1])
	}
	wide := evalJS[[]string](b, `[...document.querySelectorAll('body *')].filter(e => {
		const r = e.getBoundingClientRect();
		return r.width > 0 && (r.right > window.innerWidth + 0.5 || r.left < -0.5 || r.width > window.innerWidth);
	}).slice(0, 8).map(e => e.tagName.toLowerCase() + (e.getAttribute('class') ? '.' + e.getAttribute('class') : '') + ' ' + Math.round(e.getBoundingClientRect().left) + '..' + Math.round(e.getBoundingClientRect().right))`)
	if len(wide) > 0 {
		b.fatalf("%s: elements past the %v px viewport: %q", what, sizes[1], wide)
	}
}

// rows returns the text of each cell of the table's body rows, spaces squeezed.
func (b *inboxTab) rows(table string) [][]string {
	b.t.Helper()
	return evalJS[[][]string](b, `[...document.querySelectorAll('`+table+` tbody tr')].map(tr => [...tr.cells].map(td => td.textContent.replace(/\s+/g, ' ').trim()))`)
}

// sendStatuses returns the status of each listed send.
func (b *inboxTab) sendStatuses() []string {
	b.t.Helper()
	return evalJS[[]string](b, `[...document.querySelectorAll('#sends tbody tr')].map(tr => tr.dataset.status)`)
}

func TestInboxBrowserCampaignPage(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	f := buildCampaignFixture(t)
	page := "/inbox/campaigns/" + f.campaign.ID

	r := f.report(t)
	if r.Added != fxAdded || r.Opened != fxOpened || r.Replied != fxReplied || r.GoalReached != fxGoal || r.Queued != fxQueued ||
		r.Pending != fxPending || r.Failed != fxFailed || r.Suppressed != fxSuppressed || r.Deferred != fxDeferred ||
		r.Skipped != fxSkipped || r.HandedOff != fxHandedOff || r.OptedOut != fxOptedOut ||
		r.BestVariant == nil || *r.BestVariant != (report.BestVariant{Index: 0, Metric: "goalRate"}) || len(r.Days) < 5 {
		t.Fatalf("the fixture's report is not the plan's: %+v (best %v)", r, r.BestVariant)
	}

	browser := startChromium(t)
	b := openInbox(t, browser, srv)
	b.use(laptopSize)
	b.signIn(f.acc.Email, inboxPassword)
	session := browserSessionCookie + "=" + b.cookie(browserSessionCookie)

	t.Run("the campaigns list links to the page", func(t *testing.T) {
		if status := b.open("/inbox/campaigns"); status != http.StatusOK {
			b.fatalf("campaigns: %d", status)
		}
		if status := b.click(`.campaigns a[href="` + page + `"]`); status != http.StatusOK {
			b.fatalf("the campaign's link landed on a %d page", status)
		}
		if p := b.path(); p != page {
			b.fatalf("the campaign's link went to %s", p)
		}
		if h1 := evalJS[string](b, `document.querySelector('h1').textContent`); h1 != f.campaign.Name {
			b.fatalf("the page's heading is %q", h1)
		}
		if res, _ := inboxRequest(t, "HEAD", srv.URL+page, nil, session); res.StatusCode != http.StatusOK {
			t.Fatalf("HEAD %s: %d", page, res.StatusCode)
		}
	})

	t.Run("the funnel is drawn to scale and labelled", func(t *testing.T) {
		for _, v := range []screenSize{laptopSize, phoneSize} {
			b.use(v)
			if status := b.open(page); status != http.StatusOK {
				b.fatalf("campaign page: %d", status)
			}
			b.checkFunnel("on a "+v.name, fxAdded, fxOpened, fxReplied, fxGoal)
		}
		b.use(laptopSize)
		// The chart is the page's own: inline SVG, nothing loaded for it.
		if n := evalJS[int](b, `document.querySelectorAll('#funnel img, #funnel object, #funnel iframe, #funnel image, #funnel use, #funnel link').length`); n != 0 {
			b.fatalf("the chart loads %d resources", n)
		}
		figures := evalJS[string](b, `document.querySelector('#funnel .figures').innerText.replace(/\s+/g, ' ')`)
		for _, want := range []string{"Queued 2", "Pending 1", "Failed 5", "Suppressed 3", "Deferred 2", "Skipped 1", "Handed off 2", "Opted out 1",
			"Median time to reply " + minutesText(r.MedianMinutesToReply), "Median time to goal " + minutesText(r.MedianMinutesToGoal)} {
			if !strings.Contains(figures, want) {
				b.fatalf("the figures read %q, want %q in them", figures, want)
			}
		}
		if !strings.HasSuffix(minutesText(r.MedianMinutesToGoal), " hours") {
			t.Fatalf("the fixture's median time to goal is %v minutes: the hours are not tested", *r.MedianMinutesToGoal)
		}
	})

	t.Run("variants, days and sends", func(t *testing.T) {
		cards := evalJS[[]string](b, `[...document.querySelectorAll('#variants .variant')].map(e => e.innerText.replace(/\s+/g, ' '))`)
		if len(cards) != 2 {
			b.fatalf("%d variant cards: %q", len(cards), cards)
		}
		for i, want := range [][]string{
			{"Variant A", "Best", "Added 35", "Opened 29", "Replied 17 58.6%", "Goal reached 14 48.3%", "goal rate", "one-sided two-proportion test at 95%"},
			{"Variant B", "Added 35", "Opened 27", "Replied 11 40.7%", "Goal reached 6 22.2%"},
		} {
			for _, w := range want {
				if !strings.Contains(cards[i], w) {
					b.fatalf("variant card %d reads %q, want %q in it", i, cards[i], w)
				}
			}
		}
		if strings.Contains(cards[1], "Best") || evalJS[int](b, `document.querySelectorAll('#variants .variant.best').length`) != 1 {
			b.fatalf("Best is not on variant A alone: %q", cards)
		}
		if !strings.Contains(cards[0], "shall we save you a free fitting") || !strings.Contains(cards[1], "Reply FIT") {
			b.fatalf("the cards do not show the openings: %q", cards)
		}

		if tz := evalJS[string](b, `document.querySelector('#days .tz').textContent`); tz != "Europe/Lisbon" {
			b.fatalf("the days are said to be in %q", tz)
		}
		days := b.rows("#days table")
		if len(days) != len(r.Days) {
			b.fatalf("%d days shown, the report has %d", len(days), len(r.Days))
		}
		dates := evalJS[[]string](b, `[...document.querySelectorAll('#days tbody tr')].map(tr => tr.dataset.date)`)
		for i, d := range r.Days {
			label, _ := time.Parse(time.DateOnly, d.Date)
			want := []string{label.Format("Mon, Jan 2, 2006"), fmt.Sprint(d.Opened), fmt.Sprint(d.Replied), fmt.Sprint(d.GoalReached)}
			if dates[i] != d.Date || !slices.Equal(days[i], want) {
				b.fatalf("day %d reads %q (%s), want %q (%s)", i, days[i], dates[i], want, d.Date)
			}
		}

		// All sends, 50 a page.
		if n := len(b.sendStatuses()); n != 50 {
			b.fatalf("%d sends on the first page, want 50", n)
		}
		first := b.rows("#sends table")[0]
		if !strings.Contains(first[0], f.contacts[0]) || first[1] != "sent" || first[3] != "A" || first[4] == "" {
			b.fatalf("the first send reads %q", first)
		}
		if href := evalJS[string](b, `document.querySelector('#sends tbody tr a').getAttribute('href')`); href != "/inbox/conversations/"+f.contacts[0] {
			b.fatalf("the first send links to %q", href)
		}
		if status := b.click(`#sends .more a`); status != http.StatusOK {
			b.fatalf("More sends: %d", status)
		}
		if n := len(b.sendStatuses()); n != fxAdded-50 {
			b.fatalf("%d sends on the second page, want %d", n, fxAdded-50)
		}
		if evalJS[bool](b, `[...document.querySelectorAll('#sends .more a')].some(a => a.textContent === 'More sends')`) {
			b.fatalf("a More sends link on the last page")
		}

		// Filtered by status, across pages.
		if status := b.click(`#sends .sendfilter a[href*="status=sent"]`); status != http.StatusOK {
			b.fatalf("the Sent filter: %d", status)
		}
		if got := b.sendStatuses(); len(got) != 50 || slices.ContainsFunc(got, func(s string) bool { return s != "sent" }) {
			b.fatalf("the Sent filter lists %d sends: %q", len(got), got)
		}
		more := evalJS[string](b, `document.querySelector('#sends .more a').getAttribute('href')`)
		if u, err := url.Parse(more); err != nil || u.Query().Get("status") != "sent" || u.Query().Get("cursor") == "" {
			b.fatalf("More sends of the Sent filter links to %q", more)
		}
		b.click(`#sends .more a`)
		if got := b.sendStatuses(); len(got) != fxOpened-50 || slices.ContainsFunc(got, func(s string) bool { return s != "sent" }) {
			b.fatalf("the Sent filter's second page lists %q", got)
		}
		if cur := evalJS[string](b, `document.querySelector('#sends .sendfilter [aria-current]').textContent`); !strings.HasPrefix(cur, "Sent") {
			b.fatalf("the filter shown as current on page 2 is %q", cur)
		}
		for _, c := range []struct {
			status string
			n      int
			reason string
		}{{"failed", fxFailed, "webhook answered 410 Gone"}, {"suppressed", fxSuppressed, "Opted out"}, {"deferred", fxDeferred, "not before"},
			{"skipped", fxSkipped, "the lead wrote first"}, {"queued", fxQueued, "not before"}, {"pending", fxPending, "—"}} {
			if status := b.open(page + "?status=" + c.status); status != http.StatusOK {
				b.fatalf("status=%s: %d", c.status, status)
			}
			rows := b.rows("#sends table")
			if len(rows) != c.n {
				b.fatalf("status=%s lists %d sends, want %d", c.status, len(rows), c.n)
			}
			for _, row := range rows {
				if row[1] != c.status || !strings.Contains(row[2], c.reason) {
					b.fatalf("a %s send reads %q, want reason %q", c.status, row, c.reason)
				}
			}
		}
		if status := b.open(page + "?status=nonsense"); status != http.StatusNotFound {
			b.fatalf("an unknown status filter: %d, want 404", status)
		}
	})

	t.Run("laptop and phone layout", func(t *testing.T) {
		for _, v := range []screenSize{laptopSize, phoneSize} {
			b.use(v)
			if status := b.open(page); status != http.StatusOK {
				b.fatalf("campaign page: %d", status)
			}
			b.nothingWider("the campaign page on a " + v.name)
			// The page's text stays readable on the phone.
			if size := evalJS[float64](b, `Math.min(...[...document.querySelectorAll('.barname, .barcount, .variant dd, #sends td')].map(e => parseFloat(getComputedStyle(e).fontSize)))`); size < 12 {
				b.fatalf("text of %v px on a %s", size, v.name)
			}
			b.saveScreenshot("campaign-"+v.name+".png", !v.mobile, 1700)
			b.open(page + "?status=failed")
			b.nothingWider("the failed sends on a " + v.name)
		}
		b.use(laptopSize)
	})

	t.Run("without JavaScript the page shows the same", func(t *testing.T) {
		b.open(page)
		shown := evalJS[[]string](b, `['#funnel', '#variants', '#days'].map(s => document.querySelector(s).outerHTML)`)
		sends := b.rows("#sends table")
		noJS := openInbox(t, browser, srv) // the same browser context: signed in
		noJS.use(laptopSize)
		if _, err := chromedp.Call(noJS.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatal(err)
		}
		if status := noJS.open(page); status != http.StatusOK {
			noJS.fatalf("campaign page without script: %d", status)
		}
		// The script did not run: it would have put the sends' times in the reader's zone.
		if when := noJS.rows("#sends table")[0][4]; !strings.HasSuffix(when, " UTC") {
			noJS.fatalf("the script ran: the first send's time reads %q", when)
		}
		if got := evalJS[[]string](noJS, `['#funnel', '#variants', '#days'].map(s => document.querySelector(s).outerHTML)`); !slices.Equal(got, shown) {
			noJS.fatalf("without script the chart and tables differ:\n%q\nwith script:\n%q", got, shown)
		}
		got := noJS.rows("#sends table")
		if len(got) != len(sends) {
			noJS.fatalf("without script %d sends, with it %d", len(got), len(sends))
		}
		for i := range got {
			if !slices.Equal(got[i][:4], sends[i][:4]) {
				noJS.fatalf("send %d reads %q without script, %q with it", i, got[i], sends[i])
			}
		}
		noJS.checkFunnel("without script", fxAdded, fxOpened, fxReplied, fxGoal)
		noJS.nothingWider("the campaign page without script")
		noJS.use(phoneSize)
		noJS.open(page)
		noJS.checkFunnel("without script on a phone", fxAdded, fxOpened, fxReplied, fxGoal)
		noJS.nothingWider("the campaign page without script on a phone")
	})

	t.Run("the CSV download", func(t *testing.T) {
		if href := evalJS[string](b, `document.querySelector('a[href$="/report.csv"]').getAttribute('href')`); href != page+"/report.csv" {
			b.fatalf("Download CSV links to %q", href)
		}
		res, body := inboxRequest(t, "GET", srv.URL+page+"/report.csv", nil, session)
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
			!strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment;") {
			t.Fatalf("GET report.csv: %d %q %q\n%.500s", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"), body)
		}
		records, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(records[0], report.CampaignReportCSVHeader) {
			t.Fatalf("the CSV's header is %q", records[0])
		}
		rows := records[1:]
		if len(rows) != fxAdded {
			t.Fatalf("%d rows, want one per added contact (%d)", len(rows), fxAdded)
		}
		statuses := map[string]int{}
		for i, row := range rows {
			if row[0] != f.contacts[i] {
				t.Fatalf("row %d is contact %s, want %s (the order they were added)", i, row[0], f.contacts[i])
			}
			statuses[row[4]]++
		}
		want := map[string]int{"sent": fxOpened, "failed": fxFailed, "suppressed": fxSuppressed, "deferred": fxDeferred,
			"skipped": fxSkipped, "queued": fxQueued, "pending": fxPending}
		if fmt.Sprint(statuses) != fmt.Sprint(want) {
			t.Fatalf("the rows' statuses: %v, want %v", statuses, want)
		}
		if res, body := inboxRequest(t, "HEAD", srv.URL+page+"/report.csv", nil, session); res.StatusCode != http.StatusOK ||
			res.Header.Get("Content-Type") != "text/csv; charset=utf-8" || body != "" {
			t.Fatalf("HEAD report.csv: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), body)
		}
		// The session is what authenticates it.
		if res, _ := inboxRequest(t, "GET", srv.URL+page+"/report.csv", nil); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("report.csv without a session: %d, want 303 to the sign-in form", res.StatusCode)
		}
	})

	t.Run("Goal reached on the conversation", func(t *testing.T) {
		conv := "/inbox/conversations/" + f.buttonContact
		if status := b.open(conv); status != http.StatusOK {
			b.fatalf("conversation: %d", status)
		}
		// Two more tabs have the conversation open, with the button: one live, one without script (a
		// page that cannot change until it is loaded again).
		other := openInbox(t, browser, srv)
		if status := other.open(conv); status != http.StatusOK {
			other.fatalf("conversation in the second tab: %d", status)
		}
		other.waitLive()
		other.mark()
		stale := openInbox(t, browser, srv)
		if _, err := chromedp.Call(stale.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatal(err)
		}
		if status := stale.open(conv); status != http.StatusOK {
			stale.fatalf("conversation in the third tab: %d", status)
		}
		section := evalJS[string](b, `document.getElementById('goal').innerText.replace(/\s+/g, ' ')`)
		if !strings.Contains(section, f.campaign.Name+": "+f.campaign.Goal) || !strings.Contains(section, "No goal reached yet.") {
			b.fatalf("the Goal section reads %q", section)
		}
		const note = "Booked a fitting for Saturday at 10 by phone"
		b.fill(`#goal input[name=note]`, note)
		if status := b.pressGoalReached(); status != http.StatusOK {
			b.fatalf("Goal reached landed on a %d page", status)
		}
		if p := b.path(); p != conv {
			b.fatalf("Goal reached went to %s", p)
		}
		if flash := evalJS[string](b, `(document.querySelector('#goal .flash.ok') || {}).textContent || ''`); flash != "Goal reached recorded." {
			b.fatalf("the Goal section says %q", flash)
		}
		goals, err := env.Store.GoalsOf(t.Context(), f.acc.ID, f.buttonContact)
		if err != nil {
			t.Fatal(err)
		}
		if len(goals) != 1 || goals[0].Source != models.GoalSourceInbox || goals[0].Note != note || goals[0].CampaignID == nil ||
			*goals[0].CampaignID != f.campaign.ID || goals[0].UserID == nil || *goals[0].UserID != f.acc.OwnerUserID {
			t.Fatalf("the goals recorded: %+v", goals)
		}
		if n := evalJS[int](b, `document.querySelectorAll('#goal form, #goal button').length`); n != 0 {
			b.fatalf("the button is still there once the goal is recorded")
		}
		listed := evalJS[string](b, `document.querySelector('#goal .goallist').innerText.replace(/\s+/g, ' ')`)
		for _, want := range []string{f.campaign.Name, "in the inbox", note} {
			if !strings.Contains(listed, want) {
				b.fatalf("the goals listed read %q, want %q in them", listed, want)
			}
		}

		// The live tab learns of it (goal.reached): its button goes, without a reload.
		other.waitFor(liveWait, "the goal in the live tab", `!document.querySelector('#goal form') && document.querySelector('#goal .goallist').textContent.includes('in the inbox')`)
		other.stillSamePage()

		// The stale tab's button, pressed after the first: nothing new, and it says since when.
		if status := stale.pressGoalReached(); status != http.StatusOK {
			stale.fatalf("the second Goal reached landed on a %d page", status)
		}
		flash := evalJS[string](stale, `(document.querySelector('#goal .flash') || {}).textContent || ''`)
		if want := "Goal was already recorded on " + goals[0].At.UTC().Format("Jan 2, 2006") + "."; flash != want {
			stale.fatalf("the second attempt says %q, want %q", flash, want)
		}
		if again, _ := env.Store.GoalsOf(t.Context(), f.acc.ID, f.buttonContact); len(again) != 1 {
			t.Fatalf("%d goals after the second attempt, want 1", len(again))
		}

		// The campaign page counts it.
		b.open(page)
		b.checkFunnel("after the goal", fxAdded, fxOpened, fxReplied, fxGoal+1)
		if card := evalJS[string](b, `document.querySelector('#variants .variant[data-variant="0"]').innerText.replace(/\s+/g, ' ')`); !strings.Contains(card, "Goal reached 15 51.7%") {
			b.fatalf("variant A reads %q after the goal", card)
		}
	})

	t.Run("members record goals too, the account bot's without a campaign", func(t *testing.T) {
		_, contactID := f.acc.say(t, srv, "walk-in-1", "walk-in-web", "Rita", "Gomes", "Hi, can I come by the store today?")
		email := "member." + f.acc.ID + "@example.com"
		added, err := env.Store.AddUser(t.Context(), f.acc.ID, email, models.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		member := newBrowserClient(t, srv)
		if p := member.signIn(email, added.Password); p.Status != http.StatusSeeOther {
			t.Fatalf("member sign-in: %d", p.Status)
		}
		conv := "/inbox/conversations/" + contactID
		if body := member.get(conv).Body; !strings.Contains(body, "<strong>Account bot:</strong>") || !strings.Contains(body, `action="`+conv+`/goal"`) {
			t.Fatalf("the Goal section of a conversation without a campaign:\n%.4000s", body)
		}
		p := member.post(conv, conv+"/goal", url.Values{"note": {"Came by and booked in the shop"}})
		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != conv+"#goal" {
			t.Fatalf("a member's Goal reached: %d %q", p.Status, p.Header.Get("Location"))
		}
		goals, err := env.Store.GoalsOf(t.Context(), f.acc.ID, contactID)
		if err != nil {
			t.Fatal(err)
		}
		if len(goals) != 1 || goals[0].CampaignID != nil || goals[0].UserID == nil || *goals[0].UserID != added.User.ID {
			t.Fatalf("the member's goal: %+v", goals)
		}
		body := member.get(conv).Body
		if !strings.Contains(body, "Goal reached recorded.") || !strings.Contains(body, `<span class="goalfor">Account bot</span>`) ||
			strings.Contains(body, `action="`+conv+`/goal"`) {
			t.Fatalf("the member's page after the goal:\n%.4000s", body)
		}
		// A note over the limit is refused, and says so.
		long := strings.Repeat("n", 2001)
		_, other := f.acc.say(t, srv, "walk-in-2", "walk-in-web-2", "Tiago", "Reis", "Hello")
		if p := member.post(conv, "/inbox/conversations/"+other+"/goal", url.Values{"note": {long}}); p.Status != http.StatusSeeOther {
			t.Fatalf("an over-long note: %d", p.Status)
		}
		if goals, _ := env.Store.GoalsOf(t.Context(), f.acc.ID, other); len(goals) != 0 {
			t.Fatalf("a goal recorded with an over-long note: %+v", goals)
		}
		if body := member.get("/inbox/conversations/" + other).Body; !strings.Contains(body, "The note must be at most 2000 characters. Nothing was recorded.") {
			t.Fatalf("no word of the refused note")
		}
	})

	t.Run("a campaign that has sent nothing yet", func(t *testing.T) {
		name, channel, opening := "Winter boots clearance", "custom:live-chat", "Hi {{firstName}}, winter boots are 30% off this week."
		empty, err := env.Store.CreateCampaign(t.Context(), f.acc.ID, models.CampaignInput{Name: &name, Channel: &channel, OpeningMessage: &opening})
		if err != nil {
			t.Fatal(err)
		}
		b.use(phoneSize)
		defer b.use(laptopSize)
		if status := b.open("/inbox/campaigns/" + empty.ID); status != http.StatusOK {
			b.fatalf("the empty campaign's page: %d", status)
		}
		b.checkFunnel("an empty campaign", 0, 0, 0, 0)
		text := b.text()
		for _, want := range []string{"No contacts added yet", "Opening message", "winter boots are 30% off", "Nothing delivered yet.",
			"No sends yet", "Median time to reply\n—"} {
			if !strings.Contains(text, want) {
				b.fatalf("the empty campaign's page lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "Best") || strings.Contains(text, "No variant is ahead") {
			b.fatalf("a campaign with one opening message talks of a best variant:\n%s", text)
		}
		b.nothingWider("the empty campaign on a phone")
	})

	t.Run("another account's campaign is not found", func(t *testing.T) {
		other := newBrowserAccount(t)
		name, channel := "Other shop's secret promo", "custom:web"
		theirs, err := env.Store.CreateCampaign(t.Context(), other.ID, models.CampaignInput{Name: &name, Channel: &channel})
		if err != nil {
			t.Fatal(err)
		}
		_, theirContact := other.say(t, srv, "other-1", "other-lead", "Bea", "Secret", "hello")
		for _, p := range []string{"/inbox/campaigns/" + theirs.ID, "/inbox/campaigns/cmp_unknown", "/inbox/campaigns/" + theirs.ID + "?status=sent"} {
			if status := b.open(p); status != http.StatusNotFound {
				b.fatalf("GET %s: %d, want 404", p, status)
			}
			if text := b.text(); !strings.Contains(text, "Not found") || strings.Contains(text, name) {
				b.fatalf("GET %s is not the 404 page:\n%s", p, text)
			}
		}
		for _, p := range []string{"/inbox/campaigns/" + theirs.ID + "/report.csv", "/inbox/campaigns/cmp_unknown/report.csv"} {
			res, body := inboxRequest(t, "GET", srv.URL+p, nil, session)
			if res.StatusCode != http.StatusNotFound || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
				!strings.Contains(body, "Not found") || strings.Contains(body, "contact_id") {
				t.Fatalf("GET %s: %d %q\n%.300s", p, res.StatusCode, res.Header.Get("Content-Type"), body)
			}
		}
		token := evalJS[string](b, `document.querySelector('input[name=csrf_token]').value`)
		res, _ := inboxRequest(t, "POST", srv.URL+"/inbox/conversations/"+theirContact+"/goal", url.Values{"csrf_token": {token}}, session)
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("Goal reached on another account's contact: %d, want 404", res.StatusCode)
		}
		if goals, _ := env.Store.GoalsOf(t.Context(), other.ID, theirContact); len(goals) != 0 {
			t.Fatalf("a goal recorded on another account's contact: %+v", goals)
		}
	})
}

// pressGoalReached presses the conversation's Goal reached button, in the middle of the screen: the
// reply zone pinned at the bottom stays over what scrolls under it.
func (b *inboxTab) pressGoalReached() int64 {
	b.t.Helper()
	evalJS[bool](b, `document.querySelector('#goal form').scrollIntoView({block: 'center'}), true`)
	return b.click(`#goal button[type=submit]`)
}

// minutesText is a median as the campaign page writes it.
func minutesText(m *float64) string {
	switch {
	case m == nil:
		return "—"
	case *m < 120:
		return fmt.Sprintf("%.0f min", math.Round(*m))
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", math.Round(*m/6)/10), ".0") + " hours"
}
