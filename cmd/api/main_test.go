package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"funnelchat/models/testenv"
)

// These tests run the real binaries as processes, as an operator would: admin, api and worker.

var (
	env    *testenv.Env
	binDir string
	// buildFlags are go build's flags for the binaries: "-race" when the tests run with the race
	// detector (race_test.go).
	buildFlags []string
)

func TestMain(m *testing.M) {
	raiseParallel()
	code := testenv.Main(m, &env, func() error {
		dir, err := os.MkdirTemp("", "funnelchat-bin-")
		if err != nil {
			return err
		}
		binDir = dir
		root, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			return err
		}
		args := append(append([]string{"build"}, buildFlags...), "-o", dir+"/", "./cmd/api", "./cmd/worker", "./cmd/admin")
		build := exec.Command("go", args...)
		build.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("build binaries: %v\n%s", err, out)
		}
		return nil
	})
	_ = os.RemoveAll(binDir)
	os.Exit(code)
}

// process is a running binary whose output is collected.
type process struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan error
}

func (p *process) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func start(t *testing.T, environ []string, name string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Env = environ
	return startCmd(t, name, cmd)
}

// startCmd starts cmd, collects its output, and kills it when the test ends (showing its output if the
// test failed).
func startCmd(t *testing.T, name string, cmd *exec.Cmd) *process {
	t.Helper()
	p := &process{cmd: cmd, done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		// A race-built binary reports a race on its output and goes on (it would exit 66 only at its
		// own exit, which a killed process never reaches).
		if strings.Contains(p.output(), "WARNING: DATA RACE") {
			t.Errorf("%s reported a data race", name)
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

// stop sends SIGTERM and requires a clean exit within 10 s (README, "Deployment").
func (p *process) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err // let the cleanup's receive return
		if err != nil {
			t.Fatalf("%s exited with %v after SIGTERM\n%s", p.cmd.Path, err, p.output())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still running 10 s after SIGTERM", p.cmd.Path)
	}
}

// admin runs the admin binary and decodes its JSON output.
func admin(t *testing.T, environ []string, args ...string) map[string]any {
	t.Helper()
	out, stderr, err := runAdmin(environ, args...)
	if err != nil {
		t.Fatalf("admin %v: %v\n%s", args, err, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("admin %v printed %q: %v", args, out, err)
	}
	return m
}

// runAdmin runs the admin binary with environ and returns its standard output and error.
func runAdmin(environ []string, args ...string) (stdout []byte, stderr string, err error) {
	cmd := exec.Command(filepath.Join(binDir, "admin"), args...)
	cmd.Env = environ
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err = cmd.Output()
	return stdout, errOut.String(), err
}

// freePorts returns n distinct free loopback ports, all chosen while held open together: ports chosen
// one after another can repeat, since each is closed before the next is asked for (it happened to two
// sentinels of the Sentinel tests).
func freePorts(t *testing.T, n int) []string { return testenv.FreePorts(t, n) }

func freePort(t *testing.T) string { return testenv.FreePorts(t, 1)[0] }

// baseEnv is the environment of every process: PATH and HOME only, plus the test's variables (a
// variable given twice takes its last value, so a test's own pool or concurrency wins).
//
// No quiet hours: a campaign test must not depend on the hour it runs at. Smaller pools than a
// deployment's defaults (16 for an api, WORKER_CONCURRENCY 20 + 5 for a worker): four process tests run
// at once beside another package's tests, a deployment of api + worker at the defaults holds up to 41
// PostgreSQL connections, and one CI run exhausted the server's 100 ("too many clients already").
// At 10 a process, a deployment holds at most 20.
func baseEnv(vars ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "DEFAULT_QUIET_HOURS=off",
		"DATABASE_POOL_SIZE=10", "WORKER_CONCURRENCY=8"}, vars...)
}

func call(t *testing.T, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, m
}

func waitReady(t *testing.T, base string, p *process) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		// Only the api's own answer counts: a test server that another test started on the port
		// would answer 200 to anything.
		if res, err := http.Get(base + "/readyz"); err == nil {
			var ready struct {
				Status string         `json:"status"`
				Checks map[string]any `json:"checks"`
			}
			err := json.NewDecoder(res.Body).Decode(&ready)
			res.Body.Close()
			if res.StatusCode == http.StatusOK && err == nil && ready.Status == "ok" && ready.Checks["database"] == "ok" {
				return
			}
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("api exited early: %v\n%s", err, p.output())
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("api not ready after 30 s\n%s", p.output())
}

// operatorFlow is the walk-through of the foundation's "done when": create a contact (201), again
// (200, same id), find it by phone and email, add it to a new list (201, then 200), and rotate the key.
func operatorFlow(t *testing.T, base, key string) {
	t.Helper()
	status, c := call(t, "POST", base+"/v1/contacts", key, map[string]any{"phone": "+14155550123", "firstName": "Ann", "email": "ann@example.com"})
	if status != http.StatusCreated {
		t.Fatalf("create contact: %d %v", status, c)
	}
	status, again := call(t, "POST", base+"/v1/contacts", key, map[string]any{"phone_number": "+14155550123", "first_name": "Ann"})
	if status != http.StatusOK || again["id"] != c["id"] {
		t.Fatalf("create again: %d %v, want 200 with id %v", status, again, c["id"])
	}
	for _, q := range []string{"phoneNumber=%2B14155550123", "email=ann@example.com"} {
		status, found := call(t, "GET", base+"/v1/contacts?"+q, key, nil)
		if status != http.StatusOK || found["id"] != c["id"] {
			t.Fatalf("lookup %s: %d %v", q, status, found)
		}
	}
	status, l := call(t, "POST", base+"/v1/lists", key, map[string]any{"name": "Leads"})
	if status != http.StatusCreated {
		t.Fatalf("create list: %d %v", status, l)
	}
	for _, want := range []int{http.StatusCreated, http.StatusOK} {
		status, m := call(t, "POST", base+"/v1/lists/"+l["id"].(string)+"/contacts", key, map[string]any{"contact_id": c["id"]})
		if status != want {
			t.Fatalf("add to list: %d %v, want %d", status, m, want)
		}
	}
	status, rotated := call(t, "POST", base+"/v1/api_key", key, nil)
	newKey, _ := rotated["apiKey"].(string)
	if status != http.StatusCreated || newKey == "" {
		t.Fatalf("rotate: %d %v", status, rotated)
	}
	if status, _ := call(t, "GET", base+"/v1/lists", key, nil); status != http.StatusUnauthorized {
		t.Fatalf("old key after rotation: %d, want 401", status)
	}
	if status, _ := call(t, "GET", base+"/v1/lists", newKey, nil); status != http.StatusOK {
		t.Fatalf("new key: %d, want 200", status)
	}
}

// TestProductionDeployment runs admin, api and worker as processes on the backend under test: the
// real PostgreSQL and Redis when configured, else the standalone pair in a fresh DATA_DIR (where
// admin works on the same SQLite file the api uses).
func TestProductionDeployment(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	base := "http://127.0.0.1:" + port
	var environ []string
	if env.Postgres() {
		backends, _ := ownBackends(t)
		environ = baseEnv(append(backends, "REQUIRE_HTTPS=false", "PORT="+port)...)
	} else {
		environ = baseEnv("DATA_DIR="+t.TempDir(), "PORT="+port)
	}
	if got := admin(t, environ, "migrate"); got["migrated"] != true {
		t.Fatalf("migrate printed %v", got)
	}
	created := admin(t, environ, "account", "create", "--email", "A@Example.com")
	key, _ := created["apiKey"].(string)
	if created["email"] != "a@example.com" || key == "" || created["accountId"] == nil || created["userId"] == nil {
		t.Fatalf("account create printed %v", created)
	}

	api := start(t, environ, "api")
	var worker *process
	metricsPort := freePort(t)
	if env.Postgres() {
		worker = start(t, append(environ, "METRICS_PORT="+metricsPort), "worker")
	}
	waitReady(t, base, api)
	operatorFlow(t, base, key)

	t.Run("a rotation by the admin CLI stops the old key in the running api at once", func(t *testing.T) {
		first, _ := admin(t, environ, "key", "rotate", "--email", "a@example.com")["apiKey"].(string)
		if status, _ := call(t, "GET", base+"/v1/lists", first, nil); status != http.StatusOK {
			t.Fatalf("rotated key: %d, want 200", status)
		}
		second, _ := admin(t, environ, "key", "rotate", "--email", "a@example.com")["apiKey"].(string)
		if status, _ := call(t, "GET", base+"/v1/lists", first, nil); status != http.StatusUnauthorized {
			t.Fatalf("key rotated away by the CLI: %d, want 401", status)
		}
		if status, _ := call(t, "GET", base+"/v1/lists", second, nil); status != http.StatusOK {
			t.Fatalf("the CLI's new key: %d, want 200", status)
		}
	})
	if worker != nil {
		t.Run("the worker serves its metrics on METRICS_PORT", func(t *testing.T) {
			var body string
			deadline := time.Now().Add(10 * time.Second)
			for {
				res, err := http.Get("http://127.0.0.1:" + metricsPort + "/metrics")
				if err == nil {
					raw, _ := io.ReadAll(res.Body)
					res.Body.Close()
					body = string(raw)
					if res.StatusCode == http.StatusOK {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("worker metrics not served: %v %s\n%s", err, body, worker.output())
				}
				time.Sleep(100 * time.Millisecond)
			}
			for _, want := range []string{"funnelchat_bot_reply_duration_seconds", "go_goroutines"} {
				if !strings.Contains(body, want) {
					t.Errorf("worker /metrics lacks %s", want)
				}
			}
		})
	}

	api.stop(t)
	if worker != nil {
		worker.stop(t)
		if !strings.Contains(worker.output(), "worker started") {
			t.Fatalf("worker did not report starting:\n%s", worker.output())
		}
	}
}

func TestStandaloneModePrintsDemoKeyOnce(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	base := "http://127.0.0.1:" + port
	environ := baseEnv("DATA_DIR="+t.TempDir(), "PORT="+port)

	api := start(t, environ, "api")
	waitReady(t, base, api)
	key := demoKey(t, api.output())
	if !strings.Contains(api.output(), "do not survive a restart") {
		t.Fatalf("start-up log does not warn that queued jobs are lost on restart:\n%s", api.output())
	}
	operatorFlow(t, base, key)
	api.stop(t)

	// Second start on the same DATA_DIR: no new demo key, the data is still there.
	api = start(t, environ, "api")
	waitReady(t, base, api)
	if strings.Contains(api.output(), "demo API key:") {
		t.Fatalf("demo key printed again:\n%s", api.output())
	}
	rotated := admin(t, environ, "key", "rotate", "--email", "demo@example.com")
	status, found := call(t, "GET", base+"/v1/contacts?email=ann@example.com", rotated["apiKey"].(string), nil)
	if status != http.StatusOK || found["phone"] != "+14155550123" {
		t.Fatalf("contact lost across restart: %d %v", status, found)
	}
	api.stop(t)
}

func TestConfigurationErrorsStopStartUp(t *testing.T) {
	t.Parallel()
	production := []string{"DATABASE_URL=postgres://postgres@127.0.0.1:5432/test"}
	cases := map[string][]string{
		"only DATABASE_URL": {"DATABASE_URL=postgres://postgres@127.0.0.1:5432/test"},
		"only REDIS_URL":    {"REDIS_URL=redis://127.0.0.1:6379"},
		"bad PORT":          {"PORT=http", "DATA_DIR=" + t.TempDir()},
		// A read replica is for production mode: standalone SQLite has none.
		"replica without DATABASE_URL": {"DATABASE_REPLICA_URL=postgres://postgres@127.0.0.1:5432/replica", "DATA_DIR=" + t.TempDir()},
		// The variable named first is the one the error must name.
		"REDIS_CLUSTER_ADDRS not host:port": append([]string{"REDIS_CLUSTER_ADDRS=redis://127.0.0.1:7000"}, production...),
		"REDIS_CLUSTER_ADDRS beside Sentinel": append([]string{"REDIS_CLUSTER_ADDRS=127.0.0.1:7000",
			"REDIS_SENTINEL_ADDRS=127.0.0.1:26379", "REDIS_SENTINEL_MASTER=mymaster"}, production...),
		"REDIS_CLUSTER_ADDRS with a database number": append([]string{"REDIS_CLUSTER_ADDRS=127.0.0.1:7000",
			"REDIS_URL=redis://127.0.0.1:7000/2"}, production...),
	}
	for name, vars := range cases {
		t.Run(name, func(t *testing.T) {
			for _, bin := range []string{"api", "worker"} {
				cmd := exec.Command(filepath.Join(binDir, bin))
				cmd.Env = baseEnv(vars...)
				out, err := cmd.CombinedOutput()
				if err == nil {
					t.Fatalf("%s started with %v", bin, vars)
				}
				variable, _, _ := strings.Cut(vars[0], "=")
				if name == "bad PORT" {
					variable = "PORT"
				}
				if !strings.Contains(string(out), variable) {
					t.Fatalf("%s error does not name %s: %s", bin, variable, out)
				}
			}
		})
	}
	t.Run("worker refuses standalone mode", func(t *testing.T) {
		cmd := exec.Command(filepath.Join(binDir, "worker"))
		cmd.Env = baseEnv("DATA_DIR=" + t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "standalone") {
			t.Fatalf("worker in standalone mode: err=%v out=%s", err, out)
		}
	})
}

func demoKey(t *testing.T, output string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(output))
	for sc.Scan() {
		if k, ok := strings.CutPrefix(sc.Text(), "demo API key: "); ok {
			return strings.TrimSpace(k)
		}
	}
	t.Fatalf("no demo API key line in:\n%s", output)
	return ""
}
