package models_test

import (
	"context"
	"testing"
	"time"

	"funnelchat/models"
)

// fuSetup makes a live campaign with two follow-ups and one contact whose opening was written and
// delivered, so that its first follow-up is due.
func fuSetup(t *testing.T, name string) (c *models.Campaign, contact *models.Contact, send *models.CampaignSend, fromID string) {
	t.Helper()
	ctx := context.Background()
	accID := csAccount(t, name).Account.ID
	c, l := csCampaign(t, accID, "web")
	delays, on := []float64{24, 48}, true
	c, _, err := env.Store.UpdateCampaign(ctx, accID, c.ID, models.CampaignInput{FollowUpsEnabled: &on, FollowUpDelaysHours: &delays})
	if err != nil {
		t.Fatal(err)
	}
	fromID = csFrom(name)
	contactID := csIncoming(t, env.Store, accID, fromID, "web", "hi").ContactID
	sendID := csQueue(t, accID, l.ID, contactID)[contactID]
	send, err = env.Store.CampaignSend(ctx, sendID)
	if err != nil {
		t.Fatal(err)
	}
	contact = csContact(t, accID, contactID)
	if _, err := env.Store.WriteOpening(ctx, send, models.OutgoingMessage{Campaign: c, Contact: contact, Body: "Hi", ToID: fromID}); err != nil {
		t.Fatal(err)
	}
	return c, contact, send, fromID
}

// TestFollowUpNotWrittenAfterAReply: a reply stored after the worker decided to follow up (while the
// follow-up's text was being generated) stops the follow-up in its write, and ends the rest.
func TestFollowUpNotWrittenAfterAReply(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, contact, send, fromID := fuSetup(t, "FU reply")
	due, err := env.Store.SettleOpening(ctx, *csSendMessage(t, send.ID), true, time.Now(), "")
	if err != nil || due == nil {
		t.Fatalf("no follow-up due after the delivery: %+v, %v", due, err)
	}
	send, _ = env.Store.CampaignSend(ctx, send.ID) // what the worker read before asking the model

	csIncoming(t, env.Store, c.AccountID, fromID, "web", "yes, book me")

	m, err := env.Store.WriteFollowUp(ctx, send, 1, models.OutgoingMessage{Campaign: c, Contact: contact, Body: "Still there?", ToID: fromID})
	if err != nil || m != nil {
		t.Fatalf("follow-up written after the lead replied: %+v, %v", m, err)
	}
	csWantSend(t, send.ID, models.SendSent, "", true, "replied before the follow-up's write")
}

// TestFollowUpNotWrittenAfterAGoal: a goal recorded while the follow-up's text was being generated
// stops it, also for a goal the send row was not told about (a goal of the campaign recorded before
// the send existed leaves no flag on it).
func TestFollowUpNotWrittenAfterAGoal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, contact, send, fromID := fuSetup(t, "FU goal")
	if _, err := env.Store.SettleOpening(ctx, *csSendMessage(t, send.ID), true, time.Now(), ""); err != nil {
		t.Fatal(err)
	}
	send, _ = env.Store.CampaignSend(ctx, send.ID)
	// The goal row alone, as one recorded before this send was queued leaves it.
	if _, err := env.Store.DB().NewInsert().Model(&models.Goal{
		ID: "goal_fu_" + send.ID, AccountID: c.AccountID, ContactID: contact.ID, CampaignID: &c.ID, Source: models.GoalSourceAPI, At: time.Now(),
	}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := env.Store.WriteFollowUp(ctx, send, 1, models.OutgoingMessage{Campaign: c, Contact: contact, Body: "Still there?", ToID: fromID})
	if err != nil || m != nil {
		t.Fatalf("follow-up written after the goal: %+v, %v", m, err)
	}
	csWantSend(t, send.ID, models.SendSent, "", true, "goal before the follow-up's write")
}

// TestSettleOpeningKeepsAGoalRecordedMeanwhile: a goal that commits while the opening's delivery is
// being recorded (SettleOpening has read the send and waits for the row) is not undone: no
// follow-up is scheduled and the send's follow-ups stay ended. PostgreSQL: the test holds the goal's
// transaction open until SettleOpening waits on the send's row.
func TestSettleOpeningKeepsAGoalRecordedMeanwhile(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the interleaving needs PostgreSQL's row locks; SQLite runs one statement at a time")
	}
	t.Parallel()
	ctx := context.Background()
	c, contact, send, _ := fuSetup(t, "FU settle goal")
	opening := *csSendMessage(t, send.ID)

	// What ReachGoal writes, in a transaction held open.
	tx, err := env.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.NewInsert().Model(&models.Goal{
		ID: "goal_settle_" + send.ID, AccountID: c.AccountID, ContactID: contact.ID, CampaignID: &c.ID, Source: models.GoalSourceAPI, At: time.Now(),
	}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE campaign_sends SET follow_ups_done = true, next_follow_up_at = NULL WHERE id = ?`, send.ID); err != nil {
		t.Fatal(err)
	}

	type settled struct {
		due *models.DueFollowUp
		err error
	}
	done := make(chan settled, 1)
	go func() {
		due, err := env.Store.SettleOpening(ctx, opening, true, time.Now(), "")
		done <- settled{due, err}
	}()
	waitForLockWait(t, "campaign_sends")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil || got.due != nil {
		t.Fatalf("settled after the goal: follow-up due %+v, %v", got.due, got.err)
	}
	csWantSend(t, send.ID, models.SendSent, "", true, "goal committed while the delivery was recorded")
}

// waitForLockWait waits until a statement of this database touching table waits for a lock.
func waitForLockWait(t *testing.T, table string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		err := env.Store.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || ? || '%'`, table).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no statement on %s waited for a lock", table)
}
