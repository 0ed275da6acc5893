package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

const (
	headerRequestID = "X-Request-Id"
	localRequestID  = "requestID"
	localAccount    = "account"
	// localMessageID is the message a request stored, for the access log.
	localMessageID = "messageID"
)

// recoverPanic turns a panic in a handler into a logged 500 instead of a dead connection.
func (s *Server) recoverPanic(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic in handler", "panic", fmt.Sprint(r), "path", c.Path(),
				"request_id", requestIDOf(c), "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Next()
}

// requestID gives every request an id, echoed in X-Request-Id and written to every log line. A
// client-supplied id is kept when it is short and plain, so it can be traced across systems.
func (s *Server) requestID(c *fiber.Ctx) error {
	id := c.Get(headerRequestID)
	if !plainToken(id, 128) {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		id = hex.EncodeToString(b)
	} else {
		id = strings.Clone(id)
	}
	c.Locals(localRequestID, id)
	c.Set(headerRequestID, id)
	return c.Next()
}

func requestIDOf(c *fiber.Ctx) string {
	id, _ := c.Locals(localRequestID).(string)
	return id
}

// plainToken reports whether v is 1..max characters of [A-Za-z0-9._-]: safe to echo in a header or log.
func plainToken(v string, max int) bool {
	if v == "" || len(v) > max {
		return false
	}
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			return false
		}
	}
	return true
}

// accessLog writes one line per request. It logs the path without the query string, which may carry
// an API key.
func (s *Server) accessLog(c *fiber.Ctx) error {
	start := time.Now()
	err := c.Next()
	if err != nil {
		// Let the error handler write the response now, so the logged status is the one sent.
		if herr := s.handleError(c, err); herr != nil {
			s.log.Error("writing error response", "error", herr.Error())
		}
	}
	observeRequest(c, time.Since(start))
	attrs := []any{
		"method", c.Method(), "path", c.Path(), "status", c.Response().StatusCode(),
		"duration_ms", float64(time.Since(start).Microseconds()) / 1000, "request_id", requestIDOf(c),
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

// deadline gives the request a context with a deadline; handlers pass c.UserContext() to bun and
// go-redis, so a stuck dependency cannot hold a request forever.
func (s *Server) deadline(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	c.SetUserContext(ctx)
	return c.Next()
}

// requireHTTPS refuses plain-HTTP requests with 403 HTTPS_REQUIRED when REQUIRE_HTTPS is on. Behind a
// trusted proxy, X-Forwarded-Proto set by that proxy counts.
func (s *Server) requireHTTPS(c *fiber.Ctx) error {
	if !s.cfg.RequireHTTPS || s.isTLS(c) {
		return c.Next()
	}
	return models.Errorf(codeHTTPSRequired, "HTTPS is required: send the request to the https:// address")
}

func (s *Server) isTLS(c *fiber.Ctx) bool {
	if c.Context().IsTLS() {
		return true
	}
	if !s.cfg.TrustProxy {
		return false
	}
	// A proxy that appends to the header puts its own value last; what comes before it is the client's.
	proto := c.Get(fiber.HeaderXForwardedProto)
	if i := strings.LastIndexByte(proto, ','); i >= 0 {
		proto = proto[i+1:]
	}
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// authenticate resolves the API key to its account. The key may come as x-api-key, as
// Authorization: Bearer, or (when allowQuery) as ?apiKey=. Missing or invalid: 401 UNAUTHORIZED.
func (s *Server) authenticate(allowQuery bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if !allowQuery && c.Context().QueryArgs().Has("apiKey") {
			return models.Errorf(models.CodeUnauthorized, "this endpoint does not accept the API key as a query parameter: send it in the x-api-key header")
		}
		key := apiKeyOf(c, allowQuery)
		if key == "" {
			return models.Errorf(models.CodeUnauthorized, "missing API key: send it in the x-api-key header, as Authorization: Bearer, or as ?apiKey=")
		}
		acc, err := s.store.Authenticate(c.UserContext(), key)
		if err != nil {
			return err
		}
		c.Locals(localAccount, acc)
		return c.Next()
	}
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

// accountOf returns the authenticated account, or nil before authentication.
func accountOf(c *fiber.Ctx) *models.Account {
	acc, _ := c.Locals(localAccount).(*models.Account)
	return acc
}
