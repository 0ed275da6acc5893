package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// These tests run the api and the worker through Redis Sentinel (REDIS_SENTINEL_ADDRS and
// REDIS_SENTINEL_MASTER, cmd/internal/boot.openSentinel) against a real topology of Debian's
// redis-server on loopback ports: a master, one replica and three sentinels (quorum 2), and kill the
// master with SIGKILL as a crashed machine would.

const (
	// sentinelMaster is the name the sentinels monitor the master under (REDIS_SENTINEL_MASTER).
	sentinelMaster = "mymaster"
	// sentinelRedisPassword is the master's and the replica's requirepass. The processes get it only
	// through REDIS_URL, which under Sentinel supplies the credentials and nothing else (config.Config).
	sentinelRedisPassword = "sentinel-test-secret"
	// sentinelPassword is the sentinels' own password (their requirepass), another one.
	sentinelPassword = "sentinel-own-secret"
)

// TestSentinelFailoverUnderLoadLosesNothing kills the Redis master with SIGKILL while clients keep posting
// incoming messages; the sentinels promote the replica and every process must follow it without a
// restart. Clients retry a 503 with the same messageSid, as the README asks; every message answered 200
// (before, during or after the switch) must get exactly one reply, no request may be answered 500 and
// neither process may exit (outageUnderLoad checks all of that). The test measures the switch: how long
// the sentinels took to promote the replica, how long until a request sent after the kill was answered
// 200, what clients were answered meanwhile, and when the last reply arrived.
func TestSentinelFailoverUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	bin := sentinelRedisServer(t)
	topo := startSentinelTopology(t, bin, time.Second)

	var killedAt time.Time
	var promoted <-chan promotion
	var p promotion
	// The database outlives a run (-count), its accounts too: each run makes an account of its own.
	email := fmt.Sprintf("sentinel-failover-%d@example.com", time.Now().UnixNano())
	r, lastReply := outageUnderLoad(t, email, topo.environ(), topo.store, fault{
		down: func(*deployment) {
			promoted = topo.watchPromotion(45 * time.Second)
			killedAt = topo.killMaster(t)
		},
		// Nothing to bring back: the replica is the master now. This only makes sure it is, 10 s after
		// the kill, before the scenario goes on with its load and its checks.
		up: func(*deployment) {
			if p = <-promoted; p.first.IsZero() {
				t.Fatalf("the sentinels did not promote the replica (%s) within 45 s of the master's kill", topo.replicaAddr)
			}
		},
	})

	t.Logf("promotion: the first sentinel named the replica %s after the kill, all three %s after",
		p.first.Sub(killedAt).Round(time.Millisecond), p.all.Sub(killedAt).Round(time.Millisecond))
	// The first 200 to a request sent after the kill: the service takes new work again. (Every accepted
	// message needs its task enqueued on the master, so no such request can be answered 200 before
	// the processes reach the promoted replica.)
	var firstOK *answer
	for i, a := range r.answers {
		if a.status == http.StatusOK && a.sent.After(killedAt) && (firstOK == nil || a.at.Before(firstOK.at)) {
			firstOK = &r.answers[i]
		}
	}
	if firstOK == nil {
		t.Fatalf("no request sent after the master's kill was answered 200 (%d requests, statuses %v)", len(r.answers), r.statuses)
	}
	between, after := map[int]int{}, map[int]int{}
	var lastFailure time.Time
	for _, a := range r.answers {
		if a.status == http.StatusOK || a.at.Before(killedAt) {
			continue
		}
		after[a.status]++
		if !a.at.After(firstOK.at) {
			between[a.status]++
		}
		if a.at.After(lastFailure) {
			lastFailure = a.at
		}
	}
	t.Logf("kill -> first 200 to a request sent after it: %s; answers other than 200 in between: %v (status: count, 0 = no HTTP answer)",
		firstOK.at.Sub(killedAt).Round(time.Millisecond), between)
	lastFailed := "none"
	if !lastFailure.IsZero() {
		lastFailed = lastFailure.Sub(killedAt).Round(time.Millisecond).String() + " after the kill"
	}
	t.Logf("answers other than 200 from the kill on: %v; the last %s", after, lastFailed)
	var lastSent time.Time
	for _, a := range r.answers {
		if a.sent.After(lastSent) {
			lastSent = a.sent
		}
	}
	t.Logf("kill -> last request of the load: %s; kill -> last reply at the webhook: %s",
		lastSent.Sub(killedAt).Round(time.Millisecond), lastReply.Sub(killedAt).Round(time.Millisecond))

	// Each new connection asks a sentinel for the master (boot.openSentinel), so the processes take new
	// work soon after the promotion; 15 s leaves room for a loaded CI machine.
	if recovery := firstOK.at.Sub(p.first); recovery > 15*time.Second {
		t.Errorf("the first 200 came %s after the promotion; the processes are slow to follow the new master", recovery.Round(time.Millisecond))
	}
}

