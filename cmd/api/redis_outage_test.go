package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"funnelchat/models"
)

// TestRedisOutageUnderLoadLosesNothing stops the api's and the worker's Redis for 10 s while clients keep
// posting incoming messages, then starts it again empty (no persistence: every queue is lost). Clients
// retry a 503 with the same messageSid until they get 200, as the README asks. Every accepted message
// must then get exactly one reply at the webhook, brought back by the database sweep, and both processes
// must ride out the outage without a 500 or a restart (README, "Nothing accepted is lost").
func TestRedisOutageUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	if !env.Postgres() {
		t.Skip("in standalone mode Redis is in-process and cannot be stopped alone; the PostgreSQL pass runs this test")
	}
	redisBin := redisServerBin(t)
	redisPort := freePort(t)
	redisDir := t.TempDir()
	rds := startRedis(t, redisBin, redisDir, redisPort)
	dbURL, store := ownDatabase(t)
	outageUnderLoad(t, "redis-outage@example.com",
		[]string{"DATABASE_URL=" + dbURL, "REDIS_URL=redis://127.0.0.1:" + redisPort + "/0"}, store,
		fault{
			down:       func(*deployment) { rds.stop(t) },
			up:         func(*deployment) { rds = startRedis(t, redisBin, redisDir, redisPort) },
			answers503: true,
		})
}

// deployment is the api and worker an outageUnderLoad scenario runs; a fault may replace them.
type deployment struct {
	environ     []string
	base        string
	api, worker *process
}

// fault is what an outageUnderLoad scenario does to the deployment for 10 s.
type fault struct {
	down, up func(d *deployment)
	// answers503: the api stays up and answers 503 meanwhile (a dependency is down); /readyz says so.
	answers503 bool
	// refuses: the api itself is gone meanwhile, so clients get no answer and retry.
	refuses bool
	// duplicates: clients post every tenth message that got 200 once more, with the same messageSid,
	// as a sender that did not see the answer would; each must be answered as one (dupEvery).
	duplicates bool
}

