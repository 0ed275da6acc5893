package models_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
	"funnelchat/models/report"
)

// recorder is an EventPublisher that keeps what it is given, per account.
type recorder struct {
	mu     sync.Mutex
	events map[string][]models.Event
}

func (r *recorder) Publish(accountID string, e models.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.events == nil {
		r.events = map[string][]models.Event{}
	}
	e.Data = append(json.RawMessage(nil), e.Data...)
	r.events[accountID] = append(r.events[accountID], e)
}

// take returns and forgets the account's events.
func (r *recorder) take(accountID string) []models.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	events := r.events[accountID]
	delete(r.events, accountID)
	return events
}

// accounts returns the accounts with events not yet taken.
func (r *recorder) accounts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, events := range r.events {
		if len(events) > 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// eventStore opens a second store on the package's database that publishes to a recorder, so that the
// store the other tests use (env.Store) never has a publisher.
func eventStore(t *testing.T) (*models.Store, *recorder) {
	t.Helper()
	var s *models.Store
	var err error
	if env.Postgres() {
		s, err = models.OpenPostgres(env.DatabaseURL, 4)
	} else {
		s, err = models.OpenSQLite(env.SQLitePath)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	rec := &recorder{}
	s.UseEvents(rec)
	return s, rec
}

// oneEvent takes the account's events, wants exactly one of the type, and returns its data decoded.
func oneEvent(t testing.TB, rec *recorder, accountID, typ, what string) map[string]any {
	t.Helper()
	events := rec.take(accountID)
	if len(events) != 1 || events[0].Type != typ {
		t.Fatalf("%s: events %s, want one %s", what, eventTypes(events), typ)
	}
	var data map[string]any
	if err := json.Unmarshal(events[0].Data, &data); err != nil {
		t.Fatalf("%s: data is not a JSON object: %v\n%s", what, err, events[0].Data)
	}
	return data
}

// noEvents fails the test when the account has events.
func noEvents(t testing.TB, rec *recorder, accountID, what string) {
	t.Helper()
	if events := rec.take(accountID); len(events) != 0 {
		t.Errorf("%s: events %s, want none", what, eventTypes(events))
	}
}

func eventTypes(events []models.Event) string {
	var s []string
	for _, e := range events {
		s = append(s, e.Type+" "+string(e.Data))
	}
	return fmt.Sprint(s)
}

// wantFields fails the test unless data has the fields with the values (JSON numbers as float64, null
// as nil).
func wantFields(t testing.TB, data map[string]any, what string, fields map[string]any) {
	t.Helper()
	for k, v := range fields {
		got, ok := data[k]
		if !ok {
			t.Errorf("%s: no field %q in %v", what, k, data)
			continue
		}
		if got != v {
			t.Errorf("%s: %s = %#v, want %#v", what, k, got, v)
		}
	}
}

func TestEventsMessageCreated(t *testing.T) {
	ctx := context.Background()
	s, rec := eventStore(t)
	acc := newAccount(t)
	id := acc.Account.ID

	in := models.IncomingInput{ExternalID: "ev-created-1", FromID: "eva-1", ToID: "business", Body: "hello"}
	if err := in.Validate(1 << 20); err != nil {
		t.Fatal(err)
	}
	incoming, dup, err := s.IngestIncoming(ctx, id, in)
	if err != nil || dup {
		t.Fatalf("IngestIncoming: %v, duplicate %v", err, dup)
	}
	data := oneEvent(t, rec, id, models.EventMessageCreated, "IngestIncoming")
	wantFields(t, data, "IngestIncoming", map[string]any{
		"id": incoming.ID, "contactId": incoming.ContactID, "direction": "incoming", "status": "received",
		"body": "hello", "messageSid": "ev-created-1", "channel": "custom",
	})
	if _, ok := data["accountId"]; ok {
		t.Errorf("the event shows the account id: %v", data)
	}

	again, dup, err := s.IngestIncoming(ctx, id, in)
	if err != nil || !dup || again.ID != incoming.ID {
		t.Fatalf("IngestIncoming of the same messageSid: %v, duplicate %v, id %s (want %s)", err, dup, again.ID, incoming.ID)
	}
	noEvents(t, rec, id, "a duplicate messageSid")

	human, err := s.HumanReply(ctx, id, incoming.ContactID, "", "a person answers", "")
	if err != nil {
		t.Fatal(err)
	}
	data = oneEvent(t, rec, id, models.EventMessageCreated, "HumanReply")
	wantFields(t, data, "HumanReply", map[string]any{
		"id": human.ID, "contactId": incoming.ContactID, "direction": "outgoing", "status": "pending", "authorType": "human", "body": "a person answers",
	})

	send := models.CustomSendInput{FromID: "eva-2", Channel: "chat", Body: "your order shipped"}
	if err := send.Validate(); err != nil {
		t.Fatal(err)
	}
	sent, contact, err := s.SendCustom(ctx, id, send)
	if err != nil {
		t.Fatal(err)
	}
	data = oneEvent(t, rec, id, models.EventMessageCreated, "SendCustom")
	wantFields(t, data, "SendCustom", map[string]any{
		"id": sent.ID, "contactId": contact.ID, "direction": "outgoing", "status": "pending", "authorType": "api", "attempts": float64(0),
	})

	bot, _, err := s.CreateBotReply(ctx, incoming, nil, "the bot answers", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	data = oneEvent(t, rec, id, models.EventMessageCreated, "CreateBotReply")
	wantFields(t, data, "CreateBotReply", map[string]any{
		"id": bot.ID, "authorType": "bot", "status": "pending", "replyToId": incoming.ID, "body": "the bot answers",
	})
	botAgain, _, err := s.CreateBotReply(ctx, incoming, nil, "a second answer", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if botAgain.ID != bot.ID {
		t.Errorf("second CreateBotReply stored %s, want the first reply %s", botAgain.ID, bot.ID)
	}
	noEvents(t, rec, id, "CreateBotReply for an answered message")

	// A write refused by validation tells nobody.
	if _, err := s.HumanReply(ctx, id, incoming.ContactID, "", "   ", ""); err == nil {
		t.Fatal("HumanReply with an empty body succeeded")
	}
	noEvents(t, rec, id, "a refused HumanReply")

	if others := rec.accounts(); len(others) != 0 {
		t.Errorf("events published for accounts %v, want only %s", others, id)
	}
}

func TestEventsMessageUpdated(t *testing.T) {
	ctx := context.Background()
	s, rec := eventStore(t)
	acc := newAccount(t)
	id := acc.Account.ID
	send := func(body string) *models.Message {
		t.Helper()
		m, _ := sendCustom(t, s, id, "upd-1", body)
		rec.take(id)
		return m
	}
	m := send("first")

	next := time.Now().Add(time.Minute)
	if err := s.RecordAttempt(ctx, m.ID, models.AttemptOutcome{StatusCode: 502, Error: "webhook answered 502", NextAttemptAt: &next}); err != nil {
		t.Fatal(err)
	}
	data := oneEvent(t, rec, id, models.EventMessageUpdated, "a failed attempt")
	wantFields(t, data, "a failed attempt", map[string]any{
		"id": m.ID, "status": "failed", "attempts": float64(1), "error": "webhook answered 502", "sentAt": nil, "contactId": m.ContactID,
	})
	if data["nextAttemptAt"] == nil {
		t.Errorf("a failed attempt with a retry: nextAttemptAt null in %v", data)
	}

	if err := s.RecordAttempt(ctx, m.ID, models.AttemptOutcome{Error: "connection refused"}); err != nil {
		t.Fatal(err)
	}
	data = oneEvent(t, rec, id, models.EventMessageUpdated, "a last failed attempt")
	wantFields(t, data, "a last failed attempt", map[string]any{
		"id": m.ID, "status": "failed", "attempts": float64(2), "error": "connection refused", "nextAttemptAt": nil,
	})

	if err := s.RecordAttempt(ctx, m.ID, models.AttemptOutcome{StatusCode: 200, ProviderID: "prov-77"}); err != nil {
		t.Fatal(err)
	}
	data = oneEvent(t, rec, id, models.EventMessageUpdated, "a successful attempt")
	wantFields(t, data, "a successful attempt", map[string]any{
		"id": m.ID, "status": "sent", "attempts": float64(3), "error": nil, "nextAttemptAt": nil, "providerMessageId": "prov-77",
	})
	if data["sentAt"] == nil {
		t.Errorf("a successful attempt: sentAt null in %v", data)
	}
	// The event carries what is stored.
	stored, err := env.Store.MessageByID(ctx, id, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var decoded models.Message
	if err := json.Unmarshal(mustMarshal(t, data), &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded.Status != stored.Status || decoded.Attempts != stored.Attempts || decoded.SentAt == nil || stored.SentAt == nil || !decoded.SentAt.Equal(*stored.SentAt) {
		t.Errorf("event %+v differs from the stored message %+v", decoded, stored)
	}

	for _, out := range []models.AttemptOutcome{{StatusCode: 200}, {Error: "late failure"}} {
		if err := s.RecordAttempt(ctx, m.ID, out); err != nil {
			t.Fatal(err)
		}
		noEvents(t, rec, id, fmt.Sprintf("RecordAttempt(%+v) of a sent message", out))
	}
	if stored, err := env.Store.MessageByID(ctx, id, m.ID); err != nil || stored.Status != models.StatusSent || stored.Attempts != 3 {
		t.Errorf("a sent message changed: %+v, %v", stored, err)
	}

	t.Run("sent at the first attempt", func(t *testing.T) {
		m := send("second")
		if err := s.RecordAttempt(ctx, m.ID, models.AttemptOutcome{StatusCode: 204}); err != nil {
			t.Fatal(err)
		}
		data := oneEvent(t, rec, id, models.EventMessageUpdated, "a first successful attempt")
		wantFields(t, data, "a first successful attempt", map[string]any{"id": m.ID, "status": "sent", "attempts": float64(1), "error": nil})
	})

	t.Run("Redeliver", func(t *testing.T) {
		m := send("third")
		if err := s.RecordAttempt(ctx, m.ID, models.AttemptOutcome{StatusCode: 500, Error: "webhook answered 500"}); err != nil {
			t.Fatal(err)
		}
		rec.take(id)
		again, err := s.Redeliver(ctx, id, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		data := oneEvent(t, rec, id, models.EventMessageUpdated, "Redeliver")
		wantFields(t, data, "Redeliver", map[string]any{"id": m.ID, "status": "pending", "nextAttemptAt": nil, "attempts": float64(1)})
		if again.Status != models.StatusPending || again.DeliveryRound != 1 {
			t.Errorf("Redeliver = %+v, want pending in round 1", again)
		}
		// A message that has not failed is not redelivered, and nobody is told.
		_, err = s.Redeliver(ctx, id, m.ID)
		wantCode(t, err, models.CodeConflict, "Redeliver of a pending message")
		noEvents(t, rec, id, "a refused Redeliver")
		other := newAccount(t)
		_, err = s.Redeliver(ctx, other.Account.ID, m.ID)
		wantCode(t, err, models.CodeNotFound, "Redeliver of another account's message")
		noEvents(t, rec, other.Account.ID, "Redeliver of another account's message")
	})

	if others := rec.accounts(); len(others) != 0 {
		t.Errorf("events left for accounts %v", others)
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEventsAlerts(t *testing.T) {
	ctx := context.Background()
	s, rec := eventStore(t)
	acc := newAccount(t)
	id := acc.Account.ID

	first := receive(t, s, id, "al-1", "a person please", person{})
	second := receive(t, s, id, "al-2", "what?", person{})
	// Nobody takes hand-offs, so that raising an alert publishes only the alert (an assignment made
	// by it is contact.assigned, which TestEventsAssignment covers).
	if _, err := s.SetAvailable(ctx, id, acc.Account.OwnerUserID, false); err != nil {
		t.Fatal(err)
	}
	noHandoffMessage(t, s, id)
	rec.take(id)

	alert, err := s.Handoff(ctx, first, "asked for a person")
	if err != nil {
		t.Fatal(err)
	}
	data := oneEvent(t, rec, id, models.EventAlertCreated, "Handoff")
	wantFields(t, data, "Handoff", map[string]any{
		"id": alert.ID, "contactId": first.ContactID, "messageId": first.ID, "reason": "asked for a person", "resolvedAt": nil,
	})

	failed, err := s.BotFailed(ctx, second, "the model timed out")
	if err != nil {
		t.Fatal(err)
	}
	data = oneEvent(t, rec, id, models.EventAlertCreated, "BotFailed")
	wantFields(t, data, "BotFailed", map[string]any{"id": failed.ID, "contactId": second.ContactID, "messageId": second.ID, "resolvedAt": nil})

	resolved, err := s.ResolveAlert(ctx, id, alert.ID, "api")
	if err != nil {
		t.Fatal(err)
	}
	data = oneEvent(t, rec, id, models.EventAlertResolved, "ResolveAlert")
	wantFields(t, data, "ResolveAlert", map[string]any{"id": alert.ID, "contactId": first.ContactID})
	if at, _ := data["resolvedAt"].(string); at == "" {
		t.Errorf("ResolveAlert: resolvedAt %v, want the time", data["resolvedAt"])
	} else if parsed, err := time.Parse(time.RFC3339Nano, at); err != nil || !parsed.Equal(*resolved.ResolvedAt) {
		t.Errorf("ResolveAlert: resolvedAt %q, want %v", at, resolved.ResolvedAt)
	}

	if _, err := s.ResolveAlert(ctx, id, alert.ID, "api"); err != nil {
		t.Fatal(err)
	}
	noEvents(t, rec, id, "resolving a resolved alert")

	other := newAccount(t)
	_, err = s.ResolveAlert(ctx, other.Account.ID, failed.ID, "api")
	wantCode(t, err, models.CodeNotFound, "ResolveAlert by another account")
	noEvents(t, rec, id, "ResolveAlert by another account")
	noEvents(t, rec, other.Account.ID, "ResolveAlert by another account")

	if others := rec.accounts(); len(others) != 0 {
		t.Errorf("events left for accounts %v", others)
	}
}

// redisEvent is what a listener of an account's channel receives.
type redisEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// subscribe listens on the account's channel until the test ends.
func subscribe(t *testing.T, accountID string) <-chan *redis.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub := env.Redis.Subscribe(ctx, models.EventChannel(accountID))
	t.Cleanup(func() { _ = sub.Close() })
	// The confirmation: from here on, what is published on the channel reaches sub.
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	return sub.Channel(redis.WithChannelSize(1000))
}

// receiveEvents reads n events from ch, failing the test when they do not come within 10 seconds.
func receiveEvents(t *testing.T, ch <-chan *redis.Message, accountID string, n int) []redisEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	var got []redisEvent
	for len(got) < n {
		select {
		case msg := <-ch:
			if msg.Channel != models.EventChannel(accountID) {
				t.Fatalf("message on channel %q, want %q", msg.Channel, models.EventChannel(accountID))
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal([]byte(msg.Payload), &fields); err != nil || len(fields) != 2 || fields["type"] == nil || fields["data"] == nil {
				t.Fatalf("payload %s: want a JSON object of type and data (%v)", msg.Payload, err)
			}
			var e redisEvent
			if err := json.Unmarshal([]byte(msg.Payload), &e); err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		case <-timeout:
			t.Fatalf("received %d of %d events", len(got), n)
		}
	}
	return got
}

// quiet fails the test when ch receives anything within d.
func quiet(t *testing.T, ch <-chan *redis.Message, d time.Duration) {
	t.Helper()
	select {
	case msg := <-ch:
		t.Errorf("unexpected message %s on %s", msg.Payload, msg.Channel)
	case <-time.After(d):
	}
}

func uniqueAccountID(name string) string {
	return fmt.Sprintf("acc_%s_%d_%d", name, time.Now().UnixNano(), emailSeq.Add(1))
}

func TestRedisEvents(t *testing.T) {
	t.Run("events arrive in order as JSON", func(t *testing.T) {
		acc, other := uniqueAccountID("redis"), uniqueAccountID("other")
		ch := subscribe(t, acc)
		p := models.NewRedisEvents(env.Redis, nil)
		sent := []models.Event{
			{Type: models.EventMessageCreated, Data: json.RawMessage(`{"id":"msg_1","status":"pending"}`)},
			{Type: models.EventMessageUpdated, Data: json.RawMessage(`{"id":"msg_1","status":"sent","attempts":1}`)},
			{Type: models.EventAlertCreated, Data: json.RawMessage(`{"id":"alr_1","resolvedAt":null}`)},
			{Type: models.EventAlertResolved, Data: json.RawMessage(`{"id":"alr_1","resolvedAt":"2026-01-02T03:04:05Z"}`)},
		}
		for _, e := range sent {
			p.Publish(acc, e)
			p.Publish(other, models.Event{Type: "other", Data: json.RawMessage(`{}`)})
		}
		got := receiveEvents(t, ch, acc, len(sent))
		for i, e := range got {
			if e.Type != sent[i].Type || string(e.Data) != string(sent[i].Data) {
				t.Errorf("event %d = %s %s, want %s %s", i, e.Type, e.Data, sent[i].Type, sent[i].Data)
			}
		}
		quiet(t, ch, 200*time.Millisecond) // another account's events are not on this channel
		start := time.Now()
		p.Close()
		if d := time.Since(start); d > time.Second {
			t.Errorf("Close took %v", d)
		}
		if n := p.Dropped(); n != 0 {
			t.Errorf("Dropped = %d, want 0", n)
		}
	})

	t.Run("Close sends what is queued", func(t *testing.T) {
		acc := uniqueAccountID("flush")
		ch := subscribe(t, acc)
		p := models.NewRedisEvents(env.Redis, nil)
		const n = 500
		for i := range n {
			p.Publish(acc, models.Event{Type: models.EventMessageCreated, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		}
		start := time.Now()
		p.Close()
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Close took %v", d)
		}
		got := receiveEvents(t, ch, acc, n)
		for i, e := range got {
			if want := fmt.Sprintf(`{"n":%d}`, i); string(e.Data) != want {
				t.Fatalf("event %d has data %s, want %s", i, e.Data, want)
			}
		}
		if d := p.Dropped(); d != 0 {
			t.Errorf("Dropped = %d, want 0", d)
		}
	})

	t.Run("concurrent publishers keep each one's order", func(t *testing.T) {
		acc := uniqueAccountID("concurrent")
		ch := subscribe(t, acc)
		p := models.NewRedisEvents(env.Redis, nil)
		defer p.Close()
		const writers, each = 8, 40
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					p.Publish(acc, models.Event{Type: models.EventMessageCreated, Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))})
				}
			})
		}
		wg.Wait()
		got := receiveEvents(t, ch, acc, writers*each)
		nextOf := make([]int, writers)
		for _, e := range got {
			var d struct{ W, I int }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d.I != nextOf[d.W] {
				t.Fatalf("writer %d: event %d arrived when %d was next", d.W, d.I, nextOf[d.W])
			}
			nextOf[d.W]++
		}
	})

	t.Run("Redis down: Publish does not block and Close returns", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close() // nothing listens there now
		down := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		defer down.Close()
		p := models.NewRedisEvents(down, nil)
		start := time.Now()
		p.Publish("acc_down", models.Event{Type: models.EventMessageCreated, Data: json.RawMessage(`{}`)})
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("Publish took %v with Redis down", d)
		}
		deadline := time.Now().Add(5 * time.Second)
		for p.Dropped() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if p.Dropped() != 1 {
			t.Errorf("Dropped = %d, want the one event", p.Dropped())
		}
		start = time.Now()
		p.Close()
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Close took %v with Redis down", d)
		}
	})

	t.Run("a full queue drops instead of blocking", func(t *testing.T) {
		p := models.NewRedisEvents(env.Redis, nil)
		p.Close() // nothing sends from here on: the queue only fills
		const n = 20000
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range n {
				p.Publish("acc_full", models.Event{Type: models.EventMessageCreated, Data: json.RawMessage(`{}`)})
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Publish blocked on a full queue")
		}
		if d := p.Dropped(); d <= 0 || d >= n {
			t.Errorf("Dropped = %d of %d events published after Close, want the ones beyond the queue", d, n)
		}
	})
}

