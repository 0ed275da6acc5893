package api

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// rateLimiterTimeout bounds the limiter's Redis call: when Redis is slow or down, requests are let
// through (fail open, with a warning) rather than held or refused, because the limit protects the
// service from overload but is not what keeps data safe.
const rateLimiterTimeout = 250 * time.Millisecond

// rateLimit counts the request against its API key's per-minute limit (GCRA in Redis, shared by every
// api process) and sets the rate-limit headers the README lists on every authenticated response. Over the limit: 429
// RATE_LIMITED with Retry-After.
func (s *Server) rateLimit(c *fiber.Ctx) error {
	acc := accountOf(c)
	limit := s.cfg.RateLimitPerMinute
	if acc.RateLimitPerMinute != nil {
		limit = *acc.RateLimitPerMinute
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), rateLimiterTimeout)
	res, err := s.limiter.Allow(ctx, "ratelimit:"+acc.KeyID, redis_rate.PerMinute(limit))
	cancel()
	if err != nil {
		s.log.Warn("rate limiter unavailable: request allowed without counting", "error", err.Error(),
			"account_id", acc.ID, "request_id", requestIDOf(c))
		return c.Next()
	}
	reset := int(math.Ceil(res.ResetAfter.Seconds()))
	remaining := strconv.Itoa(res.Remaining)
	c.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	c.Set("X-RateLimit-Remaining", remaining)
	c.Set("X-RateLimit-Reset", strconv.Itoa(reset))
	c.Set("RateLimit-Policy", `"per-key";q=`+strconv.Itoa(limit)+";w=60")
	c.Set("RateLimit", `"per-key";r=`+remaining+";t="+strconv.Itoa(reset))
	if res.Allowed == 0 {
		rateLimitRejections.Inc()
		retry := max(int(math.Ceil(res.RetryAfter.Seconds())), 1)
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retry))
		return models.Errorf(codeRateLimited, "rate limit of %d requests per minute exceeded: retry after %d seconds", limit, retry)
	}
	return c.Next()
}