// outageUnderLoad runs an api and a worker with the given DATABASE_URL and REDIS_URL under a steady
// load of incoming messages, applies the fault's down, waits 10 s, applies its up, and checks that
// nothing was lost: every message retried to a 200 gets exactly one reply and shows as sent, the
// incoming endpoint never answered 500 (and answered 503 in its string form during a dependency's
// outage), and the processes rode it out. It returns the load's result and when the last reply arrived,
// for a test that measures more.
func outageUnderLoad(t *testing.T, email string, backends []string, store *models.Store, f fault) (loadResult, time.Time) {
	sink := newReplySink(t, 300*time.Millisecond)
	port := freePort(t)
	base := "http://127.0.0.1:" + port
	environ := baseEnv(append(backends,
		"PORT="+port, "REQUIRE_HTTPS=false", "WEBHOOK_ALLOW_PRIVATE=true", "SWEEP_INTERVAL=2s",
		"WEBHOOK_RETRY_SCHEDULE=1s,1s,1s,1s", "RATE_LIMIT_PER_MINUTE=1000000")...)
	if got := admin(t, environ, "migrate"); got["migrated"] != true {
		t.Fatalf("migrate printed %v", got)
	}
	created := admin(t, environ, "account", "create", "--email", email)
	key, _ := created["apiKey"].(string)
	accountID, _ := created["accountId"].(string)
	if key == "" || accountID == "" {
		t.Fatalf("account create printed %v", created)
	}
	d := &deployment{environ: environ, base: base, api: start(t, environ, "api"), worker: start(t, environ, "worker")}
	waitReady(t, base, d.api)
	if status, body := call(t, "PUT", base+"/v1/settings/webhook", key, map[string]any{"url": sink.URL + "/hook"}); status != http.StatusOK {
		t.Fatalf("set webhook: %d %v", status, body)
	}

	load := newIncomingLoad(base, key)
	if f.duplicates {
		load.dupEvery = 10
	}
	load.start(4, 100*time.Millisecond, 1*time.Second, time.Now().Add(3*time.Minute))
	t.Cleanup(load.abandon) // a failed test leaves no client posting

	time.Sleep(3 * time.Second) // normal load
	load.outage.Store(true)
	stoppedAt := time.Now()
	procs := []*process{d.api, d.worker} // every process's log, for a failure's story
	f.down(d)
	time.Sleep(5 * time.Second)
	readyDuringOutage := readyzStatus(base)
	time.Sleep(5 * time.Second)
	f.up(d)
	procs = append(procs, d.api, d.worker)
	restartedAt := time.Now()
	load.outage.Store(false)
	time.Sleep(3 * time.Second) // load after the restart
	load.stop()
	outage := restartedAt.Sub(stoppedAt)
	if !load.wait(3 * time.Minute) {
		t.Fatal("the load's clients still had unanswered messages 3 minutes after the load stopped")
	}

	r := load.result()
	t.Logf("load: %d messages sent in %d requests (%d during the %s outage); statuses %v",
		len(r.sent), r.requests, r.requestsDown, outage.Round(time.Millisecond), r.statuses)
	t.Logf("503s: %d seen (%d during the outage, %d messages saw at least one); first 503 body %s",
		r.statuses[http.StatusServiceUnavailable], r.unavailableDown, r.saw503, r.first503)
	last503 := "none"
	if !r.last503.IsZero() {
		last503 = r.last503.Sub(restartedAt).Round(time.Millisecond).String() + " after the restart"
	}
	t.Logf("slowest request: %s during the outage, %s otherwise; last 503: %s",
		r.slowestDown.Round(time.Millisecond), r.slowestUp.Round(time.Millisecond), last503)
	if f.duplicates {
		t.Logf("duplicates: %d messages posted again with their messageSid, %d answered as one", r.dupPosted, r.dupPosted-len(r.dupWrong))
		if r.dupPosted == 0 {
			t.Errorf("no message was posted twice")
		}
		for _, w := range firstFew(r.dupWrong) {
			t.Errorf("a duplicate not answered as its first post was: %s", w)
		}
	}

	// The replies: each accepted message's fromId comes back as the reply's toId, exactly once.
	// A task the worker was running when Redis went away can be left active with its lease unrenewed
	// (its completion could not be written, and the write may have gone with a failed-over master).
	// asynq's recoverer hands it back 60 to 120 s after that (jobs/tasks.go, retryDelay), counted
	// from the outage, not from the load's end; 90 s from the load's end was not always enough
	// (a CI run: 2 replies owed, the sweep finding their task still active).
	replyDeadline := 150 * time.Second
	loadStopped := time.Now()
	allReplied := func() bool {
		for _, from := range r.accepted {
			if sink.repliesTo(from) == 0 {
				return false
			}
		}
		return true
	}
	for !allReplied() && time.Since(loadStopped) < replyDeadline {
		time.Sleep(200 * time.Millisecond)
	}
	// A duplicate, if one were coming (a second sweep, a retried delivery), arrives within a few sweep
	// intervals: wait three before counting.
	time.Sleep(6 * time.Second)

	lost, duplicated, deliveries, last := sink.tally(r.accepted)
	sinceRestart := last.Sub(restartedAt)
	t.Logf("replies: %d accepted messages, %d deliveries, %d lost, %d duplicated; last reply %s after the restart",
		len(r.accepted), deliveries, len(lost), len(duplicated), sinceRestart.Round(time.Millisecond))

	for _, line := range strings.Split(d.worker.output(), "\n") {
		if strings.Contains(line, "sweep: owed work found") {
			t.Logf("worker: %s", line)
		}
	}

	if f.answers503 && r.unavailableDown == 0 {
		t.Errorf("no 503 from the incoming endpoint during the outage (%d requests then)", r.requestsDown)
	}
	if r.badUnavailable != "" {
		t.Errorf("a 503 on the incoming endpoint is not {\"error\":\"...\"}: %s", r.badUnavailable)
	}
	if r.statuses[http.StatusInternalServerError] > 0 {
		t.Errorf("%d answers were 500, first: %s", r.statuses[http.StatusInternalServerError], r.first500)
	}
	for status, n := range r.statuses {
		if status != http.StatusOK && status != http.StatusServiceUnavailable && status != http.StatusInternalServerError &&
			!(f.refuses && status == 0) {
			t.Errorf("%d answers with status %d (0 = no HTTP answer), first: %s", n, status, r.firstOther)
		}
	}
	if len(r.unanswered) > 0 {
		t.Errorf("%d of %d messages never got 200: %v", len(r.unanswered), len(r.sent), firstFew(r.unanswered))
	}
	if len(lost) > 0 {
		t.Errorf("%d accepted messages got no reply within %s of the load stopping: %v", len(lost), replyDeadline, firstFew(lost))
	}
	if len(duplicated) > 0 {
		t.Errorf("%d duplicated replies: %v", len(duplicated), firstFew(duplicated))
		logLinesAbout(t, procs, sink.duplicatedIDs())
	}
	// Every reply also shows as sent: a delivery whose attempt could not be recorded during the outage
	// must not stay pending (or be archived) for good.
	waitUntil(t, 30*time.Second, "every reply to show as sent", func() bool {
		n, err := store.DB().NewSelect().TableExpr("messages").
			Where("account_id = ? AND direction = 'outgoing' AND status <> 'sent'", accountID).Count(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	if f.answers503 && readyDuringOutage != http.StatusServiceUnavailable {
		t.Errorf("/readyz during the outage: %d, want 503", readyDuringOutage)
	}
	for name, p := range map[string]*process{"api": d.api, "worker": d.worker} {
		select {
		case err := <-p.done:
			p.done <- err
			t.Errorf("%s exited during the test: %v", name, err)
		default:
		}
	}
	waitUntil(t, 30*time.Second, "/readyz to answer 200 after the restart", func() bool {
		return readyzStatus(base) == http.StatusOK
	})
	return r, last
}

// redisServerBin is the path of redis-server, for tests that run their own. CI must have it (.ci/run
// installs it), so there a missing one fails the test instead of skipping it.
func redisServerBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is required in CI: %v", err)
		}
		t.Skipf("redis-server not installed: %v", err)
	}
	return bin
}

