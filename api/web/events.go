package web

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// Hub fans the accounts' events out to this process's open streams (GET /v1/events and the inbox).
// The process holds one Redis subscription connection whatever the number of streams: it subscribes to
// an account's channel while at least one stream of that account is open. Events come from whichever
// process stored the change (models.RedisEvents).
type Hub struct {
	rdb redis.UniversalClient
	log *slog.Logger

	mu       sync.Mutex
	ps       *redis.PubSub
	accounts map[string]*hubAccount
	closed   chan struct{}
}

// hubAccount is one account's open streams and its subscription's state.
type hubAccount struct {
	listeners map[chan models.Event]struct{}
	ready     chan struct{} // closed once Redis confirmed the subscription
	confirmed bool
}

// listenerBuffer is how many events a slow stream may fall behind before events are dropped for it
// (its page then catches up on the next event or reload).
const listenerBuffer = 64

// NewHub returns a hub that subscribes through rdb when its first stream opens.
func NewHub(rdb redis.UniversalClient, log *slog.Logger) *Hub {
	return &Hub{rdb: rdb, log: log, accounts: map[string]*hubAccount{}, closed: make(chan struct{})}
}

// listen returns a channel of the account's events and the function that stops them. It returns once
// Redis has confirmed the subscription, so an event stored after listen returns reaches the channel;
// it fails when Redis does not confirm in time.
func (h *Hub) listen(ctx context.Context, accountID string) (<-chan models.Event, func(), error) {
	ch := make(chan models.Event, listenerBuffer)
	h.mu.Lock()
	if h.ps == nil {
		h.ps = h.rdb.Subscribe(context.Background())
		go h.dispatch(h.ps)
	}
	acc := h.accounts[accountID]
	if acc == nil {
		acc = &hubAccount{listeners: map[chan models.Event]struct{}{}, ready: make(chan struct{})}
		h.accounts[accountID] = acc
		if err := h.ps.Subscribe(ctx, models.EventChannel(accountID)); err != nil {
			delete(h.accounts, accountID)
			h.mu.Unlock()
			return nil, nil, fmt.Errorf("subscribe to events: %w", err)
		}
	}
	acc.listeners[ch] = struct{}{}
	h.mu.Unlock()

	var once sync.Once
	stop := func() { once.Do(func() { h.unlisten(accountID, ch) }) }
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	select {
	case <-acc.ready:
		return ch, stop, nil
	case <-wait.Done():
		stop()
		return nil, nil, fmt.Errorf("subscribe to events: not confirmed: %w", wait.Err())
	}
}

func (h *Hub) unlisten(accountID string, ch chan models.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	acc := h.accounts[accountID]
	if acc == nil {
		return
	}
	delete(acc.listeners, ch)
	if len(acc.listeners) == 0 {
		delete(h.accounts, accountID)
		select {
		case <-h.closed:
			return // the subscription is closed already
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := h.ps.Unsubscribe(ctx, models.EventChannel(accountID)); err != nil {
			h.log.Warn("unsubscribe from events", "error", err.Error())
		}
	}
}

// dispatch hands each published event to the streams of its account. go-redis resubscribes by itself
// after a lost connection; events published meanwhile are lost, and the pages reload what they show
// when their stream reconnects.
func (h *Hub) dispatch(ps *redis.PubSub) {
	prefix := len(models.EventChannel(""))
	for msg := range ps.ChannelWithSubscriptions(redis.WithChannelSize(1024)) {
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" || len(m.Channel) <= prefix {
				continue
			}
			h.mu.Lock()
			if acc := h.accounts[m.Channel[prefix:]]; acc != nil && !acc.confirmed {
				acc.confirmed = true
				close(acc.ready)
			}
			h.mu.Unlock()
		case *redis.Message:
			if len(m.Channel) <= prefix {
				continue
			}
			var e models.Event
			if err := json.Unmarshal([]byte(m.Payload), &e); err != nil {
				continue
			}
			h.mu.Lock()
			if acc := h.accounts[m.Channel[prefix:]]; acc != nil {
				for ch := range acc.listeners {
					select {
					case ch <- e:
					default: // this stream is not keeping up; it misses the event rather than holding the others
					}
				}
			}
			h.mu.Unlock()
		}
	}
}

// Close ends every open stream (at shutdown, so that they do not hold the graceful stop) and the
// subscription.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.closed:
		return
	default:
	}
	close(h.closed)
	if h.ps != nil {
		_ = h.ps.Close()
	}
}

// keepAliveEvery is how often an idle stream sends a comment line, so that proxies keep it open.
const keepAliveEvery = 15 * time.Second

// Stream answers with a Server-Sent Events stream of the account's events: "event: <type>" and
// "data: <record JSON>" for each, a comment line every 15 s. It ends when the client goes away or the
// server shuts down. inbox adds the events only the inbox's pages use (contact.updated, contact.assigned, note.created). Errors:
// UNAVAILABLE when Redis does not confirm the subscription.
func (h *Hub) Stream(c *fiber.Ctx, accountID string, inbox bool) error {
	events, stop, err := h.listen(c.UserContext(), accountID)
	if err != nil {
		h.log.ErrorContext(c.UserContext(), "events stream", "error", err.Error())
		return models.Errorf(models.CodeUnavailable, "live events are unavailable; try again shortly")
	}
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Accel-Buffering", "no") // nginx and the like: do not buffer the stream
	if c.Method() == fiber.MethodHead {
		stop() // HEAD: the headers only (fasthttp would still write a chunked stream's final CRLF)
		return nil
	}
	conn := c.Context().Conn()
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer stop()
		// The server's write timeout counts from the start of the response; a stream lives longer,
		// so each write gets its own deadline instead.
		write := func(format string, args ...any) bool {
			_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
			fmt.Fprintf(w, format, args...)
			return w.Flush() == nil
		}
		if !write("retry: 2000\n: connected\n\n") {
			return
		}
		tick := time.NewTicker(keepAliveEvery)
		defer tick.Stop()
		for {
			select {
			case e := <-events:
				if !inbox && (e.Type == models.EventContactUpdated || e.Type == models.EventContactAssigned || e.Type == models.EventNoteCreated) {
					continue
				}
				if !write("event: %s\ndata: %s\n\n", e.Type, e.Data) {
					return
				}
			case <-tick.C:
				if !write(": keep-alive\n\n") {
					return
				}
			case <-h.closed:
				return
			}
		}
	})
	return nil
}
