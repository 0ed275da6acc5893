package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"funnelchat/models"
)

// Outgoing delivery end to end: an api server, a worker with the short test retry schedule
// (200ms,400ms,400ms,400ms: five attempts, WEBHOOK_TIMEOUT 2s) and a real sink standing for the
// customer's webhook.

// sendOutgoing stores an outgoing message through POST /v1/send_custom_channel_message and returns its id.
func sendOutgoing(t *testing.T, srv *server, key, fromID, body string) string {
	t.Helper()
	r := do(t, "POST", srv.URL+"/v1/send_custom_channel_message", key, map[string]any{"customData": map[string]any{
		"fromId": fromID, "customChannel": "live-chat", "body": body,
	}})
	expect(t, r, http.StatusCreated, "")
	id, _ := r.JSON(t)["messageId"].(string)
	if id == "" {
		t.Fatalf("no messageId: %s", r.Body)
	}
	return id
}

// outgoingMessage is GET /v1/messages/{id}, which must answer 200.
func outgoingMessage(t *testing.T, srv *server, key, id string) map[string]any {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/messages/"+id, key, nil)
	expect(t, r, http.StatusOK, "")
	return r.JSON(t)
}

// messageAttempts is GET /v1/messages/{id}/attempts, which must answer 200 with a data array.
func messageAttempts(t *testing.T, srv *server, key, id string) []map[string]any {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/messages/"+id+"/attempts", key, nil)
	expect(t, r, http.StatusOK, "")
	data, ok := r.JSON(t)["data"].([]any)
	if !ok {
		t.Fatalf("attempts without a data array: %s", r.Body)
	}
	out := make([]map[string]any, len(data))
	for i, a := range data {
		out[i], ok = a.(map[string]any)
		if !ok {
			t.Fatalf("attempt %d is not an object: %s", i, r.Body)
		}
	}
	return out
}

// waitForMessage polls GET /v1/messages/{id} until cond holds and returns the message that satisfied it.
func waitForMessage(t *testing.T, srv *server, key, id string, timeout time.Duration, what string, cond func(m map[string]any) bool) map[string]any {
	t.Helper()
	var last map[string]any
	deadline := time.Now().Add(timeout)
	for {
		last = outgoingMessage(t, srv, key, id)
		if cond(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last message: %v", timeout, what, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isFinal reports a message whose delivery is over: sent, or failed with no retry scheduled.
func isFinal(m map[string]any) bool {
	return m["status"] == "sent" || (m["status"] == "failed" && m["nextAttemptAt"] == nil)
}

func errorText(v any) string { s, _ := v.(string); return s }

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("not an RFC 3339 time: %v", v)
	}
	return at
}

// answerWith returns a sink respond func that answers the n-th request with codes[n-1] (200 past the end).
func answerWith(codes ...int) func(n int, w http.ResponseWriter, r *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		code := http.StatusOK
		if n <= len(codes) {
			code = codes[n-1]
		}
		w.WriteHeader(code)
		if code >= 300 {
			_, _ = w.Write([]byte("sink says no"))
		}
	}
}

