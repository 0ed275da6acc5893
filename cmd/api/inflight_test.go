package main_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMFinishesInFlightRequests sends SIGTERM to the api while it is reading the bodies of
// several incoming messages, and proves that it stops taking connections but still answers every
// request it had taken, exits 0 within 10 s, and stored every message it answered (README, "Deployment":
// "exit 0 within 10 s of SIGTERM, finishing in-flight requests"). A deploy or dyno restart does exactly
// this to requests in flight. A correct api passes however slow the machine: the requests are held in
// flight by withholding the end of their bodies, and the test waits for observable states (the
// server's 100 Continue, the port refusing connections); its one pause, slowClient, only gives an api
// that does not wait for them the time to exit.
func TestSIGTERMFinishesInFlightRequests(t *testing.T) {
	t.Parallel()
	const (
		plain = 8 // ordinary requests, besides the one that sends Expect: 100-continue
		// slowClient is how long the clients hold their requests unfinished once the api has stopped
		// taking connections: well inside the 8 s the api waits for them, far beyond the fraction of
		// a second the rest of its shutdown takes.
		slowClient = 2 * time.Second
	)
	port := freePort(t)
	addr := "127.0.0.1:" + port
	base := "http://" + addr
	common := []string{"PORT=" + port, "RATE_LIMIT_PER_MINUTE=100000"}
	var environ []string
	var key string
	if env.Postgres() {
		backends, _ := ownBackends(t)
		environ = baseEnv(append(append(common, backends...), "REQUIRE_HTTPS=false")...)
		key = admin(t, environ, "account", "create", "--email", "inflight@example.com")["apiKey"].(string)
	} else {
		environ = baseEnv(append(common, "DATA_DIR="+t.TempDir())...)
	}
	api := start(t, environ, "api")
	waitReady(t, base, api)
	if key == "" {
		key = demoKey(t, api.output())
	}

	// Each request goes out whole but for the last bytes of its body, so the server has taken it and
	// waits for the rest. The last one asks for 100 Continue: once the server answers that, it has
	// accepted every earlier connection too (one accept loop takes them from the kernel in order), so
	// none of them can still be waiting in the listen backlog, where closing the listener would drop it.
	run := fmt.Sprint(time.Now().UnixNano())
	reqs := make([]*heldRequest, plain+1)
	for i := range reqs {
		reqs[i] = holdIncoming(t, addr, key, fmt.Sprintf("inflight-%s-%d", run, i), i == plain)
	}
	if res := reqs[plain].readResponse(t); res.StatusCode != http.StatusContinue {
		t.Fatalf("the request with Expect: 100-continue got %d before its body, want 100", res.StatusCode)
	}

	if err := api.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	// The port refusing a new connection shows that shutdown has begun (the listener is closed) while
	// every request above is still unfinished; a client that comes now gets no answer, not a 5xx, and
	// retries elsewhere.
	refused := false
	for deadline := time.Now().Add(5 * time.Second); !refused && time.Now().Before(deadline); {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		switch {
		case err == nil:
			conn.Close()
			time.Sleep(20 * time.Millisecond)
		case errors.Is(err, syscall.ECONNRESET):
			// This dial raced the closing listener and was dropped from its backlog: try again.
			time.Sleep(20 * time.Millisecond)
		case errors.Is(err, syscall.ECONNREFUSED):
			refused = true
		default:
			t.Fatalf("dialing the api after SIGTERM: %v, want a connection or ECONNREFUSED", err)
		}
	}
	if !refused {
		t.Fatalf("the api still accepts connections 5 s after SIGTERM\n%s", api.output())
	}
	// The clients then take a while to send the rest, as slow clients on a mobile network do. A
	// correct api waits for them (up to the 8 s it gives itself); one that stopped waiting early, or
	// never did, has exited by now and dropped them, so this hold is what makes the test fail for it.
	time.Sleep(slowClient)
	select {
	case err := <-api.done:
		api.done <- err
		t.Fatalf("the api had exited (%v) when checked %s after SIGTERM, with %d requests unfinished\n%s",
			err, time.Since(signalled).Round(time.Millisecond), len(reqs), api.output())
	default:
	}

	for _, r := range reqs {
		r.finish(t)
	}
	ids := make([]string, len(reqs))
	for i, r := range reqs {
		res := r.readResponse(t)
		raw, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatalf("request %d: reading the answer: %v", i, err)
		}
		var body struct {
			Success   bool   `json:"success"`
			MessageID string `json:"messageId"`
			Duplicate bool   `json:"duplicate"`
		}
		_ = json.Unmarshal(raw, &body)
		if res.StatusCode != http.StatusOK || !body.Success || body.MessageID == "" || body.Duplicate {
			t.Fatalf("request %d in flight at SIGTERM: %d %s, want 200 with a new messageId", i, res.StatusCode, raw)
		}
		ids[i] = body.MessageID
	}

	select {
	case err := <-api.done:
		api.done <- err // let the cleanup's receive return
		if err != nil {
			t.Fatalf("the api exited with %v after SIGTERM\n%s", err, api.output())
		}
	case <-time.After(10*time.Second - time.Since(signalled)):
		t.Fatalf("the api still running 10 s after SIGTERM\n%s", api.output())
	}
	t.Logf("%d requests in flight at SIGTERM answered 200; the api exited 0 %s after it",
		len(reqs), time.Since(signalled).Round(time.Millisecond))

	// A 200 is a promise that the message is stored: a new api on the same data has every one.
	api = start(t, environ, "api")
	waitReady(t, base, api)
	for i, r := range reqs {
		status, m := call(t, "GET", base+"/v1/messages/"+ids[i], key, nil)
		if status != http.StatusOK || m["messageSid"] != r.sid || m["body"] != r.text || m["direction"] != "incoming" {
			t.Errorf("message %s (messageSid %s) after the restart: %d %v", ids[i], r.sid, status, m)
		}
	}
	api.stop(t)
}

