package api_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/jobs"
)

// TestCampaignSendsFollowTheirOpeningsDelivery: a campaign's sends say what happened to the person,
// and follow-ups wait for the opening they follow. Ada's opening is refused once and delivered on its
// retry; Bo's is refused for good.
func TestCampaignSendsFollowTheirOpeningsDelivery(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t, "WEBHOOK_RETRY_SCHEDULE=3s")
	var adaRefused atomic.Bool
	var hook *sink
	hook = newSink(t, func(n int, w http.ResponseWriter, r *http.Request) {
		body := string(hook.deliveries()[n-1].Body)
		switch {
		case strings.Contains(body, "Hi Bo"):
			w.WriteHeader(http.StatusBadRequest) // final: a 4xx is not retried
		case strings.Contains(body, "Hi Ada") && !adaRefused.Swap(true):
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	key, _ := messagingAccount(t, srv, hook)
	// The follow-up is due about 1.1 s after the opening is delivered: before the opening's retry
	// (3 s) when it counted from the opening's writing.
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"followUpsEnabled": true, "followUpDelaysHours": []float64{0.0003}})
	ada := namedContact(t, srv, key, "+14155558101", "Ada")
	bo := namedContact(t, srv, key, "+14155558102", "Bo")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": []string{ada, bo}}), http.StatusCreated, "")

	sends := func() map[string]any {
		r := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID, key, nil)
		expect(t, r, http.StatusOK, "")
		return r.JSON(t)["sends"].(map[string]any)
	}
	waitFor(t, 10*time.Second, "Ada's opening refused once, Bo's for good", func() bool {
		s := sends()
		return adaRefused.Load() && s["failed"] == 1.0
	})
	if s := sends(); s["pending"] != 1.0 || s["sent"] != 0.0 {
		t.Fatalf("while Ada's opening waits for its retry: %v, want pending 1 and sent 0", s)
	}

	waitFor(t, 15*time.Second, "Ada's follow-up", func() bool { return len(campaignMessages(t, campaignID)) == 3 })
	waitFor(t, 10*time.Second, "the follow-up's delivery", func() bool { return len(hook.deliveries()) == 4 })
	var adaOpenings, boMessages int
	var openingSentAt, followUpAt time.Time
	for _, d := range hook.deliveries() {
		switch body := string(d.Body); {
		case strings.Contains(body, "Hi Ada, thanks for signing up"):
			adaOpenings++
			openingSentAt = d.At
		case strings.Contains(body, "Hi Bo"):
			boMessages++
		default:
			followUpAt = d.At
		}
	}
	if adaOpenings != 2 || boMessages != 1 || followUpAt.IsZero() {
		t.Fatalf("Ada's opening delivered %d times (want refused, then accepted), Bo got %d (want his one refused opening), follow-up at %v",
			adaOpenings, boMessages, followUpAt)
	}
	if gap := followUpAt.Sub(openingSentAt); gap < time.Second {
		t.Fatalf("Ada's follow-up came %s after her opening was delivered, want its delay of about 1.1 s", gap)
	}
	// Bo's follow-up was never scheduled: his send owes none, and no task for it waits in the queue.
	boSend := sendIDOf(t, campaignID, bo)
	if n, err := env.Store.DB().NewSelect().Table("campaign_sends").
		Where("id = ? AND next_follow_up_at IS NULL", boSend).Count(t.Context()); err != nil || n != 1 {
		t.Fatalf("Bo's send owes a follow-up (%v), want none", err)
	}
	inspector := asynq.NewInspector(env.Asynq)
	defer inspector.Close()
	if info, err := inspector.GetTaskInfo(jobs.QueueLow, "followup:"+boSend+":1"); err == nil {
		t.Fatalf("Bo's follow-up is queued: %+v", info)
	}
	if n := len(campaignMessages(t, campaignID)); n != 3 {
		t.Fatalf("%d campaign messages, want 3: Bo, whose opening failed, gets no follow-up", n)
	}
	if s := sends(); s["sent"] != 1.0 || s["failed"] != 1.0 || s["pending"] != 0.0 {
		t.Fatalf("sends at the end: %v", s)
	}

	t.Run("GET sends lists each with its status and reason", func(t *testing.T) {
		r := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends", key, nil)
		expect(t, r, http.StatusOK, "")
		byContact := map[string]map[string]any{}
		for _, v := range r.JSON(t)["data"].([]any) {
			s := v.(map[string]any)
			byContact[s["contactId"].(string)] = s
		}
		if s := byContact[ada]; s["status"] != "sent" || s["messageId"] == nil || s["reason"] != nil {
			t.Fatalf("Ada's send: %v", s)
		}
		if s := byContact[bo]; s["status"] != "failed" || !strings.Contains(errorText(s["reason"]), "400") {
			t.Fatalf("Bo's send: %v", s)
		}
		failed := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends?status=failed", key, nil)
		expect(t, failed, http.StatusOK, "")
		if data := failed.JSON(t)["data"].([]any); len(data) != 1 || data[0].(map[string]any)["contactId"] != bo {
			t.Fatalf("?status=failed: %v", data)
		}
		page := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends?limit=1", key, nil).JSON(t)
		if len(page["data"].([]any)) != 1 || page["nextCursor"] == nil {
			t.Fatalf("first page of one: %v", page)
		}
		rest := do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends?limit=1&cursor="+page["nextCursor"].(string), key, nil).JSON(t)
		if len(rest["data"].([]any)) != 1 || rest["nextCursor"] != nil {
			t.Fatalf("second page: %v", rest)
		}
		expect(t, do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends?status=delivered", key, nil), http.StatusBadRequest, "VALIDATION_ERROR")
		_, otherKey := newAccount(t)
		expect(t, do(t, "GET", srv.URL+"/v1/campaigns/"+campaignID+"/sends", otherKey, nil), http.StatusNotFound, "NOT_FOUND")
	})
}

