package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// rawRequest sends one request, written by hand so that any method goes out as is, over a connection
// of its own (wireBytes), and reads the response, checked against the OpenAPI document.
func rawRequest(t *testing.T, srv *server, method, path string, headers ...string) response {
	t.Helper()
	req := wireRequest(method, path)
	res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(wireBytes(t, srv, method, path, headers...))), req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	r, err := readChecked(t, req, res)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A method Fiber does not know (it would answer a plain-text 400 by itself) goes through the
// middleware and the router like a known method the path does not have: 405 METHOD_NOT_ALLOWED with
// Allow on a path that exists, 404 on one that does not, object-form errors, X-Request-Id, an access
// log line with the method sent; one that is not an HTTP token is a 400 (api/middleware.go
// otherMethods).
func TestUnknownMethods(t *testing.T) {
	out := &logBuffer{}
	srv := startServerWith(t, slog.New(slog.NewJSONHandler(out, nil)))
	_, key := newAccount(t)
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	errorSchema := c.doc.Components.Schemas["Error"].Value

	cases := []struct {
		method, path string
		headers      []string
		status       int
		code, allow  string
	}{
		{"BREW", "/v1/contacts", nil, 405, "METHOD_NOT_ALLOWED", "GET, HEAD, POST"},
		{"BREW", "/v1/contacts", []string{"x-api-key: " + key}, 405, "METHOD_NOT_ALLOWED", "GET, HEAD, POST"},
		{"PROPFIND", "/v1/contacts/ctc_unknown", []string{"x-api-key: " + key}, 405, "METHOD_NOT_ALLOWED", "GET, HEAD"},
		{"PROPFIND", "/v1/lists/lst_1/import", nil, 405, "METHOD_NOT_ALLOWED", "POST"},
		{"PROPFIND", "/v1/nope", nil, 404, "NOT_FOUND", ""},
		{"BREW", "/healthz", nil, 405, "METHOD_NOT_ALLOWED", "GET, HEAD"},
		{"M-SEARCH", "/v1/openapi.json", nil, 405, "METHOD_NOT_ALLOWED", "GET, HEAD"},
		// Methods are case-sensitive: "get" is not GET.
		{"get", "/v1/lists", []string{"x-api-key: " + key}, 405, "METHOD_NOT_ALLOWED", "GET, HEAD, POST"},
		// The method Fiber's stand-in has, sent by a client, is one more unknown method.
		{"_OTHER", "/v1/lists", nil, 405, "METHOD_NOT_ALLOWED", "GET, HEAD, POST"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := rawRequest(t, srv, tc.method, tc.path, tc.headers...)
			expect(t, r, tc.status, tc.code)
			if got := r.Header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if r.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var body any
			_ = json.Unmarshal(r.Body, &body)
			if err := errorSchema.VisitJSON(body); err != nil {
				t.Errorf("not the document's Error: %v\n%s", err, r.Body)
			}
		})
	}

	t.Run("a method that is not a token: 400", func(t *testing.T) {
		for _, method := range []string{"G\x00T", "BR(EW)", "PUT\x7f"} {
			r := rawRequest(t, srv, method, "/v1/lists", "x-api-key: "+key)
			expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
			if r.Header.Get("X-Request-Id") == "" {
				t.Errorf("%q: no X-Request-Id", method)
			}
		}
	})

	t.Run("the incoming endpoint answers in its string form", func(t *testing.T) {
		r := rawRequest(t, srv, "BREW", incomingEndpoint)
		if r.Status != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "POST" || r.Header.Get("X-Request-Id") == "" {
			t.Fatalf("status %d, headers %v", r.Status, r.Header)
		}
		var body map[string]any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		if msg, ok := body["error"].(string); !ok || msg == "" {
			t.Fatalf("not the string form: %s", r.Body)
		}
	})

	t.Run("a client's request id is echoed", func(t *testing.T) {
		r := rawRequest(t, srv, "BREW", "/v1/contacts", "X-Request-Id: brew-1")
		if got := r.Header.Get("X-Request-Id"); got != "brew-1" {
			t.Fatalf("X-Request-Id %q", got)
		}
		line := find(out.lines(t), map[string]string{"msg": "request", "request_id": "brew-1"})
		if line == nil {
			t.Fatalf("no access log line for the request:\n%s", out.text())
		}
		if line["method"] != "BREW" || line["status"] != 405.0 {
			t.Fatalf("access log line %v, want method BREW and status 405", line)
		}
	})

	t.Run("the request metrics count one method for all unknown ones", func(t *testing.T) {
		metrics := string(do(t, "GET", srv.URL+"/metrics", "", nil).Body)
		if !strings.Contains(metrics, `method="_OTHER"`) || strings.Contains(metrics, `method="BREW"`) {
			t.Fatalf("want the label method=\"_OTHER\" and no method=\"BREW\" in /metrics")
		}
	})

	t.Run("through net/http, checked against the document", func(t *testing.T) {
		expect(t, do(t, "BREW", srv.URL+"/v1/lists", key, nil), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	})

	t.Run("known methods are untouched", func(t *testing.T) {
		expect(t, rawRequest(t, srv, "GET", "/v1/lists", "x-api-key: "+key), http.StatusOK, "")
		expect(t, rawRequest(t, srv, "DELETE", "/v1/lists"), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
	})

	t.Run("under the HTTPS rule of /v1", func(t *testing.T) {
		strict := startServer(t, "REQUIRE_HTTPS=true")
		expect(t, rawRequest(t, strict, "BREW", "/v1/contacts"), http.StatusForbidden, "HTTPS_REQUIRED")
	})
}
