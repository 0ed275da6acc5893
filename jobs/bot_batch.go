package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// Bot replies in batches. Under load the api stores incoming messages in batches (one transaction for
// the messages that arrived while the previous one committed, models/ingest_pg.go), and their bot
// replies are queued the same way: the enqueues that wait while one is on its way to Redis go out
// together, as one task that names every message (TypeBotReplies). asynq's cost per task (its enqueue,
// fetch and completion scripts in Redis, and the worker's bookkeeping around them) is then paid once
// per batch, and the worker reads the batch's messages in one query. A message that arrives alone is
// queued as before, as its own task bot:<message id>; nothing waits to fill a batch.
//
// Each message of a batch keeps what its own task would give it:
//   - it is answered by answer, the code a single task runs, concurrently with the others while the
//     worker has free slots (workSlots);
//   - a message whose try fails goes on in a task of its own (bot:<id>), with the retries and spacing
//     left (BotReplyPayload.Prior), so one message's failure never reruns the others;
//   - a rerun of the whole batch (its worker killed, Redis or the database down) finds the answered
//     messages answered: answer does nothing twice;
//   - a marker per message (botBatchKey) names the one task that owns its reply: its batch (set, if
//     no task owns it yet, with the dedupe keys in the enqueue's round trip), or its own task bot:<id>
//     (set by the sweep or a sender's retry before they queue it, BotReplyUnlessHeld). Each claim is
//     one atomic step in Redis, and a batch answers only the messages it owns (ownedByBatch): so the
//     batch and a task of the sweep's never both answer a message, whichever is queued first. (The
//     sweep's check and its enqueue were two steps: an api's batch enqueue landing in between, late
//     after a database outage, made two tasks answer the same message at once, and its receiver got
//     the reply twice.)

// TypeBotReplies is the task of a batch of bot replies (BotRepliesPayload).
const TypeBotReplies = "bot:replies"

// BotRepliesPayload names the incoming messages of a batch, oldest first.
type BotRepliesPayload struct {
	MessageIDs []string `json:"messageIds"`
}

const (
	botBatchMax      = 32              // messages in one batch task
	botBatchFlushers = 1               // enqueues in flight at once
	botBatchTimeout  = 5 * time.Second // one batch's enqueue at most (its callers' deadline ends it sooner: flushDeadline)
	// botMarkerTTL keeps a message's batch marker as long as the incoming endpoint's de-duplication key
	// (api/incoming.go): a batch still queued after that is treated as lost by the sweep.
	botMarkerTTL = 24 * time.Hour
)

var errQueueClosed = errors.New("enqueue bot reply: the queue is closed")

// botBatchTaskID is a batch's task id: its first message's, which is new only once.
func botBatchTaskID(firstMessageID string) string { return "bots:" + firstMessageID }

// botBatchKey is the Redis key that names the batch task holding a message's bot reply. It is in the
// bot replies' slot (BesideBotReplies), as batchMarkScript sets it beside the batch task's key.
func botBatchKey(messageID string) string { return BesideBotReplies("botbatch:", messageID) }

// legacyBotBatchKey is the marker's name before it carried the bot replies' hash tag. A batch an api
// of the earlier release queued during the deploy is marked under it for botMarkerTTL;
// BotReplyInProgress still reads it. (Remove after a release.)
func legacyBotBatchKey(messageID string) string { return "botbatch:" + messageID }

// BesideBotReplies names a Redis key in the slot of the bot replies' queue on Redis Cluster: prefix,
// then the queue's hash tag as asynq writes it in its keys (asynq:{default}:...), then ":" and name. A
// key that a script sets beside a bot reply's task (BotReplyAndSet, the batch's markers) must be; the
// price is that all of them live on the master of that one slot.
func BesideBotReplies(prefix, name string) string { return prefix + "{" + QueueDefault + "}:" + name }

// botEnqueue is one incoming request's enqueue waiting for its batch; key is "" when there is no
// de-duplication key to set with it (BotReplyToNew).
type botEnqueue struct {
	messageID, key, value string
	ttl                   time.Duration
	// deadline is when the caller stops waiting (zero: it set none).
	deadline time.Time
	done     chan botEnqueued
}

type botEnqueued struct{ setErr, err error }

// botBatcher gathers the bot reply enqueues of concurrent requests into batches (see the top of the
// file). It starts with the Queue's first BotReplyAndSet or BotReplyToNew: a worker's Queue never runs it.
type botBatcher struct {
	q     *Queue
	calls chan *botEnqueue
	quit  chan struct{}
	wg    sync.WaitGroup
}

