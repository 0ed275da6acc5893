package boot

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// threadNices reads the nice value of every thread of the process (field 19 of /proc/self/task/*/stat).
func threadNices(t *testing.T) map[string]int {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended
		}
		// The command name is in brackets and may hold spaces: the fields after it count from ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		n, err := strconv.Atoi(f[16])
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[p] = n
	}
	return out
}

// TestReniceEveryThread runs in a child process (a nice value cannot be lowered again without
// privileges): Renice must reach the threads that exist when it runs and the ones started after it, not
// only the calling thread.
func TestReniceEveryThread(t *testing.T) {
	if os.Getenv("RENICE_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestReniceEveryThread$", "-test.v")
		cmd.Env = append(os.Environ(), "RENICE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	// Threads before: goroutines locked to their own OS threads.
	hold := make(chan struct{})
	var started sync.WaitGroup
	lockThreads := func(n int) {
		for range n {
			started.Add(1)
			go func() {
				runtime.LockOSThread()
				started.Done()
				<-hold
			}()
		}
		started.Wait()
	}
	lockThreads(4)
	if len(threadNices(t)) < 5 {
		t.Fatalf("want at least 5 threads before Renice, have %d", len(threadNices(t)))
	}
	if err := Renice(7); err != nil {
		t.Fatal(err)
	}
	lockThreads(4) // threads after
	for p, n := range threadNices(t) {
		if n != 7 {
			t.Errorf("%s: nice %d, want 7", p, n)
		}
	}
	close(hold)
}
