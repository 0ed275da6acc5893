package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"funnelchat/models"
)

// The inbox in a real browser: headless Chromium signs in through the form, reads the pages, types,
// clicks and follows the live updates of a real api server (and, where a reply is delivered, a real
// worker and webhook receiver). The HTTP-level checks next to them use the cookies the browser got.

// inboxPassword is the password the tests give each account's owner.
const inboxPassword = "correct horse battery staple"

// liveWait bounds how long a live update may take to show in an open page.
const liveWait = 5 * time.Second

// deliveryWait bounds a wait that includes a delivery by the worker.
const deliveryWait = 15 * time.Second

// browserAccount is an account whose owner can sign in to the inbox with inboxPassword.
type browserAccount struct {
	*models.Account
	key string
}

func newBrowserAccount(t *testing.T) browserAccount {
	t.Helper()
	acc, key := newAccount(t)
	if err := env.Store.SetPassword(t.Context(), acc.OwnerUserID, inboxPassword); err != nil {
		t.Fatal(err)
	}
	return browserAccount{Account: acc, key: key}
}

// signedIn opens the inbox in a new browser with the account's owner signed in.
func (a browserAccount) signedIn(t *testing.T, srv *server) *inboxTab {
	t.Helper()
	b := openInbox(t, startChromium(t), srv)
	b.signIn(a.Email, inboxPassword)
	return b
}

// openConversation signs the account's owner in to the inbox in a new browser and opens the
// conversation with the contact.
func (a browserAccount) openConversation(t *testing.T, srv *server, contactID string) *inboxTab {
	t.Helper()
	b := a.signedIn(t, srv)
	if status := b.open("/inbox/conversations/" + contactID); status != http.StatusOK {
		b.fatalf("conversation page: %d", status)
	}
	return b
}

// useWebhook points the account's reply webhook at the sink and returns the signing secret.
func (a browserAccount) useWebhook(t *testing.T, srv *server, hook *sink) string {
	t.Helper()
	r := do(t, "PUT", srv.URL+"/v1/settings/webhook", a.key, map[string]any{"url": hook.URL + "/hook"})
	expect(t, r, http.StatusOK, "")
	secret, _ := r.JSON(t)["signingSecret"].(string)
	return secret
}

// botOff switches the account's bot off, so that only the team answers.
func (a browserAccount) botOff(t *testing.T, srv *server) {
	t.Helper()
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/bot", a.key, map[string]any{"active": false}), http.StatusOK, "")
}

// say posts an incoming custom-channel message from fromID (named first last, when given) and returns
// the message id and its contact id.
func (a browserAccount) say(t *testing.T, srv *server, sid, fromID, first, last, body string) (messageID, contactID string) {
	t.Helper()
	data := map[string]any{"messageSid": sid, "fromId": fromID, "toId": "shop", "body": body, "channel": "live-chat"}
	if first != "" {
		data["firstName"] = first
	}
	if last != "" {
		data["lastName"] = last
	}
	r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", a.key, map[string]any{"customData": data})
	expect(t, r, http.StatusOK, "")
	messageID, _ = r.JSON(t)["messageId"].(string)
	contactID, _ = messageField(t, srv, a.key, messageID, "contactId").(string)
	if messageID == "" || contactID == "" {
		t.Fatalf("incoming message %q of contact %q: %s", messageID, contactID, r.Body)
	}
	return messageID, contactID
}

// inboxTab is a browser tab on the inbox of one server.
type inboxTab struct {
	t   *testing.T
	ctx context.Context
	srv *server
}

// openInbox opens a tab; when the test fails, the tab's screenshot and text are kept in the log.
func openInbox(t *testing.T, browser context.Context, srv *server) *inboxTab {
	t.Helper()
	tab := &inboxTab{t: t, ctx: newTab(t, browser), srv: srv}
	t.Cleanup(func() {
		if t.Failed() {
			tab.capture()
		}
	})
	return tab
}

// capture logs what the tab shows, for a failing test: a screenshot (the existing helper) and the text.
func (b *inboxTab) capture() {
	screenshot(b.t, b.ctx)
	text, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`location.href + "\n" + (document.body ? document.body.innerText : "")`))
	if err != nil {
		b.t.Logf("page text: %v", err)
		return
	}
	b.t.Logf("the page shows:\n%.3000s", text)
}

// fatalf ends the test with what the tab shows.
func (b *inboxTab) fatalf(format string, args ...any) {
	b.t.Helper()
	b.capture()
	b.t.Fatalf(format, args...)
}

// open navigates to a path of the server and returns the response's status.
func (b *inboxTab) open(path string) int64 {
	b.t.Helper()
	res, err := chromedp.Run(b.ctx, chromedp.NavigateResponse(b.srv.URL+path))
	if err != nil {
		b.fatalf("open %s: %v", path, err)
	}
	return res.Status
}

// reload reloads the page as the browser's reload button does (a page that answered a POST would post
// again) and returns the status of what it loaded.
func (b *inboxTab) reload() int64 {
	b.t.Helper()
	res, err := chromedp.RunResponse(b.ctx, chromedp.Reload())
	if err != nil {
		b.fatalf("reload: %v", err)
	}
	return res.Status
}

// click clicks the first element matching the CSS selector and waits for the page the click loads;
// it returns the status of that page (the last response when the form's answer redirected).
func (b *inboxTab) click(selector string) int64 {
	b.t.Helper()
	res, err := chromedp.RunResponse(b.ctx, chromedp.Click(chromedp.CSS(selector)))
	if err != nil {
		b.fatalf("click %s: %v", selector, err)
	}
	return res.Status
}

