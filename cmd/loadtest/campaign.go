package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"sort"
	"sync"
	"time"
)

// maxCampaignContacts is the most contacts one batch add takes (models.MaxBatchContacts).
const maxCampaignContacts = 1000

// burstOpenings is how many openings the pacing sends at once before spacing them (README, Campaigns).
const burstOpenings = 3

// campaignConfig is a run of the campaign mode.
type campaignConfig struct {
	API       *client
	RunID     string
	Contacts  int // 1..maxCampaignContacts
	PerMinute int // the campaign's sendRatePerMinute
	// Timeout bounds the wait for the openings after the batch add; 0 means Contacts/PerMinute minutes
	// plus a minute.
	Timeout  time.Duration
	Settle   time.Duration
	SinkAddr string
	SinkURL  string
	Progress io.Writer
}

// campaignReport is the JSON the campaign mode prints.
type campaignReport struct {
	Mode                string `json:"mode"`
	RunID               string `json:"runId"`
	Contacts            int    `json:"contacts"`
	ConfiguredPerMinute int    `json:"configuredPerMinute"`
	ListID              string `json:"listId"`
	CampaignID          string `json:"campaignId"`
	// Added is the contacts the batch add reported as newly added to the list.
	Added int `json:"added"`
	// Openings is the contacts that got at least one validly signed opening; LostOpenings those that got
	// none by the end of the wait.
	Openings     int `json:"openings"`
	LostOpenings int `json:"lostOpenings"`
	// DuplicatedOpenings is deliveries beyond the first of each webhook-id plus distinct webhook-ids
	// beyond the first for one contact.
	DuplicatedOpenings int `json:"duplicatedOpenings"`
	BadSignatures      int `json:"badSignatures"`
	Deliveries         int `json:"deliveries"`
	ForeignDeliveries  int `json:"foreignDeliveries"`
	// The following use t1 <= t2 <= ... <= tn, the arrival times at the sink of each contact's first
	// opening, n = Openings, and t0 the start of the batch add request.
	//
	// FirstOpeningAfterAddMs is t1 - t0; FirstThreeSpreadMs is t3 - t1 (the first three go at once).
	FirstOpeningAfterAddMs float64 `json:"firstOpeningAfterAddMs"`
	FirstThreeSpreadMs     float64 `json:"firstThreeSpreadMs"`
	// MeasuredPerMinute is (n-3) / (tn - t3) * 60: after the burst of three, each of the other n-3
	// openings is due one interval after the previous one, so tn - t3 spans n-3 intervals. (This is
	// the formula of the api's BenchmarkCampaignPacing.)
	MeasuredPerMinute float64 `json:"measuredPerMinute"`
	// FittedPerMinute is 60 / the least-squares slope (seconds per opening) of tk against k for
	// k = 3..n: the same rate, less sensitive to the jitter of the two end points.
	FittedPerMinute float64 `json:"fittedPerMinute"`
	// ExpectedGapMs is 60000 / configuredPerMinute; MinGapMs and MaxGapMs are the smallest and largest
	// t(k+1) - tk for k = 3..n-1.
	ExpectedGapMs float64 `json:"expectedGapMs"`
	MinGapMs      float64 `json:"minGapMs"`
	MaxGapMs      float64 `json:"maxGapMs"`
	// DurationSeconds is tn - t0; WaitSeconds is from t0 to the end of the wait (settling included).
	DurationSeconds float64 `json:"durationSeconds"`
	WaitSeconds     float64 `json:"waitSeconds"`
	*memoryReport
}

// campaignPhone is the phone number of contact i (< 10000) of a run: +1 415 BBB IIII with a block
// BBB (200-999) derived from the run id, so that runs on one account rarely share numbers.
func campaignPhone(runID string, i int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(runID))
	return fmt.Sprintf("+1415%03d%04d", 200+h.Sum32()%800, i)
}

