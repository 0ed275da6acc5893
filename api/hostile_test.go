package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// zeros is an endless body of '0' bytes, read n at a time.
type zeros struct{ left int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > z.left {
		p = p[:z.left]
	}
	for i := range p {
		p[i] = '0'
	}
	z.left -= int64(len(p))
	return len(p), nil
}

// TestHundredMegabyteBodiesAreRefused announces 100 MB bodies at the default MAX_BODY_BYTES (10 MiB):
// a declared Content-Length gets 413 before the body is read; a streamed (chunked) one is cut off once
// past the limit. The server keeps answering, and its heap does not keep what it read.
func TestHundredMegabyteBodiesAreRefused(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	const size = 100 << 20
	// retainedBound is what the heap in use may grow by over the measured rounds, after a warm-up round
	// has grown the server's buffer pools to their working size (measured: under 1 MiB). Keeping one
	// refused body, or one 10 MiB read buffer per round, would exceed it.
	const retainedBound = 8 << 20
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		debug.FreeOSMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	round := func(t *testing.T) {
		for _, path := range []string{"/v1/contacts", "/v1/incoming_custom_channel_message"} {
			t.Run("declared "+path, func(t *testing.T) {
				// Only the headers are sent: the answer must come without the body being read.
				conn, err := net.Dial("tcp", host)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
				fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, host, key, size)
				req := wireRequest("POST", path)
				res, err := http.ReadResponse(bufio.NewReader(conn), req)
				if err != nil {
					t.Fatalf("no answer to a 100 MB Content-Length: %v", err)
				}
				r, err := readChecked(t, req, res)
				if err != nil {
					t.Fatal(err)
				}
				expectTooLarge(t, path, r)
			})
			t.Run("streamed "+path, func(t *testing.T) {
				res, err := postRaw(t, srv.URL+path, key, &zeros{left: size})
				if err != nil {
					// The server closed the connection while the client was still sending (it stops
					// reading past the limit): refused, which is what matters.
					t.Logf("cut off: %v", err)
				} else {
					body, _ := io.ReadAll(res.Body)
					res.Body.Close()
					expectTooLarge(t, path, response{Status: res.StatusCode, Header: res.Header, Body: body})
				}
			})
			// Still up. (Not through do: its OpenAPI check would load the document into the heap
			// measured.)
			if a, err := sendRaw(host, []byte("GET /healthz HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")); err != nil || a.status != http.StatusOK {
				t.Fatalf("healthz after refusing a 100 MB body: %v %d %s", err, a.status, a.body)
			}
		}
	}
	// Warm-up: the first round grows fasthttp's request buffers (pooled, up to MAX_BODY_BYTES each),
	// which a process keeps by design; only growth after it would be something kept per request.
	t.Run("warm-up", round)
	before := heap()
	for i := 1; i <= 3; i++ {
		t.Run(fmt.Sprintf("round %d", i), round)
	}
	httpClient.CloseIdleConnections()
	grown := int64(heap()) - int64(before)
	t.Logf("heap in use after 3 rounds (12 refused 100 MB bodies): %+.1f MiB", float64(grown)/(1<<20))
	if grown > retainedBound {
		t.Fatalf("heap in use grew by %.1f MiB over 3 rounds of refused bodies (bound %d MiB)", float64(grown)/(1<<20), retainedBound>>20)
	}
}

// expectTooLarge fails the test unless r is a 413 in the error form of the endpoint at path, with
// X-Request-Id.
func expectTooLarge(t *testing.T, path string, r response) {
	t.Helper()
	if r.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413: %.200s", r.Status, r.Body)
	}
	if r.Header.Get("X-Request-Id") == "" {
		t.Errorf("413 without X-Request-Id")
	}
	if path == incomingEndpoint {
		if msg, _ := r.JSON(t)["error"].(string); msg == "" {
			t.Fatalf("413 on the incoming endpoint without the string error form: %s", r.Body)
		}
	} else if code := r.errorCode(t); code != "PAYLOAD_TOO_LARGE" {
		t.Fatalf("413 with code %q: %s", code, r.Body)
	}
}

