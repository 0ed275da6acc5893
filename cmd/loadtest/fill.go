package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// maxSendRatePerMinute is the highest sendRatePerMinute the API accepts for a campaign (CampaignCreate
// in the OpenAPI document): the fill's campaign sends its openings as fast as the pacing allows.
const maxSendRatePerMinute = 6000

// fillChannel is the custom channel of the fill's conversations; the campaign writes on it too
// ("custom:" + fillChannel), so that its openings go to the senders' own ids.
const fillChannel = "live-chat"

// fillConfig is a run of the fill mode.
type fillConfig struct {
	API   *client
	RunID string // makes messageSids, fromIds and emails unique to the run
	// Conversations is the number of senders, each a new contact with one conversation of Messages
	// messages: incoming (from the sender) and outgoing (the business's reply) in turn, incoming first.
	Conversations, Messages int
	// CampaignSends is how many of the conversations' contacts (the first ones) are added to a list
	// with a live campaign on it, once every message is posted; 0: no list, no campaign.
	CampaignSends int
	Concurrency   int
	// WaitSends waits, after the fill, until the campaign has written every opening (none queued or
	// pending).
	WaitSends bool
	// NoReplies: the worker is stopped, so nothing is delivered: no sink, no webhook, no waiting.
	NoReplies bool
	// Wait bounds the wait, after the last message, for the sink to receive every outgoing message
	// (with WaitSends, it is added to the time the openings' pacing needs).
	Wait     time.Duration
	SinkAddr string
	SinkURL  string
	Progress io.Writer
}

// fillReport is the JSON the fill mode prints.
type fillReport struct {
	Mode                    string `json:"mode"`
	RunID                   string `json:"runId"`
	Conversations           int    `json:"conversations"`
	MessagesPerConversation int    `json:"messagesPerConversation"`
	Concurrency             int    `json:"concurrency"`
	// MessagesPosted is Incoming + Outgoing: the messages the API stored, by its answers (200 with a
	// messageId, not a duplicate, for an incoming one; 201 with a messageId for an outgoing one).
	MessagesPosted int `json:"messagesPosted"`
	Incoming       int `json:"incoming"`
	Outgoing       int `json:"outgoing"`
	// CampaignSends is the contacts the list's batch adds reported as added: each is a send the
	// campaign owes (CampaignSendsByStatus says what became of them by the end).
	CampaignSends int `json:"campaignSends"`
	// DurationSeconds runs from the first message request's start to the last one's answer; the setup
	// before (bot, webhook, list, campaign) and the list adds and waits after are not in it.
	DurationSeconds float64 `json:"durationSeconds"`
	// MessagesPerSecond is MessagesPosted / DurationSeconds.
	MessagesPerSecond float64 `json:"messagesPerSecond"`
	// APILatencyMs is over every message request answered: each one's last attempt (after any 429 or
	// 503 waited out), from its start to the end of reading the answer.
	APILatencyMs latencySummary `json:"apiLatencyMs"`
	// ErrorsByStatus counts the message requests that did not store their message: by HTTP status of
	// the final answer, "transport" for no answer, "2xx-without-messageId" and "200-duplicate" (a
	// messageSid the account had already: a run id used before). 429 and 503 answers are not errors:
	// they are waited out and retried (Retries).
	ErrorsByStatus map[string]int `json:"errorsByStatus"`
	// Retries counts the 429 and 503 answers, to any request of the run, that were retried after their
	// Retry-After.
	Retries map[string]int `json:"retries"`
	// ListID and CampaignID are the list and campaign of the campaign sends.
	ListID     string `json:"listId,omitempty"`
	CampaignID string `json:"campaignId,omitempty"`
	// CampaignSendsByStatus is the campaign's sends at the end (GET /v1/campaigns/{id}: queued,
	// pending, sent, failed, skipped, suppressed, deferred).
	CampaignSendsByStatus map[string]int `json:"campaignSendsByStatus,omitempty"`
	// Deliveries is the validly signed deliveries the sink received; BadSignatures the others.
	Deliveries    int `json:"deliveries"`
	BadSignatures int `json:"badSignatures"`
	// Undelivered is the outgoing messages posted that the sink had not received by the end of the wait
	// (with the worker stopped, --no-replies, every one: they stay pending).
	Undelivered int `json:"undelivered"`
	// OtherDeliveries is the validly signed deliveries of messages the fill did not post: the
	// campaign's openings, and repeats of a delivery.
	OtherDeliveries int `json:"otherDeliveries"`
	// WaitSeconds is from the last message's answer to the end of the run (list adds and waits).
	WaitSeconds float64 `json:"waitSeconds"`
	*memoryReport
}

