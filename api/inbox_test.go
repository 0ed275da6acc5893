package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// HTTP-level tests of the inbox: sign-in, sessions, CSRF, headers and tenant isolation. What a person
// sees in a browser is tested in inbox_browser_test.go.

// browserClient is a cookie-keeping HTTP client that does not follow redirects, for one inbox user.
type browserClient struct {
	t       *testing.T
	srv     *server
	client  *http.Client
	headers []string
}

func newBrowserClient(t *testing.T, srv *server, headers ...string) *browserClient {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browserClient{t: t, srv: srv, headers: headers, client: &http.Client{
		Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type page struct {
	Status int
	Header http.Header
	Body   string
}

func (b *browserClient) do(method, path string, form url.Values, headers ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range append(b.headers, headers...) {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return page{Status: res.StatusCode, Header: res.Header, Body: string(raw)}
}

func (b *browserClient) get(path string) page { b.t.Helper(); return b.do("GET", path, nil) }

var csrfField = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// csrf returns the CSRF token of the first form on the page at path.
func (b *browserClient) csrf(path string) string {
	b.t.Helper()
	p := b.get(path)
	m := csrfField.FindStringSubmatch(p.Body)
	if m == nil {
		b.t.Fatalf("no csrf_token on %s (status %d):\n%.1500s", path, p.Status, p.Body)
	}
	return m[1]
}

// post submits a form of the page at from, with its CSRF token.
func (b *browserClient) post(from, action string, form url.Values) page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf_token", b.csrf(from))
	return b.do("POST", action, form)
}

func (b *browserClient) signIn(email, password string) page {
	b.t.Helper()
	return b.post("/inbox/login", "/inbox/login", url.Values{"email": {email}, "password": {password}})
}

func (b *browserClient) cookie(name string) *http.Cookie {
	u, _ := url.Parse(b.srv.URL + "/inbox/")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

const testPassword = "correct horse battery"

// inboxAccount creates an account whose owner signs in with testPassword; it returns the account, its
// API key and the owner's email.
func inboxAccount(t *testing.T) (*models.Account, string, string) {
	t.Helper()
	acc, key := newAccount(t)
	if err := env.Store.SetPassword(context.Background(), acc.OwnerUserID, testPassword); err != nil {
		t.Fatal(err)
	}
	return acc, key, acc.Email
}

func signedIn(t *testing.T, srv *server) (*browserClient, *models.Account, string) {
	t.Helper()
	acc, key, email := inboxAccount(t)
	b := newBrowserClient(t, srv)
	if p := b.signIn(email, testPassword); p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/inbox/" {
		t.Fatalf("sign-in: %d %q\n%.1000s", p.Status, p.Header.Get("Location"), p.Body)
	}
	return b, acc, key
}

func TestInboxSignIn(t *testing.T) {
	srv := startServer(t)

	t.Run("a page without a session goes to the sign-in form", func(t *testing.T) {
		p := newBrowserClient(t, srv).get("/inbox/alerts")
		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/inbox/login?next=%2Finbox%2Falerts" {
			t.Fatalf("got %d %q", p.Status, p.Header.Get("Location"))
		}
	})

	t.Run("the session cookie is HttpOnly, SameSite=Lax, path /inbox, and not Secure over plain HTTP", func(t *testing.T) {
		_, email := func() (*models.Account, string) { a, _, e := inboxAccount(t); return a, e }()
		b := newBrowserClient(t, srv)
		p := b.signIn(email, testPassword)
		if p.Status != http.StatusSeeOther {
			t.Fatalf("sign-in %d", p.Status)
		}
		set := strings.Join(p.Header.Values("Set-Cookie"), "\n")
		line := ""
		for _, l := range p.Header.Values("Set-Cookie") {
			if strings.HasPrefix(l, "inbox_session=") {
				line = strings.ToLower(l)
			}
		}
		for _, want := range []string{"httponly", "samesite=lax", "path=/inbox"} {
			if !strings.Contains(line, want) {
				t.Fatalf("session cookie %q lacks %s (all: %s)", line, want, set)
			}
		}
		if strings.Contains(line, "secure") {
			t.Fatalf("Secure over plain HTTP would never be sent back: %q", line)
		}
	})

	t.Run("behind a trusted HTTPS proxy the cookie is Secure, and plain HTTP is refused", func(t *testing.T) {
		tls := startServer(t, "REQUIRE_HTTPS=true", "TRUST_PROXY=true")
		_, _, email := inboxAccount(t)
		if p := newBrowserClient(t, tls).get("/inbox/login"); p.Status != http.StatusForbidden {
			t.Fatalf("plain HTTP /inbox/login: %d, want 403", p.Status)
		}
		b := newBrowserClient(t, tls, "X-Forwarded-Proto: https")
		p := b.signIn(email, testPassword)
		if p.Status != http.StatusSeeOther {
			t.Fatalf("sign-in %d", p.Status)
		}
		if got := strings.ToLower(strings.Join(p.Header.Values("Set-Cookie"), "\n")); !strings.Contains(got, "secure") {
			t.Fatalf("cookie not Secure over HTTPS: %s", got)
		}
	})

	t.Run("a wrong password and an unknown email get the same 401", func(t *testing.T) {
		_, _, email := inboxAccount(t)
		b := newBrowserClient(t, srv)
		wrong := b.signIn(email, "not the password at all")
		unknown := b.signIn("nobody-"+email, "not the password at all")
		for _, p := range []page{wrong, unknown} {
			if p.Status != http.StatusUnauthorized || !strings.Contains(p.Body, "Wrong email or password.") {
				t.Fatalf("got %d:\n%.800s", p.Status, p.Body)
			}
			if b.cookie("inbox_session") != nil {
				t.Fatal("a failed sign-in set a session")
			}
		}
	})

	t.Run("the sign-in form needs its CSRF token", func(t *testing.T) {
		_, _, email := inboxAccount(t)
		b := newBrowserClient(t, srv)
		b.get("/inbox/login")
		p := b.do("POST", "/inbox/login", url.Values{"email": {email}, "password": {testPassword}})
		if p.Status != http.StatusForbidden {
			t.Fatalf("without token: %d, want 403", p.Status)
		}
		p = b.do("POST", "/inbox/login", url.Values{"email": {email}, "password": {testPassword}, "csrf_token": {"forged"}})
		if p.Status != http.StatusForbidden {
			t.Fatalf("forged token: %d, want 403", p.Status)
		}
	})

	t.Run("next stays inside the inbox", func(t *testing.T) {
		_, _, email := inboxAccount(t)
		for next, want := range map[string]string{
			"/inbox/alerts":      "/inbox/alerts",
			"https://evil.test/": "/inbox/",
			"//evil.test/inbox/": "/inbox/",
			"/inbox//evil.test":  "/inbox/",
		} {
			b := newBrowserClient(t, srv)
			p := b.post("/inbox/login", "/inbox/login", url.Values{"email": {email}, "password": {testPassword}, "next": {next}})
			if p.Status != http.StatusSeeOther || p.Header.Get("Location") != want {
				t.Fatalf("next=%q: %d %q, want 303 %q", next, p.Status, p.Header.Get("Location"), want)
			}
		}
	})
}

func TestInboxSignInThrottle(t *testing.T) {
	srv := startServer(t)

	t.Run("the sixth failure within the window is 429, even with the right password", func(t *testing.T) {
		_, _, email := inboxAccount(t)
		_, _, other := inboxAccount(t)
		b := newBrowserClient(t, srv)
		for i := 1; i <= 5; i++ {
			if p := b.signIn(email, "wrong password number"); p.Status != http.StatusUnauthorized {
				t.Fatalf("attempt %d: %d, want 401", i, p.Status)
			}
		}
		p := b.signIn(email, "wrong password number")
		if p.Status != http.StatusTooManyRequests || !strings.Contains(p.Body, "Too many failed sign-ins") {
			t.Fatalf("sixth: %d, want 429:\n%.800s", p.Status, p.Body)
		}
		if ra := p.Header.Get("Retry-After"); ra == "" || ra == "0" {
			t.Fatalf("Retry-After %q", ra)
		}
		if p := b.signIn(email, testPassword); p.Status != http.StatusTooManyRequests {
			t.Fatalf("right password while throttled: %d, want 429", p.Status)
		}
		// Counted per email: another user signs in as usual.
		if p := newBrowserClient(t, srv).signIn(other, testPassword); p.Status != http.StatusSeeOther {
			t.Fatalf("another email: %d, want 303", p.Status)
		}
	})

	t.Run("a success forgets earlier failures", func(t *testing.T) {
		_, _, email := inboxAccount(t)
		b := newBrowserClient(t, srv)
		for i := 0; i < 4; i++ {
			b.signIn(email, "wrong password number")
		}
		if p := b.signIn(email, testPassword); p.Status != http.StatusSeeOther {
			t.Fatalf("fifth attempt, right password: %d", p.Status)
		}
		for i := 1; i <= 5; i++ {
			if p := newBrowserClient(t, srv).signIn(email, "wrong password number"); p.Status != http.StatusUnauthorized {
				t.Fatalf("failure %d after a success: %d, want 401", i, p.Status)
			}
		}
	})

	t.Run("parallel guesses get no more than five verdicts", func(t *testing.T) {
		_, _, email := inboxAccount(t)
		var mu sync.Mutex
		counts := map[int]int{}
		var wg sync.WaitGroup
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := newBrowserClient(t, srv)
				p := b.signIn(email, fmt.Sprintf("guess number %d!", i))
				mu.Lock()
				counts[p.Status]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if counts[http.StatusUnauthorized] != 5 || counts[http.StatusTooManyRequests] != 15 {
			t.Fatalf("statuses %v, want 5 x 401 and 15 x 429", counts)
		}
	})
}

func TestInboxSessions(t *testing.T) {
	t.Parallel()
	srv := startServer(t)

	t.Run("signing out ends the session at once", func(t *testing.T) {
		b, _, _ := signedIn(t, srv)
		old := b.cookie("inbox_session")
		if p := b.post("/inbox/", "/inbox/logout", nil); p.Status != http.StatusSeeOther || p.Header.Get("Location") != "/inbox/login" {
			t.Fatalf("logout: %d %q", p.Status, p.Header.Get("Location"))
		}
		replay := newBrowserClient(t, srv, "Cookie: inbox_session="+old.Value)
		if p := replay.get("/inbox/"); p.Status != http.StatusSeeOther || !strings.HasPrefix(p.Header.Get("Location"), "/inbox/login") {
			t.Fatalf("old cookie after sign-out: %d %q", p.Status, p.Header.Get("Location"))
		}
	})

	t.Run("a password change ends the other sessions and keeps this browser signed in", func(t *testing.T) {
		b, acc, _ := signedIn(t, srv)
		other := newBrowserClient(t, srv)
		other.signIn(acc.Email, testPassword)
		if p := other.get("/inbox/"); p.Status != http.StatusOK {
			t.Fatalf("second browser: %d", p.Status)
		}
		const newPassword = "an even better passphrase"
		p := b.post("/inbox/settings", "/inbox/settings/password", url.Values{"current": {testPassword}, "new": {newPassword}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("change: %d", p.Status)
		}
		if p := other.get("/inbox/"); p.Status != http.StatusSeeOther {
			t.Fatalf("other session after the change: %d, want 303 to sign-in", p.Status)
		}
		if p := b.get("/inbox/settings"); p.Status != http.StatusOK || !strings.Contains(p.Body, "Password changed") {
			t.Fatalf("this browser after the change: %d\n%.600s", p.Status, p.Body)
		}
		if p := newBrowserClient(t, srv).signIn(acc.Email, newPassword); p.Status != http.StatusSeeOther {
			t.Fatalf("new password: %d", p.Status)
		}
	})

	t.Run("a wrong current password or a short new one changes nothing", func(t *testing.T) {
		b, acc, _ := signedIn(t, srv)
		b.post("/inbox/settings", "/inbox/settings/password", url.Values{"current": {"not it at all!"}, "new": {"whatever whatever"}})
		if p := b.get("/inbox/settings"); !strings.Contains(p.Body, "The current password is wrong.") {
			t.Fatalf("no message:\n%.600s", p.Body)
		}
		b.post("/inbox/settings", "/inbox/settings/password", url.Values{"current": {testPassword}, "new": {"short"}})
		if p := b.get("/inbox/settings"); !strings.Contains(p.Body, "at least 12 characters") {
			t.Fatalf("no message:\n%.600s", p.Body)
		}
		if p := newBrowserClient(t, srv).signIn(acc.Email, testPassword); p.Status != http.StatusSeeOther {
			t.Fatalf("old password stopped working: %d", p.Status)
		}
	})

	t.Run("owners add and remove members; a removed member is signed out at once", func(t *testing.T) {
		owner, _, _ := signedIn(t, srv)
		email := fmt.Sprintf("member%d@example.com", time.Now().UnixNano())
		p := owner.post("/inbox/settings", "/inbox/settings/team", url.Values{"email": {email}, "role": {"member"}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("add member: %d, want 303\n%.1500s", p.Status, p.Body)
		}
		shown := p.Header.Get("Location")
		p = owner.get(shown)
		pw := regexp.MustCompile(`id="new-password">([^<]+)<`).FindStringSubmatch(p.Body)
		if p.Status != http.StatusOK || pw == nil {
			t.Fatalf("the page after adding a member: %d\n%.1500s", p.Status, p.Body)
		}
		if again := owner.get(shown); strings.Contains(again.Body, pw[1]) || !strings.Contains(again.Body, "shown once already") {
			t.Fatalf("reloading the page showed the password again or said nothing:\n%.1500s", again.Body)
		}
		member := newBrowserClient(t, srv)
		if p := member.signIn(email, pw[1]); p.Status != http.StatusSeeOther {
			t.Fatalf("member sign-in: %d", p.Status)
		}
		// Members do not manage the team.
		if p := member.post("/inbox/settings", "/inbox/settings/team", url.Values{"email": {"x" + email}}); p.Status != http.StatusForbidden {
			t.Fatalf("member adds a user: %d, want 403", p.Status)
		}
		u, err := env.Store.UserByEmail(context.Background(), email)
		if err != nil {
			t.Fatal(err)
		}
		if p := owner.post("/inbox/settings", "/inbox/settings/team/"+u.ID+"/remove", nil); p.Status != http.StatusSeeOther {
			t.Fatalf("remove: %d", p.Status)
		}
		if p := member.get("/inbox/"); p.Status != http.StatusSeeOther {
			t.Fatalf("removed member: %d, want 303 to sign-in", p.Status)
		}
	})

	t.Run("another account's member cannot be removed", func(t *testing.T) {
		owner, _, _ := signedIn(t, srv)
		other, _, _ := inboxAccount(t)
		owner.post("/inbox/settings", "/inbox/settings/team/"+other.OwnerUserID+"/remove", nil)
		if _, err := env.Store.UserByEmail(context.Background(), other.Email); err != nil {
			t.Fatalf("another account's owner was removed: %v", err)
		}
	})
}

func TestInboxPagesAndIsolation(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	b, _, key := signedIn(t, srv)
	_, otherKey := newAccount(t)
	expect(t, incoming(t, srv, key, "sid-own-1", "visitor-1", `<img src=x onerror="alert(1)"> hi <script>alert(2)</script>`), 200, "")
	expect(t, incoming(t, srv, otherKey, "sid-other-1", "stranger-1", "secret of another account"), 200, "")
	var contactID, otherContactID string
	for _, c := range []struct {
		key string
		id  *string
	}{{key, &contactID}, {otherKey, &otherContactID}} {
		r := do(t, "GET", srv.URL+"/v1/conversations", c.key, nil)
		expect(t, r, 200, "")
		data := r.JSON(t)["data"].([]any)
		*c.id = data[0].(map[string]any)["contact"].(map[string]any)["id"].(string)
	}

	t.Run("every page renders with the policy and no inline script or style", func(t *testing.T) {
		for _, path := range []string{"/inbox/", "/inbox/conversations/" + contactID, "/inbox/alerts", "/inbox/campaigns", "/inbox/settings", "/inbox/login"} {
			p := b.get(path)
			if path == "/inbox/login" {
				p = newBrowserClient(t, srv).get(path)
			}
			if p.Status != http.StatusOK {
				t.Fatalf("%s: %d\n%.800s", path, p.Status, p.Body)
			}
			csp := p.Header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Fatalf("%s: policy %q lacks %q", path, csp, want)
				}
			}
			if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "http") {
				t.Fatalf("%s: policy %q allows inline code or another origin", path, csp)
			}
			if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`).MatchString(p.Body) || regexp.MustCompile(`<[a-z][^>]*\s(style|on[a-z]+)=`).MatchString(p.Body) {
				t.Fatalf("%s has inline script, style or handlers:\n%s", path, p.Body)
			}
		}
	})

	t.Run("a message body is text", func(t *testing.T) {
		p := b.get("/inbox/conversations/" + contactID)
		if strings.Contains(p.Body, "<img src=x") || strings.Contains(p.Body, "<script>alert") {
			t.Fatalf("body rendered as HTML:\n%s", p.Body)
		}
		if !strings.Contains(p.Body, "&lt;img src=x onerror=&#34;alert(1)&#34;&gt; hi &lt;script&gt;alert(2)&lt;/script&gt;") {
			t.Fatalf("body not shown as text:\n%s", p.Body)
		}
	})

	t.Run("the conversation's name links to the contact's page", func(t *testing.T) {
		p := b.get("/inbox/conversations/" + contactID)
		if !strings.Contains(p.Body, `href="/inbox/contacts/`+contactID+`"`) {
			t.Fatalf("no link to /inbox/contacts/%s:\n%s", contactID, p.Body)
		}
	})

	t.Run("another account's conversation, message and alert are 404", func(t *testing.T) {
		p := b.get("/inbox/conversations/" + otherContactID)
		if p.Status != http.StatusNotFound || strings.Contains(p.Body, "secret of another account") {
			t.Fatalf("other account's conversation: %d\n%.800s", p.Status, p.Body)
		}
		if p := b.get("/inbox/"); strings.Contains(p.Body, "stranger-1") || strings.Contains(p.Body, otherContactID) {
			t.Fatal("another account's conversation is listed")
		}
		for _, path := range []string{"/inbox/conversations/" + otherContactID + "/reply", "/inbox/conversations/" + otherContactID + "/bot"} {
			if p := b.post("/inbox/", path, url.Values{"body": {"hello"}, "active": {"false"}}); p.Status != http.StatusNotFound {
				t.Fatalf("POST %s: %d, want 404", path, p.Status)
			}
		}
		if p := b.get("/inbox/conversations/nope"); p.Status != http.StatusNotFound {
			t.Fatalf("unknown id: %d", p.Status)
		}
	})

	t.Run("a form without its token is 403 and changes nothing", func(t *testing.T) {
		p := b.do("POST", "/inbox/conversations/"+contactID+"/reply", url.Values{"body": {"sent without a token"}})
		if p.Status != http.StatusForbidden {
			t.Fatalf("%d, want 403", p.Status)
		}
		if p := b.get("/inbox/conversations/" + contactID); strings.Contains(p.Body, "sent without a token") {
			t.Fatal("the reply was stored")
		}
	})

	t.Run("a reply is stored and pauses the bot", func(t *testing.T) {
		p := b.post("/inbox/conversations/"+contactID, "/inbox/conversations/"+contactID+"/reply", url.Values{"body": {"A person answers"}})
		if p.Status != http.StatusSeeOther {
			t.Fatalf("reply: %d", p.Status)
		}
		page := b.get("/inbox/conversations/" + contactID)
		if !strings.Contains(page.Body, "A person answers") || !strings.Contains(page.Body, "Bot paused") {
			t.Fatalf("reply or paused bot not shown:\n%.3000s", page.Body)
		}
		if p := b.post("/inbox/conversations/"+contactID, "/inbox/conversations/"+contactID+"/reply", url.Values{"body": {"   "}}); p.Status != http.StatusSeeOther {
			t.Fatalf("empty reply: %d", p.Status)
		}
		if page := b.get("/inbox/conversations/" + contactID); !strings.Contains(page.Body, "flash bad") {
			t.Fatalf("an empty reply gave no error:\n%.1500s", page.Body)
		}
	})

	t.Run("the live region comes alone for the page's script", func(t *testing.T) {
		p := b.do("GET", "/inbox/", nil, "X-Inbox-Live: 1")
		if p.Status != http.StatusOK || strings.Contains(p.Body, "<html") || !strings.Contains(p.Body, contactID) {
			t.Fatalf("live region: %d\n%.800s", p.Status, p.Body)
		}
		anon := newBrowserClient(t, srv)
		if p := anon.do("GET", "/inbox/", nil, "X-Inbox-Live: 1"); p.Status != http.StatusUnauthorized {
			t.Fatalf("live region without a session: %d, want 401", p.Status)
		}
	})

	t.Run("assets are served by content hash, cached for good", func(t *testing.T) {
		css := regexp.MustCompile(`href="(/inbox/static/app\.[0-9a-f]{8}\.css)"`).FindStringSubmatch(b.get("/inbox/").Body)
		if css == nil {
			t.Fatal("no hashed stylesheet link")
		}
		p := newBrowserClient(t, srv).get(css[1])
		if p.Status != http.StatusOK || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/css") || !strings.Contains(p.Header.Get("Cache-Control"), "immutable") {
			t.Fatalf("%s: %d %v", css[1], p.Status, p.Header)
		}
		if p := newBrowserClient(t, srv).get("/inbox/static/app.css"); p.Status != http.StatusNotFound {
			t.Fatalf("unhashed name: %d", p.Status)
		}
	})
}

func TestInboxEmbeddedMedia(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	b, _, key := signedIn(t, srv)
	_, otherKey := newAccount(t)
	png := "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	send := func(k, sid string) string {
		r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", k, map[string]any{
			"customData": map[string]any{"messageSid": sid, "fromId": "pic-" + sid, "toId": "biz", "body": "a photo", "channel": "live-chat", "mediaUrl": png, "mediaContentType": "image/png"},
		})
		expect(t, r, 200, "")
		return r.JSON(t)["messageId"].(string)
	}
	own, other := send(key, "pic-1"), send(otherKey, "pic-2")
	p := b.get("/inbox/media/" + own)
	if p.Status != http.StatusOK || p.Header.Get("Content-Type") != "image/png" || !strings.HasPrefix(p.Body, "\x89PNG") {
		t.Fatalf("own media: %d %q", p.Status, p.Header.Get("Content-Type"))
	}
	if !strings.Contains(p.Header.Get("Content-Security-Policy"), "sandbox") {
		t.Fatalf("media without a sandbox policy: %q", p.Header.Get("Content-Security-Policy"))
	}
	if p := b.get("/inbox/media/" + other); p.Status != http.StatusNotFound {
		t.Fatalf("another account's media: %d, want 404", p.Status)
	}
}
