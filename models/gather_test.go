package models

import (
	"testing"
	"time"
)

// A group commit waits only when busy (its last batch just ended) and only for a batch that is not full
// already; once it has been idle for LingerBusy it waits for nothing again.
func TestLingerWaitsOnlyWhenBusy(t *testing.T) {
	var l Linger
	if l.waits(0, 8) {
		t.Fatal("a group commit that never ran a batch waits")
	}
	busy := false
	for range 100 { // a check that a preempted test made more than LingerBusy late proves nothing
		l.Done()
		if busy = l.waits(0, 8); busy {
			break
		}
	}
	if !busy {
		t.Fatal("a batch right after another does not wait")
	}
	if l.waits(8, 8) {
		t.Fatal("a full batch waits")
	}
	time.Sleep(LingerBusy + time.Millisecond)
	if l.waits(0, 8) {
		t.Fatalf("a group commit idle for %s still waits", LingerBusy)
	}
	l.Done()
	start := time.Now()
	l.Wait(0, 8)
	if waited := time.Since(start); waited < LingerWait {
		t.Fatalf("a busy Wait returned after %s, want at least %s", waited, LingerWait)
	}
}
