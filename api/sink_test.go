package api_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"funnelchat/config"
	"funnelchat/jobs"
)

// delivery is one request a sink received.
type delivery struct {
	Path   string
	Header http.Header
	Body   []byte
	At     time.Time
}

// sink is a real HTTP server standing for a customer's webhook endpoint. respond decides each answer
// (nil: 200); every request is recorded.
type sink struct {
	*httptest.Server
	mu       sync.Mutex
	received []delivery
	respond  func(n int, w http.ResponseWriter, r *http.Request)
}

func newSink(t testing.TB, respond func(n int, w http.ResponseWriter, r *http.Request)) *sink {
	t.Helper()
	s := &sink{respond: respond}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.received = append(s.received, delivery{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()})
		n := len(s.received)
		s.mu.Unlock()
		if s.respond != nil {
			s.respond(n, w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) deliveries() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.received...)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testWorkerEnv is the configuration every test worker starts from: short retries, loopback sinks
// allowed, a quick sweep.
var testWorkerEnv = []string{
	"WEBHOOK_ALLOW_PRIVATE=true",
	"WEBHOOK_RETRY_SCHEDULE=200ms,400ms,400ms,400ms",
	"WEBHOOK_TIMEOUT=2s",
	"SWEEP_INTERVAL=1s",
	"WORKER_CONCURRENCY=10",
}

// startWorker runs an in-process worker on the package's Redis until the test ends. Tasks left in
// the queues by earlier tests belong to their own accounts and do not disturb this one.
func startWorker(t testing.TB, overrides ...string) *jobs.Handler {
	t.Helper()
	return startWorkerWith(t, testLogger(t), overrides...)
}

// startWorkerWith is startWorker writing its logs to log.
func startWorkerWith(t testing.TB, log *slog.Logger, overrides ...string) *jobs.Handler {
	t.Helper()
	cfg, err := config.Load(env.Getenv(append(append([]string{}, testWorkerEnv...), overrides...)...))
	if err != nil {
		t.Fatal(err)
	}
	queue := jobs.NewQueue(env.Asynq, cfg)
	h := jobs.NewHandler(env.Store, cfg, log, queue, env.Redis)
	h.BotRetryDelays = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}
	w := jobs.NewWorker(env.Asynq, cfg, h, log)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Shutdown()
		_ = queue.Close()
	})
	return h
}

// messagingAccount creates an account whose reply webhook points at the sink and returns its key
// and signing secret.
func messagingAccount(t testing.TB, srv *server, hook *sink) (key, secret string) {
	t.Helper()
	_, key = newAccount(t)
	r := do(t, "PUT", srv.URL+"/v1/settings/webhook", key, map[string]any{"url": hook.URL + "/hook"})
	expect(t, r, http.StatusOK, "")
	secret, _ = r.JSON(t)["signingSecret"].(string)
	return key, secret
}

// incoming posts a custom-channel message and returns the response.
func incoming(t testing.TB, srv *server, key, sid, fromID, body string) response {
	t.Helper()
	return do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, map[string]any{
		"customData": map[string]any{"messageSid": sid, "fromId": fromID, "toId": "biz-1", "body": body, "channel": "live-chat"},
	})
}
