package jobs

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"funnelchat/models"
)

var testMetaCreds = MetaCredentials{ID: "104857600123", AccessToken: "EAAGm0PX4ZCpsBAsecret"}

func TestSendMetaPostsToTheSendAPI(t *testing.T) {
	for _, tc := range []struct {
		channel, base string
		humanAgent    bool
		want          map[string]any
	}{
		{models.ChannelMessenger, "/v23.0", false, map[string]any{
			"recipient": map[string]any{"id": "24025"}, "messaging_type": "RESPONSE", "message": map[string]any{"text": "Hi Ana 👋"}}},
		{models.ChannelInstagram, "/ig/v23.0", true, map[string]any{
			"recipient": map[string]any{"id": "24025"}, "messaging_type": "MESSAGE_TAG", "tag": "HUMAN_AGENT", "message": map[string]any{"text": "Hi Ana 👋"}}},
	} {
		t.Run(tc.channel, func(t *testing.T) {
			fp := newFakeProvider(t, answer(http.StatusOK, `{"recipient_id":"24025","message_id":"m_AG5Hz2Uq7tuwNEhXfYYKj8mJEM_QPpz5jdCK48PnKAjSdjfipqxqMvK8ma6AC8fplwlqLP_5cgXIbu7I3rBN0P"}`))
			endpoints := ProviderEndpoints{Messenger: fp.URL + "/v23.0", Instagram: fp.URL + "/ig/v23.0/"}
			res := NewProviderClient(endpoints, 5*time.Second).SendMeta(context.Background(), tc.channel, testMetaCreds, "24025", "Hi Ana 👋", tc.humanAgent)
			checkResult(t, res, DeliveryResult{StatusCode: 200, ProviderID: "m_AG5Hz2Uq7tuwNEhXfYYKj8mJEM_QPpz5jdCK48PnKAjSdjfipqxqMvK8ma6AC8fplwlqLP_5cgXIbu7I3rBN0P"})
			req := fp.only(t)
			if want := tc.base + "/104857600123/messages"; req.path != want || req.method != http.MethodPost {
				t.Errorf("%s %s, want POST %s", req.method, req.path, want)
			}
			if got := req.header.Get("Authorization"); got != "Bearer "+testMetaCreds.AccessToken {
				t.Errorf("Authorization = %q", got)
			}
			var body map[string]any
			if err := json.Unmarshal(req.body, &body); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, body); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSendMetaOutcomes(t *testing.T) {
	graphErr := func(code, subcode int, message string) string {
		e := map[string]any{"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "AbCdEf"}
		if subcode != 0 {
			e["error_subcode"] = subcode
		}
		raw, _ := json.Marshal(map[string]any{"error": e})
		return string(raw)
	}
	tests := []struct {
		name    string
		respond http.HandlerFunc
		want    DeliveryResult
	}{
		{"a Graph error is stored as code/subcode and is final",
			answer(http.StatusBadRequest, graphErr(10, 2018278, "(#10) This message is sent outside of allowed window.")),
			DeliveryResult{StatusCode: 400, Error: "10/2018278: (#10) This message is sent outside of allowed window."}},
		{"without a subcode, the code alone",
			answer(http.StatusBadRequest, graphErr(100, 0, "(#100) No matching user found")),
			DeliveryResult{StatusCode: 400, Error: "100: (#100) No matching user found"}},
		{"application throttling (4) is retried",
			answer(http.StatusBadRequest, graphErr(4, 0, "(#4) Application request limit reached")),
			DeliveryResult{StatusCode: 400, Error: "4: (#4) Application request limit reached", Retryable: true}},
		{"user throttling (17) is retried",
			answer(http.StatusForbidden, graphErr(17, 2446079, "(#17) User request limit reached")),
			DeliveryResult{StatusCode: 403, Error: "17/2446079: (#17) User request limit reached", Retryable: true}},
		{"page throttling (32) is retried",
			answer(http.StatusBadRequest, graphErr(32, 0, "(#32) Page request limit reached")),
			DeliveryResult{StatusCode: 400, Error: "32: (#32) Page request limit reached", Retryable: true}},
		{"call-rate throttling (613) is retried",
			answer(http.StatusBadRequest, graphErr(613, 0, "(#613) Calls to this api have exceeded the rate limit.")),
			DeliveryResult{StatusCode: 400, Error: "613: (#613) Calls to this api have exceeded the rate limit.", Retryable: true}},
		{"a 5xx without a Graph error is retried with an excerpt",
			answer(http.StatusBadGateway, "<html>bad gateway</html>"),
			DeliveryResult{StatusCode: 502, Error: "HTTP 502: <html>bad gateway</html>", Retryable: true}},
		{"a 5xx Graph error is retried",
			answer(http.StatusInternalServerError, graphErr(2, 0, "An unexpected error has occurred. Please retry your request later.")),
			DeliveryResult{StatusCode: 500, Error: "2: An unexpected error has occurred. Please retry your request later.", Retryable: true}},
		{"429 is retried and Retry-After kept",
			answer(http.StatusTooManyRequests, `{}`, "Retry-After", "30"),
			DeliveryResult{StatusCode: 429, Error: "HTTP 429: {}", Retryable: true, RetryAfter: 30 * time.Second}},
		{"a token echoed in the error is redacted",
			answer(http.StatusBadRequest, graphErr(190, 460, "Invalid OAuth access token - Cannot parse access token EAAGm0PX4ZCpsBAsecret")),
			DeliveryResult{StatusCode: 400, Error: "190/460: Invalid OAuth access token - Cannot parse access token [redacted]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fp := newFakeProvider(t, tc.respond)
			res := NewProviderClient(ProviderEndpoints{Messenger: fp.URL}, 5*time.Second).
				SendMeta(context.Background(), models.ChannelMessenger, testMetaCreds, "24025", "hi", false)
			checkResult(t, res, tc.want)
		})
	}
	t.Run("incomplete credentials make no call", func(t *testing.T) {
		fp := newFakeProvider(t, answer(http.StatusOK, `{}`))
		res := NewProviderClient(ProviderEndpoints{Instagram: fp.URL}, 5*time.Second).
			SendMeta(context.Background(), models.ChannelInstagram, MetaCredentials{ID: "1"}, "24025", "hi", false)
		if res.OK() || res.Retryable || fp.count() != 0 {
			t.Fatalf("result %+v after %d calls", res, fp.count())
		}
	})
}
