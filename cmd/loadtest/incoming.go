package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// incomingConfig is a run of the incoming mode.
type incomingConfig struct {
	API   *client
	RunID string // makes messageSids and fromIds unique to the run
	N     int    // original messages
	// Concurrency is the number of closed-loop workers (Rate 0).
	Concurrency int
	// Rate, when above 0, is the open loop's offered rate in requests per second (duplicates included),
	// with at most MaxInFlight requests at once.
	Rate        float64
	MaxInFlight int
	Duplicates  float64 // fraction of N sent again, each after its original was accepted
	NoReplies   bool    // expect no replies: no sink, no webhook, no waiting
	Wait        time.Duration
	Settle      time.Duration
	SinkAddr    string
	SinkURL     string
	Progress    io.Writer
}

// incomingReport is the JSON the incoming mode prints. Times are measured on this machine's clock.
type incomingReport struct {
	Mode  string `json:"mode"`
	RunID string `json:"runId"`
	N     int    `json:"n"`
	// Concurrency is the number of closed-loop workers; in an open loop, the cap on requests in flight.
	Concurrency int `json:"concurrency"`
	// OfferedRate is the open loop's requests per second; 0 for a closed loop.
	OfferedRate float64 `json:"offeredRate"`
	// Requests is every request made: originals and duplicates.
	Requests int `json:"requests"`
	// DurationSeconds runs from the first request's start to the last response.
	DurationSeconds float64 `json:"durationSeconds"`
	// AcceptedPerSecond is Accepted / DurationSeconds.
	AcceptedPerSecond float64 `json:"acceptedPerSecond"`
	// APILatencyMs is over every request that got an HTTP response (any status, duplicates included):
	// from the request's start (in an open loop its scheduled start) to the end of reading the answer.
	APILatencyMs latencySummary `json:"apiLatencyMs"`
	// MaxStartLagMs (open loop only) is the longest a request started after its scheduled time,
	// because MaxInFlight requests were in flight.
	MaxStartLagMs float64 `json:"maxStartLagMs,omitempty"`
	// ErrorsByStatus counts requests not answered as expected: by HTTP status for non-200 answers,
	// "transport" for no answer (connection error, timeout), "200-without-messageId", and
	// "200-duplicate-for-original" for an original message answered as a duplicate.
	ErrorsByStatus map[string]int `json:"errorsByStatus"`
	// Accepted is the originals answered 200 with a messageId (and not as a duplicate).
	Accepted int `json:"accepted"`
	// DuplicatesSent is the repeats of an accepted messageSid sent; DuplicatesAnsweredCorrectly those
	// answered 200 with "duplicate":true and the original's messageId.
	DuplicatesSent              int `json:"duplicatesSent"`
	DuplicatesAnsweredCorrectly int `json:"duplicatesAnsweredCorrectly"`
	*replyReport
	*memoryReport
	*cpuReport
}

// replyReport is the part of the incoming report about the bot's replies at the sink.
type replyReport struct {
	// Replies is the accepted messages that got at least one validly signed reply by the end.
	Replies int `json:"replies"`
	// RepliesPerSecond is Replies / (last first-reply arrival - first first-reply arrival);
	// RepliesPerSecondOverRun is Replies / (last first-reply arrival - first request start).
	RepliesPerSecond        float64 `json:"repliesPerSecond"`
	RepliesPerSecondOverRun float64 `json:"repliesPerSecondOverRun"`
	// EndToEnd is, per replied message, its first reply's arrival at the sink minus the start of the
	// original request (its scheduled start in an open loop).
	EndToEnd latencySummary `json:"endToEndLatencyFromRequestStartMs"`
	// FromAccept is the same arrival minus the moment the original's 200 was read.
	FromAccept latencySummary `json:"replyLatencyFromAcceptMs"`
	// LostReplies is the accepted messages without a reply at the end of the wait.
	LostReplies int `json:"lostReplies"`
	// DuplicatedReplies is deliveries beyond the first of each webhook-id, plus distinct webhook-ids
	// beyond the first for the same toId (a second reply to one message).
	DuplicatedReplies int `json:"duplicatedReplies"`
	// BadSignatures is deliveries whose Standard Webhooks signature or timestamp did not verify.
	BadSignatures int `json:"badSignatures"`
	// Deliveries is every request the sink received.
	Deliveries int `json:"deliveries"`
	// RepliesToUnaccepted is messages answered with an error (so not accepted) that got a reply anyway
	// (e.g. stored, then a 503: the sweep answers them).
	RepliesToUnaccepted int `json:"repliesToUnaccepted"`
	// ForeignDeliveries is validly signed deliveries whose toId is not a sender of this run.
	ForeignDeliveries int `json:"foreignDeliveries"`
	// WaitSeconds is from the last response to the end of the wait for replies (settling included).
	WaitSeconds float64 `json:"waitSeconds"`
}

