package api

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/jobs"
	"funnelchat/models"
)

// localChecks holds the request's *checkResult, from authenticate to rateLimit.
const localChecks = "checks"

// dedupeKey is the key that remembers an incoming messageSid sent with the API key whose hash is
// keyHash: dedupe:{default}:incoming:<key hash>:<sid>. It is named by the key, not the account, so
// that the request's checks know it before they know the account (on the fast path the key cache
// tells them, in the same round trip); a rotated key starts afresh, and the database's unique index
// answers a sid sent before the rotation (api/incoming.go). It is in the bot replies' slot
// (jobs.BesideBotReplies), since the enqueue of the message's bot reply sets it, in the same script
// call that checks the task is queued.
func dedupeKey(keyHash, sid string) string {
	return jobs.BesideBotReplies("dedupe:", "incoming:"+keyHash+":"+sid)
}

// checksScript is the one Redis script of an authenticated request: it reads the API key's cache entry
// by the key cache's rule (models.KeyCacheLua, which also gives the account's limit) and counts the
// request against the key's per-minute limit. For the incoming endpoint the messageSid's
// de-duplication key (dedupeKey) is read beside it, by a GET in the same pipeline (checks_batch.go).
// Before, a request cost three calls (cache GET, the rate limiter's script, the de-duplication GET);
// on this 2-core machine class each round trip costs more than the work in it (docs/performance.md).
//
//	KEYS[1] the key's count: rate:ratelimit:{<key hash>} (rateKey)
//	KEYS[2] the key's cache entry, apikey:{<key hash>} (models.KeyCheck.CacheKey); absent when the
//	        caller has authenticated already
//	ARGV[1] requests per minute: RATE_LIMIT_PER_MINUTE, which the entry's own limit overrides; with
//	        KEYS[2] absent, the account's own limit
//
// Both keys carry the key's hash as their hash tag, so that on Redis Cluster they are in one slot,
// as a script's keys must be, and the keys of different API keys spread over the cluster. The
// de-duplication key is in another slot (the bot replies'): that is why it is not read in here.
//
// It answers read_key_cache's models.KeyCacheMiss or models.KeyCacheUnusable alone (nothing counted:
// the database answers), else {models.KeyCacheHit, entry-or-nil, limit, allowed, remaining,
// retry_after, reset_after}.
//
// The rate limit is github.com/go-redis/redis_rate/v10's allowN (GCRA, Copyright (c) 2017 Pavel
// Pravosud, https://github.com/rwz/redis-gcra) with burst = rate = limit, period 60 s and cost 1,
// step for step and with Redis's TIME as its clock, so the counts, the TTL of the count's key and the
// answers are the same; api/gcra_test.go runs both side by side. The messageSid read beside it counts
// only when the request is allowed: an over-limit request is answered 429 whatever it carries.
var checksScript = redis.NewScript(`
redis.replicate_commands()
` + models.KeyCacheLua + `
local limit = tonumber(ARGV[1])
local entry = false
if #KEYS > 1 then
  local status, account
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
  return {` + strconv.Itoa(models.KeyCacheHit) + `, entry, limit, 0, 0, tostring(retry_after), tostring(reset_after)}
end

local reset_after = new_tat - now
if reset_after > 0 then
  redis.call("SET", KEYS[1], new_tat, "EX", math.ceil(reset_after))
end

return {` + strconv.Itoa(models.KeyCacheHit) + `, entry, limit, 1, remaining, tostring(-1), tostring(reset_after)}
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
	// keyHash is the API key's hash, which names its de-duplication keys (dedupeKey).
	keyHash string
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
	chk, err := s.checkKeyOf(ctx, k, sid)
	if chk != nil {
		chk.keyHash = k.Hash()
	}
	return chk, err
}

func (s *Server) checkKeyOf(ctx context.Context, k models.KeyCheck, sid string) (*checkResult, error) {
	var (
		chk      *checkResult
		read     *models.KeyCacheRead
		redisErr error
	)
	if cacheKey := k.CacheKey(); cacheKey != "" {
		chk, read, redisErr = s.runChecks(ctx, []string{rateKey(k), cacheKey}, s.cfg.RateLimitPerMinute, sid, k.Hash())
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
	chk, _, err = s.runChecks(ctx, []string{rateKey(k)}, acc.RateLimit(s.cfg.RateLimitPerMinute), sid, k.Hash())
	if err != nil {
		return &checkResult{acc: acc, redisErr: err}, nil
	}
	chk.acc = acc
	return chk, nil
}

// runChecks runs checksScript within rateLimiterTimeout, in one pipeline with the concurrent requests'
// calls (checks_batch.go), and with sid != "" reads the sid's de-duplication key (dedupeKey of keyHash)
// in the same pipeline. read is what it found in the key cache; chk, the request's count, is nil when
// it counted nothing (the entry was missing or unusable).
func (s *Server) runChecks(ctx context.Context, keys []string, limit int, sid, keyHash string) (chk *checkResult, read *models.KeyCacheRead, err error) {
	ctx, cancel := context.WithTimeout(ctx, rateLimiterTimeout)
	defer cancel()
	dedupe := ""
	if sid != "" {
		dedupe = dedupeKey(keyHash, sid)
	}
	a := s.checks.run(ctx, keys, dedupe, limit)
	if a.err != nil {
		return nil, nil, a.err
	}
	return parseChecks(a, sid)
}

// parseChecks reads checksScript's answer: the key cache's part by models.ParseKeyCacheRead, then the
// count; and the messageSid's de-duplication key read beside it.
func parseChecks(a checksAnswer, sid string) (chk *checkResult, read *models.KeyCacheRead, err error) {
	v := a.v
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
		if a.dupErr != nil {
			// Counted, but the sid could not be read (its master down, on a cluster): the database
			// decides, as when Redis fails altogether.
			chk.redisErr = fmt.Errorf("messageSid lookup: %w", a.dupErr)
		} else {
			chk.sidRead, chk.duplicateOf = true, a.dup
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
