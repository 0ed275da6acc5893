package api_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/hibiken/asynq"

	"funnelchat/jobs"
)

// chromiumPath is where Debian's chromium package installs the browser; .ci/run installs it.
const chromiumPath = "/usr/bin/chromium"

// browserTimeout bounds everything the browser does in one test, start and shutdown included: a guard
// against a hung browser, not a measure of speed. The longest test (TestInboxBrowserCampaignPage, nine
// pages) takes 9 s alone, and took 63 s in a CI run where both test passes and every browser test ran
// at once, past the 60 s this was.
const browserTimeout = 3 * time.Minute

// TestMonitoringInBrowser opens the asynqmon dashboard in headless Chromium. The HTTP-level test
// proves the routes; this one proves what an operator sees: the React app, its script bundle and its
// XHRs to /monitoring/api/ all pass basic auth and the page renders the service's queues.
func TestMonitoringInBrowser(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t, "ADMIN_USER=ops", "ADMIN_PASSWORD=s3cret")
	queues := []string{jobs.QueueDeliveries, jobs.QueueDefault, jobs.QueueOpenings, jobs.QueueLow}
	// asynqmon lists only queues that exist in Redis, and a queue exists once it holds a task.
	enqueuePending(t, queues)
	browser := startChromium(t)

	t.Run("lists every queue with credentials", func(t *testing.T) {
		tab := newTab(t, browser)
		basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("ops:s3cret"))
		// Sent with every request of the tab: the page, the app's script bundle and its XHRs.
		if _, err := chromedp.Call(tab, network.SetExtraHTTPHeaders,
			network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": basic}}); err != nil {
			t.Fatalf("set the Authorization header: %v", err)
		}
		res, err := chromedp.Run(tab, chromedp.NavigateResponse(srv.URL+"/monitoring/"))
		if err != nil {
			t.Fatalf("open /monitoring/: %v", err)
		}
		if res.Status != http.StatusOK {
			t.Fatalf("/monitoring/ answered %d, want 200", res.Status)
		}

		// The queues arrive by XHR after the app starts: poll the rendered table until all are there.
		var listed []string
		deadline := time.Now().Add(30 * time.Second)
		for {
			listed, err = chromedp.Run(tab, chromedp.Evaluate[[]string](queueLinksJS))
			if err != nil {
				t.Fatalf("read the queues table: %v", err)
			}
			if containsAll(listed, queues) {
				break
			}
			if time.Now().After(deadline) {
				screenshot(t, tab)
				t.Fatalf("the dashboard lists queues %q, want all of %q; page text:\n%.2000s", listed, queues, pageText(t, tab))
			}
			time.Sleep(200 * time.Millisecond)
		}
		screenshot(t, tab)
	})

	t.Run("shows the 401 page and no queue without credentials", func(t *testing.T) {
		tab := newTab(t, browser)
		challenges := cancelLoginPrompts(t, tab)
		res, err := chromedp.Run(tab, chromedp.NavigateResponse(srv.URL+"/monitoring/"))
		if err != nil {
			t.Fatalf("open /monitoring/: %v", err)
		}
		if res.Status != http.StatusUnauthorized {
			t.Fatalf("/monitoring/ answered %d, want 401", res.Status)
		}
		if got := challenges(); len(got) != 1 || !strings.EqualFold(got[0].Scheme, "basic") || got[0].Realm != "funnelchat monitoring" {
			t.Fatalf("login prompts %+v, want one for basic realm \"funnelchat monitoring\"", got)
		}
		text := pageText(t, tab)
		if !strings.Contains(text, "authentication required") {
			t.Fatalf("not the 401 page:\n%.2000s", text)
		}
		for _, q := range queues {
			if strings.Contains(text, q) {
				t.Fatalf("the 401 page names queue %q:\n%.2000s", q, text)
			}
		}
		if listed, err := chromedp.Run(tab, chromedp.Evaluate[[]string](queueLinksJS)); err != nil || len(listed) > 0 {
			t.Fatalf("queue links on the 401 page: %q (%v)", listed, err)
		}
		screenshot(t, tab)
	})
}