// requestResult is one request's outcome.
type requestResult struct {
	Start     time.Time     // actual start in a closed loop, scheduled start in an open loop
	Lag       time.Duration // actual start - scheduled start (open loop)
	Latency   time.Duration // Start to the end of reading the answer
	Status    int           // 0: no answer
	MessageID string
	Duplicate bool // the answer said "duplicate":true
	Err       error
}

func (r requestResult) end() time.Time { return r.Start.Add(r.Latency) }

// incomingBody is the request body of original message i of the run.
func incomingBody(runID string, i int) []byte {
	body, _ := json.Marshal(map[string]any{"customData": map[string]string{
		"messageSid": fmt.Sprintf("lt-%s-%d", runID, i),
		"fromId":     senderID(runID, i),
		"toId":       "biz",
		"body":       "Hello, I would like to know the price",
		"channel":    "live-chat",
		"firstName":  "Load",
	}})
	return body
}

// senderID is the fromId of message i, and so the toId of its reply.
func senderID(runID string, i int) string { return senderPrefix(runID) + strconv.Itoa(i) }

func senderPrefix(runID string) string { return "lt-" + runID + "-user-" }

// runIncoming posts cfg.N incoming messages (plus duplicates) and, unless cfg.NoReplies, waits for and
// checks the bot's replies at a webhook sink.
func runIncoming(ctx context.Context, cfg incomingConfig) (*incomingReport, error) {
	var (
		snk     *sink
		tracker = newDeliveryTracker(replyKey(cfg.RunID, cfg.N))
	)
	if !cfg.NoReplies {
		var err error
		if snk, err = openSink(ctx, cfg.API, cfg.SinkAddr, cfg.SinkURL, cfg.N+1024, cfg.Progress); err != nil {
			return nil, err
		}
		defer snk.Close()
	}
	stopCollecting := tracker.collect(snk, cfg.Progress)
	defer stopCollecting()

	sched := newSchedule(cfg.N, cfg.Duplicates)
	originals := make([]requestResult, cfg.N)
	duplicates := make([]*requestResult, cfg.N)
	var sent, accepted atomic.Int64
	do := func(j job) bool {
		r := postIncoming(ctx, cfg.API, incomingBody(cfg.RunID, j.Index), j.Scheduled)
		sent.Add(1)
		if j.Duplicate {
			duplicates[j.Index] = &r
			return false
		}
		originals[j.Index] = r
		ok := r.Status == http.StatusOK && r.MessageID != "" && !r.Duplicate
		if ok {
			accepted.Add(1)
		}
		return ok
	}
	stopProgress := progress(cfg.Progress, func() string {
		return fmt.Sprintf("sent %d, accepted %d/%d, replies %d", sent.Load(), accepted.Load(), cfg.N, tracker.count())
	})
	if cfg.Rate > 0 {
		runOpenLoop(ctx, sched, cfg.Rate, cfg.MaxInFlight, do)
	} else {
		runClosedLoop(ctx, sched, cfg.Concurrency, do)
	}
	postEnd := time.Now()
	rep := summarizeRequests(originals, duplicates)
	rep.Mode, rep.RunID, rep.N, rep.OfferedRate = "incoming", cfg.RunID, cfg.N, cfg.Rate
	rep.Concurrency = cfg.Concurrency
	if cfg.Rate > 0 {
		rep.Concurrency = cfg.MaxInFlight
	}

	if !cfg.NoReplies {
		var owed []int
		for i, r := range originals {
			if r.Status == http.StatusOK && r.MessageID != "" && !r.Duplicate {
				owed = append(owed, i)
			}
		}
		if tracker.waitFor(ctx, owed, postEnd.Add(cfg.Wait)) {
			sleepCtx(ctx, cfg.Settle)
		}
		waitEnd := time.Now()
		snk.Close()
		stopCollecting()
		rep.replyReport = replySummary(tracker, originals)
		rep.WaitSeconds = seconds(waitEnd.Sub(postEnd))
	}
	stopProgress()
	if err := ctx.Err(); err != nil {
		return rep, fmt.Errorf("interrupted: %w", err)
	}
	return rep, nil
}

