package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// soakCase is one hostile request of TestHostileInputSoakKeepsMemorySteady. It is sent as raw bytes on
// its own connection, so that header values and request lines with CR, LF or NUL (which net/http
// refuses to send) reach the server exactly as written.
type soakCase struct {
	name string
	raw  []byte
	// want is the statuses allowed. form is the error body's form: "string" on the incoming endpoint,
	// "object" elsewhere, "" for a request that is accepted.
	want []int
	form string
}

// soakMarker, wherever a request carries it (ids, keys, request ids, messageSids, cursors), is replaced
// by a number unique to each send: a cache or registry keyed by such input would grow with the soak.
const soakMarker = "Zq000000"

// soakAnswer is what came back for one raw request.
type soakAnswer struct {
	status int
	header http.Header
	body   []byte
}

// soakRequest is the request raw's request line names, for checking its answer (wireRequest).
func soakRequest(raw []byte) *http.Request {
	line, _, _ := bytes.Cut(raw, []byte("\r\n"))
	method, rest, _ := bytes.Cut(line, []byte(" "))
	target, _, _ := bytes.Cut(rest, []byte(" "))
	return wireRequest(string(method), string(target))
}

// sendRaw writes raw on a new connection and reads one response.
func sendRaw(host string, raw []byte) (soakAnswer, error) {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		return soakAnswer{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	// A server that answers before reading everything (431) may close while the client is still
	// writing; the answer it sent first is what counts, so a write error matters only when no answer
	// can be read.
	_, werr := conn.Write(raw)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		if werr != nil {
			return soakAnswer{}, fmt.Errorf("write: %v; read: %v", werr, err)
		}
		return soakAnswer{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return soakAnswer{}, fmt.Errorf("reading the body of a %d: %v", res.StatusCode, err)
	}
	return soakAnswer{status: res.StatusCode, header: res.Header, body: body}, nil
}

// TestHostileInputSoakKeepsMemorySteady sends ~2,500 hostile requests, every category of issue
// 7 (deep nesting, invalid UTF-8, NUL bytes, huge numbers, duplicate keys, header and query injection,
// very long ids, megabytes of garbage under the body limit, bodies declared or streamed past it), from
// 8 clients at once, with one valid incoming message per round so that real work happens too. Each
// hostile request gets its precise 4xx in the endpoint's error form (never a 5xx or a dropped
// connection), each valid one a 200; afterwards the heap (the server runs in this process) and the
// goroutine count are back where they were after the warm-up.
func TestHostileInputSoakKeepsMemorySteady(t *testing.T) {
	const (
		rounds      = 50
		concurrency = 8
		// Requests of heavySize bytes or more (the megabytes of garbage and text) are sent every
		// heavyEvery rounds: under the race detector each costs as much as a hundred small ones.
		heavySize  = 1 << 20
		heavyEvery = 10
		// heapBound is the growth of the heap in use allowed over the soak (measured: under 1 MiB). A
		// leak of 4 KiB per request would exceed it: the test refuses to count a run of fewer than
		// heapBound/4 KiB = 1,024 requests, and sends ~2,500.
		heapBound = 4 << 20
		// goroutineSlack covers idle server workers and pooled connections beyond those the warm-up
		// opened; a goroutine left per request or per connection would be thousands.
		goroutineSlack = 20
	)
	srv := startServer(t, "RATE_LIMIT_PER_MINUTE=1000000")
	_, key := newAccount(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	const inc = incomingEndpoint

	// request builds a raw request with the key, a JSON body and Connection: close; extra header lines
	// are written as given.
	request := func(method, target string, body []byte, headers ...string) []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\nConnection: close\r\n", method, target, host, key)
		if body != nil {
			fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
		}
		for _, h := range headers {
			b.WriteString(h + "\r\n")
		}
		b.WriteString("\r\n")
		b.Write(body)
		return b.Bytes()
	}
	// withKeyHeader replaces the x-api-key line of a request.
	withKeyHeader := func(raw []byte, line string) []byte {
		return bytes.Replace(raw, []byte("x-api-key: "+key), []byte(line), 1)
	}
	// declared announces a body of size bytes and sends none: the answer must come before it is read.
	declared := func(target, size string) []byte {
		return []byte(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n", target, host, key, size))
	}
	incoming := func(customData string, rest ...string) []byte {
		return request("POST", inc, []byte(`{"customData":{`+customData+`}`+strings.Join(rest, "")+`}`))
	}
	sid := "soak-" + soakMarker
	long := strings.Repeat("x", 10000-len(soakMarker)) + soakMarker
	digits := strings.Repeat("9", 400)
	garbage := make([]byte, 4<<20)
	rng := rand.New(rand.NewChaCha8([32]byte{7}))
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	garbage[0] = 0xfe // not the start of any JSON value, whatever the seed

	s, o := "string", "object"
	cases := []soakCase{
		// Deep nesting: encoding/json stops at 10,000 levels.
		{"100,000 nested arrays", request("POST", inc, []byte(strings.Repeat("[", 100000)+strings.Repeat("]", 100000))), []int{400}, s},
		{"100,000 unclosed arrays", request("POST", "/v1/contacts", []byte(strings.Repeat("[", 100000))), []int{400}, o},
		{"50,000 nested objects in customData", request("POST", inc, []byte(`{"customData":`+strings.Repeat(`{"a":`, 50000)+`1`+strings.Repeat(`}`, 50000)+`}`)), []int{400}, s},
		{"100,000 unclosed objects", request("POST", "/v1/lists", []byte(strings.Repeat(`{"a":`, 100000))), []int{400}, o},

		// Invalid UTF-8 where JSON has no string to hide it in.
		{"invalid UTF-8 as the body", request("POST", inc, []byte("\xff\xfe\xfd")), []int{400}, s},
		{"invalid UTF-8 after the object", incoming(`"messageSid":"`+sid+`","fromId":"u","toId":"b","body":"x"`, "\xff"), []int{400}, s},
		{"invalid UTF-8 in an email lookup", request("GET", "/v1/contacts?email=%FF%FE"+soakMarker+"%40b.co", nil), []int{400}, o},
		{"invalid UTF-8 in an id", request("GET", "/v1/messages/%FF%FE%FD"+soakMarker, nil), []int{404}, o},

		// NUL bytes.
		{"raw NUL in a JSON string", incoming("\"messageSid\":\"" + sid + "\",\"fromId\":\"u\",\"toId\":\"b\",\"body\":\"x\x00y\""), []int{400}, s},
		{"escaped NUL in the message text", incoming(`"messageSid":"` + sid + `","fromId":"u","toId":"b","body":"x\u0000y"`), []int{400}, s},
		{"NUL bytes as the body", request("POST", inc, []byte("\x00\x00\x00")), []int{400}, s},
		{"escaped NUL in a list name", request("POST", "/v1/lists", []byte(`{"name":"a\u0000`+soakMarker+`"}`)), []int{400}, o},
		{"NUL in a phone lookup", request("GET", "/v1/contacts?phoneNumber=%2B1415555%000123", nil), []int{400}, o},
		{"NUL bytes in an id", request("GET", "/v1/contacts/"+strings.Repeat("%00", 3000)+soakMarker+"/messages", nil), []int{404}, o},
		{"raw NUL in the request line", request("GET", "/v1/lists?cursor=a\x00"+soakMarker, nil), []int{404}, o},

		// Huge numbers.
		{"1e400 as messageSid", incoming(`"messageSid":1e400,"fromId":"u","toId":"b","body":"x"`), []int{400}, s},
		{"a 400-digit status", incoming(`"messageSid":"` + sid + `","fromId":"u","toId":"b","body":"x","status":` + digits), []int{400}, s},
		{"1e400 as the body", request("POST", inc, []byte(`1e400`)), []int{400}, s},
		{"a 400-digit credit amount", request("POST", "/v1/subaccounts/credits", []byte(`{"email":"a@b.co","amount":`+digits+`}`)), []int{400}, o},
		{"1e400 as a credit amount", request("POST", "/v1/subaccounts/credits", []byte(`{"email":"a@b.co","amount":1e400}`)), []int{400}, o},
		{"a 400-digit limit", request("GET", "/v1/lists?limit="+digits, nil), []int{400}, o},
		{"a Content-Length beyond int64", declared("/v1/contacts", "99999999999999999999999"), []int{400}, o},

		// Duplicate keys: encoding/json keeps the last value, and that one is validated.
		{"duplicate text, the last empty", incoming(`"messageSid":"` + sid + `","fromId":"u","toId":"b","body":"x","body":""`), []int{400}, s},
		// A repeated object is merged into the first (the fields it leaves out keep their values).
		{"duplicate customData, the last with empty text", request("POST", inc, []byte(`{"customData":{"messageSid":"`+sid+`","fromId":"u","toId":"b","body":"x"},"customData":{"body":""}}`)), []int{400}, s},
		{"duplicate phone, the last not a phone", request("POST", "/v1/contacts", []byte(`{"phone":"+14155550123","phone":"call `+soakMarker+`"}`)), []int{400}, o},

		// Repaired by encoding/json if it were read alone (U+FFFD, the last value wins), so refused
		// before it by checkJSONText.
		{"invalid UTF-8 in the message text", incoming("\"messageSid\":\"" + sid + "\",\"fromId\":\"u\",\"toId\":\"b\",\"body\":\"\xff\xfe\""), []int{400}, s},
		{"a lone surrogate in the message text", incoming(`"messageSid":"` + sid + `","fromId":"u","toId":"b","body":"\ud800"`), []int{400}, s},
		{"duplicate messageSid, both valid", incoming(`"messageSid":"` + sid + `","messageSid":"soak-k","fromId":"u","toId":"b","body":"x"`), []int{400}, s},
		{"invalid UTF-8 in a list name", request("POST", "/v1/lists", []byte("{\"name\":\"\xff"+soakMarker+"\"}")), []int{400}, o},
		{"a lone surrogate in a webhook URL", request("PUT", "/v1/settings/webhook", []byte(`{"url":"http://example.com/\udc00`+soakMarker+`"}`)), []int{400}, o},
		{"duplicate list names, both valid", request("POST", "/v1/lists", []byte(`{"name":"a`+soakMarker+`","name":"b"}`)), []int{400}, o},

		// Header and query injection.
		{"CRLF and a header in x-api-key", withKeyHeader(request("GET", "/v1/lists", nil), "x-api-key: bad"+soakMarker+"\r\nInjected: 1"), []int{401}, o},
		{"bare LF and a header in x-api-key", withKeyHeader(request("GET", "/v1/lists", nil), "x-api-key: bad"+soakMarker+"\nInjected: 1"), []int{401}, o},
		{"NUL in x-api-key", withKeyHeader(request("GET", "/v1/lists", nil), "x-api-key: "+key+"\x00"+soakMarker), []int{401}, o},
		{"CRLF and a header in X-Request-Id", request("GET", "/v1/messages/msg_x", nil, "X-Request-Id: a"+soakMarker+"\r\nInjected: 1"), []int{404}, o},
		{"NUL in X-Request-Id", request("GET", "/v1/messages/msg_x", nil, "X-Request-Id: a\x00"+soakMarker), []int{404}, o},
		{"a 20,000-byte header", request("GET", "/v1/messages/msg_x", nil, "X-Long: "+long+long), []int{431}, o},
		// A method name that is not an HTTP token is refused in the object form (otherMethods).
		{"an unknown method with a NUL", request("G\x00T", "/v1/lists", nil), []int{400}, o},
		{"an unknown method", request("BREW", "/v1/lists", nil), []int{405}, o},
		{"CRLF in a phone lookup", request("GET", "/v1/contacts?phoneNumber=%2B14155550123%0D%0AInjected:%20"+soakMarker, nil), []int{400}, o},
		{"CRLF in an email lookup", request("GET", "/v1/contacts?email=a%40b.co%0D%0ABcc:%20"+soakMarker+"%40y.co", nil), []int{400}, o},
		{"CRLF in a limit", request("GET", "/v1/lists?limit=1%0D%0AInjected:%20"+soakMarker, nil), []int{400}, o},
		{"SQL in a limit", request("GET", "/v1/lists?limit=1;DROP%20TABLE%20lists", nil), []int{400}, o},
		{"the key in the query of a header-only endpoint", withKeyHeader(request("POST", "/v1/subaccounts/credits?apiKey="+key, []byte(`{}`)), "X-Other: 1"), []int{401}, o},

		// Very long ids.
		{"a 10,000-character message id", request("GET", "/v1/messages/"+long, nil), []int{404}, o},
		{"a 10,000-character contact id", request("POST", "/v1/contacts/"+long+"/messages", []byte(`{"body":"x"}`)), []int{404}, o},

		// Meta's webhooks: no API key there; a batch that is not signed is refused before it is read,
		// one that is signed but not JSON (or nested beyond reason) is malformed.
		{"an unsigned Messenger batch", request("POST", "/v1/channels/messenger/inbound", []byte(`{"object":"page","entry":[{"id":"1`+soakMarker+`"}]}`)), []int{401}, o},
		{"100,000 nested arrays to the Instagram webhook", request("POST", "/v1/channels/instagram/inbound", []byte(strings.Repeat("[", 100000)+strings.Repeat("]", 100000)), "X-Hub-Signature-256: sha256=00"), []int{400}, o},
		{"invalid UTF-8 to the Messenger webhook", request("POST", "/v1/channels/messenger/inbound", []byte("\xff\xfe"+soakMarker), "X-Hub-Signature-256: sha256=00"), []int{400}, o},
		{"a Messenger batch whose entry has no id", request("POST", "/v1/channels/messenger/inbound", []byte(`{"object":"page","entry":[{"messaging":[{"message":{"text":"`+soakMarker+`"}}]}]}`), "X-Hub-Signature-256: sha256=00"), []int{400}, o},
		{"a lone surrogate in the bot's instructions", request("PUT", "/v1/settings/bot", []byte(`{"instructions":"\udc00`+soakMarker+`"}`)), []int{400}, o},
		{"a 10,000-character campaign id", request("PATCH", "/v1/campaigns/"+long, []byte(`{}`)), []int{404}, o},
		{"a 10,000-character messageSid", incoming(`"messageSid":"` + long + `","fromId":"u","toId":"b","body":"x"`), []int{400}, s},
		{"a 10,000-character cursor", request("GET", "/v1/lists?cursor="+long, nil), []int{400}, o},
		{"a 20,000-character id, past the header buffer", request("GET", "/v1/messages/"+long+long, nil), []int{431}, o},

		// Large bodies under the limit (10 MiB), and bodies declared past it.
		{"4 MiB of random bytes", request("POST", inc, garbage), []int{400}, s},
		{"1 MiB of message text", incoming(`"messageSid":"` + sid + `","fromId":"u","toId":"b","body":"` + strings.Repeat("a", 1<<20) + `"`), []int{400}, s},
		{"100 MB declared to contacts", declared("/v1/contacts", "104857600"), []int{413}, o},
		{"100 MB declared to the incoming endpoint", declared(inc, "104857600"), []int{413}, s},
		{"2^62 bytes declared", declared("/v1/lists", "4611686018427387904"), []int{413}, o},
	}
	varies := make([]bool, len(cases))
	for i, c := range cases {
		varies[i] = bytes.Contains(c.raw, []byte(soakMarker))
	}

	var (
		sent, hostile, valid, serial atomic.Int64
		failures                     atomic.Int64
	)
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 20 {
			t.Errorf(format, args...)
		}
	}
	check := func(c soakCase, a soakAnswer) {
		if !slices.Contains(c.want, a.status) {
			fail("%s: status %d, want %v: %.300s", c.name, a.status, c.want, a.body)
			return
		}
		if a.header.Get("Injected") != "" || strings.ContainsAny(a.header.Get("X-Request-Id"), "\r\n\x00 :") {
			fail("%s: injected header echoed: %v", c.name, a.header)
		}
		var answer map[string]any
		if err := json.Unmarshal(a.body, &answer); err != nil {
			fail("%s: status %d with a body that is not a JSON object: %.300q", c.name, a.status, a.body)
			return
		}
		switch c.form {
		case "string":
			if msg, _ := answer["error"].(string); msg == "" {
				fail("%s: status %d without the string error form: %.300s", c.name, a.status, a.body)
			}
		case "object":
			e, _ := answer["error"].(map[string]any)
			if code, _ := e["code"].(string); code == "" {
				fail("%s: status %d without the object error form: %.300s", c.name, a.status, a.body)
			} else if msg, _ := e["message"].(string); msg == "" {
				fail("%s: status %d without a message: %.300s", c.name, a.status, a.body)
			}
		default:
			if id, _ := answer["messageId"].(string); id == "" || answer["success"] != true {
				fail("%s: 200 without success and messageId: %.300s", c.name, a.body)
			}
		}
	}
	// The warm-up's answers are checked against the OpenAPI document as well: once per case is enough
	// (the rounds repeat them), and it loads the document before the heap is measured.
	var againstDocument atomic.Bool
	checkDocumented := func(raw []byte, a soakAnswer) {
		if againstDocument.Load() {
			checkResponse(t, soakRequest(raw), response{Status: a.status, Header: a.header, Body: a.body})
		}
	}
	sendHostile := func(i int) {
		c, raw := cases[i], cases[i].raw
		if varies[i] {
			unique := fmt.Sprintf("Zq%06d", serial.Add(1)%1_000_000)
			raw = bytes.ReplaceAll(raw, []byte(soakMarker), []byte(unique))
		}
		a, err := sendRaw(host, raw)
		sent.Add(1)
		hostile.Add(1)
		if err != nil {
			fail("%s: no answer: %v", c.name, err)
			return
		}
		check(c, a)
		checkDocumented(raw, a)
	}
	sendValid := func(round int) {
		sid := fmt.Sprintf("soak-valid-%d-%d", time.Now().UnixNano(), round)
		body := `{"customData":{"messageSid":"` + sid + `","fromId":"soak-user","toId":"biz","body":"hello"}}`
		raw := request("POST", inc, []byte(body))
		a, err := sendRaw(host, raw)
		sent.Add(1)
		valid.Add(1)
		if err != nil {
			fail("valid message %s: %v", sid, err)
			return
		}
		checkDocumented(raw, a)
		var answer map[string]any
		_ = json.Unmarshal(a.body, &answer)
		if id, _ := answer["messageId"].(string); a.status != http.StatusOK || id == "" || answer["duplicate"] != nil {
			fail("valid message %s: status %d: %.300s", sid, a.status, a.body)
		}
	}
	// run sends rounds first..last-1 (every case and one valid message each) from concurrency clients.
	run := func(first, last int) {
		jobs := make(chan func())
		var wg sync.WaitGroup
		for range concurrency {
			wg.Go(func() {
				for job := range jobs {
					job()
				}
			})
		}
		for round := first; round < last; round++ {
			jobs <- func() { sendValid(round) }
			for i, c := range cases {
				if len(c.raw) < heavySize || round%heavyEvery == 0 {
					jobs <- func() { sendHostile(i) }
				}
			}
		}
		close(jobs)
		wg.Wait()
	}
	// streamed sends an 11 MiB body without a Content-Length, which the server reads up to the limit:
	// it answers 413, or closes the connection while the client is still sending (refused either way,
	// as in TestHundredMegabyteBodiesAreRefused).
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	streamed := func() {
		req, err := http.NewRequest("POST", srv.URL+inc, &zeros{left: 11 << 20})
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", key)
		sent.Add(1)
		hostile.Add(1)
		res, err := client.Do(req)
		if err != nil {
			return
		}
		r, err := readChecked(t, req, res)
		if err == nil && r.Status != http.StatusRequestEntityTooLarge {
			fail("streamed 11 MiB: status %d, want 413: %.300s", r.Status, r.Body)
		}
	}
	measure := func() (inuse, alloc uint64, goroutines int) {
		runtime.GC()
		runtime.GC()
		debug.FreeOSMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse, m.HeapAlloc, runtime.NumGoroutine()
	}

	// Warm-up: one round, so that the server's pools, workers and connections reach their working size.
	againstDocument.Store(true)
	run(0, 1)
	againstDocument.Store(false)
	if t.Failed() {
		t.FailNow()
	}
	sent.Store(0)
	hostile.Store(0)
	valid.Store(0)
	inuse0, alloc0, g0 := measure()

	start := time.Now()
	streamed()
	run(1, rounds+1)
	streamed()
	took := time.Since(start)
	// Still up. (Not through do: its OpenAPI check would load the document into the heap measured.)
	if a, err := sendRaw(host, []byte("GET /healthz HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")); err != nil || a.status != http.StatusOK {
		t.Errorf("healthz after the soak: %v %d %s", err, a.status, a.body)
	}
	client.CloseIdleConnections()
	n := sent.Load()
	if n*4<<10 <= heapBound {
		t.Fatalf("only %d requests: a leak of 4 KiB per request would stay under the %d MiB bound", n, heapBound>>20)
	}

	inuse1, alloc1, g1 := measure()
	runtime.KeepAlive(cases) // live in both measurements, or its ~6 MiB of requests would hide a leak
	for deadline := time.Now().Add(5 * time.Second); g1 > g0+goroutineSlack && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		g1 = runtime.NumGoroutine()
	}
	t.Logf("%d requests in %v from %d clients (%d hostile of %d kinds, %d valid): heap in use %.1f -> %.1f MiB (%+.1f), heap alloc %.1f -> %.1f MiB (%+.1f), goroutines %d -> %d",
		n, took.Round(time.Millisecond), concurrency, hostile.Load(), len(cases)+1, valid.Load(),
		mib(inuse0), mib(inuse1), mib(inuse1)-mib(inuse0), mib(alloc0), mib(alloc1), mib(alloc1)-mib(alloc0), g0, g1)
	if grown := int64(inuse1) - int64(inuse0); grown > heapBound {
		t.Errorf("heap in use grew by %.1f MiB over %d requests (bound %d MiB): something is kept per request",
			float64(grown)/(1<<20), n, heapBound>>20)
	}
	if g1 > g0+goroutineSlack {
		t.Errorf("%d goroutines after the soak, %d before (slack %d): something is left running", g1, g0, goroutineSlack)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
