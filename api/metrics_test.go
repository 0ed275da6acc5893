package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scrapeMetrics reads srv's /metrics: each series (name and labels, as written) with its value.
func scrapeMetrics(t *testing.T, srv *server) (map[string]float64, string) {
	t.Helper()
	r := do(t, "GET", srv.URL+"/metrics", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", r.Status, r.Body)
	}
	series := make(map[string]float64)
	for line := range strings.SplitSeq(string(r.Body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("/metrics line %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		series[line[:i]] = v
	}
	return series, string(r.Body)
}

func TestMetrics(t *testing.T) {
	srv := startServer(t, "REQUIRE_HTTPS=true", "WEBHOOK_ALLOW_PRIVATE=true")
	plain := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, plain, hook)
	limited := limitedAccount(t, 1)

	// The registry is the process's: other tests' requests and deliveries are in it too, and a counter
	// without labels reads 0 from the start. So each series is compared with its value before.
	const (
		notFound   = `funnelchat_http_requests_total{method="GET",route="/v1/contacts/:id",status="404"}`
		incomingN  = `funnelchat_http_request_duration_seconds_count{method="POST",route="/v1/incoming_custom_channel_message"}`
		botReplies = `funnelchat_bot_reply_duration_seconds_count`
		rejections = `funnelchat_rate_limit_rejections_total`
		delivered  = `funnelchat_deliveries_total{outcome="sent",transport="custom"}`
		// A read a replica may serve, on the primary in a process without one.
		routedRead = `funnelchat_replica_routed_reads_total{read="conversations",target="primary"}`
		// The group commits' batches: every keyed request's Redis check, the incoming message's bot
		// reply enqueue; on PostgreSQL also its ingest and the reply's record.
		checkBatches   = `funnelchat_batch_size_count{batch="checks"}`
		enqueueBatches = `funnelchat_batch_size_count{batch="bot_enqueue"}`
		ingestBatches  = `funnelchat_batch_size_count{batch="ingest"}`
		recordBatches  = `funnelchat_batch_size_count{batch="bot_record"}`
	)
	// Scrapers run inside the network: /metrics answers over plain HTTP even when HTTPS is required.
	before, _ := scrapeMetrics(t, srv)

	expect(t, do(t, "GET", plain.URL+"/v1/contacts/ct_missing", key, nil), http.StatusNotFound, "NOT_FOUND")
	expect(t, do(t, "GET", plain.URL+"/v1/lists", limited, nil), http.StatusOK, "")
	for i := 0; i < 2; i++ {
		expect(t, do(t, "GET", plain.URL+"/v1/lists", limited, nil), http.StatusTooManyRequests, "RATE_LIMITED")
	}
	incoming(t, plain, key, "metrics-1", "mo", "hello")
	expect(t, do(t, "GET", plain.URL+"/v1/conversations", key, nil), http.StatusOK, "")
	waitFor(t, 10*time.Second, "a delivered reply", func() bool { return len(hook.deliveries()) == 1 })

	var after map[string]float64
	var body string
	waitFor(t, 5*time.Second, "the delivery to be counted", func() bool {
		after, body = scrapeMetrics(t, srv)
		return after[delivered]-before[delivered] >= 1 && after[botReplies]-before[botReplies] >= 1
	})
	for _, want := range []struct {
		series string
		delta  float64
		// atLeast: the worker counts it, and the package's queue may still hold tasks of earlier
		// tests that this test's worker runs too.
		atLeast bool
	}{
		{notFound, 1, false},
		{incomingN, 1, false},
		{rejections, 2, false},
		{botReplies, 1, true},
		{delivered, 1, true},
		{routedRead, 1, true},
		{checkBatches, 1, true},
		{enqueueBatches, 1, true},
	} {
		if _, ok := after[want.series]; !ok {
			t.Errorf("/metrics lacks %s", want.series)
			continue
		}
		got := after[want.series] - before[want.series]
		if got != want.delta && (!want.atLeast || got < want.delta) {
			t.Errorf("%s went from %v to %v: +%v, want +%v", want.series, before[want.series], after[want.series], got, want.delta)
		}
	}
	if env.Postgres() {
		for _, series := range []string{ingestBatches, recordBatches} {
			if after[series]-before[series] < 1 {
				t.Errorf("%s went from %v to %v, want at least +1", series, before[series], after[series])
			}
		}
	}
	// A batch holds at least one item: nothing is flushed empty.
	if n := after[`funnelchat_batch_size_bucket{batch="checks",le="1"}`]; n > after[checkBatches] || after[`funnelchat_batch_size_sum{batch="checks"}`] < after[checkBatches] {
		t.Errorf("checks batches: %v of one item, %v in all, %v items", n, after[checkBatches], after[`funnelchat_batch_size_sum{batch="checks"}`])
	}
	// Gauges the process reports as they are.
	for _, want := range []string{`funnelchat_queue_tasks{queue="default",state="pending"}`, `go_goroutines`} {
		if _, ok := after[want]; !ok {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Without DATABASE_REPLICA_URL there is no replica to report on.
	if strings.Contains(body, "funnelchat_replica_lag_seconds") || strings.Contains(body, "funnelchat_replica_in_use") {
		t.Error("/metrics reports a replica's lag in a process without one")
	}
	if after[`go_goroutines`] <= 0 {
		t.Errorf("go_goroutines %v", after[`go_goroutines`])
	}
	if strings.Contains(body, "ct_missing") || strings.Contains(body, key) || strings.Contains(body, limited) {
		t.Fatal("/metrics must not carry ids or keys in labels")
	}
}
