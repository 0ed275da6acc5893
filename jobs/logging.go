package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// logAttrsKey is the context key under which WithLogAttrs keeps attributes.
type logAttrsKey struct{}

// WithLogAttrs returns a context whose log lines (written with a Context method of a logger built on
// NewLogHandler) carry attrs, in addition to any the context carried already.
func WithLogAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	prev, _ := ctx.Value(logAttrsKey{}).([]slog.Attr)
	return context.WithValue(ctx, logAttrsKey{}, append(append([]slog.Attr(nil), prev...), attrs...))
}

// NewLogHandler wraps h so that every record logged with a context carries that context's
// WithLogAttrs attributes: a task's id and type reach every line its handler writes.
func NewLogHandler(h slog.Handler) slog.Handler { return ctxLogHandler{h} }

type ctxLogHandler struct{ slog.Handler }

func (c ctxLogHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs, ok := ctx.Value(logAttrsKey{}).([]slog.Attr); ok {
		r.AddAttrs(attrs...)
	}
	return c.Handler.Handle(ctx, r)
}

func (c ctxLogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return ctxLogHandler{c.Handler.WithAttrs(attrs)}
}

func (c ctxLogHandler) WithGroup(name string) slog.Handler {
	return ctxLogHandler{c.Handler.WithGroup(name)}
}

// logTasks is the worker's access log: it puts the task's type and id on the context of every log line
// the handler writes, and writes one line per task run with its outcome and duration. Payloads (which
// hold only ids) and message bodies are never logged.
func (h *Handler) logTasks(next asynq.Handler) asynq.Handler {
	return asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		retry, _ := asynq.GetRetryCount(ctx)
		ctx = WithLogAttrs(ctx, slog.String("task_type", t.Type()), slog.String("task_id", id))
		start := time.Now()
		err := next.ProcessTask(ctx, t)
		level, outcome := taskOutcome(err)
		attrs := []slog.Attr{slog.String("outcome", outcome), slog.Int("retry", retry),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000)}
		var rl *rateLimited
		if errors.As(err, &rl) {
			attrs = append(attrs, slog.Float64("next_slot_s", rl.retryAfter.Seconds()))
		}
		h.Log.LogAttrs(ctx, level, "task", attrs...)
		return err
	})
}

// taskOutcome names how a task run ended, at the level an operator should see it. A campaign send
// held back by pacing or quiet hours (rateLimited) is the plan working, not an error: logged as
// "paced" at INFO, never WARN, so that an operator alerting on WARN is not paged for every paced
// opening. (asynq does not count it as failed either: see isFailure.)
func taskOutcome(err error) (slog.Level, string) {
	var rl *rateLimited
	switch {
	case err == nil:
		return slog.LevelInfo, "ok"
	case errors.As(err, &rl):
		return slog.LevelInfo, "paced"
	}
	// The error itself is logged once, with its details, by taskFailed.
	return slog.LevelWarn, "error"
}

// taskFailed is the worker's asynq ErrorHandler: it logs a task's error once, with its details, unless
// it is no failure at all (taskOutcome).
func taskFailed(log *slog.Logger) asynq.ErrorHandlerFunc {
	return func(ctx context.Context, task *asynq.Task, err error) {
		if level, _ := taskOutcome(err); level < slog.LevelWarn {
			return
		}
		id, _ := asynq.GetTaskID(ctx)
		retried, _ := asynq.GetRetryCount(ctx)
		log.WarnContext(ctx, "task failed", "task_type", task.Type(), "task_id", id, "retry", retried, "error", err.Error())
	}
}