// fill replaces the value of a field with text, entered as one input from the keyboard (as a paste or
// an input method commits it): the field gets focus and the page sees beforeinput and input events.
// Typing key by key (chromedp.SendKeys) costs three events and a frame per character; the tests that
// are about single keys (the reply box's shortcuts) send those keys themselves.
func (b *inboxTab) fill(selector, text string) {
	b.t.Helper()
	// chromedp.SetValue cannot set "" (it reads the value back and takes "" for a failure).
	evalJS[bool](b, `(f => (f.focus(), f.value = '', true))(document.querySelector('`+selector+`'))`)
	if text == "" {
		return
	}
	if _, err := chromedp.Call(b.ctx, input.InsertText, input.InsertTextParams{Text: text}); err != nil {
		b.fatalf("type into %s: %v", selector, err)
	}
}

// path is the path (and query) of the tab's page.
func (b *inboxTab) path() string {
	b.t.Helper()
	return evalJS[string](b, `location.pathname + location.search`)
}

// text is the visible text of the page.
func (b *inboxTab) text() string {
	b.t.Helper()
	return evalJS[string](b, `document.body ? document.body.innerText : ""`)
}

// evalJS evaluates a JavaScript expression in the tab's page.
func evalJS[T any](b *inboxTab, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it is true, failing the test after timeout. Errors while
// polling (a page that is still loading) count as not yet.
func (b *inboxTab) waitFor(timeout time.Duration, what, cond string) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`!!(`+cond+`)`))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitLive waits until the page's script has its event stream open: an event stored from now on
// reaches the page.
func (b *inboxTab) waitLive() {
	b.t.Helper()
	b.waitFor(liveWait, "the live event stream", `document.documentElement.getAttribute('data-live-ready') === '1'`)
}

// mark sets a marker on the page's window; stillSamePage fails unless it is still there, proving the
// page was not reloaded or left in between.
func (b *inboxTab) mark() {
	b.t.Helper()
	evalJS[bool](b, `window.__marker = 1, true`)
}

func (b *inboxTab) stillSamePage() {
	b.t.Helper()
	if !evalJS[bool](b, `window.__marker === 1`) {
		b.fatalf("the page was reloaded or left; it should have updated in place")
	}
}

// signIn signs in through the form and expects to land on the conversation list.
func (b *inboxTab) signIn(email, password string) {
	b.t.Helper()
	if status := b.open("/inbox/login"); status != http.StatusOK {
		b.fatalf("GET /inbox/login: %d", status)
	}
	b.fill(`input[name=email]`, email)
	b.fill(`input[name=password]`, password)
	if status := b.click(`form[action="/inbox/login"] button[type=submit]`); status != http.StatusOK {
		b.fatalf("sign-in landed on a %d page", status)
	}
	if p := b.path(); p != "/inbox/" {
		b.fatalf("signed in to %s, want /inbox/", p)
	}
}

// cookie returns the value of one of the tab's inbox cookies ("" when it has none).
func (b *inboxTab) cookie(name string) string {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.srv.URL + "/inbox/"}})
	if err != nil {
		b.fatalf("read the cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

// acceptDialogs accepts every JavaScript dialog (confirm) the tab opens, like a user clicking OK, and
// returns a func reporting their messages.
func (b *inboxTab) acceptDialogs() func() []string {
	ctx, stop := context.WithCancel(b.ctx)
	dialogs := chromedp.Events(ctx, cdppage.JavascriptDialogOpening)
	var (
		mu       sync.Mutex
		messages []string
		wg       sync.WaitGroup
	)
	wg.Go(func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			mu.Lock()
			messages = append(messages, ev.Message)
			mu.Unlock()
			if _, err := chromedp.Call(ctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: true}); err != nil && ctx.Err() == nil {
				b.t.Logf("accept the dialog: %v", err)
			}
		}
	})
	b.t.Cleanup(func() {
		stop()
		wg.Wait()
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), messages...)
	}
}

// The screen sizes the layout is checked at.
var (
	laptopSize = screenSize{name: "laptop", width: 1280, height: 800}
	phoneSize  = screenSize{name: "phone", width: 390, height: 844, mobile: true}
)

type screenSize struct {
	name          string
	width, height int64
	mobile        bool
}

