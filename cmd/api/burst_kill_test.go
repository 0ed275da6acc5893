package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestWorkerKilledDuringABurst posts a burst of 300 incoming messages and kills the process answering
// them with SIGKILL once replies are flowing. On PostgreSQL + Redis one of two workers is killed (asynq
// recovers its tasks when their leases expire, up to about two minutes); in standalone mode the whole
// api is killed and restarted, and the sweep finds the unanswered messages in SQLite. Every message
// that got a 200 ends with exactly one reply: one webhook-id per sender. A delivery cut off after the
// receiver answered may arrive again under the same webhook-id, which receivers drop (README, "Reliability"); the
// test reports those.
func TestWorkerKilledDuringABurst(t *testing.T) {
	t.Parallel()
	const n = 300
	var mu sync.Mutex
	bySender := map[string]map[string]int{} // toId -> webhook-id -> deliveries
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p struct{ ToID string }
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &p)
		mu.Lock()
		if bySender[p.ToID] == nil {
			bySender[p.ToID] = map[string]int{}
		}
		bySender[p.ToID][r.Header.Get("webhook-id")]++
		mu.Unlock()
	}))
	defer sink.Close()
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(bySender)
	}

	d := startKillDeployment(t, "burst-kill@example.com", 2, sink.URL+"/hook", "RATE_LIMIT_PER_MINUTE=100000")

	var wg sync.WaitGroup
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				status, body := d.call("POST", "/v1/incoming_custom_channel_message", map[string]any{
					"customData": map[string]any{"messageSid": fmt.Sprint("burst-", i), "fromId": fmt.Sprint("burst-sender-", i), "toId": "biz", "body": "hello"},
				})
				if status != http.StatusOK {
					t.Errorf("message %d: %d %v", i, status, body)
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	waitUntil(t, 60*time.Second, "replies to be flowing before the kill", func() bool { return answered() >= 20 })
	d.killVictim(false)
	killedAt, atKill := time.Now(), answered()
	waitUntil(t, 240*time.Second, "a reply to every message", func() bool { return answered() == n })
	recovery := time.Since(killedAt)
	time.Sleep(3 * time.Second) // a second reply, if one were coming, would be on its way by now

	mu.Lock()
	defer mu.Unlock()
	redelivered := 0
	for sender, hooks := range bySender {
		if len(hooks) != 1 {
			t.Errorf("%s received %d different replies: %v", sender, len(hooks), hooks)
		}
		for _, count := range hooks {
			redelivered += count - 1
		}
	}
	if len(bySender) != n {
		t.Errorf("%d senders answered, want %d", len(bySender), n)
	}
	t.Logf("%d messages, %d answered before the kill, all %d answered %s after it; %d deliveries repeated under the same webhook-id",
		n, atKill, len(bySender), recovery.Round(time.Second), redelivered)
}
