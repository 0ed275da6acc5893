package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/jobs"
)

// TestTasksInTheQueuesBeforeTheirRenameStillRun: the deliveries and the campaign openings were queued
// in "critical" and "campaigns" before those queues were renamed (jobs.LegacyQueues). Tasks that
// processes of the earlier release left there (here: a send's delivery and a campaign's opening, moved
// back to the old queues as such a process would have queued them, and due later, as a retry or a
// paced opening is) must still run once the new worker is up, and only once: the sweep,
// which finds the work owed meanwhile, must leave it to them rather than queue a twin in the new
// queue. The test waits out two sweep intervals before it starts the worker, so that its first sweep
// counts both as owed.
//
// Not parallel: a worker of another test on the package's Redis would take the tasks from the new
// queues before they are moved.
func TestTasksInTheQueuesBeforeTheirRenameStillRun(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	inspector := asynq.NewInspector(env.Asynq)
	defer inspector.Close()
	client := asynq.NewClient(env.Asynq)
	defer client.Close()

	// move takes the task naming id in its payload from the new queue and queues it in the old one
	// under the same task id, type, payload and retries, due later. It returns its id. The test makes
	// both due (RunTask) once it has seen the new worker's sweep leave them alone, rather than waiting
	// for a time that a loaded machine can reach before that sweep has run.
	const due = 10 * time.Minute
	move := func(from, to, field, id string) string {
		t.Helper()
		var found *asynq.TaskInfo
		waitFor(t, 10*time.Second, "the task of "+id+" in "+from, func() bool {
			for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){inspector.ListPendingTasks, inspector.ListScheduledTasks} {
				tasks, err := list(from, asynq.PageSize(1000))
				if err != nil {
					continue
				}
				for _, info := range tasks {
					var p map[string]any
					if json.Unmarshal(info.Payload, &p) == nil && p[field] == id {
						found = info
						return true
					}
				}
			}
			return false
		})
		if err := inspector.DeleteTask(from, found.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := client.Enqueue(asynq.NewTask(found.Type, found.Payload), asynq.TaskID(found.ID), asynq.Queue(to),
			asynq.MaxRetry(found.MaxRetry), asynq.ProcessIn(due)); err != nil {
			t.Fatal(err)
		}
		return found.ID
	}

	messageID := sendOutgoing(t, srv, key, "legacy-lead", "queued before the rename")
	delivery := move(jobs.QueueDeliveries, "critical", "messageId", messageID)

	campaignID, listID := liveCampaign(t, srv, key, nil)
	contact := namedContact(t, srv, key, "+14155550177", "Lea")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{contact}}), http.StatusCreated, "")
	var sendID string
	if err := env.Store.DB().NewSelect().TableExpr("campaign_sends").Column("id").Where("campaign_id = ?", campaignID).Scan(t.Context(), &sendID); err != nil {
		t.Fatal(err)
	}
	opening := move(jobs.QueueOpenings, "campaigns", "sendId", sendID)

	const sweep = time.Second
	time.Sleep(2*sweep + 100*time.Millisecond) // the sweep's cutoff: both are owed by its first look
	started := time.Now()
	h := startWorker(t, fmt.Sprintf("SWEEP_INTERVAL=%s", sweep))

	// twins lists the tasks of the same work in the new queues, in any state.
	twins := func() []string {
		var found []string
		for queue, prefix := range map[string]string{jobs.QueueDeliveries: "deliver:" + messageID + ":", jobs.QueueOpenings: opening} {
			for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
				inspector.ListPendingTasks, inspector.ListActiveTasks, inspector.ListScheduledTasks, inspector.ListRetryTasks} {
				tasks, _ := list(queue, asynq.PageSize(1000))
				for _, info := range tasks {
					if strings.HasPrefix(info.ID, prefix) {
						found = append(found, queue+" "+info.ID)
					}
				}
			}
		}
		return found
	}
	waitFor(t, 10*time.Second, "a whole sweep of the new worker", func() bool { return h.LastSweep().After(started) })
	for queue, id := range map[string]string{"critical": delivery, "campaigns": opening} {
		if info, err := inspector.GetTaskInfo(queue, id); err != nil || info.State != asynq.TaskStateScheduled {
			t.Fatalf("the task in %s is not waiting for its time any more (%v %v): the sweep came too late to test", queue, info, err)
		}
	}
	if twins := twins(); len(twins) > 0 || len(hook.deliveries()) > 0 {
		t.Fatalf("while the old queues' tasks waited, the sweep queued twins %v (%d deliveries)", twins, len(hook.deliveries()))
	}
	for queue, id := range map[string]string{"critical": delivery, "campaigns": opening} {
		if err := inspector.RunTask(queue, id); err != nil {
			t.Fatalf("make the task in %s due: %v", queue, err)
		}
	}

	waitFor(t, 20*time.Second, "the send and the opening at the webhook", func() bool { return len(hook.deliveries()) == 2 })
	waitFor(t, 20*time.Second, "the old queues to be empty", func() bool {
		for _, q := range []string{"critical", "campaigns"} {
			info, err := inspector.GetQueueInfo(q)
			if err != nil || info.Pending+info.Active+info.Scheduled+info.Retry > 0 || info.Processed == 0 {
				return false
			}
		}
		return true
	})
	// A twin could only come from a sweep, and a whole sweep that began once both had run owes them
	// nothing: after one, a twin queued by an earlier sweep is still in its queue or has delivered.
	ran := time.Now()
	waitFor(t, 20*time.Second, "a sweep that began after both ran", func() bool { return h.LastSweep().After(ran) })
	if twins := twins(); len(twins) > 0 {
		t.Errorf("twins in the new queues: %v", twins)
	}
	if got := hook.deliveries(); len(got) != 2 {
		for _, d := range got {
			t.Logf("delivery: %s", d.Body)
		}
		t.Fatalf("%d deliveries, want 2 (the send's and the opening's, once each)", len(got))
	}
}
