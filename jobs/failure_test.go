package jobs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

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
