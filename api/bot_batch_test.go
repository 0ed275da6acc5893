package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/config"
	"funnelchat/jobs"
)

// Concurrent incoming messages share a bot reply task (a batch). A message whose try in its batch fails
// (the model answers 500 once) goes on in a task of its own and is answered once; the batch's other
// messages are answered once, by one call to the model each: the failure reruns nothing else.
func TestBatchedReplyFailsAlone(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)

	// Bursts of concurrent messages, no worker yet, until one burst forms a batch.
	senderOf, ids, batches := burstsUntilBatched(t, srv, key, "batch", func(burst, i int) string {
		kind := "steady"
		if i%2 == 0 {
			kind = "flaky"
		}
		return fmt.Sprintf("%s %d-%d", kind, burst, i)
	})
	batched := map[string]bool{}
	for _, p := range batches {
		for _, id := range p.MessageIDs {
			batched[id] = true
		}
	}

	// The model fails the first call for each "flaky" message, and answers every other call.
	var llm *fakeLLM
	calls := map[string]int{} // message body -> calls
	var callsMu sync.Mutex
	llm = newFakeLLM(t, func(n int) (int, map[string]any) {
		llm.mu.Lock()
		raw, _ := json.Marshal(llm.requests[n-1])
		llm.mu.Unlock()
		body := ""
		for _, kind := range []string{"flaky", "steady"} {
			if i := strings.LastIndex(string(raw), kind+" "); i >= 0 {
				body = string(raw[i:])[:strings.IndexAny(string(raw[i:]), `"\`)]
			}
		}
		callsMu.Lock()
		calls[body]++
		first := calls[body] == 1
		callsMu.Unlock()
		if strings.HasPrefix(body, "flaky") && first {
			return http.StatusInternalServerError, nil
		}
		return 200, map[string]any{"role": "assistant", "content": "answer to " + body}
	})
	logs := &logBuffer{}
	log := slog.New(jobs.NewLogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	startWorkerWith(t, log, "BOT_LLM_BASE_URL="+llm.URL+"/v1", "BOT_LLM_API_KEY=llm-key", "BOT_LLM_MODEL=test-model")

	waitAnswered(t, srv, key, ids)

	byRecipient := map[string]int{}
	for _, d := range hook.deliveries() {
		var p struct{ ToID, Body string }
		_ = json.Unmarshal(d.Body, &p)
		byRecipient[p.ToID]++
		if !strings.HasPrefix(p.Body, "answer to ") {
			t.Errorf("reply %q", p.Body)
		}
	}
	lines := logs.lines(t)
	for _, id := range ids {
		if n := byRecipient[senderOf[id]]; n != 1 {
			t.Errorf("%s: %d replies delivered, want 1", id, n)
		}
		body, _ := messageField(t, srv, key, id, "body").(string)
		callsMu.Lock()
		n := calls[body]
		callsMu.Unlock()
		want := 1
		if strings.HasPrefix(body, "flaky") {
			want = 2
		}
		if n != want {
			t.Errorf("%s (%q): %d calls to the model, want %d", id, body, n, want)
		}
		if !batched[id] || !strings.HasPrefix(body, "flaky") {
			continue
		}
		if find(lines, map[string]string{"msg": "bot reply failed in a batch; it goes on in a task of its own", "message_id": id}) == nil {
			t.Errorf("%s failed in its batch and was not handed to a task of its own", id)
		}
		if l := find(lines, map[string]string{"msg": "task", "task_type": jobs.TypeBotReply, "task_id": "bot:" + id}); l == nil || l["outcome"] != "ok" {
			t.Errorf("%s: its own task's log %v", id, l)
		}
	}
}

// Messages from a provider (here SMS, whose inbound webhook carries no key for the api's de-duplication
// fast path) are batched like the custom channel's: concurrent ones share a bot:replies task, and each
// sender gets exactly one reply. The provider's retry of a batched message while its batch waits queues
// no second task.
func TestConcurrentSMSInboundShareABatch(t *testing.T) {
	twilio := newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"sid":"SM%032d"}`, n)
	})
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	_, key := newAccount(t)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/channels/sms", key,
		map[string]any{"accountSid": "AC77", "authToken": "tok-77", "from": "+1 415 555 9000"}), http.StatusOK, "")
	inboundURL := srv.URL + "/v1/channels/sms/inbound"
	post := func(sid, from string) {
		form := url.Values{"MessageSid": {sid}, "AccountSid": {"AC77"}, "From": {from}, "To": {"+14155559000"}, "Body": {"hello"}}
		r := do(t, "POST", inboundURL, "", form.Encode(), "Content-Type: application/x-www-form-urlencoded",
			"X-Twilio-Signature: "+twilioSign("tok-77", inboundURL, form))
		expect(t, r, http.StatusOK, "")
	}

	// Bursts of concurrent messages, no worker yet, until one burst forms a batch.
	inspector := asynq.NewInspector(env.Asynq)
	defer inspector.Close()
	seen := map[string]bool{} // batches queued before (another test's)
	if pending, err := inspector.ListPendingTasks(jobs.QueueDefault, asynq.PageSize(1000)); err == nil {
		for _, task := range pending {
			seen[task.ID] = true
		}
	}
	var senders []string
	var batch *asynq.TaskInfo
	for burst := 0; burst < 10 && batch == nil; burst++ {
		var wg sync.WaitGroup
		for i := range 16 {
			from := fmt.Sprintf("+1415555%02d%02d", 10+burst, 10+i)
			senders = append(senders, from)
			wg.Go(func() { post(fmt.Sprintf("SMbatch%d-%d", burst, i), from) })
		}
		wg.Wait()
		pending, err := inspector.ListPendingTasks(jobs.QueueDefault, asynq.PageSize(1000))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range pending {
			if task.Type == jobs.TypeBotReplies && !seen[task.ID] {
				batch = task
			}
		}
	}
	if batch == nil {
		t.Fatal("no burst of 16 concurrent SMS formed a batch")
	}
	before, err := inspector.ListPendingTasks(jobs.QueueDefault, asynq.PageSize(1000))
	if err != nil {
		t.Fatal(err)
	}
	// Twilio retries the last burst's first message: stored already, its reply owed and held.
	post(fmt.Sprintf("SMbatch%d-%d", len(senders)/16-1, 0), senders[len(senders)-16])
	if after, err := inspector.ListPendingTasks(jobs.QueueDefault, asynq.PageSize(1000)); err != nil || len(after) != len(before) {
		t.Fatalf("%d tasks pending after a retry, %d before (%v): want no new task", len(after), len(before), err)
	}

	startWorker(t, "SMS_API_BASE_URL="+twilio.URL)
	waitFor(t, 30*time.Second, "an SMS reply to every sender", func() bool { return len(twilio.deliveries()) >= len(senders) })
	waitDrained(t, mustAccountID(t, key), retryHorizon) // a second reply, if one were coming, would still be in a task
	to := map[string]int{}
	for _, d := range twilio.deliveries() {
		form, _ := url.ParseQuery(string(d.Body))
		to[form.Get("To")]++
	}
	for _, from := range senders {
		if to[from] != 1 {
			t.Errorf("%s: %d replies, want 1", from, to[from])
		}
	}
	if len(to) != len(senders) {
		t.Errorf("replies to %d numbers, want the %d senders", len(to), len(senders))
	}
}

