package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/jobs"
)

// TestRetriesPassTheDoor: a failed message retried (POST /v1/messages/{id}/redeliver) is decided
// again at the time of the retry. A contact who opted out since the failure: the message stays failed
// with the opt-out as its reason, and nothing is sent. A campaign's opening retried inside the
// contact's quiet hours: deferred to their end (pending, nextAttemptAt), its delivery task scheduled
// then, nothing sent now; sent when its time comes.
func TestRetriesPassTheDoor(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	// The receiver refuses everything (400, final) until it is told to accept.
	accept := make(chan struct{})
	hook := newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		select {
		case <-accept:
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	key, _ := messagingAccount(t, srv, hook)
	_, listID := liveCampaign(t, srv, key, map[string]any{"sendRatePerMinute": 6000})

	// Two leads whose openings fail for good.
	optsOut := namedContact(t, srv, key, "+14155558101", "Olive")
	r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": "+14155558102", "firstName": "Quinn", "timeZone": "UTC"})
	expect(t, r, http.StatusCreated, "")
	quiet := r.JSON(t)["id"].(string)
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{optsOut, quiet}}), http.StatusCreated, "")
	openingOf := func(contactID string) map[string]any {
		var m map[string]any
		waitFor(t, 15*time.Second, "the failed opening of "+contactID, func() bool {
			for _, v := range do(t, "GET", srv.URL+"/v1/contacts/"+contactID+"/messages", key, nil).JSON(t)["data"].([]any) {
				if mm := v.(map[string]any); mm["direction"] == "outgoing" && mm["status"] == "failed" {
					m = mm
				}
			}
			return m != nil
		})
		return m
	}
	olive, quinn := openingOf(optsOut), openingOf(quiet)
	close(accept)
	before := len(hook.deliveries())

	t.Run("opted out since: stays failed, nothing sent", func(t *testing.T) {
		expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+optsOut+"/consent", key, map[string]any{"status": "opted_out", "source": "phone call"}), http.StatusOK, "")
		r := do(t, "POST", srv.URL+"/v1/messages/"+olive["id"].(string)+"/redeliver", key, nil)
		expect(t, r, http.StatusOK, "")
		m := r.JSON(t)
		if m["status"] != "failed" || !strings.HasPrefix(errorText(m["error"]), "OPTED_OUT") || m["nextAttemptAt"] != nil {
			t.Fatalf("redeliver to an opted-out contact answered %v", m)
		}
		// A second press decides the same.
		expect(t, do(t, "POST", srv.URL+"/v1/messages/"+olive["id"].(string)+"/redeliver", key, nil), http.StatusOK, "")
		if n := queuedDeliveries(t, olive["id"].(string)); n != 0 {
			t.Fatalf("%d delivery tasks queued for a message the door refused", n)
		}
	})

	t.Run("inside quiet hours: deferred to their end", func(t *testing.T) {
		now := time.Now().UTC()
		window := map[string]any{"start": now.Add(-time.Hour).Format("15:04"), "end": now.Add(time.Hour).Format("15:04")}
		expect(t, do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"quietHours": window, "timeZone": "UTC"}), http.StatusOK, "")
		r := do(t, "POST", srv.URL+"/v1/messages/"+quinn["id"].(string)+"/redeliver", key, nil)
		expect(t, r, http.StatusOK, "")
		m := r.JSON(t)
		next, err := time.Parse(time.RFC3339Nano, fmt.Sprint(m["nextAttemptAt"]))
		if m["status"] != "pending" || err != nil || !next.Equal(now.Add(time.Hour).Truncate(time.Minute)) {
			t.Fatalf("redeliver inside quiet hours answered %v, want pending until %s", m, now.Add(time.Hour).Truncate(time.Minute))
		}
		// Its delivery waits in asynq's schedule for that time.
		inspector := asynq.NewInspector(env.Asynq)
		defer inspector.Close()
		taskID := fmt.Sprintf("deliver:%s:1", quinn["id"]) // its second delivery round
		info, err := inspector.GetTaskInfo(jobs.QueueDeliveries, taskID)
		if err != nil || info.State != asynq.TaskStateScheduled || info.NextProcessAt.Sub(next).Abs() > time.Second {
			t.Fatalf("delivery task %s: %+v, %v; want scheduled at %s", taskID, info, err, next)
		}
		if got := len(hook.deliveries()); got != before {
			t.Fatalf("the receiver got %d requests after the retries, want none", got-before)
		}
		// Its time comes: sent.
		if err := inspector.RunTask(jobs.QueueDeliveries, taskID); err != nil {
			t.Fatal(err)
		}
		waitForMessage(t, srv, key, quinn["id"].(string), 15*time.Second, "the deferred opening to be sent", func(m map[string]any) bool { return m["status"] == "sent" })
	})
}

// queuedDeliveries counts the delivery tasks of a message's retries (delivery rounds after the first)
// in any state of the critical queue.
func queuedDeliveries(t *testing.T, messageID string) int {
	t.Helper()
	inspector := asynq.NewInspector(env.Asynq)
	defer inspector.Close()
	n := 0
	for round := 1; round < 5; round++ {
		if _, err := inspector.GetTaskInfo(jobs.QueueDeliveries, fmt.Sprintf("deliver:%s:%d", messageID, round)); err == nil {
			n++
		}
	}
	return n
}
