package jobs

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"funnelchat/models"
)

// receivedWebhook is what a sink saw of one request.
type receivedWebhook struct {
	header http.Header
	body   []byte
}

// webhookSink is a real HTTP server that records every request and answers with respond.
type webhookSink struct {
	*httptest.Server
	mu       sync.Mutex
	received []receivedWebhook
}

func newWebhookSink(t *testing.T, respond http.HandlerFunc) *webhookSink {
	t.Helper()
	sink := &webhookSink{}
	sink.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sink.mu.Lock()
		sink.received = append(sink.received, receivedWebhook{header: r.Header.Clone(), body: body})
		sink.mu.Unlock()
		respond(w, r)
	}))
	t.Cleanup(sink.Close)
	return sink
}

func (s *webhookSink) requests() []receivedWebhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]receivedWebhook(nil), s.received...)
}

// testRequest is a delivery of a small payload to url, signed with a fresh secret.
func testRequest(url string) WebhookRequest {
	return WebhookRequest{
		URL:     url,
		Secret:  NewWebhookSecret(),
		ID:      "msg_01JD7Q0Z5X3V8K2M4N6P8R0T2W",
		Payload: []byte(`{"messageId":"msg_01JD7Q0Z5X3V8K2M4N6P8R0T2W","text":"hello"}`),
	}
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
}

func TestNewWebhookSecret(t *testing.T) {
	a, b := NewWebhookSecret(), NewWebhookSecret()
	if a == b {
		t.Fatalf("two secrets are equal: %s", a)
	}
	rest, ok := strings.CutPrefix(a, "whsec_")
	if !ok {
		t.Fatalf("secret %q lacks the whsec_ prefix", a)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(key) != 32 {
		t.Fatalf("secret %q: want standard base64 of 32 bytes, got %d bytes, err %v", a, len(key), err)
	}
}

func TestSignWebhook(t *testing.T) {
	t.Run("matches the Standard Webhooks example", func(t *testing.T) {
		// The worked example of the Standard Webhooks spec and Svix's documentation.
		got, err := SignWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek",
			time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
		if err != nil {
			t.Fatal(err)
		}
		if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
			t.Fatalf("signature = %s, want %s", got, want)
		}
	})
	t.Run("secret that is not base64", func(t *testing.T) {
		if _, err := SignWebhook("whsec_not base64!", "id", time.Now(), nil); err == nil {
			t.Fatal("want an error")
		}
	})
	t.Run("empty secret", func(t *testing.T) {
		if _, err := SignWebhook("whsec_", "id", time.Now(), nil); err == nil {
			t.Fatal("want an error")
		}
	})
}

func TestSendSignsPerStandardWebhooks(t *testing.T) {
	sink := newWebhookSink(t, status(http.StatusOK))
	req := testRequest(sink.URL)

	res := NewWebhookSender(5*time.Second, true).Send(context.Background(), req)
	if !res.OK() || res.Error != "" || res.StatusCode != 200 {
		t.Fatalf("result = %+v, want a 200 success", res)
	}
	got := sink.requests()
	if len(got) != 1 {
		t.Fatalf("sink received %d requests, want 1", len(got))
	}
	h, body := got[0].header, got[0].body
	if string(body) != string(req.Payload) {
		t.Errorf("body = %s, want %s", body, req.Payload)
	}
	for name, want := range map[string]string{
		"Content-Type": "application/json",
		"User-Agent":   "funnelchat-webhooks/1",
		"webhook-id":   req.ID,
	} {
		if v := h.Get(name); v != want {
			t.Errorf("header %s = %q, want %q", name, v, want)
		}
	}
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
		t.Errorf("webhook-timestamp = %q, want the current unix time", h.Get("webhook-timestamp"))
	}

	wh, err := standardwebhooks.NewWebhook(req.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, h); err != nil {
		t.Errorf("the official library rejects the signature: %v", err)
	}
	other, err := standardwebhooks.NewWebhook(NewWebhookSecret())
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Verify(body, h); err == nil {
		t.Error("the signature verifies with another secret")
	}
	if err := wh.Verify([]byte(`{"tampered":true}`), h); err == nil {
		t.Error("the signature verifies over another body")
	}
}