// startRedis runs a redis-server without persistence on port, in dir, and waits until it answers PING.
func startRedis(t *testing.T, bin, dir, port string) *process {
	t.Helper()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no")
	cmd.Dir = dir
	p := startCmd(t, "redis-server", cmd)
	awaitRedis(t, p, port, func() bool { return redisAnswers("127.0.0.1:" + port) })
	return p
}

// awaitRedis waits until the redis-server p started on port answers (answers reports it), failing the
// test when it exits or does not answer within 10 s.
func awaitRedis(t *testing.T, p *process, port string, answers func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !answers() {
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("redis-server exited: %v\n%s", err, p.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server not answering PING on port %s after 10 s\n%s", port, p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func redisAnswers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}

func readyzStatus(base string) int {
	client := http.Client{Timeout: 5 * time.Second}
	res, err := client.Get(base + "/readyz")
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

func firstFew(s []string) []string {
	if len(s) > 10 {
		return s[:10]
	}
	return s
}

// replySink answers every webhook call 200 and records its webhook-id and the reply's toId.
type replySink struct {
	*httptest.Server
	mu         sync.Mutex
	deliveries map[string]int             // webhook-id -> deliveries answered 200
	replies    map[string]map[string]bool // toId -> distinct webhook-ids
	last       time.Time                  // when the last delivery arrived
	bad        []string                   // deliveries that could not be read
}

// newReplySink starts a sink that takes hold to answer each delivery, as a real receiver does, so
// that deliveries are in flight when a dependency goes down.
func newReplySink(t *testing.T, hold time.Duration) *replySink {
	s := &replySink{deliveries: map[string]int{}, replies: map[string]map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(hold)
		raw, _ := io.ReadAll(r.Body)
		var reply struct {
			ToID string `json:"toId"`
		}
		id := r.Header.Get("webhook-id")
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := json.Unmarshal(raw, &reply); err != nil || id == "" || reply.ToID == "" {
			s.bad = append(s.bad, fmt.Sprintf("webhook-id %q body %s", id, raw))
		}
		s.deliveries[id]++
		if s.replies[reply.ToID] == nil {
			s.replies[reply.ToID] = map[string]bool{}
		}
		s.replies[reply.ToID][id] = true
		s.last = time.Now()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.Close)
	return s
}

// duplicatedIDs is the webhook-ids delivered more than once.
func (s *replySink) duplicatedIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, n := range s.deliveries {
		if n > 1 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// logLinesAbout logs, for the first few ids, every line of the processes' output that names one: what
// the worker did with a reply that went twice.
func logLinesAbout(t *testing.T, procs []*process, ids []string) {
	t.Helper()
	for _, id := range firstFew(ids) {
		seen := map[*process]bool{} // a process not restarted is in procs twice
		for i, p := range procs {
			if p == nil || seen[p] {
				continue
			}
			seen[p] = true
			for _, line := range strings.Split(p.output(), "\n") {
				if strings.Contains(line, id) {
					t.Logf("process %d: %s", i, line)
				}
			}
		}
	}
}

func (s *replySink) repliesTo(toID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies[toID])
}

// tally compares the deliveries with the accepted messages' fromIds: lost has the fromIds without a
// reply, duplicated describes every fromId with more than one reply and every webhook-id delivered more
// than once, and every delivery that is not a reply to an accepted message.
func (s *replySink) tally(accepted []string) (lost, duplicated []string, deliveries int, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]bool{}
	for _, from := range accepted {
		want[from] = true
		switch n := len(s.replies[from]); {
		case n == 0:
			lost = append(lost, from)
		case n > 1:
			duplicated = append(duplicated, fmt.Sprintf("toId %s got %d distinct replies", from, n))
		}
	}
	for id, n := range s.deliveries {
		deliveries += n
		if n > 1 {
			duplicated = append(duplicated, fmt.Sprintf("webhook-id %s delivered %d times", id, n))
		}
	}
	for to := range s.replies {
		if !want[to] {
			duplicated = append(duplicated, fmt.Sprintf("reply to %q, which no accepted message came from", to))
		}
	}
	duplicated = append(duplicated, s.bad...)
	sort.Strings(lost)
	sort.Strings(duplicated)
	return lost, duplicated, deliveries, s.last
}

// incomingLoad posts incoming messages from a few clients. A client that gets anything but 200 hands
// the message to a retrier, which posts it again with the same messageSid every retryPause until it
// gets 200 (or the give-up time passes), and goes on with a new message.
type incomingLoad struct {
	base, key string
	client    *http.Client
	outage    atomic.Bool   // set by the test while the dependency is down
	stopping  chan struct{} // closed when the clients stop posting new messages
	stopOnce  sync.Once
	quit      chan struct{} // closed when the retriers give up too
	quitOnce  sync.Once
	wg        sync.WaitGroup

	mu              sync.Mutex
	sent            []string // fromId of every message, in the order first posted
	accepted        []string // fromId of every message that got 200
	unanswered      []string // fromId of every message that never got 200
	requests        int
	requestsDown    int
	statuses        map[int]int // 0 = no HTTP answer
	unavailableDown int
	saw503          map[string]bool // fromIds of the messages any attempt of which was answered 503
	first503        string
	first500        string
	firstOther      string
	badUnavailable  string
	slowestDown     time.Duration // the slowest request during the outage
	slowestUp       time.Duration // the slowest request otherwise
	last503         time.Time
	answers         []answer // every request, in the order answered

	// dupEvery > 0: every dupEvery-th message answered 200 is posted again with its messageSid (until
	// 200) and must be answered 200, "duplicate": true, with the first answer's messageId.
	dupEvery  int
	messageID map[string]string // fromId -> the messageId of its first 200
	dupPosted int
	dupWrong  []string // the duplicates answered otherwise
}

// answer is one request of an incomingLoad: when it was sent, when it was answered, and the status.
type answer struct {
	sent, at time.Time
	status   int
}

func newIncomingLoad(base, key string) *incomingLoad {
	return &incomingLoad{base: base, key: key, client: &http.Client{Timeout: 15 * time.Second},
		stopping: make(chan struct{}), quit: make(chan struct{}), statuses: map[int]int{}, saw503: map[string]bool{},
		messageID: map[string]string{}}
}

func (l *incomingLoad) start(clients int, pause, retryPause time.Duration, giveUp time.Time) {
	run := fmt.Sprint(time.Now().UnixNano())
	for c := 0; c < clients; c++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-l.stopping:
					return
				case <-time.After(pause):
				}
				from := fmt.Sprintf("outage-%s-%d-%d", run, c, n)
				l.mu.Lock()
				l.sent = append(l.sent, from)
				l.mu.Unlock()
				if l.post(from) {
					l.duplicate(from, retryPause, giveUp)
					continue
				}
				l.wg.Add(1)
				go func() {
					defer l.wg.Done()
					if l.retry(from, retryPause, giveUp) {
						l.duplicate(from, retryPause, giveUp)
					}
				}()
			}
		}()
	}
}

