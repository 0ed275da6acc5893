package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"funnelchat/models"
)

func TestBotRepliesSpendCreditsAndAutoRechargeFiresOncePerLowBalance(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	replies, recharges := newSink(t, nil), newSink(t, nil)
	agencyKey, subKey, subEmail, subID := agencyWithSub(t, 5)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", subKey, map[string]any{"url": replies.URL + "/replies"}), http.StatusOK, "")
	agencySecret := do(t, "GET", srv.URL+"/v1/settings/webhook", agencyKey, nil).JSON(t)["signingSecret"].(string)

	r := do(t, "PUT", srv.URL+"/v1/subaccounts/"+subID+"/auto_recharge", agencyKey, map[string]any{"threshold": 3, "amount": 10, "webhookUrl": recharges.URL + "/recharge"})
	expect(t, r, http.StatusOK, "")
	if got := r.JSON(t); got["subAccountId"] != subID || got["threshold"] != 3.0 || got["amount"] != 10.0 {
		t.Fatalf("auto-recharge settings: %s", r.Body)
	}

	// A burst of four replies takes the balance from 5 to 1, crossing the threshold once.
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			expect(t, incoming(t, srv, subKey, fmt.Sprint("burst-", i), fmt.Sprint("visitor-", i), "hello"), http.StatusOK, "")
		}(i)
	}
	wg.Wait()
	waitFor(t, 15*time.Second, "four replies", func() bool { return len(replies.deliveries()) == 4 })
	waitFor(t, 10*time.Second, "the auto-recharge webhook", func() bool { return len(recharges.deliveries()) == 1 })
	if got := balanceOf(t, srv, subKey); got != 1 {
		t.Fatalf("balance %v after four replies, want 1", got)
	}
	d := recharges.deliveries()[0]
	wh, _ := standardwebhooks.NewWebhook(agencySecret)
	if err := wh.Verify(d.Body, d.Header); err != nil {
		t.Fatalf("the recharge webhook is not signed with the agency's secret: %v", err)
	}
	var payload map[string]any
	_ = json.Unmarshal(d.Body, &payload)
	key, _ := payload["idempotency_key"].(string)
	if key == "" || payload["sub_account_id"] != subID || payload["email"] != subEmail || payload["threshold"] != 3.0 || payload["amount"] != 10.0 {
		t.Fatalf("recharge payload: %s", d.Body)
	}
	if b, _ := payload["balance"].(float64); b >= 3 {
		t.Fatalf("balance in the payload %v should be below the threshold", b)
	}

	// One more reply empties the balance; the next message is stored, not answered, and alerts.
	incoming(t, srv, subKey, "last-paid", "visitor-x", "one more")
	waitFor(t, 10*time.Second, "the fifth reply", func() bool { return len(replies.deliveries()) == 5 })
	unpaid := incoming(t, srv, subKey, "unpaid", "visitor-y", "anyone?").JSON(t)["messageId"].(string)
	waitFor(t, 10*time.Second, "the bot to stop", func() bool { return messageField(t, srv, subKey, unpaid, "botStatus") == "failed" })
	alerts := do(t, "GET", srv.URL+"/v1/alerts", subKey, nil).JSON(t)["data"].([]any)
	if len(alerts) != 1 || !strings.Contains(alerts[0].(map[string]any)["reason"].(string), "out of credits") {
		t.Fatalf("alerts: %v", alerts)
	}
	if got := balanceOf(t, srv, subKey); got != 0 {
		t.Fatalf("balance %v, want 0", got)
	}
	if n := len(recharges.deliveries()); n != 1 {
		t.Fatalf("%d recharge webhooks for one low-balance event", n)
	}

	// The agency grants with the webhook's idempotency key: a second delivery of it grants nothing.
	for i := 0; i < 2; i++ {
		expect(t, do(t, "POST", srv.URL+"/v1/subaccounts/credits", agencyKey, map[string]any{"email": subEmail, "amount": 10}, "Idempotency-Key: "+key), http.StatusOK, "")
	}
	if got := balanceOf(t, srv, subKey); got != 10 {
		t.Fatalf("balance %v after the recharge, want 10", got)
	}
	// The grant re-armed it: spending down below 3 again is a new event.
	for i := 0; i < 8; i++ {
		incoming(t, srv, subKey, fmt.Sprint("again-", i), "visitor-z", "hi")
	}
	waitFor(t, 20*time.Second, "a second low-balance event", func() bool { return len(recharges.deliveries()) == 2 })
	var second map[string]any
	_ = json.Unmarshal(recharges.deliveries()[1].Body, &second)
	if second["idempotency_key"] == key {
		t.Fatalf("a new event must have a new idempotency key: %v", second)
	}
}