// TestSentinelFailoverLosingUnreplicatedWritesLosesNoMessage fails over after the master acknowledged
// writes that never reached the replica. Redis replicates asynchronously, so a message answered 200 just
// before the master dies can have its bot reply task only on the master: the promoted replica has never
// heard of it. The database holds every accepted message, and the worker's sweep (jobs/sweep.go,
// SWEEP_INTERVAL) enqueues the bot reply of each one still owed one; this test proves that it does so
// for exactly the messages Redis lost, each answered exactly once.
//
// The loss is made certain instead of left to timing: the replica is cut off (it is given a wrong
// masterauth and its link is dropped; to the sentinels it stays a healthy replica), the worker is
// stopped so that the tasks wait on the master as a backlog does rather than being run at once, the
// messages are posted, the master is killed, and the promoted replica is checked to hold none of their
// tasks before a new worker starts.
func TestSentinelFailoverLosingUnreplicatedWritesLosesNoMessage(t *testing.T) {
	t.Parallel()
	bin := sentinelRedisServer(t)
	// Sentinel does not promote a replica whose link to the master has been down for longer than ten
	// down-after periods plus the master's own down time (the "replica selection" rules of Redis's
	// Sentinel documentation): 2 s gives the cut-off replica 20 s, far more than this test needs.
	topo := startSentinelTopology(t, bin, 2*time.Second)

	sink := newReplySink(t, 50*time.Millisecond)
	port := freePort(t)
	base := "http://127.0.0.1:" + port
	environ := baseEnv(append(topo.environ(),
		"PORT="+port, "REQUIRE_HTTPS=false", "WEBHOOK_ALLOW_PRIVATE=true", "SWEEP_INTERVAL=2s",
		"WEBHOOK_RETRY_SCHEDULE=1s,1s,1s,1s", "RATE_LIMIT_PER_MINUTE=1000000")...)
	if got := admin(t, environ, "migrate"); got["migrated"] != true {
		t.Fatalf("migrate printed %v", got)
	}
	created := admin(t, environ, "account", "create", "--email", fmt.Sprintf("sentinel-unreplicated-%d@example.com", time.Now().UnixNano()))
	key, _ := created["apiKey"].(string)
	accountID, _ := created["accountId"].(string)
	if key == "" || accountID == "" {
		t.Fatalf("account create printed %v", created)
	}
	api, worker := start(t, environ, "api"), start(t, environ, "worker")
	waitReady(t, base, api)
	if status, body := call(t, "PUT", base+"/v1/settings/webhook", key, map[string]any{"url": sink.URL + "/hook"}); status != http.StatusOK {
		t.Fatalf("set webhook: %d %v", status, body)
	}

	run := fmt.Sprint(time.Now().UnixNano())
	var accepted []string // fromId of every message answered 200
	post := func(from string) (status int, messageID string) {
		status, body := call(t, "POST", base+"/v1/incoming_custom_channel_message", key, map[string]any{"customData": map[string]any{
			"messageSid": "sid-" + from, "fromId": from, "toId": "biz", "body": "hello from " + from}})
		messageID, _ = body["messageId"].(string)
		if status == http.StatusOK {
			accepted = append(accepted, from)
		}
		return status, messageID
	}

	// Before the fault, a message goes all the way to its reply through Sentinel.
	warmUp := "unreplicated-" + run + "-warm-up"
	if status, _ := post(warmUp); status != http.StatusOK {
		t.Fatalf("warm-up message: %d", status)
	}
	waitUntil(t, 30*time.Second, "the warm-up message's reply", func() bool { return sink.repliesTo(warmUp) == 1 })

	worker.stop(t)
	topo.cutReplica(t)
	cutAt := time.Now()

	const n = 30
	froms := make([]string, n)
	messageIDs := make([]string, n)
	for i := range froms {
		froms[i] = fmt.Sprintf("unreplicated-%s-%d", run, i)
		status, id := post(froms[i])
		if status != http.StatusOK || id == "" {
			t.Fatalf("message %d while the replica is cut off: %d (messageId %q), want 200", i, status, id)
		}
		messageIDs[i] = id
	}
	if held := topo.botTasksOn(t, topo.masterAddr, messageIDs); held != n {
		t.Fatalf("the master holds %d of the %d messages' bot reply tasks, want all", held, n)
	}
	if held := topo.botTasksOn(t, topo.replicaAddr, messageIDs); held != 0 {
		t.Fatalf("the cut-off replica holds %d of the %d messages' bot reply tasks, want none", held, n)
	}

	promoted := topo.watchPromotion(45 * time.Second)
	killedAt := topo.killMaster(t)
	t.Logf("the replica's link was down %s when the master was killed", killedAt.Sub(cutAt).Round(time.Millisecond))

	// A client posting a new message from the kill on, retrying every 100 ms with the same messageSid.
	probe := "unreplicated-" + run + "-after-kill"
	statuses := map[int]int{}
	var firstOK time.Time
	for deadline := killedAt.Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		status, _ := post(probe)
		if status == http.StatusOK {
			firstOK = time.Now()
			break
		}
		statuses[status]++
		if status != http.StatusServiceUnavailable {
			t.Errorf("a new message during the failover was answered %d, want 503 or 200", status)
		}
	}
	if firstOK.IsZero() {
		t.Fatalf("no 200 to a new message within 45 s of the master's kill (answers: %v)", statuses)
	}
	p := <-promoted
	if p.first.IsZero() {
		t.Fatalf("the sentinels did not promote the replica (%s) within 45 s of the master's kill", topo.replicaAddr)
	}
	t.Logf("promotion: the first sentinel named the replica %s after the kill, all three %s after; first 200 to a new message %s after the kill (answers before it: %v)",
		p.first.Sub(killedAt).Round(time.Millisecond), p.all.Sub(killedAt).Round(time.Millisecond),
		firstOK.Sub(killedAt).Round(time.Millisecond), statuses)

	// The new master never had the 30 tasks: only the database still knows these messages are owed a reply.
	lost := n - topo.botTasksOn(t, topo.replicaAddr, messageIDs)
	if lost != n {
		t.Fatalf("the promoted replica holds %d of the %d tasks the master acknowledged; the test lost nothing", n-lost, n)
	}

	worker = start(t, environ, "worker")
	workerAt := time.Now()
	replyDeadline := 60 * time.Second
	for time.Since(workerAt) < replyDeadline && !allRepliedTo(sink, accepted) {
		time.Sleep(100 * time.Millisecond)
	}
	// The sweep logs what it found once it has enqueued all of it, which can come after the replies it
	// enqueued were delivered (the sweep took 0.9 s in a loaded run): wait for its line.
	swept, sweeps := sweptBotReplies(worker.output())
	for sweepDeadline := time.Now().Add(15 * time.Second); swept < n && time.Now().Before(sweepDeadline); {
		time.Sleep(100 * time.Millisecond)
		swept, sweeps = sweptBotReplies(worker.output())
	}
	t.Logf("sweeps that found owed work, bot replies each: %v", sweeps)
	_, _, _, last := sink.tally(accepted)
	t.Logf("%d tasks lost with the old master; %d bot replies re-enqueued by the sweep; the last reply %s after the new worker started (%s after the kill)",
		lost, swept, last.Sub(workerAt).Round(time.Millisecond), last.Sub(killedAt).Round(time.Millisecond))

	// The messageSids' de-duplication keys were lost with the master too: the database's unique index
	// answers a client's retry of each (api/incoming.go), 200 with the same id and no second reply.
	for i, from := range froms {
		status, body := call(t, "POST", base+"/v1/incoming_custom_channel_message", key, map[string]any{"customData": map[string]any{
			"messageSid": "sid-" + from, "fromId": from, "toId": "biz", "body": "hello from " + from}})
		if status != http.StatusOK || body["duplicate"] != true || body["messageId"] != messageIDs[i] {
			t.Errorf("retry of message %d after the failover: %d %v, want 200, duplicate, messageId %s", i, status, body, messageIDs[i])
		}
	}
	// A duplicate, if one were coming, arrives within a few sweep intervals: wait three before counting.
	time.Sleep(6 * time.Second)

	lostReplies, duplicated, deliveries, _ := sink.tally(accepted)
	t.Logf("replies: %d accepted messages, %d deliveries, %d lost, %d duplicated", len(accepted), deliveries, len(lostReplies), len(duplicated))
	if len(lostReplies) > 0 {
		t.Errorf("%d accepted messages got no reply within %s of the new worker's start: %v", len(lostReplies), replyDeadline, firstFew(lostReplies))
	}
	if len(duplicated) > 0 {
		t.Errorf("%d duplicated replies: %v", len(duplicated), firstFew(duplicated))
	}
	if swept < n {
		t.Errorf("the sweep re-enqueued %d bot replies, want at least the %d Redis lost", swept, n)
	}
	waitUntil(t, 30*time.Second, "every reply to show as sent", func() bool {
		count, err := topo.store.DB().NewSelect().TableExpr("messages").
			Where("account_id = ? AND direction = 'outgoing' AND status <> 'sent'", accountID).Count(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return count == 0
	})
	for name, p := range map[string]*process{"api": api, "worker": worker} {
		select {
		case err := <-p.done:
			p.done <- err
			t.Errorf("%s exited during the test: %v", name, err)
		default:
		}
	}
}

