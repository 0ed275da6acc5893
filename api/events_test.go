package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"funnelchat/api"
	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

func init() {
	// The contract check decodes a response body by its media type: an event stream is text.
	openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder)
}

// sseFrame is one block of a Server-Sent Events stream, up to its blank line: an event (Type and
// Data), or fields and comments of their own ("retry: 2000", ": connected", ": keep-alive").
type sseFrame struct {
	Lines []string
	Type  string
	Data  string
}

// record decodes an event's data, failing the test when it is not a JSON object.
func (f sseFrame) record(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(f.Data), &m); err != nil {
		t.Fatalf("event %s: data is not a JSON object: %v: %q", f.Type, err, f.Data)
	}
	return m
}

// eventStream is an open GET /v1/events, read by a goroutine of its own frame by frame.
type eventStream struct {
	req    *http.Request
	resp   *http.Response
	cancel context.CancelFunc
	frames chan sseFrame // closed when the stream ends

	mu  sync.Mutex
	err error // why the stream ended: io.EOF when the server ended it
}

// openEventsURL opens the stream at rawURL with the key in x-api-key (none when key is ""): with
// net/http rather than do, which would wait for the whole body. The client has no timeout; the stream
// is closed when the test ends.
// header holds further "Name: value" headers (an inbox session's Cookie).
func openEventsURL(t *testing.T, rawURL, key string, header ...string) *eventStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for _, h := range header {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	s := &eventStream{req: req, resp: resp, cancel: cancel, frames: make(chan sseFrame, 1024)}
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
	})
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", rawURL, resp.StatusCode, body)
	}
	go s.read()
	return s
}

// openEvents opens GET /v1/events on srv with the key and checks its beginning: the headers, and the
// first frame, "retry: 2000" and ": connected", against the OpenAPI document too.
func openEvents(t *testing.T, srv *server, key string) *eventStream {
	t.Helper()
	s := openEventsURL(t, srv.URL+"/v1/events", key)
	if ct := s.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	first, ok := s.next(2 * time.Second)
	if !ok {
		t.Fatalf("no first frame: %v", s.endErr())
	}
	if want := []string{"retry: 2000", ": connected"}; !slices.Equal(first.Lines, want) {
		t.Fatalf("first frame %q, want %q", first.Lines, want)
	}
	body := strings.Join(first.Lines, "\n") + "\n\n"
	checkContract(t, s.req, nil, response{Status: s.resp.StatusCode, Header: s.resp.Header, Body: []byte(body)})
	return s
}

func (s *eventStream) read() {
	defer close(s.frames)
	br := bufio.NewReader(s.resp.Body)
	var f sseFrame
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if len(f.Lines) > 0 {
				s.frames <- f
			}
			f = sseFrame{}
			continue
		}
		f.Lines = append(f.Lines, line)
		switch field, value, _ := strings.Cut(line, ":"); field {
		case "event":
			f.Type = strings.TrimPrefix(value, " ")
		case "data":
			if f.Data != "" {
				f.Data += "\n"
			}
			f.Data += strings.TrimPrefix(value, " ")
		}
	}
}

// endErr is why the stream ended (nil while it is open).
func (s *eventStream) endErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// next returns the next frame; ok is false when the stream ended or nothing came within timeout.
func (s *eventStream) next(timeout time.Duration) (f sseFrame, ok bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case f, ok = <-s.frames:
		return f, ok
	case <-timer.C:
		return sseFrame{}, false
	}
}

// expect reads the stream until an event of the type whose record satisfies match, and returns that
// record; seen gets every event read on the way. It fails the test at the deadline or the stream's end.
func (s *eventStream) expect(t *testing.T, timeout time.Duration, typ string, match func(map[string]any) bool, seen ...func(sseFrame)) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("no %s event within %s", typ, timeout)
		}
		f, ok := s.next(left)
		if !ok {
			if err := s.endErr(); err != nil {
				t.Fatalf("the stream ended (%v) before a %s event", err, typ)
			}
			t.Fatalf("no %s event within %s", typ, timeout)
		}
		if f.Type == "" {
			continue // a comment
		}
		for _, fn := range seen {
			fn(f)
		}
		if f.Type == typ {
			if rec := f.record(t); match(rec) {
				return rec
			}
		}
	}
}

