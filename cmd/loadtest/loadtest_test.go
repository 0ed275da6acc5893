package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"funnelchat/models"
	"funnelchat/models/rules"
)

// TestEndToEndStandalone builds the api, runs it in standalone mode as a real process, and runs the
// incoming and campaign modes against it in-process.
func TestEndToEndStandalone(t *testing.T) {
	api := startStandaloneAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	t.Run("incoming with duplicates", func(t *testing.T) {
		rep, err := runIncoming(ctx, incomingConfig{
			API: newClient(api.url, api.key, 8), RunID: "e2e" + strconv.FormatInt(time.Now().UnixNano(), 36),
			N: 100, Concurrency: 8, Duplicates: 0.1, Wait: 30 * time.Second, Settle: time.Second,
			SinkAddr: "127.0.0.1:0", Progress: testLog{t},
		})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{
			"accepted": rep.Accepted, "requests": rep.Requests, "duplicatesSent": rep.DuplicatesSent,
			"duplicatesAnsweredCorrectly": rep.DuplicatesAnsweredCorrectly, "replies": rep.Replies,
			"lostReplies": rep.LostReplies, "duplicatedReplies": rep.DuplicatedReplies,
			"badSignatures": rep.BadSignatures, "deliveries": rep.Deliveries, "foreignDeliveries": rep.ForeignDeliveries,
			"transportErrors": rep.ErrorsByStatus["transport"], "errorKinds": len(rep.ErrorsByStatus),
			"latencySamples": rep.APILatencyMs.Count, "endToEndSamples": rep.EndToEnd.Count,
		}
		want := map[string]int{
			"accepted": 100, "requests": 110, "duplicatesSent": 10,
			"duplicatesAnsweredCorrectly": 10, "replies": 100,
			"lostReplies": 0, "duplicatedReplies": 0,
			"badSignatures": 0, "deliveries": 100, "foreignDeliveries": 0,
			"transportErrors": 0, "errorKinds": 1,
			"latencySamples": 110, "endToEndSamples": 100,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("report (-want +got):\n%s\nerrors: %v", diff, rep.ErrorsByStatus)
		}
		if rep.AcceptedPerSecond <= 0 || rep.RepliesPerSecond <= 0 || rep.EndToEnd.P50 <= 0 ||
			rep.EndToEnd.Min < rep.APILatencyMs.Min {
			t.Fatalf("implausible rates or latencies: %+v %+v", rep, rep.replyReport)
		}
	})

	t.Run("campaign openings arrive once each, paced", func(t *testing.T) {
		rep, err := runCampaign(ctx, campaignConfig{
			API: newClient(api.url, api.key, 8), RunID: "e2e" + strconv.FormatInt(time.Now().UnixNano(), 36),
			Contacts: 6, PerMinute: 120, Timeout: 30 * time.Second, Settle: time.Second,
			SinkAddr: "127.0.0.1:0", Progress: testLog{t},
		})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{
			"added": rep.Added, "openings": rep.Openings, "lostOpenings": rep.LostOpenings,
			"duplicatedOpenings": rep.DuplicatedOpenings, "badSignatures": rep.BadSignatures,
			"deliveries": rep.Deliveries, "foreignDeliveries": rep.ForeignDeliveries,
		}
		want := map[string]int{
			"added": 6, "openings": 6, "lostOpenings": 0, "duplicatedOpenings": 0, "badSignatures": 0,
			"deliveries": 6, "foreignDeliveries": 0,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("report (-want +got):\n%s", diff)
		}
		// Three paced openings at 120/min take about 1.5 s after the burst; delivery jitter aside, the
		// measured rate must be near the configured one.
		if rep.MeasuredPerMinute < 80 || rep.MeasuredPerMinute > 160 || rep.FirstThreeSpreadMs > 900 {
			t.Fatalf("pacing off: %+v", rep)
		}
	})
}

// standaloneAPI is a running api process in standalone mode.
type standaloneAPI struct {
	url, key string
}

// apiBuild is cmd/api built once for the package's tests, in a directory TestMain removes.
var apiBuild struct {
	once      sync.Once
	dir, path string
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if apiBuild.dir != "" {
		_ = os.RemoveAll(apiBuild.dir)
	}
	os.Exit(code)
}