func newBotBatcher(q *Queue) *botBatcher {
	b := &botBatcher{q: q, calls: make(chan *botEnqueue, 4*botBatchMax), quit: make(chan struct{})}
	for range botBatchFlushers {
		b.wg.Go(b.flusher)
	}
	return b
}

func (b *botBatcher) close() {
	close(b.quit)
	b.wg.Wait()
}

func (b *botBatcher) flusher() {
	// A busy flusher waits a moment for more (models.Linger): at a steady rate a few messages then share
	// a task, instead of each paying asynq's enqueue, fetch and completion scripts and the worker's read.
	var linger models.Linger
	models.GroupCommit("bot_enqueue", b.calls, b.quit, botBatchMax, &linger, b.flush)
	// Calls still queued get an answer: their requests answer 503 at once, not at their timeout.
	for _, call := range models.Gather(nil, b.calls, cap(b.calls)) {
		call.done <- botEnqueued{err: errQueueClosed}
	}
}

// flush queues a batch: one task for all of it, or, for a message alone, its own task as before.
func (b *botBatcher) flush(batch []*botEnqueue) {
	ctx, cancel := context.WithDeadline(context.Background(), flushDeadline(batch, time.Now()))
	defer cancel()
	if len(batch) == 1 {
		call := batch[0]
		if call.key == "" {
			call.done <- botEnqueued{err: b.q.BotReply(ctx, call.messageID)}
			return
		}
		setErr, err := b.q.botReplyAndSetOne(ctx, call.messageID, call.key, call.value, call.ttl)
		call.done <- botEnqueued{setErr: setErr, err: err}
		return
	}
	// The batch's task id is its first message's, new only once, so it never collides: a failure is
	// Redis's, and every request of the batch answers 503 and retries.
	setErr, err := b.q.enqueueBatch(ctx, batch)
	for _, call := range batch {
		call.done <- botEnqueued{setErr: setErr, err: err}
	}
}

// flushDeadline is when a batch's enqueue gives up: when the last of its callers stops waiting, and
// at most botBatchTimeout from now. A caller that stopped waiting answered its sender 503, and the
// sender's retry finds the message stored and queues its reply unless a task holds it
// (BotReplyUnlessHeld); an enqueue of the batch that went on retrying (through a Redis failover, say)
// could land after that check and queue the reply a second time, in a task that would run beside the
// retry's.
func flushDeadline(batch []*botEnqueue, now time.Time) time.Time {
	limit := now.Add(botBatchTimeout)
	var last time.Time
	for _, call := range batch {
		if call.deadline.IsZero() {
			return limit
		}
		if call.deadline.After(last) {
			last = call.deadline
		}
	}
	if last.After(limit) {
		return limit
	}
	return last
}

// batchMarkScript sets, once the batch task is in Redis, each message's marker (the batch's task id)
// where no task owns the message yet, and the de-duplication keys of those that have one, as
// setIfQueuedScript does for one message. Every key is in the bot replies' slot (BesideBotReplies), as
// Redis Cluster requires of a script's keys.
//
//	KEYS[1] the batch task's key (asynqTaskKey); then the N markers; then the keys to set
//	ARGV[1] the batch's task id, ARGV[2] the markers' TTL in ms, ARGV[3] N; then per key its value and TTL in ms
const batchMarkScript = `
if redis.call("EXISTS", KEYS[1]) == 0 then
  return false
end
local n = tonumber(ARGV[3])
for i = 2, n + 1 do
  redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2], "NX")
end
for i = n + 2, #KEYS do
  local a = 2 * (i - n) -- ARGV[4], ARGV[6], ... for the keys in turn
  redis.call("SET", KEYS[i], ARGV[a], "PX", ARGV[a + 1])
end
return n
`

