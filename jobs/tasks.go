package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"funnelchat/config"
	"funnelchat/models"
)

// Task types.
const (
	TypeBotReply       = "bot:reply"
	TypeWebhookDeliver = "webhook:deliver"
	TypeAlertDeliver   = "alert:deliver"
	TypeWebhookTest    = "webhook:test"
	TypeSweep          = "maintenance:sweep"
	TypePartitions     = "maintenance:partitions"
)

// BotReplyPayload names the incoming message to answer.
type BotReplyPayload struct {
	MessageID string `json:"messageId"`
	// Prior counts the tries made before this task: 1 when the message's try in a batch failed
	// (bot_batch.go), so that the task has the retries and the spacing that are left.
	Prior int `json:"prior,omitempty"`
}

// DeliverPayload names an outgoing message and its delivery round (bumped by a redeliver, so a new
// round gets a task id of its own while an old round's task may still be archived). Prior counts the
// attempts of the round made before the task (the bot's inline first attempt), which the retry
// schedule has spent already.
type DeliverPayload struct {
	MessageID string `json:"messageId"`
	Round     int    `json:"round"`
	Prior     int    `json:"prior,omitempty"`
}

// AlertPayload names an alert to send to the alert webhook.
type AlertPayload struct {
	AlertID string `json:"alertId"`
	// Escalated: the call that says the alert waited too long (its second call, see EscalateAlerts).
	Escalated bool `json:"escalated,omitempty"`
}

// WebhookTestPayload asks the worker to send a signed test event and push the outcome to ResultKey.
type WebhookTestPayload struct {
	AccountID string `json:"accountId"`
	ResultKey string `json:"resultKey"`
}

// Queue enqueues the service's tasks. Task ids are deterministic where a duplicate would be harmful,
// and enqueueing a task whose id is already taken is not an error: the work is already owed.
type Queue struct {
	client    *asynq.Client
	inspector *asynq.Inspector // on the same connection
	// rdb is the client's Redis connection pool; owned: the Queue made it and closes it (asynq's Client
	// made from a redis client, NewClientFromRedisClient, does not close it). A process's shared client
	// (SharedRedis) is its owner's to close.
	rdb   redis.UniversalClient
	owned bool
	cfg   *config.Config
	// bots batches the api's bot reply enqueues (bot_batch.go), from the first BotReplyAndSet or
	// BotReplyToNew.
	botsOnce  sync.Once
	bots      *botBatcher
	closeOnce sync.Once
}

// NewQueue returns a Queue on the given Redis. Its connection carries piggybackHook (see
// BotReplyAndSet): make one Queue per client.
func NewQueue(opt asynq.RedisConnOpt, cfg *config.Config) *Queue {
	rdb, owned := clientOf(opt)
	rdb.AddHook(&piggybackHook{rdb: rdb})
	return &Queue{client: asynq.NewClientFromRedisClient(rdb), inspector: asynq.NewInspectorFromRedisClient(rdb), rdb: rdb, owned: owned, cfg: cfg}
}

// BotReplyInProgress reports whether the bot reply task of an incoming message is still in asynq to be
// run or rerun (pending, scheduled, active or retrying): such a task owns the delivery of the reply it
// stored (it delivers it inline, or again on its rerun). A completed or archived task, or one Redis
// lost, owns nothing.
func (q *Queue) BotReplyInProgress(ctx context.Context, messageID string) (bool, error) {
	if busy, err := q.inProgress(botReplyTaskID(messageID)); busy || err != nil {
		return busy, err
	}
	// Or the batch that named it (bot_batch.go): its marker, or the marker an api from before the
	// markers' rename set (legacyBotBatchKey), while one can still be there.
	for _, key := range []string{botBatchKey(messageID), legacyBotBatchKey(messageID)} {
		batch, err := q.rdb.Get(ctx, key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue
		case err != nil:
			return false, err
		}
		return q.inProgress(batch)
	}
	return false, nil
}

// inProgress reports whether a task of the default queue is pending, scheduled, active or retrying.
func (q *Queue) inProgress(taskID string) (bool, error) {
	return q.inProgressOn(QueueDefault, taskID)
}

// legacyInUse returns the legacy queues (LegacyQueues) that still hold a task to run: pending, active,
// scheduled or retrying.
func (q *Queue) legacyInUse() ([]string, error) {
	queues, err := q.inspector.Queues()
	if err != nil {
		return nil, err
	}
	var busy []string
	for _, name := range queues {
		if _, legacy := LegacyQueues[name]; !legacy {
			continue
		}
		info, err := q.inspector.GetQueueInfo(name)
		if err != nil {
			return nil, err
		}
		if info.Pending+info.Active+info.Scheduled+info.Retry > 0 {
			busy = append(busy, name)
		}
	}
	return busy, nil
}

