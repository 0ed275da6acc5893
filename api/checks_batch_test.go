package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"funnelchat/api"
	"funnelchat/models"
)

// The checks of concurrent requests share one pipeline to Redis; each keeps its own answer: counted
// in the pipeline's order against its own key, with its own messageSid looked up. That holds when Redis
// knows the script and when it does not (restarted empty: every call of the pipeline answers NOSCRIPT
// and is made again on its own).
func TestChecksInOnePipelineKeepTheirOwnAnswers(t *testing.T) {
	ctx := context.Background()
	run := fmt.Sprint(time.Now().UnixNano())
	rate := func(name string) []string { return []string{"rate:ratelimit:{pipeline-" + run + "-" + name + "}"} }
	keyHash := "key_pipe" + run
	if err := env.Redis.Set(ctx, api.DedupeKey(keyHash, "sid-stored"), "msg_first", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	calls := []api.CheckCall{
		{Keys: rate("a"), Limit: 10, KeyHash: keyHash},
		{Keys: rate("b"), Limit: 10, KeyHash: keyHash, Sid: "sid-stored"},
		{Keys: rate("a"), Limit: 10, KeyHash: keyHash, Sid: "sid-new"},
		{Keys: rate("c"), Limit: 2, KeyHash: keyHash},
		{Keys: rate("c"), Limit: 2, KeyHash: keyHash},
		{Keys: rate("c"), Limit: 2, KeyHash: keyHash, Sid: "sid-stored"},
		{Keys: rate("a"), Limit: 10, KeyHash: keyHash},
	}
	type want struct {
		allowed   bool
		remaining int
		dup       string
	}
	for round, script := range []string{"unknown to Redis", "known to Redis"} {
		if round == 0 {
			if err := env.Redis.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// Each round counts on from the last: a's three calls, b's one, c's limit of 2 a minute.
		wants := []want{
			{true, 9 - 3*round, ""}, {true, 9 - round, "msg_first"}, {true, 8 - 3*round, ""},
			{round == 0, 1 - round, ""}, {round == 0, 0, ""}, {false, 0, ""}, {true, 7 - 3*round, ""},
		}
		answers, errs := api.RunChecksTogether(env.Redis, calls)
		for i, a := range answers {
			if errs[i] != nil {
				t.Fatalf("script %s: call %d: %v", script, i, errs[i])
			}
			w := wants[i]
			if a.Allowed != w.allowed || a.Remaining != w.remaining || a.DuplicateOf != w.dup {
				t.Errorf("script %s: call %d: allowed %v remaining %d duplicate of %q, want %v %d %q",
					script, i, a.Allowed, a.Remaining, a.DuplicateOf, w.allowed, w.remaining, w.dup)
			}
		}
	}
}

// Many concurrent requests of several keys, each key's exactly up to its limit: every request is
// counted once, against its own key (all are allowed, and the next one of each key is not).
func TestConcurrentRequestsKeepTheirOwnCounts(t *testing.T) {
	srv := startServer(t)
	// 32 requests at once: on the embedded pair, miniredis runs each check's script in Go's Lua, and a
	// larger batch on a loaded 2-core machine can outlast the checks' 250 ms bound, where the limiter
	// lets requests through uncounted by design (fail open) and the test would measure the load.
	const keys, limit = 4, 8
	accounts := make([]string, keys)
	statuses := make([][]int, keys)
	var wg sync.WaitGroup
	for k := range keys {
		accounts[k] = limitedAccount(t, limit)
		statuses[k] = make([]int, limit)
		for i := range limit {
			wg.Go(func() { statuses[k][i] = do(t, "GET", srv.URL+"/v1/lists", accounts[k], nil).Status })
		}
	}
	wg.Wait()
	for k, key := range accounts {
		for i, status := range statuses[k] {
			if status != http.StatusOK {
				t.Errorf("key %d request %d: status %d, want 200", k, i, status)
			}
		}
		r := do(t, "GET", srv.URL+"/v1/lists", key, nil)
		expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
		if got := r.Header.Get("X-RateLimit-Remaining"); got != "0" {
			t.Errorf("key %d: X-RateLimit-Remaining %q after its limit, want 0", k, got)
		}
	}
}

// TestClosingChecksAnswersQueuedCallsUnavailable: an api shutting down answers the checks still
// queued, and any made after, with an unavailable error (503 with Retry-After, so clients retry
// elsewhere), not an internal one, and leaves none of them waiting for its deadline.
func TestClosingChecksAnswersQueuedCallsUnavailable(t *testing.T) {
	done := make(chan []error, 1)
	go func() { done <- api.ChecksQueuedAtClose(env.Redis, 5) }()
	select {
	case errs := <-done:
		for i, err := range errs {
			if !models.IsUnavailable(err) {
				t.Errorf("call %d: %v, want an unavailable error", i, err)
			}
		}
	case <-time.After(30 * time.Second):
		t.Fatal("queued checks still waiting after the close")
	}
}
