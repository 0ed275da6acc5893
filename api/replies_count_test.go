package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

// The report's replied counts answers, not opt-outs or HELPs, and counts a reply stored before the
// opening's delivery was recorded (a lead, or a bridge, that answers while the receiver's 200 is still
// on its way). Contacts who only opted out count in optedOut.
func TestReportCountsRepliesNotOptOuts(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	var key string
	var hook *sink
	// The fast lead answers from inside the receiver, before the receiver's 200 goes back.
	hook = newSink(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		var p map[string]any
		_ = json.Unmarshal(hook.deliveries()[n-1].Body, &p)
		if p["toId"] == "+14155557405" && p["body"] == "Hi Lead5, thanks for signing up!" {
			body, _ := json.Marshal(map[string]any{"customData": map[string]any{
				"messageSid": "fast-1", "fromId": "+14155557405", "toId": "biz-1", "body": "Yes! Tell me more", "channel": "chat"}})
			req, _ := http.NewRequest("POST", srv.URL+"/v1/incoming_custom_channel_message", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("x-api-key", key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	key, _ = messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, nil)
	replies := []string{"STOP", "please take me off your list", "HELP", "tell me more", ""}
	var ids []string
	for i := range replies {
		ids = append(ids, namedContact(t, srv, key, fmt.Sprintf("+1415555740%d", i+1), fmt.Sprintf("Lead%d", i+1)))
	}
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids}), http.StatusCreated, "")
	waitFor(t, 30*time.Second, "five openings delivered", func() bool { return reportOf(t, srv, key, campaignID)["opened"] == 5.0 })
	for i, text := range replies {
		if text != "" {
			expect(t, chatIncoming(t, srv, key, fmt.Sprintf("lead-reply-%d", i), fmt.Sprintf("+1415555740%d", i+1), "chat", text), http.StatusOK, "")
		}
	}
	waitFor(t, 30*time.Second, "both opt-outs recorded", func() bool { return reportOf(t, srv, key, campaignID)["optedOut"] == 2.0 })
	// The bot has answered or skipped every reply once the opt-outs are in; HELP's answer is written
	// in the same request as its message.
	waitFor(t, 30*time.Second, "the bot done with every message", func() bool {
		var pending int
		err := env.Store.DB().NewSelect().TableExpr("messages").ColumnExpr("count(*)").
			Where("account_id = (SELECT account_id FROM campaigns WHERE id = ?) AND direction = 'incoming' AND bot_status = 'pending'", campaignID).
			Scan(t.Context(), &pending)
		return err == nil && pending == 0
	})
	rep := reportOf(t, srv, key, campaignID)
	if rep["replied"] != 2.0 || rep["optedOut"] != 2.0 || rep["replyRate"] != 0.4 {
		t.Fatalf("replied %v (rate %v), optedOut %v; want 2 replies (the fast lead's and \"tell me more\"), 2 opt-outs",
			rep["replied"], rep["replyRate"], rep["optedOut"])
	}
}