// heldByLegacy reports whether one of the queues holds the task to run (pending, scheduled, active or
// retrying): work that a process of the release before the queues' rename queued there, and that the
// worker's drain server runs (LegacyQueues).
func (q *Queue) heldByLegacy(queues []string, taskID string) (bool, error) {
	for _, name := range queues {
		if busy, err := q.inProgressOn(name, taskID); busy || err != nil {
			return busy, err
		}
	}
	return false, nil
}

// inProgressOn reports whether a task of the queue is pending, scheduled, active or retrying.
func (q *Queue) inProgressOn(queue, taskID string) (bool, error) {
	state, err := q.taskState(queue, taskID)
	return held(state), err
}

// archivedTask reports whether asynq archived the task: it ran out of retries, or killed every worker
// that took it (README, "Reliability"). Its work may still be owed (the database says so), yet it is
// not queued again: a task that kills workers would take them down on every sweep. It waits in
// asynqmon's Archived tab for an operator to run it again once its cause is fixed, and the sweep says
// which tasks wait so (handleSweep). Its id stays taken until then: an enqueue under it queues nothing.
func (q *Queue) archivedTask(queue, taskID string) (bool, error) {
	state, err := q.taskState(queue, taskID)
	return state == asynq.TaskStateArchived, err
}

// taskState is the state of a task in asynq; 0 (no state) when there is no such task.
func (q *Queue) taskState(queue, taskID string) (asynq.TaskState, error) {
	info, err := q.inspector.GetTaskInfo(queue, taskID)
	switch {
	case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return info.State, nil
}

// held says whether a task in state is still to run or running: pending, scheduled, active or
// retrying (not archived, nor completed).
func held(state asynq.TaskState) bool {
	switch state {
	case asynq.TaskStatePending, asynq.TaskStateScheduled, asynq.TaskStateActive, asynq.TaskStateRetry:
		return true
	}
	return false
}

// Close stops the batching of bot replies and releases the Redis connection if the Queue made it.
// (asynq's Client.Close would refuse: the connection is ours.)
func (q *Queue) Close() error {
	q.botsOnce.Do(func() {}) // no batcher starts after this
	q.closeOnce.Do(func() {
		if q.bots != nil {
			q.bots.close()
		}
	})
	if !q.owned {
		return nil
	}
	return q.rdb.Close()
}

// botReplyTaskID is the bot reply's task id: one task per message, ever.
func botReplyTaskID(messageID string) string { return "bot:" + messageID }

// BotReply enqueues the bot's reply to an incoming message (one task per message, ever).
func (q *Queue) BotReply(ctx context.Context, messageID string) error {
	return q.enqueue(ctx, TypeBotReply, BotReplyPayload{MessageID: messageID},
		asynq.TaskID(botReplyTaskID(messageID)), asynq.Queue(QueueDefault), asynq.MaxRetry(botMaxRetry))
}

// BotReplyAndSet enqueues the bot's reply to a message the api has just stored (new: never one
// stored before) and sets key to value for ttl in the same round trip to Redis, once the task is
// queued: the SET rides in the pipeline of asynq's enqueue script and takes effect only if the task is
// then in Redis, so a failed enqueue never leaves the key set. key must be in the bot replies' slot
// (BesideBotReplies): the script that sets it reads the task's key, and Redis Cluster runs a script
// only on keys of one slot. Concurrent calls share one task and one
// round trip (bot_batch.go). err is the enqueue's outcome; setErr the SET's (best effort: nil when the
// key was set).
func (q *Queue) BotReplyAndSet(ctx context.Context, messageID, key, value string, ttl time.Duration) (setErr, err error) {
	if hashTag(key) != QueueDefault {
		return nil, fmt.Errorf("enqueue bot reply: the key %q to set with it is not in the bot replies' slot (BesideBotReplies)", key)
	}
	return q.batchBotReply(ctx, &botEnqueue{messageID: messageID, key: key, value: value, ttl: ttl})
}

// BotReplyToNew enqueues the bot's reply to a message the api has just stored (new), when there is no
// key to set with it (a provider's inbound message): concurrent calls share one task and one round
// trip, as BotReplyAndSet's do.
func (q *Queue) BotReplyToNew(ctx context.Context, messageID string) error {
	_, err := q.batchBotReply(ctx, &botEnqueue{messageID: messageID})
	return err
}

// batchBotReply hands call to the batcher (bot_batch.go) and waits for its batch's outcome.
func (q *Queue) batchBotReply(ctx context.Context, call *botEnqueue) (setErr, err error) {
	q.botsOnce.Do(func() { q.bots = newBotBatcher(q) })
	if q.bots == nil {
		return nil, errQueueClosed
	}
	select {
	case <-q.bots.quit:
		return nil, errQueueClosed
	default:
	}
	call.done = make(chan botEnqueued, 1)
	call.deadline, _ = ctx.Deadline()
	select {
	case q.bots.calls <- call:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-q.bots.quit:
		return nil, errQueueClosed
	}
	select {
	case out := <-call.done:
		return out.setErr, out.err
	case <-ctx.Done():
		// The batch may still be queued: the sender's retry finds the message, and its reply held.
		return nil, ctx.Err()
	case <-q.bots.quit:
		return nil, errQueueClosed // (as above, if its batch was on its way)
	}
}

// botReplyAndSetOne is BotReplyAndSet for a message alone: its own task, bot:<message id>.
func (q *Queue) botReplyAndSetOne(ctx context.Context, messageID, key, value string, ttl time.Duration) (setErr, err error) {
	set := setIfQueued(ctx, QueueDefault, botReplyTaskID(messageID), key, value, ttl)
	pctx, p := withPiggyback(ctx, set)
	if err := q.BotReply(pctx, messageID); err != nil {
		return nil, err
	}
	if !p.sent {
		// asynq made no script call that carried it (never with v0.26): the task is queued, so a plain
		// SET, in a round trip of its own, is right.
		return q.rdb.Set(ctx, key, value, ttl).Err(), nil
	}
	switch err := set.Err(); {
	case errors.Is(err, redis.Nil):
		return errNotQueued, nil
	default:
		return err, nil
	}
}

// deliverTaskID is the delivery task of a message's round: one per round.
func deliverTaskID(messageID string, round int) string {
	return fmt.Sprintf("deliver:%s:%d", messageID, round)
}

// Deliver enqueues the delivery of an outgoing message in the given round.
func (q *Queue) Deliver(ctx context.Context, messageID string, round int) error {
	return q.enqueue(ctx, TypeWebhookDeliver, DeliverPayload{MessageID: messageID, Round: round},
		asynq.TaskID(deliverTaskID(messageID, round)), asynq.Queue(QueueDeliveries),
		asynq.MaxRetry(len(q.cfg.WebhookRetrySchedule)))
}

// Alert enqueues the delivery of an alert to the account's alert webhook.
func (q *Queue) Alert(ctx context.Context, alertID string) error {
	return q.enqueue(ctx, TypeAlertDeliver, AlertPayload{AlertID: alertID},
		asynq.TaskID("alert:"+alertID), asynq.Queue(QueueLow), asynq.MaxRetry(len(q.cfg.WebhookRetrySchedule)))
}

// AlertEscalation enqueues the alert webhook's call for an escalated alert.
func (q *Queue) AlertEscalation(ctx context.Context, alertID string) error {
	return q.enqueue(ctx, TypeAlertDeliver, AlertPayload{AlertID: alertID, Escalated: true},
		asynq.TaskID("alert-escalated:"+alertID), asynq.Queue(QueueLow), asynq.MaxRetry(len(q.cfg.WebhookRetrySchedule)))
}

// WebhookTest enqueues a test delivery; the worker pushes its outcome to resultKey in Redis.
func (q *Queue) WebhookTest(ctx context.Context, accountID, resultKey string) error {
	return q.enqueue(ctx, TypeWebhookTest, WebhookTestPayload{AccountID: accountID, ResultKey: resultKey},
		asynq.Queue(QueueDeliveries), asynq.MaxRetry(0), asynq.Timeout(q.cfg.WebhookTimeout+5*time.Second))
}

func (q *Queue) enqueue(ctx context.Context, typ string, payload any, opts ...asynq.Option) error {
	raw, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", typ, err)
	}
	_, err = q.client.EnqueueContext(ctx, asynq.NewTask(typ, raw), opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) && !errors.Is(err, asynq.ErrDuplicateTask) {
		return fmt.Errorf("enqueue %s: %w", typ, err)
	}
	return nil
}

