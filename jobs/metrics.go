package jobs

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsServer serves a worker process's /metrics (Prometheus: deliveries, bot latency, campaign
// openings, Go runtime) and /healthz on port. A worker dyno has no router in front of it, so this is
// for scrapers on the private network; like the api's /metrics it has no authentication.
func MetricsServer(port int) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	return &http.Server{Addr: fmt.Sprintf(":%d", port), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}

// Worker metrics. In standalone mode the api's /metrics shows them; a separate worker process serves
// them on METRICS_PORT (see MetricsServer).
var (
	deliveries = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "funnelchat_deliveries_total", Help: "Delivery attempts by transport and outcome (sent, retry, failed).",
	}, []string{"transport", "outcome"})
	deliveryLatency = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name: "funnelchat_delivery_duration_seconds", Help: "Delivery attempt latency by transport.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12),
	}, []string{"transport"})
	botLatency = promauto.NewHistogram(prometheus.HistogramOpts{
		Name: "funnelchat_bot_reply_duration_seconds", Help: "Time the bot took to write a reply.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	})
	campaignSends = promauto.NewCounter(prometheus.CounterOpts{
		Name: "funnelchat_campaign_openings_total", Help: "Campaign opening messages written.",
	})
	campaignSendFailures = promauto.NewCounter(prometheus.CounterOpts{
		Name: "funnelchat_campaign_openings_failed_total", Help: "Campaign openings recorded as failed: the contact cannot be reached on the channel.",
	})
)
