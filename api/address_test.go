package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"funnelchat/models"
)

// A lead a campaign reached on a custom channel (created by phone, or by email) is answered by the
// team at the address its opening went to, on the campaign's channel, with no channel named; a
// contact never reached and never written answers 409 NO_ADDRESS.
func TestTeamAnswersAContactACampaignReached(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	_, listID := liveCampaign(t, srv, key, nil)

	byPhone := namedContact(t, srv, key, "+14155550171", "Pia")
	r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"email": "eli@example.com", "firstName": "Eli"})
	expect(t, r, http.StatusCreated, "")
	byEmail := r.JSON(t)["id"].(string)
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{byPhone, byEmail}}),
		http.StatusCreated, "")
	waitFor(t, 30*time.Second, "two openings", func() bool { return len(hook.deliveries()) == 2 })

	for contact, to := range map[string]string{byPhone: "+14155550171", byEmail: "eli@example.com"} {
		r := do(t, "POST", srv.URL+"/v1/contacts/"+contact+"/messages", key, map[string]any{"body": "Sam from the team here."})
		expect(t, r, http.StatusCreated, "")
		if got := r.JSON(t)["channel"]; got != "chat" {
			t.Fatalf("team reply to %s (%s) on %v, want chat (where its opening went)", contact, to, got)
		}
	}
	waitFor(t, 10*time.Second, "the two team replies at the sink", func() bool { return len(hook.deliveries()) == 4 })
	seen := map[string]int{}
	for _, d := range hook.deliveries() {
		var p map[string]any
		_ = json.Unmarshal(d.Body, &p)
		seen[p["toId"].(string)+" on "+p["channel"].(string)]++
	}
	if seen["+14155550171 on chat"] != 2 || seen["eli@example.com on chat"] != 2 {
		t.Fatalf("deliveries by address: %v, want an opening and a reply at each lead's address", seen)
	}

	t.Run("a contact never reached nor written", func(t *testing.T) {
		lone := newContact(t, srv, key, "+14155550172")
		r := do(t, "POST", srv.URL+"/v1/contacts/"+lone+"/messages", key, map[string]any{"body": "hello?"})
		expect(t, r, http.StatusConflict, models.CodeNoAddress)
		// Naming a channel is enough when the contact has an address there: its phone on a custom one.
		r = do(t, "POST", srv.URL+"/v1/contacts/"+lone+"/messages", key, map[string]any{"body": "hello", "channel": "chat"})
		expect(t, r, http.StatusCreated, "")
		waitFor(t, 10*time.Second, "the reply at the phone", func() bool {
			for _, d := range hook.deliveries() {
				var p map[string]any
				_ = json.Unmarshal(d.Body, &p)
				if p["toId"] == "+14155550172" && p["channel"] == "chat" {
					return true
				}
			}
			return false
		})
	})
}