// sentinelRedisServer returns the redis-server binary that runs the topology (Sentinel is the same
// binary with --sentinel). The tests run in the PostgreSQL pass only, like the other outage tests:
// Sentinel is a production-mode setting (config.Load refuses it without DATABASE_URL).
func sentinelRedisServer(t *testing.T) string {
	t.Helper()
	if !env.Postgres() {
		t.Skip("Redis Sentinel is for production mode (PostgreSQL and Redis); the PostgreSQL pass runs this test")
	}
	return redisServerBin(t)
}

// sentinelTopology is a Redis master, its replica and three sentinels, each a redis-server process on
// a free loopback port, all killed when the test ends.
type sentinelTopology struct {
	master                  *process
	masterAddr, replicaAddr string
	sentinels               []string // host:port of each sentinel
	// dbURL is the test's own database, and store a store on it.
	dbURL string
	store *models.Store
}

// startSentinelTopology starts the master and the replica (both with requirepass and masterauth, no
// persistence), waits for the replica to sync, then starts three sentinels that monitor the master
// with quorum 2 and the given down-after period, and returns once each sentinel knows the replica and
// the two other sentinels, so that a failover can start as soon as the master is found down.
func startSentinelTopology(t *testing.T, bin string, downAfter time.Duration) *sentinelTopology {
	t.Helper()
	dir := t.TempDir()
	ports := freePorts(t, 5) // the master, the replica and three sentinels
	masterPort, replicaPort := ports[0], ports[1]
	s := &sentinelTopology{masterAddr: "127.0.0.1:" + masterPort, replicaAddr: "127.0.0.1:" + replicaPort}
	s.dbURL, s.store = ownDatabase(t)
	s.master = startRedisNode(t, bin, dir, masterPort)
	startRedisNode(t, bin, dir, replicaPort, "--replicaof", "127.0.0.1", masterPort)
	replica := nodeClient(t, s.replicaAddr)
	waitUntil(t, 30*time.Second, "the replica to sync with the master", func() bool {
		return strings.Contains(replica.Info(context.Background(), "replication").Val(), "master_link_status:up")
	})

	for _, port := range ports[2:] {
		// A sentinel rewrites its configuration file (what it learns, the current epoch), so each has
		// its own, writable one.
		conf := filepath.Join(dir, fmt.Sprintf("sentinel-%s.conf", port))
		text := fmt.Sprintf("port %s\nbind 127.0.0.1\n"+
			"requirepass "+sentinelPassword+"\nsentinel sentinel-pass "+sentinelPassword+"\n"+
			"sentinel monitor %s 127.0.0.1 %s 2\n"+
			"sentinel auth-pass %s %s\n"+
			"sentinel down-after-milliseconds %s %d\n"+
			"sentinel failover-timeout %s 10000\n"+
			"sentinel parallel-syncs %s 1\n",
			port, sentinelMaster, masterPort, sentinelMaster, sentinelRedisPassword,
			sentinelMaster, downAfter.Milliseconds(), sentinelMaster, sentinelMaster)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, conf, "--sentinel")
		cmd.Dir = dir
		startCmd(t, "redis-sentinel-"+port, cmd)
		s.sentinels = append(s.sentinels, "127.0.0.1:"+port)
	}
	for _, addr := range s.sentinels {
		sc := sentinelClient(t, addr)
		waitUntil(t, 30*time.Second, "sentinel "+addr+" to know the replica and the other sentinels", func() bool {
			ctx := context.Background()
			replicas, err := sc.Replicas(ctx, sentinelMaster).Result()
			if err != nil || len(replicas) != 1 || replicas[0]["flags"] != "slave" || replicas[0]["master-link-status"] != "ok" {
				return false
			}
			others, err := sc.Sentinels(ctx, sentinelMaster).Result()
			return err == nil && len(others) == 2
		})
	}
	return s
}

