package models_test

import (
	"context"
	"testing"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// A contact's first message (a STOP, say) commits while a transaction that locked the contact goes on
// to lock the contact's campaign send: the message's commit takes the send first and the contact
// (share, to copy its columns into the new conversation row) second, and PostgreSQL breaks the cycle by
// aborting one of them. When that is the message's, its store runs it again, as every transaction's
// conflict is (models/tx.go), instead of answering the sender 503. The transaction held here plays the
// campaign opening written for the contact at that moment.
func TestIngestRetriesADeadlock(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the deadlock needs two PostgreSQL transactions at once")
	}
	ctx := context.Background()
	f := newFirstReplyFixture(t) // a live campaign on the channel "web"
	c, _, err := env.Store.CreateOrGetContact(ctx, f.acc, models.ContactInput{FirstName: "Racer", Phone: "+14155550177"})
	if err != nil {
		t.Fatal(err)
	}
	send := testenv.Queue(t, env.Store, f.acc, *f.campaign.ListID, c.ID)[c.ID]

	h := holdTx(t, env.Store)
	if _, err := h.ExecContext(ctx, "UPDATE contacts SET first_name = first_name WHERE id = ?", c.ID); err != nil {
		t.Fatal(err)
	}
	in := models.IncomingInput{ExternalID: testenv.UniqueFromID("sid"), FromID: "+14155550177", ToID: "business", Body: "STOP", Channel: "web"}
	if err := in.Validate(1 << 20); err != nil {
		t.Fatal(err)
	}
	var (
		stored *models.Message
		ierr   error
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		stored, _, ierr = env.Store.IngestIncoming(ctx, f.acc, in)
	}()
	if !h.waitBlocked(t, 1, done) {
		t.Fatal("the message's commit did not wait for the contact")
	}
	// The cycle: the held transaction now wants the send the message's commit holds. The message's
	// commit waited first, so its deadlock check (after deadlock_timeout) finds the cycle and aborts it.
	if _, err := h.ExecContext(ctx, "UPDATE campaign_sends SET status = status WHERE id = ?", send); err != nil {
		t.Fatalf("the held transaction was the one aborted: %v", err)
	}
	if err := h.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if ierr != nil {
		t.Fatalf("the message was not stored: %v", ierr)
	}
	if stored.ContactID != c.ID {
		t.Errorf("stored for contact %s, want %s", stored.ContactID, c.ID)
	}
	testenv.CheckConversationTable(t, env.Store.DB(), f.acc)
}