// postIncoming makes one incoming-message request. scheduled, when not zero, is the open loop's
// planned start, from which the latency counts.
func postIncoming(ctx context.Context, api *client, body []byte, scheduled time.Time) requestResult {
	start := time.Now()
	r := requestResult{Start: start}
	if !scheduled.IsZero() {
		r.Start, r.Lag = scheduled, start.Sub(scheduled)
	}
	status, resp, err := api.send(ctx, http.MethodPost, "/v1/incoming_custom_channel_message", body)
	r.Latency = time.Since(r.Start)
	r.Status, r.Err = status, err
	if err != nil {
		r.Status = 0
		return r
	}
	if status == http.StatusOK {
		var answer struct {
			MessageID string `json:"messageId"`
			Duplicate bool   `json:"duplicate"`
		}
		_ = json.Unmarshal(resp, &answer)
		r.MessageID, r.Duplicate = answer.MessageID, answer.Duplicate
	}
	return r
}

// summarizeRequests computes the request-side numbers of the report.
func summarizeRequests(originals []requestResult, duplicates []*requestResult) *incomingReport {
	rep := &incomingReport{ErrorsByStatus: map[string]int{"transport": 0}}
	var latencies []time.Duration
	var first, last time.Time
	var maxLag time.Duration
	count := func(r requestResult) {
		rep.Requests++
		if first.IsZero() || r.Start.Before(first) {
			first = r.Start
		}
		if r.end().After(last) {
			last = r.end()
		}
		maxLag = max(maxLag, r.Lag)
		switch {
		case r.Status == 0:
			rep.ErrorsByStatus["transport"]++
			return
		case r.Status != http.StatusOK:
			rep.ErrorsByStatus[strconv.Itoa(r.Status)]++
		case r.MessageID == "":
			rep.ErrorsByStatus["200-without-messageId"]++
		}
		latencies = append(latencies, r.Latency)
	}
	for i, r := range originals {
		if r.Start.IsZero() {
			continue // never sent (interrupted)
		}
		count(r)
		if r.Status == http.StatusOK && r.MessageID != "" {
			if r.Duplicate {
				rep.ErrorsByStatus["200-duplicate-for-original"]++
			} else {
				rep.Accepted++
			}
		}
		if d := duplicates[i]; d != nil {
			count(*d)
			rep.DuplicatesSent++
			if d.Status == http.StatusOK && d.Duplicate && d.MessageID == r.MessageID {
				rep.DuplicatesAnsweredCorrectly++
			}
		}
	}
	rep.DurationSeconds = seconds(last.Sub(first))
	rep.AcceptedPerSecond = perSecond(rep.Accepted, last.Sub(first))
	rep.APILatencyMs = summarize(latencies)
	rep.MaxStartLagMs = ms(maxLag)
	return rep
}

// replyKey maps a reply to the index of the message it answers, by its toId (the message's fromId).
func replyKey(runID string, n int) func(webhookPayload) (int, bool) {
	prefix := senderPrefix(runID)
	return func(p webhookPayload) (int, bool) {
		rest, ok := strings.CutPrefix(p.ToID, prefix)
		if !ok {
			return 0, false
		}
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= n || strconv.Itoa(i) != rest {
			return 0, false
		}
		return i, true
	}
}

// replySummary computes the reply numbers from the deliveries and the requests' outcomes.
func replySummary(t *deliveryTracker, originals []requestResult) *replyReport {
	rep := &replyReport{DuplicatedReplies: t.duplicated()}
	rep.Deliveries, rep.BadSignatures, rep.ForeignDeliveries = t.counts()
	var e2e, fromAccept []time.Duration
	var firstStart, firstArrival, lastArrival time.Time
	for i, r := range originals {
		if !r.Start.IsZero() && (firstStart.IsZero() || r.Start.Before(firstStart)) {
			firstStart = r.Start
		}
		accepted := r.Status == http.StatusOK && r.MessageID != "" && !r.Duplicate
		arrival, replied := t.firstArrival(i)
		switch {
		case accepted && replied:
			rep.Replies++
			e2e = append(e2e, arrival.Sub(r.Start))
			fromAccept = append(fromAccept, arrival.Sub(r.end()))
			if firstArrival.IsZero() || arrival.Before(firstArrival) {
				firstArrival = arrival
			}
			if arrival.After(lastArrival) {
				lastArrival = arrival
			}
		case accepted:
			rep.LostReplies++
		case replied:
			rep.RepliesToUnaccepted++
		}
	}
	rep.RepliesPerSecond = perSecond(rep.Replies, lastArrival.Sub(firstArrival))
	rep.RepliesPerSecondOverRun = perSecond(rep.Replies, lastArrival.Sub(firstStart))
	rep.EndToEnd = summarize(e2e)
	rep.FromAccept = summarize(fromAccept)
	return rep
}
