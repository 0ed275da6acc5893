package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"funnelchat/jobs"
)

// logBuffer collects the JSON lines the api and the worker write.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines parses every line, failing the test on one that is not a JSON object.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	raw := b.buf.String()
	b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, line)
		}
		out = append(out, m)
	}
	return out
}

func (b *logBuffer) text() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// find returns the first line with every given field value, or nil.
func find(lines []map[string]any, fields map[string]string) map[string]any {
	for _, l := range lines {
		match := true
		for k, v := range fields {
			if s, _ := l[k].(string); s != v {
				match = false
				break
			}
		}
		if match {
			return l
		}
	}
	return nil
}

func TestLogsAreStructuredAndKeepSecretsOut(t *testing.T) {
	out := &logBuffer{}
	log := slog.New(jobs.NewLogHandler(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo})))
	srv := startServerWith(t, log, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorkerWith(t, log)
	hook := newSink(t, nil)
	key, secret := messagingAccount(t, srv, hook)

	const question = "what does the premium plan cost, zebra-7d1f"
	r := incoming(t, srv, key, "log-sid-1", "log-visitor", question)
	expect(t, r, http.StatusOK, "")
	messageID, _ := r.JSON(t)["messageId"].(string)
	waitFor(t, 10*time.Second, "the reply", func() bool { return len(hook.deliveries()) == 1 })
	var reply struct {
		MessageID string `json:"messageId"`
		Body      string `json:"body"`
	}
	if err := json.Unmarshal(hook.deliveries()[0].Body, &reply); err != nil {
		t.Fatal(err)
	}
	// The worker writes its line for a task after the task returns; the bot's task delivers its reply
	// itself (the first attempt).
	waitFor(t, 10*time.Second, "the bot task's log line", func() bool {
		return find(out.lines(t), map[string]string{"msg": "task", "task_type": jobs.TypeBotReply, "task_id": "bot:" + messageID}) != nil
	})
	lines := out.lines(t)

	t.Run("the access log line names the request, the account and the message", func(t *testing.T) {
		l := find(lines, map[string]string{"msg": "request", "path": "/v1/incoming_custom_channel_message"})
		if l == nil {
			t.Fatalf("no access log line for the incoming request:\n%s", out.text())
		}
		if l["request_id"] == "" || l["request_id"] != r.Header.Get("X-Request-Id") || l["account_id"] == nil || l["message_id"] != messageID {
			t.Fatalf("access log line lacks request_id, account_id or message_id: %v", l)
		}
	})
	t.Run("worker lines carry the task's type and id", func(t *testing.T) {
		if l := find(lines, map[string]string{"msg": "task", "task_type": jobs.TypeBotReply, "task_id": "bot:" + messageID}); l == nil || l["outcome"] != "ok" {
			t.Fatalf("no successful task line for the bot reply: %v\n%s", l, out.text())
		}
		l := find(lines, map[string]string{"msg": "delivery", "message_id": reply.MessageID})
		if l == nil || l["task_type"] != jobs.TypeBotReply || l["task_id"] != "bot:"+messageID {
			t.Fatalf("the delivery line lacks its task (the bot task that delivered the reply inline): %v\n%s", l, out.text())
		}
	})
	t.Run("no key, secret or message text is logged", func(t *testing.T) {
		all := out.text()
		for name, secretValue := range map[string]string{
			"API key": key, "webhook secret": strings.TrimPrefix(secret, "whsec_"),
			"incoming message body": question, "reply body": reply.Body,
		} {
			if secretValue == "" {
				t.Fatalf("%s is empty: the test would prove nothing", name)
			}
			if strings.Contains(all, secretValue) {
				t.Errorf("the %s appears in the logs", name)
			}
		}
	})
}

// TestWarningsCarryTheRequestID: a warning written deep in a request (here, a WhatsApp message that
// cannot be stored, logged by the provider webhook while the rest of the batch is kept) names the
// request it belongs to, as the access log line does, without the call passing it by hand.
func TestWarningsCarryTheRequestID(t *testing.T) {
	out := &logBuffer{}
	log := slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := startServerWith(t, log, "WEBHOOK_ALLOW_PRIVATE=true")
	_, key := newAccount(t)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/channels/whatsapp", key, map[string]any{
		"phoneNumberId": "3098765", "accessToken": "wa-token", "appSecret": "app-secret", "verifyToken": "verify-me",
	}), http.StatusOK, "")
	body := []byte(`{"object":"whatsapp_business_account","entry":[{"changes":[{"value":{"metadata":{"phone_number_id":"3098765"},` +
		`"messages":[{"from":"14155559401","id":"wamid.empty","type":"text","text":{"body":"   "}}]}}]}]}`)
	r := do(t, "POST", srv.URL+"/v1/channels/whatsapp/inbound", "", body, "X-Hub-Signature-256: "+metaSign("app-secret", body), "X-Request-Id: trace-wa-1")
	expect(t, r, http.StatusOK, "")
	lines := out.lines(t)
	warning := find(lines, map[string]string{"msg": "whatsapp message not stored"})
	if warning == nil {
		t.Fatalf("no warning for the message that could not be stored:\n%s", out.text())
	}
	for _, l := range lines {
		if lvl, _ := l["level"].(string); (lvl == "WARN" || lvl == "ERROR") && l["request_id"] != "trace-wa-1" {
			t.Errorf("a %s line without the request's id: %v", lvl, l)
		}
	}
}

// logRecorder is the test's testing.TB with the lines given to its Log kept for the test to read.
type logRecorder struct {
	testing.TB
	mu    sync.Mutex
	lines []string
}

func (r *logRecorder) Log(args ...any) {
	r.mu.Lock()
	r.lines = append(r.lines, fmt.Sprint(args...))
	r.mu.Unlock()
	r.TB.Log(args...)
}

func (r *logRecorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// TestServerWarningsGoToTheTestLog: a server a test starts writes its warnings and errors to the
// test's log, which go test prints when the test fails (an unexpected 500 shows its cause), and not
// its info lines; once the test has ended, nothing more is written to it (a t.Log then panics).
func TestServerWarningsGoToTheTestLog(t *testing.T) {
	var rec *logRecorder
	var log *slog.Logger
	t.Run("server", func(t *testing.T) {
		rec = &logRecorder{TB: t}
		log = testLogger(rec)
		srv := startServerWith(rec, log)
		// A batch for a page no account has connected is acknowledged with a warning.
		r := do(t, "POST", srv.URL+"/v1/channels/messenger/inbound", "", `{"object":"page","entry":[{"id":"page-nobody-connected"}]}`,
			"X-Hub-Signature-256: sha256=00", "X-Request-Id: trace-testlog-1")
		expect(t, r, http.StatusOK, "")
		if got := rec.text(); !strings.Contains(got, `"level":"WARN"`) || !strings.Contains(got, "page-nobody-connected") ||
			!strings.Contains(got, "trace-testlog-1") {
			t.Fatalf("the warning is not in the test's log:\n%s", got)
		}
		if got := rec.text(); strings.Contains(got, `"msg":"request"`) {
			t.Fatalf("an info line in the test's log:\n%s", got)
		}
	})
	before := rec.text()
	log.Error("logged after the test ended")
	if got := rec.text(); got != before {
		t.Fatalf("written to the log of a test that has ended:\n%s", got)
	}
}
