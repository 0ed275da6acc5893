package api_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

func TestMonitoringDashboard(t *testing.T) {
	srv := startServer(t, "ADMIN_USER=ops", "ADMIN_PASSWORD=s3cret")
	basic := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("ops:s3cret"))

	// One task in each of DESIGN's queues (no worker runs here, so they stay pending).
	cfg, _ := config.Load(env.Getenv())
	queue := jobs.NewQueue(env.Asynq, cfg)
	defer queue.Close()
	ctx := context.Background()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(queue.BotReply(ctx, "msg_monitoring"))
	must(queue.Deliver(ctx, "msg_monitoring", 0))
	must(queue.Opening(ctx, models.DueSend{SendID: "snd_monitoring", DueAt: time.Now()}))
	must(queue.Alert(ctx, "alr_monitoring"))

	r := do(t, "GET", srv.URL+"/monitoring/", "", nil, basic)
	if r.Status != http.StatusOK || !strings.Contains(strings.ToLower(string(r.Body)), "<html") {
		t.Fatalf("dashboard: %d %.200s", r.Status, r.Body)
	}
	r = do(t, "GET", srv.URL+"/monitoring/api/queues", "", nil, basic)
	if r.Status != http.StatusOK {
		t.Fatalf("queues API: %d %s", r.Status, r.Body)
	}
	for _, q := range []string{jobs.QueueDeliveries, jobs.QueueDefault, jobs.QueueOpenings, jobs.QueueLow} {
		if !strings.Contains(string(r.Body), `"queue":"`+q+`"`) {
			t.Fatalf("queue %s not listed: %s", q, r.Body)
		}
	}
	for name, header := range map[string]string{
		"no credentials":   "X-None: 1",
		"wrong password":   "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("ops:nope")),
		"wrong user":       "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("root:s3cret")),
		"an API key alone": "Authorization: Bearer sk_x",
	} {
		t.Run("refuses "+name, func(t *testing.T) {
			if r := do(t, "GET", srv.URL+"/monitoring/api/queues", "", nil, header); r.Status != http.StatusUnauthorized {
				t.Fatalf("status %d", r.Status)
			}
		})
	}
	t.Run("off without ADMIN_USER", func(t *testing.T) {
		off := startServer(t)
		if r := do(t, "GET", off.URL+"/monitoring/", "", nil, basic); r.Status != http.StatusNotFound {
			t.Fatalf("status %d", r.Status)
		}
	})
	t.Run("HTTPS required like /v1", func(t *testing.T) {
		strict := startServer(t, "ADMIN_USER=ops", "ADMIN_PASSWORD=s3cret", "REQUIRE_HTTPS=true")
		expect(t, do(t, "GET", strict.URL+"/monitoring/", "", nil, basic), 403, "HTTPS_REQUIRED")
	})
}
