package jobs

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Worker metrics. In standalone mode the api's /metrics shows them; a separate worker process keeps
// them in its own registry (not yet served).
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
)