// enqueueBatch queues one task for the batch's messages, and sets their markers and keys in the same
// round trip (piggyback.go). err is the enqueue's outcome; setErr the keys' (best effort).
func (q *Queue) enqueueBatch(ctx context.Context, batch []*botEnqueue) (setErr, err error) {
	slices.SortFunc(batch, func(a, b *botEnqueue) int { return strings.Compare(a.messageID, b.messageID) })
	ids := make([]string, len(batch))
	taskID := botBatchTaskID(batch[0].messageID)
	keys := []any{asynqTaskKey(QueueDefault, taskID)}
	args := []any{taskID, botMarkerTTL.Milliseconds(), len(batch)}
	for i, call := range batch {
		ids[i] = call.messageID
		keys = append(keys, botBatchKey(call.messageID))
	}
	for _, call := range batch {
		if call.key != "" {
			keys = append(keys, call.key)
			args = append(args, call.value, call.ttl.Milliseconds())
		}
	}
	cmd := append([]any{"eval", batchMarkScript, len(keys)}, keys...)
	mark := redis.NewCmd(ctx, append(cmd, args...)...)
	raw, err := json.Marshal(BotRepliesPayload{MessageIDs: ids})
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", TypeBotReplies, err)
	}
	pctx, p := withPiggyback(ctx, mark)
	_, err = q.client.EnqueueContext(pctx, asynq.NewTask(TypeBotReplies, raw), asynq.TaskID(taskID),
		asynq.Queue(QueueDefault), asynq.MaxRetry(botMaxRetry))
	if err != nil {
		return nil, fmt.Errorf("enqueue %s: %w", TypeBotReplies, err)
	}
	if !p.sent {
		_ = q.rdb.Process(ctx, mark) // asynq made no script call to carry it: its own round trip
	}
	if errors.Is(mark.Err(), redis.Nil) {
		return errNotQueued, nil
	}
	return mark.Err(), nil
}

// claimScript gives a message's reply to a task, unless another task owns it: the marker is set to
// ARGV[1] when it is missing, names ARGV[1] already, or names ARGV[3], a task the caller found
// finished. It answers 1 when set, else the task that owns the message.
//
//	KEYS[1] the message's marker (botBatchKey); ARGV[1] the task id, ARGV[2] the TTL in ms, ARGV[3] ""
//	or the finished owner
var claimScript = redis.NewScript(`
local v = redis.call("GET", KEYS[1])
if (not v) or v == ARGV[1] or (ARGV[3] ~= "" and v == ARGV[3]) then
  redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
  return 1
end
return v
`)

// BotReplyUnlessHeld enqueues the bot's reply to a message in its own task (as BotReply) unless a task
// holds it: that task is queued or running already, or a batch owns the message and may still run. The
// sweep and the retry of a message whose reply is still owed use it. The claim of the message's marker
// comes before the enqueue, in one step, so that a batch enqueued meanwhile does not take the message
// (batchMarkScript sets no marker that exists), and a batch that took it first keeps it.
// A task of the message's own that asynq archived holds it too (archivedTask).
func (q *Queue) BotReplyUnlessHeld(ctx context.Context, messageID string) error {
	_, err := q.botReplyUnlessHeld(ctx, messageID)
	return err
}

// botReplyUnlessHeld is BotReplyUnlessHeld, saying also whether the message's own task is archived
// (the sweep names those), from the one read of that task's state.
func (q *Queue) botReplyUnlessHeld(ctx context.Context, messageID string) (archived bool, err error) {
	own := botReplyTaskID(messageID)
	if state, err := q.taskState(QueueDefault, own); err != nil || held(state) || state == asynq.TaskStateArchived {
		return state == asynq.TaskStateArchived, err
	}
	// A batch an api of the earlier release queued is marked under the marker's old name only.
	if legacy, err := q.rdb.Get(ctx, legacyBotBatchKey(messageID)).Result(); err == nil {
		if busy, err := q.inProgress(legacy); busy || err != nil {
			return false, err
		}
	} else if !errors.Is(err, redis.Nil) {
		return false, err
	}
	finished := ""
	for range 3 {
		res, err := claimScript.Run(ctx, q.rdb, []string{botBatchKey(messageID)}, own, botMarkerTTL.Milliseconds(), finished).Result()
		if err != nil {
			return false, fmt.Errorf("claim bot reply %s: %w", messageID, err)
		}
		holder, taken := res.(string)
		if !taken {
			return false, q.BotReply(ctx, messageID)
		}
		if busy, err := q.inProgress(holder); busy || err != nil {
			return false, err
		}
		finished = holder // gone (done, or archived): take the message over, unless it changed meanwhile
	}
	return false, fmt.Errorf("claim bot reply %s: its owner kept changing", messageID)
}

// ownScript answers, for each marker, 1 when the batch ARGV[1] owns the message: the marker names
// it, or names no task and is set to it now.
//
//	KEYS the batch's messages' markers; ARGV[1] the batch's task id, ARGV[2] the TTL in ms
var ownScript = redis.NewScript(`
local owned = {}
for i = 1, #KEYS do
  local v = redis.call("GET", KEYS[i])
  if not v then
    redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
    v = ARGV[1]
  end
  owned[i] = (v == ARGV[1]) and 1 or 0
end
return owned
`)

