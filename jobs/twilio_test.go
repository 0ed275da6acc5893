package jobs

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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
