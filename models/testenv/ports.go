package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// FreePorts returns n loopback TCP ports that nothing listens on now, for processes a test starts
// (an api, a worker, redis-server, postgres). A port is free again between this call and the
// process's bind, so three things keep anyone else off it meanwhile:
//
//   - It lies below the kernel's ephemeral range (net.ipv4.ip_local_port_range), from which every
//     listen on port 0 and every outgoing connection takes its port: a test's own server
//     (httptest, a fake provider) can never be given it. Before, one was, answered the readiness
//     check of the api that could not bind, and then the test's requests (a CI run of
//     TestWrongSecretsKeyStopsStartUp).
//   - Within a test binary, a port is handed out once (handedOut).
//   - Between test binaries (go test runs packages at once), a lock file per port, held until the
//     binary exits, keeps a port to the first binary that took it.
//
// Where the ephemeral range starts too low to leave room below it, the port comes from the kernel
// (port 0), as before, with only the second rule.
func FreePorts(t testing.TB, n int) []string {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	lo, hi := portRange()
	ports := make([]string, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 10000 {
			t.Fatalf("no free loopback port after %d tries", tries)
		}
		port := 0
		if hi > lo {
			port = lo + rand.IntN(hi-lo)
			if handedOut.ports[port] || !lockPort(port) {
				continue
			}
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			if port == 0 {
				t.Fatal(err)
			}
			continue // in use
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		ports = append(ports, fmt.Sprint(port))
	}
	return ports
}

// handedOut is every port FreePorts has returned in this test binary, and the lock files it holds.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
	locks []*os.File
}{ports: map[int]bool{}}

// portRange is where FreePorts picks: [lo, hi), below the ephemeral range; lo == hi when there is no
// room.
func portRange() (lo, hi int) {
	lo, hi = 20000, 20000
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	first, err := strconv.Atoi(strings.Fields(string(raw) + " x")[0])
	if err != nil || first <= lo+1000 {
		return lo, hi
	}
	return lo, first
}

// lockPort takes the lock file of port for this binary's lifetime, or reports that another binary
// holds it.
func lockPort(port int) bool {
	dir := filepath.Join(os.TempDir(), "funnelchat-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true // no locks to take: the other two rules still hold
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	handedOut.locks = append(handedOut.locks, f)
	return true
}