// checkRecord validates an event's record against its schema in the OpenAPI document: Message for
// message events, Alert for alert events.
func checkRecord(t *testing.T, typ string, rec map[string]any) {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	schema := "Message"
	if strings.HasPrefix(typ, "alert.") {
		schema = "Alert"
	}
	if err := c.doc.Components.Schemas[schema].Value.VisitJSON(rec); err != nil {
		t.Errorf("%s event: the record is not a %s of api/%s: %v\n%v", typ, schema, openAPIFile, firstLine(err), rec)
	}
}

func TestEventsStream(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	s := openEvents(t, srv, key)
	for _, h := range []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "RateLimit"} {
		if s.resp.Header.Get(h) == "" {
			t.Errorf("no %s: %v", h, s.resp.Header)
		}
	}
	if cc := s.resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}

	posted := time.Now()
	r := incoming(t, srv, key, "ev-1", "eve", "hello stream")
	expect(t, r, http.StatusOK, "")
	id := r.JSON(t)["messageId"].(string)
	rec := s.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == id })
	if took := time.Since(posted); took > 2*time.Second {
		t.Fatalf("the event took %s", took)
	}
	checkRecord(t, models.EventMessageCreated, rec)
	contactID, _ := do(t, "GET", srv.URL+"/v1/messages/"+id, key, nil).JSON(t)["contactId"].(string)
	if contactID == "" || rec["contactId"] != contactID || rec["direction"] != "incoming" || rec["body"] != "hello stream" {
		t.Fatalf("message.created record: %v (contact %q)", rec, contactID)
	}

	t.Run("a duplicate stores nothing and tells nothing", func(t *testing.T) {
		expect(t, incoming(t, srv, key, "ev-1", "eve", "hello stream"), http.StatusOK, "")
		r := incoming(t, srv, key, "ev-2", "eve", "second")
		next := r.JSON(t)["messageId"].(string)
		var ids []any
		s.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == next },
			func(f sseFrame) { ids = append(ids, f.record(t)["id"]) })
		if len(ids) != 1 {
			t.Fatalf("events before the second message's: %v", ids)
		}
	})

	t.Run("the key as ?apiKey=, as a browser's EventSource sends it", func(t *testing.T) {
		q := openEventsURL(t, srv.URL+"/v1/events?apiKey="+url.QueryEscape(key), "")
		if f, ok := q.next(2 * time.Second); !ok || !slices.Contains(f.Lines, ": connected") {
			t.Fatalf("first frame %q (ok %v)", f.Lines, ok)
		}
	})

	t.Run("HEAD answers the headers and ends", func(t *testing.T) {
		start := time.Now()
		r := do(t, "HEAD", srv.URL+"/v1/events", key, nil)
		expect(t, r, http.StatusOK, "")
		if r.Header.Get("Content-Type") != "text/event-stream" || len(r.Body) != 0 || time.Since(start) > 5*time.Second {
			t.Fatalf("HEAD: %v %q after %s", r.Header, r.Body, time.Since(start))
		}
		// Nothing after the headers on the wire, where a keep-alive client would read it as the start
		// of the next response.
		raw := wireBytes(t, srv, "HEAD", "/v1/events", "x-api-key: "+key)
		header, rest, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
		if !ok || !bytes.HasPrefix(header, []byte("HTTP/1.1 200 ")) || len(rest) != 0 {
			t.Fatalf("HEAD on the wire: %q", raw)
		}
	})
}

