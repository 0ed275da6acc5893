package main

import (
	"context"
	"sync"
	"time"
)

// job is one request to make: an original message (index i) or a repeat of an accepted one.
type job struct {
	Index     int
	Duplicate bool
	// Scheduled is when an open loop meant to start the request; zero in a closed loop.
	Scheduled time.Time
}

// schedule hands out the jobs of a run: the n originals in order, and for the originals chosen to be
// repeated, one duplicate each as soon as the original was accepted (a duplicate only makes sense for
// a messageSid the api has accepted). Duplicates go before the next original.
type schedule struct {
	n      int
	repeat []bool // repeat[i]: original i is to be sent again once accepted

	mu          sync.Mutex
	cond        *sync.Cond
	next        int   // the next original to hand out
	ready       []int // accepted originals whose duplicate is due
	outstanding int   // originals handed out, to be repeated, not yet done
	stopped     bool
}

// newSchedule spreads round(fraction*n) duplicates evenly over the n originals.
func newSchedule(n int, fraction float64) *schedule {
	s := &schedule{n: n, repeat: make([]bool, n)}
	s.cond = sync.NewCond(&s.mu)
	dups := int(fraction*float64(n) + 0.5)
	dups = max(0, min(dups, n))
	for i := 0; i < n; i++ {
		// Original i is repeated when the count floor((i+1)*dups/n) steps up at i: exactly dups of them.
		s.repeat[i] = (i+1)*dups/n > i*dups/n
	}
	return s
}

// Duplicates is how many originals are chosen to be repeated.
func (s *schedule) Duplicates() int {
	count := 0
	for _, r := range s.repeat {
		if r {
			count++
		}
	}
	return count
}

// take returns the next job, waiting while only duplicates of originals still in flight may follow;
// false when there is none left (or Stop was called).
func (s *schedule) take() (job, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		switch {
		case s.stopped:
			return job{}, false
		case len(s.ready) > 0:
			i := s.ready[0]
			s.ready = s.ready[1:]
			return job{Index: i, Duplicate: true}, true
		case s.next < s.n:
			i := s.next
			s.next++
			if s.repeat[i] {
				s.outstanding++
			}
			return job{Index: i}, true
		case s.outstanding == 0:
			return job{}, false
		}
		s.cond.Wait()
	}
}

// done reports the outcome of an original; an accepted one chosen for repetition makes its duplicate due.
func (s *schedule) done(j job, accepted bool) {
	if j.Duplicate || !s.repeat[j.Index] {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outstanding--
	if accepted {
		s.ready = append(s.ready, j.Index)
	}
	s.cond.Broadcast()
}

// Stop makes take return false from now on.
func (s *schedule) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.cond.Broadcast()
}

// runClosedLoop runs workers goroutines, each taking the next job as soon as its previous request
// finished, until the schedule is exhausted or ctx ends. do returns whether an original was accepted.
func runClosedLoop(ctx context.Context, s *schedule, workers int, do func(job) bool) {
	stop := context.AfterFunc(ctx, s.Stop)
	defer stop()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, ok := s.take()
				if !ok {
					return
				}
				s.done(j, do(j))
			}
		}()
	}
	wg.Wait()
}

// runOpenLoop starts job k at start + k/rate, each in its own goroutine, whatever the answers so far,
// with at most maxInFlight requests at once: when that many are in flight, the next start waits (it
// keeps its scheduled time, so the wait counts in its latency). It returns when every request is done.
func runOpenLoop(ctx context.Context, s *schedule, rate float64, maxInFlight int, do func(job) bool) {
	stop := context.AfterFunc(ctx, s.Stop)
	defer stop()
	interval := time.Duration(float64(time.Second) / rate)
	slots := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	start := time.Now()
	for k := 0; ; k++ {
		j, ok := s.take()
		if !ok {
			break
		}
		j.Scheduled = start.Add(time.Duration(k) * interval)
		if wait := time.Until(j.Scheduled); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s.done(j, do(j))
		}()
	}
	wg.Wait()
}
