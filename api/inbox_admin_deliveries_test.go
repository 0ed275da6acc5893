package api_test

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"funnelchat/models"
	"funnelchat/models/report"
)

// The Deliveries page in a real browser, over a real worker and a webhook receiver that fails: the
// failed messages that gave up apart from those retrying, each newest first, 50 a page, each with its
// contact, error, attempts and what comes next; Retry one, Retry all failed (twice, and from two
// sessions at once: each message moves once).

// adminFailed returns the account's failed deliveries, newest first (every page).
func adminFailed(t *testing.T, accountID string) []models.Message {
	t.Helper()
	var out []models.Message
	page := models.Page{Limit: models.MaxPageLimit}
	for {
		msgs, next, err := report.New(env.Store).FailedDeliveries(t.Context(), accountID, page)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msgs...)
		if next == "" {
			return out
		}
		page.Cursor = next
	}
}

// adminRounds returns each message's delivery round, as the store has it.
func adminRounds(t *testing.T, accountID string, ids []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, id := range ids {
		m, err := env.Store.MessageByID(t.Context(), accountID, id)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = m.DeliveryRound
	}
	return out
}

// adminMovedOnce fails unless every message's delivery round is one more than before.
func adminMovedOnce(t *testing.T, accountID string, before map[string]int) {
	t.Helper()
	for id, round := range adminRounds(t, accountID, slices.Collect(maps.Keys(before))) {
		if round != before[id]+1 {
			t.Fatalf("message %s is in delivery round %d, was %d: want exactly one more", id, round, before[id])
		}
	}
}

// The team's messages the receiver refuses; each contact gets them in turn.
var adminOutgoing = []string{
	"Hi {{name}}, your order NW-2291 left our Lisbon warehouse this morning.",
	"Thanks {{name}}! Size 39 is back in stock: shall I keep a pair aside for you?",
	"Your fitting is booked for Saturday at 10:00 at our Porto store. See you then!",
	"Here is your exchange label: print it and drop the parcel at any post office.",
	"<b>Spring sale</b>: 20% off all trail runners until Sunday, {{name}}.",
	"Sorry for the wait {{name}}, a colleague will call you back within the hour.",
	"Yes, we ship to the Azores and Madeira: 3 to 5 business days, free over €60.",
}

