package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// CPU time by part of the deployment, so that a run says where the machine's time went: the api, the
// worker, PostgreSQL (its postmaster and every backend it forked), Redis and the load tool itself.
// docs/performance.md compares these per message with the floor's. They come from /proc/<pid>/stat
// (user + system time), read when the load starts and when the run ends; a process's threads are in
// its own figures.

// clockTicks is the unit of /proc/<pid>/stat's times: USER_HZ, 100 on every Linux the service runs on.
const clockTicks = 100

// cpuTicks is a process's CPU time from its /proc stat line, in clock ticks: its own (utime + stime)
// and its reaped children's (cutime + cstime).
type cpuTicks struct {
	own, children int64
	ppid          int
}

// parseStat reads ppid, utime, stime, cutime and cstime from a /proc/<pid>/stat line. The command name
// (field 2) is in parentheses and may hold spaces and parentheses itself, so the fields are counted
// from the last ")".
func parseStat(b []byte) (cpuTicks, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return cpuTicks{}, fmt.Errorf("no command name in %q", b)
	}
	fields := bytes.Fields(b[end+1:])
	// fields[0] is the state (field 3): ppid is field 4, utime..cstime fields 14..17.
	if len(fields) < 15 {
		return cpuTicks{}, fmt.Errorf("short stat line %q", b)
	}
	var v [5]int64
	for i, f := range []int{1, 11, 12, 13, 14} {
		n, err := strconv.ParseInt(string(fields[f]), 10, 64)
		if err != nil {
			return cpuTicks{}, fmt.Errorf("stat field %d: %w", f+3, err)
		}
		v[i] = n
	}
	return cpuTicks{ppid: int(v[0]), own: v[1] + v[2], children: v[3] + v[4]}, nil
}

func readStat(pid int) (cpuTicks, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuTicks{}, err
	}
	return parseStat(b)
}

// processCPU is the CPU time, in ticks, of pid and, with tree, of every process it forked: those
// running (their own and reaped children's time) and those it has reaped (its cutime and cstime).
// A child that exits between two readings moves from the first sum to the second: the difference of two
// readings counts it once.
func processCPU(pid int, tree bool) (int64, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	if !tree {
		return st.own, nil
	}
	total := st.own + st.children
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		child, err := parseStat(b)
		if err != nil || child.ppid != pid {
			continue
		}
		total += child.own + child.children
	}
	return total, nil
}

// cpuRole is one part of the deployment: its processes, and whether each one's children count too.
type cpuRole struct {
	name string
	pids []int
	tree bool
}

// cpuMeter reads the roles' CPU time at the start and at the end of a run.
type cpuMeter struct {
	roles []cpuRole
	start map[string]int64
	errs  map[string]string
}

// startCPUMeter reads the roles' CPU now; roles without processes are left out, and the load tool
// itself is always in.
func startCPUMeter(roles ...cpuRole) *cpuMeter {
	m := &cpuMeter{start: map[string]int64{}, errs: map[string]string{}}
	for _, r := range append(roles, cpuRole{name: "loadtest", pids: []int{os.Getpid()}}) {
		if len(r.pids) > 0 {
			m.roles = append(m.roles, r)
		}
	}
	for _, r := range m.roles {
		m.start[r.name] = m.read(r)
	}
	return m
}

func (m *cpuMeter) read(r cpuRole) int64 {
	var sum int64
	for _, pid := range r.pids {
		t, err := processCPU(pid, r.tree)
		if err != nil {
			m.errs[r.name] = err.Error()
			continue
		}
		sum += t
	}
	return sum
}

// cpuReport is what the tool reports about the CPU of the processes given by --api-pid, --worker-pid,
// --postgres-pid and --redis-pid, and of itself, from the start of the load to the end of the run
// (the wait for replies included).
type cpuReport struct {
	// CPUSeconds is each part's CPU time (user + system, of every thread).
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// CPUMsPerMessage is CPUSeconds per accepted message, in ms.
	CPUMsPerMessage map[string]float64 `json:"cpuMsPerMessage"`
	// CPUErrors names a part whose processes could not all be read (gone, or not Linux).
	CPUErrors map[string]string `json:"cpuErrors,omitempty"`
}

// Stop reads the roles again and reports the difference, per message over messages.
func (m *cpuMeter) Stop(messages int) *cpuReport {
	rep := &cpuReport{CPUSeconds: map[string]float64{}, CPUMsPerMessage: map[string]float64{}}
	for _, r := range m.roles {
		secs := float64(m.read(r)-m.start[r.name]) / clockTicks
		rep.CPUSeconds[r.name] = round3(secs)
		if messages > 0 {
			rep.CPUMsPerMessage[r.name] = round3(secs * 1000 / float64(messages))
		}
	}
	if len(m.errs) > 0 {
		rep.CPUErrors = m.errs
	}
	return rep
}
