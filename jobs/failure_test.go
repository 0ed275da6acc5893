package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

func TestIsFailure(t *testing.T) {
	dbDown := fmt.Errorf("select message: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"a paced send held back", &rateLimited{}, false},
		{"our database unreachable", dbDown, false},
		{"a query past its deadline", fmt.Errorf("load: %w", context.DeadlineExceeded), false},
		{"the model unreachable", &externalError{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, true},
		{"a webhook answered 500", &retryAt{err: errors.New("HTTP 500")}, true},
		{"any other error", errors.New("boom"), true},
		{"a task not to retry", fmt.Errorf("bad payload: %w", asynq.SkipRetry), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := isFailure(c.err); got != c.want {
				t.Fatalf("isFailure(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// A task whose worker died is handed back by asynq's recoverer a minute or two later with
// ErrLeaseExpired: it runs again at once, whatever its type's backoff, and it spends a retry.
func TestATaskWhoseWorkerDiedRunsAgainAtOnce(t *testing.T) {
	retry := retryDelay([]time.Duration{time.Minute}, []time.Duration{30 * time.Second})
	opening, _ := json.Marshal(OpeningPayload{SendID: "send_1"})
	reply, _ := json.Marshal(BotReplyPayload{MessageID: "msg_1"})
	for _, task := range []*asynq.Task{
		asynq.NewTask(TypeCampaignOpening, opening),
		asynq.NewTask(TypeWebhookDeliver, []byte(`{"messageId":"msg_1"}`)),
		asynq.NewTask(TypeBotReply, reply),
		asynq.NewTask(TypeBotReplies, []byte(`{}`)),
	} {
		if d := retry(0, asynq.ErrLeaseExpired, task); d != 0 {
			t.Errorf("%s after its worker died: runs again in %s, want at once", task.Type(), d)
		}
		if d := retry(0, errors.New("boom"), task); d < time.Second {
			t.Errorf("%s after a failure: runs again in %s, want its backoff", task.Type(), d)
		}
	}
	if !isFailure(asynq.ErrLeaseExpired) {
		t.Error("a task whose worker died spends no retry: one that kills every worker would run forever")
	}
}