// The sweep finds a message owed its reply and queues the message's own task while the message's batch
// is still queued (the api's batch enqueue landed late, after its ingest waited out a database outage,
// and found the message's marker gone or claimed): the batch leaves the message to that task, so one
// task answers it, and its sender gets one reply.
func TestABatchLeavesToItsOwnTaskAMessageTheSweepClaimed(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	inspector := asynq.NewInspector(env.Asynq)
	defer inspector.Close()
	senderOf, ids, batches := burstsUntilBatched(t, srv, key, "claimed", func(int, int) string { return "hello" })
	batch := batches[0]
	claimed := batch.MessageIDs[1]
	// As the sweep finds it: no marker (the batch's had not landed when it looked), so it claims the
	// message and queues its own task, through the same call the sweep makes.
	ctx := context.Background()
	if err := env.Redis.Del(ctx, jobs.BesideBotReplies("botbatch:", claimed)).Err(); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(env.Getenv(testWorkerEnv...))
	if err != nil {
		t.Fatal(err)
	}
	queue := jobs.NewQueue(env.Asynq, cfg)
	defer queue.Close()
	if err := queue.BotReplyUnlessHeld(ctx, claimed); err != nil {
		t.Fatal(err)
	}
	if _, err := inspector.GetTaskInfo(jobs.QueueDefault, "bot:"+claimed); err != nil {
		t.Fatalf("the sweep's task for %s: %v", claimed, err)
	}

	logs := &logBuffer{}
	startWorkerWith(t, slog.New(jobs.NewLogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	waitAnswered(t, srv, key, ids)
	byRecipient := map[string]int{}
	for _, d := range hook.deliveries() {
		var p struct{ ToID string }
		_ = json.Unmarshal(d.Body, &p)
		byRecipient[p.ToID]++
	}
	for id, sender := range senderOf {
		if n := byRecipient[sender]; n != 1 {
			t.Errorf("%s: %d replies delivered, want 1", id, n)
		}
	}
	lines := logs.lines(t)
	if find(lines, map[string]string{"msg": "bot reply left to its own task", "message_id": claimed}) == nil {
		t.Errorf("the batch did not leave %s to the sweep's task", claimed)
	}
	if l := find(lines, map[string]string{"msg": "task", "task_type": jobs.TypeBotReply, "task_id": "bot:" + claimed}); l == nil || l["outcome"] != "ok" {
		t.Errorf("%s: its own task's log %v", claimed, l)
	}
}

// burstsUntilBatched posts bursts of 16 concurrent messages (body gives each one's text), with no worker
// running, until a burst forms a batch: the api batches the enqueues that wait while one is on its way to
// Redis, so a burst of 16 all but always does. It returns each message's sender (whom its reply goes
// to), the messages' ids, and the batches of these messages pending.
func burstsUntilBatched(t *testing.T, srv *server, key, name string, body func(burst, i int) string) (map[string]string, []string, []jobs.BotRepliesPayload) {
	t.Helper()
	inspector := asynq.NewInspector(env.Asynq)
	defer inspector.Close()
	senderOf := map[string]string{}
	var ids []string
	var batches []jobs.BotRepliesPayload
	for burst := 0; burst < 10 && len(batches) == 0; burst++ {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				sender := fmt.Sprintf("%s-sender-%d-%d", name, burst, i)
				r := incoming(t, srv, key, fmt.Sprintf("%s-%d-%d", name, burst, i), sender, body(burst, i))
				expect(t, r, http.StatusOK, "")
				id := r.JSON(t)["messageId"].(string)
				mu.Lock()
				ids = append(ids, id)
				senderOf[id] = sender
				mu.Unlock()
			})
		}
		wg.Wait()
		pending, err := inspector.ListPendingTasks(jobs.QueueDefault, asynq.PageSize(1000))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range pending {
			var p jobs.BotRepliesPayload
			if task.Type != jobs.TypeBotReplies {
				continue
			}
			if err := json.Unmarshal(task.Payload, &p); err != nil || len(p.MessageIDs) < 2 {
				t.Fatalf("batch %s: %s (%v)", task.ID, task.Payload, err)
			}
			if senderOf[p.MessageIDs[0]] != "" { // this test's, not an earlier test's left in the queue
				batches = append(batches, p)
			}
		}
	}
	if len(batches) == 0 {
		t.Fatal("no burst of 16 concurrent messages formed a batch")
	}
	return senderOf, ids, batches
}

// waitAnswered waits until the bot has answered every message of ids, and then until the account's
// tasks are drained: a second reply, if one were coming, would still be in a task.
func waitAnswered(t *testing.T, srv *server, key string, ids []string) {
	t.Helper()
	waitFor(t, 30*time.Second, "every message answered", func() bool {
		for _, id := range ids {
			if messageField(t, srv, key, id, "botStatus") != "done" {
				return false
			}
		}
		return true
	})
	waitDrained(t, mustAccountID(t, key), retryHorizon)
}