func TestSendKeepsWebhookIDAcrossAttempts(t *testing.T) {
	sink := newWebhookSink(t, status(http.StatusServiceUnavailable))
	sender := NewWebhookSender(5*time.Second, true)
	req := testRequest(sink.URL)
	for range 2 {
		sender.Send(context.Background(), req)
	}
	got := sink.requests()
	if len(got) != 2 {
		t.Fatalf("sink received %d requests, want 2", len(got))
	}
	for i, r := range got {
		if id := r.header.Get("webhook-id"); id != req.ID {
			t.Errorf("attempt %d: webhook-id = %q, want %q", i+1, id, req.ID)
		}
	}
}

func TestSendOutcomes(t *testing.T) {
	httpDate := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name           string
		respond        http.HandlerFunc
		wantStatus     int
		wantOK         bool
		wantRetryable  bool
		wantError      string // prefix of the error; "" means no error
		wantRetryAfter [2]time.Duration
	}{
		{
			name:       "2xx is success",
			respond:    status(http.StatusNoContent),
			wantStatus: 204, wantOK: true,
		},
		{
			name: "500 is retried, with an excerpt of the body",
			respond: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "database on fire", http.StatusInternalServerError)
			},
			wantStatus: 500, wantRetryable: true, wantError: "HTTP 500: database on fire",
		},
		{
			name: "410 is final",
			respond: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "gone", http.StatusGone)
			},
			wantStatus: 410, wantError: "HTTP 410: gone",
		},
		{
			name:       "400 is final",
			respond:    status(http.StatusBadRequest),
			wantStatus: 400, wantError: "HTTP 400",
		},
		{
			name:       "408 is retried",
			respond:    status(http.StatusRequestTimeout),
			wantStatus: 408, wantRetryable: true, wantError: "HTTP 408",
		},
		{
			name: "429 is retried after Retry-After seconds",
			respond: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			wantStatus: 429, wantRetryable: true, wantError: "HTTP 429",
			wantRetryAfter: [2]time.Duration{7 * time.Second, 7 * time.Second},
		},
		{
			name: "503 is retried after a Retry-After HTTP date",
			respond: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", httpDate)
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			wantStatus: 503, wantRetryable: true, wantError: "HTTP 503",
			wantRetryAfter: [2]time.Duration{80 * time.Second, 90 * time.Second},
		},
		{
			name: "a Retry-After beyond an hour is capped",
			respond: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "86400")
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			wantStatus: 503, wantRetryable: true, wantError: "HTTP 503",
			wantRetryAfter: [2]time.Duration{time.Hour, time.Hour},
		},
		{
			name: "an invalid Retry-After is ignored",
			respond: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "soon")
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			wantStatus: 503, wantRetryable: true, wantError: "HTTP 503",
		},
	}
	sender := NewWebhookSender(5*time.Second, true)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := newWebhookSink(t, tt.respond)
			res := sender.Send(context.Background(), testRequest(sink.URL))
			if res.StatusCode != tt.wantStatus || res.OK() != tt.wantOK || res.Retryable != tt.wantRetryable {
				t.Errorf("result = %+v, want status %d, OK %v, retryable %v",
					res, tt.wantStatus, tt.wantOK, tt.wantRetryable)
			}
			if tt.wantError == "" && res.Error != "" || !strings.HasPrefix(res.Error, tt.wantError) {
				t.Errorf("error = %q, want %q", res.Error, tt.wantError)
			}
			if res.RetryAfter < tt.wantRetryAfter[0] || res.RetryAfter > tt.wantRetryAfter[1] {
				t.Errorf("RetryAfter = %v, want within %v", res.RetryAfter, tt.wantRetryAfter)
			}
			if res.Duration <= 0 {
				t.Errorf("Duration = %v, want it measured", res.Duration)
			}
		})
	}
}

