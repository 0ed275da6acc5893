package jobs

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// providerRequest is what a fake provider saw of one request.
type providerRequest struct {
	method string
	path   string
	header http.Header
	body   []byte
}

// fakeProvider is a real HTTP server standing in for Twilio or the WhatsApp Cloud API: it records every
// request and answers with respond.
type fakeProvider struct {
	*httptest.Server
	mu       sync.Mutex
	received []providerRequest
}

func newFakeProvider(t *testing.T, respond http.HandlerFunc) *fakeProvider {
	t.Helper()
	fp := &fakeProvider{}
	fp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fp.mu.Lock()
		fp.received = append(fp.received, providerRequest{
			method: r.Method, path: r.URL.EscapedPath(), header: r.Header.Clone(), body: body,
		})
		fp.mu.Unlock()
		respond(w, r)
	}))
	t.Cleanup(fp.Close)
	return fp
}

// only returns the single request the provider received.
func (fp *fakeProvider) only(t *testing.T) providerRequest {
	t.Helper()
	fp.mu.Lock()
	defer fp.mu.Unlock()
	if len(fp.received) != 1 {
		t.Fatalf("provider received %d requests, want 1", len(fp.received))
	}
	return fp.received[0]
}

func (fp *fakeProvider) count() int {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return len(fp.received)
}

// answer responds with status, the given headers (name, value pairs) and body.
func answer(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		if strings.HasPrefix(body, "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// hangUntilCanceled answers nothing until the client gives up.
func hangUntilCanceled(t *testing.T) http.HandlerFunc {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // registered before the server's Close, so it runs first
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

func closedAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "http://" + ln.Addr().String()
	ln.Close()
	return addr
}

var testSMSCreds = SMSCredentials{
	AccountSID: "AC0123456789abcdef0123456789abcdef",
	AuthToken:  "f00dfeedf00dfeedf00dfeedf00dfeed",
	From:       "+15005550006",
}

var testWhatsAppCreds = WhatsAppCredentials{
	PhoneNumberID: "106540352242922",
	AccessToken:   "EAAGm0PX4ZCpsBAKsecretaccesstokenZDZD",
}

// checkResult compares the fields of a result that a test fixes; Duration must be measured.
func checkResult(t *testing.T, got, want DeliveryResult) {
	t.Helper()
	if got.Duration <= 0 {
		t.Errorf("Duration = %v, want it measured", got.Duration)
	}
	got.Duration = 0
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result mismatch (-want +got):\n%s", diff)
	}
}

// A provider (or a proxy in front of it) that echoes credentials back must not get them into the
// result, which is stored and shown to the API client.
func TestSendNeverReturnsCredentials(t *testing.T) {
	echo := func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		token := strings.TrimPrefix(auth, "Bearer ")
		if _, password, ok := r.BasicAuth(); ok {
			token = password
		}
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "bad auth "+auth+" (token "+token+")")
	}
	fp := newFakeProvider(t, echo)
	client := NewProviderClient(ProviderEndpoints{SMS: fp.URL, WhatsApp: fp.URL}, 5*time.Second)
	basic := base64.StdEncoding.EncodeToString([]byte(testSMSCreds.AccountSID + ":" + testSMSCreds.AuthToken))
	tests := []struct {
		channel string
		res     DeliveryResult
		secrets []string
	}{
		{"sms", client.SendSMS(context.Background(), testSMSCreds, "+15558675310", "hi"),
			[]string{testSMSCreds.AuthToken, basic}},
		{"whatsapp", client.SendWhatsApp(context.Background(), testWhatsAppCreds, "+15558675310", "hi", nil),
			[]string{testWhatsAppCreds.AccessToken}},
	}
	for _, tt := range tests {
		channel, res := tt.channel, tt.res
		for _, secret := range tt.secrets {
			if strings.Contains(res.Error, secret) {
				t.Errorf("%s: error %q contains a credential", channel, res.Error)
			}
		}
		if !strings.HasPrefix(res.Error, "HTTP 400: bad auth ") || !strings.Contains(res.Error, "[redacted]") {
			t.Errorf("%s: error = %q, want the echoed body with its credentials redacted", channel, res.Error)
		}
	}
}

func TestRedactSecrets(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		secrets []string
		want    string
	}{
		{"no secrets", "plain text", nil, "plain text"},
		{"empty secrets are ignored", "plain text", []string{"", ""}, "plain text"},
		{"every occurrence", "tok1 and tok1", []string{"tok1"}, "[redacted] and [redacted]"},
		{"the longer secret first", "abcdef", []string{"abc", "abcdef"}, "[redacted]"},
		{"the replacement is not redacted again", "token t", []string{"t"}, "[redacted]oken [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redactSecrets(tt.text, tt.secrets); got != tt.want {
				t.Errorf("redactSecrets(%q, %q) = %q, want %q", tt.text, tt.secrets, got, tt.want)
			}
		})
	}
}

func TestNewProviderClientDefaults(t *testing.T) {
	c := NewProviderClient(ProviderEndpoints{SMS: " "}, 0)
	if c.smsBase != "https://api.twilio.com" || c.whatsAppBase != "https://graph.facebook.com" || c.timeout != 10*time.Second ||
		c.messengerBase != "https://graph.facebook.com/v23.0" || c.instagramBase != "https://graph.instagram.com/v23.0" {
		t.Errorf("defaults = %q, %q, %q, %q, %v", c.smsBase, c.whatsAppBase, c.messengerBase, c.instagramBase, c.timeout)
	}
}
