package api_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// wireBytes sends a request written by hand over a connection of its own and returns everything the
// server sends back until it closes the connection: headers and whatever follows them.
func wireBytes(t *testing.T, srv *server, method, path string, headers ...string) []byte {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(srv.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := method + " " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
	for _, h := range headers {
		req += h + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Every GET route answers HEAD with GET's status and headers and no body, behind the same key and
// rate limit (api/server.go routes).
func TestHeadOnGetRoutes(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	contactID := newContact(t, srv, key, "+14155558801")
	listID := newList(t, srv, key, "Head")

	paths := []struct {
		path   string
		keyed  bool
		stable bool // the same body every time: Content-Length is compared too
	}{
		{"/v1/contacts/" + contactID, true, true},
		{"/v1/contacts?phoneNumber=%2B14155558801", true, true},
		{"/v1/lists", true, true},
		{"/v1/lists/" + listID, true, true},
		{"/v1/lists/" + listID + "/contacts", true, true},
		{"/v1/credits", true, false},
		{"/v1/openapi.json", false, true},
		{"/healthz", false, false},
		{"/readyz", false, false},
		{"/metrics", false, false},
	}
	for _, tc := range paths {
		t.Run(tc.path, func(t *testing.T) {
			get := do(t, "GET", srv.URL+tc.path, key, nil)
			head := do(t, "HEAD", srv.URL+tc.path, key, nil)
			if head.Status != get.Status || get.Status != http.StatusOK {
				t.Fatalf("HEAD %d, GET %d: %s", head.Status, get.Status, get.Body)
			}
			if len(head.Body) != 0 {
				t.Errorf("HEAD has a body: %q", head.Body)
			}
			if len(get.Body) == 0 {
				t.Errorf("GET has no body")
			}
			names := []string{"Content-Type", "X-Request-Id"}
			if tc.keyed {
				names = append(names, "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit")
			}
			for _, name := range names {
				if get.Header.Get(name) == "" || head.Header.Get(name) == "" {
					t.Errorf("%s: GET %q, HEAD %q", name, get.Header.Get(name), head.Header.Get(name))
				}
			}
			if got, want := head.Header.Get("Content-Type"), get.Header.Get("Content-Type"); got != want {
				t.Errorf("Content-Type: HEAD %q, GET %q", got, want)
			}
			if tc.stable {
				if got, want := head.Header.Get("Content-Length"), get.Header.Get("Content-Length"); got != want {
					t.Errorf("Content-Length: HEAD %q, GET %q", got, want)
				}
			}
		})
	}

	t.Run("no body on the wire", func(t *testing.T) {
		raw := wireBytes(t, srv, "HEAD", "/v1/contacts/"+contactID, "x-api-key: "+key)
		header, rest, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
		if !ok || !bytes.HasPrefix(header, []byte("HTTP/1.1 200 ")) {
			t.Fatalf("response: %q", raw)
		}
		if len(rest) != 0 {
			t.Fatalf("%d bytes after the headers: %q", len(rest), rest)
		}
	})

	t.Run("without a key: 401", func(t *testing.T) {
		r := do(t, "HEAD", srv.URL+"/v1/lists", "", nil)
		expect(t, r, http.StatusUnauthorized, "")
		if len(r.Body) != 0 || r.Header.Get("X-Request-Id") == "" || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("headers %v, body %q", r.Header, r.Body)
		}
	})

	t.Run("an unknown id: 404", func(t *testing.T) {
		for _, path := range []string{"/v1/contacts/ctc_unknown", "/v1/lists/lst_unknown"} {
			r := do(t, "HEAD", srv.URL+path, key, nil)
			expect(t, r, http.StatusNotFound, "")
			if len(r.Body) != 0 || r.Header.Get("X-RateLimit-Limit") == "" {
				t.Fatalf("%s: headers %v, body %q", path, r.Header, r.Body)
			}
		}
	})

	t.Run("a path without GET: 405", func(t *testing.T) {
		r := do(t, "HEAD", srv.URL+"/v1/api_key", key, nil)
		expect(t, r, http.StatusMethodNotAllowed, "")
		if r.Header.Get("Allow") != "POST" {
			t.Fatalf("Allow %q", r.Header.Get("Allow"))
		}
	})

	t.Run("HEAD counts against the rate limit", func(t *testing.T) {
		limited := startServer(t, "RATE_LIMIT_PER_MINUTE=2")
		_, key := newAccount(t)
		for i := 0; i < 2; i++ {
			expect(t, do(t, "HEAD", limited.URL+"/v1/lists", key, nil), http.StatusOK, "")
		}
		r := do(t, "HEAD", limited.URL+"/v1/lists", key, nil)
		expect(t, r, http.StatusTooManyRequests, "")
		if r.Header.Get("Retry-After") == "" {
			t.Fatalf("no Retry-After: %v", r.Header)
		}
	})
}