// A body of unknown length (chunked) over MAX_BODY_BYTES is refused by the HTTP server while it reads
// it, before any handler: the answer is still the endpoint's, in its error form, with X-Request-Id.
// So is a request the HTTP server cannot read at all (a Content-Length beyond int64).
func TestRefusalsBeforeRoutingKeepTheEndpointsForm(t *testing.T) {
	srv := startServer(t, "MAX_BODY_BYTES=4096")
	_, key := newAccount(t)
	for _, path := range []string{"/v1/contacts", incomingEndpoint} {
		t.Run("chunked "+path, func(t *testing.T) {
			// io.MultiReader hides the length: net/http sends the body chunked.
			res, err := postRaw(t, srv.URL+path, key, io.MultiReader(strings.NewReader(`{"x":"`+strings.Repeat("a", 8192)+`"}`)))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			expectTooLarge(t, path, response{Status: res.StatusCode, Header: res.Header, Body: body})
		})
	}
	t.Run("a Content-Length beyond int64", func(t *testing.T) {
		host := strings.TrimPrefix(srv.URL, "http://")
		a, err := sendRaw(host, []byte("POST /v1/lists HTTP/1.1\r\nHost: "+host+"\r\nContent-Length: 99999999999999999999999\r\n\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		r := response{Status: a.status, Header: a.header, Body: a.body}
		checkResponse(t, wireRequest("POST", "/v1/lists"), r)
		expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	})
}

// TestInjectedHeadersQueriesAndIdsGetA4xx sends header and query injection attempts and oversized ids:
// each gets a 4xx naming the problem (or is harmless), never a 5xx, and nothing injected is echoed.
func TestInjectedHeadersQueriesAndIdsGetA4xx(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=false")
	_, key := newAccount(t)
	long := strings.Repeat("x", 10000)
	cases := []struct {
		name, method, path string
		body               any
		headers            []string
		status             int
		code               string
	}{
		{"NUL in a phone lookup", "GET", "/v1/contacts?phoneNumber=%2B1415555%000123", nil, nil, 400, "INVALID_PHONE"},
		{"CRLF in an email lookup", "GET", "/v1/contacts?email=a%40b.co%0D%0ABcc:%20x%40y.co", nil, nil, 400, "VALIDATION_ERROR"},
		{"both lookups at once", "GET", "/v1/contacts?email=a%40b.co&phoneNumber=%2B14155550123", nil, nil, 400, "VALIDATION_ERROR"},
		{"SQL in an id", "GET", "/v1/contacts/ct_1'%20OR%20'1'='1", nil, nil, 404, "NOT_FOUND"},
		{"a 10,000-character id", "GET", "/v1/messages/" + long, nil, nil, 404, "NOT_FOUND"},
		{"a 10,000-character cursor", "GET", "/v1/lists?cursor=" + long, nil, nil, 400, "VALIDATION_ERROR"},
		{"CRLF in a webhook URL", "PUT", "/v1/settings/webhook", map[string]any{"url": "https://example.com/\r\nHost: evil"}, nil, 400, "VALIDATION_ERROR"},
		{"a webhook URL with credentials to a private host", "PUT", "/v1/settings/webhook", map[string]any{"url": "https://user:pw@10.0.0.1/x"}, nil, 400, "VALIDATION_ERROR"},
		{"markup as a request id", "GET", "/v1/lists", nil, []string{"X-Request-Id: <script>alert(1)</script>"}, 200, ""},
		{"a limit that is not a number", "GET", "/v1/lists?limit=1;DROP%20TABLE%20lists", nil, nil, 400, "VALIDATION_ERROR"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, c.method, srv.URL+c.path, key, c.body, c.headers...)
			if r.Status >= 500 {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, c.status, r.Body)
			}
			if c.code != "" {
				if got := r.errorCode(t); got != c.code {
					t.Fatalf("code %q, want %q: %s", got, c.code, r.Body)
				}
			}
			if strings.Contains(r.Header.Get("X-Request-Id"), "<") || strings.Contains(string(r.Body), "<script>") {
				t.Fatalf("injected markup echoed: %v %s", r.Header, r.Body)
			}
		})
	}
}

// TestJSONThatDecodersRepairIsRefused sends what encoding/json alone would accept after quietly
// changing it (invalid UTF-8 and lone surrogates become U+FFFD; of a repeated member the last counts,
// though a client or proxy that checked the first saw another): each is 400 INVALID_JSON saying where.
func TestJSONThatDecodersRepairIsRefused(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	cases := []struct{ name, body, want string }{
		{"invalid UTF-8", "{\"name\":\"a\xffb\"}", "not valid UTF-8 (or has a lone surrogate) at /name"},
		{"a lone surrogate", `{"name":"a\ud800b"}`, "not valid UTF-8 (or has a lone surrogate) at /name"},
		{"a repeated member", `{"name":"a","name":"b"}`, "repeats the member at /name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, "POST", srv.URL+"/v1/lists", key, c.body)
			expect(t, r, http.StatusBadRequest, "INVALID_JSON")
			if !strings.Contains(string(r.Body), c.want) {
				t.Fatalf("body %s, want it to say %q", r.Body, c.want)
			}
		})
	}
	// A surrogate pair is one valid character, and stays accepted.
	expect(t, do(t, "POST", srv.URL+"/v1/lists", key, `{"name":"smile \ud83d\ude00"}`), http.StatusCreated, "")

	// The incoming endpoint answers in its string form; a repeated messageSid would otherwise store the
	// message under the second id.
	r := do(t, "POST", srv.URL+incomingEndpoint, key, `{"customData":{"messageSid":"a","messageSid":"b","fromId":"u","toId":"b","body":"x"}}`)
	expect(t, r, http.StatusBadRequest, "")
	if !strings.Contains(string(r.Body), "repeats the member at /customData/messageSid") {
		t.Fatalf("body %s, want the repeated member named", r.Body)
	}
}