func TestDeliveryRetriesServerErrorsUntilSent(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, answerWith(500, 500))
	key, _ := messagingAccount(t, srv, hook)
	id := sendOutgoing(t, srv, key, "retry-user", "first try fails")

	t.Run("failed with the error and nextAttemptAt while a retry is pending", func(t *testing.T) {
		m := waitForMessage(t, srv, key, id, 10*time.Second, "failed with a retry scheduled", func(m map[string]any) bool {
			return m["status"] == "failed" && m["nextAttemptAt"] != nil || m["status"] == "sent"
		})
		if m["status"] != "failed" {
			t.Fatalf("never observed the failed state between attempts: %v", m)
		}
		if !strings.Contains(errorText(m["error"]), "500") {
			t.Fatalf("error %v should mention the status 500", m["error"])
		}
		parseTime(t, m["nextAttemptAt"])
	})

	m := waitForMessage(t, srv, key, id, 10*time.Second, "status sent", func(m map[string]any) bool { return isFinal(m) })
	if m["status"] != "sent" || m["error"] != nil || m["nextAttemptAt"] != nil || m["attempts"] != 3.0 || m["sentAt"] == nil {
		t.Fatalf("after 500, 500, 200: %v", m)
	}

	t.Run("the attempts are listed oldest first", func(t *testing.T) {
		attempts := messageAttempts(t, srv, key, id)
		if len(attempts) != 3 {
			t.Fatalf("%d attempts, want 3: %v", len(attempts), attempts)
		}
		var prev time.Time
		for i, want := range []float64{500, 500, 200} {
			a := attempts[i]
			if a["statusCode"] != want {
				t.Errorf("attempt %d: statusCode %v, want %v", i, a["statusCode"], want)
			}
			if d, ok := a["durationMs"].(float64); !ok || d < 0 {
				t.Errorf("attempt %d: durationMs %v", i, a["durationMs"])
			}
			at := parseTime(t, a["at"])
			if at.Before(prev) {
				t.Errorf("attempt %d at %s is before the previous one at %s", i, at, prev)
			}
			prev = at
			if failed := want != 200; failed != (a["error"] != nil) {
				t.Errorf("attempt %d: error %v", i, a["error"])
			}
			if want == 500 && !strings.Contains(errorText(a["error"]), "500") {
				t.Errorf("attempt %d: error %v should mention 500", i, a["error"])
			}
		}
	})
	t.Run("every attempt carried the message id as webhook-id", func(t *testing.T) {
		ds := hook.deliveries()
		if len(ds) != 3 {
			t.Fatalf("the sink got %d requests, want 3", len(ds))
		}
		for i, d := range ds {
			if got := d.Header.Get("webhook-id"); got != id {
				t.Errorf("request %d: webhook-id %q, want %q", i, got, id)
			}
		}
	})
}

func TestDeliveryGivesUpAtOnceOnA4xx(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, answerWith(http.StatusGone))
	key, _ := messagingAccount(t, srv, hook)
	id := sendOutgoing(t, srv, key, "gone-user", "nobody home")

	m := waitForMessage(t, srv, key, id, 10*time.Second, "a final status", isFinal)
	if m["status"] != "failed" || m["nextAttemptAt"] != nil || m["attempts"] != 1.0 || !strings.Contains(errorText(m["error"]), "410") {
		t.Fatalf("after a 410: %v", m)
	}
	waitDrained(t, mustAccountID(t, key), retryHorizon) // a retry, if one were coming, would be waiting in the retry set
	if n := len(hook.deliveries()); n != 1 {
		t.Fatalf("the sink got %d requests, want 1 (a 410 is final)", n)
	}
	if m := outgoingMessage(t, srv, key, id); m["attempts"] != 1.0 || m["status"] != "failed" {
		t.Fatalf("later: %v", m)
	}
}

// TestDeliveryHonoursRetryAfter answers the first attempt 429 with Retry-After: 1 and checks that the
// retry comes no earlier than a second after that answer. The 429 is sent late in a wall-clock second
// (at .800) on purpose: asynq keeps retry times in whole Unix seconds (its Retry stores
// processAt.Unix() as the score and the forwarder moves tasks whose score <= now.Unix()), so a delay
// that ends in the next second is due as soon as that second begins, up to a second early. Answering
// at .800 shows that on every run instead of on the runs that happen to answer late in a second.
func TestDeliveryHonoursRetryAfter(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	var mu sync.Mutex
	var answeredAt time.Time
	hook := newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			now := time.Now()
			at := now.Truncate(time.Second).Add(800 * time.Millisecond)
			if !at.After(now) {
				at = at.Add(time.Second)
			}
			time.Sleep(time.Until(at)) // shapes when the sink answers; WEBHOOK_TIMEOUT is 2s
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			mu.Lock()
			answeredAt = time.Now()
			mu.Unlock()
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	key, _ := messagingAccount(t, srv, hook)
	id := sendOutgoing(t, srv, key, "busy-user", "slow down")

	pending := waitForMessage(t, srv, key, id, 10*time.Second, "failed with a retry scheduled", func(m map[string]any) bool {
		return m["status"] == "failed" && m["nextAttemptAt"] != nil || m["status"] == "sent"
	})
	m := waitForMessage(t, srv, key, id, 10*time.Second, "a final status", isFinal)
	if m["status"] != "sent" || m["attempts"] != 2.0 || m["error"] != nil {
		t.Fatalf("after 429 then 200: %v", m)
	}
	ds := hook.deliveries()
	if len(ds) != 2 {
		t.Fatalf("the sink got %d requests, want 2", len(ds))
	}
	mu.Lock()
	answered := answeredAt
	mu.Unlock()
	if pending["status"] != "failed" {
		t.Fatalf("never observed the failed state between the attempts: %v", pending)
	}
	if !strings.Contains(errorText(pending["error"]), "429") {
		t.Errorf("error %v should mention 429", pending["error"])
	}
	next := parseTime(t, pending["nextAttemptAt"])
	if ahead := next.Sub(answered); ahead < 900*time.Millisecond {
		t.Errorf("nextAttemptAt is %s after the 429 with Retry-After: 1", ahead)
	}
	if gap := ds[1].At.Sub(answered); gap < 900*time.Millisecond {
		t.Errorf("the retry came %s after the 429 with Retry-After: 1 (the message showed nextAttemptAt %s, "+
			"%s after the retry arrived)", gap.Round(time.Millisecond), next.Format(time.RFC3339Nano),
			next.Sub(ds[1].At).Round(time.Millisecond))
	}
}