// fillStats is what one fill worker counted; the workers' are added up at the end.
type fillStats struct {
	latencies []time.Duration
	errors    map[string]int
	first     time.Time // the first request's start
	last      time.Time // the last answer
}

func (s *fillStats) span(start time.Time) {
	if s.first.IsZero() || start.Before(s.first) {
		s.first = start
	}
	if now := time.Now(); now.After(s.last) {
		s.last = now
	}
}

// runFill fills one account: cfg.Conversations new senders, each writing first and answered in turn
// until its conversation has cfg.Messages messages, every one through the public API; then, with
// cfg.CampaignSends, adds that many of the contacts to a live campaign's list.
func runFill(ctx context.Context, cfg fillConfig) (*fillReport, error) {
	switch {
	case cfg.Conversations < 1 || cfg.Messages < 1 || cfg.Concurrency < 1:
		return nil, errors.New("conversations, messages and concurrency must be at least 1")
	case cfg.CampaignSends < 0 || cfg.CampaignSends > cfg.Conversations:
		return nil, errors.New("campaign sends must be from 0 to the number of conversations")
	case cfg.WaitSends && (cfg.CampaignSends == 0 || cfg.NoReplies):
		return nil, errors.New("waiting for the campaign's sends needs campaign sends and a running worker")
	}
	api := cfg.API
	var retries sync.Map // status -> *atomic.Int64
	retried := func(status int) {
		n, _ := retries.LoadOrStore(strconv.Itoa(status), new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}

	// The account's bot would answer every incoming message with a reply of its own (README, "Custom
	// channels, the bot and the reply webhook"), which would add to the conversations: it is switched
	// off, and stays off (a bot task the worker has not run yet would answer once it was on again).
	if _, err := api.callPatiently(ctx, http.MethodPut, "/v1/settings/bot", map[string]any{"active": false}, nil,
		retried, http.StatusOK); err != nil {
		return nil, err
	}
	fmt.Fprintln(cfg.Progress, "loadtest: the account's bot is switched off (PUT /v1/settings/bot {\"active\":false}) and stays off")

	ledger := newDeliveryLedger()
	var snk *sink
	stopCollecting := func() {}
	if !cfg.NoReplies {
		var err error
		if snk, err = openSink(ctx, api, cfg.SinkAddr, cfg.SinkURL, 4096, cfg.Progress); err != nil {
			return nil, err
		}
		defer snk.Close()
		stopCollecting = ledger.collect(snk, cfg.Progress)
		defer stopCollecting()
	}

	rep := &fillReport{
		Mode: "fill", RunID: cfg.RunID, Conversations: cfg.Conversations, MessagesPerConversation: cfg.Messages,
		Concurrency: cfg.Concurrency, ErrorsByStatus: map[string]int{"transport": 0}, Retries: map[string]int{},
	}
	if cfg.CampaignSends > 0 {
		var err error
		if rep.ListID, rep.CampaignID, err = createFillCampaign(ctx, api, cfg.RunID, retried); err != nil {
			return nil, err
		}
	}

	var (
		incoming, outgoing atomic.Int64
		failed             atomic.Int64
		next               atomic.Int64
		contactIDs         = make([]string, cfg.CampaignSends) // of the first CampaignSends senders
		stats              = make([]*fillStats, cfg.Concurrency)
		wg                 sync.WaitGroup
	)
	total := cfg.Conversations * cfg.Messages
	start := time.Now()
	stopProgress := fillProgress(cfg.Progress, start, total, func() (int, int, int) {
		return int(incoming.Load() + outgoing.Load()), int(failed.Load()), ledger.deliveries()
	})
	for w := range stats {
		st := &fillStats{errors: map[string]int{}}
		stats[w] = st
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= cfg.Conversations {
					return
				}
				contactID, firstMessageID := "", ""
				for j := 0; j < cfg.Messages && ctx.Err() == nil; j++ {
					var ok bool
					var messageID string
					if j%2 == 0 {
						messageID, ok = postFillIncoming(ctx, api, cfg.RunID, i, j, st, retried)
						if ok {
							incoming.Add(1)
							if firstMessageID == "" {
								firstMessageID = messageID
							}
						}
					} else {
						var cid string
						messageID, cid, ok = postFillOutgoing(ctx, api, cfg.RunID, i, j, st, retried)
						if ok {
							outgoing.Add(1)
							contactID = cid
							if !cfg.NoReplies {
								ledger.posted(messageID)
							}
						}
					}
					if !ok && ctx.Err() == nil {
						failed.Add(1)
					}
				}
				if i < cfg.CampaignSends {
					if contactID == "" && firstMessageID != "" {
						// No reply was posted (one message per conversation): the incoming message
						// names the contact.
						var m struct {
							ContactID string `json:"contactId"`
						}
						if _, err := api.callPatiently(ctx, http.MethodGet, "/v1/messages/"+firstMessageID, nil, &m,
							retried, http.StatusOK); err != nil && ctx.Err() == nil {
							fmt.Fprintf(cfg.Progress, "loadtest: contact of sender %d: %v\n", i, err)
						}
						contactID = m.ContactID
					}
					contactIDs[i] = contactID
				}
			}
		}()
	}
	wg.Wait()
	stopProgress()
	fillEnd := time.Now()

	var latencies []time.Duration
	var first, last time.Time
	for _, st := range stats {
		latencies = append(latencies, st.latencies...)
		for k, v := range st.errors {
			rep.ErrorsByStatus[k] += v
		}
		if !st.first.IsZero() && (first.IsZero() || st.first.Before(first)) {
			first = st.first
		}
		if st.last.After(last) {
			last = st.last
		}
	}
	rep.Incoming, rep.Outgoing = int(incoming.Load()), int(outgoing.Load())
	rep.MessagesPosted = rep.Incoming + rep.Outgoing
	rep.DurationSeconds = seconds(last.Sub(first))
	rep.MessagesPerSecond = perSecond(rep.MessagesPosted, last.Sub(first))
	rep.APILatencyMs = summarize(latencies)
	fmt.Fprintf(cfg.Progress, "loadtest: fill: %d messages posted in %.1f s (%.0f/s), %d not stored\n",
		rep.MessagesPosted, rep.DurationSeconds, rep.MessagesPerSecond, failed.Load())

	finish := func(err error) (*fillReport, error) {
		stopCollecting()
		rep.Deliveries, rep.BadSignatures, rep.Undelivered, rep.OtherDeliveries = ledger.counts()
		if cfg.NoReplies {
			rep.Undelivered = rep.Outgoing // no sink: the ledger was not kept
		}
		rep.WaitSeconds = seconds(time.Since(fillEnd))
		retries.Range(func(k, v any) bool {
			rep.Retries[k.(string)] = int(v.(*atomic.Int64).Load())
			return true
		})
		if err == nil {
			if err = ctx.Err(); err != nil {
				err = fmt.Errorf("interrupted: %w", err)
			}
		}
		return rep, err
	}
	if ctx.Err() != nil {
		return finish(nil)
	}

	if cfg.CampaignSends > 0 {
		added, err := addToList(ctx, api, rep.ListID, contactIDs, retried)
		rep.CampaignSends = added
		if err != nil {
			return finish(err)
		}
		fmt.Fprintf(cfg.Progress, "loadtest: %d contacts added to list %s, campaign %s live at %d/min\n",
			added, rep.ListID, rep.CampaignID, maxSendRatePerMinute)
	}
	if !cfg.NoReplies {
		deadline := time.Now().Add(cfg.Wait)
		if cfg.WaitSends {
			pacing := time.Duration(float64(rep.CampaignSends) / maxSendRatePerMinute * float64(time.Minute))
			deadline = deadline.Add(pacing)
		}
		stop := progress(cfg.Progress, func() string {
			return fmt.Sprintf("waiting: %d outgoing messages not delivered yet, %d deliveries", ledger.undelivered(), ledger.deliveries())
		})
		for ctx.Err() == nil && time.Now().Before(deadline) {
			settled := ledger.undelivered() == 0
			if settled && cfg.WaitSends {
				sends, err := campaignSends(ctx, api, rep.CampaignID, retried)
				if err != nil {
					stop()
					return finish(err)
				}
				settled = sends["queued"] == 0 && sends["pending"] == 0
			}
			if settled {
				break
			}
			sleepCtx(ctx, 200*time.Millisecond)
		}
		stop()
	}
	if cfg.CampaignSends > 0 && ctx.Err() == nil {
		sends, err := campaignSends(ctx, api, rep.CampaignID, retried)
		if err != nil {
			return finish(err)
		}
		rep.CampaignSendsByStatus = sends
	}
	return finish(nil)
}

