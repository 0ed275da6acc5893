package main_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockingSink never answers the first delivery (standing for a slow receiver, so the worker can be
// killed while the delivery is in flight) and counts the deliveries it completed with 200.
type blockingSink struct {
	*httptest.Server
	closing   chan struct{}
	mu        sync.Mutex
	received  int
	completed []string // webhook-id of each delivery answered 200
}

func newBlockingSink(t *testing.T) *blockingSink {
	s := &blockingSink{closing: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.received++
		first := s.received == 1
		s.mu.Unlock()
		if first {
			// Held until the sender dies: this delivery never completes.
			select {
			case <-r.Context().Done():
			case <-s.closing:
			}
			return
		}
		s.mu.Lock()
		s.completed = append(s.completed, r.Header.Get("webhook-id"))
		s.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(func() { close(s.closing); s.Close() })
	return s
}

func (s *blockingSink) counts() (received int, completed []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.received, append([]string(nil), s.completed...)
}

func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKilledWorkerLosesAndDuplicatesNothing kills the process that is delivering a reply with SIGKILL
// while the receiver holds the request, then starts a new one. On PostgreSQL + Redis the worker is
// killed and asynq recovers the task when its lease expires (up to about two minutes); in standalone
// mode the whole api is killed, its in-process Redis is lost, and the sweep finds the pending delivery
// in SQLite. Either way the reply arrives exactly once, with one webhook-id.
func TestKilledWorkerLosesAndDuplicatesNothing(t *testing.T) {
	t.Parallel()
	sink := newBlockingSink(t)
	d := startKillDeployment(t, "kill@example.com", 1, sink.URL+"/hook", append([]string{"WEBHOOK_RETRY_SCHEDULE=1s,1s,1s,1s"}, monitoringVars...)...)
	status, body := d.call("POST", "/v1/incoming_custom_channel_message", map[string]any{
		"customData": map[string]any{"messageSid": "kill-1", "fromId": "nora", "toId": "biz", "body": "hello"},
	})
	if status != http.StatusOK {
		t.Fatalf("incoming: %d %v", status, body)
	}
	waitUntil(t, 20*time.Second, "the delivery to reach the sink", func() bool { r, _ := sink.counts(); return r >= 1 })

	d.killVictim(true)
	waitUntil(t, 200*time.Second, "the reply to be delivered after the kill", func() bool { _, c := sink.counts(); return len(c) >= 1 })
	// A duplicate, if one were coming, would still be in a task (on PostgreSQL one the killed worker
	// held waits for asynq's lease recovery, as the reply did: hence the bound).
	d.waitQueuesEmpty(200 * time.Second)
	received, completed := sink.counts()
	if len(completed) != 1 {
		t.Fatalf("%d completed deliveries (%v), want exactly 1; %d requests in all", len(completed), completed, received)
	}
	replyID := completed[0]
	if !strings.HasPrefix(replyID, "msg_") {
		t.Fatalf("webhook-id %q", replyID)
	}
	waitUntil(t, 10*time.Second, "the reply to show as sent", func() bool {
		_, m := d.call("GET", "/v1/messages/"+replyID, nil)
		return m["status"] == "sent"
	})
	_, conv := d.call("GET", "/v1/messages/"+replyID, nil)
	contactID, _ := conv["contactId"].(string)
	_, msgs := d.call("GET", "/v1/contacts/"+contactID+"/messages", nil)
	if data, _ := msgs["data"].([]any); len(data) != 2 {
		t.Fatalf("conversation has %d messages, want the incoming one and one reply: %v", len(data), msgs)
	}
}
