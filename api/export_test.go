package api

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// CheckAnswer is checksScript's answer, for api/gcra_test.go.
type CheckAnswer struct {
	// Status is 1 (checked), 0 (no cache entry) or -1 (revoked or unreadable entry).
	Status      int64
	Account     *models.Account
	Limit       int
	Allowed     bool
	Remaining   int
	RetryAfter  time.Duration
	ResetAfter  time.Duration
	DuplicateOf string
}

// RunChecks runs the per-request script as the server does: keys are the count's key and, for the
// fast path, the key cache entry's; with sid, the sid's de-duplication key of the API key whose hash
// is keyHash is read beside it.
func RunChecks(ctx context.Context, rdb redis.UniversalClient, keys []string, limit int, sid, keyHash string) (CheckAnswer, error) {
	answers, errs := RunChecksTogether(rdb, []CheckCall{{Keys: keys, Limit: limit, Sid: sid, KeyHash: keyHash}})
	return answers[0], errs[0]
}

// CheckCall is one call of RunChecksTogether: RunChecks's arguments.
type CheckCall struct {
	Keys         []string
	Limit        int
	Sid, KeyHash string
}

// DedupeKey is the key that remembers a messageSid sent with the API key whose hash is keyHash.
func DedupeKey(keyHash, sid string) string { return dedupeKey(keyHash, sid) }

// RunChecksTogether makes the calls as the server makes concurrent requests' calls: as one pipeline
// (checks_batch.go).
func RunChecksTogether(rdb redis.UniversalClient, calls []CheckCall) ([]CheckAnswer, []error) {
	b := newChecksBatcher(rdb)
	batch := make([]*checksCall, len(calls))
	for i, c := range calls {
		batch[i] = &checksCall{keys: c.Keys, args: []any{c.Limit}, done: make(chan checksAnswer, 1)}
		if c.Sid != "" {
			batch[i].dedupe = dedupeKey(c.KeyHash, c.Sid)
		}
	}
	b.flush(batch)
	answers, errs := make([]CheckAnswer, len(calls)), make([]error, len(calls))
	for i, call := range batch {
		a := <-call.done
		if errs[i] = a.err; a.err == nil {
			answers[i], errs[i] = checkAnswerOf(a, calls[i].Sid)
		}
	}
	return answers, errs
}

func checkAnswerOf(a checksAnswer, sid string) (CheckAnswer, error) {
	chk, read, err := parseChecks(a, sid)
	if err != nil {
		return CheckAnswer{}, err
	}
	if chk == nil {
		return CheckAnswer{Status: read.Status}, nil
	}
	status := read.Status
	var acc *models.Account
	if read.Entry != "" {
		// An entry the script read and Go cannot: the database answers (models.Store.AuthenticateRead).
		var ok bool
		if acc, ok = models.CachedAccount(read.Entry); !ok {
			status = models.KeyCacheUnusable
		}
	}
	r := chk.rate
	return CheckAnswer{Status: status, Account: acc, Limit: r.Limit, Allowed: r.Allowed, Remaining: r.Remaining,
		RetryAfter: r.RetryAfter, ResetAfter: r.ResetAfter, DuplicateOf: chk.duplicateOf}, nil
}

// ChecksQueuedAtClose queues n calls on a checks batcher whose flushers never started (as if every
// one were busy), closes it, and returns each call's error.
func ChecksQueuedAtClose(rdb redis.UniversalClient, n int) []error {
	b := newChecksBatcher(rdb)
	b.once.Do(func() {}) // no flusher: the calls stay queued
	errs := make(chan error, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			errs <- b.run(ctx, []string{"rate:ratelimit:{closing}"}, "", 10).err
		}()
	}
	for len(b.calls) < n {
		time.Sleep(time.Millisecond)
	}
	b.close()
	// A call made after the close is refused the same way.
	out := []error{b.run(context.Background(), []string{"rate:ratelimit:{closing}"}, "", 10).err}
	for range n {
		out = append(out, <-errs)
	}
	return out
}
