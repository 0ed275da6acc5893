// Package jobs is the background half of the service: asynq task types, payloads, enqueue helpers used
// by the api, and the handlers the worker runs (bot replies, webhook deliveries, campaign sends).
package jobs

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"funnelchat/config"
	"funnelchat/models"
)

// Queues with their priorities: webhook deliveries first, then bot replies, paced campaign openings,
// and follow-ups, sweeps and alerts last.
//
// asynq keeps each queue under one hash tag (asynq:{<queue>}:...), so on Redis Cluster a queue is one
// slot, on one master. The names are chosen so that, on a cluster whose three masters hold the slots
// 0-5460, 5461-10922 and 10923-16383 (what redis-cli --cluster create makes of three masters), each of
// the two busy queues has a master of its own: deliveries hashes to slot 3880 (the first), default to
// 5718 (the second), openings to 11504 and low to 15214 (both the third). README, "Redis Cluster".
const (
	QueueDeliveries = "deliveries"
	QueueDefault    = "default"
	QueueOpenings   = "openings"
	QueueLow        = "low"
)

// QueuePriorities weighs the queues for asynq's weighted priority.
var QueuePriorities = map[string]int{
	QueueDeliveries: 6,
	QueueDefault:    3,
	QueueOpenings:   2,
	QueueLow:        1,
}

// LegacyQueues are the earlier names of renamed queues: critical (now deliveries) and campaigns (now
// openings), which shared one cluster slot range with default. Tasks that processes of the earlier
// release queued there (pending, scheduled for later, or waiting for a retry) are still owed, so
// every worker also serves these queues, on a server of its own that polls them once a second (drainServer).
// A task id is unique within its queue only: a task in an old queue and its twin queued anew in the
// new one (by the sweep) are two tasks, and the handlers do the work once (their state checks and
// conditional writes, as for a task rerun after a crash; a delivery sent twice carries the same
// webhook-id). Drop this once asynqmon shows both empty on every deployment.
var LegacyQueues = map[string]int{
	"critical":  2,
	"campaigns": 1,
}

// shutdownTimeout leaves room inside the 10 s that a platform gives between SIGTERM and SIGKILL.
const shutdownTimeout = 8 * time.Second

// Handler holds what task handlers need. Register adds every task type it handles to a mux.
type Handler struct {
	Store     *models.Store
	Config    *config.Config
	Log       *slog.Logger
	Queue     *Queue
	Redis     redis.UniversalClient
	Bot       Bot
	Sender    *WebhookSender
	Providers *ProviderClient
	pacer     pacer
	// BotRetryDelays space the retries of a bot reply whose model call failed (the defaults unless a
	// test shortens them); after the last one the bot gives up and raises an alert.
	BotRetryDelays []time.Duration
	// slots bounds the work of the process (bot_batch.go); NewWorker sets it.
	slots workSlots
	// swept is when the latest complete sweep began (sweep.go, LastSweep).
	swept atomic.Int64
}

// NewHandler builds the handlers' dependencies from the configuration: the bot (an LLM or the
// offline bot) and the webhook sender (with the SSRF guard unless private targets are allowed).
func NewHandler(store *models.Store, cfg *config.Config, log *slog.Logger, queue *Queue, rdb redis.UniversalClient) *Handler {
	return &Handler{
		Store: store, Config: cfg, Log: log, Queue: queue, Redis: rdb,
		Bot:    NewBot(cfg, nil),
		Sender: NewWebhookSender(cfg.WebhookTimeout, cfg.WebhookAllowPrivate),
		Providers: NewProviderClient(ProviderEndpoints{
			SMS: cfg.SMSAPIBaseURL, WhatsApp: cfg.WhatsAppAPIBaseURL, Messenger: cfg.MessengerAPIBaseURL, Instagram: cfg.InstagramAPIBaseURL,
		}, cfg.WebhookTimeout),
		pacer: pacer{rdb: rdb},

		BotRetryDelays: []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second},
	}
}

