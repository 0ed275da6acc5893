package api

import (
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// rateLimiterTimeout bounds the Redis call that checks a request's key and counts it (api/checks.go):
// when Redis is slow or down, requests are let through (fail open, with a warning) rather than held or
// refused, because the limit protects the service from overload but is not what keeps data safe.
const rateLimiterTimeout = 250 * time.Millisecond

// rateResult is the rate limit's answer for one request: GCRA with burst = limit per minute, the
// algorithm and the answers of github.com/go-redis/redis_rate/v10's Allow (api/gcra_test.go holds the
// script to them).
type rateResult struct {
	Limit     int
	Allowed   bool
	Remaining int
	// RetryAfter is when the next request would be allowed, -1 when this one was.
	RetryAfter time.Duration
	// ResetAfter is when the allowance is full again.
	ResetAfter time.Duration
}

// rateLimit answers 429 RATE_LIMITED (with Retry-After) when the request is over its API key's
// per-minute limit, and sets the rate-limit headers the README lists on every authenticated response.
// The request was counted by authenticate, in the same Redis call that checked its key (checks.go).
func (s *Server) rateLimit(c *fiber.Ctx) error {
	chk, _ := c.Locals(localChecks).(*checkResult)
	if chk == nil {
		return errors.New("rateLimit: the route does not run authenticate before it")
	}
	if err := s.applyRateLimit(c, chk); err != nil {
		return err
	}
	return c.Next()
}

// applyRateLimit sets the headers from the request's count and refuses it when it is over the limit.
// Without a count (Redis did not answer) the request goes through uncounted and without the headers.
func (s *Server) applyRateLimit(c *fiber.Ctx, chk *checkResult) error {
	res := chk.rate
	if res == nil {
		s.log.WarnContext(c.UserContext(), "rate limiter unavailable: request allowed without counting", "error", chk.redisErr.Error(),
			"account_id", chk.acc.ID)
		return nil
	}
	reset := int(math.Ceil(res.ResetAfter.Seconds()))
	remaining := strconv.Itoa(res.Remaining)
	limit := strconv.Itoa(res.Limit)
	c.Set("X-RateLimit-Limit", limit)
	c.Set("X-RateLimit-Remaining", remaining)
	c.Set("X-RateLimit-Reset", strconv.Itoa(reset))
	c.Set("RateLimit-Policy", `"per-key";q=`+limit+";w=60")
	c.Set("RateLimit", `"per-key";r=`+remaining+";t="+strconv.Itoa(reset))
	if !res.Allowed {
		rateLimitRejections.Inc()
		retry := max(int(math.Ceil(res.RetryAfter.Seconds())), 1)
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retry))
		return models.Errorf(codeRateLimited, "rate limit of %d requests per minute exceeded: retry after %d seconds", res.Limit, retry)
	}
	return nil
}

// rateKey is the Redis key of an API key's count: by the key's hash, so that it is known before the key
// is checked, and a rotated key (a new hash) starts with a full allowance. The "rate:" prefix is the
// one github.com/go-redis/redis_rate gave the same counts; the hash is the key's hash tag, the same as
// the key cache entry's (models.KeyCheck.CacheKey), so that checksScript's two keys share a slot on
// Redis Cluster.
func rateKey(k models.KeyCheck) string { return "rate:ratelimit:{" + k.Hash() + "}" }