// apiBinary builds cmd/api on the first call and returns the binary's path.
func apiBinary(t *testing.T) string {
	t.Helper()
	apiBuild.once.Do(func() {
		root, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			apiBuild.err = err
			return
		}
		if apiBuild.dir, err = os.MkdirTemp("", "loadtest-api-"); err != nil {
			apiBuild.err = err
			return
		}
		apiBuild.path = filepath.Join(apiBuild.dir, "api")
		build := exec.Command("go", "build", "-o", apiBuild.path, "./cmd/api")
		build.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		if out, err := build.CombinedOutput(); err != nil {
			apiBuild.err = fmt.Errorf("build api: %v\n%s", err, out)
		}
	})
	if apiBuild.err != nil {
		t.Fatal(apiBuild.err)
	}
	return apiBuild.path
}

// startStandaloneAPI starts cmd/api on a free port with its own data directory (env, NAME=value, is
// added to its environment, overriding the defaults here), waits for /healthz and its demo key, and
// stops it with SIGTERM when the test ends.
func startStandaloneAPI(t *testing.T, env ...string) standaloneAPI {
	t.Helper()
	bin := apiBinary(t)
	dir := t.TempDir()
	port := freePort(t)
	cmd := exec.Command(bin)
	cmd.Env = append(append(withoutServices(os.Environ()), "DATA_DIR="+filepath.Join(dir, "data"), "PORT="+strconv.Itoa(port),
		"WEBHOOK_ALLOW_PRIVATE=true", "RATE_LIMIT_PER_MINUTE=1000000", "LOG_LEVEL=warn",
		"DEFAULT_QUIET_HOURS=off"), // the campaign run must not depend on the hour it runs at
		env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var output bytes.Buffer
	var mu sync.Mutex
	cmd.Stderr = lockedWriter{&mu, &output}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	keys := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			output.WriteString(line + "\n")
			mu.Unlock()
			if key, ok := strings.CutPrefix(line, "demo API key: "); ok {
				keys <- strings.TrimSpace(key)
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("api exited with %v after SIGTERM", err)
			}
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("api still running 15 s after SIGTERM")
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("api output:\n%s", output.String())
			mu.Unlock()
		}
	})

	url := "http://127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var key string
	select {
	case key = <-keys:
	case err := <-exited:
		t.Fatalf("api exited before printing its demo key: %v", err)
	case <-ctx.Done():
		t.Fatal("no demo API key printed within 60 s")
	}
	if err := waitHealthy(ctx, url); err != nil {
		t.Fatal(err)
	}
	return standaloneAPI{url: url, key: key}
}

// withoutServices drops the variables that would take the api out of standalone mode.
func withoutServices(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "DATABASE_URL", "REDIS_URL", "PORT", "DATA_DIR", "REQUIRE_HTTPS", "TLS_CERT_FILE", "TLS_KEY_FILE":
			continue
		}
		out = append(out, kv)
	}
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

