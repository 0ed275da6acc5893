package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"funnelchat/config"
)

// holdFirstScript is a pipeline hook that holds the next script call (an enqueue) until released, so
// that the enqueues behind it wait for the batcher together.
type holdFirstScript struct {
	once    sync.Once
	release *gate
}

func (h *holdFirstScript) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *holdFirstScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *holdFirstScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 1 && isScriptCall(cmds[0]) {
			h.once.Do(func() { <-h.release.ch })
		}
		return next(ctx, cmds)
	}
}

// gate holds the hooks above until opened. A test opens it when its enqueues are waiting; its cleanup
// opens it too, before batchQueue's (cleanups run last first), so a test that fails while the batcher's
// flusher is held ends instead of waiting in Queue.Close for that flusher forever.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// openAtCleanup is a closed gate opened at the latest by t's cleanup. Call it after batchQueue.
func openAtCleanup(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func batchQueue(t *testing.T) (*Queue, *miniredis.Miniredis) {
	t.Helper()
	mini := miniredis.RunT(t)
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	q := NewQueue(asynq.RedisClientOpt{Addr: mini.Addr()}, cfg)
	t.Cleanup(func() { _ = q.Close() })
	return q, mini
}

// Enqueues that wait while one is on its way go out as one task naming each message, with each
// message's de-duplication key (when it has one: BotReplyToNew's have none) and its batch marker set in
// the same round trip; the reply of every message is then held (BotReplyInProgress), so a retry or the
// sweep queues no second task for it.
func TestConcurrentBotRepliesShareOneTask(t *testing.T) {
	q, mini := batchQueue(t)
	ctx := context.Background()
	// Warm: the queue's registration and the scripts.
	if _, err := q.BotReplyAndSet(ctx, "msg_warm", tk("warm"), "msg_warm", time.Hour); err != nil {
		t.Fatal(err)
	}
	hold := &holdFirstScript{release: openAtCleanup(t)}
	q.rdb.AddHook(hold)

	const n = 12
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	keyless := func(i int) bool { return i%3 == 2 } // a provider's inbound message, say
	enqueue := func(i int) {
		ids[i] = fmt.Sprintf("msg_%02d", i)
		if keyless(i) {
			errs[i] = q.BotReplyToNew(ctx, ids[i])
			return
		}
		var setErr error
		setErr, errs[i] = q.BotReplyAndSet(ctx, ids[i], tk(ids[i]), ids[i], time.Hour)
		if errs[i] == nil {
			errs[i] = setErr
		}
	}
	wg.Go(func() { enqueue(0) }) // its enqueue is held on its way
	// A bound for a loaded machine, not a measure.
	deadline := time.Now().Add(time.Minute)
	for len(q.bots.calls) != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // until the flusher has taken it
	}
	time.Sleep(20 * time.Millisecond)
	for i := 1; i < n; i++ {
		wg.Go(func() { enqueue(i) })
	}
	for len(q.bots.calls) != n-1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := len(q.bots.calls); got != n-1 {
		t.Fatalf("%d enqueues waiting, want %d", got, n-1)
	}
	hold.release.open()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", ids[i], err)
		}
	}

	// msg_00 went alone, as its own task; the eleven behind it as one batch, oldest first.
	if !mini.Exists(asynqTaskKey(QueueDefault, botReplyTaskID(ids[0]))) {
		t.Fatal("the first message has no task of its own")
	}
	batchID := botBatchTaskID(ids[1])
	info, err := q.inspector.GetTaskInfo(QueueDefault, batchID)
	if err != nil {
		t.Fatalf("batch task %s: %v", batchID, err)
	}
	var p BotRepliesPayload
	if err := json.Unmarshal(info.Payload, &p); err != nil || info.Type != TypeBotReplies {
		t.Fatalf("batch task %s %s: %v", info.Type, info.Payload, err)
	}
	if strings.Join(p.MessageIDs, ",") != strings.Join(ids[1:], ",") {
		t.Fatalf("batch names %v, want %v", p.MessageIDs, ids[1:])
	}
	pending, err := q.inspector.ListPendingTasks(QueueDefault)
	if err != nil || len(pending) != 3 { // warm-up, msg_00, the batch
		t.Fatalf("%d tasks pending (%v), want 3", len(pending), err)
	}
	for i, id := range ids[1:] {
		if keyless(i + 1) {
			if mini.Exists(tk(id)) {
				t.Fatalf("%s: a key set for an enqueue that named none", id)
			}
		} else if v, _ := mini.Get(tk(id)); v != id || mini.TTL(tk(id)) != time.Hour {
			t.Fatalf("%s: key %q, TTL %s", id, v, mini.TTL(tk(id)))
		}
		if v, _ := mini.Get(botBatchKey(id)); v != batchID {
			t.Fatalf("%s: marker %q, want %q", id, v, batchID)
		}
		if held, err := q.BotReplyInProgress(ctx, id); err != nil || !held {
			t.Fatalf("%s: held %v, %v", id, held, err)
		}
		// A sender's retry, or the sweep: the batch holds the reply, so no task of its own.
		if err := q.BotReplyUnlessHeld(ctx, id); err != nil {
			t.Fatal(err)
		}
		if mini.Exists(asynqTaskKey(QueueDefault, botReplyTaskID(id))) {
			t.Fatalf("%s: a second task beside its batch", id)
		}
	}

	// Once the batch is done (deleted, as asynq deletes a completed task), nothing holds the replies:
	// one still owed gets a task of its own.
	if err := q.inspector.DeleteTask(QueueDefault, batchID); err != nil {
		t.Fatal(err)
	}
	if held, err := q.BotReplyInProgress(ctx, ids[3]); err != nil || held {
		t.Fatalf("held %v, %v after the batch is gone", held, err)
	}
	if err := q.BotReplyUnlessHeld(ctx, ids[3]); err != nil {
		t.Fatal(err)
	}
	if !mini.Exists(asynqTaskKey(QueueDefault, botReplyTaskID(ids[3]))) {
		t.Fatal("an owed reply whose batch is gone got no task")
	}
	// That task owns the message now: the batch, were it run again (asynqmon's Run on an archived
	// task), would leave it to that task.
	if v, _ := mini.Get(botBatchKey(ids[3])); v != botReplyTaskID(ids[3]) {
		t.Fatalf("marker %q after the takeover, want %q", v, botReplyTaskID(ids[3]))
	}
	if owned, err := q.ownedByBatch(ctx, batchID, ids[3:5]); err != nil || owned[ids[3]] || !owned[ids[4]] {
		t.Fatalf("the gone batch owns %v (%v), want only %s", owned, err, ids[4])
	}

	// A keyless enqueue alone: its own task, as BotReply queues it.
	if err := q.BotReplyToNew(ctx, "msg_lone"); err != nil {
		t.Fatal(err)
	}
	if !mini.Exists(asynqTaskKey(QueueDefault, botReplyTaskID("msg_lone"))) || mini.Exists(botBatchKey("msg_lone")) {
		t.Fatal("a keyless message alone did not get a task of its own")
	}
}

