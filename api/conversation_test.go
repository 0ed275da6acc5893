package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"funnelchat/api"
	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

// messageField reads one field of GET /v1/messages/{id}.
func messageField(t *testing.T, srv *server, key, id, field string) any {
	t.Helper()
	return do(t, "GET", srv.URL+"/v1/messages/"+id, key, nil).JSON(t)[field]
}

func TestOfflineBotHandsOffToAHuman(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	replies, alerts := newSink(t, nil), newSink(t, nil)
	key, secret := messagingAccount(t, srv, replies)
	r := do(t, "PUT", srv.URL+"/v1/settings/alert_webhook", key, map[string]any{"url": alerts.URL + "/alerts"})
	expect(t, r, http.StatusOK, "")
	if r.JSON(t)["url"] != alerts.URL+"/alerts" {
		t.Fatalf("alert webhook: %s", r.Body)
	}

	first := incoming(t, srv, key, "h-1", "frank", "Can I talk to a HUMAN please?").JSON(t)["messageId"].(string)
	waitFor(t, 10*time.Second, "the alert webhook", func() bool { return len(alerts.deliveries()) == 1 })
	d := alerts.deliveries()[0]
	wh, _ := standardwebhooks.NewWebhook(secret)
	if err := wh.Verify(d.Body, d.Header); err != nil {
		t.Fatalf("alert signature: %v", err)
	}
	var alert map[string]any
	_ = json.Unmarshal(d.Body, &alert)
	contactID, _ := messageField(t, srv, key, first, "contactId").(string)
	if alert["alertId"] == nil || alert["contactId"] != contactID || alert["messageId"] != first || alert["reason"] == "" || alert["createdAt"] == nil {
		t.Fatalf("alert payload: %s", d.Body)
	}
	list := do(t, "GET", srv.URL+"/v1/alerts", key, nil).JSON(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != alert["alertId"] {
		t.Fatalf("GET /alerts: %v", list)
	}
	if got := messageField(t, srv, key, first, "botStatus"); got != "handoff" {
		t.Fatalf("botStatus %v, want handoff", got)
	}

	// The contact heard that a person is coming (the account's hand-off message), once.
	waitFor(t, 10*time.Second, "the hand-off message", func() bool { return len(replies.deliveries()) == 1 })
	var said map[string]any
	_ = json.Unmarshal(replies.deliveries()[0].Body, &said)
	if said["body"] != models.DefaultHandoffMessage {
		t.Fatalf("hand-off message %v", said)
	}
	// The bot stays quiet for this contact until someone resumes it.
	second := incoming(t, srv, key, "h-2", "frank", "hello?").JSON(t)["messageId"].(string)
	waitFor(t, 10*time.Second, "the paused bot to skip", func() bool { return messageField(t, srv, key, second, "botStatus") == "skipped" })
	if n := len(replies.deliveries()); n != 1 {
		t.Fatalf("%d replies while handed off, want only the hand-off message", n)
	}
	r = do(t, "PUT", srv.URL+"/v1/contacts/"+contactID+"/bot", key, map[string]any{"active": true})
	expect(t, r, http.StatusOK, "")
	if r.JSON(t)["active"] != true {
		t.Fatalf("resume: %s", r.Body)
	}
	incoming(t, srv, key, "h-3", "frank", "are you there?")
	waitFor(t, 10*time.Second, "a reply after resuming", func() bool { return len(replies.deliveries()) == 2 })

	t.Run("another account sees no alerts of this one", func(t *testing.T) {
		_, other := newAccount(t)
		if list := do(t, "GET", srv.URL+"/v1/alerts", other, nil).JSON(t)["data"].([]any); len(list) != 0 {
			t.Fatalf("alerts leaked: %v", list)
		}
	})
}

func TestHumanReplyPausesTheBot(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	first := incoming(t, srv, key, "p-1", "gina", "hi").JSON(t)["messageId"].(string)
	waitFor(t, 10*time.Second, "the bot's reply", func() bool { return len(hook.deliveries()) == 1 })
	contactID := messageField(t, srv, key, first, "contactId").(string)

	r := do(t, "POST", srv.URL+"/v1/contacts/"+contactID+"/messages", key, map[string]any{"body": "Hi Gina, Sam from the team here."})
	expect(t, r, http.StatusCreated, "")
	m := r.JSON(t)
	if m["direction"] != "outgoing" || m["authorType"] != "human" || m["channel"] != "live-chat" || m["status"] != "pending" {
		t.Fatalf("human reply: %s", r.Body)
	}
	waitFor(t, 10*time.Second, "the human reply at the sink", func() bool { return len(hook.deliveries()) == 2 })
	var payload map[string]any
	_ = json.Unmarshal(hook.deliveries()[1].Body, &payload)
	if payload["toId"] != "gina" || payload["body"] != "Hi Gina, Sam from the team here." || payload["channel"] != "live-chat" {
		t.Fatalf("payload: %v", payload)
	}
	next := incoming(t, srv, key, "p-2", "gina", "thanks Sam").JSON(t)["messageId"].(string)
	waitFor(t, 10*time.Second, "the bot to stay quiet", func() bool { return messageField(t, srv, key, next, "botStatus") == "skipped" })
	if n := len(hook.deliveries()); n != 2 {
		t.Fatalf("%d deliveries, want 2 (no bot reply after a human one)", n)
	}

	apiContact := newContact(t, srv, key, "+14155550190")
	bad := []struct {
		name, method, path string
		body               any
		status             int
	}{
		{"empty body", "POST", "/v1/contacts/" + contactID + "/messages", map[string]any{"body": "  "}, 400},
		{"body not a string", "POST", "/v1/contacts/" + contactID + "/messages", map[string]any{"body": 1}, 400},
		{"unknown contact", "POST", "/v1/contacts/ct_nope/messages", map[string]any{"body": "hi"}, 404},
		{"contact never written to and never writing", "POST", "/v1/contacts/" + apiContact + "/messages", map[string]any{"body": "hi"}, 409},
		{"bot switch without active", "PUT", "/v1/contacts/" + contactID + "/bot", map[string]any{}, 400},
		{"bot switch with a string", "PUT", "/v1/contacts/" + contactID + "/bot", map[string]any{"active": "yes"}, 400},
		{"bot switch of an unknown contact", "PUT", "/v1/contacts/ct_nope/bot", map[string]any{"active": true}, 404},
		{"messages of an unknown contact", "GET", "/v1/contacts/ct_nope/messages", nil, 404},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, srv.URL+tc.path, key, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
		})
	}
	t.Run("another account cannot read or write the conversation", func(t *testing.T) {
		_, other := newAccount(t)
		expect(t, do(t, "GET", srv.URL+"/v1/contacts/"+contactID+"/messages", other, nil), 404, models.CodeNotFound)
		expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+contactID+"/messages", other, map[string]any{"body": "hi"}), 404, models.CodeNotFound)
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+contactID+"/bot", other, map[string]any{"active": true}), 404, models.CodeNotFound)
		expect(t, do(t, "GET", srv.URL+"/v1/messages/"+first, other, nil), 404, models.CodeNotFound)
	})
}

