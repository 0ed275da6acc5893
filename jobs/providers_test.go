package jobs

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
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

func TestSendSMSPostsTwilioMessage(t *testing.T) {
	fp := newFakeProvider(t, answer(http.StatusCreated,
		`{"sid":"SM5ef8732a3c49700934481addd5ce1659","status":"queued","to":"+15558675310"}`))
	// A trailing slash on the configured base URL must not double the slash in the path.
	client := NewProviderClient(ProviderEndpoints{SMS: fp.URL + "/"}, 5*time.Second)

	res := client.SendSMS(context.Background(), testSMSCreds, "+15558675310", "Hi Ana, thanks & welcome! 👋")
	checkResult(t, res, DeliveryResult{StatusCode: 201, ProviderID: "SM5ef8732a3c49700934481addd5ce1659"})
	if !res.OK() {
		t.Errorf("OK() = false for %+v", res)
	}

	req := fp.only(t)
	if req.method != http.MethodPost {
		t.Errorf("method = %s, want POST", req.method)
	}
	if want := "/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Messages.json"; req.path != want {
		t.Errorf("path = %s, want %s", req.path, want)
	}
	user, pass, ok := (&http.Request{Header: req.header}).BasicAuth()
	if !ok || user != testSMSCreds.AccountSID || pass != testSMSCreds.AuthToken {
		t.Errorf("basic auth = %q:%q (present %v), want the account SID and auth token", user, pass, ok)
	}
	if ct := req.header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type = %q, want a form", ct)
	}
	form, err := url.ParseQuery(string(req.body))
	if err != nil {
		t.Fatalf("body %q is not a form: %v", req.body, err)
	}
	want := url.Values{"To": {"+15558675310"}, "From": {"+15005550006"}, "Body": {"Hi Ana, thanks & welcome! 👋"}}
	if diff := cmp.Diff(want, form); diff != "" {
		t.Errorf("form fields mismatch (-want +got):\n%s", diff)
	}
}

func TestSendSMSOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		respond http.HandlerFunc
		want    DeliveryResult
	}{
		{
			name: "a Twilio error is final and names the code",
			respond: answer(http.StatusBadRequest,
				`{"code":21211,"message":"The 'To' number 5551234 is not a valid phone number.","more_info":"https://www.twilio.com/docs/errors/21211","status":400}`),
			want: DeliveryResult{StatusCode: 400,
				Error: "HTTP 400: twilio 21211: The 'To' number 5551234 is not a valid phone number."},
		},
		{
			name:    "a rejected auth token is final",
			respond: answer(http.StatusUnauthorized, `{"code":20003,"message":"Authenticate","status":401}`),
			want:    DeliveryResult{StatusCode: 401, Error: "HTTP 401: twilio 20003: Authenticate"},
		},
		{
			name:    "500 is retried, with an excerpt of a body that is not Twilio's",
			respond: answer(http.StatusInternalServerError, "upstream exploded"),
			want:    DeliveryResult{StatusCode: 500, Retryable: true, Error: "HTTP 500: upstream exploded"},
		},
		{
			name: "429 is retried after Retry-After",
			respond: answer(http.StatusTooManyRequests, `{"code":20429,"message":"Too Many Requests","status":429}`,
				"Retry-After", "7"),
			want: DeliveryResult{StatusCode: 429, Retryable: true, RetryAfter: 7 * time.Second,
				Error: "HTTP 429: twilio 20429: Too Many Requests"},
		},
		{
			name:    "408 is retried",
			respond: answer(http.StatusRequestTimeout, ""),
			want:    DeliveryResult{StatusCode: 408, Retryable: true, Error: "HTTP 408"},
		},
		{
			name: "a redirect is not followed",
			respond: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://example.com/elsewhere", http.StatusFound)
			},
			want: DeliveryResult{StatusCode: 302, Error: "HTTP 302: redirect not followed"},
		},
		{
			name:    "2xx without a sid is still accepted",
			respond: answer(http.StatusCreated, `not json`),
			want:    DeliveryResult{StatusCode: 201},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := newFakeProvider(t, tt.respond)
			res := NewProviderClient(ProviderEndpoints{SMS: fp.URL}, 5*time.Second).SendSMS(context.Background(), testSMSCreds, "+15558675310", "hi")
			checkResult(t, res, tt.want)
			if n := fp.count(); n != 1 {
				t.Errorf("provider received %d requests, want 1", n)
			}
		})
	}
}