// retryAt tells the retry delay function when the handler scheduled the next attempt (the time it
// recorded as nextAttemptAt), so the two agree.
type retryAt struct {
	err error
	at  time.Time
}

func (e *retryAt) Error() string { return e.err.Error() }
func (e *retryAt) Unwrap() error { return e.err }

// botMaxRetry is how often a failed bot reply is retried before the bot gives up and alerts.
const botMaxRetry = 3

// retryDelay is the worker's asynq RetryDelayFunc. n is how many retries the task has had.
//
// A task whose worker died while running it (SIGKILL, out of memory, a lost machine) comes back with
// asynq.ErrLeaseExpired once asynq's recoverer finds its lease over: 60 to 120 s after the death
// (a 30 s lease, 30 s of allowance for clocks, a pass a minute). It runs again at once: it has waited
// long enough, and a schedule's first backoff (15-45 s for an opening) would only add to it. It still
// spends one of its retries, as asynq counts it, so that a task that kills every worker that takes it
// ends archived instead of killing them forever. A worker that is alive but lost its lease (Redis out
// of reach for 30 s) has cancelled that run's context when its lease ran out, at least 30 s before the
// recoverer hands the task back, so the rerun does not overlap it.
func retryDelay(schedule, botDelays []time.Duration) asynq.RetryDelayFunc {
	return func(n int, err error, task *asynq.Task) time.Duration {
		if errors.Is(err, asynq.ErrLeaseExpired) {
			return 0
		}
		var ra *retryAt
		if errors.As(err, &ra) {
			return max(time.Until(ra.at), 0)
		}
		var rl *rateLimited
		if errors.As(err, &rl) {
			return rl.retryAfter
		}
		switch task.Type() {
		case TypeWebhookDeliver, TypeAlertDeliver:
			return scheduledDelay(schedule, n, task.Payload())
		case TypeBotReplies:
			return botDelay(botDelays, n)
		case TypeBotReply:
			var p BotReplyPayload
			_ = json.Unmarshal(task.Payload(), &p) // a payload that does not decode never ran
			return botDelay(botDelays, n+p.Prior)
		}
		return asynq.DefaultRetryDelayFunc(n, err, task)
	}
}