// heldRequest is an incoming message posted on its own connection whose body is not yet complete.
type heldRequest struct {
	conn      net.Conn
	rd        *bufio.Reader
	sid, text string
	rest      []byte // the end of the body, not yet sent
}

// holdIncoming posts an incoming message with messageSid sid on a new connection to addr, all but the
// last 10 bytes of its body; with expectContinue it sends the headers alone, asking for 100 Continue,
// and the first part of the body is sent by readResponse once the server has answered that.
func holdIncoming(t *testing.T, addr, key, sid string, expectContinue bool) *heldRequest {
	t.Helper()
	text := "hello from " + sid
	body, _ := json.Marshal(map[string]any{"customData": map[string]any{
		"messageSid": sid, "fromId": sid, "toId": "biz", "body": text}})
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// Bounds every read and write, so that a server that never answers fails the test instead of
	// hanging it.
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	var head strings.Builder
	fmt.Fprintf(&head, "POST /v1/incoming_custom_channel_message HTTP/1.1\r\nHost: %s\r\n", addr)
	fmt.Fprintf(&head, "Authorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", key, len(body))
	r := &heldRequest{conn: conn, rd: bufio.NewReader(conn), sid: sid, text: text, rest: body[len(body)-10:]}
	first := body[:len(body)-10]
	if expectContinue {
		head.WriteString("Expect: 100-continue\r\n\r\n")
		r.rest = body // the first part goes with the rest if 100 Continue never comes
		if _, err := io.WriteString(conn, head.String()); err != nil {
			t.Fatal(err)
		}
		return r
	}
	head.WriteString("\r\n")
	if _, err := conn.Write(append([]byte(head.String()), first...)); err != nil {
		t.Fatal(err)
	}
	return r
}

// readResponse reads the server's next response on the request's connection. A 100 Continue sends the
// first part of the body, all but its last 10 bytes.
func (r *heldRequest) readResponse(t *testing.T) *http.Response {
	t.Helper()
	res, err := http.ReadResponse(r.rd, nil)
	if err != nil {
		t.Fatalf("messageSid %s: no answer: %v", r.sid, err)
	}
	if res.StatusCode == http.StatusContinue {
		first := r.rest[:len(r.rest)-10]
		if _, err := r.conn.Write(first); err != nil {
			t.Fatalf("messageSid %s: sending the body after 100 Continue: %v", r.sid, err)
		}
		r.rest = r.rest[len(first):]
	}
	return res
}

// finish sends the rest of the request's body.
func (r *heldRequest) finish(t *testing.T) {
	t.Helper()
	if _, err := r.conn.Write(r.rest); err != nil {
		t.Fatalf("messageSid %s: sending the end of the body: %v", r.sid, err)
	}
}