// TestSweepSettlesAnOpeningWhoseDeliveryWentUnrecorded: a worker that dies between recording an
// opening's delivery and settling its send leaves the send pending; the sweep settles it, and the
// follow-up it owes is queued then.
func TestSweepSettlesAnOpeningWhoseDeliveryWentUnrecorded(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	// The follow-up is due about 3.6 s after the opening's delivery: the test resets the send long before.
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"followUpsEnabled": true, "followUpDelaysHours": []float64{0.001}})
	cy := namedContact(t, srv, key, "+14155558201", "Cy")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": cy}), http.StatusCreated, "")
	sendStatus := func() string {
		var status []string
		if err := env.Store.DB().NewSelect().Table("campaign_sends").Column("status").Where("campaign_id = ?", campaignID).Scan(t.Context(), &status); err != nil || len(status) != 1 {
			t.Fatalf("send: %v %v", status, err)
		}
		return status[0]
	}
	waitFor(t, 10*time.Second, "the opening delivered and settled", func() bool { return sendStatus() == "sent" })
	// As if the worker had died before settling: pending, no follow-up scheduled, its task gone (and
	// follow_ups_done as an opening's send has it before it is settled: false, since only a goal or an
	// opt-out sets it then, and settling keeps what they set).
	_, err := env.Store.DB().NewUpdate().Table("campaign_sends").Set("status = 'pending'").Set("sent_at = NULL").
		Set("next_follow_up_at = NULL").Set("follow_ups_done = FALSE").Where("campaign_id = ?", campaignID).Exec(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(campaignMessages(t, campaignID)); n != 1 {
		t.Fatalf("%d campaign messages before the repair, want the opening only", n)
	}
	waitFor(t, 20*time.Second, "the sweep to settle the send and its follow-up to go", func() bool {
		return sendStatus() == "sent" && len(campaignMessages(t, campaignID)) == 2
	})
}