func TestSendExcerptIsBounded(t *testing.T) {
	sink := newWebhookSink(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		// Multi-byte runes so that byte 512 falls inside one, plus a NUL a database would refuse.
		_, _ = io.WriteString(w, "\x00"+strings.Repeat("é", 200_000))
	})
	res := NewWebhookSender(5*time.Second, true).Send(context.Background(), testRequest(sink.URL))
	excerpt, ok := strings.CutPrefix(res.Error, "HTTP 502: ")
	if !ok {
		t.Fatalf("error = %.80q, want HTTP 502 with an excerpt", res.Error)
	}
	if len(excerpt) > 512 || len(excerpt) < 500 || strings.Trim(excerpt, "é") != "" {
		t.Errorf("excerpt of %d bytes = %.40q..., want up to 512 bytes of whole runes without NUL", len(excerpt), excerpt)
	}
}

func TestSendDoesNotFollowRedirects(t *testing.T) {
	target := newWebhookSink(t, status(http.StatusOK))
	sink := newWebhookSink(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusFound)
	})
	res := NewWebhookSender(5*time.Second, true).Send(context.Background(), testRequest(sink.URL))
	if res.StatusCode != 302 || res.OK() || res.Retryable || res.Error != "HTTP 302: redirect not followed" {
		t.Errorf("result = %+v, want a final 302 failure", res)
	}
	if n := len(target.requests()); n != 0 {
		t.Errorf("redirect target received %d requests, want 0", n)
	}
}

func TestSendTimesOut(t *testing.T) {
	release := make(chan struct{})
	sink := newWebhookSink(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release) // runs before the sink's Close, which waits for the handler

	start := time.Now()
	res := NewWebhookSender(300*time.Millisecond, true).Send(context.Background(), testRequest(sink.URL))
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("Send took %v with a 300ms timeout", elapsed)
	}
	if res.StatusCode != 0 || !res.Retryable || res.Error != "timeout after 300ms" {
		t.Errorf("result = %+v, want a retryable timeout", res)
	}
}

func TestSendConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/hook"
	ln.Close()

	res := NewWebhookSender(5*time.Second, true).Send(context.Background(), testRequest(url))
	if res.StatusCode != 0 || !res.Retryable || res.Error != "connection refused" {
		t.Errorf("result = %+v, want a retryable connection refused", res)
	}
}

func TestSendInvalidInput(t *testing.T) {
	sender := NewWebhookSender(5*time.Second, true)
	for _, tt := range []struct {
		name string
		req  WebhookRequest
	}{
		{"unparsable URL", WebhookRequest{URL: "http://[::1", Secret: NewWebhookSecret()}},
		{"ftp URL", WebhookRequest{URL: "ftp://example.com/", Secret: NewWebhookSecret()}},
		{"bad secret", WebhookRequest{URL: "http://127.0.0.1:1/", Secret: "whsec_***"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := sender.Send(context.Background(), tt.req)
			if res.OK() || res.Retryable || res.Error == "" {
				t.Errorf("result = %+v, want a final failure", res)
			}
		})
	}
}

