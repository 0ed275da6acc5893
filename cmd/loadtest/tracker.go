package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// deliveryTracker accounts for the deliveries at the sink by the message (or contact) each one is
// for: keyOf maps a payload to the index of what the run sent, false for a delivery that is not this
// run's.
type deliveryTracker struct {
	keyOf func(webhookPayload) (int, bool)

	mu            sync.Mutex
	first         map[int]time.Time       // index -> arrival of its first validly signed delivery
	distinctIDs   map[int]map[string]bool // index -> distinct webhook-ids delivered for it
	deliveriesPer map[string]int          // webhook-id -> deliveries
	deliveries    int                     // every delivery
	bad           int                     // deliveries with a bad signature
	foreign       int                     // validly signed deliveries keyOf does not know
}

func newDeliveryTracker(keyOf func(webhookPayload) (int, bool)) *deliveryTracker {
	return &deliveryTracker{
		keyOf: keyOf, first: map[int]time.Time{}, distinctIDs: map[int]map[string]bool{}, deliveriesPer: map[string]int{},
	}
}

// add records one delivery.
func (t *deliveryTracker) add(d delivery, log io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deliveries++
	if d.BadSignature != "" {
		t.bad++
		if t.bad <= 5 {
			fmt.Fprintf(log, "loadtest: delivery %q has a bad signature: %s\n", d.WebhookID, d.BadSignature)
		}
		return
	}
	i, ok := t.keyOf(decodePayload(d.Body))
	if !ok {
		t.foreign++
		return
	}
	t.deliveriesPer[d.WebhookID]++
	if t.distinctIDs[i] == nil {
		t.distinctIDs[i] = map[string]bool{}
	}
	t.distinctIDs[i][d.WebhookID] = true
	if _, seen := t.first[i]; !seen {
		t.first[i] = d.Arrival
	}
}

// count is the number of indexes with a delivery so far.
func (t *deliveryTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.first)
}

// firstArrival returns the arrival of index i's first delivery.
func (t *deliveryTracker) firstArrival(i int) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.first[i]
	return at, ok
}

// duplicated is the deliveries beyond the first of each webhook-id plus the distinct webhook-ids
// beyond the first for one index.
func (t *deliveryTracker) duplicated() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, ids := range t.distinctIDs {
		n += len(ids) - 1
	}
	for _, count := range t.deliveriesPer {
		n += count - 1
	}
	return n
}

// counts returns every delivery, the badly signed ones, and the validly signed ones not of this run.
func (t *deliveryTracker) counts() (deliveries, bad, foreign int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.deliveries, t.bad, t.foreign
}

// collect feeds the sink's deliveries to the tracker until the returned stop is called (which drains
// what the sink handed over, and may be called more than once). A nil sink collects nothing.
func (t *deliveryTracker) collect(s *sink, log io.Writer) (stop func()) {
	return s.feed(func(d delivery) { t.add(d, log) })
}

// feed hands the sink's deliveries to add, one at a time, until the returned stop is called (which
// drains what the sink handed over, and may be called more than once). A nil sink feeds nothing.
func (s *sink) feed(add func(delivery)) (stop func()) {
	if s == nil {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case d := <-s.Deliveries:
				add(d)
			case <-quit:
				for {
					select {
					case d := <-s.Deliveries:
						add(d)
					default:
						return
					}
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// waitFor waits until every index in owed has a delivery (true), or deadline passes or ctx ends (false).
func (t *deliveryTracker) waitFor(ctx context.Context, owed []int, deadline time.Time) bool {
	for {
		missing := 0
		for _, i := range owed {
			if _, ok := t.firstArrival(i); !ok {
				missing++
			}
		}
		if missing == 0 {
			return true
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return false
		}
		sleepCtx(ctx, min(50*time.Millisecond, time.Until(deadline)))
	}
}

// progress prints line() to w every two seconds until the returned stop is called.
func progress(w io.Writer, line func() string) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				fmt.Fprintln(w, "loadtest:", line())
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}
