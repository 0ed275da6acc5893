package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdingSink is a receiver that holds its answer to every campaign opening (a body starting with
// "Hi ") until release is closed, and answers everything else at once.
func holdingSink(t *testing.T) (hook *sink, held func() int, release func()) {
	t.Helper()
	gate := make(chan struct{})
	var (
		mu      sync.Mutex
		holding int
		once    sync.Once
	)
	hook = newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		d := hook.deliveries()[n-1]
		var p struct{ Body string }
		if json.Unmarshal(d.Body, &p) == nil && strings.HasPrefix(p.Body, "Hi ") {
			mu.Lock()
			holding++
			mu.Unlock()
			select {
			case <-gate:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	held = func() int {
		mu.Lock()
		defer mu.Unlock()
		return holding
	}
	return hook, held, release
}

// TestStopIsAnsweredWhileOpeningsAreHeld: fifty campaign openings are held by a slow receiver (it
// answers none of them until the test lets it); meanwhile each of the fifty leads sends STOP, and every
// STOP is answered at once: no delivery holds a lock or a pooled connection the STOP needs. After
// the receiver answers, each lead's confirmation arrives after its opening, never before it.
func TestStopIsAnsweredWhileOpeningsAreHeld(t *testing.T) {
	const leads = 50
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true", "RATE_LIMIT_PER_MINUTE=100000")
	// Half of a worker's concurrency takes deliveries (jobs.concurrencies).
	startWorker(t, "WEBHOOK_TIMEOUT=60s", fmt.Sprintf("WORKER_CONCURRENCY=%d", 2*(leads+10)))
	hook, held, release := holdingSink(t)
	key, _ := messagingAccount(t, srv, hook)
	_, listID := liveCampaign(t, srv, key, map[string]any{"sendRatePerMinute": 6000})
	confirmation := do(t, "GET", srv.URL+"/v1/settings/compliance", key, nil).JSON(t)["optOutConfirmation"].(string)

	contacts, phones := make([]string, leads), make([]string, leads)
	for i := range contacts {
		phones[i] = fmt.Sprintf("+1415556%04d", 1000+i)
		contacts[i] = namedContact(t, srv, key, phones[i], fmt.Sprintf("Holder%d", i))
	}
	r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": contacts})
	expect(t, r, http.StatusCreated, "")
	waitFor(t, 60*time.Second, "every opening to be held at the receiver", func() bool { return held() == leads })

	// Each STOP must come back while the receiver still holds every opening: the receiver is released
	// only after all of them have (a STOP that waited for a delivery would wait until WEBHOOK_TIMEOUT).
	took := make([]time.Duration, leads)
	answered := make(chan int, leads)
	for i := range contacts {
		go func() {
			start := time.Now()
			r := chatIncoming(t, srv, key, fmt.Sprintf("held-stop-%d", i), phones[i], "chat", "STOP")
			took[i] = time.Since(start)
			if r.Status != http.StatusOK {
				t.Errorf("STOP %d: %d %s", i, r.Status, r.Body)
			}
			answered <- i
		}()
	}
	deadline := time.After(30 * time.Second)
	for range contacts {
		select {
		case <-answered:
		case <-deadline:
			t.Fatal("a STOP was not answered while its opening was held at the receiver")
		}
	}
	if got := held(); got != leads {
		t.Fatalf("%d openings held, want %d", got, leads)
	}
	for i, c := range contacts {
		if bodies := hookBodies(hook, c); slices.Contains(bodies, confirmation) {
			t.Errorf("lead %d: the confirmation went while the opening was still with the receiver: %q", i, bodies)
		}
	}
	sorted := slices.Clone(took)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("%d STOPs answered while %d openings were held: p50 %s, max %s", leads, leads, sorted[leads/2], sorted[leads-1])

	release()
	waitFor(t, 60*time.Second, "every confirmation", func() bool {
		for _, c := range contacts {
			if !slices.Contains(hookBodies(hook, c), confirmation) {
				return false
			}
		}
		return true
	})
	for i, c := range contacts {
		bodies := hookBodies(hook, c)
		opening := slices.IndexFunc(bodies, func(b string) bool { return strings.HasPrefix(b, "Hi Holder") })
		confirmed := slices.Index(bodies, confirmation)
		if opening < 0 || opening > confirmed {
			t.Errorf("lead %d: the receiver got %q: the opening (handed over before the STOP) must come first", i, bodies)
		}
	}
}