func TestSendSMSTimesOut(t *testing.T) {
	fp := newFakeProvider(t, hangUntilCanceled(t))
	start := time.Now()
	res := NewProviderClient(ProviderEndpoints{SMS: fp.URL}, 200*time.Millisecond).SendSMS(context.Background(), testSMSCreds, "+15558675310", "hi")
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("SendSMS took %v with a 200ms timeout", elapsed)
	}
	checkResult(t, res, DeliveryResult{Retryable: true, Error: "timeout after 200ms"})
}

func TestSendSMSConnectionRefused(t *testing.T) {
	res := NewProviderClient(ProviderEndpoints{SMS: closedAddress(t)}, 5*time.Second).SendSMS(context.Background(), testSMSCreds, "+15558675310", "hi")
	checkResult(t, res, DeliveryResult{Retryable: true, Error: "connection refused"})
}

func TestSendSMSIncompleteCredentials(t *testing.T) {
	fp := newFakeProvider(t, answer(http.StatusCreated, `{"sid":"SM1"}`))
	creds := testSMSCreds
	creds.AuthToken, creds.From = "", " "
	res := NewProviderClient(ProviderEndpoints{SMS: fp.URL}, 5*time.Second).SendSMS(context.Background(), creds, "+15558675310", "hi")
	if res.OK() || res.Retryable || res.Error != "SMS credentials incomplete: missing authToken, from" {
		t.Errorf("result = %+v, want a final failure naming the missing fields", res)
	}
	if n := fp.count(); n != 0 {
		t.Errorf("provider received %d requests, want none", n)
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

func TestSendWhatsAppMessages(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		template *WhatsAppTemplate
		want     map[string]any
	}{
		{
			name: "text message",
			text: "Hi Ana <3, how can we help?",
			want: map[string]any{
				"messaging_product": "whatsapp",
				"to":                "15558675310",
				"type":              "text",
				"text":              map[string]any{"body": "Hi Ana <3, how can we help?"},
			},
		},
		{
			name:     "template message with body parameters",
			text:     "ignored when a template is given",
			template: &WhatsAppTemplate{Name: "opening_offer", Language: "en_US", Parameters: []string{"Ana", "20%"}},
			want: map[string]any{
				"messaging_product": "whatsapp",
				"to":                "15558675310",
				"type":              "template",
				"template": map[string]any{
					"name":     "opening_offer",
					"language": map[string]any{"code": "en_US"},
					"components": []any{map[string]any{
						"type": "body",
						"parameters": []any{
							map[string]any{"type": "text", "text": "Ana"},
							map[string]any{"type": "text", "text": "20%"},
						},
					}},
				},
			},
		},
		{
			name:     "template message without parameters has no components",
			template: &WhatsAppTemplate{Name: "hello_world", Language: "en_US"},
			want: map[string]any{
				"messaging_product": "whatsapp",
				"to":                "15558675310",
				"type":              "template",
				"template": map[string]any{
					"name":     "hello_world",
					"language": map[string]any{"code": "en_US"},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := newFakeProvider(t, answer(http.StatusOK,
				`{"messaging_product":"whatsapp","contacts":[{"input":"15558675310","wa_id":"15558675310"}],`+
					`"messages":[{"id":"wamid.HBgLMTU1NTg2NzUzMTAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"}]}`))
			res := NewProviderClient(ProviderEndpoints{WhatsApp: fp.URL}, 5*time.Second).
				SendWhatsApp(context.Background(), testWhatsAppCreds, "+15558675310", tt.text, tt.template)
			checkResult(t, res, DeliveryResult{StatusCode: 200, ProviderID: "wamid.HBgLMTU1NTg2NzUzMTAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA"})

			req := fp.only(t)
			if req.method != http.MethodPost || req.path != "/v21.0/106540352242922/messages" {
				t.Errorf("request = %s %s, want POST /v21.0/106540352242922/messages", req.method, req.path)
			}
			if got, want := req.header.Get("Authorization"), "Bearer "+testWhatsAppCreds.AccessToken; got != want {
				t.Errorf("Authorization = %q, want %q", got, want)
			}
			if ct := req.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var got map[string]any
			if err := json.Unmarshal(req.body, &got); err != nil {
				t.Fatalf("body %s is not JSON: %v", req.body, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSendWhatsAppOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		respond http.HandlerFunc
		want    DeliveryResult
	}{
		{
			name: "a Graph API error is final and names the code",
			respond: answer(http.StatusBadRequest,
				`{"error":{"message":"Re-engagement message","type":"OAuthException","code":131047,`+
					`"error_data":{"messaging_product":"whatsapp","details":"More than 24 hours have passed"},"fbtrace_id":"AbCd"}}`),
			want: DeliveryResult{StatusCode: 400, Error: "HTTP 400: whatsapp 131047: Re-engagement message"},
		},
		{
			name:    "503 is retried",
			respond: answer(http.StatusServiceUnavailable, "try later", "Retry-After", "30"),
			want: DeliveryResult{StatusCode: 503, Retryable: true, RetryAfter: 30 * time.Second,
				Error: "HTTP 503: try later"},
		},
		{
			name:    "500 with a Graph API error is retried and names the code",
			respond: answer(http.StatusInternalServerError, `{"error":{"message":"An unknown error occurred","code":1}}`),
			want:    DeliveryResult{StatusCode: 500, Retryable: true, Error: "HTTP 500: whatsapp 1: An unknown error occurred"},
		},
		{
			name:    "2xx without a message id is still accepted",
			respond: answer(http.StatusOK, `{"messages":[]}`),
			want:    DeliveryResult{StatusCode: 200},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fp := newFakeProvider(t, tt.respond)
			res := NewProviderClient(ProviderEndpoints{WhatsApp: fp.URL}, 5*time.Second).
				SendWhatsApp(context.Background(), testWhatsAppCreds, "+15558675310", "hi", nil)
			checkResult(t, res, tt.want)
		})
	}
}

func TestSendWhatsAppTimeoutAndRefusal(t *testing.T) {
	fp := newFakeProvider(t, hangUntilCanceled(t))
	res := NewProviderClient(ProviderEndpoints{WhatsApp: fp.URL}, 200*time.Millisecond).
		SendWhatsApp(context.Background(), testWhatsAppCreds, "+15558675310", "hi", nil)
	checkResult(t, res, DeliveryResult{Retryable: true, Error: "timeout after 200ms"})

	res = NewProviderClient(ProviderEndpoints{WhatsApp: closedAddress(t)}, 5*time.Second).
		SendWhatsApp(context.Background(), testWhatsAppCreds, "+15558675310", "hi", nil)
	checkResult(t, res, DeliveryResult{Retryable: true, Error: "connection refused"})
}

func TestSendWhatsAppRefusesIncompleteInput(t *testing.T) {
	fp := newFakeProvider(t, answer(http.StatusOK, `{"messages":[{"id":"wamid.1"}]}`))
	client := NewProviderClient(ProviderEndpoints{WhatsApp: fp.URL}, 5*time.Second)
	tests := []struct {
		name     string
		creds    WhatsAppCredentials
		template *WhatsAppTemplate
		want     string
	}{
		{"no access token", WhatsAppCredentials{PhoneNumberID: "1"}, nil, "WhatsApp credentials incomplete: missing accessToken"},
		{"no phone number id", WhatsAppCredentials{AccessToken: "t"}, nil, "WhatsApp credentials incomplete: missing phoneNumberId"},
		{"template without a language", testWhatsAppCreds, &WhatsAppTemplate{Name: "hello_world"}, "WhatsApp template incomplete: missing language"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := client.SendWhatsApp(context.Background(), tt.creds, "+15558675310", "hi", tt.template)
			if res.OK() || res.Retryable || res.Error != tt.want {
				t.Errorf("result = %+v, want the final error %q", res, tt.want)
			}
		})
	}
	if n := fp.count(); n != 0 {
		t.Errorf("provider received %d requests, want none", n)
	}
}

func TestNewProviderClientDefaults(t *testing.T) {
	c := NewProviderClient(ProviderEndpoints{SMS: " "}, 0)
	if c.smsBase != "https://api.twilio.com" || c.whatsAppBase != "https://graph.facebook.com" || c.timeout != 10*time.Second ||
		c.messengerBase != "https://graph.facebook.com/v23.0" || c.instagramBase != "https://graph.instagram.com/v23.0" {
		t.Errorf("defaults = %q, %q, %q, %q, %v", c.smsBase, c.whatsAppBase, c.messengerBase, c.instagramBase, c.timeout)
	}
}

// twilioDocURL, twilioDocParams and twilioDocSignature are the worked example of Twilio's webhook
// security documentation (https://www.twilio.com/docs/usage/security), auth token 12345.
const (
	twilioDocToken     = "12345"
	twilioDocURL       = "https://mycompany.com/myapp.php?foo=1&bar=2"
	twilioDocSignature = "GvWf1cFY/Q7PnoempGyD5oXAezc="
)

func twilioDocParams() url.Values {
	return url.Values{
		"CallSid": {"CA1234567890ABCDE"},
		"Caller":  {"+14158675310"},
		"Digits":  {"1234"},
		"From":    {"+14158675310"},
		"To":      {"+18005551212"},
	}
}

// signTwilio is an independent statement of Twilio's algorithm for the tests: URL, then name+value of each
// parameter in the order given, HMAC-SHA1, base64.
func signTwilio(token, fullURL string, pairs ...string) string {
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(fullURL + strings.Join(pairs, "")))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func TestVerifyTwilioSignature(t *testing.T) {
	if !VerifyTwilioSignature(twilioDocToken, twilioDocURL, twilioDocParams(), twilioDocSignature) {
		t.Fatal("Twilio's documented example does not verify")
	}

	with := func(change func(url.Values)) url.Values {
		form := twilioDocParams()
		change(form)
		return form
	}
	tests := []struct {
		name      string
		token     string
		url       string
		form      url.Values
		signature string
	}{
		{"another caller number", twilioDocToken, twilioDocURL, with(func(f url.Values) {
			f.Set("Caller", "+12349013030")
			f.Set("From", "+12349013030")
		}), twilioDocSignature},
		{"a changed value", twilioDocToken, twilioDocURL, with(func(f url.Values) { f.Set("Digits", "9999") }), twilioDocSignature},
		{"an added parameter", twilioDocToken, twilioDocURL, with(func(f url.Values) { f.Set("Body", "hi") }), twilioDocSignature},
		{"a removed parameter", twilioDocToken, twilioDocURL, with(func(f url.Values) { f.Del("To") }), twilioDocSignature},
		{"another query", twilioDocToken, "https://mycompany.com/myapp.php?foo=1&bar=3", twilioDocParams(), twilioDocSignature},
		{"plain http", twilioDocToken, "http://mycompany.com/myapp.php?foo=1&bar=2", twilioDocParams(), twilioDocSignature},
		{"another host", twilioDocToken, "https://attacker.example/myapp.php?foo=1&bar=2", twilioDocParams(), twilioDocSignature},
		{"another token", "54321", twilioDocURL, twilioDocParams(), twilioDocSignature},
		{"an empty token", "", twilioDocURL, twilioDocParams(), twilioDocSignature},
		{"a truncated signature", twilioDocToken, twilioDocURL, twilioDocParams(), strings.TrimSuffix(twilioDocSignature, "=")},
		{"a changed signature", twilioDocToken, twilioDocURL, twilioDocParams(), "HvWf1cFY/Q7PnoempGyD5oXAezc="},
		{"no signature", twilioDocToken, twilioDocURL, twilioDocParams(), ""},
		{"a signature made with an empty token", "", twilioDocURL, url.Values{}, signTwilio("", twilioDocURL)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if VerifyTwilioSignature(tt.token, tt.url, tt.form, tt.signature) {
				t.Error("verified, want refused")
			}
		})
	}
}

func TestVerifyTwilioSignaturePorts(t *testing.T) {
	tests := []struct {
		name      string
		signedURL string
		fullURL   string
		want      bool
	}{
		{"signed without the port, received with the default one", twilioDocURL,
			"https://mycompany.com:443/myapp.php?foo=1&bar=2", true},
		{"signed with the default port, received without", "https://mycompany.com:443/myapp.php?foo=1&bar=2",
			twilioDocURL, true},
		{"http default port", "http://example.com:80/sms", "http://example.com/sms", true},
		{"signed without a port, received with another one", "https://example.com/sms", "https://example.com:8443/sms", true},
		{"signed with one port, received with another", "https://example.com:8443/sms", "https://example.com:9443/sms", false},
		{"signed with another port, received without", "https://example.com:8443/sms", "https://example.com/sms", false},
		{"a port in the path is not the port", "https://example.com/a:443", "https://example.com/a", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig := signTwilio("secret-token", tt.signedURL, "Body", "hi")
			if got := VerifyTwilioSignature("secret-token", tt.fullURL, url.Values{"Body": {"hi"}}, sig); got != tt.want {
				t.Errorf("VerifyTwilioSignature = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVerifyTwilioSignatureRepeatedParameters(t *testing.T) {
	const u = "https://example.com/sms"
	form := url.Values{"MediaUrl": {"https://b.example/2", "https://a.example/1"}, "Body": {"hi"}}
	sig := signTwilio("tok", u, "Body", "hi", "MediaUrl", "https://a.example/1", "MediaUrl", "https://b.example/2")
	if !VerifyTwilioSignature("tok", u, form, sig) {
		t.Error("repeated parameter, values sorted: not verified")
	}
	if got := form["MediaUrl"]; got[0] != "https://b.example/2" {
		t.Errorf("the caller's form was reordered: %v", got)
	}
	// Names sort byte-wise: upper case before lower case.
	sig = signTwilio("tok", u, "Zeta", "1", "alpha", "2")
	if !VerifyTwilioSignature("tok", u, url.Values{"alpha": {"2"}, "Zeta": {"1"}}, sig) {
		t.Error("names sorted byte-wise: not verified")
	}
}

func metaHeader(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestVerifyMetaSignature(t *testing.T) {
	body := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"1","changes":[]}]}`)
	good := metaHeader("app-secret", body)
	digest := strings.TrimPrefix(good, "sha256=")
	tests := []struct {
		name   string
		secret string
		body   []byte
		header string
		want   bool
	}{
		{"good", "app-secret", body, good, true},
		{"upper-case hex", "app-secret", body, "sha256=" + strings.ToUpper(digest), true},
		{"changed body", "app-secret", append([]byte(" "), body...), good, false},
		{"other secret", "other-secret", body, good, false},
		{"empty secret", "", body, metaHeader("", body), false},
		{"missing prefix", "app-secret", body, digest, false},
		{"sha1 prefix", "app-secret", body, "sha1=" + digest, false},
		{"not hex", "app-secret", body, "sha256=" + strings.Repeat("zz", 32), false},
		{"truncated digest", "app-secret", body, good[:len(good)-2], false},
		{"odd length", "app-secret", body, good[:len(good)-1], false},
		{"longer digest", "app-secret", body, good + "00", false},
		{"empty header", "app-secret", body, "", false},
		{"prefix only", "app-secret", body, "sha256=", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := VerifyMetaSignature(tt.secret, tt.body, tt.header); got != tt.want {
				t.Errorf("VerifyMetaSignature = %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzVerifyTwilioSignature(f *testing.F) {
	f.Add(twilioDocToken, twilioDocURL, "Digits", "1234", "To", "+18005551212", twilioDocSignature)
	f.Add("tok", "https://example.com:443/sms", "Body", "hi", "Body", "there", "")
	f.Add("tok", "http://[::1]:80/x?y=:443", "", "", "a", "b", "=")
	f.Add("", "https://u:p@host:/p", "k", "\x00", "k", "\xff", "AAAA")
	f.Add("t", "%zz://bad", "", "", "", "", "GvWf1cFY/Q7PnoempGyD5oXAezc=")
	f.Fuzz(func(t *testing.T, token, fullURL, k1, v1, k2, v2, signature string) {
		form := url.Values{}
		form.Add(k1, v1)
		form.Add(k2, v2)
		_ = VerifyTwilioSignature(token, fullURL, form, signature)

		if token == "" {
			return
		}
		pairs := []string{k1, v1, k2, v2}
		switch {
		case k1 > k2 || (k1 == k2 && v1 > v2):
			pairs = []string{k2, v2, k1, v1}
		case k1 == k2 && v1 == v2:
			pairs = pairs[:2]
		}
		sig := signTwilio(token, fullURL, pairs...)
		if !VerifyTwilioSignature(token, fullURL, form, sig) {
			t.Errorf("a correct signature for %q %v did not verify", fullURL, form)
		}
		// No form of the longer URL (as given, port removed or default port added) is fullURL itself.
		if VerifyTwilioSignature(token, fullURL+"x", form, sig) {
			t.Errorf("a signature for %q verified for another URL", fullURL)
		}
	})
}

func FuzzVerifyMetaSignature(f *testing.F) {
	f.Add("app-secret", []byte(`{"object":"whatsapp_business_account"}`), "sha256=00")
	f.Add("s", []byte{}, metaHeader("s", nil))
	f.Add("", []byte("x"), "sha256=")
	f.Add("s", []byte("\xff\x00"), "sha256="+strings.Repeat("A", 64))
	f.Fuzz(func(t *testing.T, secret string, body []byte, header string) {
		_ = VerifyMetaSignature(secret, body, header)
		if secret == "" {
			return
		}
		if !VerifyMetaSignature(secret, body, metaHeader(secret, body)) {
			t.Errorf("a correct signature did not verify")
		}
		if VerifyMetaSignature(secret, body, header) && !strings.EqualFold(strings.TrimSpace(header), metaHeader(secret, body)) {
			t.Errorf("header %q verified but is not the signature", header)
		}
	})
}
