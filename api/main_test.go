package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"funnelchat/api"
	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
	"funnelchat/models/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// As in production (cmd/api), the api authenticates through the key cache in Redis, and changes
	// are published for live listeners.
	code := testenv.Main(m, &env, func() error {
		env.Store.UseKeyCache(env.Redis)
		env.Store.UseEvents(models.NewRedisEvents(env.Redis, nil))
		// Campaign tests send at whatever hour they run; quiet hours are tested with accounts that set
		// their own (consent tests), never with the operator's default, which depends on the clock.
		env.Store.SetDefaultQuietHours(nil)
		return nil
	})
	closeChromium()
	os.Exit(code)
}

// server is a real api server on a loopback port, backed by the package's database and Redis.
type server struct {
	*api.Server
	URL string
	cfg *config.Config
}

// startServer runs an api server with REQUIRE_HTTPS off unless overridden ("KEY=VALUE" pairs).
func startServer(t testing.TB, overrides ...string) *server {
	t.Helper()
	return startServerWith(t, testLogger(t), overrides...)
}

// startServerWith is startServer writing its logs to log.
func startServerWith(t testing.TB, log *slog.Logger, overrides ...string) *server {
	t.Helper()
	cfg, err := config.Load(env.Getenv(append([]string{"REQUIRE_HTTPS=false"}, overrides...)...))
	if err != nil {
		t.Fatal(err)
	}
	queue := jobs.NewQueue(env.Asynq, cfg)
	t.Cleanup(func() { _ = queue.Close() })
	srv := api.New(api.Deps{Config: cfg, Store: env.Store, Redis: env.Redis, Queue: queue, Logger: log, AsynqRedis: env.Asynq})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		// A keep-alive connection the client dialed but never used holds fasthttp's graceful shutdown
		// until its deadline; close the client's side first.
		httpClient.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	scheme := "http"
	if cfg.TLSEnabled() {
		scheme = "https"
	}
	return &server{Server: srv, URL: scheme + "://" + ln.Addr().String(), cfg: cfg}
}

// testLogger writes the warnings and errors of a server or worker that t starts to t's log, which go
// test prints when t fails (and with -v): the cause of an unexpected 500 is then in the failure's output.
// Info lines (one per request and per task) stay out. Each test starts its own servers, so each has its
// own logger; the context's attributes (request_id, task_id) are added as in production (cmd/api).
func testLogger(t testing.TB) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(jobs.NewLogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// testLogWriter passes each line (a slog handler writes a record in one call) to t.Log until the test
// ends. Goroutines of the server and the worker (batchers, asynq's processor) can still log after that,
// and a t.Log after the test has completed panics; stop, under the same lock as the writes, ends them.
// The cleanup is registered before the server's and the worker's, so it runs after their shutdown and
// what they log while stopping is kept.
type testLogWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLogWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.done = true
}

var accountSeq atomic.Int64

// newAccount creates an account with a unique email and returns it with its raw API key.
func newAccount(t testing.TB) (*models.Account, string) {
	t.Helper()
	email := fmt.Sprintf("owner%d-%d@example.com", time.Now().UnixNano(), accountSeq.Add(1))
	created, err := env.Store.CreateAccount(context.Background(), models.NewAccount{Email: email})
	if err != nil {
		t.Fatal(err)
	}
	return created.Account, created.APIKey
}

// response is what a test reads back from the server.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map, failing the test with the body shown when it is not an object.
func (r response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v\n%s", err, r.Body)
	}
	return m
}

// errorCode returns error.code of an object-form error body.
func (r response) errorCode(t testing.TB) string {
	t.Helper()
	e, ok := r.JSON(t)["error"].(map[string]any)
	if !ok {
		t.Fatalf("not an object-form error: %s", r.Body)
	}
	code, _ := e["code"].(string)
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("error without a message: %s", r.Body)
	}
	return code
}

// do sends a request. body is sent as is when it is a string or []byte, else JSON-encoded; headers are
// "Name: value" strings. A key given is sent as x-api-key. A request to the api server and its response
// are checked against the OpenAPI document (checkContract): a mismatch fails the test.
func do(t testing.TB, method, url, key string, body any, headers ...string) response {
	t.Helper()
	var payload []byte
	switch b := body.(type) {
	case nil:
	case string:
		payload = []byte(b)
	case []byte:
		payload = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		payload = raw
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := response{Status: res.StatusCode, Header: res.Header, Body: raw}
	checkContract(t, req, payload, r)
	return r
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// postRaw posts body as JSON with the key, for bodies no document describes (fuzzed bytes, an endless
// stream): the request is not checked against the OpenAPI document, the answer is (checkResponse). An
// answer cut off before its end is an error. The caller closes the response body.
func postRaw(t testing.TB, url, key string, body io.Reader) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest("POST", url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	res, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	r, err := readChecked(t, req, res)
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(r.Body))
	return res, nil
}

// readChecked reads res, the answer to req, to its end and closes it; the answer is checked against
// the OpenAPI document (checkResponse), the request is not. For the tests' own clients and raw
// connections; do checks the request too.
func readChecked(t testing.TB, req *http.Request, res *http.Response) (response, error) {
	t.Helper()
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, fmt.Errorf("reading the body of a %d: %w", res.StatusCode, err)
	}
	r := response{Status: res.StatusCode, Header: res.Header, Body: raw}
	checkResponse(t, req, r)
	return r, nil
}

// expect fails the test unless the response has the status (and, for errors, the code).
func expect(t testing.TB, r response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
	if code != "" {
		if got := r.errorCode(t); got != code {
			t.Fatalf("error code %q, want %q; body: %s", got, code, r.Body)
		}
	}
}