// A batch whose enqueue fails leaves no key and no marker set, and every request of it gets the error.
func TestFailedBatchEnqueueSetsNothing(t *testing.T) {
	q, mini := batchQueue(t)
	drop := &dropScript{}
	q.rdb.AddHook(drop)
	drop.on.Store(true)
	batch := []*botEnqueue{
		{messageID: "msg_a", key: tk("a"), value: "msg_a", ttl: time.Hour, done: make(chan botEnqueued, 1)},
		{messageID: "msg_b", key: tk("b"), value: "msg_b", ttl: time.Hour, done: make(chan botEnqueued, 1)},
	}
	q.botsOnce.Do(func() { q.bots = newBotBatcher(q) })
	q.bots.flush(batch)
	for _, call := range batch {
		out := <-call.done
		if out.err == nil || !strings.Contains(out.err.Error(), "refused") {
			t.Fatalf("%s: enqueue %v", call.messageID, out.err)
		}
		if mini.Exists(call.key) || mini.Exists(botBatchKey(call.messageID)) {
			t.Fatalf("%s: key or marker set after a failed enqueue", call.messageID)
		}
	}
	if mini.Exists(asynqTaskKey(QueueDefault, botBatchTaskID("msg_a"))) {
		t.Fatal("the batch is queued")
	}
}

