package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// runPacedCampaign adds n contacts in one batch to a live campaign at perMinute with the given number
// of workers running, waits for every opening, and returns the stored openings' times, oldest first.
func runPacedCampaign(t testing.TB, n, perMinute, workers int) []time.Time {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	for i := 0; i < workers; i++ {
		startWorker(t)
	}
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"sendRatePerMinute": perMinute})
	ids := make([]string, n)
	for i := range ids {
		ids[i] = namedContact(t, srv, key, fmt.Sprintf("+1415556%04d", i), fmt.Sprint("Lead", i))
	}
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids}), http.StatusCreated, "")
	expected := time.Duration(n-3) * time.Minute / time.Duration(perMinute)
	waitFor(t, expected+30*time.Second, fmt.Sprint(n, " openings"), func() bool { return len(campaignMessages(t, campaignID)) == n })
	waitFor(t, 20*time.Second, "every opening at the sink", func() bool { return len(hook.deliveries()) == n })
	msgs := campaignMessages(t, campaignID)
	seen := map[string]bool{}
	var times []time.Time
	for _, m := range msgs {
		if seen[m.ContactID] {
			t.Fatalf("contact %s got two openings", m.ContactID)
		}
		seen[m.ContactID] = true
		times = append(times, m.CreatedAt)
	}
	return times
}

// TestPacingWithTwoWorkers: 15 contacts in one batch, two workers, 60/min: each contact gets exactly one
// opening, the first three at once, and the rest never closer together than the rate allows.
func TestPacingWithTwoWorkers(t *testing.T) {
	// Fifteen sends: twelve paced gaps, each contended by both workers, in about twelve seconds.
	times := runPacedCampaign(t, 15, 60, 2)
	if span := times[2].Sub(times[0]); span > 900*time.Millisecond {
		t.Fatalf("the first three took %s; they should go at once", span)
	}
	for i := 3; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < 950*time.Millisecond {
			t.Fatalf("opening %d came %s after the previous one: a burst above 60/min", i+1, gap)
		}
	}
}

// BenchmarkCampaignPacing reports how close the measured send rate comes to the configured one, with
// one and with two workers: go test -run XXX -bench CampaignPacing -benchtime 1x ./api
func BenchmarkCampaignPacing(b *testing.B) {
	const contacts, perMinute = 33, 120
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprint(workers, "-workers"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				times := runPacedCampaign(b, contacts, perMinute, workers)
				paced := times[len(times)-1].Sub(times[2])
				b.ReportMetric(float64(len(times)-3)/paced.Minutes(), "sends/min")
				b.ReportMetric(perMinute, "configured/min")
			}
		})
	}
}