func TestDeliveryTimeoutIsRetried(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t, "WEBHOOK_TIMEOUT=300ms")
	hook := newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			select {
			case <-r.Context().Done(): // the worker gave up
			case <-time.After(2 * time.Second):
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	key, _ := messagingAccount(t, srv, hook)
	id := sendOutgoing(t, srv, key, "slow-user", "are you there")

	m := waitForMessage(t, srv, key, id, 10*time.Second, "a final status", isFinal)
	if m["status"] != "sent" || m["attempts"] != 2.0 || m["error"] != nil {
		t.Fatalf("after a timeout then 200: %v", m)
	}
	attempts := messageAttempts(t, srv, key, id)
	if len(attempts) != 2 {
		t.Fatalf("%d attempts, want 2: %v", len(attempts), attempts)
	}
	first := attempts[0]
	if !strings.Contains(strings.ToLower(errorText(first["error"])), "timeout") || first["statusCode"] != nil {
		t.Fatalf("first attempt: %v", first)
	}
	if d, _ := first["durationMs"].(float64); d < 250 || d >= 2000 {
		t.Fatalf("first attempt took %vms; WEBHOOK_TIMEOUT is 300ms", first["durationMs"])
	}
	if attempts[1]["statusCode"] != 200.0 || attempts[1]["error"] != nil {
		t.Fatalf("second attempt: %v", attempts[1])
	}
}

// TestDeliveryAcceptedIsSentOnceWhenItsRecordFails: the receiver accepted the message and recording
// that failed with an error that is not an outage of our database. The worker retries the record, not
// the task: a retried task would send the message again. A trigger refuses the message's attempt rows
// until the worker has logged the failure (or, without the fix, sent the message twice).
func TestDeliveryAcceptedIsSentOnceWhenItsRecordFails(t *testing.T) {
	out := &logBuffer{}
	log := slog.New(slog.NewJSONHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorkerWith(t, log)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)

	const body = "accepted, then its record is refused 4c2e"
	allow := refuseAttemptsOf(t, body)
	id := sendOutgoing(t, srv, key, "record-refused", body)
	waitFor(t, 10*time.Second, "the record's failure", func() bool {
		return strings.Contains(out.text(), `"msg":"delivery accepted but not recorded"`) || len(hook.deliveries()) > 1
	})
	allow()

	m := waitForMessage(t, srv, key, id, 10*time.Second, "a final status", isFinal)
	if n := len(hook.deliveries()); n != 1 {
		t.Fatalf("the receiver got the message %d times, want once", n)
	}
	if m["status"] != "sent" || m["attempts"] != 1.0 {
		t.Fatalf("after one accepted delivery: %v", m)
	}
	if attempts := messageAttempts(t, srv, key, id); len(attempts) != 1 {
		t.Fatalf("%d attempts, want 1: %v", len(attempts), attempts)
	}
}

