package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// localChecks holds the request's *checkResult, from authenticate to rateLimit.
const localChecks = "checks"

// dedupePrefix starts the key that remembers an incoming messageSid: dedupe:incoming:<account>:<sid>.
const dedupePrefix = "dedupe:incoming:"

// checksScript is the one Redis call of an authenticated request: it reads the API key's cache entry
// by the key cache's rule (models.KeyCacheLua, which also gives the account's limit), counts the
// request against the key's per-minute limit, and, for the incoming endpoint, reads the messageSid's
// de-duplication key. Before it, a request cost three calls (cache GET, the rate limiter's script, the
// de-duplication GET); on this 2-core machine class each round trip costs more than the work in it
// (docs/performance.md).
//
//	KEYS[1] the key's count: rate:ratelimit:<key hash> (rateKey)
//	KEYS[2] the key's cache entry (models.KeyCheck.CacheKey); absent when the caller has authenticated
//	        already
//	ARGV[1] requests per minute: RATE_LIMIT_PER_MINUTE, which the entry's own limit overrides; with
//	        KEYS[2] absent, the account's own limit
//	ARGV[2] the messageSid to look up, "" for none
//	ARGV[3] the account id, with KEYS[2] absent
//	ARGV[4] the de-duplication key prefix (dedupePrefix)
//
// It answers read_key_cache's models.KeyCacheMiss or models.KeyCacheUnusable alone (nothing counted:
// the database answers), else {models.KeyCacheHit, entry-or-nil, limit, allowed, remaining,
// retry_after, reset_after, messageId-or-nil}.
//
// The rate limit is github.com/go-redis/redis_rate/v10's allowN (GCRA, Copyright (c) 2017 Pavel
// Pravosud, https://github.com/rwz/redis-gcra) with burst = rate = limit, period 60 s and cost 1,
// step for step and with Redis's TIME as its clock, so the counts, the TTL of the count's key and the
// answers are the same; api/gcra_test.go runs both side by side. The messageSid is only read when the
// request is allowed: an over-limit request is answered 429 whatever it carries.
//
// The de-duplication key is built here from the account id inside the entry, so it is not declared in
// KEYS: that is fine on a single Redis (or Sentinel), not on Redis Cluster, which the service does not
// support.
var checksScript = redis.NewScript(`
redis.replicate_commands()
` + models.KeyCacheLua + `
local limit = tonumber(ARGV[1])
local account = ARGV[3]
local entry = false
if #KEYS > 1 then
  local status
  status, entry, account, limit = read_key_cache(KEYS[2], limit)
  if status ~= ` + strconv.Itoa(models.KeyCacheHit) + ` then
    return {status}
  end
end

local emission_interval = 60 / limit
local increment = emission_interval * 1
local burst_offset = emission_interval * limit

local jan_1_2017 = 1483228800
local now = redis.call("TIME")
now = (now[1] - jan_1_2017) + (now[2] / 1000000)

local tat = redis.call("GET", KEYS[1])
if not tat then
  tat = now
else
  tat = tonumber(tat)
end
tat = math.max(tat, now)

local new_tat = tat + increment
local allow_at = new_tat - burst_offset
local diff = now - allow_at
local remaining = diff / emission_interval

if remaining < 0 then
  local reset_after = tat - now
  local retry_after = diff * -1
  return {` + strconv.Itoa(models.KeyCacheHit) + `, entry, limit, 0, 0, tostring(retry_after), tostring(reset_after), false}
end

local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", KEYS[1], new_tat, "EX", math.ceil(reset_after))
end

local duplicate = false
if ARGV[2] ~= "" then
  duplicate = redis.call("GET", ARGV[4] .. account .. ":" .. ARGV[2])
end
return {` + strconv.Itoa(models.KeyCacheHit) + `, entry, limit, 1, remaining, tostring(-1), tostring(reset_after), duplicate}
`)

// checkResult is what the request's checks found.
type checkResult struct {
	acc *models.Account
	// rate is the request's count; nil when Redis did not answer (redisErr), and then the request is
	// not counted (fail open).
	rate     *rateResult
	redisErr error
	// sidRead reports that the messageSid asked for was looked up; duplicateOf is the message id stored
	// under it, "" when none.
	sidRead     bool
	duplicateOf string
}

