package main_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"time"
)

// monitoringVars open the api's queue dashboard (README, ADMIN_USER) to a deployment's test, which reads
// the queues through it from outside the processes (waitQueuesEmpty): in standalone mode Redis is
// inside the api, where nothing else can read it.
var monitoringVars = []string{"ADMIN_USER=" + monitorUser, "ADMIN_PASSWORD=" + monitorPassword}

const monitorUser, monitorPassword = "ops", "queues-seen-from-outside"

// waitQueuesEmpty waits until no task of the deployment (started with monitoringVars) is pending,
// active, scheduled or retrying. The deployment is the test's alone, so every task in it is the test's
// own. A kill test uses it to prove that nothing more is coming: each delivery is made by a task, a
// task that would deliver again after a kill (rerun when its lease expires, or queued by the sweep) is
// in one of those states until it has run, and once the message is recorded as sent the sweep owes it
// nothing. The dashboard reads each queue's counts in one script but the queues one after the other,
// so the queues are read twice: a task seen in any state, or one that ran between the two reads (its
// queue's processed count moved), makes the read busy.
func (d *killDeployment) waitQueuesEmpty(timeout time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		first, err := d.queues()
		var busy string
		if err == nil {
			var second map[string]queueCounts
			if second, err = d.queues(); err == nil {
				busy = queuesBusy(first, second)
			}
		}
		if err != nil {
			busy = err.Error()
		}
		if busy == "" {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("timed out after %s waiting for the deployment's queues to be empty: %s", timeout, busy)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// queueCounts is a queue's line on the dashboard's /api/queues.
type queueCounts struct {
	Active, Pending, Scheduled, Retry, Processed int
}

// queues reads every queue's counts from the dashboard.
func (d *killDeployment) queues() (map[string]queueCounts, error) {
	req, err := http.NewRequest("GET", d.base+"/monitoring/api/queues", nil)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(monitorUser, monitorPassword)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the queue dashboard answered %d", res.StatusCode)
	}
	var body struct {
		Queues []struct {
			Queue string `json:"queue"`
			queueCounts
		} `json:"queues"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return nil, err
	}
	out := map[string]queueCounts{}
	for _, q := range body.Queues {
		out[q.Queue] = q.queueCounts
	}
	return out, nil
}

// queuesBusy says what two reads of the queues show left to do, "" for nothing.
func queuesBusy(first, second map[string]queueCounts) string {
	for _, read := range []map[string]queueCounts{first, second} {
		for name, q := range read {
			if q.Active+q.Pending+q.Scheduled+q.Retry > 0 {
				return fmt.Sprintf("queue %s: %+v", name, q)
			}
		}
	}
	if !maps.Equal(first, second) {
		return "a task ran between two reads"
	}
	return ""
}
