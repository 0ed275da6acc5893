package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOptOutRacingAnOpening sends STOP from a lead at the moment the lead is added to a live
// campaign's list, many times. Each race must end one of two ways: the opening went before the
// opt-out was stored (its send is sent, and the sink got it before the confirmation), or it is
// suppressed (never sent). Never the confirmation and then an opening.
func TestOptOutRacingAnOpening(t *testing.T) {
	rounds := 12
	if env.Postgres() {
		rounds = 40
	}
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true", "RATE_LIMIT_PER_MINUTE=100000")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"sendRatePerMinute": 6000})
	confirmation := do(t, "GET", srv.URL+"/v1/settings/compliance", key, nil).JSON(t)["optOutConfirmation"].(string)

	contacts := make([]string, rounds)
	for i := range contacts {
		phone := fmt.Sprintf("+1415555%04d", 7000+i)
		contacts[i] = namedContact(t, srv, key, phone, fmt.Sprintf("Racer%d", i))
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{contacts[i]}})
			if r.Status != http.StatusCreated {
				t.Errorf("add %d: %d %s", i, r.Status, r.Body)
			}
		}()
		go func() {
			defer wg.Done()
			// Staggered from nothing to past the opening's usual start (the worker polls every 50 ms),
			// so that races end both ways.
			time.Sleep(time.Duration(i%10) * 40 * time.Millisecond)
			r := chatIncoming(t, srv, key, fmt.Sprintf("race-%d", i), phone, "chat", "STOP")
			if r.Status != http.StatusOK {
				t.Errorf("STOP %d: %d %s", i, r.Status, r.Body)
			}
		}()
		wg.Wait()
	}

	settled := func(status string) bool { return status == "sent" || status == "suppressed" }
	var sends map[string]string
	waitFor(t, 60*time.Second, "every race to settle", func() bool {
		sends = map[string]string{}
		r := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends?limit=200", key, nil)
		for _, v := range r.JSON(t)["data"].([]any) {
			s := v.(map[string]any)
			sends[s["contactId"].(string)] = s["status"].(string)
		}
		for _, c := range contacts {
			if !settled(sends[c]) || !slices.Contains(hookBodies(hook, c), confirmation) {
				return false
			}
		}
		return true
	})
	waitDrained(t, mustAccountID(t, key), retryHorizon) // an opening that would go late is still in a task (openings are paced 10 ms apart)
	var went, suppressed int
	for i, c := range contacts {
		bodies := hookBodies(hook, c)
		opening, confirmed := -1, -1
		for j, b := range bodies {
			switch {
			case strings.HasPrefix(b, "Hi Racer"):
				opening = j
			case b == confirmation:
				if confirmed >= 0 {
					t.Errorf("race %d: the confirmation went twice: %q", i, bodies)
				}
				confirmed = j
			}
		}
		switch sends[c] {
		case "sent":
			went++
			if opening < 0 || opening > confirmed {
				t.Errorf("race %d: send sent, but the sink got %q (the opening after the confirmation, or none)", i, bodies)
			}
		case "suppressed":
			suppressed++
			if opening >= 0 {
				t.Errorf("race %d: send suppressed, but the opening went: %q", i, bodies)
			}
		}
	}
	t.Logf("%d races: the opening went first in %d, was suppressed in %d", rounds, went, suppressed)
}
