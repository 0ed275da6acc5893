package jobs

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"funnelchat/config"
)

// writeCounter counts writes on a connection: one per round trip (a command or a whole pipeline).
type writeCounter struct {
	net.Conn
	n *atomic.Int64
}

func (c writeCounter) Write(b []byte) (int, error) { c.n.Add(1); return c.Conn.Write(b) }

// countingOpt is an asynq.RedisConnOpt whose connections count their round trips.
type countingOpt struct {
	addr string
	n    *atomic.Int64
}

func (o countingOpt) MakeRedisClient() any {
	return redis.NewClient(&redis.Options{Addr: o.addr, Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return writeCounter{Conn: conn, n: o.n}, nil
	}})
}

// dropScript is an inner pipeline hook that keeps the first command of a piggyback pipeline (asynq's
// enqueue script) from reaching Redis, as if it had failed, and sends the rest.
type dropScript struct{ on atomic.Bool }

func (h *dropScript) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *dropScript) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *dropScript) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.on.Load() && len(cmds) > 1 && isScriptCall(cmds[0]) {
			cmds[0].SetErr(errors.New("enqueue refused (test)"))
			_ = next(ctx, cmds[1:])
			return cmds[0].Err()
		}
		return next(ctx, cmds)
	}
}

func TestBotReplyAndSetSharesTheEnqueuesRoundTrip(t *testing.T) {
	mini := miniredis.RunT(t)
	cfg, err := config.Load(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var trips atomic.Int64
	q := NewQueue(countingOpt{addr: mini.Addr(), n: &trips}, cfg)
	drop := &dropScript{}
	q.rdb.AddHook(drop)
	ctx := context.Background()

	check := func(messageID, key string, wantTrips int64) {
		t.Helper()
		before := trips.Load()
		setErr, err := q.BotReplyAndSet(ctx, messageID, key, messageID, time.Hour)
		if err != nil || setErr != nil {
			t.Fatalf("%s: enqueue %v, set %v", messageID, err, setErr)
		}
		if got := mini.Exists(asynqTaskKey(QueueDefault, botReplyTaskID(messageID))); !got {
			t.Fatalf("%s: not queued", messageID)
		}
		if v, _ := mini.Get(key); v != messageID {
			t.Fatalf("%s: key %q", messageID, v)
		}
		if ttl := mini.TTL(key); ttl != time.Hour {
			t.Fatalf("%s: TTL %s", messageID, ttl)
		}
		if n := trips.Load() - before; wantTrips > 0 && n != wantTrips {
			t.Fatalf("%s: %d round trips, want %d", messageID, n, wantTrips)
		}
	}
	// Cold: the connection's set-up, asynq's queue registration (SADD, once per process) and NOSCRIPT
	// then EVAL, which carries the SET again.
	check("msg_1", tk("k1"), 0)
	// Warm: one round trip for the enqueue and the SET.
	check("msg_2", tk("k2"), 1)
	// A task already queued (a client's retry): the work is owed, so the key is set.
	check("msg_2", tk("k2b"), 1)

	// After a SCRIPT FLUSH the SET rides with the EVAL that follows the NOSCRIPT: two round trips.
	if err := q.rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	check("msg_3", tk("k3"), 2) // [EVALSHA + SET] refused with NOSCRIPT, then [EVAL + SET]

	// An enqueue that fails never leaves the key set.
	drop.on.Store(true)
	setErr, err := q.BotReplyAndSet(ctx, "msg_4", tk("k4"), "msg_4", time.Hour)
	drop.on.Store(false)
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("enqueue: %v", err)
	}
	if setErr != nil || mini.Exists(tk("k4")) {
		t.Fatalf("key set after a failed enqueue (set error %v)", setErr)
	}

	// The piggyback goes once: a later script call with the same context sends only itself.
	set := setIfQueued(ctx, QueueDefault, botReplyTaskID("msg_5"), tk("k5"), "msg_5", time.Hour)
	pctx, p := withPiggyback(ctx, set)
	if err := q.BotReply(pctx, "msg_5"); err != nil || !p.sent {
		t.Fatalf("enqueue %v, sent %v", err, p.sent)
	}
	mini.Del(tk("k5"))
	if err := q.BotReply(pctx, "msg_6"); err != nil {
		t.Fatal(err)
	}
	if mini.Exists(tk("k5")) {
		t.Fatal("the piggyback went twice")
	}

	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := q.rdb.Ping(ctx).Err(); !errors.Is(err, redis.ErrClosed) {
		t.Fatalf("the Queue's connection is still open after Close: %v", err)
	}
}

// tk names a test's key to set with a bot reply: in the bot replies' slot, as BotReplyAndSet requires.
func tk(name string) string { return BesideBotReplies("k:", name) }