// A model's reply is stored before it is sent (a rerun would ask the model again), so the stream tells
// it twice: created pending, then updated sent. Its id is a fresh one, not the offline bot's derived id.
func TestEventsFollowAModelsReply(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	llm := newFakeLLM(t, func(int) (int, map[string]any) {
		return 200, map[string]any{"role": "assistant", "content": "We open at nine."}
	})
	llmWorker(t, llm)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	s := openEvents(t, srv, key)

	in := incoming(t, srv, key, "wm-1", "mona", "when do you open?").JSON(t)["messageId"].(string)
	reply := s.expect(t, 10*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["replyToId"] == in })
	checkRecord(t, models.EventMessageCreated, reply)
	if reply["status"] != "pending" || reply["attempts"] != float64(0) || reply["body"] != "We open at nine." {
		t.Fatalf("the model's reply as created: %v", reply)
	}
	if reply["id"] == models.BotReplyID(in) {
		t.Fatalf("the model's reply has the derived id %v of a reply sent before it is stored", reply["id"])
	}
	sent := s.expect(t, 10*time.Second, models.EventMessageUpdated, func(m map[string]any) bool { return m["id"] == reply["id"] })
	checkRecord(t, models.EventMessageUpdated, sent)
	if sent["status"] != "sent" || sent["sentAt"] == nil || sent["attempts"] != float64(1) {
		t.Fatalf("the model's reply as delivered: %v", sent)
	}
	if d := hook.deliveries(); len(d) != 1 || d[0].Header.Get("webhook-id") != reply["id"] {
		t.Fatalf("deliveries %v, want one under the reply's id %v", len(d), reply["id"])
	}
}

// The worker's changes reach the stream: the bot's reply as it is stored (the offline bot's is stored
// once, delivered already; a model's as it is stored and as it is delivered, TestEventsFollowAModelsReply),
// and a handoff's alert as it is raised and resolved.
func TestEventsFollowTheWorker(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	s := openEvents(t, srv, key)

	in := incoming(t, srv, key, "w-1", "walt", "hi").JSON(t)["messageId"].(string)
	s.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == in })
	reply := s.expect(t, 10*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["replyToId"] == in })
	checkRecord(t, models.EventMessageCreated, reply)
	if reply["direction"] != "outgoing" || reply["authorType"] != "bot" || reply["status"] != "sent" ||
		reply["sentAt"] == nil || reply["attempts"] != float64(1) || reply["id"] != models.BotReplyID(in) {
		t.Fatalf("the bot reply as created: %v", reply)
	}
	if n := len(hook.deliveries()); n != 1 {
		t.Fatalf("%d deliveries", n)
	}

	// A handoff raises an alert; resolving it is told too.
	asker := incoming(t, srv, key, "w-2", "wendy", "I want to talk to a person").JSON(t)["messageId"].(string)
	raised := s.expect(t, 10*time.Second, models.EventAlertCreated, func(m map[string]any) bool { return m["messageId"] == asker })
	checkRecord(t, models.EventAlertCreated, raised)
	if raised["resolvedAt"] != nil || raised["contactId"] == nil {
		t.Fatalf("alert.created record: %v", raised)
	}
	r := do(t, "POST", srv.URL+"/v1/alerts/"+raised["id"].(string)+"/resolve", key, nil)
	expect(t, r, http.StatusOK, "")
	resolved := s.expect(t, 2*time.Second, models.EventAlertResolved, func(m map[string]any) bool { return m["id"] == raised["id"] })
	checkRecord(t, models.EventAlertResolved, resolved)
	if resolved["resolvedAt"] == nil || resolved["resolvedAt"] != r.JSON(t)["resolvedAt"] {
		t.Fatalf("alert.resolved record %v, the API answered %s", resolved, r.Body)
	}

	// Resolving again changes nothing, so it tells nothing: the next event is the next change.
	expect(t, do(t, "POST", srv.URL+"/v1/alerts/"+raised["id"].(string)+"/resolve", key, nil), http.StatusOK, "")
	contact := raised["contactId"].(string)
	human := do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/messages", key, map[string]any{"body": "Hi Wendy, Sam here."})
	expect(t, human, http.StatusCreated, "")
	var types []string
	s.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == human.JSON(t)["id"] },
		func(f sseFrame) { types = append(types, f.Type) })
	if slices.Contains(types, models.EventAlertResolved) {
		t.Fatalf("a second resolve was told again: %v", types)
	}
}