// createFillCampaign creates the run's list and a live campaign on it at the highest pacing, on the
// fill's channel, and returns their ids.
func createFillCampaign(ctx context.Context, api *client, runID string, retried func(int)) (listID, campaignID string, err error) {
	var list, campaign struct {
		ID string `json:"id"`
	}
	if _, err := api.callPatiently(ctx, http.MethodPost, "/v1/lists", map[string]string{"name": "fill " + runID}, &list,
		retried, http.StatusCreated, http.StatusOK); err != nil {
		return "", "", err
	}
	_, err = api.callPatiently(ctx, http.MethodPost, "/v1/campaigns", map[string]any{
		"name": "fill " + runID, "type": "outgoing", "language": "en",
		"openingMessage":    "Hi {{firstName}}, our spring collection is here: 20% off for you this week. Reply to this message to order!",
		"listId":            list.ID,
		"channel":           "custom:" + fillChannel,
		"status":            "live",
		"triggerOnListAdd":  true,
		"followUpsEnabled":  false,
		"sendRatePerMinute": maxSendRatePerMinute,
	}, &campaign, retried, http.StatusCreated)
	if err != nil {
		return "", "", err
	}
	return list.ID, campaign.ID, nil
}

// addToList adds the contacts (an empty id, a sender whose contact is not known, is left out) to the
// list in batches of maxCampaignContacts and returns how many the API reported as added.
func addToList(ctx context.Context, api *client, listID string, contactIDs []string, retried func(int)) (int, error) {
	var ids []string
	for _, id := range contactIDs {
		if id != "" {
			ids = append(ids, id)
		}
	}
	if missing := len(contactIDs) - len(ids); missing > 0 {
		return 0, fmt.Errorf("the contacts of %d of the campaign's senders are not known (their messages failed)", missing)
	}
	added := 0
	for len(ids) > 0 {
		batch := ids[:min(len(ids), maxCampaignContacts)]
		ids = ids[len(batch):]
		var out struct {
			Added    []string `json:"added"`
			NotFound []string `json:"notFound"`
		}
		if _, err := api.callPatiently(ctx, http.MethodPost, "/v1/lists/"+listID+"/contacts",
			map[string]any{"contactIds": batch}, &out, retried, http.StatusCreated, http.StatusOK); err != nil {
			return added, err
		}
		if len(out.NotFound) > 0 {
			return added, fmt.Errorf("the list add did not find %d of the fill's contacts", len(out.NotFound))
		}
		added += len(out.Added)
	}
	return added, nil
}

