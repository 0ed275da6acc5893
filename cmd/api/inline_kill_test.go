package main_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestKillBetweenTheReceiversAnswerAndItsRecord opens on purpose the window that inline delivery has:
// the bot's task delivers its reply itself, the receiver answers 200, and the process dies before it
// records the attempt. The offline bot's reply is sent before it is stored (jobs' deliverFirst), which
// stores it, its attempt and the incoming message as answered in one write. The test holds a write lock
// on the incoming message and the reply (PostgreSQL: their rows; SQLite: the database) from the moment
// the receiver gets the delivery, so the worker has the 200 but cannot record it, then kills it with
// SIGKILL and releases the lock. The reply must be delivered again (the incoming message is still owed
// its reply) under the same webhook-id, exactly once more, and end sent, with one reply in the
// conversation.
func TestKillBetweenTheReceiversAnswerAndItsRecord(t *testing.T) {
	t.Parallel()
	var (
		mu      sync.Mutex
		ids     []string // webhook-id of every delivery, each answered 200
		release func()
		d       *killDeployment
	)
	held := make(chan struct{})
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id"))
		first := len(ids) == 1
		mu.Unlock()
		if first {
			release = holdWrites(t, d, r.Header.Get("webhook-id"), "inline-kill-1")
			close(held)
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(sink.Close)
	deliveries := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...)
	}

	d = startKillDeployment(t, "inline-kill@example.com", 1, sink.URL+"/hook")
	status, body := d.call("POST", "/v1/incoming_custom_channel_message", map[string]any{
		"customData": map[string]any{"messageSid": "inline-kill-1", "fromId": "iris", "toId": "biz", "body": "hello"},
	})
	if status != http.StatusOK {
		t.Fatalf("incoming: %d %v", status, body)
	}
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the reply never reached the receiver")
	}
	time.Sleep(500 * time.Millisecond) // the worker reads the 200 and waits for the lock to record it
	d.killVictimThen(true, func() { release() })

	waitUntil(t, 200*time.Second, "the reply to be delivered again", func() bool { return len(deliveries()) >= 2 })
	time.Sleep(3 * time.Second) // a third delivery, if one were coming, would be on its way by now
	got := deliveries()
	if len(got) != 2 || got[0] != got[1] || !strings.HasPrefix(got[0], "msg_") {
		t.Fatalf("deliveries' webhook-ids %v: want the same id twice (the repeat of an unrecorded 200)", got)
	}
	waitUntil(t, 10*time.Second, "the reply to show as sent", func() bool {
		_, m := d.call("GET", "/v1/messages/"+got[0], nil)
		return m["status"] == "sent"
	})
	_, reply := d.call("GET", "/v1/messages/"+got[0], nil)
	_, msgs := d.call("GET", "/v1/contacts/"+reply["contactId"].(string)+"/messages", nil)
	if data, _ := msgs["data"].([]any); len(data) != 2 {
		t.Fatalf("conversation has %d messages, want the incoming one and one reply: %v", len(data), msgs)
	}
	if reply["attempts"] != 1.0 {
		t.Fatalf("%v attempts recorded, want 1 (the first, whose record the kill prevented, cannot be): %v", reply["attempts"], reply)
	}
}

// holdWrites takes a write lock that keeps the deployment from recording anything about the reply
// messageID or the incoming message whose messageSid is sid (PostgreSQL: their rows; SQLite: the whole
// database) and returns its release.
func holdWrites(t *testing.T, d *killDeployment, messageID, sid string) (release func()) {
	ctx := context.Background()
	if env.Postgres() {
		tx, err := d.store.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Error(err)
			return func() {}
		}
		if _, err := tx.ExecContext(ctx, "SELECT id FROM messages WHERE id = ? OR external_id = ? FOR UPDATE", messageID, sid); err != nil {
			t.Error(err)
		}
		return func() {
			// The killed worker's statement may have reached PostgreSQL already, waiting for the lock;
			// its backend would run it once the lock is free, as if the worker had lived. End it: the
			// window under test is a process that dies before its record reaches the database.
			_, err := d.store.DB().ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`)
			if err != nil {
				t.Error(err)
			}
			_ = tx.Rollback()
		}
	}
	var dataDir string
	for _, v := range d.environ {
		if dir, ok := strings.CutPrefix(v, "DATA_DIR="); ok {
			dataDir = dir
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dataDir, "funnelchat.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Error(err)
		return func() {}
	}
	conn, err := db.Conn(ctx)
	if err == nil {
		_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	}
	if err != nil {
		t.Error(err)
	}
	return func() {
		if conn != nil {
			_, _ = conn.ExecContext(ctx, "ROLLBACK")
			_ = conn.Close()
		}
		_ = db.Close()
	}
}