// An account's stream carries its own events only, also when both accounts' streams share one api
// process (and so one Redis subscription).
func TestEventsStayInTheirAccount(t *testing.T) {
	srv := startServer(t)
	_, keyA := newAccount(t)
	_, keyB := newAccount(t)
	a, b := openEvents(t, srv, keyA), openEvents(t, srv, keyB)

	// B's message is published before A's: had it reached A's stream, it would come first.
	bMsg := incoming(t, srv, keyB, "iso-b1", "bea", "for B only").JSON(t)["messageId"].(string)
	aMsg := incoming(t, srv, keyA, "iso-a1", "abe", "for A only").JSON(t)["messageId"].(string)
	var onA []any
	a.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == aMsg },
		func(f sseFrame) { onA = append(onA, f.record(t)["id"]) })
	if !slices.Equal(onA, []any{aMsg}) {
		t.Fatalf("A's stream carried %v, want only %s", onA, aMsg)
	}

	// B saw its own, and nothing of A's before B's next one.
	bNext := incoming(t, srv, keyB, "iso-b2", "bea", "again for B").JSON(t)["messageId"].(string)
	var onB []any
	b.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == bNext },
		func(f sseFrame) { onB = append(onB, f.record(t)["id"]) })
	if !slices.Equal(onB, []any{bMsg, bNext}) {
		t.Fatalf("B's stream carried %v, want %s and %s", onB, bMsg, bNext)
	}

	// A request of B on A's contact is refused and tells A's stream nothing.
	aContact, _ := do(t, "GET", srv.URL+"/v1/messages/"+aMsg, keyA, nil).JSON(t)["contactId"].(string)
	expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+aContact+"/messages", keyB, map[string]any{"body": "hijack"}), http.StatusNotFound, models.CodeNotFound)
	aNext := incoming(t, srv, keyA, "iso-a2", "abe", "still A").JSON(t)["messageId"].(string)
	onA = nil
	a.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == aNext },
		func(f sseFrame) { onA = append(onA, f.record(t)["id"]) })
	if !slices.Equal(onA, []any{aNext}) {
		t.Fatalf("A's stream carried %v, want only %s", onA, aNext)
	}
}

// A change stored through one api process reaches a stream open on another: the events travel through
// Redis, not the process's memory.
func TestEventsAcrossServers(t *testing.T) {
	one, two := startServer(t), startServer(t)
	_, key := newAccount(t)
	onTwo := openEvents(t, two, key)
	onOne := openEvents(t, one, key)

	id := incoming(t, one, key, "x-1", "xena", "via server one").JSON(t)["messageId"].(string)
	for name, s := range map[string]*eventStream{"server two": onTwo, "server one": onOne} {
		rec := s.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == id })
		if rec["body"] != "via server one" {
			t.Fatalf("%s: %v", name, rec)
		}
	}
	contact, _ := do(t, "GET", two.URL+"/v1/messages/"+id, key, nil).JSON(t)["contactId"].(string)
	r := do(t, "POST", two.URL+"/v1/contacts/"+contact+"/messages", key, map[string]any{"body": "via server two"})
	expect(t, r, http.StatusCreated, "")
	onOne.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == r.JSON(t)["id"] })
}

func TestEventsNeedAKey(t *testing.T) {
	srv := startServer(t)
	for _, key := range []string{"", "not-a-key"} {
		r := do(t, "GET", srv.URL+"/v1/events", key, nil)
		expect(t, r, http.StatusUnauthorized, models.CodeUnauthorized)
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
	}
}

// A stream ends when its server shuts down, and does not hold the shutdown.
func TestEventsStreamEndsAtShutdown(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	s := openEvents(t, srv, key)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v after %s", err, time.Since(start))
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Shutdown took %s with a stream open", took)
	}
	deadline := time.After(2 * time.Second)
	for {
		select {
		case f, ok := <-s.frames:
			if ok {
				t.Logf("frame after shutdown: %q", f.Lines)
				continue
			}
			if err := s.endErr(); !errors.Is(err, io.EOF) {
				t.Fatalf("the stream ended with %v, want the end of the body", err)
			}
			return
		case <-deadline:
			t.Fatal("the stream is still open 2 s after the shutdown")
		}
	}
}