// testLog writes the tool's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func TestPercentile(t *testing.T) {
	samples := func(n int) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(n-i) * time.Millisecond // descending: summarize must sort
		}
		return s
	}
	tests := []struct {
		name string
		in   []time.Duration
		want latencySummary
	}{
		{"none", nil, latencySummary{}},
		{"one sample is every percentile", []time.Duration{7 * time.Millisecond},
			latencySummary{Count: 1, Min: 7, P50: 7, P95: 7, P99: 7, Max: 7, Mean: 7}},
		{"100 samples: pN is the Nth", samples(100),
			latencySummary{Count: 100, Min: 1, P50: 50, P95: 95, P99: 99, Max: 100, Mean: 50.5}},
		{"10 samples: nearest rank rounds up", samples(10),
			latencySummary{Count: 10, Min: 1, P50: 5, P95: 10, P99: 10, Max: 10, Mean: 5.5}},
		{"1000 samples", samples(1000),
			latencySummary{Count: 1000, Min: 1, P50: 500, P95: 950, P99: 990, Max: 1000, Mean: 500.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, summarize(tt.in)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

// sign computes a Standard Webhooks signature independently of the code under test.
func sign(key []byte, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(body)))
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestVerifySignature(t *testing.T) {
	key := []byte("a signing key of thirty-two byte")
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	decoded, err := decodeSecret(secret)
	if err != nil || !bytes.Equal(decoded, key) {
		t.Fatalf("decodeSecret(%q) = %q, %v", secret, decoded, err)
	}
	now := time.Unix(1_700_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"messageId":"msg_1","toId":"lt-x-user-1"}`)
	// A known vector: HMAC-SHA256 with the key above over "msg_1.1700000000.<body>", computed outside Go
	// (Python's hmac), so that sign and verifySignature cannot agree on a wrong signed string.
	const vector = "v1,BwgUQyTSRJ2RSw+9y8W1DScwQqvx0GxIxmXlbd3+f+E="
	good := sign(key, "msg_1", ts, body)
	if good != vector {
		t.Fatalf("crypto/hmac gives %s, the known vector is %s", good, vector)
	}
	tests := []struct {
		name, id, ts, header string
		body                 []byte
		key                  []byte
		ok                   bool
	}{
		{"valid", "msg_1", ts, vector, body, key, true},
		{"one of several signatures", "msg_1", ts, "v1,AAAA " + good, body, key, true},
		{"other version only", "msg_1", ts, "v1a," + strings.TrimPrefix(good, "v1,"), body, key, false},
		{"tampered body", "msg_1", ts, good, append([]byte(nil), append(body, ' ')...), key, false},
		{"other id", "msg_2", ts, good, body, key, false},
		{"other key", "msg_1", ts, good, body, []byte("another key"), false},
		{"timestamp too old", "msg_1", strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10),
			sign(key, "msg_1", strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10), body), body, key, false},
		{"timestamp a little old", "msg_1", strconv.FormatInt(now.Add(-time.Minute).Unix(), 10),
			sign(key, "msg_1", strconv.FormatInt(now.Add(-time.Minute).Unix(), 10), body), body, key, true},
		{"no signature", "msg_1", ts, "", body, key, false},
		{"no secret yet", "msg_1", ts, good, body, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verifySignature(tt.key, tt.id, tt.ts, tt.body, tt.header, now)
			if (err == nil) != tt.ok {
				t.Fatalf("verifySignature = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

func TestSinkVerifiesAndHandsOver(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	s, err := startSink("127.0.0.1:0", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetSecret("whsec_" + base64.StdEncoding.EncodeToString(key)); err != nil {
		t.Fatal(err)
	}
	post := func(id, signature string) int {
		t.Helper()
		body := []byte(`{"messageId":"` + id + `","toId":"x"}`)
		req, _ := http.NewRequest(http.MethodPost, s.URL(), bytes.NewReader(body))
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", ts)
		if signature == "" {
			signature = sign(key, id, ts, body)
		}
		req.Header.Set("webhook-signature", signature)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if status := post("msg_good", ""); status != http.StatusOK {
		t.Fatalf("signed delivery: %d, want 200", status)
	}
	if status := post("msg_bad", "v1,bm9wZQ=="); status != http.StatusUnauthorized {
		t.Fatalf("badly signed delivery: %d, want 401", status)
	}
	for _, want := range []struct {
		id  string
		bad bool
	}{{"msg_good", false}, {"msg_bad", true}} {
		d := <-s.Deliveries
		if d.WebhookID != want.id || (d.BadSignature != "") != want.bad || d.Arrival.IsZero() {
			t.Fatalf("delivery %+v, want id %s bad=%v", d, want.id, want.bad)
		}
	}
}

func TestTrackerCountsDuplicatesAndForeign(t *testing.T) {
	tr := newDeliveryTracker(replyKey("run", 3))
	at := time.Unix(100, 0)
	d := func(id, toID string, sec int, bad string) delivery {
		return delivery{Arrival: at.Add(time.Duration(sec) * time.Second), WebhookID: id,
			Body: []byte(`{"messageId":"` + id + `","toId":"` + toID + `"}`), BadSignature: bad}
	}
	for _, del := range []delivery{
		d("m0", "lt-run-user-0", 1, ""),
		d("m0", "lt-run-user-0", 2, ""), // the same reply delivered twice: 1
		d("m1", "lt-run-user-1", 3, ""),
		d("m1b", "lt-run-user-1", 4, ""), // a second reply to message 1: 1
		d("m9", "lt-run-user-9", 5, ""),  // not an index of the run
		d("mx", "lt-other-user-0", 5, ""),
		d("m01", "lt-run-user-01", 5, ""), // not the canonical form of an index
		d("m2", "lt-run-user-2", 6, "no v1 signature matches"),
	} {
		tr.add(del, testLog{t})
	}
	deliveries, bad, foreign := tr.counts()
	if deliveries != 8 || bad != 1 || foreign != 3 || tr.duplicated() != 2 || tr.count() != 2 {
		t.Fatalf("deliveries %d bad %d foreign %d duplicated %d count %d; want 8 1 3 2 2",
			deliveries, bad, foreign, tr.duplicated(), tr.count())
	}
	if first, _ := tr.firstArrival(0); !first.Equal(at.Add(time.Second)) {
		t.Fatalf("first arrival of 0 = %s, want the first delivery's", first)
	}
	if _, ok := tr.firstArrival(2); ok {
		t.Fatal("a badly signed delivery counted as a reply")
	}

	originals := []requestResult{
		{Start: at, Latency: 100 * time.Millisecond, Status: 200, MessageID: "in0"},
		{Start: at, Latency: 100 * time.Millisecond, Status: 200, MessageID: "in1"},
		{Start: at, Latency: 100 * time.Millisecond, Status: 200, MessageID: "in2"},
	}
	rep := replySummary(tr, originals)
	if rep.Replies != 2 || rep.LostReplies != 1 || rep.EndToEnd.Max != 3000 || rep.FromAccept.Min != 900 ||
		rep.RepliesPerSecond != 1 {
		t.Fatalf("reply summary %+v", rep)
	}
}

// TestScheduleRepeatsOnlyAcceptedOriginals: duplicates are spread evenly, each goes after its original
// was done, and an original that was not accepted is not repeated.
func TestScheduleRepeatsOnlyAcceptedOriginals(t *testing.T) {
	s := newSchedule(100, 0.1)
	if s.Duplicates() != 10 {
		t.Fatalf("%d duplicates chosen, want 10", s.Duplicates())
	}
	var mu sync.Mutex
	doneAt := map[int]int{} // original -> order in which it finished
	var order []job
	runClosedLoop(context.Background(), s, 4, func(j job) bool {
		mu.Lock()
		defer mu.Unlock()
		if j.Duplicate {
			if _, ok := doneAt[j.Index]; !ok {
				t.Errorf("duplicate of %d sent before its original was done", j.Index)
			}
		} else {
			doneAt[j.Index] = len(order)
		}
		order = append(order, j)
		return j.Index != 9 // original 9 is refused
	})
	dups := 0
	seen := map[int]bool{}
	for _, j := range order {
		if j.Duplicate {
			dups++
			if seen[j.Index] || j.Index == 9 {
				t.Fatalf("unexpected duplicate of %d", j.Index)
			}
			seen[j.Index] = true
		}
	}
	if len(order) != 109 || dups != 9 {
		t.Fatalf("%d jobs with %d duplicates, want 109 with 9", len(order), dups)
	}

	for _, tt := range []struct {
		n        int
		fraction float64
		want     int
	}{{10, 0, 0}, {10, 1, 10}, {3, 0.5, 2}, {2000, 0.05, 100}} {
		if got := newSchedule(tt.n, tt.fraction).Duplicates(); got != tt.want {
			t.Errorf("newSchedule(%d, %v) chose %d, want %d", tt.n, tt.fraction, got, tt.want)
		}
	}
}

func TestOpenLoopKeepsTheRate(t *testing.T) {
	s := newSchedule(20, 0)
	var mu sync.Mutex
	var scheduled []time.Time
	start := time.Now()
	runOpenLoop(context.Background(), s, 100, 4, func(j job) bool {
		mu.Lock()
		scheduled = append(scheduled, j.Scheduled)
		mu.Unlock()
		time.Sleep(30 * time.Millisecond) // slower than the interval: the loop must not wait for answers
		return true
	})
	if len(scheduled) != 20 {
		t.Fatalf("%d requests, want 20", len(scheduled))
	}
	// 20 at 100/s with 4 in flight of 30 ms each: the cap, not the answers, limits it to ~133/s.
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %s", took)
	}
}

func TestMeasurePacing(t *testing.T) {
	start := time.Unix(1000, 0)
	var arrivals []time.Time
	for i := 0; i < 3; i++ {
		arrivals = append(arrivals, start.Add(100*time.Millisecond+time.Duration(i)*time.Millisecond))
	}
	for k := 1; k <= 30; k++ {
		arrivals = append(arrivals, arrivals[2].Add(time.Duration(k)*500*time.Millisecond))
	}
	arrivals[0], arrivals[32] = arrivals[32], arrivals[0] // any order
	got := measurePacing(start, arrivals, 120)
	want := pacingNumbers{
		firstAfterStart: 100, firstThreeSpread: 2, measuredPerMinute: 120, fittedPerMinute: 120,
		expectedGap: 500, minGap: 500, maxGap: 500, durationSeconds: 15.102,
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(pacingNumbers{})); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if got := measurePacing(start, arrivals[:3], 120); got.measuredPerMinute != 0 {
		t.Fatalf("a rate from the burst alone: %+v", got)
	}
}

func TestCampaignPhonesAreValidAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	for _, run := range []string{"a", "b", "dn1xr0txqwba", "e2e123"} {
		for _, i := range []int{0, 1, 42, 999, 9999} {
			phone := campaignPhone(run, i)
			e164, err := models.NormalizePhone(phone)
			if err != nil || e164 != phone {
				t.Fatalf("NormalizePhone(%q) = %q, %v", phone, e164, err)
			}
			if seen[phone] {
				t.Fatalf("%s given twice", phone)
			}
			seen[phone] = true
		}
	}
}

func TestParseMemoryStatus(t *testing.T) {
	status := "Name:\tapi\nVmPeak:\t 900000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40960 kB\nThreads:\t9\n"
	m, err := parseMemoryStatus([]byte(status))
	if err != nil || m != (memoryStatus{VmRSS: 40960, VmHWM: 51200}) {
		t.Fatalf("parseMemoryStatus = %+v, %v", m, err)
	}
	if _, err := parseMemoryStatus([]byte("Name:\tkthreadd\n")); err == nil {
		t.Fatal("no error for a status without memory lines")
	}
	s := startRSSSampler([]int{os.Getpid()}, nil)
	rep := s.Stop()
	if rep.PeakRSSMB.API <= 0 || rep.PeakRSSMB.Total != rep.PeakRSSMB.API || rep.SampledPeakRSSMB.API <= 0 {
		t.Fatalf("own memory: %+v", rep)
	}
}

func TestPIDsFlag(t *testing.T) {
	var p pidsFlag
	for _, v := range []string{"12,34", "56"} {
		if err := p.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if p.String() != "12,34,56" {
		t.Fatalf("pids %s", p.String())
	}
	if err := p.Set("x"); err == nil {
		t.Fatal("accepted a pid that is not a number")
	}
}

// TestCreateAccountRunsAdmin runs a stand-in admin CLI and checks the arguments it got and the key read.
func TestCreateAccountRunsAdmin(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "admin")
	argsFile := filepath.Join(dir, "args")
	body := fmt.Sprintf("#!/bin/sh\necho \"$@\" > %s\necho '{\"accountId\":\"acc_1\",\"userId\":\"usr_1\",\"email\":\"'$4'\",\"apiKey\":\"sk_test\"}'\n", argsFile)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	acc, err := createAccount(context.Background(), script, "loadtest-1@example.com")
	if err != nil {
		t.Fatal(err)
	}
	args, _ := os.ReadFile(argsFile)
	if acc.APIKey != "sk_test" || acc.Email != "loadtest-1@example.com" ||
		strings.TrimSpace(string(args)) != "account create --email loadtest-1@example.com --rate-limit 1000000" {
		t.Fatalf("account %+v, admin args %q", acc, args)
	}
	if accountRateLimit != models.MaxRateLimit {
		t.Fatalf("accountRateLimit %d, the admin accepts up to %d", accountRateLimit, models.MaxRateLimit)
	}
	if _, err := createAccount(context.Background(), "false", "x@example.com"); err == nil {
		t.Fatal("no error from a failing admin")
	}
}

// TestFillStandalone runs the fill mode against the standalone api (SQLite and the in-process worker)
// and checks, through the API, what it wrote: every conversation, contact and message, in order.
func TestFillStandalone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("20 conversations of 4 messages and 5 campaign sends", func(t *testing.T) {
		api := startStandaloneAPI(t)
		const conversations, messages, sends = 20, 4, 5
		runID := "fill" + strconv.FormatInt(time.Now().UnixNano(), 36)
		rep, err := runFill(ctx, fillConfig{
			API: newClient(api.url, api.key, 8), RunID: runID, Conversations: conversations, Messages: messages,
			CampaignSends: sends, Concurrency: 8, WaitSends: true, Wait: 30 * time.Second,
			SinkAddr: "127.0.0.1:0", Progress: testLog{t},
		})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{
			"messagesPosted": rep.MessagesPosted, "incoming": rep.Incoming, "outgoing": rep.Outgoing,
			"campaignSends": rep.CampaignSends, "sent": rep.CampaignSendsByStatus["sent"],
			"errorKinds": len(rep.ErrorsByStatus), "transport": rep.ErrorsByStatus["transport"],
			"latencySamples": rep.APILatencyMs.Count, "deliveries": rep.Deliveries, "badSignatures": rep.BadSignatures,
			"undelivered": rep.Undelivered, "otherDeliveries": rep.OtherDeliveries,
		}
		want := map[string]int{
			"messagesPosted": 80, "incoming": 40, "outgoing": 40,
			"campaignSends": 5, "sent": 5,
			"errorKinds": 1, "transport": 0,
			"latencySamples": 80, "deliveries": 45, "badSignatures": 0, // 40 replies and 5 openings
			"undelivered": 0, "otherDeliveries": 5,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("report (-want +got):\n%s\nerrors %v, sends %v", diff, rep.ErrorsByStatus, rep.CampaignSendsByStatus)
		}
		if rep.MessagesPerSecond <= 0 || rep.DurationSeconds <= 0 {
			t.Fatalf("no rate: %+v", rep)
		}

		c := newClient(api.url, api.key, 4)
		type message struct {
			ID, ContactID, Direction, Body, MessageSid, AuthorType string
		}
		type contact struct {
			ID, FirstName, LastName string
			Email                   *string
		}
		// pages reads every page of a listing, limit items at a time.
		pages := func(path string, limit int, each func(json.RawMessage)) {
			t.Helper()
			cursor := ""
			for {
				var page struct {
					Data       []json.RawMessage `json:"data"`
					NextCursor *string           `json:"nextCursor"`
				}
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				url := path + sep + "limit=" + strconv.Itoa(limit)
				if cursor != "" {
					url += "&cursor=" + cursor
				}
				if _, err := c.call(ctx, http.MethodGet, url, nil, &page, http.StatusOK); err != nil {
					t.Fatal(err)
				}
				for _, raw := range page.Data {
					each(raw)
				}
				if page.NextCursor == nil {
					return
				}
				cursor = *page.NextCursor
			}
		}
		decode := func(raw json.RawMessage, out any) {
			t.Helper()
			if err := json.Unmarshal(raw, out); err != nil {
				t.Fatal(err)
			}
		}

		// Every sender is a contact with one conversation, and there is nothing else.
		var contacts []contact
		pages("/v1/contacts?q=", 7, func(raw json.RawMessage) {
			var ct contact
			decode(raw, &ct)
			contacts = append(contacts, ct)
		})
		inConversations := map[string]bool{}
		pages("/v1/conversations?status=all", 7, func(raw json.RawMessage) {
			var conv struct {
				Contact contact `json:"contact"`
			}
			decode(raw, &conv)
			inConversations[conv.Contact.ID] = true
		})
		if len(contacts) != conversations || len(inConversations) != conversations {
			t.Fatalf("%d contacts and %d conversations, want %d of each", len(contacts), len(inConversations), conversations)
		}

		// Each conversation: its sender's name and email, then the messages in turn, incoming first,
		// with the tool's texts; the first five senders' end with the campaign's opening.
		seen := map[int]bool{}
		campaignContacts := map[string]bool{}
		for _, ct := range contacts {
			if !inConversations[ct.ID] {
				t.Fatalf("contact %s has no conversation", ct.ID)
			}
			var msgs []message
			pages("/v1/contacts/"+ct.ID+"/messages", 200, func(raw json.RawMessage) {
				var m message
				decode(raw, &m)
				msgs = append(msgs, m)
			})
			if len(msgs) == 0 || msgs[0].Direction != "incoming" {
				t.Fatalf("contact %s: messages %+v", ct.ID, msgs)
			}
			rest, _ := strings.CutPrefix(msgs[0].MessageSid, "lt-"+runID+"-")
			i, err := strconv.Atoi(strings.TrimSuffix(rest, "-0"))
			if err != nil || seen[i] || i < 0 || i >= conversations {
				t.Fatalf("contact %s: first messageSid %q", ct.ID, msgs[0].MessageSid)
			}
			seen[i] = true
			p := fillPerson(runID, i)
			email := ""
			if ct.Email != nil {
				email = *ct.Email
			}
			if ct.FirstName != p.First || ct.LastName != p.Last || email != p.Email || p.First == "" || p.Last == "" {
				t.Fatalf("sender %d is %s %s <%s>, want %+v", i, ct.FirstName, ct.LastName, email, p)
			}
			want := messages
			if i < sends {
				want++
				campaignContacts[ct.ID] = true
			}
			if len(msgs) != want {
				t.Fatalf("sender %d: %d messages, want %d: %+v", i, len(msgs), want, msgs)
			}
			for j := 0; j < messages; j++ {
				m := msgs[j]
				switch {
				case j%2 == 0 && (m.Direction != "incoming" || m.Body != fillIncomingText(runID, i, j) ||
					m.MessageSid != fillMessageSid(runID, i, j)):
					t.Fatalf("sender %d, message %d: %+v, want the incoming %q", i, j, m, fillIncomingText(runID, i, j))
				case j%2 == 1 && (m.Direction != "outgoing" || m.AuthorType != "api" || m.Body != fillReplyText(runID, i, j)):
					t.Fatalf("sender %d, message %d: %+v, want the reply %q", i, j, m, fillReplyText(runID, i, j))
				}
			}
			if i < sends {
				if m := msgs[messages]; m.Direction != "outgoing" || m.AuthorType != "campaign" ||
					!strings.HasPrefix(m.Body, "Hi "+p.First+", ") {
					t.Fatalf("sender %d: last message %+v, want the campaign's opening", i, m)
				}
			}
		}

		// The campaign owes exactly the first five senders an opening, all sent.
		sent := 0
		pages("/v1/campaigns/"+rep.CampaignID+"/sends", 200, func(raw json.RawMessage) {
			var s struct{ ContactID, Status string }
			decode(raw, &s)
			if !campaignContacts[s.ContactID] || s.Status != "sent" {
				t.Fatalf("campaign send %+v, want one of %v, sent", s, campaignContacts)
			}
			sent++
		})
		if sent != sends {
			t.Fatalf("%d campaign sends, want %d", sent, sends)
		}

		// The contact search finds a sender by its name.
		p := fillPerson(runID, 3)
		found := false
		pages("/v1/contacts?q="+strings.ReplaceAll(strings.ToLower(p.First+" "+p.Last), " ", "%20"), 200, func(raw json.RawMessage) {
			var ct contact
			decode(raw, &ct)
			found = found || (ct.FirstName == p.First && ct.LastName == p.Last)
		})
		if !found {
			t.Fatalf("searching %q found no such contact", p.First+" "+p.Last)
		}

		// With the worker said to be stopped, nothing is waited for and every reply counts as undelivered.
		rep, err = runFill(ctx, fillConfig{
			API: newClient(api.url, api.key, 2), RunID: runID + "b", Conversations: 2, Messages: 3, Concurrency: 2,
			NoReplies: true, Progress: testLog{t},
		})
		if err != nil || rep.MessagesPosted != 6 || rep.Outgoing != 2 || rep.Undelivered != 2 || rep.Deliveries != 0 {
			t.Fatalf("--no-replies: %+v, %v", rep, err)
		}
	})

	t.Run("429 answers are waited out, not lost", func(t *testing.T) {
		// 60 requests a minute, a burst of 60: the fill's 72 requests (the bot, the webhook and 70
		// messages) go over it.
		api := startStandaloneAPI(t, "RATE_LIMIT_PER_MINUTE=60")
		const conversations = 35
		rep, err := runFill(ctx, fillConfig{
			API: newClient(api.url, api.key, 8), RunID: "fill" + strconv.FormatInt(time.Now().UnixNano(), 36),
			Conversations: conversations, Messages: 2, Concurrency: 8, Wait: 30 * time.Second,
			SinkAddr: "127.0.0.1:0", Progress: testLog{t},
		})
		if err != nil {
			t.Fatal(err)
		}
		if rep.MessagesPosted != 2*conversations || rep.Incoming != conversations || rep.Retries["429"] == 0 ||
			!cmp.Equal(rep.ErrorsByStatus, map[string]int{"transport": 0}) || rep.Undelivered != 0 {
			t.Fatalf("report: %+v", rep)
		}
		var page struct {
			Data []json.RawMessage `json:"data"`
		}
		if _, err := newClient(api.url, api.key, 1).callPatiently(ctx, http.MethodGet, "/v1/contacts?q=&limit=200", nil, &page,
			nil, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != conversations {
			t.Fatalf("%d contacts, want %d", len(page.Data), conversations)
		}
	})
}

// TestFillTextsAreNotOptOuts: no message the fill sends from a contact reads as a consent keyword or a
// request to opt out (the contact would opt out, and the replies be refused 409), every template's
// slots are filled, and the senders' emails are valid and their own.
func TestFillTextsAreNotOptOuts(t *testing.T) {
	emails := map[string]bool{}
	for _, run := range []string{"a", "b", "dn1xr0txqwba"} {
		for i := 0; i < 3000; i++ {
			for j := 0; j < 6; j++ {
				in, reply := fillIncomingText(run, i, 2*j), fillReplyText(run, i, 2*j+1)
				if rules.ClassifyKeyword(in, nil, nil) != rules.KeywordNone || rules.AsksToOptOut(in) {
					t.Fatalf("%q reads as a keyword or an opt-out", in)
				}
				if strings.ContainsAny(in+reply, "{}") {
					t.Fatalf("unfilled slot in %q or %q", in, reply)
				}
			}
			p := fillPerson(run, i)
			if p.First == "" || p.Last == "" {
				t.Fatalf("sender %d of %s: %+v", i, run, p)
			}
			if p.Email == "" {
				continue
			}
			if e, err := models.NormalizeEmail(p.Email); err != nil || e != p.Email || emails[e] {
				t.Fatalf("email %q: %q, %v, seen before %v", p.Email, e, err, emails[e])
			}
			emails[p.Email] = true
		}
	}
	// Three in four senders have an email; every exchange is used.
	if n := len(emails); n < 9000*7/10 || n > 9000*8/10 {
		t.Fatalf("%d of 9000 senders have an email", n)
	}
	used := map[string]bool{}
	for i := 0; i < 2000; i++ {
		used[fillIncomingText("a", i, 0)[:12]] = true
	}
	if len(used) < len(fillExchanges)-2 { // a few asks share their first 12 characters
		t.Fatalf("only %d different openings of %d exchanges", len(used), len(fillExchanges))
	}
}

func TestParseFillFlags(t *testing.T) {
	o, err := parseFlags([]string{"--key", "k", "--fill", "--conversations", "200000", "--messages", "5",
		"--campaign-sends", "1000", "--wait-sends", "--c", "32"}, io.Discard)
	if err != nil || !o.Fill || o.Conversations != 200000 || o.Messages != 5 || o.CampaignSends != 1000 || !o.WaitSends ||
		o.Concurrency != 32 {
		t.Fatalf("%+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"--fill", "--campaign"},
		{"--fill", "--rate", "100"},
		{"--fill", "--conversations", "0"},
		{"--fill", "--messages", "0"},
		{"--fill", "--conversations", "10", "--campaign-sends", "11"},
		{"--fill", "--campaign-sends", "5", "--wait-sends", "--no-replies"},
		{"--fill", "--wait-sends"},
		{"--wait-sends"},
	} {
		if _, err := parseFlags(append([]string{"--key", "k"}, args...), io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