// retry posts the message again every pause until it gets 200 (true), or gives up.
func (l *incomingLoad) retry(from string, pause time.Duration, giveUp time.Time) bool {
	for time.Now().Before(giveUp) {
		select {
		case <-l.quit:
			return false
		case <-time.After(pause):
		}
		if l.post(from) {
			return true
		}
	}
	l.mu.Lock()
	l.unanswered = append(l.unanswered, from)
	l.mu.Unlock()
	return false
}

// duplicate posts the message answered 200 once more, every dupEvery-th one: a sender that did not see
// the answer. It is retried like any post until it gets 200, which must be the first one's.
func (l *incomingLoad) duplicate(from string, pause time.Duration, giveUp time.Time) {
	l.mu.Lock()
	first := l.messageID[from]
	again := l.dupEvery > 0 && len(l.accepted)%l.dupEvery == 0
	if again {
		l.dupPosted++
	}
	l.mu.Unlock()
	if !again {
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		answer := l.postAgain(from)
		for answer == nil && time.Now().Before(giveUp) {
			select {
			case <-l.quit:
				return
			case <-time.After(pause):
			}
			answer = l.postAgain(from)
		}
		if answer == nil || answer["duplicate"] != true || answer["messageId"] != first || answer["success"] != true {
			l.mu.Lock()
			l.dupWrong = append(l.dupWrong, fmt.Sprintf("%s: first messageId %s, then %v", from, first, answer))
			l.mu.Unlock()
		}
	}()
}

