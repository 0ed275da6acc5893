package api

import (
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"funnelchat/api/web"
	"funnelchat/models"
)

const (
	localAccount = "account"
	// localMessageID is the message a request stored, for the access log.
	localMessageID = "messageID"
	// localMethod is the method a client sent when otherMethods renamed it.
	localMethod = "method"
	// localRecordedBy names the request's API key (its last 4 characters) in the records that say who
	// made a change (consent events).
	localRecordedBy = "recordedBy"
)

// methodOther stands for every request method Fiber does not know (it knows fiber.DefaultMethods).
// The name is OpenTelemetry's for such methods; being one value, it also keeps the method label of
// the request metrics bounded.
const methodOther = "_OTHER"

// otherMethods wraps the app's fasthttp handler. fasthttp accepts any method, but Fiber answers one it
// does not know by itself, with a plain-text 400 "Invalid http method" before any middleware runs
// (App.handler checks the method first), so the answer would carry no X-Request-Id and no object-form
// error. The wrapper renames such a method to methodOther, which New registers as a method of the app,
// and keeps the method sent in the request's locals: the request then goes through the middleware and
// the router like any other. A method that is not an HTTP token (RFC 9110: no control characters,
// separators...) is refused with 400 by checkMethod; any other is routed, and as no route has
// methodOther, the router answers 405 METHOD_NOT_ALLOWED with an Allow header on a path that exists
// and 404 NOT_FOUND on one that does not, as for a known method the path does not have.
func otherMethods(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if m := ctx.Method(); !slices.Contains(fiber.DefaultMethods, string(m)) {
			ctx.SetUserValue(localMethod, string(m))
			ctx.Request.Header.SetMethod(methodOther)
		}
		next(ctx)
	}
}

// checkMethod refuses, with 400 VALIDATION_ERROR, a request whose method is not an HTTP token.
func checkMethod(c *fiber.Ctx) error {
	if sent, ok := c.Locals(localMethod).(string); ok && !isToken(sent) {
		return fiber.NewError(fiber.StatusBadRequest, "the request method is not a valid HTTP method name")
	}
	return c.Next()
}

// sentMethod is the request's method as the client sent it, for the access log: methodOther when it
// is not short and plain.
func sentMethod(c *fiber.Ctx) string {
	sent, ok := c.Locals(localMethod).(string)
	if !ok {
		return c.Method()
	}
	if !web.PlainToken(sent, 32) {
		return methodOther
	}
	return sent
}

// isToken reports whether v is an HTTP token (RFC 9110 section 5.6.2), as a method must be.
func isToken(v string) bool {
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0) {
			return false
		}
	}
	return true
}

// recoverPanic turns a panic in a handler into a logged 500 instead of a dead connection.
func (s *Server) recoverPanic(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			// Before the deadline middleware: the request's context does not carry its id yet.
			s.log.Error("panic in handler", "panic", fmt.Sprint(r), "path", c.Path(),
				"request_id", web.RequestIDOf(c), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Next()
}

// accessLog writes one line per request. It logs the path without the query string, which may carry
// an API key.
func (s *Server) accessLog(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		// Let the error handler write the response now, so the logged status is the one sent.
		if herr := s.handleError(c, err); herr != nil {
			s.log.Error("writing error response", "error", herr.Error(), "request_id", web.RequestIDOf(c))
		}
	}
	observeRequest(c, time.Since(start))
	attrs := []any{
		"method", sentMethod(c), "path", c.Path(), "status", c.Response().StatusCode(),
		"duration_ms", float64(time.Since(start).Microseconds()) / 1000, "request_id", web.RequestIDOf(c),
	}
	if acc := accountOf(c); acc != nil {
		attrs = append(attrs, "account_id", acc.ID)
	}
	if id, ok := c.Locals(localMessageID).(string); ok {
		attrs = append(attrs, "message_id", id)
	}
	s.log.Info("request", attrs...)
	return nil
}

// authenticate resolves the API key to its account. The key may come as x-api-key, as
// Authorization: Bearer, or (when allowQuery) as ?apiKey=. Missing or invalid: 401 UNAUTHORIZED. The
// same Redis call counts the request against the key's rate limit (checks.go), which rateLimit, the
// next handler, applies.
func (s *Server) authenticate(allowQuery bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		key, err := requestKey(c, allowQuery)
		if err != nil {
			return err
		}
		chk, err := s.checkKey(c.UserContext(), key, "")
		if err != nil {
			return err
		}
		c.Locals(localAccount, chk.acc)
		c.Locals(localChecks, chk)
		c.Locals(localRecordedBy, models.RecordedByAPIKey(key))
		return c.Next()
	}
}

// requestKey returns the request's API key, or 401 UNAUTHORIZED when it has none (or sends it as
// ?apiKey= where !allowQuery).
func requestKey(c *fiber.Ctx, allowQuery bool) (string, error) {
	if !allowQuery && c.Context().QueryArgs().Has("apiKey") {
		return "", models.Errorf(models.CodeUnauthorized, "this endpoint does not accept the API key as a query parameter: send it in the x-api-key header")
	}
	key := apiKeyOf(c, allowQuery)
	if key == "" {
		return "", models.Errorf(models.CodeUnauthorized, "missing API key: send it in the x-api-key header, as Authorization: Bearer, or as ?apiKey=")
	}
	return key, nil
}

func apiKeyOf(c *fiber.Ctx, allowQuery bool) string {
	if k := strings.TrimSpace(c.Get("X-Api-Key")); k != "" {
		return k
	}
	if h := c.Get(fiber.HeaderAuthorization); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	if allowQuery {
		return strings.TrimSpace(c.Query("apiKey"))
	}
	return ""
}

// recordedByOf is the request's API key as consent events name it (its last 4 characters), or nil
// before authentication.
func recordedByOf(c *fiber.Ctx) *models.ConsentRecorder {
	by, _ := c.Locals(localRecordedBy).(*models.ConsentRecorder)
	return by
}

// accountOf returns the authenticated account, or nil before authentication.
func accountOf(c *fiber.Ctx) *models.Account {
	acc, _ := c.Locals(localAccount).(*models.Account)
	return acc
}
