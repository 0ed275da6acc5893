package api_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"

	"funnelchat/api"
)

// The api counts requests with a Lua script of its own (api/checks.go), which also reads the key cache
// and the messageSid in the same call. These tests hold its rate limit to
// github.com/go-redis/redis_rate/v10, which it replaced: both run on the package's Redis (miniredis, or
// the real Redis with TEST_REDIS_URL) on the same sequences of calls, each on a key of its own, and
// must give the same answers and leave their keys with the same TTLs.
//
// Both read Redis's clock (TIME) and run one after the other, so their clocks differ by up to the
// time the two calls take (span). Durations are compared within that; allowed and remaining exactly,
// except where the two instants fall on either side of a step of the count (a new request earned),
// which the test recognises from each side's own durations and logs: at most a few such per sequence.

// rateAnswer is one answer, either side's.
type rateAnswer struct {
	allowed    bool
	remaining  int
	retryAfter time.Duration
	resetAfter time.Duration
}

// gcraPair runs one request through redis_rate (key rr) and through our script (key ours, with the
// cache entry cacheKey when not ""). It returns both answers, the limit our script applied and how long
// the two calls took together.
type gcraPair struct {
	t          *testing.T
	limiter    *redis_rate.Limiter
	rr, ours   string
	cacheKey   string
	limit      int // redis_rate's limit, and ours when cacheKey is ""
	defLimit   int // our default limit when cacheKey is set
	maxSpan    time.Duration
	started    time.Time
	straddles  int
	step       int
	wantLimit  int
	lastOurRes api.CheckAnswer
}

func newGCRAPair(t *testing.T, name string, limit int) *gcraPair {
	suffix := fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), accountSeq.Add(1))
	return &gcraPair{t: t, limiter: redis_rate.NewLimiter(env.Redis), rr: "gcra-rr:" + suffix, ours: "gcra-ours:" + suffix,
		limit: limit, wantLimit: limit, started: time.Now()}
}

func (p *gcraPair) call() {
	t := p.t
	t.Helper()
	ctx := context.Background()
	p.step++
	start := time.Now()
	res, err := p.limiter.Allow(ctx, p.rr, redis_rate.PerMinute(p.limit))
	if err != nil {
		t.Fatal(err)
	}
	keys, limit, account := []string{"rate:" + p.ours}, p.limit, "acc_gcra"
	if p.cacheKey != "" {
		keys, limit, account = append(keys, p.cacheKey), p.defLimit, ""
	}
	ours, err := api.RunChecks(ctx, env.Redis, keys, limit, "", account)
	if err != nil {
		t.Fatal(err)
	}
	span := time.Since(start)
	p.maxSpan = max(p.maxSpan, span)
	if ours.Status != 1 {
		t.Fatalf("step %d: status %d", p.step, ours.Status)
	}
	if ours.Limit != p.wantLimit {
		t.Fatalf("step %d: our script applied a limit of %d, want %d", p.step, ours.Limit, p.wantLimit)
	}
	p.lastOurRes = ours
	a := rateAnswer{res.Allowed == 1, res.Remaining, res.RetryAfter, res.ResetAfter}
	b := rateAnswer{ours.Allowed, ours.Remaining, ours.RetryAfter, ours.ResetAfter}
	p.compare(a, b)
	p.compareTTLs()
}

// compare checks one pair of answers (a: redis_rate's, b: ours).
func (p *gcraPair) compare(a, b rateAnswer) {
	t := p.t
	t.Helper()
	interval := time.Minute / time.Duration(p.limit)
	// Two instants of each side's script apart at most: its first and its latest call.
	tol := 2*p.maxSpan + time.Millisecond
	// v is tat+interval-now, what both scripts decide on: allowed when v <= 60 s, remaining
	// floor((60 s - v) / interval). An allowed answer reports it as reset_after, a refused one reports
	// tat-now.
	v := func(x rateAnswer) time.Duration {
		if x.allowed {
			return x.resetAfter
		}
		return x.resetAfter + interval
	}
	if d := v(a) - v(b); d > tol || d < -tol {
		t.Fatalf("step %d (limit %d): redis_rate %+v, ours %+v: the counts' states differ by %s (tolerance %s)", p.step, p.limit, a, b, d, tol)
	}
	if a.allowed == b.allowed && a.remaining == b.remaining {
		switch {
		case a.allowed && (a.retryAfter != -1 || b.retryAfter != -1):
			t.Fatalf("step %d: retry-after on an allowed request: redis_rate %s, ours %s", p.step, a.retryAfter, b.retryAfter)
		case !a.allowed && (a.retryAfter-b.retryAfter > tol || b.retryAfter-a.retryAfter > tol):
			t.Fatalf("step %d: retry-after redis_rate %s, ours %s (tolerance %s)", p.step, a.retryAfter, b.retryAfter, tol)
		}
		return
	}
	// Different answers: only where the instants straddle a step of the count, so that each answer is
	// exactly what its own state gives and they are one step apart.
	steps := func(x rateAnswer) int {
		f := float64(time.Minute-v(x)) / float64(interval)
		return int(math.Floor(f + 1e-9))
	}
	own := func(x rateAnswer) bool {
		s := steps(x)
		if x.allowed {
			return s >= 0 && x.remaining == s
		}
		return s < 0 && x.remaining == 0
	}
	if !own(a) || !own(b) || steps(a)-steps(b) > 1 || steps(b)-steps(a) > 1 {
		t.Fatalf("step %d (limit %d): redis_rate %+v, ours %+v (tolerance %s)", p.step, p.limit, a, b, tol)
	}
	p.straddles++
	t.Logf("step %d (limit %d): the two clocks (%s apart at most) straddle a step of the count: redis_rate %+v, ours %+v", p.step, p.limit, p.maxSpan, a, b)
	// Each step of the count falls between the two instants of one call at most (the calls follow one
	// another), so no more answers can differ than steps have passed. (A fixed bound of 3 failed on a
	// loaded machine: 4 straddles at 13 ms apart, at 600/min, in 20 calls over 6 steps.)
	if bound := int(time.Since(p.started)/interval) + 1; p.straddles > bound {
		t.Fatalf("%d answers differ, with %d steps of the count since the first call: more than the clocks explain", p.straddles, bound)
	}
}

