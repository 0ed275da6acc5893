package api_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun"

	"funnelchat/api"
	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

// roundTrips counts what reaches Redis through the connections of countingRedis: a write is a round
// trip (go-redis writes a command, or a whole pipeline, in one write and then reads the replies).
type roundTrips struct{ writes atomic.Int64 }

type countingConn struct {
	net.Conn
	n *roundTrips
}

func (c countingConn) Write(b []byte) (int, error) {
	c.n.writes.Add(1)
	return c.Conn.Write(b)
}

// countingRedis is a client of the package's Redis whose connections count into n.
func countingRedis(n *roundTrips) *redis.Client {
	base := env.Redis.Options()
	return redis.NewClient(&redis.Options{
		Addr: base.Addr, Username: base.Username, Password: base.Password, DB: base.DB, TLSConfig: base.TLSConfig,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: conn, n: n}, nil
		},
	})
}

// countingConnOpt gives the Queue's asynq client a counting connection (asynq.RedisConnOpt).
type countingConnOpt struct{ n *roundTrips }

func (o countingConnOpt) MakeRedisClient() any { return countingRedis(o.n) }

// queryCounter counts database queries.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	q.n.Add(1)
	return ctx
}
func (q *queryCounter) AfterQuery(context.Context, *bun.QueryEvent) {}

