package models

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Events the inbox and GET /v1/events stream: each carries the record as its data.
const (
	EventMessageCreated = "message.created"
	EventMessageUpdated = "message.updated"
	EventAlertCreated   = "alert.created"
	EventAlertResolved  = "alert.resolved"
	// EventContactUpdated ({"id","botActive"} as data) tells open inbox pages that a contact's bot was paused
	// or resumed, which changes its "needs a human" marker. The inbox's own stream carries it; GET
	// /v1/events keeps to the four documented types.
	EventContactUpdated = "contact.updated"
)

// Event is one change to an account's conversations, as published to every api process.
type Event struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// EventChannel is the Redis pub/sub channel of an account's events.
func EventChannel(accountID string) string { return "events:" + accountID }

// EventPublisher carries events to whoever listens (see RedisEvents). Publish must not block.
type EventPublisher interface {
	Publish(accountID string, e Event)
}

// UseEvents makes the store publish an event after each change it commits to a message or an alert.
func (s *Store) UseEvents(p EventPublisher) { s.events = p }

// emit publishes a change; without a publisher (the admin CLI, some tests) it does nothing.
func (s *Store) emit(_ context.Context, accountID, typ string, record any) {
	if s.events == nil || accountID == "" {
		return
	}
	data, err := json.Marshal(record)
	if err != nil {
		return // our own records always encode
	}
	s.events.Publish(accountID, Event{Type: typ, Data: data})
}

// RedisEvents publishes events on Redis pub/sub, off the request path: Publish queues the event, and
// one goroutine sends what has queued as one pipeline. Live updates are a convenience (a page reload
// always shows the stored truth), so when Redis is down or the queue is full an event is dropped and
// counted rather than slowing down or failing the write that caused it.
type RedisEvents struct {
	rdb     redis.UniversalClient
	log     *slog.Logger
	queue   chan published
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Int64
	// linger lets a busy publisher wait a moment for more events (gather.go).
	linger Linger
}

type published struct {
	channel string
	payload []byte
}

// eventQueueSize bounds the events waiting to be published (a few seconds of peak traffic).
const eventQueueSize = 8192

// NewRedisEvents starts the publisher; Close stops it after sending what is queued.
func NewRedisEvents(rdb redis.UniversalClient, log *slog.Logger) *RedisEvents {
	p := &RedisEvents{rdb: rdb, log: log, queue: make(chan published, eventQueueSize), stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

// Publish queues the event; it never blocks.
func (p *RedisEvents) Publish(accountID string, e Event) {
	// The same bytes json.Marshal(e) gives, without encoding the record a second time (this runs for
	// every stored message); the type is one of the constants above, which need no escaping.
	payload := make([]byte, 0, len(e.Type)+len(e.Data)+20)
	payload = append(payload, `{"type":"`...)
	payload = append(payload, e.Type...)
	payload = append(payload, `","data":`...)
	payload = append(payload, e.Data...)
	payload = append(payload, '}')
	select {
	case p.queue <- published{channel: EventChannel(accountID), payload: payload}:
	default:
		p.dropped.Add(1)
	}
}

// Dropped is how many events were not published (queue full or Redis failing).
func (p *RedisEvents) Dropped() int64 { return p.dropped.Load() }

// Close sends what is queued (for at most two seconds) and stops. Events published after Close are
// queued and never sent.
func (p *RedisEvents) Close() {
	close(p.stop)
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
	}
}

func (p *RedisEvents) run() {
	defer close(p.done)
	const maxBatch = 256
	batch := make([]published, 0, maxBatch)
	for {
		stopping := false
		select {
		case first := <-p.queue:
			batch = append(batch[:0], first)
		case <-p.stop:
			stopping = true
			batch = batch[:0]
		}
		if !stopping {
			p.linger.Wait(len(p.queue), maxBatch-1)
		}
		batch = Gather(batch, p.queue, maxBatch)
		if len(batch) > 0 {
			p.send(batch)
			p.linger.Done()
		}
		if stopping && len(p.queue) == 0 {
			return
		}
	}
}

func (p *RedisEvents) send(batch []published) {
	{
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		pipe := p.rdb.Pipeline()
		for _, e := range batch {
			pipe.Publish(ctx, e.channel, e.payload)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			p.dropped.Add(int64(len(batch)))
			if p.log != nil {
				p.log.Warn("live events not published", "events", len(batch), "error", err.Error())
			}
		}
		cancel()
	}
}