func TestInboxAdminDeliveries(t *testing.T) {
	requireChromium(t)
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	// A retry an hour away: within the test only Retry sends a failed message again.
	startWorker(t, "WEBHOOK_RETRY_SCHEDULE=1h")
	// The receiver is down (500, retried later) and refuses exchange labels for good (410), until it
	// is healthy again.
	var healthy atomic.Bool
	var hook *sink
	hook = newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch {
		case healthy.Load():
			w.WriteHeader(http.StatusOK)
		case bytes.Contains(hook.deliveries()[n-1].Body, []byte("exchange label")):
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte("chat session closed"))
		default:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("upstream unavailable"))
		}
	})
	acc := adminAccount(t, "rita.gomes@northwind.example", "Northwind")
	acc.useWebhook(t, srv, hook)
	acc.botOff(t, srv)
	type lead struct{ from, first, last, id string }
	leads := []lead{{"ana-web", "Ana", "Souza", ""}, {"tom-web", "Tom", "Becker", ""}, {"jonas-web", "Jonas", "Weber", ""},
		{"sofia-web", "Sofia", "Costa", ""}, {"lucas-web", "Lucas", "Silva", ""}, {"mia-web", "Mia", "Haddad", ""}}
	for i := range leads {
		_, leads[i].id = acc.say(t, srv, "dl-"+leads[i].from, leads[i].from, leads[i].first, leads[i].last, "Hello!")
	}
	// send writes n messages, every other one a team reply and the others API sends, and waits until
	// the receiver has refused each.
	sent := 0
	send := func(n int) []string {
		t.Helper()
		var ids []string
		for i := range n {
			l := leads[(sent+i)%len(leads)]
			body := strings.ReplaceAll(adminOutgoing[(sent+i)%len(adminOutgoing)], "{{name}}", l.first)
			if i%2 == 0 {
				r := do(t, "POST", srv.URL+"/v1/contacts/"+l.id+"/messages", acc.key, map[string]any{"body": body})
				expect(t, r, http.StatusCreated, "")
				ids = append(ids, r.JSON(t)["id"].(string))
			} else {
				ids = append(ids, sendCustom(t, srv, acc.key, l.from, "live-chat", body))
			}
		}
		sent += n
		waitFor(t, deliveryWait, fmt.Sprintf("%d failed deliveries", n), func() bool {
			failed := map[string]bool{}
			for _, m := range adminFailed(t, acc.ID) {
				failed[m.ID] = true
			}
			for _, id := range ids {
				if !failed[id] {
					return false
				}
			}
			return true
		})
		return ids
	}
	// 60 messages: 9 exchange labels give up, 51 are retrying (two pages of those).
	first := send(60)
	failed := adminFailed(t, acc.ID)
	var gaveUp, retrying []models.Message
	for _, m := range failed {
		if m.NextAttemptAt == nil {
			gaveUp = append(gaveUp, m)
		} else {
			retrying = append(retrying, m)
		}
	}
	if len(gaveUp) != 9 || len(retrying) != 51 {
		t.Fatalf("%d gave up and %d are retrying, want 9 and 51", len(gaveUp), len(retrying))
	}

	browser := startChromium(t)
	b := openInbox(t, browser, srv)
	b.use(laptopSize)
	b.signIn(acc.Email, inboxPassword)
	dialogs := b.acceptDialogs()
	// Two more tabs without script, opened now: their pages go stale.
	staleTab := func() *inboxTab {
		tab := openInbox(t, browser, srv)
		tab.use(laptopSize)
		if _, err := chromedp.Call(tab.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatal(err)
		}
		if status := tab.open("/inbox/deliveries"); status != http.StatusOK {
			tab.fatalf("deliveries without script: %d", status)
		}
		return tab
	}
	staleAll, staleOne := staleTab(), staleTab()
	rowIDs := func(tab *inboxTab) []string {
		return evalJS[[]string](tab, `[...document.querySelectorAll('#deliveries tbody tr')].map(tr => tr.dataset.messageId)`)
	}

	t.Run("failed messages, those that gave up apart, newest first, 50 a page, each with what happened", func(t *testing.T) {
		if status := b.click(`nav a[href="/inbox/deliveries"]`); status != http.StatusOK {
			b.fatalf("the Deliveries entry: %d", status)
		}
		if cur := evalJS[string](b, `document.querySelector('nav a[aria-current=page]').textContent.trim()`); !strings.HasPrefix(cur, "Deliveries") {
			b.fatalf("the current entry is %q", cur)
		}
		names := map[string]string{}
		for _, l := range leads {
			names[l.id] = l.first + " " + l.last
		}
		// checkRows checks the rows shown against msgs, in order.
		checkRows := func(msgs []models.Message) {
			t.Helper()
			want := make([]string, len(msgs))
			for i := range msgs {
				want[i] = msgs[i].ID
			}
			if got := rowIDs(b); !slices.Equal(got, want) {
				b.fatalf("the page lists %d messages, not the %d expected in order", len(got), len(want))
			}
			cells := evalJS[[][]string](b, `[...document.querySelectorAll('#deliveries tbody tr')].map(tr => [...tr.cells].map(td => td.textContent.replace(/\s+/g, ' ').trim()))`)
			for i, m := range msgs {
				row := cells[i]
				if row[0] != names[m.ContactID]+" live-chat" {
					b.fatalf("row %d's contact reads %q", i, row[0])
				}
				author := map[string]string{models.AuthorHuman: "Team (" + acc.Email + ") ", models.AuthorAPI: "API "}[m.Author]
				if row[1] != author+m.Body {
					b.fatalf("row %d's message reads %q for %q", i, row[1], author+m.Body)
				}
				if m.Error == nil || row[2] != strings.Join(strings.Fields(*m.Error), " ") {
					b.fatalf("row %d's error reads %q, stored %v", i, row[2], m.Error)
				}
				switch {
				case m.NextAttemptAt == nil:
					if !strings.HasPrefix(row[3], "1 attempt · gave up ") || !strings.Contains(*m.Error, "410") {
						b.fatalf("row %d (gave up) reads %q", i, row[3])
					}
				case !strings.HasPrefix(row[3], "1 attempt · next ") || !strings.Contains(*m.Error, "500"):
					b.fatalf("row %d (retrying) reads %q", i, row[3])
				}
				if href := evalJS[string](b, `document.querySelectorAll('#deliveries tbody tr')[`+strconv.Itoa(i)+`].querySelector('td.who a').getAttribute('href')`); href != "/inbox/conversations/"+m.ContactID {
					b.fatalf("row %d links to %q", i, href)
				}
			}
			// Each Retry says, to a screen reader, which message it sends.
			var retries []string
			for _, name := range b.adminButtonNames() {
				if strings.HasPrefix(name, "Retry ") && name != "Retry all failed" {
					retries = append(retries, name)
				}
			}
			if len(retries) != len(msgs) {
				b.fatalf("%d Retry buttons named for a screen reader, want %d: %q", len(retries), len(msgs), retries)
			}
			for i, name := range retries {
				if want := "Retry the message to " + names[msgs[i].ContactID] + ": " + msgs[i].Body; name != want {
					b.fatalf("Retry %d is named %q, want %q", i, name, want)
				}
			}
		}
		// First those that gave up, the Deliveries entry counting them.
		if tabs := evalJS[[]string](b, `[...document.querySelectorAll('.deliverytabs a')].map(a => a.textContent.replace(/\s+/g, ' ').trim())`); !slices.Equal(tabs, []string{"Gave up 9", "Retrying 51"}) {
			b.fatalf("the tabs read %q", tabs)
		}
		if n := b.visibleCount("gaveUp"); n != "9" {
			b.fatalf("the Deliveries entry counts %q", n)
		}
		checkRows(gaveUp)
		if evalJS[bool](b, `!!document.querySelector('main .more a')`) {
			b.fatalf("9 messages that gave up have a More")
		}
		// Then those retrying, 50 a page.
		if status := b.click(`.deliverytabs a[href="/inbox/deliveries?state=retrying"]`); status != http.StatusOK {
			b.fatalf("the Retrying tab: %d", status)
		}
		checkRows(retrying[:50])
		// Times as <time> elements, put in the reader's zone by the script; the next attempt an hour away.
		next := evalJS[string](b, `document.querySelector('#deliveries .next time').getAttribute('datetime')`)
		if at, err := time.Parse(time.RFC3339, next); err != nil || time.Until(at) < 50*time.Minute {
			b.fatalf("the next attempt shown is %q", next)
		}
		// Markup in a body is text.
		if n := evalJS[int](b, `document.querySelectorAll('#deliveries td.body b').length`); n != 0 || !strings.Contains(b.text(), "<b>Spring sale</b>") {
			b.fatalf("a body's markup is not shown as text")
		}
		if status := b.click(`main .more a`); status != http.StatusOK {
			b.fatalf("More: %d", status)
		}
		if u, _ := url.Parse(evalJS[string](b, `location.href`)); u.Query().Get("state") != "retrying" || u.Query().Get("cursor") == "" {
			b.fatalf("More went to %s", u)
		}
		checkRows(retrying[50:])
		if evalJS[bool](b, `!!document.querySelector('main .more a')`) {
			b.fatalf("the second page has a More")
		}
	})

	t.Run("laptop and phone", func(t *testing.T) {
		for _, v := range []screenSize{laptopSize, phoneSize} {
			b.use(v)
			b.open("/inbox/deliveries")
			b.nothingWider("the deliveries on a " + v.name)
			if size := evalJS[float64](b, `Math.min(...[...document.querySelectorAll('#deliveries td, #deliveries button')].map(e => parseFloat(getComputedStyle(e).fontSize)))`); size < 12 {
				b.fatalf("text of %v px on a %s", size, v.name)
			}
			// Each Retry is on screen beside its message, big enough to tap.
			box := evalJS[[]float64](b, `(r => [r.left, r.right, r.width, r.height])(document.querySelector('#deliveries td.retry button').getBoundingClientRect())`)
			if box[0] < 0 || box[1] > float64(v.width) || box[3] < 30 {
				b.fatalf("the first Retry on a %s: %v", v.name, box)
			}
			b.saveScreenshot("deliveries-"+v.name+".png", !v.mobile, 1500)
		}
		b.use(laptopSize)
	})

	healthy.Store(true)
	byID := map[string]models.Message{}
	for _, m := range failed {
		byID[m.ID] = m
	}
	before := adminRounds(t, acc.ID, first)

	t.Run("Retry one", func(t *testing.T) {
		b.open("/inbox/deliveries")
		id := rowIDs(b)[1]
		m := byID[id]
		if status := b.click(`#deliveries tr[data-message-id="` + id + `"] td.retry button`); status != http.StatusOK {
			b.fatalf("Retry: %d", status)
		}
		if p := b.path(); p != "/inbox/deliveries" {
			b.fatalf("Retry went to %s", p)
		}
		var name string
		for _, l := range leads {
			if l.id == m.ContactID {
				name = l.first + " " + l.last
			}
		}
		if flash := evalJS[string](b, `document.querySelector('main .flash.ok').textContent`); flash != "The message to "+name+" is queued again." {
			b.fatalf("the page says %q", flash)
		}
		waitFor(t, deliveryWait, "the retried message sent", func() bool { return messageField(t, srv, acc.key, id, "status") == "sent" })
		if rounds := adminRounds(t, acc.ID, []string{id}); rounds[id] != before[id]+1 {
			t.Fatalf("the retried message is in round %d, was %d", rounds[id], before[id])
		}
		if slices.Contains(rowIDs(b), id) {
			b.fatalf("the retried message is still listed")
		}
		// From the second page of those retrying, Retry comes back to it.
		b.open("/inbox/deliveries?state=retrying")
		b.click(`main .more a`)
		second := rowIDs(b)[0]
		b.click(`#deliveries tr[data-message-id="` + second + `"] td.retry button`)
		if u, _ := url.Parse(evalJS[string](b, `location.href`)); u.Path != "/inbox/deliveries" || u.Query().Get("cursor") == "" || u.Query().Get("state") != "retrying" {
			b.fatalf("Retry on the second page went to %s", u)
		}
		waitFor(t, deliveryWait, "the second retried message sent", func() bool { return messageField(t, srv, acc.key, second, "status") == "sent" })
	})

	t.Run("Retry all failed, twice: the second press queues nothing", func(t *testing.T) {
		b.open("/inbox/deliveries")
		if status := b.click(`form[action="/inbox/deliveries/retry-all"] button`); status != http.StatusOK {
			b.fatalf("Retry all failed: %d", status)
		}
		if d := dialogs(); len(d) != 1 || d[0] != "Send every failed message again, those retrying too (up to 1,000 at once)?" {
			b.fatalf("confirmations: %q", d)
		}
		if flash := evalJS[string](b, `document.querySelector('main .flash.ok').textContent`); flash != "58 messages queued again." {
			b.fatalf("the page says %q", flash)
		}
		adminMovedOnce(t, acc.ID, before) // the two retried one by one were not moved again
		waitFor(t, deliveryWait, "every retried message sent", func() bool {
			for _, id := range first {
				if messageField(t, srv, acc.key, id, "status") != "sent" {
					return false
				}
			}
			return true
		})
		b.open("/inbox/deliveries")
		if !strings.Contains(b.text(), "No delivery gave up.") || evalJS[bool](b, `!!document.querySelector('form[action="/inbox/deliveries/retry-all"]')`) ||
			b.visibleCount("gaveUp") != "" {
			b.fatalf("the page with nothing failed:\n%s", b.text())
		}
		// A stale tab, without script (no confirmation), presses it again.
		if status := staleAll.click(`form[action="/inbox/deliveries/retry-all"] button`); status != http.StatusOK {
			staleAll.fatalf("the second Retry all failed: %d", status)
		}
		if flash := evalJS[string](staleAll, `document.querySelector('main .flash').textContent`); flash != "No failed messages: nothing was queued again." {
			staleAll.fatalf("the second press says %q", flash)
		}
		// Another stale tab's Retry of a message sent meanwhile queues nothing either.
		id := rowIDs(staleOne)[0]
		if status := staleOne.click(`#deliveries tr[data-message-id="` + id + `"] td.retry button`); status != http.StatusOK {
			staleOne.fatalf("a stale Retry: %d", status)
		}
		if flash := evalJS[string](staleOne, `document.querySelector('main .flash.bad').textContent`); flash != "Nothing was queued: that message is sent now, not failed." {
			staleOne.fatalf("a stale Retry says %q", flash)
		}
		adminMovedOnce(t, acc.ID, before)
		if n := len(hook.deliveries()); n != 60*2 {
			t.Fatalf("the receiver got %d requests, want each of the 60 messages twice", n)
		}
	})

	t.Run("Retry all failed from two sessions at once: each message moves once", func(t *testing.T) {
		healthy.Store(false)
		ids := send(20)
		healthy.Store(true)
		before := adminRounds(t, acc.ID, ids)
		owner := adminOwnerClient(t, srv, acc)
		member, _ := adminMember(t, srv, acc, "tiago.reis@northwind.example") // members retry too
		clients := []*browserClient{owner, member}
		tokens := []string{owner.csrf("/inbox/deliveries"), member.csrf("/inbox/deliveries")}
		start := make(chan struct{})
		errs := make([]error, len(clients))
		var wg sync.WaitGroup
		for i, c := range clients {
			wg.Go(func() {
				<-start
				res, err := c.client.PostForm(srv.URL+"/inbox/deliveries/retry-all", url.Values{"csrf_token": {tokens[i]}})
				if err == nil {
					res.Body.Close()
					if res.StatusCode != http.StatusSeeOther {
						err = fmt.Errorf("status %d", res.StatusCode)
					}
				}
				errs[i] = err
			})
		}
		close(start)
		wg.Wait()
		queued := 0
		said := regexp.MustCompile(`(\d+) messages? queued again\.|No failed messages: nothing was queued again\.`)
		for i, c := range clients {
			if errs[i] != nil {
				t.Fatalf("session %d's Retry all failed: %v", i, errs[i])
			}
			m := said.FindStringSubmatch(c.get("/inbox/deliveries").Body)
			if m == nil {
				t.Fatalf("session %d's page does not say what was queued", i)
			}
			n, _ := strconv.Atoi(m[1])
			queued += n
		}
		if queued != 20 {
			t.Fatalf("the two presses queued %d messages together, want 20", queued)
		}
		adminMovedOnce(t, acc.ID, before)
		waitFor(t, deliveryWait, "the 20 messages sent", func() bool { return len(hook.deliveries()) == 60*2+20*2 })
		waitDrained(t, acc.ID, retryHorizon) // a further delivery would still be in a task
		perMessage := map[string]int{}
		for _, d := range hook.deliveries() {
			perMessage[d.Header.Get("webhook-id")]++
		}
		for _, id := range ids {
			if perMessage[id] != 2 {
				t.Fatalf("message %s reached the receiver %d times, want 2 (the failure and one retry)", id, perMessage[id])
			}
		}
	})
}
