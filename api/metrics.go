package api

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	registerQueues sync.Once
)

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
