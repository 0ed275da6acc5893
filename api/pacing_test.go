package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// runPacedCampaign adds n contacts in one batch to a live campaign at perMinute with the given number
// of workers running, waits for every opening, and returns the stored openings' times, oldest first.
func runPacedCampaign(t testing.TB, n, perMinute, workers int) []time.Time {
	_, times := runPacedCampaignSlots(t, n, perMinute, workers)
	return times
}

// runPacedCampaignSlots is runPacedCampaign, also returning the campaign's id.
func runPacedCampaignSlots(t testing.TB, n, perMinute, workers int) (string, []time.Time) {
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
	return campaignID, times
}

// TestPacingWithTwoWorkers: 15 contacts in one batch, two workers, 120/min: each contact gets exactly one
// opening, the first three at once, and the rest on slots never closer together than the rate allows.
// The rule is about the slots the sends reserve in Redis (the pacer's record,
// pace:{<account>:<channel>}:slot:<send id>),
// not about when a loaded machine got round to writing each opening; what the openings' times must
// show is that none was written before its slot.
func TestPacingWithTwoWorkers(t *testing.T) {
	campaignID, times := runPacedCampaignSlots(t, 15, 120, 2)
	type sent struct {
		ID        string    `bun:"id"`
		AccountID string    `bun:"account_id"`
		Channel   string    `bun:"channel"`
		CreatedAt time.Time `bun:"created_at"`
	}
	var sends []sent
	err := env.Store.DB().NewSelect().TableExpr("campaign_sends AS s").Join("JOIN messages AS m ON m.id = s.message_id").
		Join("JOIN campaigns AS c ON c.id = s.campaign_id").
		ColumnExpr("s.id, c.account_id, c.channel, m.created_at").Where("s.campaign_id = ?", campaignID).Scan(t.Context(), &sends)
	if err != nil || len(sends) != len(times) {
		t.Fatalf("%d sends with openings (%v), want %d", len(sends), err, len(times))
	}
	slots := make([]int64, len(sends))
	for i, s := range sends {
		slot, err := env.Redis.Get(t.Context(), "pace:{"+s.AccountID+":"+s.Channel+"}:slot:"+s.ID).Int64()
		if err != nil {
			t.Fatalf("slot of send %s: %v", s.ID, err)
		}
		slots[i] = slot
		// Redis's clock and this process's are the machine's; allow for the millisecond truncation.
		if written := s.CreatedAt.UnixMilli(); written < slot-5 {
			t.Errorf("send %s written %d ms before its slot", s.ID, slot-written)
		}
	}
	slices.Sort(slots)
	if span := slots[2] - slots[0]; span > 900 {
		t.Fatalf("the first three slots span %d ms; they should go at once", span)
	}
	for i := 3; i < len(slots); i++ {
		if gap := slots[i] - slots[i-1]; gap < 500 {
			t.Fatalf("slot %d is %d ms after the previous one: a burst above 120/min", i+1, gap)
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
