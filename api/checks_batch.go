package api

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// The checks of concurrent requests go to Redis together. Every keyed request makes one checksScript
// call (checks.go); under load most of that call's cost, in the api and in Redis, is the round trip's
// system calls rather than the script. So the calls made while one is on its way wait for it and then
// go as one pipeline: one write and one read for all of them, and Redis reads and answers them in one go.
// A call that finds no other on its way goes at once, alone, as before: nothing waits to fill a
// pipeline. Each call keeps its own answer, its own error and its own timeout.

const (
	checksMax      = 64 // calls in one pipeline
	checksFlushers = 2  // pipelines in flight at once
)

// errChecksClosed answers a call the batcher will not make because the api is shutting down: an
// unavailable error, so the request is answered 503 and its client retries against a process that runs.
var errChecksClosed = models.Errorf(models.CodeUnavailable, "the service is shutting down; retry shortly")

// checksCall is one request's checksScript call waiting for its pipeline, with the de-duplication
// key to read beside it ("" for none).
type checksCall struct {
	keys   []string
	args   []any
	dedupe string
	done   chan checksAnswer
}

// checksAnswer is a call's answer: the script's, and what the de-duplication key held ("" for
// nothing) or why it could not be read.
type checksAnswer struct {
	v      []any
	err    error
	dup    string
	dupErr error
}

// checksBatcher runs the calls; it starts with the first call and stops with the Server (Shutdown).
type checksBatcher struct {
	rdb   redis.UniversalClient
	once  sync.Once
	calls chan *checksCall
	quit  chan struct{}
	// stopped is closed once the flushers have ended and close has answered the queue: a call still
	// queued then has nobody left to answer it.
	stopped chan struct{}
	wg      sync.WaitGroup
}

func newChecksBatcher(rdb redis.UniversalClient) *checksBatcher {
	return &checksBatcher{rdb: rdb, calls: make(chan *checksCall, 4*checksMax), quit: make(chan struct{}), stopped: make(chan struct{})}
}

// run makes the call, reading dedupe beside it when not "", and waits for its answer, or for ctx to end.
func (b *checksBatcher) run(ctx context.Context, keys []string, dedupe string, args ...any) checksAnswer {
	b.once.Do(func() {
		for range checksFlushers {
			b.wg.Go(func() { models.GroupCommit("checks", b.calls, b.quit, checksMax, nil, b.flush) })
		}
	})
	select {
	case <-b.quit:
		return checksAnswer{err: errChecksClosed}
	default:
	}
	call := &checksCall{keys: keys, args: args, dedupe: dedupe, done: make(chan checksAnswer, 1)}
	select {
	case b.calls <- call:
	case <-ctx.Done():
		return checksAnswer{err: ctx.Err()}
	case <-b.quit:
		return checksAnswer{err: errChecksClosed}
	}
	select {
	case a := <-call.done:
		return a
	case <-ctx.Done():
		return checksAnswer{err: ctx.Err()}
	case <-b.stopped:
		// Queued as close ended: the answer is here already, or nobody is left to give one.
		select {
		case a := <-call.done:
			return a
		default:
			return checksAnswer{err: errChecksClosed}
		}
	}
}

// close stops the flushers. Calls still queued are answered at once with errChecksClosed (503), while
// the pipelines on their way end and answer their own calls; close returns when they have.
func (b *checksBatcher) close() {
	b.once.Do(func() {}) // no flusher starts after this
	select {
	case <-b.quit:
		return
	default:
	}
	close(b.quit)
	b.answerQueued()
	b.wg.Wait()
	b.answerQueued() // calls that were being queued as the flushers ended
	close(b.stopped)
}

// answerQueued answers the calls queued now with errChecksClosed. A call is taken from the queue
// once, by a flusher or here.
func (b *checksBatcher) answerQueued() {
	for _, call := range models.Gather(nil, b.calls, cap(b.calls)) {
		call.done <- checksAnswer{err: errChecksClosed}
	}
}

// flush sends the calls as one pipeline of EVALSHA, each followed by the GET of its de-duplication key
// if it has one. A Redis that does not know the script (restarted, or failed over) answers NOSCRIPT;
// those calls are made again one by one with Script.Run, which loads it. The pipeline's time limit is
// one call's (rateLimiterTimeout): every caller waits less. On Redis Cluster the client sends each
// node its part of the pipeline, all at once.
func (b *checksBatcher) flush(batch []*checksCall) {
	ctx, cancel := context.WithTimeout(context.Background(), rateLimiterTimeout)
	defer cancel()
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	dups := make([]*redis.StringCmd, len(batch))
	for i, call := range batch {
		cmds[i] = checksScript.EvalSha(ctx, pipe, call.keys, call.args...)
		if call.dedupe != "" {
			dups[i] = pipe.Get(ctx, call.dedupe)
		}
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	for i, call := range batch {
		v, err := cmds[i].Slice()
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			v, err = checksScript.Run(ctx, b.rdb, call.keys, call.args...).Slice()
		}
		a := checksAnswer{v: v, err: err}
		if dups[i] != nil {
			a.dup, a.dupErr = dups[i].Result()
			if errors.Is(a.dupErr, redis.Nil) {
				a.dupErr = nil
			}
		}
		call.done <- a
	}
}