// environ is what the processes need to reach the topology: the sentinels, the master's name, and
// REDIS_URL for the password only. Its host cannot resolve (RFC 6761's .invalid): a process that
// dialled REDIS_URL's address instead of asking the sentinels would reach nothing.
func (s *sentinelTopology) environ() []string {
	return []string{
		"DATABASE_URL=" + s.dbURL,
		"REDIS_SENTINEL_ADDRS=" + strings.Join(s.sentinels, ","),
		"REDIS_SENTINEL_MASTER=" + sentinelMaster,
		"REDIS_SENTINEL_PASSWORD=" + sentinelPassword,
		"REDIS_URL=redis://:" + sentinelRedisPassword + "@redis-url-host.invalid/0",
	}
}

// killMaster kills the master with SIGKILL and returns when it was killed, once it is gone.
func (s *sentinelTopology) killMaster(t *testing.T) time.Time {
	t.Helper()
	at := time.Now()
	if err := s.master.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := <-s.master.done
	s.master.done <- err // let the cleanup's receive return
	return at
}

// cutReplica stops replication without the sentinels noticing anything wrong with the replica: it is
// given a wrong masterauth and its link is dropped, so it cannot resync, yet it still answers them.
// Returns once the replica reports its link down.
func (s *sentinelTopology) cutReplica(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	replica, master := nodeClient(t, s.replicaAddr), nodeClient(t, s.masterAddr)
	if err := replica.ConfigSet(ctx, "masterauth", "not-the-password").Err(); err != nil {
		t.Fatal(err)
	}
	if err := master.ClientKillByFilter(ctx, "TYPE", "replica").Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the replica's link to the master to go down", func() bool {
		return strings.Contains(replica.Info(ctx, "replication").Val(), "master_link_status:down")
	})
}