// use sets the tab's viewport; the page is loaded again by the caller.
func (b *inboxTab) use(v screenSize) {
	b.t.Helper()
	var opts []chromedp.EmulateViewportOption
	if v.mobile {
		opts = append(opts, chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	if err := chromedp.Do(b.ctx, chromedp.EmulateViewport(v.width, v.height, opts...)); err != nil {
		b.fatalf("emulate the %s viewport: %v", v.name, err)
	}
}

// noHorizontalOverflow fails when the page is wider than the viewport (it would scroll sideways).
func (b *inboxTab) noHorizontalOverflow(what string) {
	b.t.Helper()
	sizes := evalJS[[]float64](b, `[document.documentElement.scrollWidth, window.innerWidth]`)
	if sizes[0] > sizes[1] {
		wide := evalJS[[]string](b, `Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5).slice(0, 8).map(e => e.tagName.toLowerCase() + (e.getAttribute('class') ? '.' + e.getAttribute('class') : '') + ' ' + Math.round(e.getBoundingClientRect().right))`)
		b.fatalf("%s: the page is %v px wide in a %v px viewport; too wide: %q", what, sizes[0], sizes[1], wide)
	}
}

// screenshotsDir is where saveScreenshot writes (INBOX_SCREENSHOTS), "" for nowhere.
func screenshotsDir() string { return os.Getenv("INBOX_SCREENSHOTS") }

// saveScreenshot writes a PNG of the page to $INBOX_SCREENSHOTS/name when that is set: the viewport
// when full is false, else the page from the top, as wide as the viewport and at most maxHeight tall.
func (b *inboxTab) saveScreenshot(name string, full bool, maxHeight float64) {
	b.t.Helper()
	dir := screenshotsDir()
	if dir == "" {
		return
	}
	params := cdppage.CaptureScreenshotParams{Format: cdppage.CaptureScreenshotFormatPng, FromSurface: new(true)}
	if full {
		size := evalJS[[]float64](b, `window.scrollTo(0, 0), [window.innerWidth, Math.max(document.documentElement.scrollHeight, window.innerHeight)]`)
		params.CaptureBeyondViewport = new(true)
		params.Clip = &cdppage.Viewport{Width: size[0], Height: min(size[1], maxHeight), Scale: 1}
	}
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

// inboxHTTP requests inbox pages without following redirects and without keeping connections
// (an idle one would hold the server's graceful shutdown).
var inboxHTTP = &http.Client{
	Timeout:       10 * time.Second,
	Transport:     &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// inboxRequest sends a request to the inbox with the cookies ("name=value") and, for a POST, the form.
func inboxRequest(t *testing.T, method, target string, form url.Values, cookies ...string) (*http.Response, string) {
	t.Helper()
	return inboxRequestWith(t, method, target, form, nil, cookies...)
}

// inboxRequestWith is inboxRequest with more headers.
func inboxRequestWith(t *testing.T, method, target string, form url.Values, header http.Header, cookies ...string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for name, values := range header {
		req.Header[name] = values
	}
	if len(cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	res, err := inboxHTTP.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(raw)
}

func TestInboxBrowserLiveUpdates(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	b := acc.signedIn(t, srv)

	t.Run("the empty list says how conversations arrive", func(t *testing.T) {
		if text := b.text(); !strings.Contains(text, "No conversations yet.") {
			b.fatalf("empty list:\n%s", text)
		}
	})

	b.waitLive()
	b.mark()
	_, contactID := acc.say(t, srv, "live-1", "ana-web-1", "Ana", "Souza", "Hi! Do you ship to Lisbon?")
	b.waitFor(liveWait, "the message in the open list",
		`[...document.querySelectorAll('[data-live="list"] .conv')].some(c => c.textContent.includes('Ana Souza') && c.textContent.includes('Do you ship to Lisbon?'))`)
	b.stillSamePage()
	if !evalJS[bool](b, `!!document.querySelector('.conv.unread[data-contact="`+contactID+`"] .unread-mark')`) {
		b.fatalf("the new conversation is not marked unread")
	}

	if status := b.open("/inbox/conversations/" + contactID); status != http.StatusOK {
		b.fatalf("conversation page: %d", status)
	}
	b.waitLive()
	b.mark()
	acc.say(t, srv, "live-2", "ana-web-1", "", "", "And how long does it take?")
	b.waitFor(liveWait, "the second message in the open conversation",
		`[...document.querySelectorAll('[data-live="conversation"] .msg.incoming .bubble')].some(e => e.textContent.includes('And how long does it take?'))`)
	b.stillSamePage()
	if n := evalJS[int](b, `document.querySelectorAll('.msg.incoming').length`); n != 2 {
		b.fatalf("%d incoming messages shown, want 2", n)
	}
}

func TestInboxBrowserReplyReachesTheWebhook(t *testing.T) {
	requireChromium(t)
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t, "WEBHOOK_TIMEOUT=30s")
	// The receiver holds its answer until the test has seen the message pending in the page, so that
	// the change to sent can only arrive live.
	release := make(chan struct{})
	hook := newSink(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
			w.WriteHeader(http.StatusOK)
		case <-r.Context().Done():
		}
	})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the sink closes
	acc := newBrowserAccount(t)
	secret := acc.useWebhook(t, srv, hook)
	acc.botOff(t, srv)
	_, contactID := acc.say(t, srv, "reply-1", "gina-web", "Gina", "Marsh", "Is the green jacket back in stock?")

	b := acc.openConversation(t, srv, contactID)
	const text = "Hi Gina, it is back since Monday: all sizes."
	b.fill(`textarea[name=body]`, text)
	if status := b.click(`#reply button[type=submit]`); status != http.StatusOK {
		b.fatalf("sending the reply landed on a %d page", status)
	}
	id := evalJS[string](b, `(document.querySelectorAll('.msg.outgoing')[0] || {}).id || ''`)
	if id == "" {
		b.fatalf("no outgoing message shown after sending")
	}
	if got := evalJS[string](b, `document.getElementById('`+id+`').querySelector('.bubble').textContent.trim()`); got != text {
		b.fatalf("the reply shows %q, want %q", got, text)
	}
	if got := evalJS[string](b, `document.getElementById('`+id+`').dataset.status`); got != "pending" {
		b.fatalf("the reply is %q before the receiver answered, want pending", got)
	}
	if !evalJS[bool](b, `document.querySelector('.botstate').textContent.includes('Bot paused')`) {
		b.fatalf("a human reply should pause the bot for the contact")
	}

	waitFor(t, deliveryWait, "the reply at the receiver", func() bool { return len(hook.deliveries()) == 1 })
	d := hook.deliveries()[0]
	if got := d.Header.Get("webhook-id"); got != id {
		t.Fatalf("webhook-id %q, want the message id %q", got, id)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(d.Body, d.Header); err != nil {
		t.Fatalf("the reply's signature does not verify: %v (headers %v)", err, d.Header)
	}
	var payload map[string]any
	if err := json.Unmarshal(d.Body, &payload); err != nil {
		t.Fatalf("reply body: %v: %s", err, d.Body)
	}
	if payload["body"] != text || payload["toId"] != "gina-web" || payload["channel"] != "live-chat" || payload["messageId"] != id {
		t.Fatalf("the receiver got %s", d.Body)
	}

	b.waitLive()
	b.mark()
	once.Do(func() { close(release) })
	b.waitFor(deliveryWait, "the reply to show sent",
		`document.getElementById('`+id+`').dataset.status === 'sent' && document.getElementById('`+id+`').querySelector('.status').textContent === 'sent'`)
	b.stillSamePage()
}

func TestInboxBrowserFailedDeliveryRetryNow(t *testing.T) {
	requireChromium(t)
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	// A retry an hour away: only the button sends the message again within the test.
	startWorker(t, "WEBHOOK_RETRY_SCHEDULE=1h")
	hook := newSink(t, answerWith(http.StatusInternalServerError)) // then 200
	acc := newBrowserAccount(t)
	acc.useWebhook(t, srv, hook)
	acc.botOff(t, srv)
	_, contactID := acc.say(t, srv, "retry-1", "leo-web", "Leo", "Park", "Where is my order?")

	b := acc.openConversation(t, srv, contactID)
	b.fill(`textarea[name=body]`, "Hi Leo, it left our warehouse this morning.")
	if status := b.click(`#reply button[type=submit]`); status != http.StatusOK {
		b.fatalf("sending the reply landed on a %d page", status)
	}
	id := evalJS[string](b, `(document.querySelectorAll('.msg.outgoing')[0] || {}).id || ''`)
	if id == "" {
		b.fatalf("no outgoing message shown after sending")
	}
	sel := `document.getElementById('` + id + `')`

	// Pending when the page loaded, or failed already: either way it shows failed without a reload.
	b.waitFor(deliveryWait, "the reply to show failed", sel+`.dataset.status === 'failed' && !!`+sel+`.querySelector('.failure')`)
	m := outgoingMessage(t, srv, acc.key, id)
	if m["status"] != "failed" || m["nextAttemptAt"] == nil || !strings.Contains(errorText(m["error"]), "500") {
		t.Fatalf("the message after a 500: %v", m)
	}
	failure := evalJS[string](b, sel+`.querySelector('.failure').textContent.replace(/\s+/g, ' ')`)
	for _, want := range []string{"Not delivered: " + errorText(m["error"]), "1 attempt · next attempt ", "Retry now"} {
		if !strings.Contains(failure, want) {
			b.fatalf("the failure shows %q, want it to contain %q", failure, want)
		}
	}
	// The next attempt's time, shown in the reader's time zone.
	next := parseTime(t, m["nextAttemptAt"]).UTC().Format(time.RFC3339)
	if got := evalJS[string](b, sel+`.querySelector('.failure time').getAttribute('datetime')`); got != next {
		b.fatalf("the next attempt shown is at %s, want %s", got, next)
	}
	if !evalJS[bool](b, sel+`.querySelector('.status').textContent === 'failed'`) {
		b.fatalf("the message's status does not read failed")
	}

	// The receiver is healthy again (it answers 200 from now on): Retry now sends it.
	if status := b.click(`li[id="` + id + `"] .failure button[type=submit]`); status != http.StatusOK {
		b.fatalf("Retry now landed on a %d page", status)
	}
	if p := b.path(); p != "/inbox/conversations/"+contactID {
		b.fatalf("Retry now went to %s", p)
	}
	if !strings.Contains(b.text(), "Sending again.") {
		b.fatalf("no confirmation after Retry now")
	}
	b.waitFor(deliveryWait, "the retried message to show sent", sel+`.dataset.status === 'sent' && !`+sel+`.querySelector('.failure')`)
	ds := hook.deliveries()
	if len(ds) != 2 || ds[0].Header.Get("webhook-id") != id || ds[1].Header.Get("webhook-id") != id {
		t.Fatalf("the receiver got %d requests, want 2 for message %s", len(ds), id)
	}
	if m := outgoingMessage(t, srv, acc.key, id); m["status"] != "sent" || m["attempts"] != 2.0 {
		t.Fatalf("the message after Retry now: %v", m)
	}
}

func TestInboxBrowserAlertResolves(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	messageID, contactID := acc.say(t, srv, "alert-1", "tom-web", "Tom", "Becker", "The boots are the wrong size, can I talk to someone?")

	b := acc.signedIn(t, srv)
	if status := b.open("/inbox/alerts"); status != http.StatusOK {
		b.fatalf("alerts page: %d", status)
	}
	if text := b.text(); !strings.Contains(text, "No open alerts.") {
		b.fatalf("the empty alerts page:\n%s", text)
	}
	b.waitLive()
	b.mark()
	incomingMsg, err := env.Store.MessageByID(t.Context(), acc.ID, messageID)
	if err != nil {
		t.Fatal(err)
	}
	const reason = "The contact asked for a person: wrong size delivered"
	alert, err := env.Store.Handoff(t.Context(), incomingMsg, reason)
	if err != nil {
		t.Fatal(err)
	}
	b.waitFor(liveWait, "the alert on the open alerts page",
		`[...document.querySelectorAll('[data-live="alerts"] .alert')].some(e => e.textContent.includes('Tom Becker') && e.textContent.includes('`+reason+`'))`)
	b.stillSamePage()

	if status := b.open("/inbox/conversations/" + contactID); status != http.StatusOK {
		b.fatalf("conversation page: %d", status)
	}
	banner := `document.querySelector('[data-live="conversation"] .alert')`
	if got := evalJS[string](b, `(`+banner+` || {}).textContent || ''`); !strings.Contains(got, "Needs a human") || !strings.Contains(got, reason) {
		b.fatalf("the conversation's alert reads %q", got)
	}
	if !evalJS[bool](b, `document.querySelector('.botstate').textContent.includes('Bot paused')`) {
		b.fatalf("a handoff should pause the bot for the contact")
	}
	if status := b.click(`[data-live="conversation"] .alert button[type=submit]`); status != http.StatusOK {
		b.fatalf("Resolve landed on a %d page", status)
	}
	if p := b.path(); p != "/inbox/conversations/"+contactID {
		b.fatalf("Resolve went to %s", p)
	}
	if !strings.Contains(b.text(), "Alert resolved.") || evalJS[bool](b, `!!`+banner) {
		b.fatalf("the alert is still shown after Resolve")
	}

	if status := b.open("/inbox/alerts"); status != http.StatusOK {
		b.fatalf("alerts page: %d", status)
	}
	if text := b.text(); strings.Contains(text, reason) || !strings.Contains(text, "No open alerts.") {
		b.fatalf("the resolved alert is still listed:\n%s", text)
	}
	if open := do(t, "GET", srv.URL+"/v1/alerts", acc.key, nil).JSON(t)["data"].([]any); len(open) != 0 {
		t.Fatalf("open alerts after Resolve: %v", open)
	}
	all := do(t, "GET", srv.URL+"/v1/alerts?all=true", acc.key, nil).JSON(t)["data"].([]any)
	if len(all) != 1 {
		t.Fatalf("all alerts: %v", all)
	}
	if a := all[0].(map[string]any); a["id"] != alert.ID || a["resolvedAt"] == nil {
		t.Fatalf("the alert after Resolve: %v", a)
	}
}

func TestInboxBrowserGenerateKey(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	expect(t, do(t, "GET", srv.URL+"/v1/credits", acc.key, nil), http.StatusOK, "")

	b := openInbox(t, startChromium(t), srv)
	dialogs := b.acceptDialogs()
	b.signIn(acc.Email, inboxPassword)
	if status := b.open("/inbox/settings"); status != http.StatusOK {
		b.fatalf("settings page: %d", status)
	}
	if evalJS[bool](b, `!!document.getElementById('new-key')`) {
		b.fatalf("a key is shown before one was generated")
	}
	if status := b.click(`form[action="/inbox/settings/api-key"] button[type=submit]`); status != http.StatusOK {
		b.fatalf("Generate new key landed on a %d page", status)
	}
	if got := dialogs(); len(got) != 1 || !strings.Contains(got[0], "current key stops working") {
		t.Fatalf("confirmations asked: %q, want one about the current key", got)
	}
	newKey := evalJS[string](b, `(document.getElementById('new-key') || {}).textContent || ''`)
	if newKey == "" || newKey == acc.key {
		b.fatalf("new key %q (old %q)", newKey, acc.key)
	}
	if !strings.Contains(b.text(), "shown only this once") {
		b.fatalf("the new key comes without the warning that it is shown once")
	}

	expect(t, do(t, "GET", srv.URL+"/v1/credits", acc.key, nil), http.StatusUnauthorized, models.CodeUnauthorized)
	expect(t, do(t, "GET", srv.URL+"/v1/credits", newKey, nil), http.StatusOK, "")

	t.Run("reloading the page neither shows nor generates a key", func(t *testing.T) {
		if status := b.reload(); status != http.StatusOK {
			b.fatalf("reload: %d", status)
		}
		if html := evalJS[string](b, `document.documentElement.outerHTML`); strings.Contains(html, newKey) {
			b.fatalf("the reloaded page shows the key again")
		}
		if got := dialogs(); len(got) != 1 {
			t.Fatalf("the reload asked %q", got[1:])
		}
		expect(t, do(t, "GET", srv.URL+"/v1/credits", newKey, nil), http.StatusOK, "")
	})

	t.Run("the key is not shown again", func(t *testing.T) {
		if status := b.open("/inbox/settings"); status != http.StatusOK {
			b.fatalf("settings page: %d", status)
		}
		if html := evalJS[string](b, `document.documentElement.outerHTML`); strings.Contains(html, newKey) {
			b.fatalf("the settings page shows the key again")
		}
	})
}

func TestInboxBrowserMessageBodiesStayText(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	const img = `<img src=x onerror="window.__xss=1">`
	const script = `<script>window.__xss=2</script>`
	_, contactID := acc.say(t, srv, "xss-1", "mallory", "Mallory", "", img)

	b := acc.signedIn(t, srv)
	noMarkup := func(where string) {
		t.Helper()
		if got := evalJS[string](b, `String(window.__xss)`); got != "undefined" {
			b.fatalf("%s: a message body ran as script: window.__xss = %s", where, got)
		}
		if n := evalJS[int](b, `document.querySelectorAll('img[src="x"], img[onerror], main script').length`); n != 0 {
			b.fatalf("%s: %d elements made from a message body", where, n)
		}
	}
	if got := evalJS[string](b, `document.querySelector('.conv .preview').textContent`); got != img {
		b.fatalf("the list previews %q, want the text %q", got, img)
	}
	noMarkup("the list")

	if status := b.open("/inbox/conversations/" + contactID); status != http.StatusOK {
		b.fatalf("conversation page: %d", status)
	}
	b.waitLive()
	b.mark()
	// The second one arrives while the page is open: the live update inserts the server's HTML.
	acc.say(t, srv, "xss-2", "mallory", "", "", script)
	b.waitFor(liveWait, "the second message", `document.querySelectorAll('.msg.incoming').length === 2`)
	b.stillSamePage()
	bubbles := evalJS[[]string](b, `[...document.querySelectorAll('.msg.incoming .bubble')].map(e => e.textContent.trim())`)
	if len(bubbles) != 2 || bubbles[0] != img || bubbles[1] != script {
		b.fatalf("the bubbles read %q, want the bodies as text", bubbles)
	}
	noMarkup("the conversation")

	if status := b.open("/inbox/"); status != http.StatusOK {
		b.fatalf("list page: %d", status)
	}
	if got := evalJS[string](b, `document.querySelector('.conv .preview').textContent`); got != script {
		b.fatalf("the list previews %q, want the text %q", got, script)
	}
	noMarkup("the list after both")
}

func TestInboxBrowserFormWithoutCSRFToken(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	_, contactID := acc.say(t, srv, "csrf-1", "nina-web", "Nina", "Holt", "Can I change my delivery address?")
	messages := func() int {
		t.Helper()
		return len(do(t, "GET", srv.URL+"/v1/contacts/"+contactID+"/messages", acc.key, nil).JSON(t)["data"].([]any))
	}

	b := acc.openConversation(t, srv, contactID)
	token := evalJS[string](b, `document.querySelector('#reply input[name=csrf_token]').value`)
	evalJS[bool](b, `document.querySelector('#reply input[name=csrf_token]').remove(), true`)
	b.fill(`textarea[name=body]`, "Sent without a token")
	if status := b.click(`#reply button[type=submit]`); status != http.StatusForbidden {
		b.fatalf("a reply without the CSRF token answered %d, want 403", status)
	}
	if text := b.text(); !strings.Contains(text, "CSRF") {
		b.fatalf("the 403 page does not explain:\n%s", text)
	}
	if n := messages(); n != 1 {
		t.Fatalf("%d messages after a refused reply, want 1", n)
	}

	t.Run("over HTTP with the session cookie", func(t *testing.T) {
		session := browserSessionCookie + "=" + b.cookie(browserSessionCookie)
		reply := srv.URL + "/inbox/conversations/" + contactID + "/reply"
		for name, form := range map[string]url.Values{
			"no token":    {"body": {"no token"}},
			"empty token": {"body": {"empty token"}, "csrf_token": {""}},
			"wrong token": {"body": {"wrong token"}, "csrf_token": {strings.Repeat("A", len(token))}},
		} {
			if res, body := inboxRequest(t, "POST", reply, form, session); res.StatusCode != http.StatusForbidden || !strings.Contains(body, "CSRF") {
				t.Errorf("%s: %d %s", name, res.StatusCode, body)
			}
		}
		if n := messages(); n != 1 {
			t.Fatalf("%d messages after refused replies, want 1", n)
		}
		// The same request with the page's token is accepted: the token alone made the difference.
		res, _ := inboxRequest(t, "POST", reply, url.Values{"body": {"with the token"}, "csrf_token": {token}}, session)
		if res.StatusCode != http.StatusSeeOther || messages() != 2 {
			t.Fatalf("the reply with the token answered %d", res.StatusCode)
		}
	})
}

// browserSessionCookie is the inbox's session cookie (api/inbox_auth.go).
const browserSessionCookie = "inbox_session"

func TestInboxBrowserSignOutEndsSession(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	b := acc.signedIn(t, srv)
	token := b.cookie(browserSessionCookie)
	if token == "" {
		t.Fatalf("no %s cookie after signing in", browserSessionCookie)
	}
	old := browserSessionCookie + "=" + token
	if res, _ := inboxRequest(t, "GET", srv.URL+"/inbox/", nil, old); res.StatusCode != http.StatusOK {
		t.Fatalf("GET /inbox/ with the session: %d, want 200", res.StatusCode)
	}

	if status := b.click(`.signout button[type=submit]`); status != http.StatusOK {
		b.fatalf("Sign out landed on a %d page", status)
	}
	if p := b.path(); p != "/inbox/login" {
		b.fatalf("Sign out went to %s, want /inbox/login", p)
	}
	if got := b.cookie(browserSessionCookie); got != "" {
		t.Fatalf("the browser kept the session cookie %q", got)
	}

	res, _ := inboxRequest(t, "GET", srv.URL+"/inbox/", nil, old)
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/inbox/login") {
		t.Fatalf("GET /inbox/ with the ended session: %d to %q, want 303 to /inbox/login", res.StatusCode, loc)
	}
	// The event stream, as the page's script asks for it.
	stream := http.Header{"Accept": {"text/event-stream"}}
	if res, _ := inboxRequestWith(t, "GET", srv.URL+"/inbox/events", nil, stream, old); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /inbox/events with the ended session: %d, want 401", res.StatusCode)
	}
	if status := b.open("/inbox/"); status != http.StatusOK || b.path() != "/inbox/login?next=%2Finbox%2F" {
		b.fatalf("the inbox after signing out: %d at %s, want the sign-in form", status, b.path())
	}
}

func TestInboxBrowserSignInThrottle(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	b := openInbox(t, startChromium(t), srv)
	if status := b.open("/inbox/login"); status != http.StatusOK {
		b.fatalf("GET /inbox/login: %d", status)
	}
	attempt := func(password string) (int64, string) {
		t.Helper()
		b.fill(`input[name=email]`, acc.Email)
		b.fill(`input[name=password]`, password)
		status := b.click(`form[action="/inbox/login"] button[type=submit]`)
		return status, b.text()
	}
	for i := 1; i <= 5; i++ {
		if status, text := attempt("not the password"); status != http.StatusUnauthorized || !strings.Contains(text, "Wrong email or password") {
			b.fatalf("wrong password %d: %d\n%s", i, status, text)
		}
	}
	if status, text := attempt("not the password"); status != http.StatusTooManyRequests || !strings.Contains(text, "Too many failed sign-ins") {
		b.fatalf("wrong password 6: %d, want 429\n%s", status, text)
	}
	if status, text := attempt(inboxPassword); status != http.StatusTooManyRequests || !strings.Contains(text, "Too many failed sign-ins") {
		b.fatalf("the right password after six failures: %d, want 429\n%s", status, text)
	}
	if p := b.path(); p != "/inbox/login" {
		b.fatalf("at %s after refused sign-ins", p)
	}
	if b.cookie(browserSessionCookie) != "" {
		t.Fatalf("a session cookie after refused sign-ins")
	}

	t.Run("over HTTP", func(t *testing.T) {
		res, _ := inboxRequest(t, "GET", srv.URL+"/inbox/login", nil)
		var csrf string
		for _, c := range res.Cookies() {
			if c.Name == "inbox_login_csrf" {
				csrf = c.Value
			}
		}
		if csrf == "" {
			t.Fatalf("GET /inbox/login set no CSRF cookie")
		}
		form := url.Values{"csrf_token": {csrf}, "email": {acc.Email}, "password": {inboxPassword}}
		res, body := inboxRequest(t, "POST", srv.URL+"/inbox/login", form, "inbox_login_csrf="+csrf)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(body, "Too many failed sign-ins") {
			t.Fatalf("POST /inbox/login with the right password: %d (Retry-After %q)", res.StatusCode, res.Header.Get("Retry-After"))
		}
	})
}

func TestInboxBrowserOtherAccountIsNotFound(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	a, other := newBrowserAccount(t), newBrowserAccount(t)
	const secret = "my card ends in 4242 and my code is 917"
	otherMessage, otherContact := other.say(t, srv, "b-1", "bea-web", "Bea", "Secret", secret)
	_, ownContact := a.say(t, srv, "a-1", "abe-web", "Abe", "Own", "hello from A's contact")

	b := a.signedIn(t, srv)
	leaks := func(where string) {
		t.Helper()
		html := evalJS[string](b, `document.documentElement.outerHTML`)
		for _, s := range []string{secret, "Bea Secret", otherContact, otherMessage} {
			if strings.Contains(html, s) {
				b.fatalf("%s shows %q of the other account", where, s)
			}
		}
	}
	for _, path := range []string{"/inbox/conversations/" + otherContact, "/inbox/media/" + otherMessage} {
		if status := b.open(path); status != http.StatusNotFound {
			b.fatalf("GET %s: %d, want 404", path, status)
		}
		if text := b.text(); !strings.Contains(text, "Not found") {
			b.fatalf("GET %s is not the 404 page:\n%s", path, text)
		}
		leaks(path)
	}

	t.Run("the live list gets only its own account's messages", func(t *testing.T) {
		if status := b.open("/inbox/"); status != http.StatusOK {
			b.fatalf("list page: %d", status)
		}
		b.waitLive()
		other.say(t, srv, "b-2", "bea-web", "", "", "second secret: "+secret)
		a.say(t, srv, "a-2", "abe-web", "", "", "A's contact again")
		b.waitFor(liveWait, "A's message in the list", `document.querySelector('[data-live="list"]').textContent.includes("A's contact again")`)
		leaks("the list")
	})

	t.Run("a reply to the other account's contact is 404", func(t *testing.T) {
		if status := b.open("/inbox/conversations/" + ownContact); status != http.StatusOK {
			b.fatalf("own conversation: %d", status)
		}
		token := evalJS[string](b, `document.querySelector('#reply input[name=csrf_token]').value`)
		res, _ := inboxRequest(t, "POST", srv.URL+"/inbox/conversations/"+otherContact+"/reply",
			url.Values{"body": {"hi"}, "csrf_token": {token}}, browserSessionCookie+"="+b.cookie(browserSessionCookie))
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("reply to another account's contact: %d, want 404", res.StatusCode)
		}
		if n := len(do(t, "GET", srv.URL+"/v1/contacts/"+otherContact+"/messages", other.key, nil).JSON(t)["data"].([]any)); n != 2 {
			t.Fatalf("the other account's contact has %d messages, want its 2", n)
		}
	})
}

