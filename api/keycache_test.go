package api_test

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// The api processes authenticate from a key cache in Redis (models.Store.UseKeyCache, on in this
// package as in production). These tests hold it to the promise that a rotation takes effect at once.

func TestNoRequestWithTheOldKeySucceedsAfterRotation(t *testing.T) {
	a, b := startServer(t, "RATE_LIMIT_PER_MINUTE=1000000"), startServer(t, "RATE_LIMIT_PER_MINUTE=1000000")
	_, oldKey := newAccount(t)

	var rotatedAt atomic.Int64 // unix nanos when the rotation call returned; 0 before
	var before, after, refusedAfter atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		srv := a
		if i%2 == 1 {
			srv = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				started := time.Now().UnixNano()
				r := do(t, "GET", srv.URL+"/v1/lists", oldKey, nil)
				afterRotation := rotatedAt.Load() != 0 && started > rotatedAt.Load()
				switch {
				case r.Status == http.StatusOK && afterRotation:
					after.Add(1)
				case r.Status == http.StatusOK:
					before.Add(1)
				case r.Status == http.StatusUnauthorized && afterRotation:
					refusedAfter.Add(1)
				case r.Status != http.StatusUnauthorized:
					t.Errorf("status %d: %s", r.Status, r.Body)
				}
			}
		}()
	}
	waitFor(t, 10*time.Second, "requests with the old key to succeed (and fill the cache)", func() bool { return before.Load() >= 50 })
	r := do(t, "POST", a.URL+"/v1/api_key", oldKey, nil)
	rotatedAt.Store(time.Now().UnixNano())
	expect(t, r, http.StatusCreated, "")
	waitFor(t, 10*time.Second, "requests after the rotation", func() bool { return refusedAfter.Load() >= 100 })
	close(stop)
	wg.Wait()

	if n := after.Load(); n != 0 {
		t.Fatalf("%d requests with the old key succeeded after the rotation returned", n)
	}
	newKey, _ := r.JSON(t)["apiKey"].(string)
	for _, s := range []*server{a, b} {
		expect(t, do(t, "GET", s.URL+"/v1/lists", newKey, nil), http.StatusOK, "")
	}
}

func TestRotationRefusesWhenTheKeyCacheCannotBeMarked(t *testing.T) {
	// A store whose Redis is unreachable stands for an api process during a Redis outage: rotating
	// would leave other processes' cache entries valid, so it is refused and nothing changes.
	var store *models.Store
	var err error
	if env.Postgres() {
		store, err = models.OpenPostgres(env.DatabaseURL, 2)
	} else {
		store, err = models.OpenSQLite(env.SQLitePath)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	deadRedis := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1})
	t.Cleanup(func() { deadRedis.Close() })
	store.UseKeyCache(deadRedis)

	acc, key := newAccount(t)
	_, err = store.RotateAPIKey(t.Context(), acc.ID)
	if models.ErrorCode(err) != models.CodeUnavailable {
		t.Fatalf("rotation with Redis down: %v, want UNAVAILABLE", err)
	}
	srv := startServer(t)
	expect(t, do(t, "GET", srv.URL+"/v1/lists", key, nil), http.StatusOK, "")
}
