package testenv

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

// PostgresPair is a PostgreSQL primary and its streaming standby (pg_basebackup -R), each a postgres
// process of the machine's PostgreSQL binaries on a free loopback port, for the read replica's tests
// (models/report, cmd/api). PostgreSQL refuses to run as root, so when the tests run as root the
// servers run as the postgres user. Both stop, and their directory goes, when the test ends.
type PostgresPair struct {
	// PrimaryURL and StandbyURL address the database postgres of each server (trust authentication).
	PrimaryURL, StandbyURL string

	dir              string
	primary, standby *pgServer
}

// pgServer is one running postgres process.
type pgServer struct {
	name string
	cmd  *exec.Cmd
	done chan error
	out  *syncBuffer
	url  string
}

// syncBuffer is a bytes.Buffer that a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// PostgresBin is the directory of the machine's PostgreSQL server binaries (initdb, postgres,
// pg_basebackup), the newest under /usr/lib/postgresql, else the one of initdb on PATH. Without them
// the test is skipped, and fails when CI=true (.ci/run installs PostgreSQL).
func PostgresBin(t testing.TB) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	if initdb, err := exec.LookPath("initdb"); err == nil {
		dirs = append(dirs, filepath.Dir(initdb))
	}
	for _, dir := range dirs {
		complete := true
		for _, name := range []string{"initdb", "postgres", "pg_basebackup"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				complete = false
			}
		}
		if complete {
			return dir
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("the PostgreSQL server binaries (initdb, postgres, pg_basebackup) are required in CI: none under /usr/lib/postgresql/*/bin or on PATH")
	}
	t.Skip("the PostgreSQL server binaries (initdb, postgres, pg_basebackup) are not installed (apt-get install postgresql)")
	return ""
}

// pgVersion is the major version in a /usr/lib/postgresql/<version>/bin path (0 if none).
func pgVersion(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// StartPostgresPair initializes a primary (wal_level=replica), starts it, takes a base backup of it
// with pg_basebackup -R, starts that as a hot standby streaming from the primary, and returns once the
// standby streams. Settings that cost time and memory and matter nothing here are off (fsync,
// autovacuum) or small (shared_buffers). It takes 2-3 s.
func StartPostgresPair(t testing.TB) *PostgresPair {
	t.Helper()
	bin := PostgresBin(t)
	var cred *syscall.Credential
	dir, err := os.MkdirTemp("", "funnelchat-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &PostgresPair{dir: dir}
	// Registered first, so that it runs last: after the servers have stopped.
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs a user to run as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	ports := freeLoopbackPorts(t, 2)
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C.UTF-8"}
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	primaryDir, standbyDir := filepath.Join(dir, "primary"), filepath.Join(dir, "standby")
	run("initdb", "-D", primaryDir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
	p.primary = startPostgres(t, bin, dir, "primary", primaryDir, ports[0], cred)
	run("pg_basebackup", "-h", "127.0.0.1", "-p", ports[0], "-U", "postgres", "-D", standbyDir, "-R", "-X", "stream", "-c", "fast", "--no-sync")
	p.standby = startPostgres(t, bin, dir, "standby", standbyDir, ports[1], cred)
	p.PrimaryURL, p.StandbyURL = p.primary.url, p.standby.url
	p.waitUntil(t, 30*time.Second, "the standby streams from the primary", func() bool {
		var status string
		err := queryRow(p.StandbyURL, "SELECT status FROM pg_stat_wal_receiver", &status)
		return err == nil && status == "streaming"
	})
	return p
}

// startPostgres starts postgres on dataDir, listening on 127.0.0.1:port only (no Unix socket), and
// waits until it answers; it is stopped when the test ends.
func startPostgres(t testing.TB, bin, dir, name, dataDir, port string, cred *syscall.Credential) *pgServer {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", dataDir, "-p", port,
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "wal_level=replica", "-c", "max_wal_senders=5", "-c", "hot_standby=on",
		"-c", "fsync=off", "-c", "shared_buffers=16MB", "-c", "max_connections=60",
		// No autovacuum: an idle primary writes nothing, which the lag tests rely on.
		"-c", "autovacuum=off")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C.UTF-8"}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	s := &pgServer{name: name, cmd: cmd, done: make(chan error, 1), out: &syncBuffer{},
		url: "postgres://postgres@127.0.0.1:" + port + "/postgres?sslmode=disable"}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s postgres: %v", name, err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("%s postgres output:\n%s", name, s.out.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		var one int
		if err := queryRow(s.url, "SELECT 1", &one); err == nil {
			return s
		}
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("%s postgres exited: %v\n%s", name, err, s.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s postgres does not answer after 30 s\n%s", name, s.out.String())
		}
	}
}