// ownedByBatch returns which messages of the batch batchID owns (see the top of the file); the others
// belong to their own tasks.
func (q *Queue) ownedByBatch(ctx context.Context, batchID string, messageIDs []string) (map[string]bool, error) {
	keys := make([]string, len(messageIDs))
	for i, id := range messageIDs {
		keys[i] = botBatchKey(id)
	}
	flags, err := ownScript.Run(ctx, q.rdb, keys, batchID, botMarkerTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("bot replies %s: read the markers: %w", batchID, err)
	}
	owned := make(map[string]bool, len(messageIDs))
	for i, id := range messageIDs {
		owned[id] = flags[i] == 1
	}
	return owned, nil
}

// botReplyAfter gives a message whose try in a batch failed a task of its own, delay later, with the
// retries left (prior tries made: 1 when the failed try spends one, see isFailure).
func (q *Queue) botReplyAfter(ctx context.Context, messageID string, prior int, delay time.Duration) error {
	return q.enqueue(ctx, TypeBotReply, BotReplyPayload{MessageID: messageID, Prior: prior},
		asynq.TaskID(botReplyTaskID(messageID)), asynq.Queue(QueueDefault), asynq.MaxRetry(botMaxRetry-prior),
		asynq.ProcessIn(delay))
}

// handleBotReplies answers a batch of incoming messages: read in one query, each answered as its own
// task would (answer), in parallel while the worker has free slots. A message whose try fails goes on
// in a task of its own; the batch fails (and is rerun whole) only when it cannot hand that on.
func (h *Handler) handleBotReplies(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[BotRepliesPayload](t)
	if err != nil {
		return err
	}
	taskID, _ := asynq.GetTaskID(ctx)
	owned, err := h.Queue.ownedByBatch(ctx, taskID, p.MessageIDs)
	if err != nil {
		return err
	}
	ids := make([]string, 0, len(p.MessageIDs))
	for _, id := range p.MessageIDs {
		if owned[id] {
			ids = append(ids, id)
		} else {
			h.Log.InfoContext(ctx, "bot reply left to its own task", "message_id", id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	msgs, err := h.Store.MessagesForWork(ctx, ids)
	if err != nil {
		return err
	}
	type failure struct {
		id  string
		err error
	}
	var (
		mu     sync.Mutex
		failed []failure
		wg     sync.WaitGroup
	)
	for _, in := range msgs {
		run := func() {
			if err := h.answer(ctx, in, botTry{maxRetry: botMaxRetry}); err != nil {
				mu.Lock()
				failed = append(failed, failure{in.ID, err})
				mu.Unlock()
			}
		}
		if h.slots.borrow() {
			wg.Go(func() {
				defer h.slots.give()
				run()
			})
		} else {
			run() // on the batch's own slot
		}
	}
	wg.Wait()
	for _, f := range failed {
		if errors.Is(f.err, asynq.SkipRetry) {
			h.Log.WarnContext(ctx, "bot reply given up", "message_id", f.id, "error", f.err.Error())
			continue
		}
		prior := 0
		if isFailure(f.err) {
			prior = 1
		}
		h.Log.WarnContext(ctx, "bot reply failed in a batch; it goes on in a task of its own", "message_id", f.id, "error", f.err.Error())
		if err := h.Queue.botReplyAfter(ctx, f.id, prior, botDelay(h.BotRetryDelays, 0)); err != nil {
			return err
		}
	}
	return nil
}

// botDelay is the wait before a bot reply's retry after n tries that failed (the last delay repeats).
func botDelay(delays []time.Duration, n int) time.Duration {
	if len(delays) == 0 {
		return 0
	}
	return delays[min(n, len(delays)-1)]
}

// workSlots bounds what a worker process runs at once to WORKER_CONCURRENCY, batches included: each
// task holds a slot (holdSlot), and a batch answers a message beside the others only on a slot it
// borrows. So the database connections a worker needs stay what the configuration checks
// (DATABASE_POOL_SIZE against WORKER_CONCURRENCY). A nil workSlots bounds nothing and lends nothing.
type workSlots chan struct{}

func newWorkSlots(n int) workSlots { return make(workSlots, max(n, 1)) }

// borrow takes a free slot if there is one.
func (s workSlots) borrow() bool {
	if s == nil {
		return false
	}
	select {
	case s <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s workSlots) give() { <-s }

// holdSlot is the middleware that makes each task hold a slot while it runs.
func (h *Handler) holdSlot(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		if h.slots == nil {
			return next.ProcessTask(ctx, t)
		}
		select {
		case h.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer h.slots.give()
		return next.ProcessTask(ctx, t)
	})
}