// checkKey authenticates rawKey and counts the request; with sid != "" it also looks the messageSid up.
// On the fast path (the key in the key cache) that is one Redis call. Otherwise the store decides from
// what the call found (models.Store.AuthenticateRead: the database answers, and fills the cache when
// the entry was missing), and a second call counts the request and looks the sid up. When Redis fails,
// the database authenticates, the request goes uncounted (fail open) and the sid is left to the
// database's unique index. Errors: UNAUTHORIZED; a failing database.
func (s *Server) checkKey(ctx context.Context, rawKey, sid string) (*checkResult, error) {
	k, err := s.store.CheckKey(rawKey)
	if err != nil {
		return nil, err
	}
	var (
		chk      *checkResult
		read     *models.KeyCacheRead
		redisErr error
	)
	if cacheKey := k.CacheKey(); cacheKey != "" {
		chk, read, redisErr = s.runChecks(ctx, []string{rateKey(k), cacheKey}, s.cfg.RateLimitPerMinute, sid, "")
	}
	acc, cached, err := s.store.AuthenticateRead(ctx, k, read)
	switch {
	case err != nil:
		return nil, err
	case cached:
		chk.acc = acc
		return chk, nil
	case redisErr != nil:
		return &checkResult{acc: acc, redisErr: redisErr}, nil
	case chk != nil:
		// Counted, but the entry is not an account to Go: the database answered, nothing is cached, and
		// the messageSid the script read under the entry's id is left to the database.
		chk.acc, chk.sidRead, chk.duplicateOf = acc, false, ""
		chk.redisErr = errors.New("the key cache entry could not be read")
		return chk, nil
	}
	chk, _, err = s.runChecks(ctx, []string{rateKey(k)}, acc.RateLimit(s.cfg.RateLimitPerMinute), sid, acc.ID)
	if err != nil {
		return &checkResult{acc: acc, redisErr: err}, nil
	}
	chk.acc = acc
	return chk, nil
}

// runChecks runs checksScript within rateLimiterTimeout, in one pipeline with the concurrent requests'
// calls (checks_batch.go). read is what it found in the key cache; chk, the request's count, is nil
// when it counted nothing (the entry was missing or unusable).
func (s *Server) runChecks(ctx context.Context, keys []string, limit int, sid, accountID string) (chk *checkResult, read *models.KeyCacheRead, err error) {
	ctx, cancel := context.WithTimeout(ctx, rateLimiterTimeout)
	defer cancel()
	v, err := s.checks.run(ctx, keys, limit, sid, accountID, dedupePrefix)
	if err != nil {
		return nil, nil, err
	}
	return parseChecks(v, sid)
}

// parseChecks reads checksScript's answer: the key cache's part by models.ParseKeyCacheRead, then the
// count and the messageSid.
func parseChecks(v []any, sid string) (chk *checkResult, read *models.KeyCacheRead, err error) {
	if read, err = models.ParseKeyCacheRead(v); err != nil {
		return nil, nil, fmt.Errorf("checks: %w", err)
	}
	if read.Status != models.KeyCacheHit {
		return nil, read, nil
	}
	if len(v) < 7 {
		return nil, nil, fmt.Errorf("checks: %d values in the answer", len(v))
	}
	limit, _ := v[2].(int64)
	allowed, _ := v[3].(int64)
	remaining, _ := v[4].(int64)
	retry, err1 := parseSeconds(v[5])
	reset, err2 := parseSeconds(v[6])
	if err := errors.Join(err1, err2); err != nil {
		return nil, nil, fmt.Errorf("checks: %w", err)
	}
	chk = &checkResult{rate: &rateResult{Limit: int(limit), Allowed: allowed == 1, Remaining: int(remaining), RetryAfter: retry, ResetAfter: reset}}
	if sid != "" && chk.rate.Allowed {
		chk.sidRead = true
		if len(v) > 7 {
			chk.duplicateOf, _ = v[7].(string)
		}
	}
	return chk, read, nil
}

// parseSeconds reads a duration the script gives in seconds, as redis_rate does (-1 stays -1).
func parseSeconds(v any) (time.Duration, error) {
	s, _ := v.(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, err
	}
	if f == -1 {
		return -1, nil
	}
	return time.Duration(f * float64(time.Second)), nil
}