// Register is the registry of task handlers: each task type of the service is added here, with the
// handler that runs it.
func (h *Handler) Register(mux *asynq.ServeMux) {
	mux.HandleFunc(TypeBotReply, h.handleBotReply)
	mux.HandleFunc(TypeBotReplies, h.handleBotReplies)
	mux.HandleFunc(TypeWebhookDeliver, h.handleDeliver)
	mux.HandleFunc(TypeAlertDeliver, h.handleAlert)
	mux.HandleFunc(TypeWebhookTest, h.handleWebhookTest)
	mux.HandleFunc(TypeSweep, h.handleSweep)
	mux.HandleFunc(TypePartitions, h.handlePartitions)
	mux.HandleFunc(TypeMediaCheck, h.handleMediaCheck)
	mux.HandleFunc(TypeCampaignOpening, h.handleOpening)
	mux.HandleFunc(TypeCampaignFollowUp, h.handleFollowUp)
	mux.HandleFunc(TypeAutoRecharge, h.handleRecharge)
}

// Worker is the asynq servers on the service's queues, with the scheduler that enqueues the sweep.
//
// An asynq server fetches its tasks one at a time, in one loop, each fetch a round trip per queue it
// tries until one has a task (the weighted order tries about 2.4 queues for a bot reply). Under load
// that loop, not the handlers, caps the replies a process answers. So a worker runs, beside the server
// for all four queues, servers that take only bot replies (the default queue), each with its own loop:
// bot replies are fetched in parallel and in one round trip each, while deliveries, campaign sends and
// the low queue keep their weighted priority on the first server (which takes bot replies too). The
// reply servers' slots are also a bulkhead: receivers that hang until their timeout can hold the first
// server's slots, not every slot of the process.
//
// Every server and the scheduler work on one Redis client (the process's, with SharedRedis).
type Worker struct {
	srvs      []*asynq.Server
	mux       *asynq.ServeMux
	scheduler *asynq.Scheduler
	sweep     time.Duration
	// rdb is the servers' client; owned: the Worker made it and closes it at Shutdown.
	rdb   redis.UniversalClient
	owned bool
}

