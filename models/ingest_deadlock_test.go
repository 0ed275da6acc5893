package models_test

import (
	"context"
	"testing"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// ingestAsync stores an incoming message from phone on the channel "web" in a goroutine; the returned
// func waits for it and fails the test unless it was stored for contact.
func ingestAsync(t *testing.T, acc, phone, contact string) (done chan struct{}, check func()) {
	t.Helper()
	in := models.IncomingInput{ExternalID: testenv.UniqueFromID("sid"), FromID: phone, ToID: "business", Body: "STOP", Channel: "web"}
	if err := in.Validate(1 << 20); err != nil {
		t.Fatal(err)
	}
	var (
		stored *models.Message
		err    error
	)
	done = make(chan struct{})
	go func() {
		defer close(done)
		stored, _, err = env.Store.IngestIncoming(context.Background(), acc, in)
	}()
	return done, func() {
		t.Helper()
		<-done
		if err != nil {
			t.Fatalf("the message was not stored: %v", err)
		}
		if stored.ContactID != contact {
			t.Errorf("stored for contact %s, want %s", stored.ContactID, contact)
		}
	}
}

// racerWithSend makes, in a live campaign on the channel "web", a contact with phone and a queued
// campaign send, and returns the fixture, the contact's id and the send's.
func racerWithSend(t *testing.T, phone string) (f *firstReplyFixture, contact, send string) {
	t.Helper()
	f = newFirstReplyFixture(t)
	c, _, err := env.Store.CreateOrGetContact(context.Background(), f.acc, models.ContactInput{FirstName: "Racer", Phone: phone})
	if err != nil {
		t.Fatal(err)
	}
	return f, c.ID, testenv.Queue(t, env.Store, f.acc, *f.campaign.ListID, c.ID)[c.ID]
}

// A contact's first message (a STOP, say) commits while a transaction that locked the contact goes on
// to lock the contact's campaign send, as an opening being written does. The message's commit takes
// the contact (share, to copy its columns into the new conversation row) before the send, in the
// order of models/tx.go, so it waits for that transaction and holds nothing that transaction wants:
// the send stays free while it waits, and nobody is aborted. When the commit took the send first, the
// held transaction's next statement closed a cycle that PostgreSQL broke by aborting one of the two.
func TestAFirstMessageLocksItsContactBeforeItsSends(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the lock order needs two PostgreSQL transactions at once")
	}
	ctx := context.Background()
	f, contact, send := racerWithSend(t, "+14155550177")

	h := holdTx(t, env.Store)
	if _, err := h.ExecContext(ctx, "UPDATE contacts SET first_name = first_name WHERE id = ?", contact); err != nil {
		t.Fatal(err)
	}
	done, stored := ingestAsync(t, f.acc, "+14155550177", contact)
	if !h.waitBlocked(t, 1, done) {
		t.Fatal("the message's commit did not wait for the contact")
	}
	// NOWAIT: a lock someone holds is an error at once (lock_not_available), not a wait.
	probe, err := env.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probe.ExecContext(ctx, "SELECT 1 FROM campaign_sends WHERE id = ? FOR UPDATE NOWAIT", send); err != nil {
		t.Errorf("the waiting message holds the contact's send: %v", err)
	}
	_ = probe.Rollback()
	if _, err := h.ExecContext(ctx, "UPDATE campaign_sends SET status = status WHERE id = ?", send); err != nil {
		t.Fatalf("the held transaction was aborted: %v", err)
	}
	if err := h.Commit(); err != nil {
		t.Fatal(err)
	}
	stored()
	testenv.CheckConversationTable(t, env.Store.DB(), f.acc)
}

// A message whose commit PostgreSQL aborts to break a deadlock is stored again, as every transaction's
// conflict is (models/tx.go), instead of answering the sender 503. No writer takes a contact's
// conversation row before its sends; the held transaction does, to make the cycle with the message's
// commit, which takes the sends and then the conversation row.
func TestIngestRetriesADeadlock(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the deadlock needs two PostgreSQL transactions at once")
	}
	ctx := context.Background()
	f, contact, send := racerWithSend(t, "+14155550178")
	_, first := ingestAsync(t, f.acc, "+14155550178", contact) // the conversation's row
	first()

	h := holdTx(t, env.Store)
	if _, err := h.ExecContext(ctx, "UPDATE conversations SET failed = failed WHERE contact_id = ?", contact); err != nil {
		t.Fatal(err)
	}
	done, stored := ingestAsync(t, f.acc, "+14155550178", contact)
	if !h.waitBlocked(t, 1, done) {
		t.Fatal("the message's commit did not wait for the conversation's row")
	}
	// The message's commit waited first, so its deadlock check (after deadlock_timeout) finds the
	// cycle and aborts it.
	if _, err := h.ExecContext(ctx, "UPDATE campaign_sends SET status = status WHERE id = ?", send); err != nil {
		t.Fatalf("the held transaction was the one aborted: %v", err)
	}
	if err := h.Commit(); err != nil {
		t.Fatal(err)
	}
	stored()
	testenv.CheckConversationTable(t, env.Store.DB(), f.acc)
}
