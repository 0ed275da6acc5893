package api_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
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
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	host := strings.TrimPrefix(srv.URL, "http://")
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
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a 100 MB Content-Length: %v", err)
			}
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d, want 413: %.200s", res.StatusCode, body)
			}
			r := response{Status: res.StatusCode, Body: body}
			if path == incomingEndpoint {
				if msg, _ := r.JSON(t)["error"].(string); msg == "" {
					t.Fatalf("413 on the incoming endpoint without the string error form: %s", body)
				}
			} else if code := r.errorCode(t); code != "PAYLOAD_TOO_LARGE" {
				t.Fatalf("413 with code %q: %s", code, body)
			}
		})
		t.Run("streamed "+path, func(t *testing.T) {
			req, err := http.NewRequest("POST", srv.URL+path, &zeros{left: size})
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-api-key", key)
			res, err := httpClient.Do(req)
			if err != nil {
				// The server closed the connection while the client was still sending (it stops
				// reading past the limit): refused, which is what matters.
				t.Logf("cut off: %v", err)
			} else {
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusRequestEntityTooLarge {
					t.Fatalf("status %d, want 413: %.200s", res.StatusCode, body)
				}
			}
		})
		expect(t, do(t, "GET", srv.URL+"/healthz", "", nil), http.StatusOK, "")
	}
	if grown := int64(heap()) - int64(before); grown > 32<<20 {
		t.Fatalf("heap in use grew by %d MiB after refusing the bodies", grown>>20)
	}
}
