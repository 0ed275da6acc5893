package api

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"funnelchat/models/report"
)

// HTTP metrics, by route pattern (not raw path, so ids do not explode the label space).
var (
	httpRequests = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "funnelchat_http_requests_total", Help: "HTTP requests by route, method and status.",
	}, []string{"route", "method", "status"})
	httpLatency = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name: "funnelchat_http_request_duration_seconds", Help: "HTTP request latency by route and method.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"route", "method"})
	rateLimitRejections = promauto.NewCounter(prometheus.CounterOpts{
		Name: "funnelchat_rate_limit_rejections_total", Help: "Requests refused with 429 by the per-key rate limit.",
	})
	// The lag-tolerant reads (models/report, replica.go), by the database that served each query.
	replicaReads = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "funnelchat_replica_routed_reads_total",
		Help: "Queries of the reads a read replica may serve (conversation list, contact search, campaign report and CSV, consent export) by read and by the database that answered them (target: primary or replica).",
	}, []string{"read", "target"})
	replicaFallbacks = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "funnelchat_replica_fallbacks_total", Help: "Queries that failed on the read replica and ran again on the primary, by read.",
	}, []string{"read"})
	registerQueues  sync.Once
	registerReplica sync.Once
	// replicaNow is the replica whose lag /metrics reports: the process's one (nil: none).
	replicaNow atomic.Pointer[report.Replica]
)

// readObserver counts the routed reads by target (report.Reader.Route).
var readObserver = report.Observer{
	Read:     func(read string, target report.Target) { replicaReads.WithLabelValues(read, string(target)).Inc() },
	Fallback: func(read string) { replicaFallbacks.WithLabelValues(read).Inc() },
}

// useReplicaMetrics makes /metrics report rep's lag (the gauges are registered only in a process that
// has a replica).
func useReplicaMetrics(rep *report.Replica) {
	replicaNow.Store(rep)
	registerReplica.Do(func() { prometheus.MustRegister(replicaCollector{}) })
}

var (
	replicaLagDesc = prometheus.NewDesc("funnelchat_replica_lag_seconds",
		"How far behind the primary the read replica may be (every transaction acknowledged this long ago is on it); +Inf when unknown: unreachable, not a standby, or not measured yet.", nil, nil)
	replicaInUseDesc = prometheus.NewDesc("funnelchat_replica_in_use",
		"1 while the read replica serves the routed reads (it answers and is at most REPLICA_MAX_LAG behind), else 0.", nil, nil)
)

// replicaCollector reports the replica's lag at scrape time.
type replicaCollector struct{}

func (replicaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- replicaLagDesc
	ch <- replicaInUseDesc
}

func (replicaCollector) Collect(ch chan<- prometheus.Metric) {
	rep := replicaNow.Load()
	if rep == nil {
		return
	}
	lag, ok := rep.Lag()
	seconds := math.Inf(1)
	if ok {
		seconds = lag.Seconds()
	}
	inUse := 0.0
	if rep.InUse() {
		inUse = 1
	}
	ch <- prometheus.MustNewConstMetric(replicaLagDesc, prometheus.GaugeValue, seconds)
	ch <- prometheus.MustNewConstMetric(replicaInUseDesc, prometheus.GaugeValue, inUse)
}

// observeRequest records one finished request.
func observeRequest(c *fiber.Ctx, took time.Duration) {
	// A request no endpoint matched ends on a middleware ("USE") route: one label for all of them.
	route := "unmatched"
	if r := c.Route(); r != nil && r.Method != "USE" {
		route = r.Path
	}
	// Label values are kept by the registry: copy the method out of fasthttp's reused buffer.
	method := strings.Clone(c.Method())
	httpRequests.WithLabelValues(route, method, strconv.Itoa(c.Response().StatusCode())).Inc()
	httpLatency.WithLabelValues(route, method).Observe(took.Seconds())
}

// metricsHandler serves GET /metrics: these, the worker's (in standalone mode), Go runtime metrics, and
// the size of every asynq queue read from Redis at scrape time.
func (s *Server) metricsHandler() fiber.Handler {
	if s.asynqRedis != nil {
		registerQueues.Do(func() { prometheus.MustRegister(newQueueCollector(asynq.NewInspector(s.asynqRedis))) })
	}
	return adaptor.HTTPHandler(promhttp.Handler())
}

// queueCollector reports asynq queue states, as asynqmon shows them.
type queueCollector struct {
	inspector *asynq.Inspector
	tasks     *prometheus.Desc
	processed *prometheus.Desc
	failed    *prometheus.Desc
}

func newQueueCollector(inspector *asynq.Inspector) *queueCollector {
	return &queueCollector{
		inspector: inspector,
		tasks:     prometheus.NewDesc("funnelchat_queue_tasks", "Tasks in an asynq queue by state.", []string{"queue", "state"}, nil),
		processed: prometheus.NewDesc("funnelchat_queue_processed_today", "Tasks processed today by queue.", []string{"queue"}, nil),
		failed:    prometheus.NewDesc("funnelchat_queue_failed_today", "Tasks failed today by queue.", []string{"queue"}, nil),
	}
}

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.tasks
	ch <- q.processed
	ch <- q.failed
}

func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	queues, err := q.inspector.Queues()
	if err != nil {
		return // Redis down: the scrape shows the rest
	}
	for _, name := range queues {
		info, err := q.inspector.GetQueueInfo(name)
		if err != nil {
			continue
		}
		for state, n := range map[string]int{
			"pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled,
			"retry": info.Retry, "archived": info.Archived,
		} {
			ch <- prometheus.MustNewConstMetric(q.tasks, prometheus.GaugeValue, float64(n), name, state)
		}
		ch <- prometheus.MustNewConstMetric(q.processed, prometheus.GaugeValue, float64(info.Processed), name)
		ch <- prometheus.MustNewConstMetric(q.failed, prometheus.GaugeValue, float64(info.Failed), name)
	}
}