// campaignSends is the campaign's sends by status (its "sends" in GET /v1/campaigns/{id}).
func campaignSends(ctx context.Context, api *client, campaignID string, retried func(int)) (map[string]int, error) {
	var c struct {
		Sends map[string]int `json:"sends"`
	}
	if _, err := api.callPatiently(ctx, http.MethodGet, "/v1/campaigns/"+campaignID, nil, &c, retried, http.StatusOK); err != nil {
		return nil, err
	}
	return c.Sends, nil
}

// postFillIncoming posts message j (even) of conversation i as the sender's, and returns its id and
// whether the API stored it.
func postFillIncoming(ctx context.Context, api *client, runID string, i, j int, st *fillStats, retried func(int)) (string, bool) {
	p := fillPerson(runID, i)
	body, _ := json.Marshal(map[string]any{"customData": map[string]string{
		"messageSid": fillMessageSid(runID, i, j),
		"fromId":     senderID(runID, i),
		"toId":       "shop",
		"body":       fillIncomingText(runID, i, j),
		"channel":    fillChannel,
		"firstName":  p.First,
		"lastName":   p.Last,
		"email":      p.Email,
	}})
	start := time.Now()
	a := api.sendPatiently(ctx, http.MethodPost, "/v1/incoming_custom_channel_message", body, retried)
	var out struct {
		MessageID string `json:"messageId"`
		Duplicate bool   `json:"duplicate"`
	}
	if a.Err == nil && a.Status == http.StatusOK {
		_ = json.Unmarshal(a.Body, &out)
	}
	return out.MessageID, st.record(ctx, start, a, http.StatusOK, out.MessageID, out.Duplicate)
}

