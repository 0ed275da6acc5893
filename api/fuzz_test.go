package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// FuzzIncomingPayload posts arbitrary bodies to the incoming endpoint of a real server: every answer is
// a 200 with a messageId or a 4xx in the endpoint's string error form, never a 5xx. `go test` runs the
// seeds; `go test -run XXX -fuzz FuzzIncomingPayload ./api` searches further.
func FuzzIncomingPayload(f *testing.F) {
	for _, seed := range []string{
		`{"customData":{"messageSid":"s1","fromId":"u1","toId":"b","body":"hi"}}`,
		`{"customData":{"id":"s2","fromId":"+14155550123","toId":"b","body":"hi","email":"A@B.co"},"messageType":"reaction"}`,
		`{"customData":{"messageSid":"s3","fromId":"u","toId":"b","body":"x","mediaUrl":"data:image/png;base64,AAAA","mediaContentType":"image/png"}}`,
		`{"customData":{"messageSid":"s4","fromId":"u","toId":"b","body":"   "}}`,
		`{"customData":{"messageSid":1e999,"fromId":"u","toId":"b","body":"x"}}`,
		`{"customData":{"messageSid":"s5","messageSid":"s6","fromId":"u","toId":"b","body":"x"}}`,
		`{"customData":{"messageSid":"s\u0000","fromId":"u","toId":"b","body":"\ud800"}}`,
		"{\"customData\":{\"messageSid\":\"s7\",\"fromId\":\"u\",\"toId\":\"b\",\"body\":\"\xff\xfe\"}}",
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		`{"customData":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000) + `}`,
		`{"customData":null}`, `[]`, `null`, ``, `{"customData":{}} {}`,
		`{"customData":{"messageSid":"` + strings.Repeat("x", 5000) + `","fromId":"u","toId":"b","body":"x"}}`,
	} {
		f.Add([]byte(seed))
	}
	srv := startServer(f, "RATE_LIMIT_PER_MINUTE=1000000")
	_, key := newAccount(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		// A 503 is the one 5xx the endpoint may answer: the message was stored but its reply could not
		// be queued in time (a loaded machine), and the sender is to retry the same body. An input
		// that is answered 503 again and again is a finding.
		var res *http.Response
		var raw []byte
		for try := 0; try < 5; try++ {
			var err error
			if res, err = postRaw(t, srv.URL+"/v1/incoming_custom_channel_message", key, bytes.NewReader(body)); err != nil {
				t.Fatalf("request failed: %v", err)
			}
			raw, _ = io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusServiceUnavailable {
				break
			}
		}
		var answer map[string]any
		if err := json.Unmarshal(raw, &answer); err != nil {
			t.Fatalf("status %d with a body that is not a JSON object: %q", res.StatusCode, raw)
		}
		switch {
		case res.StatusCode == http.StatusOK:
			if id, _ := answer["messageId"].(string); id == "" || answer["success"] != true {
				t.Fatalf("200 without success and messageId: %s", raw)
			}
		case res.StatusCode >= 400 && res.StatusCode < 500:
			if msg, ok := answer["error"].(string); !ok || msg == "" {
				t.Fatalf("status %d without the string error form: %s", res.StatusCode, raw)
			}
		default:
			t.Fatalf("status %d for body %q: %s", res.StatusCode, body, raw)
		}
	})
}
