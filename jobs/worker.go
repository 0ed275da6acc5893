// Package jobs is the background half of the service: asynq task types, payloads, enqueue helpers used
// by the api, and the handlers the worker runs (bot replies, webhook deliveries, campaign sends).
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/config"
	"funnelchat/models"
)

// Queues of DESIGN.md section 5 with their priorities: webhook deliveries first, then bot replies,
// paced campaign sends, and follow-ups, sweeps and alerts last.
const (
	QueueCritical  = "critical"
	QueueDefault   = "default"
	QueueCampaigns = "campaigns"
	QueueLow       = "low"
)

// QueuePriorities weighs the queues for asynq's weighted priority.
var QueuePriorities = map[string]int{
	QueueCritical:  6,
	QueueDefault:   3,
	QueueCampaigns: 2,
	QueueLow:       1,
}

// shutdownTimeout leaves room inside the 10 s that a platform gives between SIGTERM and SIGKILL.
const shutdownTimeout = 8 * time.Second

// Handler holds what task handlers need. Register adds every task type it handles to a mux.
type Handler struct {
	Store  *models.Store
	Config *config.Config
	Log    *slog.Logger
}

// Register is the registry of task handlers: each task type of the service is added here, with the
// handler that runs it. Later features add their types to this list.
func (h *Handler) Register(mux *asynq.ServeMux) {
	_ = mux // the foundation has no task types yet; custom channels, campaigns and credits add theirs
}

// Worker is an asynq server on the service's queues.
type Worker struct {
	srv *asynq.Server
	mux *asynq.ServeMux
}

// NewWorker builds a worker that processes the queues on redisOpt with h's handlers.
func NewWorker(redisOpt asynq.RedisConnOpt, cfg *config.Config, h *Handler, log *slog.Logger) *Worker {
	mux := asynq.NewServeMux()
	h.Register(mux)
	srv := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:     cfg.WorkerConcurrency,
		Queues:          QueuePriorities,
		ShutdownTimeout: shutdownTimeout,
		// asynq polls an empty queue every second and forwards scheduled tasks every five by default;
		// both would add that much latency to replies and jitter to campaign pacing.
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 500 * time.Millisecond,
		Logger:                   asynqLogger{log: log.With("component", "asynq")},
		LogLevel:                 asynqLevel(cfg.LogLevel),
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, task *asynq.Task, err error) {
			id, _ := asynq.GetTaskID(ctx)
			retried, _ := asynq.GetRetryCount(ctx)
			log.Warn("task failed", "task_type", task.Type(), "task_id", id, "retry", retried, "error", err.Error())
		}),
	})
	return &Worker{srv: srv, mux: mux}
}

// Start begins processing in the background.
func (w *Worker) Start() error {
	if err := w.srv.Start(w.mux); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	return nil
}

// Shutdown stops fetching tasks and waits up to the shutdown timeout for running ones; unfinished tasks
// go back to their queue.
func (w *Worker) Shutdown() { w.srv.Shutdown() }

// asynqLogger sends asynq's own log lines to slog.
type asynqLogger struct{ log *slog.Logger }

func (l asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...)) }
func (l asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...)) }
func (l asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...)) }
func (l asynqLogger) Error(args ...any) { l.log.Error(fmt.Sprint(args...)) }
func (l asynqLogger) Fatal(args ...any) { l.log.Error(fmt.Sprint(args...)); os.Exit(1) }

func asynqLevel(l slog.Level) asynq.LogLevel {
	switch {
	case l <= slog.LevelDebug:
		return asynq.DebugLevel
	case l <= slog.LevelInfo:
		return asynq.InfoLevel
	case l <= slog.LevelWarn:
		return asynq.WarnLevel
	default:
		return asynq.ErrorLevel
	}
}