// postFillOutgoing posts message j (odd) of conversation i as the business's reply, and returns its
// id, the contact's id and whether the API stored it.
func postFillOutgoing(ctx context.Context, api *client, runID string, i, j int, st *fillStats, retried func(int)) (string, string, bool) {
	body, _ := json.Marshal(map[string]any{"customData": map[string]string{
		"fromId":        senderID(runID, i),
		"customChannel": fillChannel,
		"body":          fillReplyText(runID, i, j),
	}})
	start := time.Now()
	a := api.sendPatiently(ctx, http.MethodPost, "/v1/send_custom_channel_message", body, retried)
	var out struct {
		MessageID string `json:"messageId"`
		ContactID string `json:"contactId"`
	}
	if a.Err == nil && a.Status == http.StatusCreated {
		_ = json.Unmarshal(a.Body, &out)
	}
	return out.MessageID, out.ContactID, st.record(ctx, start, a, http.StatusCreated, out.MessageID, false)
}

// record counts one message request's answer and says whether it stored the message. A request cut
// short by the end of ctx is not counted.
func (s *fillStats) record(ctx context.Context, start time.Time, a answer, wanted int, messageID string, duplicate bool) bool {
	if a.Err != nil && ctx.Err() != nil {
		return false
	}
	s.span(start)
	switch {
	case a.Err != nil:
		s.errors["transport"]++
		return false
	case a.Status != wanted:
		s.errors[strconv.Itoa(a.Status)]++
	case messageID == "":
		s.errors["2xx-without-messageId"]++
	case duplicate:
		s.errors["200-duplicate"]++
	default:
		s.latencies = append(s.latencies, a.Latency)
		return true
	}
	s.latencies = append(s.latencies, a.Latency)
	return false
}

// fillMessageSid is the messageSid of incoming message j of conversation i.
func fillMessageSid(runID string, i, j int) string {
	return "lt-" + runID + "-" + strconv.Itoa(i) + "-" + strconv.Itoa(j)
}

// fillProgress prints, every two seconds, the messages posted so far and the rates, overall and over
// the last interval, until the returned stop is called.
func fillProgress(w io.Writer, start time.Time, total int, read func() (posted, failed, deliveries int)) (stop func()) {
	var prev int
	prevAt := start
	return progress(w, func() string {
		posted, failed, deliveries := read()
		now := time.Now()
		recent := float64(posted-prev) / now.Sub(prevAt).Seconds()
		prev, prevAt = posted, now
		return fmt.Sprintf("fill: %d/%d messages (%.0f/s, %.0f/s lately), %d not stored, %d deliveries",
			posted, total, float64(posted)/now.Sub(start).Seconds(), recent, failed, deliveries)
	})
}

// deliveryLedger matches the sink's deliveries with the outgoing messages the fill posted, by the
// webhook-id (the message's id). It keeps only the unmatched ones: a delivery can arrive before the
// API's answer to its post has been read.
type deliveryLedger struct {
	mu       sync.Mutex
	awaiting map[string]struct{} // posted, not delivered yet
	early    map[string]struct{} // delivered, not (yet) posted
	valid    int
	bad      int
}

func newDeliveryLedger() *deliveryLedger {
	return &deliveryLedger{awaiting: map[string]struct{}{}, early: map[string]struct{}{}}
}

// posted records an outgoing message the API stored.
func (l *deliveryLedger) posted(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.early[id]; ok {
		delete(l.early, id)
		return
	}
	l.awaiting[id] = struct{}{}
}

// add records one delivery at the sink.
func (l *deliveryLedger) add(d delivery, log io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if d.BadSignature != "" {
		l.bad++
		if l.bad <= 5 {
			fmt.Fprintf(log, "loadtest: delivery %q has a bad signature: %s\n", d.WebhookID, d.BadSignature)
		}
		return
	}
	l.valid++
	if _, ok := l.awaiting[d.WebhookID]; ok {
		delete(l.awaiting, d.WebhookID)
		return
	}
	l.early[d.WebhookID] = struct{}{}
}

func (l *deliveryLedger) undelivered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.awaiting)
}

func (l *deliveryLedger) deliveries() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.valid
}

// counts are the report's delivery numbers: validly signed deliveries, badly signed ones, outgoing
// messages not delivered, and deliveries of messages the fill did not post.
func (l *deliveryLedger) counts() (valid, bad, undelivered, other int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.valid, l.bad, len(l.awaiting), len(l.early)
}

// collect feeds the sink's deliveries to the ledger until the returned stop is called (which drains
// what the sink handed over, and may be called more than once).
func (l *deliveryLedger) collect(s *sink, log io.Writer) (stop func()) {
	return s.feed(func(d delivery) { l.add(d, log) })
}