// TestIncomingFastPathRoundTrips: with the key in the key cache, a new message costs two Redis round
// trips (the key, rate limit and messageSid in one script; the bot reply's enqueue with the messageSid's
// SET in one pipeline) around the database's call, and a repeated messageSid one round trip and no
// database call at all. Every Redis connection of the api (its own, the key cache's, the Queue's) is
// counted.
func TestIncomingFastPathRoundTrips(t *testing.T) {
	ctx := context.Background()
	var rt roundTrips
	rdb := countingRedis(&rt)
	t.Cleanup(func() { _ = rdb.Close() })

	// A store of its own on the package's database, so that its queries and its key cache's Redis calls
	// are this test's alone.
	var store *models.Store
	var err error
	if env.Postgres() {
		store, err = models.OpenPostgres(env.DatabaseURL, 4)
	} else {
		store, err = models.OpenSQLite(env.SQLitePath)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	store.UseKeyCache(rdb)
	var queries queryCounter
	store.DB().AddQueryHook(&queries)

	cfg, err := config.Load(env.Getenv("REQUIRE_HTTPS=false"))
	if err != nil {
		t.Fatal(err)
	}
	queue := jobs.NewQueue(countingConnOpt{&rt}, cfg)
	t.Cleanup(func() { _ = queue.Close() })
	srv := api.New(api.Deps{Config: cfg, Store: store, Redis: rdb, Queue: queue, Logger: testLogger(t)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { httpClient.CloseIdleConnections(); _ = srv.Shutdown(context.Background()) })
	s := &server{Server: srv, URL: "http://" + ln.Addr().String(), cfg: cfg}

	_, key := newAccount(t)
	send := func(sid string) (response, int64, int64) {
		t.Helper()
		w0, q0 := rt.writes.Load(), queries.n.Load()
		r := incoming(t, s, key, sid, "rt-sender", "hello")
		if r.Status != http.StatusOK || r.Header.Get("X-RateLimit-Limit") == "" || r.Header.Get("RateLimit") == "" {
			t.Fatalf("%s: %d %v %s", sid, r.Status, r.Header, r.Body)
		}
		return r, rt.writes.Load() - w0, queries.n.Load() - q0
	}

	// The first request fills the key cache (and loads the scripts and asynq's queue registration).
	_, w, q := send("rt-1")
	t.Logf("key not cached yet (and cold connections and scripts): %d Redis round trips, %d database queries", w, q)
	// A second one warms what the first left cold.
	send("rt-2")

	r, w, q := send("rt-3")
	if w != 2 {
		t.Fatalf("fast path, new message: %d Redis round trips, want 2", w)
	}
	if q == 0 {
		t.Fatal("new message: no database query")
	}
	t.Logf("fast path, new message: %d Redis round trips, %d database queries", w, q)
	id, _ := r.JSON(t)["messageId"].(string)
	k, err := store.CheckKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := env.Redis.Get(ctx, api.DedupeKey(k.Hash(), "rt-3")).Result(); err != nil || got != id {
		t.Fatalf("messageSid key %q, %v; want %q", got, err, id)
	}
	if n, _ := env.Redis.Exists(ctx, "asynq:{default}:t:bot:"+id).Result(); n != 1 {
		t.Fatal("the bot reply is not queued")
	}

	r, w, q = send("rt-3")
	if w != 1 || q != 0 {
		t.Fatalf("fast path, repeated messageSid: %d Redis round trips, %d database queries; want 1 and 0", w, q)
	}
	if m := r.JSON(t); m["duplicate"] != true || m["messageId"] != id {
		t.Fatalf("repeat answered %s", r.Body)
	}
	t.Logf("fast path, repeated messageSid: %d Redis round trip, %d database queries", w, q)

	// Another keyed route: one round trip for the key and its count.
	w0 := rt.writes.Load()
	expect(t, do(t, "GET", s.URL+"/v1/lists", key, nil), http.StatusOK, "")
	if w := rt.writes.Load() - w0; w != 1 {
		t.Fatalf("GET /v1/lists: %d Redis round trips, want 1", w)
	}
}

// TestIncomingAnswersInTheOrderOfEveryKeyedRoute: the incoming endpoint decodes its body before its key
// is checked, but answers 401 before 429 before the body's 400, as the routes behind authenticate and
// rateLimit do; the 429 carries the rate-limit headers and Retry-After.
func TestIncomingAnswersInTheOrderOfEveryKeyedRoute(t *testing.T) {
	srv := startServer(t)
	bad := `{"customData":{"messageSid":"x"`
	wrongType := map[string]any{"customData": map[string]any{"messageSid": 5}}
	for _, body := range []any{bad, wrongType, `[]`, ""} {
		r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", "sk_not_a_key", body)
		if r.Status != http.StatusUnauthorized {
			t.Fatalf("bad key, bad body %v: %d %s", body, r.Status, r.Body)
		}
		if _, ok := r.JSON(t)["error"].(string); !ok {
			t.Fatalf("want the string form: %s", r.Body)
		}
		r = do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", "", body)
		if r.Status != http.StatusUnauthorized {
			t.Fatalf("no key, bad body %v: %d %s", body, r.Status, r.Body)
		}
	}
	key := limitedAccount(t, 1)
	r := do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, bad)
	if r.Status != http.StatusBadRequest || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("within the limit, bad body: %d %v %s", r.Status, r.Header, r.Body)
	}
	r = do(t, "POST", srv.URL+"/v1/incoming_custom_channel_message", key, bad)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || r.Header.Get("X-RateLimit-Limit") != "1" {
		t.Fatalf("over the limit, bad body: %d %v %s", r.Status, r.Header, r.Body)
	}
	if msg, _ := r.JSON(t)["error"].(string); !strings.Contains(msg, "rate limit") {
		t.Fatalf("want the string form: %s", r.Body)
	}
	// Over the limit with a messageSid already stored: still 429, not the duplicate's 200.
	limited := limitedAccount(t, 2)
	if r := incoming(t, srv, limited, "order-1", "someone", "hi"); r.Status != http.StatusOK {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}
	if r := incoming(t, srv, limited, "order-1", "someone", "hi"); r.Status != http.StatusOK || r.JSON(t)["duplicate"] != true {
		t.Fatalf("repeat within the limit: %d %s", r.Status, r.Body)
	}
	if r := incoming(t, srv, limited, "order-1", "someone", "hi"); r.Status != http.StatusTooManyRequests {
		t.Fatalf("repeat over the limit: %d %s", r.Status, r.Body)
	}
}