// A message whose try in a batch failed goes on in a task of its own, with the retries and the spacing
// left: Prior 1 makes the retry delays continue where the batch's try left off.
func TestBotRetryDelaysCountTheBatchsTry(t *testing.T) {
	delays := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	f := retryDelay([]time.Duration{time.Minute}, delays)
	alone, _ := json.Marshal(BotReplyPayload{MessageID: "m"})
	after, _ := json.Marshal(BotReplyPayload{MessageID: "m", Prior: 1})
	if d := f(0, fmt.Errorf("x"), asynq.NewTask(TypeBotReply, alone)); d != time.Second {
		t.Fatalf("first retry of a task alone: %s", d)
	}
	if d := f(0, fmt.Errorf("x"), asynq.NewTask(TypeBotReply, after)); d != 2*time.Second {
		t.Fatalf("first retry after a batch's try: %s", d)
	}
	if d := f(5, fmt.Errorf("x"), asynq.NewTask(TypeBotReply, after)); d != 3*time.Second {
		t.Fatalf("late retry: %s", d)
	}
}

// After Close, an enqueue answers at once that the queue is closed; Close twice is harmless.
func TestBotReplyAfterCloseAnswersAtOnce(t *testing.T) {
	q, _ := batchQueue(t)
	ctx := context.Background()
	if _, err := q.BotReplyAndSet(ctx, "msg_1", tk("k1"), "msg_1", time.Hour); err != nil {
		t.Fatal(err)
	}
	_ = q.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := q.BotReplyAndSet(ctx, "msg_2", tk("k2"), "msg_2", time.Hour); !errors.Is(err, errQueueClosed) {
		t.Fatalf("enqueue after Close: %v, want %v", err, errQueueClosed)
	}
	_ = q.Close()
}

// holdScripts is a pipeline hook that holds every script pipeline (an enqueue with its piggyback) until
// released, and says when each has gone on to Redis, or failed to.
type holdScripts struct {
	release *gate
	passed  chan error
}

func (h *holdScripts) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *holdScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *holdScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) < 2 || !isScriptCall(cmds[0]) {
			return next(ctx, cmds)
		}
		<-h.release.ch
		err := next(ctx, cmds)
		h.passed <- err
		return err
	}
}

// An enqueue whose caller has stopped waiting (answered its sender 503) is not made later: Redis held
// up (failing over, say) until the sender's retry has queued the reply in a task of its own, the
// batch's enqueue would land after it and the reply would be queued twice, in two tasks running side
// by side.
func TestAnEnqueueItsCallerGaveUpOnIsNotMadeLater(t *testing.T) {
	q, mini := batchQueue(t)
	ctx := context.Background()
	if _, err := q.BotReplyAndSet(ctx, "msg_warm", tk("warm"), "msg_warm", time.Hour); err != nil {
		t.Fatal(err)
	}
	hold := &holdScripts{release: openAtCleanup(t), passed: make(chan error, 1)}
	q.rdb.AddHook(hold)

	deadline := time.Now().Add(100 * time.Millisecond)
	waiting, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if _, err := q.BotReplyAndSet(waiting, "msg_late", tk("late"), "msg_late", time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("enqueue held past its caller's deadline: %v, want %v", err, context.DeadlineExceeded)
	}
	// Redis answers again, a moment after the caller's deadline: a context's deadline is noticed by a
	// timer of its own, which a loaded machine (or the race detector) can run a little late.
	time.Sleep(time.Until(deadline.Add(100 * time.Millisecond)))
	hold.release.open()
	if err := <-hold.passed; err == nil {
		t.Fatal("the enqueue went to Redis after its caller had given up")
	}
	if mini.Exists(asynqTaskKey(QueueDefault, botReplyTaskID("msg_late"))) || mini.Exists(tk("late")) {
		t.Fatal("the reply was queued after its caller had given up")
	}
}

