package models

import (
	"context"
	"sync"
)

// batcher gathers the writes of concurrent callers into batches (a group commit, GroupCommit): each
// caller queues its In and waits for its own Out. A write that arrives while no batch is running is
// flushed at once, alone (after a 1 ms wait for company if a batch ended just before: Linger); writes
// that arrive while the flushers are busy wait for the next free one and go together. So batching
// adds no delay when the database is idle and saves round trips, statements and commits (WAL flushes)
// when it is busy. The ingest of incoming messages (ingest_pg.go) and the bot replies' records
// (botreply_batch.go) use one each, on PostgreSQL.
type batcher[In, Out any] struct {
	queue chan *batchCall[In, Out]
	quit  chan struct{}
	// stopped is closed once the flushers have ended and close has answered the queue: a call still
	// queued then has nobody left to answer it.
	stopped chan struct{}
	wg      sync.WaitGroup
	// linger lets a batch of a busy process wait a moment for more writes (gather.go).
	linger Linger
	// closed answers the calls that a closing batcher will not flush.
	closed error
}

// batchCall is one caller's write and the channel its outcome comes back on; the flush answers every
// call of its batch exactly once (answer).
type batchCall[In, Out any] struct {
	in   In
	done chan batchOutcome[Out]
}

type batchOutcome[Out any] struct {
	out Out
	err error
}

func (c *batchCall[In, Out]) answer(out Out, err error) {
	c.done <- batchOutcome[Out]{out: out, err: err}
}

// newBatcher starts flushers goroutines that hand batches of up to max calls to flush. closed
// answers the calls left queued when the batcher closes; name labels the batches in /metrics.
func newBatcher[In, Out any](name string, flushers, max int, closed error, flush func([]*batchCall[In, Out])) *batcher[In, Out] {
	b := &batcher[In, Out]{queue: make(chan *batchCall[In, Out], 4*max), quit: make(chan struct{}),
		stopped: make(chan struct{}), closed: closed}
	for range flushers {
		b.wg.Go(func() { GroupCommit(name, b.queue, b.quit, max, &b.linger, flush) })
	}
	return b
}

// do queues in and waits for its outcome, or for ctx to end. A call whose ctx ends may still be
// flushed: the writes batched this way are idempotent, so the caller's retry finds what it stored.
func (b *batcher[In, Out]) do(ctx context.Context, in In) (Out, error) {
	var zero Out
	select {
	case <-b.quit:
		return zero, b.closed
	default:
	}
	call := &batchCall[In, Out]{in: in, done: make(chan batchOutcome[Out], 1)}
	select {
	case b.queue <- call:
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-b.quit:
		return zero, b.closed
	}
	select {
	case o := <-call.done:
		return o.out, o.err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-b.stopped:
		// Queued as close ended: the answer is here already, or nobody is left to give one.
		select {
		case o := <-call.done:
			return o.out, o.err
		default:
			return zero, b.closed
		}
	}
}

// close stops the flushers. The calls still queued are answered at once with b.closed (their callers
// would otherwise wait for their deadline: no flusher takes them any more), while the batches on
// their way end and answer their own calls; close returns when they have.
func (b *batcher[In, Out]) close() {
	close(b.quit)
	b.answerQueued()
	b.wg.Wait()
	b.answerQueued() // calls that were being queued as the flushers ended
	close(b.stopped)
}

// answerQueued answers the calls queued now with b.closed. A call is taken from the queue once, by a
// flusher or here, so each caller hears what became of its write.
func (b *batcher[In, Out]) answerQueued() {
	var zero Out
	for _, call := range Gather(nil, b.queue, cap(b.queue)) {
		call.answer(zero, b.closed)
	}
}
