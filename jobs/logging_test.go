package jobs

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

// A campaign send held back by pacing is logged as "paced" at INFO, and the worker's ErrorHandler
// writes nothing for it; a real error is logged at WARN by both. Every paced opening used to log
// "WARN task failed ... paced: next slot in 1.997s", paging an operator who alerts on WARN.
func TestPacedTasksAreNotLoggedAsFailures(t *testing.T) {
	cases := []struct {
		name        string
		err         error
		wantLevel   string
		wantOutcome string
		wantFailed  bool
	}{
		{"ok", nil, "INFO", "outcome=ok", false},
		{"paced", &rateLimited{retryAfter: 2 * time.Second}, "INFO", "outcome=paced", false},
		{"paced, wrapped", errors.Join(errors.New("opening"), &rateLimited{retryAfter: time.Second}), "INFO", "outcome=paced", false},
		{"a failure", errors.New("connection refused"), "WARN", "outcome=error", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
			h := &Handler{Log: log}
			task := asynq.NewTask(TypeCampaignOpening, nil)
			err := h.logTasks(asynq.HandlerFunc(func(context.Context, *asynq.Task) error { return tc.err })).ProcessTask(t.Context(), task)
			if !errors.Is(err, tc.err) {
				t.Fatalf("the middleware returned %v, want %v", err, tc.err)
			}
			if err != nil {
				taskFailed(log)(t.Context(), task, err)
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			access := lines[0]
			if !strings.Contains(access, "level="+tc.wantLevel) || !strings.Contains(access, tc.wantOutcome) {
				t.Errorf("access line %q, want level=%s and %s", access, tc.wantLevel, tc.wantOutcome)
			}
			failed := strings.Contains(buf.String(), "task failed")
			if failed != tc.wantFailed {
				t.Errorf("'task failed' logged: %v, want %v; log:\n%s", failed, tc.wantFailed, buf.String())
			}
			if !tc.wantFailed && strings.Contains(buf.String(), "level=WARN") {
				t.Errorf("a WARN line for a task that did not fail:\n%s", buf.String())
			}
		})
	}
}
