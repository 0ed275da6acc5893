package boot

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Renice sets the scheduling priority (nice value) of every thread of the process to n. On Linux a
// nice value belongs to a thread, and a new thread takes its creator's, so setting it on each thread
// that exists now covers the threads the Go runtime starts later as well. The worker calls it with
// WORKER_NICE (README, "Configuration"): its bursts of bot replies then yield the cores to an api on
// the same machine (docs/performance.md, 2026-11-27).
func Renice(n int) error {
	if n == 0 {
		return nil
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("renice: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that ended since the listing is no error.
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("renice thread %d to %d: %w", tid, n, err)
		}
	}
	return nil
}