// The recorder sees one event per change even when the changes are made concurrently.
func TestEventsConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	s, rec := eventStore(t)
	acc := newAccount(t)
	id := acc.Account.ID
	const n = 10
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			in := models.IncomingInput{ExternalID: fmt.Sprintf("conc-%d", i), FromID: fmt.Sprintf("conc-from-%d", i), ToID: "business", Body: "hi"}
			if err := in.Validate(1 << 20); err != nil {
				t.Error(err)
				return
			}
			m, _, err := s.IngestIncoming(ctx, id, in)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = m.ID
		})
	}
	wg.Wait()
	var got []string
	for _, e := range rec.take(id) {
		if e.Type != models.EventMessageCreated {
			t.Errorf("event %s", e.Type)
		}
		var m models.Message
		if err := json.Unmarshal(e.Data, &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m.ID)
	}
	slices.Sort(got)
	slices.Sort(ids)
	if !slices.Equal(got, ids) {
		t.Errorf("events for %v, want one for each of %v", got, ids)
	}
}

func TestEventsCampaignMessages(t *testing.T) {
	ctx := context.Background()
	s, rec := eventStore(t)
	acc := newAccount(t)
	id := acc.Account.ID
	leads, err := s.CreateList(ctx, id, "leads")
	if err != nil {
		t.Fatal(err)
	}
	campaign, err := s.CreateCampaign(ctx, id, models.CampaignInput{
		Name: ptr("spring"), ListID: &leads.ID, OpeningMessage: ptr("Hi there"), Channel: ptr("custom:chat"),
		Status: ptr(models.CampaignLive), FollowUpsEnabled: ptr(true), FollowUpDelaysHours: &[]float64{1, 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	contact, _, err := s.CreateOrGetContact(ctx, id, models.ContactInput{FirstName: "Lead", Phone: "+14155550188"})
	if err != nil {
		t.Fatal(err)
	}
	added, err := s.AddToList(ctx, id, leads.ID, []string{contact.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(added.Sends) != 1 {
		t.Fatalf("AddToList owes %d openings, want 1", len(added.Sends))
	}
	noEvents(t, rec, id, "adding to a list")
	send, err := s.CampaignSend(ctx, added.Sends[0].SendID)
	if err != nil {
		t.Fatal(err)
	}
	out := models.OutgoingMessage{Campaign: campaign, Contact: contact, Body: "Hi Lead", ToID: *contact.Phone}

	opening, err := s.WriteOpening(ctx, send, out)
	if err != nil || opening == nil {
		t.Fatalf("WriteOpening: %v, %v", opening, err)
	}
	data := oneEvent(t, rec, id, models.EventMessageCreated, "WriteOpening")
	wantFields(t, data, "WriteOpening", map[string]any{
		"id": opening.ID, "contactId": contact.ID, "authorType": "campaign", "status": "pending", "campaignId": campaign.ID, "body": "Hi Lead",
	})
	if again, err := s.WriteOpening(ctx, send, out); err != nil || again != nil {
		t.Fatalf("second WriteOpening: %v, %v; want nothing written", again, err)
	}
	noEvents(t, rec, id, "a second WriteOpening")

	send, err = s.CampaignSend(ctx, send.ID)
	if err != nil {
		t.Fatal(err)
	}
	out.Body = "Still interested?"
	followUp, err := s.WriteFollowUp(ctx, send, 1, out)
	if err != nil || followUp == nil {
		t.Fatalf("WriteFollowUp: %v, %v", followUp, err)
	}
	data = oneEvent(t, rec, id, models.EventMessageCreated, "WriteFollowUp")
	wantFields(t, data, "WriteFollowUp", map[string]any{"id": followUp.ID, "authorType": "campaign", "body": "Still interested?"})
	if again, err := s.WriteFollowUp(ctx, send, 1, out); err != nil || again != nil {
		t.Fatalf("second WriteFollowUp of step 1: %v, %v; want nothing written", again, err)
	}
	noEvents(t, rec, id, "a second WriteFollowUp of one step")

	// The campaign's conversation is listed with the follow-up as its latest message.
	convs := list(t, id, models.ReaderAPI, report.ConversationFilter{})
	if len(convs) != 1 || convs[0].Contact.ID != contact.ID || convs[0].LastMessage.ID != followUp.ID || convs[0].Unread {
		t.Errorf("conversations %+v: want the lead's, read, ending with the follow-up", convs)
	}
}

func TestEventsAssignment(t *testing.T) {
	ctx := context.Background()
	s, rec := eventStore(t)
	acc := newAccount(t)
	id := acc.Account.ID
	m := receive(t, s, id, "as-1", "a person please", person{})
	noHandoffMessage(t, s, id)
	rec.take(id)
	if _, err := s.Handoff(ctx, m, "asked for a person"); err != nil {
		t.Fatal(err)
	}
	events := rec.take(id)
	if len(events) != 2 || events[0].Type != models.EventAlertCreated || events[1].Type != models.EventContactAssigned {
		t.Fatalf("hand-off events %v, want alert.created then contact.assigned", events)
	}
	var assigned map[string]any
	if err := json.Unmarshal(events[1].Data, &assigned); err != nil {
		t.Fatal(err)
	}
	who, _ := assigned["assignee"].(map[string]any)
	if assigned["contactId"] != m.ContactID || who["userId"] != acc.Account.OwnerUserID || who["email"] != acc.User.Email {
		t.Fatalf("contact.assigned %v, want the contact given to the owner %s", assigned, acc.Account.OwnerUserID)
	}
	if _, err := s.Assign(ctx, id, m.ContactID, nil); err != nil {
		t.Fatal(err)
	}
	data := oneEvent(t, rec, id, models.EventContactAssigned, "Assign")
	wantFields(t, data, "Assign", map[string]any{"contactId": m.ContactID, "assignee": nil})
}

// noHandoffMessage turns the account's hand-off message off, so that a hand-off writes no message.
func noHandoffMessage(t testing.TB, s *models.Store, accountID string) {
	t.Helper()
	none := ""
	if _, err := s.UpdateBotSettings(context.Background(), accountID, models.BotSettingsInput{HandoffMessage: &none}); err != nil {
		t.Fatal(err)
	}
}