// botTasksOn counts how many of the messages' bot reply tasks the Redis at addr holds. asynq keeps a
// task under asynq:{<queue>}:t:<task id> (its base.TaskKey) whatever its state; a bot reply is task
// bot:<message id> on the default queue (jobs.BotReply).
func (s *sentinelTopology) botTasksOn(t *testing.T, addr string, messageIDs []string) int {
	t.Helper()
	c := nodeClient(t, addr)
	keys := make([]string, len(messageIDs))
	for i, id := range messageIDs {
		keys[i] = "asynq:{default}:t:bot:" + id
	}
	n, err := c.Exists(context.Background(), keys...).Result()
	if err != nil {
		t.Fatalf("EXISTS on %s: %v", addr, err)
	}
	return int(n)
}

// promotion is when the first sentinel, and when all of them, named the replica as the master; zero
// when they did not within the watch's time.
type promotion struct{ first, all time.Time }

// watchPromotion asks every sentinel for the master's address (SENTINEL get-master-addr-by-name, what
// the processes' clients ask) every 20 ms from now on, for up to timeout, and sends what it saw.
func (s *sentinelTopology) watchPromotion(timeout time.Duration) <-chan promotion {
	clients := make([]*redis.SentinelClient, len(s.sentinels))
	for i, addr := range s.sentinels {
		clients[i] = redis.NewSentinelClient(&redis.Options{Addr: addr, Password: sentinelPassword, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	}
	ch := make(chan promotion, 1)
	go func() {
		defer func() {
			for _, c := range clients {
				_ = c.Close()
			}
		}()
		var p promotion
		named := make([]bool, len(clients))
		for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			all := true
			for i, c := range clients {
				if !named[i] {
					addr, err := c.GetMasterAddrByName(context.Background(), sentinelMaster).Result()
					named[i] = err == nil && len(addr) == 2 && net.JoinHostPort(addr[0], addr[1]) == s.replicaAddr
				}
				if named[i] && p.first.IsZero() {
					p.first = time.Now()
				}
				all = all && named[i]
			}
			if all {
				p.all = time.Now()
				break
			}
		}
		ch <- p
	}()
	return ch
}

// startRedisNode runs a data node of the topology (requirepass and masterauth, no persistence) on port
// and waits until it answers an authenticated PING.
func startRedisNode(t *testing.T, bin, dir, port string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--requirepass", sentinelRedisPassword, "--masterauth", sentinelRedisPassword}, args...)...)
	cmd.Dir = dir
	p := startCmd(t, "redis-server-"+port, cmd)
	c := nodeClient(t, "127.0.0.1:"+port)
	awaitRedis(t, p, port, func() bool { return c.Ping(context.Background()).Err() == nil })
	return p
}

// nodeClient is a client of one data node of the topology, closed when the test ends.
func nodeClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: sentinelRedisPassword, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func sentinelClient(t *testing.T, addr string) *redis.SentinelClient {
	c := redis.NewSentinelClient(&redis.Options{Addr: addr, Password: sentinelPassword, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func allRepliedTo(sink *replySink, froms []string) bool {
	for _, from := range froms {
		if sink.repliesTo(from) == 0 {
			return false
		}
	}
	return true
}

// sweptBotReplies adds up the bot replies the worker's sweeps re-enqueued (jobs.handleSweep logs each
// sweep that found owed work, as JSON).
func sweptBotReplies(output string) (total int, counts []int) {
	for _, line := range strings.Split(output, "\n") {
		var entry struct {
			Msg        string `json:"msg"`
			BotReplies int    `json:"bot_replies"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil || !strings.HasPrefix(entry.Msg, "sweep: owed work found") {
			continue
		}
		total += entry.BotReplies
		counts = append(counts, entry.BotReplies)
	}
	return total, counts
}

// A key rotation must survive a failover: the revoked mark in the key cache (models/keycache.go) is on
// the master only until it replicates, and the replica to be promoted caches the old key. With
// Sentinel a rotation waits for a replica to confirm the mark, and is refused (nothing changed) when
// none does; once one does, the promoted replica refuses the old key.
func TestSentinelFailoverKeepsARotatedKeyRevoked(t *testing.T) {
	t.Parallel()
	bin := sentinelRedisServer(t)
	topo := startSentinelTopology(t, bin, 2*time.Second)
	port := freePort(t)
	base := "http://127.0.0.1:" + port
	environ := baseEnv(append(topo.environ(), "PORT="+port, "REQUIRE_HTTPS=false", "RATE_LIMIT_PER_MINUTE=1000000")...)
	if got := admin(t, environ, "migrate"); got["migrated"] != true {
		t.Fatalf("migrate printed %v", got)
	}
	created := admin(t, environ, "account", "create", "--email", fmt.Sprintf("sentinel-rotation-%d@example.com", time.Now().UnixNano()))
	oldKey, _ := created["apiKey"].(string)
	api := start(t, environ, "api")
	waitReady(t, base, api)
	works := func(key string) int {
		status, _ := call(t, "GET", base+"/v1/settings/webhook", key, nil)
		return status
	}
	// The old key's account is now cached on the master, and replicated.
	if status := works(oldKey); status != http.StatusOK {
		t.Fatalf("the key: %d", status)
	}
	replica := nodeClient(t, topo.replicaAddr)
	waitUntil(t, 10*time.Second, "the cached key to reach the replica", func() bool {
		n, _ := replica.Keys(context.Background(), "apikey:*").Result()
		return len(n) == 1
	})

	// Replication cut: no replica can confirm, so the rotation is refused and the old key still works.
	topo.cutReplica(t)
	status, body := call(t, "POST", base+"/v1/api_key", oldKey, nil)
	if status != http.StatusServiceUnavailable {
		t.Fatalf("rotation with no replica to confirm it: %d %v, want 503", status, body)
	}
	if status := works(oldKey); status != http.StatusOK {
		t.Fatalf("after the refused rotation the key answers %d, want 200 (nothing changed)", status)
	}

	// Replication back: the rotation goes through, confirmed by the replica.
	if err := replica.ConfigSet(context.Background(), "masterauth", sentinelRedisPassword).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the replica to resync", func() bool {
		return strings.Contains(replica.Info(context.Background(), "replication").Val(), "master_link_status:up")
	})
	status, body = call(t, "POST", base+"/v1/api_key", oldKey, nil)
	newKey, _ := body["apiKey"].(string)
	if status != http.StatusCreated || newKey == "" {
		t.Fatalf("rotation with the replica back: %d %v", status, body)
	}
	if status := works(oldKey); status != http.StatusUnauthorized {
		t.Fatalf("the old key after the rotation: %d, want 401", status)
	}

	// The master dies; on the promoted replica the old key stays refused.
	promoted := topo.watchPromotion(45 * time.Second)
	topo.killMaster(t)
	if p := <-promoted; p.first.IsZero() {
		t.Fatal("the sentinels did not promote the replica within 45 s")
	}
	waitUntil(t, 30*time.Second, "the api to answer through the promoted replica", func() bool { return works(newKey) == http.StatusOK })
	for i := 0; i < 5; i++ {
		if status := works(oldKey); status != http.StatusUnauthorized {
			t.Fatalf("the old key after the failover: %d, want 401", status)
		}
	}
}