// A stream whose client went away gives up its subscription at the next event it cannot write.
func TestEventsStreamOfAGoneClientIsDropped(t *testing.T) {
	srv := startServer(t)
	acc, key := newAccount(t)
	s := openEvents(t, srv, key)
	subscribers := func() int64 {
		n, err := env.Redis.PubSubNumSub(context.Background(), models.EventChannel(acc.ID)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n[models.EventChannel(acc.ID)]
	}
	if n := subscribers(); n != 1 {
		t.Fatalf("%d subscribers of the account's channel with one stream open", n)
	}
	s.cancel()
	_ = s.resp.Body.Close()
	i := 0
	waitFor(t, 10*time.Second, "the subscription to end", func() bool {
		i++
		expect(t, incoming(t, srv, key, fmt.Sprintf("gone-%d", i), "gus", "anyone?"), http.StatusOK, "")
		time.Sleep(50 * time.Millisecond)
		return subscribers() == 0
	})

	// A new stream of the account subscribes again.
	again := openEvents(t, srv, key)
	id := incoming(t, srv, key, "gone-back", "gus", "back").JSON(t)["messageId"].(string)
	again.expect(t, 2*time.Second, models.EventMessageCreated, func(m map[string]any) bool { return m["id"] == id })
}

// Without Redis there are no live events: 503 UNAVAILABLE rather than a stream that never tells
// anything.
func TestEventsWithoutRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	cfg, err := config.Load(env.Getenv("REQUIRE_HTTPS=false"))
	if err != nil {
		t.Fatal(err)
	}
	deadRedis := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1})
	deadQueue := jobs.NewQueue(asynq.RedisClientOpt{Addr: dead}, cfg)
	t.Cleanup(func() { deadRedis.Close(); deadQueue.Close() })
	down := api.New(api.Deps{Config: cfg, Store: env.Store, Redis: deadRedis, Queue: deadQueue, Logger: testLogger(t)})
	dl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = down.Serve(dl) }()
	t.Cleanup(func() { httpClient.CloseIdleConnections(); _ = down.Shutdown(context.Background()) })

	_, key := newAccount(t) // authenticated against the database while Redis is down
	start := time.Now()
	r := do(t, "GET", "http://"+dl.Addr().String()+"/v1/events", key, nil)
	expect(t, r, http.StatusServiceUnavailable, models.CodeUnavailable)
	if time.Since(start) > 10*time.Second {
		t.Fatalf("the refusal took %s", time.Since(start))
	}
}

// sessionCookieName is the inbox's session cookie.
const sessionCookieName = "inbox_session"

// The inbox's own stream also says when a contact's bot is paused or resumed, so that its "needs a
// human" marker changes in every open tab; GET /v1/events keeps to its four documented types.
func TestInboxStreamCarriesBotPauses(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	b, _, key := signedIn(t, srv)
	r := incoming(t, srv, key, "bot-pause-1", "pat", "Pause me")
	expect(t, r, http.StatusOK, "")
	contactID, _ := do(t, "GET", srv.URL+"/v1/messages/"+r.JSON(t)["messageId"].(string), key, nil).JSON(t)["contactId"].(string)
	session := b.cookie(sessionCookieName)
	inbox := openEventsURL(t, srv.URL+"/inbox/events", "", "Cookie: "+session.Name+"="+session.Value)
	api := openEvents(t, srv, key)
	if first, ok := inbox.next(2 * time.Second); !ok || !slices.Equal(first.Lines, []string{"retry: 2000", ": connected"}) {
		t.Fatalf("inbox stream began with %q (%v)", first.Lines, inbox.endErr())
	}

	for _, active := range []bool{false, true} {
		r := do(t, "PUT", srv.URL+"/v1/contacts/"+contactID+"/bot", key, map[string]any{"active": active})
		expect(t, r, http.StatusOK, "")
		inbox.expect(t, liveWait, models.EventContactUpdated, func(rec map[string]any) bool {
			return rec["id"] == contactID && rec["botActive"] == active
		})
	}
	// A message after the pauses: the api stream shows it, and nothing of the pauses before it.
	expect(t, incoming(t, srv, key, "bot-pause-2", "pat", "After the pauses"), http.StatusOK, "")
	api.expect(t, liveWait, models.EventMessageCreated, func(rec map[string]any) bool { return rec["body"] == "After the pauses" },
		func(f sseFrame) {
			if f.Type == models.EventContactUpdated {
				t.Errorf("GET /v1/events carried %s: %s", f.Type, f.Data)
			}
		})
}
