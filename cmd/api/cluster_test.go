package main_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// These tests run the api and the worker on a Redis Cluster (REDIS_CLUSTER_ADDRS,
// cmd/internal/boot.openCluster) of Debian's redis-server on loopback ports: three masters with the
// slots 0-5460, 5461-10922 and 10923-16383 (what redis-cli --cluster create makes of three), each with
// a replica, and cluster-node-timeout 2000 ms. A master is killed with SIGKILL as a crashed machine
// would be; its replica takes over by itself.

// clusterNodeTimeout is the nodes' cluster-node-timeout: how long a master may not answer before the
// others count it as failed and its replica is promoted.
const clusterNodeTimeout = 2 * time.Second

// redisCluster is a Redis Cluster of three masters and their replicas, each a redis-server process,
// all killed when the test ends.
type redisCluster struct {
	masters, replicas []*process
	// masterAddrs[i] holds the i-th third of the slots; replicaAddrs[i] is its replica.
	masterAddrs, replicaAddrs []string
	// dbURL is the test's own database, and store a store on it.
	dbURL string
	store *models.Store
}

// startRedisCluster starts six nodes (requirepass and masterauth as the Sentinel tests' nodes, no
// persistence, cluster mode), gives the first three a third of the slots each, joins all six, makes
// each of the last three the replica of one master, and returns once every node sees the cluster as
// ok and every replica's link to its master is up: a replica that has not synced yet cannot take over,
// and the cluster would stay down after its master's kill.
func startRedisCluster(t *testing.T, bin string) *redisCluster {
	t.Helper()
	c := &redisCluster{}
	c.dbURL, c.store = ownDatabase(t)
	began := time.Now()
	dir := t.TempDir()
	ports := freePorts(t, 6)
	clients := make([]*redis.Client, len(ports))
	ids := make([]string, len(ports))
	ctx := context.Background()
	for i, port := range ports {
		// A master waits 5 s by default before a replica's first (diskless) sync, for more replicas to
		// join it; here each has its one at once.
		p := startRedisNode(t, bin, dir, port, "--cluster-enabled", "yes", "--cluster-config-file", "nodes-"+port+".conf",
			"--cluster-node-timeout", fmt.Sprint(clusterNodeTimeout.Milliseconds()), "--repl-diskless-sync-delay", "0")
		addr := "127.0.0.1:" + port
		if i < 3 {
			c.masters, c.masterAddrs = append(c.masters, p), append(c.masterAddrs, addr)
		} else {
			c.replicas, c.replicaAddrs = append(c.replicas, p), append(c.replicaAddrs, addr)
		}
		clients[i] = nodeClient(t, addr)
		var err error
		if ids[i], err = clients[i].ClusterMyID(ctx).Result(); err != nil {
			t.Fatalf("CLUSTER MYID on %s: %v", addr, err)
		}
		// Distinct epochs from the start, as redis-cli --cluster create gives them: the first
		// failover's election then needs no collision to be resolved first.
		if err := clients[i].Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
			t.Fatalf("CLUSTER SET-CONFIG-EPOCH on %s: %v", addr, err)
		}
	}
	for i, r := range [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}} {
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", r[0], r[1]).Err(); err != nil {
			t.Fatalf("CLUSTER ADDSLOTSRANGE on %s: %v", c.masterAddrs[i], err)
		}
	}
	for _, port := range ports[1:] {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", port).Err(); err != nil {
			t.Fatalf("CLUSTER MEET %s: %v", port, err)
		}
	}
	waitUntil(t, 30*time.Second, "every node to know the five others", func() bool {
		for _, cl := range clients {
			nodes, err := cl.ClusterNodes(ctx).Result()
			if err != nil || strings.Count(strings.TrimSpace(nodes), "\n")+1 != len(clients) {
				return false
			}
		}
		return true
	})
	for i := range c.replicaAddrs {
		if err := clients[3+i].ClusterReplicate(ctx, ids[i]).Err(); err != nil {
			t.Fatalf("CLUSTER REPLICATE on %s: %v", c.replicaAddrs[i], err)
		}
	}
	waitUntil(t, 30*time.Second, "every replica's link to its master to be up and every node to see the cluster ok", func() bool {
		for i, cl := range clients {
			if i >= 3 && !strings.Contains(cl.Info(ctx, "replication").Val(), "master_link_status:up") {
				return false
			}
			if !strings.Contains(cl.ClusterInfo(ctx).Val(), "cluster_state:ok") {
				return false
			}
		}
		return true
	})
	t.Logf("cluster of 3 masters and 3 replicas up in %s", time.Since(began).Round(time.Millisecond))
	return c
}

// environ is what the processes need to reach the cluster: two of its nodes (the client learns the
// rest), and REDIS_URL for the password only. Its host cannot resolve (RFC 6761's .invalid): a process
// that dialled REDIS_URL's address instead of the cluster's nodes would reach nothing.
func (c *redisCluster) environ() []string {
	return []string{
		"DATABASE_URL=" + c.dbURL,
		"REDIS_CLUSTER_ADDRS=" + c.masterAddrs[0] + "," + c.replicaAddrs[1],
		"REDIS_URL=redis://:" + sentinelRedisPassword + "@redis-url-host.invalid",
	}
}

// client is a cluster client of the test's own, closed when the test ends.
func (c *redisCluster) client(t *testing.T) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.masterAddrs, Password: sentinelRedisPassword,
		DialTimeout: time.Second, ClusterStateReloadInterval: 200 * time.Millisecond})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// masterOf is the index of the master that holds key's slot.