// compareTTLs checks that both counts' keys exist or not alike, with TTLs (EX ceil(reset_after)) at
// most a second (one ceiling) apart.
func (p *gcraPair) compareTTLs() {
	t := p.t
	t.Helper()
	ctx := context.Background()
	a, err := env.Redis.PTTL(ctx, "rate:"+p.rr).Result()
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Redis.PTTL(ctx, "rate:"+p.ours).Result()
	if err != nil {
		t.Fatal(err)
	}
	if (a < 0) != (b < 0) || a-b > time.Second+2*p.maxSpan || b-a > time.Second+2*p.maxSpan {
		t.Fatalf("step %d: TTL of redis_rate's key %s, of ours %s", p.step, a, b)
	}
}

func TestRateLimitScriptMatchesRedisRate(t *testing.T) {
	t.Run("a burst past the limit", func(t *testing.T) {
		for _, limit := range []int{3, 10} {
			p := newGCRAPair(t, "burst", limit)
			for i := 0; i < limit+3; i++ {
				p.call()
			}
			if p.lastOurRes.Allowed {
				t.Fatalf("limit %d: request %d allowed", limit, limit+3)
			}
		}
	})
	t.Run("calls spread over time", func(t *testing.T) {
		// 600/min: one request earned every 100 ms, calls every 30 ms, so the allowance drains slowly
		// and the count's fractions move between calls.
		p := newGCRAPair(t, "spread600", 600)
		for i := 0; i < 20; i++ {
			p.call()
			time.Sleep(30 * time.Millisecond)
		}
		// 60/min: past the limit, then the allowance refills by one request a second.
		p = newGCRAPair(t, "refill60", 60)
		for i := 0; i < 62; i++ {
			p.call()
		}
		time.Sleep(1100 * time.Millisecond)
		for i := 0; i < 3; i++ {
			p.call()
		}
		time.Sleep(250 * time.Millisecond)
		p.call()
		// 3/min: a burst, then a third of a second later, still refused with a shorter Retry-After.
		p = newGCRAPair(t, "later3", 3)
		for i := 0; i < 4; i++ {
			p.call()
		}
		before := p.lastOurRes.RetryAfter
		time.Sleep(300 * time.Millisecond)
		p.call()
		if p.lastOurRes.Allowed || p.lastOurRes.RetryAfter >= before {
			t.Fatalf("retry-after %s after %s", p.lastOurRes.RetryAfter, before)
		}
	})
	t.Run("a per-account override in the key cache entry", func(t *testing.T) {
		ctx := context.Background()
		p := newGCRAPair(t, "override", 4)
		p.cacheKey, p.defLimit = "apikey:gcra-"+p.ours, 600
		if err := env.Redis.Set(ctx, p.cacheKey, `{"id":"acc_gcra","keyId":"key_gcra","rateLimitPerMinute":4}`, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 6; i++ {
			p.call()
		}
		if p.lastOurRes.Account == nil || p.lastOurRes.Account.ID != "acc_gcra" {
			t.Fatalf("account %+v", p.lastOurRes.Account)
		}
		// Without an override the default applies.
		p = newGCRAPair(t, "default", 600)
		p.cacheKey, p.defLimit = "apikey:gcra-"+p.ours, 600
		if err := env.Redis.Set(ctx, p.cacheKey, `{"id":"acc_gcra","keyId":"key_gcra","rateLimitPerMinute":null}`, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			p.call()
		}
	})
}

// TestChecksScriptSendsEveryKeyItCannotUseToTheDatabase: a missing entry, the revoked mark of a rotated
// key and an unreadable entry answer "not cached" without counting the request.
func TestChecksScriptSendsEveryKeyItCannotUseToTheDatabase(t *testing.T) {
	ctx := context.Background()
	suffix := fmt.Sprintf("%d-%d", time.Now().UnixNano(), accountSeq.Add(1))
	for _, c := range []struct {
		name, entry string
		want        int64
	}{
		{"missing", "", 0},
		{"revoked", "revoked", -1},
		{"unreadable", "{not json", -1},
		{"not an account", `{"rateLimitPerMinute":5}`, -1},
	} {
		cacheKey, rateKey := "apikey:checks-"+c.name+suffix, "rate:checks-"+c.name+suffix
		if c.entry != "" {
			if err := env.Redis.Set(ctx, cacheKey, c.entry, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
		}
		got, err := api.RunChecks(ctx, env.Redis, []string{rateKey, cacheKey}, 600, "sid", "")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != c.want {
			t.Fatalf("%s: status %d, want %d", c.name, got.Status, c.want)
		}
		if n, _ := env.Redis.Exists(ctx, rateKey).Result(); n != 0 {
			t.Fatalf("%s: the request was counted", c.name)
		}
	}
}