// refuseAttemptsOf makes the database refuse to store an attempt of the messages with the body (an
// error that is not an outage) until the returned func, or the test's end, removes the refusal.
func refuseAttemptsOf(t *testing.T, body string) (allow func()) {
	t.Helper()
	ctx := context.Background()
	db := env.Store.DB()
	create := []string{`CREATE TRIGGER refuse_attempt BEFORE INSERT ON message_attempts
		WHEN (SELECT body FROM messages WHERE id = NEW.message_id) = ?
		BEGIN SELECT RAISE(ABORT, 'attempt refused by the test'); END`}
	drop := []string{`DROP TRIGGER IF EXISTS refuse_attempt`}
	if env.Postgres() {
		create = []string{`CREATE FUNCTION refuse_attempt() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF (SELECT body FROM messages WHERE id = NEW.message_id) = TG_ARGV[0] THEN
					RAISE EXCEPTION 'attempt refused by the test';
				END IF;
				RETURN NEW;
			END $$`,
			`CREATE TRIGGER refuse_attempt BEFORE INSERT ON message_attempts FOR EACH ROW EXECUTE FUNCTION refuse_attempt(?)`}
		drop = []string{`DROP TRIGGER IF EXISTS refuse_attempt ON message_attempts`, `DROP FUNCTION IF EXISTS refuse_attempt()`}
	}
	for _, q := range create {
		if _, err := db.NewRaw(q, body).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	allow = func() {
		for _, q := range drop {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(allow)
	return allow
}

func TestDeliveryConnectionRefusedThenRedeliver(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	closed := httptest.NewServer(http.NotFoundHandler())
	deadURL := closed.URL + "/hook"
	closed.Close()
	_, key := newAccount(t)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", key, map[string]any{"url": deadURL}), http.StatusOK, "")
	id := sendOutgoing(t, srv, key, "refused-user", "knock knock")

	m := waitForMessage(t, srv, key, id, 15*time.Second, "a final status", isFinal)
	if m["status"] != "failed" || m["attempts"] != 5.0 || m["nextAttemptAt"] != nil ||
		!strings.Contains(errorText(m["error"]), "connection refused") {
		t.Fatalf("after five refused connections: %v", m)
	}
	attempts := messageAttempts(t, srv, key, id)
	if len(attempts) != 5 {
		t.Fatalf("%d attempts, want 5: %v", len(attempts), attempts)
	}
	for i, a := range attempts {
		if a["statusCode"] != nil || !strings.Contains(errorText(a["error"]), "connection refused") {
			t.Errorf("attempt %d: %v", i, a)
		}
	}

	redeliver := func(key, id string) response {
		return do(t, "POST", srv.URL+"/v1/messages/"+id+"/redeliver", key, nil)
	}
	t.Run("another account cannot redeliver it", func(t *testing.T) {
		_, otherKey := newAccount(t)
		expect(t, redeliver(otherKey, id), http.StatusNotFound, models.CodeNotFound)
		if m := outgoingMessage(t, srv, key, id); m["status"] != "failed" {
			t.Fatalf("another account's redeliver changed the message: %v", m)
		}
	})
	t.Run("unknown and malformed ids are 404", func(t *testing.T) {
		expect(t, redeliver(key, "msg_01hzzzzzzzzzzzzzzzzzzzzzzz"), http.StatusNotFound, models.CodeNotFound)
		expect(t, redeliver(key, strings.Repeat("x", 300)), http.StatusNotFound, models.CodeNotFound)
	})

	hook := newSink(t, nil)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", key, map[string]any{"url": hook.URL + "/hook"}), http.StatusOK, "")
	t.Run("redeliver queues the failed message again and it is sent", func(t *testing.T) {
		r := redeliver(key, id)
		expect(t, r, http.StatusOK, "")
		if body := r.JSON(t); body["id"] != id || body["status"] != "pending" {
			t.Fatalf("redeliver answered %s", r.Body)
		}
		m := waitForMessage(t, srv, key, id, 10*time.Second, "status sent", isFinal)
		if m["status"] != "sent" || m["error"] != nil || m["nextAttemptAt"] != nil || m["attempts"] != 6.0 {
			t.Fatalf("after the redeliver: %v", m)
		}
		ds := hook.deliveries()
		if len(ds) != 1 || ds[0].Header.Get("webhook-id") != id {
			t.Fatalf("the sink got %d requests (want 1 with webhook-id %s)", len(ds), id)
		}
	})
	t.Run("a sent message cannot be redelivered", func(t *testing.T) {
		expect(t, redeliver(key, id), http.StatusConflict, models.CodeConflict)
	})
	t.Run("an incoming message cannot be redelivered", func(t *testing.T) {
		r := incoming(t, srv, key, "redeliver-in-1", "refused-user", "hello")
		expect(t, r, http.StatusOK, "")
		inID, _ := r.JSON(t)["messageId"].(string)
		expect(t, redeliver(key, inID), http.StatusConflict, models.CodeConflict)
		if m := outgoingMessage(t, srv, key, inID); m["status"] != "received" {
			t.Fatalf("incoming message after a refused redeliver: %v", m)
		}
	})
}

func TestDeliveryWithoutWebhookFails(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	_, key := newAccount(t)
	id := sendOutgoing(t, srv, key, "nowhere-user", "into the void")
	m := waitForMessage(t, srv, key, id, 10*time.Second, "a final status", isFinal)
	if m["status"] != "failed" || m["attempts"] != 1.0 || m["nextAttemptAt"] != nil ||
		!strings.Contains(errorText(m["error"]), "no webhook URL") {
		t.Fatalf("without a webhook: %v", m)
	}
	if a := messageAttempts(t, srv, key, id); len(a) != 1 || a[0]["statusCode"] != nil || a[0]["error"] == nil {
		t.Fatalf("attempts: %v", a)
	}
}

func TestDeliverySSRFGuard(t *testing.T) {
	t.Run("the worker refuses a private target that bypassed the API", func(t *testing.T) {
		srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
		startWorker(t, "WEBHOOK_ALLOW_PRIVATE=false")
		hook := newSink(t, nil)
		acc, key := newAccount(t)
		// Creates the signing secret; the URL goes straight into the database, as the API would refuse it.
		expect(t, do(t, "GET", srv.URL+"/v1/settings/webhook", key, nil), http.StatusOK, "")
		_, err := env.Store.DB().NewUpdate().Table("accounts").Set("webhook_url = ?", hook.URL+"/hook").
			Where("id = ?", acc.ID).Exec(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		id := sendOutgoing(t, srv, key, "ssrf-user", "to loopback")
		m := waitForMessage(t, srv, key, id, 10*time.Second, "a final status", isFinal)
		if m["status"] != "failed" || m["attempts"] != 1.0 || m["nextAttemptAt"] != nil ||
			!strings.Contains(errorText(m["error"]), "not allowed") {
			t.Fatalf("delivery to loopback with private targets refused: %v", m)
		}
		if n := len(hook.deliveries()); n != 0 {
			t.Fatalf("the loopback sink got %d requests", n)
		}
	})

	t.Run("the API refuses non-public and non-https URLs", func(t *testing.T) {
		srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=false")
		_, key := newAccount(t)
		for _, url := range []string{
			"http://127.0.0.1:9/x",
			"https://127.0.0.1/x",
			"https://10.0.0.1/x",
			"https://169.254.169.254/latest",
			"https://[::1]/x",
			"https://localhost/x",
			"http://93.184.216.34/x", // public, but plain http
			"ftp://x",
			"",
			"not-a-url",
		} {
			r := do(t, "PUT", srv.URL+"/v1/settings/webhook", key, map[string]any{"url": url})
			if r.Status != http.StatusBadRequest || r.errorCode(t) != models.CodeValidation {
				t.Errorf("PUT %q: status %d, want 400 %s; body %s", url, r.Status, models.CodeValidation, r.Body)
			}
		}
		if u := do(t, "GET", srv.URL+"/v1/settings/webhook", key, nil).JSON(t)["url"]; u != nil {
			t.Fatalf("a refused URL was saved: %v", u)
		}
		r := do(t, "PUT", srv.URL+"/v1/settings/webhook", key, map[string]any{"url": "https://93.184.216.34/hook"})
		expect(t, r, http.StatusOK, "")
		if u := r.JSON(t)["url"]; u != "https://93.184.216.34/hook" {
			t.Fatalf("url %v", u)
		}
	})
}

func TestWebhookSettings(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	_, key := newAccount(t)
	url := srv.URL + "/v1/settings/webhook"

	first := do(t, "GET", url, key, nil)
	expect(t, first, http.StatusOK, "")
	settings := first.JSON(t)
	secret, _ := settings["signingSecret"].(string)
	if settings["url"] != nil || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("settings before any PUT: %s", first.Body)
	}
	if _, err := standardwebhooks.NewWebhook(secret); err != nil {
		t.Fatalf("secret %q is not a Standard Webhooks secret: %v", secret, err)
	}
	if again := do(t, "GET", url, key, nil).JSON(t); again["signingSecret"] != secret {
		t.Fatalf("the secret changed between two GETs: %v, then %v", secret, again["signingSecret"])
	}

	hook := newSink(t, nil)
	r := do(t, "PUT", url, key, map[string]any{"url": hook.URL + "/hook"})
	expect(t, r, http.StatusOK, "")
	if put := r.JSON(t); put["url"] != hook.URL+"/hook" || put["signingSecret"] != secret {
		t.Fatalf("PUT answered %s (secret was %s)", r.Body, secret)
	}
	if got := do(t, "GET", url, key, nil).JSON(t); got["url"] != hook.URL+"/hook" || got["signingSecret"] != secret {
		t.Fatalf("GET after PUT: %v", got)
	}

	t.Run("a url of the wrong JSON type is 400", func(t *testing.T) {
		expect(t, do(t, "PUT", url, key, `{"url":5}`), http.StatusBadRequest, models.CodeValidation)
	})
	t.Run("a missing url is 400", func(t *testing.T) {
		expect(t, do(t, "PUT", url, key, `{}`), http.StatusBadRequest, models.CodeValidation)
	})
	t.Run("a refused PUT keeps the saved URL", func(t *testing.T) {
		if got := do(t, "GET", url, key, nil).JSON(t); got["url"] != hook.URL+"/hook" {
			t.Fatalf("url %v", got["url"])
		}
	})
}

func TestWebhookTestEndpoint(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	testURL := srv.URL + "/v1/settings/webhook/test"

	t.Run("a healthy sink gets one signed test event", func(t *testing.T) {
		hook := newSink(t, nil)
		key, secret := messagingAccount(t, srv, hook)
		r := do(t, "POST", testURL, key, nil)
		expect(t, r, http.StatusOK, "")
		if body := r.JSON(t); body["delivered"] != true || body["statusCode"] != 200.0 || body["error"] != nil ||
			len(body) != 3 {
			t.Fatalf("test answered %s", r.Body)
		}
		ds := hook.deliveries()
		if len(ds) != 1 {
			t.Fatalf("the sink got %d requests, want 1", len(ds))
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(ds[0].Body, ds[0].Header); err != nil {
			t.Fatalf("the test event's signature does not verify: %v (headers %v)", err, ds[0].Header)
		}
		var payload map[string]any
		if err := json.Unmarshal(ds[0].Body, &payload); err != nil {
			t.Fatalf("test event body: %v: %s", err, ds[0].Body)
		}
		if payload["messageId"] == nil || payload["messageId"] != ds[0].Header.Get("webhook-id") {
			t.Fatalf("test event %s with webhook-id %q", ds[0].Body, ds[0].Header.Get("webhook-id"))
		}
	})
	t.Run("a sink answering 500 is reported", func(t *testing.T) {
		hook := newSink(t, answerWith(500))
		key, _ := messagingAccount(t, srv, hook)
		r := do(t, "POST", testURL, key, nil)
		expect(t, r, http.StatusOK, "")
		if body := r.JSON(t); body["delivered"] != false || body["statusCode"] != 500.0 || errorText(body["error"]) == "" {
			t.Fatalf("test answered %s", r.Body)
		}
		if n := len(hook.deliveries()); n != 1 {
			t.Fatalf("the sink got %d requests, want 1 (a test is not retried)", n)
		}
	})
	t.Run("no URL configured is reported", func(t *testing.T) {
		_, key := newAccount(t)
		r := do(t, "POST", testURL, key, nil)
		expect(t, r, http.StatusOK, "")
		if body := r.JSON(t); body["delivered"] != false || body["statusCode"] != nil || errorText(body["error"]) == "" {
			t.Fatalf("test answered %s", r.Body)
		}
	})
}

func TestMessageOfAnotherAccountIsNotFound(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	id := sendOutgoing(t, srv, key, "private-user", "for my eyes only")
	waitForMessage(t, srv, key, id, 10*time.Second, "status sent", func(m map[string]any) bool { return m["status"] == "sent" })
	if a := messageAttempts(t, srv, key, id); len(a) != 1 {
		t.Fatalf("owner sees %d attempts, want 1", len(a))
	}

	_, otherKey := newAccount(t)
	expect(t, do(t, "GET", srv.URL+"/v1/messages/"+id, otherKey, nil), http.StatusNotFound, models.CodeNotFound)
	expect(t, do(t, "GET", srv.URL+"/v1/messages/"+id+"/attempts", otherKey, nil), http.StatusNotFound, models.CodeNotFound)
	expect(t, do(t, "GET", srv.URL+"/v1/messages/msg_unknown/attempts", key, nil), http.StatusNotFound, models.CodeNotFound)
}