func TestFlushDeadlineIsTheLastCallers(t *testing.T) {
	now := time.Now()
	at := func(d time.Duration) *botEnqueue { return &botEnqueue{deadline: now.Add(d)} }
	for _, tc := range []struct {
		batch []*botEnqueue
		want  time.Time
	}{
		{[]*botEnqueue{at(time.Second), at(2 * time.Second)}, now.Add(2 * time.Second)},
		{[]*botEnqueue{at(time.Second), {}}, now.Add(botBatchTimeout)},
		{[]*botEnqueue{at(time.Hour)}, now.Add(botBatchTimeout)},
	} {
		if got := flushDeadline(tc.batch, now); !got.Equal(tc.want) {
			t.Errorf("flushDeadline = %s after now, want %s", got.Sub(now), tc.want.Sub(now))
		}
	}
}

// A batch that an api of the release before the markers' rename queued is marked under the marker's
// earlier name (botbatch:<message id>): its messages' replies are held all the same, so that the
// sweep and a sender's retry do not queue a second task during the deploy.
func TestABatchMarkedUnderTheEarlierNameHoldsItsReplies(t *testing.T) {
	q, mini := batchQueue(t)
	ctx := context.Background()
	if err := q.BotReply(ctx, "msg_batch_head"); err != nil { // a task to stand for the batch's
		t.Fatal(err)
	}
	held, err := q.BotReplyInProgress(ctx, "msg_in_old_batch")
	if err != nil || held {
		t.Fatalf("unmarked: held %v, %v", held, err)
	}
	if err := mini.Set("botbatch:msg_in_old_batch", botReplyTaskID("msg_batch_head")); err != nil {
		t.Fatal(err)
	}
	if held, err := q.BotReplyInProgress(ctx, "msg_in_old_batch"); err != nil || !held {
		t.Fatalf("marked under the earlier name: held %v, %v; want held", held, err)
	}
}

// The sweep (or a sender's retry) queues a message's own task, and the api's batch enqueue of the same
// message lands after it, late (its ingest waited out a database outage): the batch does not take the
// message, so two tasks never answer it at once. Before the markers were claims, the sweep's check and
// its enqueue were two steps, the batch's marker overwrote nothing it should not, and both tasks
// answered: the receiver got the reply twice.
func TestALateBatchLeavesASweptReplyToItsOwnTask(t *testing.T) {
	q, mini := batchQueue(t)
	ctx := context.Background()
	if err := q.BotReplyUnlessHeld(ctx, "msg_swept"); err != nil {
		t.Fatal(err)
	}
	if !mini.Exists(asynqTaskKey(QueueDefault, botReplyTaskID("msg_swept"))) {
		t.Fatal("the sweep queued no task")
	}
	batch := []*botEnqueue{{messageID: "msg_other"}, {messageID: "msg_swept"}}
	if setErr, err := q.enqueueBatch(ctx, batch); err != nil || setErr != nil {
		t.Fatalf("enqueue the batch: %v, %v", err, setErr)
	}
	batchID := botBatchTaskID("msg_other")
	if v, _ := mini.Get(botBatchKey("msg_swept")); v != botReplyTaskID("msg_swept") {
		t.Errorf("the swept message's marker is %q, want its own task %q", v, botReplyTaskID("msg_swept"))
	}
	owned, err := q.ownedByBatch(ctx, batchID, []string{"msg_other", "msg_swept"})
	if err != nil {
		t.Fatal(err)
	}
	if owned["msg_swept"] || !owned["msg_other"] {
		t.Errorf("the batch owns %v, want msg_other only", owned)
	}
	// And the other way round: a retry of the batch's message finds it held, and queues nothing.
	if err := q.BotReplyUnlessHeld(ctx, "msg_other"); err != nil {
		t.Fatal(err)
	}
	if mini.Exists(asynqTaskKey(QueueDefault, botReplyTaskID("msg_other"))) {
		t.Error("a task of its own beside the batch that owns the message")
	}
	// A marker that expired (or a Redis that lost it) is claimed by the batch when it runs.
	mini.Del(botBatchKey("msg_other"))
	if owned, err := q.ownedByBatch(ctx, batchID, []string{"msg_other"}); err != nil || !owned["msg_other"] {
		t.Errorf("the batch does not own a message whose marker was gone: %v, %v", owned, err)
	}
	if v, _ := mini.Get(botBatchKey("msg_other")); v != batchID {
		t.Errorf("marker %q, want the batch's %q", v, batchID)
	}
}