func (c *redisCluster) masterOf(t *testing.T, key string) int {
	t.Helper()
	slot, err := nodeClient(t, c.masterAddrs[0]).ClusterKeySlot(context.Background(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case slot <= 5460:
		return 0
	case slot <= 10922:
		return 1
	}
	return 2
}

// killMaster kills master i with SIGKILL and returns when it was killed, once it is gone.
func (c *redisCluster) killMaster(t *testing.T, i int) time.Time {
	t.Helper()
	at := time.Now()
	if err := c.masters[i].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := <-c.masters[i].done
	c.masters[i].done <- err // let the cleanup's receive return
	return at
}

// watchPromotion polls master i's replica every 20 ms from now on, for up to timeout, and sends when
// it first called itself a master in CLUSTER NODES and when the cluster was ok again on it (zero when
// not within timeout).
func (c *redisCluster) watchPromotion(t *testing.T, i int, timeout time.Duration) <-chan promotion {
	replica := redis.NewClient(&redis.Options{Addr: c.replicaAddrs[i], Password: sentinelRedisPassword,
		DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	ch := make(chan promotion, 1)
	go func() {
		defer replica.Close()
		var p promotion
		ctx := context.Background()
		for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if p.first.IsZero() {
				nodes, err := replica.ClusterNodes(ctx).Result()
				for _, line := range strings.Split(nodes, "\n") {
					if err == nil && strings.Contains(line, "myself,master") {
						p.first = time.Now()
					}
				}
			}
			if !p.first.IsZero() && strings.Contains(replica.ClusterInfo(ctx).Val(), "cluster_state:ok") {
				p.all = time.Now()
				break
			}
		}
		ch <- p
	}()
	return ch
}

// clusterRedisServer returns the redis-server binary for the cluster's nodes. The tests run in the
// PostgreSQL pass only, like the Sentinel tests: a cluster is a production-mode setting.
func clusterRedisServer(t *testing.T) string {
	t.Helper()
	if !env.Postgres() {
		t.Skip("Redis Cluster is for production mode (PostgreSQL and Redis); the PostgreSQL pass runs this test")
	}
	return redisServerBin(t)
}

// TestClusterFailoverUnderLoadLosesNothing kills, with SIGKILL, the master that holds the bot replies'
// queue (the busiest: every incoming message enqueues its reply there) while clients keep posting
// incoming messages, a tenth of them twice with the same messageSid; the cluster promotes the master's
// replica and every process must follow it without a restart. Every message answered 200 must get
// exactly one reply, every duplicate must be answered as one (the first answer's messageId), and
// between the kill and 2 s after the promotion every answer that is not 200 must be 503, which the
// clients retry (outageUnderLoad checks the rest: no 500, nothing lost, no process exit).
func TestClusterFailoverUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	bin := clusterRedisServer(t)
	c := startRedisCluster(t, bin)
	victim := c.masterOf(t, "asynq:{default}:pending")

	var killedAt time.Time
	var promoted <-chan promotion
	var p promotion
	email := fmt.Sprintf("cluster-failover-%d@example.com", time.Now().UnixNano())
	r, lastReply := outageUnderLoad(t, email, c.environ(), c.store, fault{
		down: func(*deployment) {
			promoted = c.watchPromotion(t, victim, 30*time.Second)
			killedAt = c.killMaster(t, victim)
		},
		// Nothing to bring back: the replica is the master now. This only makes sure it is, 10 s after
		// the kill, before the scenario goes on with its load and its checks.
		up: func(*deployment) {
			if p = <-promoted; p.first.IsZero() || p.all.IsZero() {
				t.Fatalf("the replica %s was not promoted (with the cluster ok) within 30 s of its master's kill: %+v", c.replicaAddrs[victim], p)
			}
		},
		duplicates: true,
	})

	t.Logf("promotion: the replica called itself master %s after the kill, the cluster was ok again %s after",
		p.first.Sub(killedAt).Round(time.Millisecond), p.all.Sub(killedAt).Round(time.Millisecond))
	var firstOK *answer
	window := map[int]int{}
	until := p.all.Add(2 * time.Second)
	for i, a := range r.answers {
		if a.status == http.StatusOK && a.sent.After(killedAt) && (firstOK == nil || a.at.Before(firstOK.at)) {
			firstOK = &r.answers[i]
		}
		if a.at.After(killedAt) && !a.at.After(until) {
			window[a.status]++
			if a.status != http.StatusOK && a.status != http.StatusServiceUnavailable {
				t.Errorf("answered %d (0 = no HTTP answer) %s after the kill, between the kill and 2 s after the promotion: want 200 or 503",
					a.status, a.at.Sub(killedAt).Round(time.Millisecond))
			}
		}
	}
	t.Logf("answers from the kill to 2 s after the promotion: %v (status: count)", window)
	if firstOK == nil {
		t.Fatalf("no request sent after the master's kill was answered 200 (%d requests, statuses %v)", len(r.answers), r.statuses)
	}
	t.Logf("kill -> first 200 to a request sent after it: %s (%s after the promotion); kill -> last reply at the webhook: %s",
		firstOK.at.Sub(killedAt).Round(time.Millisecond), firstOK.at.Sub(p.first).Round(time.Millisecond),
		lastReply.Sub(killedAt).Round(time.Millisecond))
	// The processes reload the cluster's map every second (boot.clusterReload), so they take new work
	// soon after the promotion; 10 s leaves room for a loaded CI machine.
	if recovery := firstOK.at.Sub(p.all); recovery > 10*time.Second {
		t.Errorf("the first 200 came %s after the promotion; the processes are slow to follow the new master", recovery.Round(time.Millisecond))
	}
}