// runCampaign creates cfg.Contacts contacts, a list and a live campaign on it, adds every contact in
// one batch and measures the opening messages arriving at the sink.
func runCampaign(ctx context.Context, cfg campaignConfig) (*campaignReport, error) {
	if cfg.Contacts < 1 || cfg.Contacts > maxCampaignContacts {
		return nil, fmt.Errorf("contacts must be from 1 to %d (one batch add)", maxCampaignContacts)
	}
	if cfg.PerMinute < 1 {
		return nil, errors.New("per-minute must be at least 1")
	}
	snk, err := openSink(ctx, cfg.API, cfg.SinkAddr, cfg.SinkURL, cfg.Contacts+1024, cfg.Progress)
	if err != nil {
		return nil, err
	}
	defer snk.Close()

	var list struct {
		ID string `json:"id"`
	}
	if _, err := cfg.API.call(ctx, http.MethodPost, "/v1/lists", map[string]string{"name": "loadtest " + cfg.RunID}, &list, http.StatusCreated, http.StatusOK); err != nil {
		return nil, err
	}
	contactIDs, err := createContacts(ctx, cfg.API, cfg.RunID, cfg.Contacts)
	if err != nil {
		return nil, err
	}
	indexOf := make(map[string]int, len(contactIDs))
	for i, id := range contactIDs {
		indexOf[id] = i
	}
	if len(indexOf) != len(contactIDs) {
		return nil, errors.New("the api gave two of the run's phone numbers the same contact")
	}
	var campaign struct {
		ID string `json:"id"`
	}
	_, err = cfg.API.call(ctx, http.MethodPost, "/v1/campaigns", map[string]any{
		"name": "loadtest " + cfg.RunID, "type": "outgoing", "language": "en",
		"openingMessage": "Hi {{firstName}}, thanks for signing up!", "listId": list.ID,
		// A channel label of its own: pacing is per account and channel, so earlier runs on the same
		// account do not hold this run's slots.
		"channel": "custom:loadtest-" + cfg.RunID, "status": "live", "triggerOnListAdd": true,
		"followUpsEnabled": false, "sendRatePerMinute": cfg.PerMinute,
	}, &campaign, http.StatusCreated)
	if err != nil {
		return nil, err
	}

	tracker := newDeliveryTracker(func(p webhookPayload) (int, bool) {
		i, ok := indexOf[p.ContactID]
		return i, ok
	})
	stopCollecting := tracker.collect(snk, cfg.Progress)
	defer stopCollecting()
	stopProgress := progress(cfg.Progress, func() string {
		return fmt.Sprintf("openings %d/%d", tracker.count(), cfg.Contacts)
	})
	defer stopProgress()

	added := time.Now()
	var batch struct {
		Added    []string `json:"added"`
		NotFound []string `json:"notFound"`
	}
	if _, err := cfg.API.call(ctx, http.MethodPost, "/v1/lists/"+list.ID+"/contacts",
		map[string]any{"contactIds": contactIDs}, &batch, http.StatusCreated, http.StatusOK); err != nil {
		return nil, err
	}
	if len(batch.NotFound) > 0 {
		return nil, fmt.Errorf("the batch add did not find %d of the contacts just created", len(batch.NotFound))
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = time.Duration(float64(cfg.Contacts)/float64(cfg.PerMinute)*float64(time.Minute)) + time.Minute
	}
	owed := make([]int, cfg.Contacts)
	for i := range owed {
		owed[i] = i
	}
	if tracker.waitFor(ctx, owed, added.Add(timeout)) {
		sleepCtx(ctx, cfg.Settle)
	}
	waitEnd := time.Now()
	snk.Close()
	stopCollecting()

	rep := &campaignReport{
		Mode: "campaign", RunID: cfg.RunID, Contacts: cfg.Contacts, ConfiguredPerMinute: cfg.PerMinute,
		ListID: list.ID, CampaignID: campaign.ID, Added: len(batch.Added), DuplicatedOpenings: tracker.duplicated(),
		WaitSeconds: seconds(waitEnd.Sub(added)),
	}
	rep.Deliveries, rep.BadSignatures, rep.ForeignDeliveries = tracker.counts()
	var arrivals []time.Time
	for i := range contactIDs {
		if at, ok := tracker.firstArrival(i); ok {
			arrivals = append(arrivals, at)
		}
	}
	rep.Openings = len(arrivals)
	rep.LostOpenings = cfg.Contacts - rep.Openings
	pacing := measurePacing(added, arrivals, cfg.PerMinute)
	rep.FirstOpeningAfterAddMs, rep.FirstThreeSpreadMs = pacing.firstAfterStart, pacing.firstThreeSpread
	rep.MeasuredPerMinute, rep.FittedPerMinute = pacing.measuredPerMinute, pacing.fittedPerMinute
	rep.ExpectedGapMs, rep.MinGapMs, rep.MaxGapMs = pacing.expectedGap, pacing.minGap, pacing.maxGap
	rep.DurationSeconds = pacing.durationSeconds
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("interrupted: %w", err)
	}
	return rep, nil
}