// queueLinksJS returns the names in asynqmon's queues table: each row links its name to /queues/<name>.
const queueLinksJS = `Array.from(document.querySelectorAll('table a[href*="/queues/"]'), a => a.textContent.trim())`

// requireChromium skips the test when Chromium is not installed, and fails it on CI, which installs it.
// With TEST_BROWSER=skip it skips the test: .ci/run runs the browser tests in its embedded pass only
// (without the race detector, which slows the server they wait on), since what they look at (pages,
// layout, scripts) does not depend on the backend, and the inbox's handlers are tested on both backends
// without a browser. Browser tests that start no worker call t.Parallel: they spend their time waiting
// on Chromium, and each works in an account of its own.
func requireChromium(t *testing.T) {
	t.Helper()
	if os.Getenv("TEST_BROWSER") == "skip" {
		t.Skip("TEST_BROWSER=skip: the browser tests run in the other pass of .ci/run")
	}
	if _, err := exec.LookPath(chromiumPath); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is missing (%v); .ci/run installs it with apt-get install chromium", err)
		}
		t.Skipf("chromium is not installed (%v); apt-get install chromium to run this test", err)
	}
}

// enqueuePending puts one task on each queue and deletes them when the test ends. No worker runs in
// this package unless a test starts one (startWorker), so the tasks stay pending.
func enqueuePending(t *testing.T, queues []string) {
	t.Helper()
	inspector := asynq.NewInspector(env.Asynq)
	t.Cleanup(func() { _ = inspector.Close() })
	servers, err := inspector.Servers()
	if err != nil {
		t.Fatalf("list asynq servers: %v", err)
	}
	if len(servers) > 0 {
		t.Fatalf("%d asynq worker(s) running; they would take the tasks off the queues", len(servers))
	}
	client := asynq.NewClient(env.Asynq)
	defer client.Close()
	for _, q := range queues {
		info, err := client.EnqueueContext(context.Background(), asynq.NewTask("monitoring:browser-test", nil), asynq.Queue(q))
		if err != nil {
			t.Fatalf("enqueue on %s: %v", q, err)
		}
		t.Cleanup(func() {
			if err := inspector.DeleteTask(q, info.ID); err != nil {
				t.Errorf("delete the %s task: %v", q, err)
			}
		})
	}
}

// chromium is the package's one headless Chromium, started by the first browser test and closed by
// TestMain: starting a browser takes a second or two, and the tests need not pay it each. Each test
// gets a browser context of its own in it (startChromium), as isolated as a fresh profile: its own
// cookies, storage and cache.
var chromium struct {
	once    sync.Once
	browser context.Context
	close   func()
	err     error
	log     string
}

// startChromium returns the context of a new, isolated browser context in the package's Chromium
// (started on first use); every browser step of the test runs under browserTimeout, and the browser
// context is disposed of at cleanup.
func startChromium(t *testing.T) context.Context {
	t.Helper()
	requireChromium(t)
	chromium.once.Do(launchChromium)
	if chromium.err != nil {
		t.Fatalf("start %s: %v\n%s", chromiumPath, chromium.err, chromiumLog(chromium.log))
	}
	ctx, cancelTimeout := context.WithTimeout(chromium.browser, browserTimeout)
	browser, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(func() {
		cancel() // disposes of the browser context
		cancelTimeout()
		if t.Failed() {
			t.Logf("chromium output, without its D-Bus complaints (there is no bus here):\n%s", chromiumLog(chromium.log))
		}
	})
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("open a browser context: %v", err)
	}
	return browser
}

