// Package app holds the use cases that the JSON API (package api) and the inbox (package inbox) both
// carry out: every store write the two both make, with the "store, then enqueue" flows and the checks
// that come before a write. Each is written once here, so that the two transports cannot drift apart
// in what they store, what they queue, and what they do when the queue is unavailable (README,
// "Layout"); reads stay with the transports. Many methods only delegate to the store today: they are
// here so that a rule added to one of these writes later is added for both. It knows nothing of HTTP.
package app

import (
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

// EnqueueTimeout bounds an enqueue on the request path: work stored but not queued is answered 503
// (incoming messages, which their sender retries) or left to the sweep (sends), sooner than a
// client's own timeout would expire.
const EnqueueTimeout = 2 * time.Second

// Deps are the use cases' dependencies, owned by the caller.
type Deps struct {
	Config *config.Config
	Store  *models.Store
	Queue  *jobs.Queue
	Redis  redis.UniversalClient
	// Logger writes the use cases' warnings; give it the request's context (the ...Context methods)
	// so that they carry the request id.
	Logger *slog.Logger
}

// App runs the use cases.
type App struct {
	cfg   *config.Config
	store *models.Store
	queue *jobs.Queue
	redis redis.UniversalClient
	log   *slog.Logger
}

// New returns the use cases over d.
func New(d Deps) *App {
	a := &App{cfg: d.Config, store: d.Store, queue: d.Queue, redis: d.Redis, log: d.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	return a
}

// Store is the store the use cases write to, for the reads a transport makes itself.
func (a *App) Store() *models.Store { return a.store }
