package main

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses of its own; fields from the kernel's proc(5) layout.
	line := []byte("4242 (post (gres) x) S 17 4242 4242 0 -1 4194560 100 0 0 0 31 7 5 2 20 0 1 0 12345 1000 200\n")
	got, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := (cpuTicks{ppid: 17, own: 38, children: 7}); got != want {
		t.Fatalf("parseStat = %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "4242 post S 17", "4242 (x) S 17 1 1 0"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q): no error", bad)
		}
	}
}

// The tree's CPU counts a child while it runs (its own line) and once it is reaped (the parent's cutime),
// so a reading never drops when a backend exits between two.
func TestProcessCPUCountsChildrenRunningAndReaped(t *testing.T) {
	self := os.Getpid()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	var child cpuTicks
	for deadline := time.Now().Add(20 * time.Second); child.own < 20; { // 200 ms of the child's CPU
		if time.Now().After(deadline) {
			t.Fatalf("the child used %d ticks in 20 s", child.own)
		}
		time.Sleep(20 * time.Millisecond)
		var err error
		if child, err = readStat(cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	if child.ppid != self {
		t.Fatalf("the child's parent is %d, want %d", child.ppid, self)
	}
	before, err := readStat(self)
	if err != nil {
		t.Fatal(err)
	}
	running, err := processCPU(self, true)
	if err != nil {
		t.Fatal(err)
	}
	if min := before.own + before.children + child.own; running < min {
		t.Fatalf("the tree while the child runs: %d ticks, want at least %d (self %d + the child's %d)", running, min, before.own+before.children, child.own)
	}
	own, err := processCPU(self, false)
	if err != nil {
		t.Fatal(err)
	}
	if own >= running-child.own/2 {
		t.Fatalf("own %d ticks counts the child (tree %d, child %d)", own, running, child.own)
	}

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	reaped, err := processCPU(self, true)
	if err != nil {
		t.Fatal(err)
	}
	if reaped < running {
		t.Fatalf("the tree dropped from %d to %d ticks when the child was reaped", running, reaped)
	}
}
