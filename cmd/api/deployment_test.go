package main_test

import (
	"net/http"
	"testing"

	"funnelchat/models"
)

// killDeployment is the system a kill test runs against, as processes: on PostgreSQL + Redis an api and
// its workers, in standalone mode one api (which runs the worker in-process). It is ready and its
// webhook points at the test's sink.
type killDeployment struct {
	t         *testing.T
	base, key string
	environ   []string
	api       *process
	workers   []*process // PostgreSQL + Redis only
	// store reads and writes the deployment's own database (PostgreSQL + Redis only).
	store *models.Store
}

// startKillDeployment starts the api and, on PostgreSQL + Redis, `workers` worker processes, with vars
// added to the environment; the account is created with the admin CLI (PostgreSQL) or is standalone
// mode's demo account.
func startKillDeployment(t *testing.T, email string, workers int, hook string, vars ...string) *killDeployment {
	t.Helper()
	port := freePort(t)
	d := &killDeployment{t: t, base: "http://127.0.0.1:" + port}
	common := append([]string{"PORT=" + port, "SWEEP_INTERVAL=2s", "WEBHOOK_ALLOW_PRIVATE=true"}, vars...)
	if env.Postgres() {
		var backends []string
		backends, d.store = ownBackends(t)
		d.environ = baseEnv(append(append(common, backends...), "REQUIRE_HTTPS=false")...)
		d.key = admin(t, d.environ, "account", "create", "--email", email)["apiKey"].(string)
		d.api = start(t, d.environ, "api")
		for range workers {
			d.workers = append(d.workers, start(t, d.environ, "worker"))
		}
	} else {
		d.environ = baseEnv(append(common, "DATA_DIR="+t.TempDir())...)
		d.api = start(t, d.environ, "api")
	}
	waitReady(t, d.base, d.api)
	if d.key == "" {
		d.key = demoKey(t, d.api.output())
	}
	if status, body := call(t, "PUT", d.base+"/v1/settings/webhook", d.key, map[string]any{"url": hook}); status != http.StatusOK {
		t.Fatalf("set webhook: %d %v", status, body)
	}
	return d
}

// killVictim sends SIGKILL (no graceful shutdown) to the process doing the work: the last worker on
// PostgreSQL + Redis, the api in standalone mode. A standalone api is started again at once, since it
// was the whole system; a worker only with restartWorker (otherwise the other workers carry on).
func (d *killDeployment) killVictim(restartWorker bool) {
	d.t.Helper()
	d.killVictimThen(restartWorker, nil)
}

// killVictimThen is killVictim, running afterKill (when not nil) once the victim is dead and before
// anything is started again.
func (d *killDeployment) killVictimThen(restartWorker bool, afterKill func()) {
	d.t.Helper()
	victim := d.api
	if len(d.workers) > 0 {
		victim = d.workers[len(d.workers)-1]
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		d.t.Fatal(err)
	}
	<-victim.done
	victim.done <- nil
	if afterKill != nil {
		afterKill()
	}
	switch {
	case victim == d.api:
		d.api = start(d.t, d.environ, "api")
		waitReady(d.t, d.base, d.api)
	case restartWorker:
		d.workers[len(d.workers)-1] = start(d.t, d.environ, "worker")
	}
}

// call is call on this deployment with its key.
func (d *killDeployment) call(method, path string, body any) (int, map[string]any) {
	return call(d.t, method, d.base+path, d.key, body)
}