// launchChromium starts the package's Chromium with a fresh profile.
func launchChromium() {
	profile, err := os.MkdirTemp("", "chromium-profile-")
	if err != nil {
		chromium.err = err
		return
	}
	output, err := os.CreateTemp("", "chromium-*.log")
	if err != nil {
		chromium.err = err
		return
	}
	chromium.log = output.Name()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		// Chromium 156's address-bar popup is a WebUI page in a renderer of its own, and with the
		// DevTools protocol attached it redraws for every open tab, without end: 20 idle tabs kept it
		// at about 1.5 cores, which made the browser tests wait for CPU more than for the pages.
		// Without it the same 20 tabs take 0.04 cores. The pages under test have no address bar.
		chromedp.Flag("disable-features", "WebUIOmniboxPopup,WebUIOmniboxFullPopup,WebUIOmniboxAimPopup"),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(output),
	)
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	chromium.browser = browser
	chromium.close = func() {
		_ = chromedp.Cancel(browser)
		cancelBrowser()
		cancelAlloc() // waits for the process to exit
		_ = output.Close()
		_ = os.Remove(output.Name())
		_ = os.RemoveAll(profile)
	}
	// The first run starts the browser.
	chromium.err = chromedp.Do(browser)
}

// closeChromium ends the package's Chromium, if a test started it.
func closeChromium() {
	if chromium.close != nil {
		chromium.close()
	}
}

// chromiumLog returns the last lines of Chromium's output that are not about D-Bus.
func chromiumLog(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	var lines []string
	for line := range strings.Lines(string(raw)) {
		if !strings.Contains(line, ":ERROR:dbus/") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines[max(0, len(lines)-40):], "")
}

// newTab opens a tab in the browser, closed when the (sub)test ends.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(tab); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return tab
}

// cancelLoginPrompts answers every HTTP auth challenge in the tab like a user who cancels the
// browser's login prompt, so the tab shows the server's 401 page; headless Chromium, which has no
// prompt, would fail the navigation with net::ERR_INVALID_AUTH_CREDENTIALS instead. It returns a func
// that reports the challenges seen so far.
func cancelLoginPrompts(t *testing.T, tab context.Context) func() []fetch.AuthChallenge {
	t.Helper()
	ctx, stop := context.WithCancel(tab)
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	prompts := chromedp.Events(ctx, fetch.AuthRequired)
	var (
		mu         sync.Mutex
		challenges []fetch.AuthChallenge
		wg         sync.WaitGroup
	)
	wg.Go(func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			if _, err := chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID}); err != nil && ctx.Err() == nil {
				t.Logf("continue %s: %v", ev.Request.URL, err)
			}
		}
	})
	wg.Go(func() {
		for ev, err := range prompts {
			if err != nil {
				return
			}
			if ev.AuthChallenge != nil {
				mu.Lock()
				challenges = append(challenges, *ev.AuthChallenge)
				mu.Unlock()
			}
			cancel := &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}
			if _, err := chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID, AuthChallengeResponse: cancel}); err != nil && ctx.Err() == nil {
				t.Logf("cancel the login prompt for %s: %v", ev.Request.URL, err)
			}
		}
	})
	t.Cleanup(func() {
		stop()
		wg.Wait()
	})
	// Auth challenges are reported only for intercepted requests: intercept all, and let them through.
	if _, err := chromedp.Call(tab, fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{URLPattern: "*"}}, HandleAuthRequests: new(true),
	}); err != nil {
		t.Fatalf("enable request interception: %v", err)
	}
	return func() []fetch.AuthChallenge {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(challenges)
	}
}

// pageText returns the visible text of the tab's page.
func pageText(t *testing.T, tab context.Context) string {
	t.Helper()
	text, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		t.Fatalf("read the page text: %v", err)
	}
	return text
}

// screenshot saves a PNG of the tab into the test's temporary directory, for debugging.
func screenshot(t *testing.T, tab context.Context) {
	t.Helper()
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	path := filepath.Join(t.TempDir(), "page.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	t.Logf("screenshot: %s", path)
}

// containsAll reports whether every wanted name is in got.
func containsAll(got, want []string) bool {
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}
