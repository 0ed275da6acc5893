package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestMetrics(t *testing.T) {
	srv := startServer(t, "REQUIRE_HTTPS=true", "WEBHOOK_ALLOW_PRIVATE=true")
	plain := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, plain, hook)
	expect(t, do(t, "GET", plain.URL+"/v1/contacts/ct_missing", key, nil), http.StatusNotFound, "NOT_FOUND")
	incoming(t, plain, key, "metrics-1", "mo", "hello")
	waitFor(t, 10*time.Second, "a delivered reply", func() bool { return len(hook.deliveries()) == 1 })

	// Scrapers run inside the network: /metrics answers over plain HTTP even when HTTPS is required.
	var body string
	waitFor(t, 5*time.Second, "the delivery to be counted", func() bool {
		r := do(t, "GET", srv.URL+"/metrics", "", nil)
		body = string(r.Body)
		return r.Status == http.StatusOK && strings.Contains(body, `funnelchat_deliveries_total{outcome="sent",transport="custom"}`)
	})
	for _, want := range []string{
		`funnelchat_http_requests_total{method="GET",route="/v1/contacts/:id",status="404"}`,
		`funnelchat_http_request_duration_seconds_bucket{method="POST",route="/v1/incoming_custom_channel_message"`,
		`funnelchat_bot_reply_duration_seconds_count`,
		`funnelchat_rate_limit_rejections_total`,
		`funnelchat_queue_tasks{queue="default",state="pending"}`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "ct_missing") || strings.Contains(body, key) {
		t.Fatal("/metrics must not carry ids or keys in labels")
	}
}
