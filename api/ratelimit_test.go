package api_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"funnelchat/api"
	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

func limitedAccount(t *testing.T, perMinute int) string {
	t.Helper()
	created, err := env.Store.CreateAccount(context.Background(), models.NewAccount{
		Email: fmt.Sprintf("limited-%d-%d@example.com", perMinute, accountSeq.Add(1)), RateLimit: perMinute,
	})
	if err != nil {
		t.Fatal(err)
	}
	return created.APIKey
}

func TestRateLimitHeadersAndRefusal(t *testing.T) {
	a, b := startServer(t), startServer(t) // two api processes on one Redis
	key := limitedAccount(t, 5)
	for i := 1; i <= 5; i++ {
		srv := a
		if i%2 == 0 {
			srv = b
		}
		r := do(t, "GET", srv.URL+"/v1/lists", key, nil)
		expect(t, r, http.StatusOK, "")
		remaining := strconv.Itoa(5 - i)
		reset, err := strconv.Atoi(r.Header.Get("X-RateLimit-Reset"))
		if r.Header.Get("X-RateLimit-Limit") != "5" || r.Header.Get("X-RateLimit-Remaining") != remaining || err != nil || reset < 1 || reset > 60 ||
			r.Header.Get("RateLimit-Policy") != `"per-key";q=5;w=60` ||
			r.Header.Get("RateLimit") != `"per-key";r=`+remaining+";t="+strconv.Itoa(reset) {
			t.Fatalf("request %d headers: %v", i, r.Header)
		}
	}
	r := do(t, "GET", a.URL+"/v1/lists", key, nil)
	expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
	if retry, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || retry < 1 || retry > 60 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}
	if r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("remaining on a 429: %v", r.Header)
	}
	expect(t, do(t, "GET", b.URL+"/v1/lists", key, nil), http.StatusTooManyRequests, "RATE_LIMITED")

	t.Run("another key is unaffected", func(t *testing.T) {
		other := limitedAccount(t, 5)
		expect(t, do(t, "GET", a.URL+"/v1/lists", other, nil), http.StatusOK, "")
	})
	t.Run("the incoming endpoint answers 429 in the string form", func(t *testing.T) {
		r := incoming(t, a, key, "rl-1", "someone", "hi")
		if r.Status != http.StatusTooManyRequests {
			t.Fatalf("status %d", r.Status)
		}
		if _, ok := r.JSON(t)["error"].(string); !ok {
			t.Fatalf("want the string form: %s", r.Body)
		}
	})
	t.Run("a request without a valid key is not counted and gets no headers", func(t *testing.T) {
		r := do(t, "GET", a.URL+"/v1/lists", "sk_nope", nil)
		expect(t, r, http.StatusUnauthorized, models.CodeUnauthorized)
		if r.Header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("headers on a 401: %v", r.Header)
		}
	})
}

func TestRateLimitDefaultAppliesToErrorsToo(t *testing.T) {
	srv := startServer(t, "RATE_LIMIT_PER_MINUTE=2")
	_, key := newAccount(t)
	r := do(t, "GET", srv.URL+"/v1/contacts/ct_unknown", key, nil)
	expect(t, r, http.StatusNotFound, models.CodeNotFound)
	if r.Header.Get("X-RateLimit-Limit") != "2" || r.Header.Get("X-RateLimit-Remaining") != "1" {
		t.Fatalf("headers on an error response: %v", r.Header)
	}
	expect(t, do(t, "GET", srv.URL+"/v1/lists", key, nil), http.StatusOK, "")
	expect(t, do(t, "GET", srv.URL+"/v1/lists", key, nil), http.StatusTooManyRequests, "RATE_LIMITED")
}

// TestRateLimiterFailsOpen: with Redis unreachable the limiter lets requests through (logged), so an
// outage of the counter does not become an outage of the API.
func TestRateLimiterFailsOpen(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cfg, err := config.Load(env.Getenv("REQUIRE_HTTPS=false", "RATE_LIMIT_PER_MINUTE=1"))
	if err != nil {
		t.Fatal(err)
	}
	deadRedis := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1})
	deadQueue := jobs.NewQueue(asynq.RedisClientOpt{Addr: dead}, cfg)
	t.Cleanup(func() { deadRedis.Close(); deadQueue.Close() })
	srv := api.New(api.Deps{Config: cfg, Store: env.Store, Redis: deadRedis, Queue: deadQueue, Logger: testLogger(t)})
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { httpClient.CloseIdleConnections(); _ = srv.Shutdown(context.Background()) })
	_, key := newAccount(t)
	for i := 0; i < 3; i++ {
		r := do(t, "GET", "http://"+l.Addr().String()+"/v1/lists", key, nil)
		expect(t, r, http.StatusOK, "")
		if r.Header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("no limiter answered, so no counts should be claimed: %v", r.Header)
		}
	}
}