// pacingNumbers are the campaign report's timing fields (see campaignReport), in ms unless named.
type pacingNumbers struct {
	firstAfterStart, firstThreeSpread  float64
	measuredPerMinute, fittedPerMinute float64
	expectedGap, minGap, maxGap        float64
	durationSeconds                    float64
}

// measurePacing computes the pacing numbers from the arrivals (in any order) of each contact's first
// opening; start is when the batch add was sent. Numbers that need more arrivals than there are stay 0.
func measurePacing(start time.Time, arrivals []time.Time, perMinute int) pacingNumbers {
	p := pacingNumbers{expectedGap: round3(60000 / float64(perMinute))}
	n := len(arrivals)
	if n == 0 {
		return p
	}
	t := append([]time.Time(nil), arrivals...)
	sort.Slice(t, func(i, j int) bool { return t[i].Before(t[j]) })
	p.firstAfterStart = ms(t[0].Sub(start))
	p.durationSeconds = seconds(t[n-1].Sub(start))
	if n < burstOpenings {
		return p
	}
	third := burstOpenings - 1 // t3 at index 2
	p.firstThreeSpread = ms(t[third].Sub(t[0]))
	if n <= burstOpenings {
		return p
	}
	paced := t[third:] // t3..tn: n-3 gaps
	p.measuredPerMinute = round3(float64(len(paced)-1) / t[n-1].Sub(t[third]).Minutes())
	minGap, maxGap := time.Duration(1<<62), time.Duration(0)
	for k := 1; k < len(paced); k++ {
		gap := paced[k].Sub(paced[k-1])
		minGap, maxGap = min(minGap, gap), max(maxGap, gap)
	}
	p.minGap, p.maxGap = ms(minGap), ms(maxGap)
	if slope := fitSlope(paced); slope > 0 {
		p.fittedPerMinute = round3(60 / slope)
	}
	return p
}

// fitSlope is the least-squares slope, in seconds per step, of ts[k] against k.
func fitSlope(ts []time.Time) float64 {
	n := float64(len(ts))
	if n < 2 {
		return 0
	}
	var sumK, sumY, sumKK, sumKY float64
	for k, at := range ts {
		y := at.Sub(ts[0]).Seconds()
		sumK += float64(k)
		sumY += y
		sumKK += float64(k * k)
		sumKY += float64(k) * y
	}
	return (n*sumKY - sumK*sumY) / (n*sumKK - sumK*sumK)
}

// createContacts creates n contacts (campaignPhone numbers, first names Lead0...) a few at a time and
// returns their ids in order. An existing contact with the same phone (200) is used as it is.
func createContacts(ctx context.Context, api *client, runID string, n int) ([]string, error) {
	ids := make([]string, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				var contact struct {
					ID string `json:"id"`
				}
				_, errs[i] = api.call(ctx, http.MethodPost, "/v1/contacts",
					map[string]string{"phone": campaignPhone(runID, i), "firstName": fmt.Sprint("Lead", i)},
					&contact, http.StatusCreated, http.StatusOK)
				ids[i] = contact.ID
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("create contact %d: %w", i, err)
		}
	}
	return ids, nil
}
