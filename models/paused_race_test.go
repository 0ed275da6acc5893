package models_test

import (
	"context"
	"testing"

	"funnelchat/models"
)

// TestListAddWaitingForAResumeQueuesItsSend: a contact added while the campaign's status changes from
// paused to live is queued, not held. The status change is a transaction held open with the campaign's
// row locked (what UpdateCampaign does); the add waits for it and reads the new status. Had it read
// paused and written its send held, the resume (which had already queued the held sends) would never
// have queued it.
func TestListAddWaitingForAResumeQueuesItsSend(t *testing.T) {
	if !env.Postgres() {
		t.Skip("row locks: PostgreSQL (SQLite runs one writer at a time)")
	}
	ctx := context.Background()
	accID := csAccount(t, "paused race").Account.ID
	c, l := csCampaign(t, accID, "web")
	paused := models.CampaignPaused
	if _, _, err := env.Store.UpdateCampaign(ctx, accID, c.ID, models.CampaignInput{Status: &paused}); err != nil {
		t.Fatal(err)
	}
	contactID := csIncoming(t, env.Store, accID, csFrom("paused race"), "web", "hi").ContactID

	tx, err := env.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "SELECT id FROM campaigns WHERE id = ? FOR UPDATE", c.ID); err != nil {
		t.Fatal(err)
	}
	type added struct {
		res *models.AddResult
		err error
	}
	done := make(chan added, 1)
	go func() {
		res, err := env.Store.AddToList(ctx, accID, l.ID, []string{contactID})
		done <- added{res, err}
	}()
	waitForLockWait(t, "campaigns")
	if _, err := tx.ExecContext(ctx, "UPDATE campaigns SET status = ? WHERE id = ?", models.CampaignLive, c.ID); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if len(got.res.Sends) != 1 {
		t.Fatalf("the add returned %d sends to enqueue, want 1 (the campaign is live)", len(got.res.Sends))
	}
	send, err := env.Store.CampaignSend(ctx, got.res.Sends[0].SendID)
	if err != nil || send.Status != models.SendQueued {
		t.Fatalf("send %+v (%v), want queued", send, err)
	}
}