// postAgain posts a message once more and returns its 200's body, nil for any other answer.
func (l *incomingLoad) postAgain(from string) map[string]any {
	var body map[string]any
	if !l.send(from, &body) {
		return nil
	}
	return body
}

// post sends the message whose messageSid and fromId are from, and reports whether it got 200.
func (l *incomingLoad) post(from string) bool { return l.send(from, nil) }

// send posts the message; a 200's body goes to ok200 when not nil (a duplicate), else the message
// counts as accepted.
func (l *incomingLoad) send(from string, ok200 *map[string]any) bool {
	raw, _ := json.Marshal(map[string]any{"customData": map[string]any{
		"messageSid": "sid-" + from, "fromId": from, "toId": "biz", "body": "hello from " + from}})
	req, _ := http.NewRequest("POST", l.base+"/v1/incoming_custom_channel_message", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+l.key)
	down := l.outage.Load()
	began := time.Now()
	status, body := 0, ""
	res, err := l.client.Do(req)
	if err != nil {
		body = err.Error()
	} else {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		status, body = res.StatusCode, string(b)
	}
	took := time.Since(began)
	down = down || l.outage.Load()

	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	l.statuses[status]++
	l.answers = append(l.answers, answer{sent: began, at: began.Add(took), status: status})
	if down {
		l.requestsDown++
		l.slowestDown = max(l.slowestDown, took)
	} else {
		l.slowestUp = max(l.slowestUp, took)
	}
	switch status {
	case http.StatusOK:
		var m map[string]any
		_ = json.Unmarshal([]byte(body), &m)
		if ok200 != nil {
			*ok200 = m
			return true
		}
		l.accepted = append(l.accepted, from)
		if id, _ := m["messageId"].(string); id != "" {
			l.messageID[from] = id
		}
		return true
	case http.StatusServiceUnavailable:
		if down {
			l.unavailableDown++
		}
		l.last503 = time.Now()
		if l.first503 == "" {
			l.first503 = body
		}
		var m map[string]any
		_ = json.Unmarshal([]byte(body), &m)
		if msg, _ := m["error"].(string); msg == "" && l.badUnavailable == "" {
			l.badUnavailable = body
		}
		l.saw503[from] = true
	case http.StatusInternalServerError:
		if l.first500 == "" {
			l.first500 = body
		}
	default:
		if l.firstOther == "" {
			l.firstOther = fmt.Sprintf("%d %s", status, body)
		}
	}
	return false
}

func (l *incomingLoad) stop() { l.stopOnce.Do(func() { close(l.stopping) }) }

func (l *incomingLoad) abandon() {
	l.stop()
	l.quitOnce.Do(func() { close(l.quit) })
}

// wait reports whether every client and retrier finished within timeout.
func (l *incomingLoad) wait(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

type loadResult struct {
	sent, accepted, unanswered, dupWrong            []string
	dupPosted                                       int
	requests, requestsDown, unavailableDown, saw503 int
	statuses                                        map[int]int
	slowestDown, slowestUp                          time.Duration
	last503                                         time.Time
	first503, first500, firstOther, badUnavailable  string
	answers                                         []answer
}

func (l *incomingLoad) result() loadResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	statuses := map[int]int{}
	for k, v := range l.statuses {
		statuses[k] = v
	}
	return loadResult{
		sent: append([]string(nil), l.sent...), accepted: append([]string(nil), l.accepted...),
		unanswered: append([]string(nil), l.unanswered...), requests: l.requests, requestsDown: l.requestsDown,
		unavailableDown: l.unavailableDown, saw503: len(l.saw503), statuses: statuses, first503: l.first503,
		first500: l.first500, firstOther: l.firstOther, badUnavailable: l.badUnavailable,
		slowestDown: l.slowestDown, slowestUp: l.slowestUp, last503: l.last503,
		answers:   append([]answer(nil), l.answers...),
		dupPosted: l.dupPosted, dupWrong: append([]string(nil), l.dupWrong...),
	}
}
