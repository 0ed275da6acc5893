// Package web is the HTTP plumbing that the JSON API (package api) and the inbox (package inbox)
// share: request ids carried on the request's context and into every log line, the HTTPS rule, and
// the live event streams. It holds no handler of either.
package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/config"
	"funnelchat/models"
)

// HeaderRequestID carries a request's id, in the request (a client's own, when plain) and the response.
const HeaderRequestID = "X-Request-Id"

// CodeHTTPSRequired is the error code of a plain-HTTP request where HTTPS is required (403).
const CodeHTTPSRequired = "HTTPS_REQUIRED"

const localRequestID = "requestID"

type requestIDKey struct{}

// WithRequestID returns ctx carrying the request id, which Logger's lines then show.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFrom returns the request id ctx carries, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// RequestID gives every request an id, echoed in X-Request-Id (EnsureRequestID).
func RequestID(c *fiber.Ctx) error {
	EnsureRequestID(c)
	return c.Next()
}

// EnsureRequestID gives the request an id unless it has one, sets X-Request-Id and returns the id. A
// client-supplied id is kept when it is short and plain, so it can be traced across systems. Besides
// RequestID, the error renderer calls it: a request the HTTP server refuses before any middleware runs
// (a body over the limit, headers over the read buffer) still gets an id.
func EnsureRequestID(c *fiber.Ctx) string {
	if id := RequestIDOf(c); id != "" {
		return id
	}
	id := c.Get(HeaderRequestID)
	if !PlainToken(id, 128) {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		id = hex.EncodeToString(b)
	} else {
		id = strings.Clone(id)
	}
	c.Locals(localRequestID, id)
	c.Set(HeaderRequestID, id)
	return id
}

// RequestIDOf is the request's id (set by RequestID).
func RequestIDOf(c *fiber.Ctx) string {
	id, _ := c.Locals(localRequestID).(string)
	return id
}

// Deadline gives the request a context with a deadline, carrying its request id; handlers pass
// c.UserContext() down to bun and go-redis, so a stuck dependency cannot hold a request forever, and
// to the logger, so every line of the request names it.
func Deadline(timeout time.Duration) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := context.WithTimeout(WithRequestID(context.Background(), RequestIDOf(c)), timeout)
		defer cancel()
		c.SetUserContext(ctx)
		return c.Next()
	}
}

// PlainToken reports whether v is 1..max characters of [A-Za-z0-9._-]: safe to echo in a header or log.
func PlainToken(v string, max int) bool {
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

// Logger returns a logger whose lines carry the request id of the context they are written with
// (the ...Context methods), so that no call has to pass it by hand.
func Logger(l *slog.Logger) *slog.Logger {
	if _, ok := l.Handler().(requestIDHandler); ok {
		return l
	}
	return slog.New(requestIDHandler{l.Handler()})
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestIDFrom(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// HTTPS applies the deployment's HTTPS rule (REQUIRE_HTTPS, TRUST_PROXY).
type HTTPS struct {
	Required   bool
	TrustProxy bool
}

// HTTPSOf is the HTTPS rule of a configuration.
func HTTPSOf(cfg *config.Config) HTTPS {
	return HTTPS{Required: cfg.RequireHTTPS, TrustProxy: cfg.TrustProxy}
}

// Require refuses plain-HTTP requests with 403 HTTPS_REQUIRED when HTTPS is required. Behind a
// trusted proxy, X-Forwarded-Proto set by that proxy counts.
func (h HTTPS) Require(c *fiber.Ctx) error {
	if !h.Required || h.IsTLS(c) {
		return c.Next()
	}
	return models.Errorf(CodeHTTPSRequired, "HTTPS is required: send the request to the https:// address")
}

// IsTLS reports whether the request counts as HTTPS: it arrived over TLS, or (TRUST_PROXY) the proxy
// in front says so.
func (h HTTPS) IsTLS(c *fiber.Ctx) bool {
	if c.Context().IsTLS() {
		return true
	}
	if !h.TrustProxy {
		return false
	}
	// A proxy that appends to the header puts its own value last; what comes before it is the client's.
	proto := c.Get(fiber.HeaderXForwardedProto)
	if i := strings.LastIndexByte(proto, ','); i >= 0 {
		proto = proto[i+1:]
	}
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}
