package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/jobs"
)

// TestOpeningDelaySkipsLeadsWhoWroteFirst: with openingDelayMinutes, a lead who messages within the
// delay entered the incoming flow and gets no opening. The test runs the delayed tasks at once
// through asynq's inspector instead of waiting the minute.
func TestOpeningDelaySkipsLeadsWhoWroteFirst(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"openingDelayMinutes": 1})
	eager := namedContact(t, srv, key, "+14155559301", "Eve")
	quiet := namedContact(t, srv, key, "+14155559302", "Quin")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{eager, quiet}}), http.StatusCreated, "")
	expect(t, incoming(t, srv, key, "eve-first", "+14155559301", "Hi, I have a question"), http.StatusOK, "")

	var sends []struct {
		ID        string `bun:"id"`
		ContactID string `bun:"contact_id"`
	}
	if err := env.Store.DB().NewSelect().TableExpr("campaign_sends").Column("id", "contact_id").Where("campaign_id = ?", campaignID).Scan(t.Context(), &sends); err != nil || len(sends) != 2 {
		t.Fatalf("sends %v, err %v", sends, err)
	}
	inspector := asynq.NewInspector(env.Asynq)
	defer inspector.Close()
	for _, s := range sends {
		if err := inspector.RunTask(jobs.QueueOpenings, "opening:"+s.ID); err != nil {
			t.Fatalf("run the delayed opening now: %v", err)
		}
	}
	status := func(contactID string) string {
		var st string
		_ = env.Store.DB().NewSelect().TableExpr("campaign_sends").Column("status").Where("campaign_id = ? AND contact_id = ?", campaignID, contactID).Scan(t.Context(), &st)
		return st
	}
	waitFor(t, 10*time.Second, "both sends to be decided", func() bool { return status(eager) == "skipped" && status(quiet) == "sent" })
	for _, m := range campaignMessages(t, campaignID) {
		if m.ContactID == eager {
			t.Fatalf("the lead who wrote first got the opening: %q", m.Body)
		}
	}
}