// fakeLLM is an OpenAI-compatible chat-completions server; answer returns the assistant message
// (content or tool call) or an HTTP status to fail with.
type fakeLLM struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]any
}

func newFakeLLM(t *testing.T, answer func(n int) (status int, message map[string]any)) *fakeLLM {
	t.Helper()
	f := &fakeLLM{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer llm-key" {
			http.Error(w, "unexpected request "+r.URL.Path, http.StatusNotFound)
			return
		}
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.requests = append(f.requests, req)
		n := len(f.requests)
		f.mu.Unlock()
		status, msg := answer(n)
		if status != http.StatusOK {
			http.Error(w, `{"error":{"message":"overloaded"}}`, status)
			return
		}
		finish := "stop"
		if msg["tool_calls"] != nil {
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req["model"],
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeLLM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func llmWorker(t *testing.T, llm *fakeLLM) {
	t.Helper()
	startWorker(t, "BOT_LLM_BASE_URL="+llm.URL+"/v1", "BOT_LLM_API_KEY=llm-key", "BOT_LLM_MODEL=test-model")
}

func TestLLMBot(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")

	t.Run("the model's answer is delivered", func(t *testing.T) {
		llm := newFakeLLM(t, func(int) (int, map[string]any) {
			return 200, map[string]any{"role": "assistant", "content": "  We ship to Canada in 3-5 days.  "}
		})
		llmWorker(t, llm)
		hook := newSink(t, nil)
		key, _ := messagingAccount(t, srv, hook)
		incoming(t, srv, key, "llm-1", "hank", "Do you ship to Canada?")
		waitFor(t, 10*time.Second, "the reply", func() bool { return len(hook.deliveries()) == 1 })
		var payload map[string]any
		_ = json.Unmarshal(hook.deliveries()[0].Body, &payload)
		if payload["body"] != "We ship to Canada in 3-5 days." {
			t.Fatalf("reply body %q", payload["body"])
		}
		req := llm.requests[0]
		msgs, _ := req["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		if req["model"] != "test-model" || last["role"] != "user" || !strings.Contains(last["content"].(string), "Canada") {
			t.Fatalf("LLM request: %v", req)
		}
		if tools, _ := req["tools"].([]any); len(tools) != 2 || !strings.Contains(mustJSON(tools), "handoff_to_human") || !strings.Contains(mustJSON(tools), `"opt_out"`) {
			t.Fatalf("handoff tool not offered: %v", req["tools"])
		}
	})

	t.Run("a handoff_to_human tool call raises an alert", func(t *testing.T) {
		llm := newFakeLLM(t, func(int) (int, map[string]any) {
			return 200, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function",
				"function": map[string]any{"name": "handoff_to_human", "arguments": `{"reason":"wants a refund"}`},
			}}}
		})
		llmWorker(t, llm)
		hook := newSink(t, nil)
		key, _ := messagingAccount(t, srv, hook)
		id := incoming(t, srv, key, "llm-2", "ivy", "I want my money back").JSON(t)["messageId"].(string)
		waitFor(t, 10*time.Second, "the handoff", func() bool { return messageField(t, srv, key, id, "botStatus") == "handoff" })
		list := do(t, "GET", srv.URL+"/v1/alerts", key, nil).JSON(t)["data"].([]any)
		if len(list) != 1 || !strings.Contains(list[0].(map[string]any)["reason"].(string), "wants a refund") {
			t.Fatalf("alerts: %v", list)
		}
		// The model's text is not sent; the contact hears the account's hand-off message, once.
		waitFor(t, 10*time.Second, "the hand-off message", func() bool { return len(hook.deliveries()) >= 1 })
		var said map[string]any
		_ = json.Unmarshal(hook.deliveries()[0].Body, &said)
		if n := len(hook.deliveries()); n != 1 || said["body"] != models.DefaultHandoffMessage {
			t.Fatalf("%d messages sent on a hand-off (first %v), want only the hand-off message", n, said)
		}
	})

	t.Run("a goal_reached tool call records the goal once and still sends the text", func(t *testing.T) {
		llm := newFakeLLM(t, func(int) (int, map[string]any) {
			return 200, map[string]any{"role": "assistant", "content": "You're booked for Tuesday!", "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function",
				"function": map[string]any{"name": "goal_reached", "arguments": `{"summary":"booked a demo for Tuesday"}`},
			}}}
		})
		llmWorker(t, llm)
		hook := newSink(t, nil)
		key, _ := messagingAccount(t, srv, hook)
		if r := do(t, "PUT", srv.URL+"/v1/settings/bot", key, map[string]any{"goal": "Book a demo call."}); r.Status != http.StatusOK {
			t.Fatalf("bot settings: %d %s", r.Status, r.Body)
		}
		first := incoming(t, srv, key, "llm-goal-1", "gina", "Tuesday 10am works").JSON(t)
		waitFor(t, 10*time.Second, "the reply", func() bool { return len(hook.deliveries()) == 1 })
		incoming(t, srv, key, "llm-goal-2", "gina", "See you then")
		waitFor(t, 10*time.Second, "the second reply", func() bool { return len(hook.deliveries()) == 2 })
		if tools := mustJSON(llm.requests[0]["tools"]); !strings.Contains(tools, `"goal_reached"`) {
			t.Fatalf("goal_reached not offered with a goal: %s", tools)
		}
		acc, err := env.Store.Authenticate(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		contactID, _ := messageField(t, srv, key, first["messageId"].(string), "contactId").(string)
		goals, err := env.Store.GoalsOf(context.Background(), acc.ID, contactID)
		if err != nil {
			t.Fatal(err)
		}
		if len(goals) != 1 || goals[0].Source != models.GoalSourceBot || goals[0].Summary != "booked a demo for Tuesday" || goals[0].CampaignID != nil {
			t.Fatalf("goals %+v, want one from the bot for the account's own bot", goals)
		}
		var payload map[string]any
		_ = json.Unmarshal(hook.deliveries()[0].Body, &payload)
		if payload["body"] != "You're booked for Tuesday!" {
			t.Fatalf("reply body %q", payload["body"])
		}
	})

	t.Run("a model that keeps failing is retried, then the team is alerted", func(t *testing.T) {
		llm := newFakeLLM(t, func(int) (int, map[string]any) { return http.StatusInternalServerError, nil })
		llmWorker(t, llm)
		hook := newSink(t, nil)
		key, _ := messagingAccount(t, srv, hook)
		id := incoming(t, srv, key, "llm-3", "jack", "hello").JSON(t)["messageId"].(string)
		waitFor(t, 15*time.Second, "the bot to give up", func() bool { return messageField(t, srv, key, id, "botStatus") == "failed" })
		if n := llm.count(); n != 4 {
			t.Fatalf("%d model calls, want 4 (1 + 3 retries)", n)
		}
		list := do(t, "GET", srv.URL+"/v1/alerts", key, nil).JSON(t)["data"].([]any)
		if len(list) != 1 || !strings.Contains(list[0].(map[string]any)["reason"].(string), "could not answer") {
			t.Fatalf("alerts: %v", list)
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSweepDeliversWorkThatWasNeverQueued(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	acc, err := env.Store.Authenticate(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	// Stored as the api stores them, but never enqueued: as if Redis had failed right after the commit.
	in := models.IncomingInput{ExternalID: "lost-1", FromID: "kim", ToID: "biz", Body: "anyone?"}
	if err := in.Validate(1 << 20); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Store.IngestIncoming(context.Background(), acc.ID, in); err != nil {
		t.Fatal(err)
	}
	send := models.CustomSendInput{FromID: "lee", Channel: "chat", Body: "your order shipped"}
	if err := send.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Store.SendCustom(context.Background(), acc.ID, send); err != nil {
		t.Fatal(err)
	}
	startWorker(t) // SWEEP_INTERVAL=1s: work older than 2 s is re-enqueued
	waitFor(t, 20*time.Second, "the sweep to deliver both", func() bool { return len(hook.deliveries()) == 2 })
	bodies := string(hook.deliveries()[0].Body) + string(hook.deliveries()[1].Body)
	if !strings.Contains(bodies, `"toId":"kim"`) || !strings.Contains(bodies, `"toId":"lee"`) {
		t.Fatalf("deliveries: %s", bodies)
	}
}

// A task that asynq archived while the database still says its work is owed (it killed every worker
// that took it, or ran out of retries some other way) is left archived: queued again by the sweep, a
// task that kills workers would take them down on every pass. Its id stays taken, so the sweep's
// enqueue used to do nothing and log the work as "enqueued", every pass. The sweep now names the
// archived tasks in a warning, and an operator's run from the Archived tab (asynq's RunTask, as
// asynqmon does it) completes the work: here a bot reply's own task and a delivery's.
func TestSweepNamesOwedWorkLeftInArchivedTasks(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	// No worker runs yet: the tasks wait in their queues. A message alone is queued as its own task.
	r := incoming(t, srv, key, "archived-1", "ari", "is anyone there?")
	expect(t, r, http.StatusOK, "")
	in := r.JSON(t)["messageId"].(string)
	r = do(t, "POST", srv.URL+"/v1/send_custom_channel_message", key,
		map[string]any{"customData": map[string]any{"fromId": "lee", "customChannel": "chat", "body": "your order shipped"}})
	expect(t, r, http.StatusCreated, "")
	out := r.JSON(t)["messageId"].(string)
	inspector := asynq.NewInspector(env.Asynq)
	defer inspector.Close()
	archived := map[string]string{"bot:" + in: jobs.QueueDefault}
	if err := inspector.ArchiveTask(jobs.QueueDefault, "bot:"+in); err != nil {
		t.Fatal(err)
	}
	deliveries, err := inspector.ListPendingTasks(jobs.QueueDeliveries)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range deliveries {
		if strings.HasPrefix(task.ID, "deliver:"+out+":") {
			if err := inspector.ArchiveTask(jobs.QueueDeliveries, task.ID); err != nil {
				t.Fatal(err)
			}
			archived[task.ID] = jobs.QueueDeliveries
		}
	}
	if len(archived) != 2 {
		t.Fatalf("archived %v, want the bot task and one delivery task", archived)
	}

	logs := &logBuffer{}
	startWorkerWith(t, slog.New(jobs.NewLogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})))) // SWEEP_INTERVAL=1s
	named := func() bool {
		for _, l := range logs.lines(t) {
			ids, _ := l["task_ids"].([]any)
			found := 0
			for _, id := range ids {
				if _, ok := archived[id.(string)]; ok {
					found++
				}
			}
			if strings.HasPrefix(l["msg"].(string), "sweep: owed work waits in archived tasks") && found == len(archived) {
				return true
			}
		}
		return false
	}
	waitFor(t, 20*time.Second, "the sweep to name both archived tasks", named)
	if n := len(hook.deliveries()); n != 0 {
		t.Fatalf("%d deliveries while the tasks were archived, want 0", n)
	}
	for id, queue := range archived {
		if info, err := inspector.GetTaskInfo(queue, id); err != nil || info.State != asynq.TaskStateArchived {
			t.Fatalf("%s: %v (err %v), want still archived", id, info, err)
		}
	}

	// The operator runs them again.
	for id, queue := range archived {
		if err := inspector.RunTask(queue, id); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 20*time.Second, "the reply and the delivery", func() bool { return len(hook.deliveries()) == 2 })
	bodies := string(hook.deliveries()[0].Body) + string(hook.deliveries()[1].Body)
	if !strings.Contains(bodies, `"toId":"ari"`) || !strings.Contains(bodies, `"toId":"lee"`) {
		t.Fatalf("deliveries: %s", bodies)
	}
	// The offline bot's reply goes out before it is stored (jobs.Handler.sendsBeforeStoring), so the
	// message is marked answered a moment after the receiver has the reply.
	waitFor(t, 10*time.Second, "the message marked answered", func() bool { return messageField(t, srv, key, in, "botStatus") == "done" })
}

func TestRedisDownAnswers503AndTheRetryCompletesTheWork(t *testing.T) {
	// An api whose Redis is unreachable: nothing listens on the address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cfg, err := config.Load(env.Getenv("REQUIRE_HTTPS=false", "WEBHOOK_ALLOW_PRIVATE=true"))
	if err != nil {
		t.Fatal(err)
	}
	deadRedis := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1})
	deadQueue := jobs.NewQueue(asynq.RedisClientOpt{Addr: dead}, cfg)
	t.Cleanup(func() { deadRedis.Close(); deadQueue.Close() })
	down := api.New(api.Deps{Config: cfg, Store: env.Store, Redis: deadRedis, Queue: deadQueue, Logger: testLogger(t)})
	dl, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() { _ = down.Serve(dl) }()
	t.Cleanup(func() { httpClient.CloseIdleConnections(); _ = down.Shutdown(context.Background()) })
	downURL := "http://" + dl.Addr().String()

	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)

	r := incoming(t, &server{URL: downURL}, key, "outage-1", "mia", "hello during the outage")
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", r.Status, r.Body)
	}
	if msg, ok := r.JSON(t)["error"].(string); !ok || msg == "" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("want the string error form with Retry-After: %v %s", r.Header, r.Body)
	}

	startWorker(t, "SWEEP_INTERVAL=1h") // only the client's retry can bring the reply now
	retry := incoming(t, srv, key, "outage-1", "mia", "hello during the outage")
	expect(t, retry, http.StatusOK, "")
	if retry.JSON(t)["duplicate"] != true {
		t.Fatalf("the retry should find the stored message: %s", retry.Body)
	}
	waitFor(t, 10*time.Second, "the reply after the retry", func() bool { return len(hook.deliveries()) == 1 })
	n, err := env.Store.DB().NewSelect().TableExpr("messages").Where("external_id = ?", "outage-1").Count(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("%d messages stored (err %v), want 1", n, err)
	}
}