// stop shuts the server down (fast: open sessions are ended) and waits for it, killing it after 10 s.
// Stopping again does nothing.
func (s *pgServer) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-s.done:
		s.done <- err
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		s.done <- <-s.done
	}
}

// StopStandby stops the standby (a fast shutdown) and waits until it has exited.
func (p *PostgresPair) StopStandby(t testing.TB) {
	t.Helper()
	p.standby.stop()
}

// ExecStandby runs query on the standby (pg_wal_replay_pause(), pg_wal_replay_resume()).
func (p *PostgresPair) ExecStandby(t testing.TB, query string) {
	t.Helper()
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(p.StandbyURL)))
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, query); err != nil {
		t.Fatalf("standby: %s: %v", query, err)
	}
}

// WaitReplayed waits until the standby has replayed everything the primary had written when it was
// called.
func (p *PostgresPair) WaitReplayed(t testing.TB) {
	t.Helper()
	p.waitForStandby(t, "pg_last_wal_replay_lsn", "replayed")
}

// WaitReceived waits until the standby has received (not necessarily replayed) everything the primary
// had written when it was called.
func (p *PostgresPair) WaitReceived(t testing.TB) {
	t.Helper()
	p.waitForStandby(t, "pg_last_wal_receive_lsn", "received")
}

func (p *PostgresPair) waitForStandby(t testing.TB, position, what string) {
	t.Helper()
	var lsn string
	if err := queryRow(p.PrimaryURL, "SELECT pg_current_wal_lsn()::text", &lsn); err != nil {
		t.Fatalf("primary's WAL position: %v", err)
	}
	p.waitUntil(t, 30*time.Second, "the standby has "+what+" the primary's WAL up to "+lsn, func() bool {
		var done bool
		err := queryRow(p.StandbyURL, "SELECT COALESCE("+position+"() >= '"+lsn+"'::pg_lsn, false)", &done)
		return err == nil && done
	})
}

// ReplayPaused reports whether the standby's replay is paused.
func (p *PostgresPair) ReplayPaused(t testing.TB) bool {
	t.Helper()
	var paused bool
	if err := queryRow(p.StandbyURL, "SELECT pg_is_wal_replay_paused()", &paused); err != nil {
		t.Fatal(err)
	}
	return paused
}

// StandbyRow reads one row of query on the standby into dest.
func (p *PostgresPair) StandbyRow(t testing.TB, query string, dest ...any) {
	t.Helper()
	if err := queryRow(p.StandbyURL, query, dest...); err != nil {
		t.Fatalf("standby: %s: %v", query, err)
	}
}

func (p *PostgresPair) waitUntil(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not after %s: %s\nprimary:\n%s\nstandby:\n%s", timeout, what, p.primary.out.String(), p.standby.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// queryRow reads one row on a connection of its own (closed after).
func queryRow(url, query string, dest ...any) error {
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(url), pgdriver.WithDialTimeout(2*time.Second)))
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return db.QueryRowContext(ctx, query).Scan(dest...)
}

// freeLoopbackPorts is FreePorts: n distinct free loopback ports.
func freeLoopbackPorts(t testing.TB, n int) []string { return FreePorts(t, n) }
