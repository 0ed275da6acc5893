package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/uptrace/bun"

	"funnelchat/jobs"
)

// retryHorizon covers every retry the test worker schedules (testWorkerEnv): webhook retries after
// 200-400 ms and bot retries after 50 ms, which asynq runs once their whole second has begun and its
// forwarder (every 500 ms, jobs.NewWorker) has moved them, and a campaign opening paced a slot (3 s at
// the default rate) after the pacer's burst. A task due within it is coming now; one due later (a
// retry a test set an hour out, a follow-up days ahead) is not.
const retryHorizon = 5 * time.Second

// waitDrained waits until the worker has nothing left to do for the account: at one moment, no task
// that works for it is pending or active, and none is scheduled or retrying to run within `within`.
// Its use is to prove that nothing more happened ("no second reply", "no retry"): the service's
// background work is all done by tasks, and a task's follow-on work (a retry, a delivery it hands on)
// is in Redis before the task leaves the active state, so once the account's tasks are drained the
// effects the test looks for have happened or will not (within the horizon). The api holds nothing back
// for later: a request is answered after its enqueue (a bot reply waits for its batch,
// jobs/bot_batch.go), so the queues hold all that the test's answered requests asked for. A sweep that
// begins later may still find work the database owes; tests of the sweep wait for one (waitSweeps).
//
// Only the account's tasks count, not all of them: tests that start no worker leave tasks in the
// package's Redis, which the running worker takes (their receivers are gone, so they fail and retry for
// seconds), and waiting for those would make one test's time depend on what ran before it. A task
// names the rows it works for (a message, an alert, a campaign send, an account), and the rows name
// their account. A task that names no account (the sweep, which may be queueing the account's work),
// an unknown task type, or rows that cannot be found count as the account's: the wait may be longer,
// never short.
func waitDrained(t testing.TB, accountID string, within time.Duration) {
	t.Helper()
	inspector := asynq.NewInspector(env.Asynq)
	defer inspector.Close()
	const timeout = 60 * time.Second
	start := time.Now()
	var last string // what the wait waited for last, logged (seen with -v or on failure)
	for {
		busy, err := accountBusy(t.Context(), inspector, accountID, within)
		if err != nil {
			t.Fatal(err)
		}
		if busy == "" {
			if last != "" {
				t.Logf("the account's tasks drained after %s; last waited for: %s", time.Since(start).Round(time.Millisecond), last)
			}
			return
		}
		last = busy
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %s waiting for the account's tasks to drain (due within %s): %s", timeout, within, busy)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// accountBusy reports a task of the account left to run ("" when there is none). Its reads are not one
// snapshot, so they follow the way a task moves: the scheduled and retrying tasks due within the
// horizon, then the pending ones, then the active ones, then the retrying ones again. A task that
// moves on between two reads is read again in its next state: one that leaves the active state for
// the retry set (a paced opening, an outage's wait: no failure) in the second reading of it, one that
// ends or fails by the move of its queue's processed total, read before and after (a change makes the
// whole read busy).
func accountBusy(ctx context.Context, inspector *asynq.Inspector, accountID string, within time.Duration) (string, error) {
	before, err := processedTotals(inspector)
	if err != nil {
		return "", err
	}
	horizon := time.Now().Add(within)
	var tasks []*asynq.TaskInfo
	for _, list := range []func(string, ...asynq.ListOption) ([]*asynq.TaskInfo, error){
		inspector.ListScheduledTasks, inspector.ListRetryTasks, inspector.ListPendingTasks, inspector.ListActiveTasks,
		inspector.ListRetryTasks,
	} {
		for q := range before {
			// Scheduled and retrying tasks come earliest first: the pages stop at the horizon.
			for page := 1; ; page++ {
				got, err := list(q, asynq.PageSize(500), asynq.Page(page))
				if err != nil {
					return "", err
				}
				for _, task := range got {
					if task.NextProcessAt.IsZero() || task.NextProcessAt.Before(horizon) {
						tasks = append(tasks, task)
					}
				}
				if len(got) < 500 || !got[len(got)-1].NextProcessAt.Before(horizon) {
					break
				}
			}
		}
	}
	after, err := processedTotals(inspector)
	if err != nil {
		return "", err
	}
	if !maps.Equal(before, after) {
		return "a task ran, or a queue appeared, while the queues were read", nil
	}
	return firstOfAccount(ctx, tasks, accountID)
}

// processedTotals is each queue's count of tasks that left the active state (asynq lists a queue from
// its first task on).
func processedTotals(inspector *asynq.Inspector) (map[string]int, error) {
	names, err := inspector.Queues()
	if err != nil {
		return nil, err
	}
	totals := map[string]int{}
	for _, q := range names {
		info, err := inspector.GetQueueInfo(q)
		if err != nil {
			return nil, err
		}
		totals[q] = info.ProcessedTotal
	}
	return totals, nil
}

// taskRows is what a task works for: rows of the messages, alerts and campaign_sends tables, or an
// account itself.
type taskRows struct{ messages, alerts, sends, accounts []string }

// rowsOf reads the rows a task names from its payload; false for a task that names none (the sweep) or
// of a type it does not know.
func rowsOf(task *asynq.TaskInfo) (taskRows, bool) {
	var r taskRows
	decode := func(v any) bool { return json.Unmarshal(task.Payload, v) == nil }
	switch task.Type {
	case jobs.TypeBotReply:
		var p jobs.BotReplyPayload
		return r, decode(&p) && set(&r.messages, p.MessageID)
	case jobs.TypeBotReplies:
		var p jobs.BotRepliesPayload
		ok := decode(&p)
		r.messages = p.MessageIDs
		return r, ok
	case jobs.TypeWebhookDeliver:
		var p jobs.DeliverPayload
		return r, decode(&p) && set(&r.messages, p.MessageID)
	case jobs.TypeMediaCheck:
		var p jobs.MediaCheckPayload
		return r, decode(&p) && set(&r.messages, p.MessageID)
	case jobs.TypeAlertDeliver:
		var p jobs.AlertPayload
		return r, decode(&p) && set(&r.alerts, p.AlertID)
	case jobs.TypeCampaignOpening:
		var p jobs.OpeningPayload
		return r, decode(&p) && set(&r.sends, p.SendID)
	case jobs.TypeCampaignFollowUp:
		var p jobs.FollowUpPayload
		return r, decode(&p) && set(&r.sends, p.SendID)
	case jobs.TypeWebhookTest:
		var p jobs.WebhookTestPayload
		return r, decode(&p) && set(&r.accounts, p.AccountID)
	case jobs.TypeAutoRecharge:
		var p jobs.RechargePayload
		return r, decode(&p) && set(&r.accounts, p.SubAccountID)
	}
	return r, false
}

// set makes *ids the one id, and reports whether there is one.
func set(ids *[]string, id string) bool {
	*ids = []string{id}
	return id != ""
}

// firstOfAccount describes the first of tasks that works for the account, or counts as its (rowsOf,
// rows not found); "" when there is none.
func firstOfAccount(ctx context.Context, tasks []*asynq.TaskInfo, accountID string) (string, error) {
	all := map[string]taskRows{}
	var wanted taskRows
	for _, task := range tasks {
		r, ok := rowsOf(task)
		if !ok {
			return describe(task, "names no account"), nil
		}
		all[task.ID] = r
		wanted.messages = append(wanted.messages, r.messages...)
		wanted.alerts = append(wanted.alerts, r.alerts...)
		wanted.sends = append(wanted.sends, r.sends...)
	}
	owner := map[string]string{} // row id -> account id
	for table, ids := range map[string][]string{"messages": wanted.messages, "alerts": wanted.alerts, "campaign_sends": wanted.sends} {
		if len(ids) == 0 {
			continue
		}
		var rows []struct {
			ID        string `bun:"id"`
			AccountID string `bun:"account_id"`
		}
		if err := env.Store.DB().NewSelect().Table(table).Column("id", "account_id").
			Where("id IN (?)", bun.In(ids)).Scan(ctx, &rows); err != nil {
			return "", fmt.Errorf("the accounts of queued tasks' %s: %w", table, err)
		}
		for _, row := range rows {
			owner[row.ID] = row.AccountID
		}
	}
	for _, task := range tasks {
		r := all[task.ID]
		for _, ids := range [][]string{r.messages, r.alerts, r.sends} {
			for _, id := range ids {
				switch owner[id] {
				case accountID:
					return describe(task, "is the account's"), nil
				case "":
					return describe(task, "names "+id+", not found"), nil
				}
			}
		}
		for _, id := range r.accounts {
			if id == accountID {
				return describe(task, "is the account's"), nil
			}
		}
	}
	return "", nil
}

func describe(task *asynq.TaskInfo, why string) string {
	return fmt.Sprintf("%s task %s %s in queue %s (due %s) %s", task.State, task.Type, task.ID, task.Queue,
		task.NextProcessAt.Format(time.StampMilli), why)
}

// waitSweeps waits until n sweeps of the worker h, each begun after the previous one ended and the
// first after the call, have run to their end (jobs.Handler.LastSweep).
func waitSweeps(t testing.TB, h *jobs.Handler, n int) {
	t.Helper()
	for i := range n {
		waitSweepAfter(t, h, time.Now(), fmt.Sprintf("sweep %d of %d", i+1, n))
	}
}

// waitSweepAfter waits until a sweep of the worker h that began after `after` has run to its end.
func waitSweepAfter(t testing.TB, h *jobs.Handler, after time.Time, what string) {
	t.Helper()
	waitFor(t, 30*time.Second, what, func() bool { return h.LastSweep().After(after) })
}