func TestSendRefusesPrivateDestinations(t *testing.T) {
	var hits atomic.Int32
	count := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	v4 := httptest.NewServer(count)
	t.Cleanup(v4.Close)
	_, v4Port, _ := net.SplitHostPort(v4.Listener.Addr().String())

	urls := []string{
		v4.URL,
		"http://localhost:" + v4Port + "/hook", // a name that resolves to loopback is refused at dial time
		"http://10.0.0.1/hook",
		"http://169.254.169.254/latest/meta-data/",
		"http://100.64.0.1:8443/hook",
		"http://0.0.0.0:" + v4Port + "/hook",
	}
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		v6 := httptest.NewUnstartedServer(count)
		v6.Listener.Close()
		v6.Listener = ln
		v6.Start()
		t.Cleanup(v6.Close)
		urls = append(urls, v6.URL, "http://[::ffff:127.0.0.1]:"+v4Port+"/hook")
	} else {
		t.Logf("no IPv6 loopback, [::1] not tested: %v", err)
	}

	sender := NewWebhookSender(2*time.Second, false)
	for _, url := range urls {
		t.Run(url, func(t *testing.T) {
			res := sender.Send(context.Background(), testRequest(url))
			if res.StatusCode != 0 || res.Retryable || !strings.HasPrefix(res.Error, "destination not allowed: ") {
				t.Errorf("result = %+v, want a final refusal", res)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("loopback servers received %d requests, want 0", n)
	}

	// The same servers are reachable when private destinations are allowed, so the refusals above are
	// the guard's doing.
	if res := NewWebhookSender(2*time.Second, true).Send(context.Background(), testRequest(v4.URL)); !res.OK() {
		t.Errorf("with allowPrivate: result = %+v, want success", res)
	}
}

func TestValidateWebhookURL(t *testing.T) {
	tests := []struct {
		name         string
		url          string
		allowPrivate bool
		wantErr      string // part of the message; "" means valid
	}{
		{"https public IP literal", "https://93.184.216.34/hook", false, ""},
		{"https public IP literal with port", "https://93.184.216.34:8443/hook?x=1", false, ""},
		{"https public IPv6 literal", "https://[2606:2800:220:1:248:1893:25c8:1946]/hook", false, ""},
		{"http refused without allowPrivate", "http://93.184.216.34/hook", false, "must use https"},
		{"http loopback with allowPrivate", "http://127.0.0.1:8080/hook", true, ""},
		{"unresolvable name with allowPrivate", "http://sink.invalid/hook", true, ""},
		{"ftp", "ftp://93.184.216.34/file", false, "http or https"},
		{"ftp with allowPrivate", "ftp://127.0.0.1/file", true, "http or https"},
		{"relative", "/hook", false, "absolute"},
		{"no scheme", "example.com/hook", false, "absolute"},
		{"empty", "", false, "required"},
		{"blank", "   ", false, "required"},
		{"too long", "https://93.184.216.34/" + strings.Repeat("a", 2048), false, "longer than 2048"},
		{"user and password", "https://user:pass@93.184.216.34/hook", false, "user name or password"},
		{"user only", "https://user@93.184.216.34/hook", true, "user name or password"},
		{"no host", "https:///hook", false, "host"},
		{"opaque", "https:hook", false, "host"},
		{"port zero", "https://93.184.216.34:0/hook", false, "port"},
		{"port too large", "https://93.184.216.34:70000/hook", false, "port"},
		{"not a URL", "https://93.184.216.34/%zz", false, "not a valid URL"},
		{"loopback", "https://127.0.0.1/hook", false, "not a public address"},
		{"IPv6 loopback", "https://[::1]/hook", false, "not a public address"},
		{"RFC 1918", "https://10.0.0.1/hook", false, "not a public address"},
		{"RFC 1918 172.16/12", "https://172.20.1.1/hook", false, "not a public address"},
		{"RFC 1918 192.168/16", "https://192.168.1.1/hook", false, "not a public address"},
		{"cloud metadata", "https://169.254.169.254/latest", false, "not a public address"},
		{"CGNAT", "https://100.64.0.1/hook", false, "not a public address"},
		{"IPv4-mapped loopback", "https://[::ffff:127.0.0.1]/hook", false, "not a public address"},
		{"ULA", "https://[fd00::1]/hook", false, "not a public address"},
		{"link-local with zone", "https://[fe80::1%25eth0]/hook", false, "not a public address"},
		{"name resolving to loopback", "https://localhost/hook", false, "resolves to a non-public address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateWebhookURL(context.Background(), tt.url, tt.allowPrivate)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateWebhookURL(%q) = %v, want valid", tt.url, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateWebhookURL(%q) = nil, want an error about %q", tt.url, tt.wantErr)
			}
			if code := models.ErrorCode(err); code != models.CodeValidation {
				t.Errorf("code = %s, want %s", code, models.CodeValidation)
			}
			if msg := models.ErrorMessage(err); !strings.HasPrefix(msg, "url ") || !strings.Contains(msg, tt.wantErr) {
				t.Errorf("message = %q, want it to start with \"url \" and mention %q", msg, tt.wantErr)
			}
		})
	}
}

