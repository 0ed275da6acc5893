package inbox

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// Cookies of the inbox, all scoped to /inbox and HttpOnly.
const (
	sessionCookie = "inbox_session"
	// loginCSRFCookie carries the sign-in form's CSRF token before there is a session (double submit).
	loginCSRFCookie = "inbox_login_csrf"
	flashCookie     = "inbox_flash"
)

// Sign-in throttling: after maxSignInFailures failed sign-ins for one email within signInWindow, that
// email gets 429 until the window ends.
const (
	maxSignInFailures = 5
	signInWindow      = 15 * time.Minute
)

// signInAttempt counts an attempt for an email and returns how many there were in the window,
// this one included; the window starts with the first. A success resets it (DEL).
var signInAttempt = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return {n, redis.call('PTTL', KEYS[1])}`)

// session is the signed-in user of an inbox request.
type session struct {
	*models.Session
	token string
}

func sessionOf(c *fiber.Ctx) *session {
	s, _ := c.Locals("inbox.session").(*session)
	return s
}

// setCookie sets an inbox cookie: HttpOnly, SameSite=Lax, path /inbox, Secure when the request counts
// as HTTPS. maxAge < 0 deletes it.
func (h *Handler) setCookie(c *fiber.Ctx, name, value string, maxAge int) {
	ck := &fiber.Cookie{Name: name, Value: value, Path: "/inbox", HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode, Secure: h.https.IsTLS(c)}
	if maxAge < 0 {
		ck.Expires = time.Unix(0, 0)
		ck.MaxAge = -1
	} else if maxAge > 0 {
		ck.MaxAge = maxAge
	}
	c.Cookie(ck)
}

// requireSession loads the session of the request's cookie; without a live one, a page request goes
// to the sign-in form and anything else gets 401.
func (h *Handler) requireSession(c *fiber.Ctx) error {
	token := c.Cookies(sessionCookie)
	sess, err := h.store.SessionByToken(c.UserContext(), token)
	if err != nil {
		if models.ErrorCode(err) != models.CodeUnauthorized {
			return h.inboxFailure(c, err)
		}
		if token != "" {
			h.setCookie(c, sessionCookie, "", -1)
		}
		if c.Method() == fiber.MethodGet && c.Get("X-Inbox-Live") == "" && c.Get(fiber.HeaderAccept) != "text/event-stream" {
			return c.Redirect("/inbox/login?next="+url.QueryEscape(c.OriginalURL()), fiber.StatusSeeOther)
		}
		return c.Status(fiber.StatusUnauthorized).SendString("not signed in")
	}
	c.Locals("inbox.session", &session{Session: sess, token: token})
	return c.Next()
}

// checkCSRF refuses a state-changing request whose csrf_token field does not match the session'h.
func (h *Handler) checkCSRF(c *fiber.Ctx) error {
	if c.Method() != fiber.MethodPost {
		return c.Next()
	}
	if !sameToken(c.FormValue("csrf_token"), sessionOf(c).CSRFToken) {
		return h.csrfRefused(c)
	}
	return c.Next()
}

func (h *Handler) csrfRefused(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
	return c.Status(fiber.StatusForbidden).SendString("This form has expired or did not come from the inbox (missing or wrong CSRF token). Go back, reload the page and try again.")
}

func sameToken(got, want string) bool {
	return got != "" && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// loginView is the sign-in form's data.
type loginView struct {
	Email string
	Next  string
	Error string
}

// loginPage: GET /inbox/login shows the sign-in form (or goes to the inbox when signed in already).
func (h *Handler) loginPage(c *fiber.Ctx) error {
	if _, err := h.store.SessionByToken(c.UserContext(), c.Cookies(sessionCookie)); err == nil {
		return c.Redirect(safeNext(c.Query("next")), fiber.StatusSeeOther)
	}
	return h.renderLogin(c, fiber.StatusOK, loginView{Next: safeNext(c.Query("next"))})
}

func (h *Handler) renderLogin(c *fiber.Ctx, status int, v loginView) error {
	token := c.Cookies(loginCSRFCookie)
	if len(token) < 32 || len(token) > 64 {
		token = newFormToken()
		h.setCookie(c, loginCSRFCookie, token, 0)
	}
	return h.render(c, status, "login", inboxView{Title: "Sign in", CSRF: token, Data: v})
}

// login: POST /inbox/login {email, password} -> 303 to the inbox with the session cookie; 401 with the
// form for a wrong email or password alike; 429 after too many failures for the email.
func (h *Handler) login(c *fiber.Ctx) error {
	if !sameToken(c.FormValue("csrf_token"), c.Cookies(loginCSRFCookie)) {
		return h.csrfRefused(c)
	}
	email := strings.ToLower(strings.TrimSpace(c.FormValue("email")))
	password := c.FormValue("password")
	next := safeNext(c.FormValue("next"))
	v := loginView{Email: email, Next: next}
	if email == "" || password == "" {
		v.Error = "Enter your email and password."
		return h.renderLogin(c, fiber.StatusUnauthorized, v)
	}
	key := "inbox:signin:" + emailKey(email)
	res, err := signInAttempt.Run(c.UserContext(), h.redis, []string{key}, signInWindow.Milliseconds()).Int64Slice()
	if err != nil {
		return h.inboxFailure(c, err)
	}
	if res[0] > maxSignInFailures {
		wait := time.Duration(res[1]) * time.Millisecond
		c.Set(fiber.HeaderRetryAfter, itoa(int(wait.Seconds())+1))
		v.Error = "Too many failed sign-ins for this email. Try again in " + minutes(wait) + "."
		return h.renderLogin(c, fiber.StatusTooManyRequests, v)
	}
	user, err := h.store.SignIn(c.UserContext(), email, password)
	if err != nil {
		if models.ErrorCode(err) == models.CodeUnauthorized {
			v.Error = "Wrong email or password."
			return h.renderLogin(c, fiber.StatusUnauthorized, v)
		}
		return h.inboxFailure(c, err)
	}
	// A success forgets the failures; a failure to forget only delays a later sign-in, so it is ignored.
	_ = h.redis.Del(context.WithoutCancel(c.UserContext()), key).Err()
	if old := c.Cookies(sessionCookie); old != "" {
		_ = h.store.EndSession(c.UserContext(), old)
	}
	token, _, err := h.store.NewSession(c.UserContext(), user)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	h.setCookie(c, sessionCookie, token, 0)
	h.setCookie(c, loginCSRFCookie, "", -1)
	return c.Redirect(next, fiber.StatusSeeOther)
}

// logout: POST /inbox/logout ends the session at once and goes to the sign-in form.
func (h *Handler) logout(c *fiber.Ctx) error {
	if err := h.store.EndSession(c.UserContext(), sessionOf(c).token); err != nil {
		return h.inboxFailure(c, err)
	}
	h.setCookie(c, sessionCookie, "", -1)
	return c.Redirect("/inbox/login", fiber.StatusSeeOther)
}

// safeNext keeps a redirect target inside the inbox, so that a crafted link cannot send a user who
// signs in to another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/inbox/") || strings.HasPrefix(next, "/inbox//") || strings.ContainsAny(next, "\\\r\n") {
		return "/inbox/"
	}
	return next
}

// emailKey names an email in Redis without storing the address itself.
func emailKey(email string) string {
	sum := sha256.Sum256([]byte(email))
	return hex.EncodeToString(sum[:16])
}

func minutes(d time.Duration) string {
	m := int(d.Round(time.Minute).Minutes())
	if m <= 1 {
		return "a minute"
	}
	return itoa(m) + " minutes"
}