// concurrencies shares WORKER_CONCURRENCY among a worker's servers: the all-queue server keeps half (at
// least 2), since campaign sends, delivery retries and alerts run only there and a slow receiver holds
// a slot for its whole timeout; two bot-reply servers share the other half. Below 6 a single server
// takes everything, as one loop keeps up with so few tasks.
func concurrencies(total int) []int {
	const replyServers = 2
	if total < 6 {
		return []int{total}
	}
	all := max(total/2, 2)
	out := []int{all}
	rest := total - all
	for i := range replyServers {
		out = append(out, rest/replyServers+btoi(i < rest%replyServers))
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// drainConcurrency and drainInterval are the legacy queues' server's (LegacyQueues): a slot or two of
// WORKER_CONCURRENCY (workSlots bounds the process as a whole) and a look five times a second. Not
// less often: an asynq server that found its queues empty sleeps up to 1.5 intervals before it looks
// again, and its Shutdown waits for that sleep, so at one second every worker's stop took about a
// second longer (measured on the api tests, which start and stop a worker in many tests).
const (
	drainConcurrency = 2
	drainInterval    = 200 * time.Millisecond
)

// NewWorker builds a worker that processes the queues on redisOpt with h's handlers.
func NewWorker(redisOpt asynq.RedisConnOpt, cfg *config.Config, h *Handler, log *slog.Logger) *Worker {
	mux := asynq.NewServeMux()
	h.slots = newWorkSlots(cfg.WorkerConcurrency)
	mux.Use(h.logTasks, h.holdSlot)
	h.Register(mux)
	logger := asynqLogger{log: log.With("component", "asynq")}
	rdb, owned := clientOf(redisOpt)
	w := &Worker{mux: mux, sweep: cfg.SweepInterval, rdb: rdb, owned: owned}
	server := func(n int, queues map[string]int, check, delayed time.Duration) *asynq.Server {
		return asynq.NewServerFromRedisClient(rdb, asynq.Config{
			Concurrency:              n,
			Queues:                   queues,
			ShutdownTimeout:          shutdownTimeout,
			TaskCheckInterval:        check,
			DelayedTaskCheckInterval: delayed,
			RetryDelayFunc:           retryDelay(cfg.WebhookRetrySchedule, h.BotRetryDelays),
			IsFailure:                isFailure,
			Logger:                   logger,
			LogLevel:                 asynqLevel(cfg.LogLevel),
			ErrorHandler:             taskFailed(log),
		})
	}
	for i, n := range concurrencies(cfg.WorkerConcurrency) {
		queues := QueuePriorities
		if i > 0 {
			queues = map[string]int{QueueDefault: 1}
		}
		// asynq polls an empty queue every second and forwards scheduled tasks every five by default;
		// both would add that much latency to replies and jitter to campaign pacing. A server that
		// found its queues empty sleeps 0.5 to 1.5 intervals before it looks again, so at light load a
		// reply waits half an interval on average: with 50 ms the bot's replies took 13 ms from accept
		// to webhook at the median (at 100 messages/s), with 20 ms 6 ms. An idle worker pays for it in
		// polls: about 300 scripts/s in Redis and 7% of a core in the worker at 20 ms, against 140/s
		// and 3% at 50 ms (docs/performance.md).
		w.srvs = append(w.srvs, server(n, queues, 20*time.Millisecond, 500*time.Millisecond))
	}
	w.srvs = append(w.srvs, server(drainConcurrency, LegacyQueues, drainInterval, drainInterval))
	w.scheduler = asynq.NewSchedulerFromRedisClient(rdb, &asynq.SchedulerOpts{Logger: logger, LogLevel: asynqLevel(cfg.LogLevel)})
	return w
}

// Start begins processing and scheduling in the background.
func (w *Worker) Start() error {
	// Every worker registers the sweep; Unique lets one enqueue per interval across all of them.
	if _, err := w.scheduler.Register(fmt.Sprintf("@every %s", w.sweep), asynq.NewTask(TypeSweep, nil),
		asynq.Queue(QueueLow), asynq.Unique(w.sweep), asynq.MaxRetry(0)); err != nil {
		return fmt.Errorf("register sweep: %w", err)
	}
	// The partitions ahead and the retention (partitions.go), hourly: idempotent, and a run that found
	// a lock taken (it waits for one at most a few seconds at a time) is done by the next.
	if _, err := w.scheduler.Register("@every 1h", asynq.NewTask(TypePartitions, nil),
		asynq.Queue(QueueLow), asynq.Unique(time.Hour), asynq.MaxRetry(0), asynq.Timeout(time.Hour)); err != nil {
		return fmt.Errorf("register partitions: %w", err)
	}
	if err := w.scheduler.Start(); err != nil {
		return fmt.Errorf("start scheduler: %w", err)
	}
	for i, srv := range w.srvs {
		if err := srv.Start(w.mux); err != nil {
			for _, started := range w.srvs[:i] {
				started.Shutdown()
			}
			w.scheduler.Shutdown()
			return fmt.Errorf("start worker: %w", err)
		}
	}
	return nil
}

// Shutdown stops fetching tasks and waits up to the shutdown timeout for running ones; unfinished tasks
// go back to their queue. The servers stop together, so the wait is one timeout, not one per server.
func (w *Worker) Shutdown() {
	w.scheduler.Shutdown()
	for _, srv := range w.srvs {
		srv.Stop() // no new tasks anywhere first
	}
	var wg sync.WaitGroup
	for _, srv := range w.srvs {
		wg.Go(srv.Shutdown)
	}
	wg.Wait()
	if w.owned {
		_ = w.rdb.Close()
	}
}

// asynqLogger sends asynq's own log lines to slog.
type asynqLogger struct{ log *slog.Logger }

func (l asynqLogger) Debug(args ...any) { l.log.Debug(fmt.Sprint(args...)) }
func (l asynqLogger) Info(args ...any)  { l.log.Info(fmt.Sprint(args...)) }
func (l asynqLogger) Warn(args ...any)  { l.log.Warn(fmt.Sprint(args...)) }
func (l asynqLogger) Error(args ...any) {
	msg := fmt.Sprint(args...)
	if strings.HasPrefix(msg, sharedCloseRefused) {
		// The scheduler's Shutdown tries to close the client it was given (NewSchedulerFromRedisClient),
		// and asynq refuses because it is shared: as it should, the Worker's owner closes it.
		l.log.Debug(msg)
		return
	}
	l.log.Error(msg)
}

// sharedCloseRefused begins what asynq's scheduler logs when it may not close a shared client.
const sharedCloseRefused = "Failed to close redis client connection: redis connection is shared"

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