func TestAutoRechargeSettingsValidation(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	agencyKey, subKey, _, subID := agencyWithSub(t, 0)
	otherAgency, _, _, _ := agencyWithSub(t, 0)
	url := srv.URL + "/v1/subaccounts/" + subID + "/auto_recharge"
	good := map[string]any{"threshold": 1, "amount": 5, "webhookUrl": "http://127.0.0.1:9/recharge"}
	cases := []struct {
		name   string
		key    string
		url    string
		body   any
		status int
		code   string
	}{
		{"a sub-account", subKey, url, good, 403, models.CodeForbidden},
		{"another agency", otherAgency, url, good, 404, models.CodeNotFound},
		{"unknown sub-account", agencyKey, srv.URL + "/v1/subaccounts/acc_nope/auto_recharge", good, 404, models.CodeNotFound},
		{"missing amount", agencyKey, url, map[string]any{"threshold": 1, "webhookUrl": "http://127.0.0.1:9/x"}, 400, models.CodeValidation},
		{"negative threshold", agencyKey, url, map[string]any{"threshold": -1, "amount": 5, "webhookUrl": "http://127.0.0.1:9/x"}, 400, models.CodeValidation},
		{"zero amount", agencyKey, url, map[string]any{"threshold": 1, "amount": 0, "webhookUrl": "http://127.0.0.1:9/x"}, 400, models.CodeValidation},
		{"bad URL", agencyKey, url, map[string]any{"threshold": 1, "amount": 5, "webhookUrl": "ftp://x"}, 400, models.CodeValidation},
	}
	for _, tc := range cases {
		t.Run("refuses "+tc.name, func(t *testing.T) { expect(t, do(t, "PUT", tc.url, tc.key, tc.body), tc.status, tc.code) })
	}
	expect(t, do(t, "PUT", url, agencyKey, good), http.StatusOK, "")
}

// A charged reply takes its credits before it is sent: a burst from more visitors than the balance pays
// for gets exactly as many replies as credits, and every other message is left unanswered with an
// out-of-credits alert, however the bot tasks interleave.
func TestChargedRepliesNeverOutrunTheBalance(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	replies := newSink(t, nil)
	_, subKey, _, _ := agencyWithSub(t, 3)
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/webhook", subKey, map[string]any{"url": replies.URL + "/replies"}), http.StatusOK, "")

	const burst = 10
	ids := make([]string, burst)
	var wg sync.WaitGroup
	for i := range burst {
		wg.Go(func() {
			r := incoming(t, srv, subKey, fmt.Sprint("charged-", i), fmt.Sprint("payer-visitor-", i), "hello")
			expect(t, r, http.StatusOK, "")
			ids[i] = r.JSON(t)["messageId"].(string)
		})
	}
	wg.Wait()
	settled := func() (done, failed int) {
		for _, id := range ids {
			switch messageField(t, srv, subKey, id, "botStatus") {
			case "done":
				done++
			case "failed":
				failed++
			}
		}
		return done, failed
	}
	waitFor(t, 20*time.Second, "every message answered or refused", func() bool { d, f := settled(); return d+f == burst })
	waitDrained(t, mustAccountID(t, subKey), retryHorizon) // a reply beyond the balance, if one were on its way, would still be in a task
	if done, failed := settled(); done != 3 || failed != burst-3 {
		t.Fatalf("%d answered and %d refused of %d, want 3 answered (the balance) and the rest refused", done, failed, burst)
	}
	if n := len(replies.deliveries()); n != 3 {
		t.Fatalf("%d replies delivered for a balance of 3", n)
	}
	if got := balanceOf(t, srv, subKey); got != 0 {
		t.Fatalf("balance %v, want 0", got)
	}
	alerts := do(t, "GET", srv.URL+"/v1/alerts?limit=100", subKey, nil).JSON(t)["data"].([]any)
	if len(alerts) != burst-3 {
		t.Fatalf("%d alerts, want one per refused message (%d)", len(alerts), burst-3)
	}
}
