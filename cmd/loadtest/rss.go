package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssInterval is how often the sampler reads VmRSS.
const rssInterval = 200 * time.Millisecond

// pidsFlag is a repeatable, comma-separated list of process ids.
type pidsFlag []int

func (p *pidsFlag) String() string {
	parts := make([]string, len(*p))
	for i, pid := range *p {
		parts[i] = strconv.Itoa(pid)
	}
	return strings.Join(parts, ",")
}

func (p *pidsFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 0 {
			return fmt.Errorf("%q is not a process id", s)
		}
		*p = append(*p, pid)
	}
	return nil
}

// memoryStatus is what /proc/<pid>/status says about a process's resident memory, in kB.
type memoryStatus struct {
	VmRSS, VmHWM int64
}

// readMemoryStatus reads VmRSS and VmHWM from /proc/<pid>/status.
func readMemoryStatus(pid int) (memoryStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memoryStatus{}, err
	}
	return parseMemoryStatus(b)
}

// parseMemoryStatus reads the VmRSS and VmHWM lines ("VmHWM:	  123456 kB") of a /proc status file.
func parseMemoryStatus(b []byte) (memoryStatus, error) {
	var m memoryStatus
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return m, fmt.Errorf("unexpected %s line %q", name, sc.Text())
		}
		v, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("unexpected %s line %q", name, sc.Text())
		}
		if name == "VmRSS" {
			m.VmRSS = v
		} else {
			m.VmHWM = v
		}
		found++
	}
	if found != 2 {
		return m, fmt.Errorf("no VmRSS and VmHWM lines (a kernel thread, or not Linux)")
	}
	return m, nil
}

// rssByRole is resident memory in MiB (the kernel's kB divided by 1024) by role; Total is api + worker.
type rssByRole struct {
	API    float64 `json:"api"`
	Worker float64 `json:"worker"`
	Total  float64 `json:"total"`
}

// processMemory is one process's numbers, in MiB.
type processMemory struct {
	PID  int    `json:"pid"`
	Role string `json:"role"`
	// VmHWM is the kernel's high-water mark of the process's resident memory, read at the end (or, if the
	// process is gone by then, at the last sample that could read it).
	VmHWM float64 `json:"vmHWM"`
	// MaxVmRSS is the largest VmRSS the sampler saw.
	MaxVmRSS float64 `json:"maxSampledVmRSS"`
	Error    string  `json:"error,omitempty"`
}

// memoryReport is what the tool reports about the processes given by --api-pid and --worker-pid.
type memoryReport struct {
	// PeakRSSMB sums, per role, each process's VmHWM: every process's own peak, which is an upper bound
	// of the role's peak when several processes peaked at different times.
	PeakRSSMB rssByRole `json:"peakRssMB"`
	// SampledPeakRSSMB is, per role, the largest sum of its processes' VmRSS seen in one sample (every
	// 200 ms); Total is the largest api+worker sum in one sample.
	SampledPeakRSSMB rssByRole       `json:"sampledPeakRssMB"`
	Processes        []processMemory `json:"rssProcesses"`
}

// rssSampler reads the memory of some processes every rssInterval until Stop.
type rssSampler struct {
	roles map[int]string // pid -> "api" or "worker"
	stop  chan struct{}
	done  chan struct{}

	mu      sync.Mutex
	last    map[int]memoryStatus // the last status read of each pid
	maxRSS  map[int]int64
	errs    map[int]string
	sampled rssByRole // in kB until report
}

// resetPeakRSS makes the kernel restart pid's VmHWM from its current VmRSS (writing 5 to
// /proc/<pid>/clear_refs, Linux 4.0 and later), so that the peak covers this run only.
func resetPeakRSS(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// startRSSSampler starts sampling apiPIDs and workerPIDs. It returns nil when there are none.
func startRSSSampler(apiPIDs, workerPIDs []int) *rssSampler {
	if len(apiPIDs)+len(workerPIDs) == 0 {
		return nil
	}
	s := &rssSampler{
		roles: map[int]string{}, stop: make(chan struct{}), done: make(chan struct{}),
		last: map[int]memoryStatus{}, maxRSS: map[int]int64{}, errs: map[int]string{},
	}
	for _, pid := range apiPIDs {
		s.roles[pid] = "api"
	}
	for _, pid := range workerPIDs {
		s.roles[pid] = "worker"
	}
	s.sample()
	go s.run()
	return s
}

func (s *rssSampler) run() {
	defer close(s.done)
	t := time.NewTicker(rssInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sample()
		}
	}
}

// sample reads every process once and updates the maxima.
func (s *rssSampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var api, worker int64
	for pid, role := range s.roles {
		m, err := readMemoryStatus(pid)
		if err != nil {
			s.errs[pid] = err.Error()
			continue
		}
		delete(s.errs, pid)
		s.last[pid] = m
		s.maxRSS[pid] = max(s.maxRSS[pid], m.VmRSS)
		if role == "api" {
			api += m.VmRSS
		} else {
			worker += m.VmRSS
		}
	}
	s.sampled.API = max(s.sampled.API, float64(api))
	s.sampled.Worker = max(s.sampled.Worker, float64(worker))
	s.sampled.Total = max(s.sampled.Total, float64(api+worker))
}

// Stop takes a last sample (for the final VmHWM) and returns the report.
func (s *rssSampler) Stop() *memoryReport {
	close(s.stop)
	<-s.done
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	mib := func(kb float64) float64 { return round3(kb / 1024) }
	rep := &memoryReport{SampledPeakRSSMB: rssByRole{
		API: mib(s.sampled.API), Worker: mib(s.sampled.Worker), Total: mib(s.sampled.Total),
	}}
	var api, worker int64
	for pid, role := range s.roles {
		m := s.last[pid]
		if role == "api" {
			api += m.VmHWM
		} else {
			worker += m.VmHWM
		}
		rep.Processes = append(rep.Processes, processMemory{
			PID: pid, Role: role, VmHWM: mib(float64(m.VmHWM)), MaxVmRSS: mib(float64(s.maxRSS[pid])), Error: s.errs[pid],
		})
	}
	sort.Slice(rep.Processes, func(i, j int) bool { return rep.Processes[i].PID < rep.Processes[j].PID })
	rep.PeakRSSMB = rssByRole{API: mib(float64(api)), Worker: mib(float64(worker)), Total: mib(float64(api + worker))}
	return rep
}
