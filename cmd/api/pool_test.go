package main_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// TestDatabasePoolSizeBoundsConnections: an api started with DATABASE_POOL_SIZE=3 keeps at most 3
// connections to its database while 32 clients read at once (by default it opens up to 16), and every
// request is still answered; a worker started with the same setting comes up beside it.
func TestDatabasePoolSizeBoundsConnections(t *testing.T) {
	t.Parallel()
	if !env.Postgres() {
		t.Skip("connection pools are PostgreSQL's; the PostgreSQL pass runs this test")
	}
	dbURL := freshDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	port := freePort(t)
	base := "http://127.0.0.1:" + port
	environ := baseEnv("DATABASE_URL="+dbURL, "REDIS_URL="+claimRedisDB(t), "PORT="+port, "REQUIRE_HTTPS=false",
		"RATE_LIMIT_PER_MINUTE=1000000", "DATABASE_POOL_SIZE=3", "WORKER_CONCURRENCY=1")
	if got := admin(t, environ, "migrate"); got["migrated"] != true {
		t.Fatalf("migrate printed %v", got)
	}
	created := admin(t, environ, "account", "create", "--email", "pool@example.com")
	key, _ := created["apiKey"].(string)
	if key == "" {
		t.Fatalf("account create printed %v", created)
	}
	api := start(t, environ, "api")
	waitReady(t, base, api)
	worker := start(t, environ, "worker")

	// Connections are counted from another database, so the count includes only the processes'.
	watcher := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(os.Getenv("TEST_DATABASE_URL"))))
	defer watcher.Close()
	var peak atomic.Int64
	stopWatching := make(chan struct{})
	watched := make(chan error, 1)
	go func() {
		defer close(watched)
		for {
			var n int64
			err := watcher.QueryRowContext(context.Background(),
				"SELECT count(*) FROM pg_stat_activity WHERE datname = $1", dbName).Scan(&n)
			if err != nil {
				watched <- err
				return
			}
			if n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stopWatching:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()

	var wg sync.WaitGroup
	var answered atomic.Int64
	failures := make(chan string, 32)
	for range 32 {
		wg.Go(func() {
			for range 20 {
				if failure := getLists(base, key); failure != "" {
					select {
					case failures <- failure:
					default:
					}
					return
				}
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	close(stopWatching)
	if err := <-watched; err != nil {
		t.Fatal(err)
	}
	close(failures)
	for f := range failures {
		t.Errorf("a request failed: %s", f)
	}
	// The worker's pool (also 3) comes on top of the api's; the api alone opened more than 6 by default.
	if p := peak.Load(); p < 1 || p > 6 {
		t.Errorf("peak connections to the database: %d, want 1 to 6 (the api's 3 and the worker's 3)", p)
	}
	t.Logf("%d requests answered; peak connections %d", answered.Load(), peak.Load())
	select {
	case err := <-worker.done:
		worker.done <- err
		t.Errorf("the worker exited: %v\n%s", err, worker.output())
	default:
	}
}

// getLists reads the account's lists, as a client goroutine may (call would end the test from it): ""
// when the answer is 200, else what went wrong.
func getLists(base, key string) string {
	req, _ := http.NewRequest("GET", base+"/v1/lists", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Sprintf("%d %s", res.StatusCode, raw)
	}
	return ""
}
