package jobs

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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