// screenshotRun numbers the runs of TestInboxBrowserLaptopAndPhoneLayout in this process, so that a
// repeated run (-count) gets its own email addresses.
var screenshotRun atomic.Int64

// TestInboxBrowserLaptopAndPhoneLayout fills an account with a realistic day of conversations and
// looks at every page at laptop and phone size: nothing may make the page scroll sideways, and on a
// phone the reply box stays on screen. With INBOX_SCREENSHOTS set to a directory, it saves the pages
// there as PNGs.
func TestInboxBrowserLaptopAndPhoneLayout(t *testing.T) {
	requireChromium(t)
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t, "WEBHOOK_RETRY_SCHEDULE=1h")
	// The receiver refuses one message (the failed delivery the pages show) and takes the rest.
	var hook *sink
	hook = newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if strings.Contains(string(hook.deliveries()[n-1].Body), "exchange label") {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("upstream unavailable"))
			return
		}
		w.WriteHeader(http.StatusOK)
	})

	email := "maria.lopez@northwind.example"
	if n := screenshotRun.Add(1); n > 1 {
		email = fmt.Sprintf("maria.lopez+%d@northwind.example", n)
	}
	created, err := env.Store.CreateAccount(t.Context(), models.NewAccount{Email: email})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.SetPassword(t.Context(), created.Account.OwnerUserID, inboxPassword); err != nil {
		t.Fatal(err)
	}
	acc := browserAccount{Account: created.Account, key: created.APIKey}
	acc.useWebhook(t, srv, hook)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/bot", acc.key, map[string]any{
		"active": true, "goal": "Book a free fitting at your nearest store",
		"instructions": "You answer for Northwind, a shoe shop.\n" +
			"when ship, shipping, delivery: We ship across Europe in 3 to 5 business days, free over €60.\n" +
			"when order, tracking: Your tracking link is in the confirmation email.\n" +
			"when stock, size, sizes: All sizes from 36 to 46 are in stock.",
	}), http.StatusOK, "")

	b := openInbox(t, startChromium(t), srv)
	b.use(laptopSize)
	if status := b.open("/inbox/login"); status != http.StatusOK {
		b.fatalf("GET /inbox/login: %d", status)
	}
	b.saveScreenshot("login-laptop.png", false, 0)
	b.use(phoneSize)
	b.open("/inbox/login")
	b.noHorizontalOverflow("sign-in on a phone")
	b.saveScreenshot("login-phone.png", false, 0)
	b.use(laptopSize)
	b.signIn(acc.Email, inboxPassword)

	// Empty states first.
	for _, p := range []struct{ path, file string }{
		{"/inbox/", "conversations-empty-laptop.png"},
		{"/inbox/alerts", "alerts-empty-laptop.png"},
		{"/inbox/campaigns", "campaigns-empty-laptop.png"},
	} {
		if status := b.open(p.path); status != http.StatusOK {
			b.fatalf("GET %s: %d", p.path, status)
		}
		if !evalJS[bool](b, `!!document.querySelector('main .empty')`) {
			b.fatalf("%s without anything to show has no empty state", p.path)
		}
		b.saveScreenshot(p.file, false, 0)
	}

	// A day of conversations. Each message waits for the bot's answer, so the order is as written.
	replies := 0
	say := func(sid, from, first, last, body string, answered bool) string {
		t.Helper()
		_, contactID := acc.say(t, srv, sid, from, first, last, body)
		if answered {
			replies++
			waitFor(t, deliveryWait, "the bot's answer to "+sid, func() bool { return len(hook.deliveries()) >= replies })
		}
		return contactID
	}
	say("d-1", "jonas-web", "Jonas", "Weber", "Hello, do you have the Trail Runner in size 44?", true)
	campaignContacts := []string{
		namedContact(t, srv, acc.key, "+351912345678", "Sofia"),
		namedContact(t, srv, acc.key, "+351913456789", "Lucas"),
	}
	tom := say("d-2", "tom-web", "Tom", "Becker", "Hi, the boots I got yesterday are a size too small.", true)
	ana := say("d-3", "ana-web", "Ana", "Souza", "Hi! Do you ship to Lisbon?", true)
	say("d-4", "ana-web", "", "", "Great, thanks! Is the green one in stock in 39?", true)
	say("d-5", "tom-web", "", "", "Can I talk to a person about exchanging them?", false)
	waitFor(t, deliveryWait, "Tom's handoff", func() bool {
		return len(do(t, "GET", srv.URL+"/v1/alerts", acc.key, nil).JSON(t)["data"].([]any)) == 1
	})
	r := do(t, "POST", srv.URL+"/v1/contacts/"+tom+"/messages", acc.key, map[string]any{
		"body": "Hi Tom, Maria here. Sorry about that! I am sending you a free exchange label by email right now.",
	})
	expect(t, r, http.StatusCreated, "")
	failedID, _ := r.JSON(t)["id"].(string)
	waitFor(t, deliveryWait, "the refused delivery", func() bool {
		return messageField(t, srv, acc.key, failedID, "status") == "failed"
	})
	listID := newList(t, srv, acc.key, "Spring newsletter sign-ups")
	r = do(t, "POST", srv.URL+"/v1/campaigns", acc.key, map[string]any{
		"name": "Spring collection welcome", "type": "combined", "listId": listID, "channel": "custom:live-chat",
		"openingMessage": "Hi {{firstName}}, thanks for signing up! Our spring collection is out today.",
		"goal":           "Book a free fitting at your nearest store", "status": "live", "sendRatePerMinute": 60,
	})
	expect(t, r, http.StatusCreated, "")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", acc.key, map[string]any{"contactIds": campaignContacts}), http.StatusCreated, "")
	expect(t, do(t, "POST", srv.URL+"/v1/campaigns", acc.key, map[string]any{"name": "Winter boots clearance"}), http.StatusCreated, "")
	waitFor(t, deliveryWait, "the campaign's two openings", func() bool { return len(hook.deliveries()) >= replies+3 })

	// Ana's conversation is read; the others stay unread.
	if status := b.open("/inbox/conversations/" + ana); status != http.StatusOK {
		b.fatalf("Ana's conversation: %d", status)
	}
	pages := []struct {
		path, name string
		full       bool
	}{
		{"/inbox/", "conversations", true},
		{"/inbox/conversations/" + tom, "conversation", true},
		{"/inbox/alerts", "alerts", true},
		{"/inbox/campaigns", "campaigns", true},
		{"/inbox/settings", "settings", true},
	}
	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		for _, p := range pages {
			if status := b.open(p.path); status != http.StatusOK {
				b.fatalf("GET %s: %d", p.path, status)
			}
			b.noHorizontalOverflow(p.name + " on a " + v.name)
			if p.name == "conversation" {
				b.waitFor(liveWait, "the conversation scrolled to its end", `window.innerHeight + window.scrollY >= document.body.scrollHeight - 2`)
				// The reply box is on screen, its text area and button inside the viewport; on a phone,
				// where Tom's conversation is longer than the screen, so are his name and the bot switch.
				onScreen := []string{"#reply", "#reply textarea", "#reply button"}
				if v.mobile {
					if evalJS[float64](b, `window.scrollY`) <= 0 {
						b.fatalf("Tom's conversation fits a phone's screen: the pinned header is not tested")
					}
					onScreen = append(onScreen, ".convhead h1", ".convhead .botstate button", ".convhead .botstate .pill")
					// A line too long for the header ends in an ellipsis, not cut mid-word.
					for _, sel := range []string{".convhead h1", ".convhead .title p"} {
						cut := evalJS[string](b, `(s => s.display + ' ' + s.textOverflow + ' ' + s.whiteSpace)(getComputedStyle(document.querySelector('`+sel+`')))`)
						if cut != "block ellipsis nowrap" {
							b.fatalf("%s on a phone: display, text-overflow, white-space = %s; a long line is cut without an ellipsis", sel, cut)
						}
					}
				}
				for _, sel := range onScreen {
					box := evalJS[[]float64](b, `(r => [r.left, r.top, r.right, r.bottom, r.width, r.height])(document.querySelector('`+sel+`').getBoundingClientRect())`)
					w, h := float64(v.width), float64(v.height)
					if box[4] == 0 || box[5] == 0 || box[0] < 0 || box[1] < 0 || box[2] > w || box[3] > h {
						b.fatalf("%s on a %s is not on screen: %v in %vx%v", sel, v.name, box, w, h)
					}
				}
				// Tom's two messages, the bot's answer, the hand-off message and the failed reply.
				if n := evalJS[int](b, `document.querySelectorAll('.msg').length`); n != 5 {
					b.fatalf("Tom's conversation shows %d messages", n)
				}
				if !evalJS[bool](b, `!!document.querySelector('li[id="`+failedID+`"] .failure button')`) {
					b.fatalf("the failed reply has no Retry now")
				}
			}
			// On a laptop the whole page (settings is the longest, about two screens); on a phone what
			// the screen shows. TestInboxTeamScreenshots takes the conversation pages and the laptop's
			// list and alerts, with assignees, notes and who wrote each message.
			if name := p.name + "-" + v.name + ".png"; !teamScreenshots[name] && !adminScreenshots[name] {
				b.saveScreenshot(name, p.full && !v.mobile, 2000)
			}
		}
	}
}