// nextAttempt is when a failed delivery is tried again: the n-th delay of the schedule with its
// jitter, or later when the receiver asked for it (Retry-After). asynq keeps retry times in whole
// seconds and runs a task once its second has begun, so the time is rounded up to a whole second:
// rounding down could run the retry before the receiver's Retry-After has passed.
func nextAttempt(schedule []time.Duration, n int, payload []byte, retryAfter time.Duration) time.Time {
	d := max(scheduledDelay(schedule, n, payload), retryAfter)
	return notBefore(time.Now().UTC().Add(d))
}

// notBefore is the time to give asynq.ProcessAt for a task that must not run before at: asynq keeps
// schedules in whole Unix seconds and runs a task once its second has begun, so at is rounded up to a
// whole second (rounded down, a follow-up due 1.1 s after its opening's delivery ran after 0.985 s).
func notBefore(at time.Time) time.Time {
	if !at.After(time.Now()) {
		return at // due now: nothing to round
	}
	if frac := at.Sub(at.Truncate(time.Second)); frac > 0 {
		return at.Add(time.Second - frac)
	}
	return at
}

// scheduledDelay is the n-th delay of the schedule plus up to 10% jitter, derived from the task and n.
func scheduledDelay(schedule []time.Duration, n int, payload []byte) time.Duration {
	base := schedule[min(n, len(schedule)-1)]
	h := fnv.New64a()
	h.Write(payload)
	fmt.Fprint(h, n)
	return base + time.Duration(h.Sum64()%1000)*base/10000
}

// retryFailedWebhook tells asynq what to do after a failed webhook attempt (alerts, auto-recharge):
// retry at the scheduled time (a longer Retry-After honoured) while retries are left and the failure
// may pass, else give up.
func (h *Handler) retryFailedWebhook(ctx context.Context, t *asynq.Task, what string, res DeliveryResult) error {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	if !res.Retryable || retried >= maxRetry {
		return fmt.Errorf("%s: %s: %w", what, res.Error, asynq.SkipRetry)
	}
	return &retryAt{err: errors.New(res.Error), at: nextAttempt(h.Config.WebhookRetrySchedule, retried, t.Payload(), res.RetryAfter)}
}

// payloadOf decodes a task's payload; one that cannot be decoded will never succeed, so it is not
// retried.
func payloadOf[T any](t *asynq.Task) (T, error) {
	var p T
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return p, fmt.Errorf("%s: bad payload: %v: %w", t.Type(), err, asynq.SkipRetry)
	}
	return p, nil
}

// gone ends a task whose subject (message, send, alert) no longer exists without retrying it; any
// other error is retried.
func gone(err error) error {
	if models.ErrorCode(err) == models.CodeNotFound {
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	return err
}
