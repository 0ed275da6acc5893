package main_test

import (
	"net/http"
	"testing"
	"time"
)

// TestKilledWorkerSendsTheOptOutConfirmationOnce: a STOP is stored with its opt-out and its
// confirmation; the process delivering the confirmation is killed (SIGKILL) while the receiver holds
// the request. After recovery the confirmation arrives once (one webhook-id answered 200), not twice
// and not never, the contact stays opted out with one event, and the bot never answers the STOP.
func TestKilledWorkerSendsTheOptOutConfirmationOnce(t *testing.T) {
	t.Parallel()
	sink := newBlockingSink(t)
	d := startKillDeployment(t, "stop-kill@example.com", 1, sink.URL+"/hook", "WEBHOOK_RETRY_SCHEDULE=1s,1s,1s,1s")
	status, body := d.call("POST", "/v1/incoming_custom_channel_message", map[string]any{
		"customData": map[string]any{"messageSid": "stop-1", "fromId": "nora", "toId": "biz", "body": "STOP", "channel": "sms-gateway"},
	})
	if status != http.StatusOK {
		t.Fatalf("incoming: %d %v", status, body)
	}
	_, stop := d.call("GET", "/v1/messages/"+body["messageId"].(string), nil)
	contactID, _ := stop["contactId"].(string)
	// Opted out before the answer, whatever happens to the confirmation's delivery.
	_, consent := d.call("GET", "/v1/contacts/"+contactID+"/consent", nil)
	if ch, _ := consent["channels"].(map[string]any)["sms-gateway"].(map[string]any); ch["status"] != "opted_out" {
		t.Fatalf("consent right after STOP: %v", consent)
	}
	waitUntil(t, 20*time.Second, "the confirmation to reach the sink", func() bool { r, _ := sink.counts(); return r >= 1 })

	d.killVictim(true)
	waitUntil(t, 200*time.Second, "the confirmation to be delivered after the kill", func() bool { _, c := sink.counts(); return len(c) >= 1 })
	time.Sleep(3 * time.Second) // a duplicate, if one were coming, would be on its way by now
	received, completed := sink.counts()
	if len(completed) != 1 {
		t.Fatalf("%d completed deliveries (%v), want exactly 1; %d requests in all", len(completed), completed, received)
	}
	_, settings := d.call("GET", "/v1/settings/compliance", nil)
	_, m := d.call("GET", "/v1/messages/"+completed[0], nil)
	if m["body"] != settings["optOutConfirmation"] || m["authorType"] != "system" || m["replyToId"] != stop["id"] {
		t.Fatalf("the delivered message is not the STOP's confirmation: %v", m)
	}
	_, consent = d.call("GET", "/v1/contacts/"+contactID+"/consent", nil)
	if events, _ := consent["events"].([]any); len(events) != 1 {
		t.Fatalf("%d consent events after recovery, want the one STOP: %v", len(events), consent)
	}
	_, msgs := d.call("GET", "/v1/contacts/"+contactID+"/messages", nil)
	if data, _ := msgs["data"].([]any); len(data) != 2 {
		t.Fatalf("conversation has %d messages, want the STOP and its confirmation: %v", len(data), msgs)
	}
}
