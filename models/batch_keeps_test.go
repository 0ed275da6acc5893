package models_test

import (
	"context"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// batchOf validates the messages of one ingest batch, each under a new messageSid.
func batchOf(t *testing.T, channel string, froms ...string) []models.IncomingInput {
	t.Helper()
	ins := make([]models.IncomingInput, len(froms))
	for i, from := range froms {
		ins[i] = models.IncomingInput{ExternalID: testenv.UniqueFromID("sid"), FromID: from, ToID: "business", Body: "hello from " + from, Channel: channel}
		if err := ins[i].Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
	}
	return ins
}

// ingestSetBased stores ins as one batch and fails the test unless it went set-based, the path that
// keeps its conversations and first replies itself (batch_keeps.go).
func ingestSetBased(t *testing.T, acc string, ins []models.IncomingInput) []models.IngestedForTest {
	t.Helper()
	res, err := env.Store.IngestForTest(context.Background(), acc, ins, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.SetBased || r.Duplicate {
			t.Fatalf("message %d of the batch: set-based %v, duplicate %v; want a new message stored set-based", i, r.SetBased, r.Duplicate)
		}
	}
	return res
}

// A set-based batch keeps, in its own statements, what the triggers keep for every other write: the
// conversation rows of its new senders, of a contact found by phone that had no conversation yet, and
// of a sender who wrote before; and the first reply of a contact whose campaign opening was written.
func TestIngestBatchKeepsConversationsAndFirstReplies(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the batch ingest is PostgreSQL's (SQLite stores each message in its own transaction)")
	}
	ctx := context.Background()
	f := newFirstReplyFixture(t)
	s, err := env.Store.CampaignSend(ctx, f.sendID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.WriteOpening(ctx, s, models.OutgoingMessage{Campaign: f.campaign, Contact: f.contact, Body: "Hi", ToID: f.fromID}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Store.CreateOrGetContact(ctx, f.acc, models.ContactInput{FirstName: "Phone", Phone: "+14155550142"}); err != nil {
		t.Fatal(err)
	}
	known := testenv.UniqueFromID("known")
	testenv.ReceiveOn(t, env.Store, f.acc, known, "web", "an earlier message")
	testenv.CheckConversationTable(t, env.Store.DB(), f.acc)

	res := ingestSetBased(t, f.acc, batchOf(t, "web", f.fromID, "+14155550142", known, testenv.UniqueFromID("new"), testenv.UniqueFromID("new")))
	testenv.CheckConversationTable(t, env.Store.DB(), f.acc)
	testenv.CheckCampaignSends(t, env.Store.DB(), f.acc)
	var replyAt time.Time
	if err := env.Store.DB().NewRaw("SELECT created_at FROM messages WHERE id = ?", res[0].MessageID).Scan(ctx, &replyAt); err != nil {
		t.Fatal(err)
	}
	if _, first := f.times(t); first == nil || !first.Equal(replyAt) {
		t.Errorf("first reply at %v, want the batch's reply's %s", first, replyAt)
	}
	var n int
	if err := env.Store.DB().NewRaw("SELECT count(*) FROM conversations WHERE account_id = ?", f.acc).Scan(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Errorf("%d conversations, want 5 (the fixture's contact, the contact found by phone, the earlier sender, two new senders)", n)
	}
}

// An assignment not yet committed, of a contact that has no conversation yet, when a set-based batch
// makes the contact's first conversation row: the batch reads the contact's columns under a share lock,
// so it waits for the assignment and copies its assignee (without the lock, the assignment's trigger
// could run before the row exists and the row be made with no assignee).
func TestIngestBatchFirstConversationWaitsForAnAssignment(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the race needs two PostgreSQL transactions at once")
	}
	ctx := context.Background()
	acc := newAccount(t).Account.ID
	user := testenv.AddUser(t, env.Store, acc, models.RoleMember)
	c, _, err := env.Store.CreateOrGetContact(ctx, acc, models.ContactInput{FirstName: "Phone", Phone: "+14155550143"})
	if err != nil {
		t.Fatal(err)
	}
	h := holdTx(t, env.Store)
	if _, err := h.ExecContext(ctx, "UPDATE contacts SET assignee_id = ? WHERE id = ?", user.User.ID, c.ID); err != nil {
		t.Fatal(err)
	}
	ins := batchOf(t, "chat", "+14155550143", testenv.UniqueFromID("new"))
	var res []models.IngestedForTest
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err = env.Store.IngestForTest(ctx, acc, ins, false)
	}()
	blocked := h.waitBlocked(t, 1, done)
	if err := h.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].SetBased {
		t.Fatal("the batch was stored message by message, not set-based")
	}
	if !blocked {
		t.Error("the batch did not wait for the assignment")
	}
	testenv.CheckConversationTable(t, env.Store.DB(), acc)
	var assignee *string
	if err := env.Store.DB().NewRaw("SELECT assignee_id FROM conversations WHERE contact_id = ?", c.ID).Scan(ctx, &assignee); err != nil {
		t.Fatal(err)
	}
	if assignee == nil || *assignee != user.User.ID {
		t.Errorf("the conversation's assignee is %v, want %s", assignee, user.User.ID)
	}
}
