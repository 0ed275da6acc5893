package models_test

import (
	"context"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// firstReplyFixture is a live campaign on the custom channel "web" and one contact queued for it, who
// wrote once before the campaign.
type firstReplyFixture struct {
	acc      string
	campaign *models.Campaign
	contact  *models.Contact
	fromID   string
	sendID   string
}

func newFirstReplyFixture(t *testing.T) *firstReplyFixture {
	t.Helper()
	ctx := context.Background()
	f := &firstReplyFixture{acc: newAccount(t).Account.ID, fromID: testenv.UniqueFromID("fr")}
	l, err := env.Store.CreateList(ctx, f.acc, "leads")
	if err != nil {
		t.Fatal(err)
	}
	name, ch, status := "first replies", "custom:web", models.CampaignLive
	if f.campaign, err = env.Store.CreateCampaign(ctx, f.acc, models.CampaignInput{Name: &name, Channel: &ch, Status: &status,
		ListID: &l.ID, OpeningMessages: &[]string{"Hi", "Hello"}}); err != nil {
		t.Fatal(err)
	}
	m := testenv.ReceiveOn(t, env.Store, f.acc, f.fromID, "web", "hello")
	f.contact = testenv.Contact(t, env.Store, f.acc, m.ContactID)
	f.sendID = testenv.Queue(t, env.Store, f.acc, l.ID, f.contact.ID)[f.contact.ID]
	return f
}

// times reads the send's written_at and first_reply_at.
func (f *firstReplyFixture) times(t *testing.T) (written, first *time.Time) {
	t.Helper()
	err := env.Store.DB().NewRaw("SELECT written_at, first_reply_at FROM campaign_sends WHERE id = ?", f.sendID).
		Scan(context.Background(), &written, &first)
	if err != nil {
		t.Fatal(err)
	}
	return written, first
}

func (f *firstReplyFixture) wantFirstReply(t *testing.T, step string, want *models.Message) {
	t.Helper()
	testenv.CheckCampaignSends(t, env.Store.DB(), f.acc)
	_, got := f.times(t)
	switch {
	case want == nil && got != nil:
		t.Errorf("%s: first reply at %s, want none", step, got)
	case want != nil && (got == nil || !got.Equal(want.CreatedAt)):
		t.Errorf("%s: first reply at %v, want %s (%q)", step, got, want.CreatedAt, want.Body)
	}
}

// A send's written_at and first_reply_at, which database triggers keep for the campaign report, follow
// every write that changes them, on both backends: the opening written after an earlier message, a STOP
// (a reply until it is handled as an opt-out keyword, then none), an opt-in keyword (a reply), a later
// reply, a message's time moved (as data repairs and fixtures do), and the opening's id cleared.
func TestCampaignFirstReplyFollowsEveryWrite(t *testing.T) {
	ctx := context.Background()
	f := newFirstReplyFixture(t)
	f.wantFirstReply(t, "queued", nil)

	s, err := env.Store.CampaignSend(ctx, f.sendID)
	if err != nil {
		t.Fatal(err)
	}
	opening, err := env.Store.WriteOpening(ctx, s, models.OutgoingMessage{Campaign: f.campaign, Contact: f.contact, Body: "Hi", ToID: f.fromID})
	if err != nil || opening == nil {
		t.Fatalf("write opening: %v", err)
	}
	if written, _ := f.times(t); written == nil || !written.Equal(opening.CreatedAt) {
		t.Errorf("written_at %v, want the opening's %s", written, opening.CreatedAt)
	}
	f.wantFirstReply(t, "opening written after the contact's first message", nil)

	stop := testenv.ReceiveOn(t, env.Store, f.acc, f.fromID, "web", "STOP")
	f.wantFirstReply(t, "a STOP not handled yet", stop)
	if out, err := env.Store.HandleKeyword(ctx, stop); err != nil || out == nil || out.Kind != models.KeywordOptOut {
		t.Fatalf("STOP: %+v, %v", out, err)
	}
	f.wantFirstReply(t, "the STOP handled as an opt-out", nil)

	start := testenv.ReceiveOn(t, env.Store, f.acc, f.fromID, "web", "START")
	if out, err := env.Store.HandleKeyword(ctx, start); err != nil || out == nil || out.Kind != models.KeywordOptIn {
		t.Fatalf("START: %+v, %v", out, err)
	}
	f.wantFirstReply(t, "an opt-in keyword", start)

	later := testenv.ReceiveOn(t, env.Store, f.acc, f.fromID, "web", "sounds good")
	f.wantFirstReply(t, "a later reply", start)

	later.CreatedAt = start.CreatedAt.Add(-time.Millisecond)
	testenv.Exec(t, env.Store, "UPDATE messages SET created_at = ? WHERE id = ?", later.CreatedAt, later.ID)
	f.wantFirstReply(t, "a reply's time moved before the opt-in", later)

	testenv.Exec(t, env.Store, "UPDATE messages SET created_at = ? WHERE id = ?", later.CreatedAt.Add(time.Hour), opening.ID)
	f.wantFirstReply(t, "the opening's time moved after every reply", nil)
	testenv.Exec(t, env.Store, "UPDATE messages SET created_at = ? WHERE id = ?", opening.CreatedAt, opening.ID)
	f.wantFirstReply(t, "and back", later)

	testenv.Exec(t, env.Store, "UPDATE campaign_sends SET message_id = NULL WHERE id = ?", f.sendID)
	if written, first := f.times(t); written != nil || first != nil {
		t.Errorf("without its opening: written_at %v, first_reply_at %v; want neither", written, first)
	}
	testenv.Exec(t, env.Store, "UPDATE campaign_sends SET message_id = ? WHERE id = ?", opening.ID, f.sendID)
	f.wantFirstReply(t, "the opening's id set again", later)

	// The migration's backfill finds the same times for sends written before the columns.
	testenv.Exec(t, env.Store, "UPDATE campaign_sends SET written_at = NULL, first_reply_at = NULL WHERE id = ?", f.sendID)
	if err := models.BackfillFirstRepliesForTest(ctx, env.Store.DB()); err != nil {
		t.Fatal(err)
	}
	f.wantFirstReply(t, "backfilled", later)
}

// A reply stored while the contact's opening is being written waits for the opening's transaction and
// then counts: without the lock, its trigger would read the send as it was before the opening (no
// written_at), skip it, and the reply would be lost if its commit ended after the opening's own
// lookup. The opening's transaction is held open, as WriteOpening leaves it before its commit.
func TestCampaignFirstReplyWaitsForAnOpeningBeingWritten(t *testing.T) {
	if !env.Postgres() {
		t.Skip("SQLite runs one writing transaction at a time")
	}
	ctx := context.Background()
	f := newFirstReplyFixture(t)
	h := holdTx(t, env.Store)
	openingID := models.NewIDAtForTest("msg_", time.Now())
	if _, err := h.ExecContext(ctx, "UPDATE campaign_sends SET status = 'pending', message_id = ? WHERE id = ?", openingID, f.sendID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ExecContext(ctx, `INSERT INTO messages (id, account_id, contact_id, campaign_id, direction, channel, transport,
		message_type, body, to_id, author, status, created_at) VALUES (?, ?, ?, ?, 'outgoing', 'web', 'custom', 'text', 'Hi', ?, 'campaign', 'pending', ?)`,
		openingID, f.acc, f.contact.ID, f.campaign.ID, f.fromID, time.Now().UTC()); err != nil {
		t.Fatal(err)
	}
	var (
		reply *models.Message
		err   error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		in := models.IncomingInput{ExternalID: testenv.UniqueFromID("sid"), FromID: f.fromID, ToID: "business", Body: "yes please", Channel: "web"}
		if err = in.Validate(1 << 20); err == nil {
			reply, _, err = env.Store.IngestIncoming(ctx, f.acc, in)
		}
	}()
	if !h.waitBlocked(t, 1, done) {
		t.Error("the reply did not wait for the opening being written")
	}
	if err := h.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil {
		t.Fatal(err)
	}
	f.wantFirstReply(t, "a reply stored while the opening was written", reply)
}