func TestIsPublicIP(t *testing.T) {
	for _, tt := range []struct {
		ip   string
		want bool
	}{
		{"93.184.216.34", true},
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"2a00:1450:4001:80b::200e", true},

		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"10.0.0.1", false},
		{"10.255.255.255", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.168.0.1", false},
		{"169.254.169.254", false},
		{"169.254.0.1", false},
		{"100.64.0.1", false},
		{"100.127.255.255", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},

		{"::", false},
		{"::1", false},
		{"fc00::1", false},
		{"fd12:3456:789a::1", false},
		{"fe80::1", false},
		{"fe80::1%eth0", false},
		{"febf::1", false},
		{"ff02::1", false},
		{"64:ff9b::a00:1", false},     // NAT64 of 10.0.0.1
		{"64:ff9b::5db8:d822", false}, // NAT64 of a public address: refused wholesale
		{"2002:a00:1::1", false},      // 6to4 of 10.0.0.1
		{"2002:5db8:d822::1", false},  // 6to4 of a public address: refused wholesale

		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:100.64.0.1", false},
		{"::ffff:0.0.0.0", false},
		{"::ffff:224.0.0.1", false},
		{"::ffff:255.255.255.255", false},
		{"::ffff:192.168.1.1", false},
		{"::ffff:172.16.0.1", false},
		{"::ffff:93.184.216.34", false}, // the library refuses every IPv4-mapped address

		// Refused by the library's lists only.
		{"192.0.2.1", false},   // documentation
		{"198.18.0.1", false},  // benchmarking
		{"2001:db8::1", false}, // documentation
		{"fec0::1", false},     // deprecated site-local, outside 2000::/3
		{"::808:808", false},   // deprecated IPv4-compatible, outside 2000::/3
	} {
		if got := IsPublicIP(netip.MustParseAddr(tt.ip)); got != tt.want {
			t.Errorf("IsPublicIP(%s) = %v, want %v", tt.ip, got, tt.want)
		}
	}
	if IsPublicIP(netip.Addr{}) {
		t.Error("IsPublicIP(zero Addr) = true, want false")
	}
}

// TestExplicitDenyListsStandAlone checks that the refused ranges named in webhook.go are refused by this package's own
// lists, without the library's, so that a change of the library's defaults cannot open them.
func TestExplicitDenyListsStandAlone(t *testing.T) {
	denied := func(ip netip.Addr) bool {
		for _, p := range deniedV4 {
			if p.Contains(ip.Unmap()) {
				return true
			}
		}
		for _, p := range deniedV6 {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	}
	for _, s := range []string{
		"0.1.2.3", "127.0.0.1", "10.0.0.1", "172.16.0.1", "192.168.0.1", "169.254.169.254", "100.64.0.1",
		"224.0.0.1", "240.0.0.1", "255.255.255.255", "::", "::1", "fc00::1", "fd00::1", "fe80::1", "ff02::1",
		"64:ff9b::a00:1", "2002:a00:1::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
	} {
		if !denied(netip.MustParseAddr(s)) {
			t.Errorf("%s is not in this package's own deny lists", s)
		}
	}
	for _, s := range []string{"93.184.216.34", "2606:4700:4700::1111"} {
		if denied(netip.MustParseAddr(s)) {
			t.Errorf("public %s is in this package's own deny lists", s)
		}
	}
}

func TestGuardConnection(t *testing.T) {
	for _, tt := range []struct {
		network, address string
		wantAllowed      bool
	}{
		{"tcp4", "93.184.216.34:443", true},
		{"tcp4", "93.184.216.34:8443", true}, // any port
		{"tcp6", "[2606:4700:4700::1111]:80", true},
		{"udp4", "93.184.216.34:443", false},
		{"tcp4", "10.0.0.1:443", false},
		{"tcp4", "169.254.169.254:80", false},
		{"tcp6", "[::1]:443", false},
		{"tcp6", "[fe80::1%eth0]:443", false},
		{"tcp4", "not an address", false},
	} {
		err := guardConnection(tt.network, tt.address, nil)
		if allowed := err == nil; allowed != tt.wantAllowed {
			t.Errorf("guardConnection(%s, %s) = %v, want allowed %v", tt.network, tt.address, err, tt.wantAllowed)
		}
		if err != nil && !errors.Is(err, errDestinationNotAllowed) {
			t.Errorf("guardConnection(%s, %s) = %v, want errDestinationNotAllowed", tt.network, tt.address, err)
		}
	}
}
