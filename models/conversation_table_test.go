package models_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// The conversations table follows each kind of write that changes a conversation, on both backends: a
// new sender's first message, more incoming messages, outgoing messages to a new and a known sender, a
// failed delivery and its retry, a status change, a snooze, an assignment and its undoing, and the
// removal of the assignee (PostgreSQL's foreign key unassigns).
func TestConversationTableFollowsEveryWrite(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t).Account.ID
	check := func(step string) {
		t.Helper()
		t.Run(step, func(t *testing.T) { testenv.CheckConversationTable(t, env.Store.DB(), acc) })
	}
	check("empty")
	in := testenv.Receive(t, env.Store, acc, "ct-ada", "hello", testenv.Person{First: "Ada"})
	check("first incoming message")
	testenv.Receive(t, env.Store, acc, "ct-ada", "are you there?", testenv.Person{})
	check("second incoming message")
	out, bob := testenv.SendCustom(t, env.Store, acc, "ct-bob", "our offer")
	check("outgoing message to a new sender")
	reply, _ := testenv.SendCustom(t, env.Store, acc, "ct-ada", "yes, here")
	check("outgoing message after incoming ones")
	next := time.Now().Add(time.Minute)
	for _, id := range []string{out.ID, reply.ID} {
		if err := env.Store.RecordAttempt(ctx, id, models.AttemptOutcome{StatusCode: 500, Error: "webhook answered 500", NextAttemptAt: &next}); err != nil {
			t.Fatal(err)
		}
	}
	check("two failed deliveries")
	if err := env.Store.RecordAttempt(ctx, out.ID, models.AttemptOutcome{StatusCode: 500, Error: "webhook answered 500 again", NextAttemptAt: &next}); err != nil {
		t.Fatal(err)
	}
	check("a failed delivery failing again")
	if _, err := env.Store.Redeliver(ctx, acc, reply.ID); err != nil {
		t.Fatal(err)
	}
	check("a failed delivery retried")
	if err := env.Store.RecordAttempt(ctx, reply.ID, models.AttemptOutcome{StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	check("the retry delivered")
	until := time.Now().Add(time.Hour)
	if _, _, err := env.Store.SetConversationStatus(ctx, acc, bob.ID, models.ConversationStatusInput{Status: models.ConversationSnoozed, SnoozedUntil: &until}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := env.Store.SetConversationStatus(ctx, acc, in.ContactID, models.ConversationStatusInput{Status: models.ConversationResolved}); err != nil {
		t.Fatal(err)
	}
	check("snoozed and resolved")
	testenv.Receive(t, env.Store, acc, "ct-ada", "one more thing", testenv.Person{})
	check("reopened by a new message")
	user := testenv.AddUser(t, env.Store, acc, models.RoleMember)
	if _, err := env.Store.Assign(ctx, acc, bob.ID, &user.User.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.Assign(ctx, acc, in.ContactID, &user.User.ID); err != nil {
		t.Fatal(err)
	}
	check("assigned")
	if _, err := env.Store.Assign(ctx, acc, in.ContactID, nil); err != nil {
		t.Fatal(err)
	}
	check("unassigned")
	if err := env.Store.RemoveUser(ctx, acc, user.User.ID); err != nil {
		t.Fatal(err)
	}
	check("assignee removed")
}

// Many writers at once (PostgreSQL): first messages of the same new senders racing each other, the
// ingest's batches beside single messages, outgoing messages and failed deliveries to the same
// contacts. Each conversation ends with one row that counts every message.
func TestConversationTableUnderConcurrentWrites(t *testing.T) {
	if !env.Postgres() {
		t.Skip("concurrent writers need PostgreSQL; SQLite runs one writing transaction at a time")
	}
	ctx := context.Background()
	acc := newAccount(t).Account.ID
	const writers, senders = 16, 6
	var wg sync.WaitGroup
	errs := make(chan error, writers*senders*4)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var batch []models.IncomingInput
			for s := range senders {
				from := fmt.Sprintf("race-%d", s)
				in := models.IncomingInput{ExternalID: fmt.Sprintf("race-%d-%d", w, s), FromID: from, ToID: "business", Body: "hi", Channel: "chat"}
				if err := in.Validate(1 << 20); err != nil {
					errs <- err
					return
				}
				if w%2 == 0 {
					batch = append(batch, in)
					continue
				}
				if _, _, err := env.Store.IngestIncoming(ctx, acc, in); err != nil {
					errs <- err
				}
				send := models.CustomSendInput{FromID: from, Channel: "chat", Body: "answer"}
				if err := send.Validate(); err != nil {
					errs <- err
					return
				}
				m, _, err := env.Store.SendCustom(ctx, acc, send)
				if err != nil {
					errs <- err
					continue
				}
				next := time.Now().Add(time.Minute)
				if err := env.Store.RecordAttempt(ctx, m.ID, models.AttemptOutcome{StatusCode: 500, Error: "down", NextAttemptAt: &next}); err != nil {
					errs <- err
				}
			}
			if batch != nil {
				// As the ingest's flush does: a batch that two batches' opposite orders deadlocked is
				// stored message by message.
				if _, err := env.Store.IngestForTest(ctx, acc, batch, false); err != nil {
					var pgErr pgdriver.Error
					if !errors.As(err, &pgErr) || pgErr.Field('C') != "40P01" {
						errs <- err
						return
					}
					if _, err := env.Store.IngestForTest(ctx, acc, batch, true); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n int
	if err := env.Store.DB().NewSelect().TableExpr("conversations").ColumnExpr("count(*)").Where("account_id = ?", acc).Scan(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if n != senders {
		t.Errorf("%d conversations, want %d", n, senders)
	}
	testenv.CheckConversationTable(t, env.Store.DB(), acc)
}

// An assignment racing a contact's first message (PostgreSQL), each order forced by holding the first
// writer's transaction open: the conversation's row ends with the assignee either way. The message
// copies the contact's columns when it makes the row, at its commit, under a share lock on the contact:
// an assignment not yet committed makes it wait (without the lock, an assignment whose own trigger
// ran before the new row was visible would be lost).
func TestConversationTableAssignRacingTheFirstMessage(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the race needs two PostgreSQL transactions at once")
	}
	ctx := context.Background()
	acc := newAccount(t).Account.ID
	user := testenv.AddUser(t, env.Store, acc, models.RoleMember)
	insert := `INSERT INTO messages (id, account_id, contact_id, direction, channel, transport, message_type, body, status, created_at)
		VALUES (?, ?, ?, 'outgoing', 'chat', 'custom', 'text', 'hello', 'pending', ?)`
	contact := func(name string) string {
		c, _, err := env.Store.CreateOrGetContact(ctx, acc, models.ContactInput{FirstName: name, Email: testenv.UniqueEmail("race")})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}

	t.Run("message first", func(t *testing.T) {
		id := contact("Message First")
		h := holdTx(t, env.Store)
		if _, err := h.ExecContext(ctx, insert, testenv.IDPrefix("msg_", time.Now())+"race_a_"+id, acc, id, time.Now().UTC()); err != nil {
			t.Fatal(err)
		}
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err = env.Store.Assign(ctx, acc, id, &user.User.ID)
		}()
		// The message's transaction locks at its commit: the assignment may finish first or wait.
		h.waitBlocked(t, 1, done)
		if cerr := h.Commit(); cerr != nil {
			t.Fatal(cerr)
		}
		<-done
		if err != nil {
			t.Fatal(err)
		}
		testenv.CheckConversationTable(t, env.Store.DB(), acc)
	})
	t.Run("assignment first", func(t *testing.T) {
		id := contact("Assignment First")
		h := holdTx(t, env.Store)
		if _, err := h.ExecContext(ctx, "UPDATE contacts SET assignee_id = ? WHERE id = ?", user.User.ID, id); err != nil {
			t.Fatal(err)
		}
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err = env.Store.DB().ExecContext(ctx, insert, testenv.IDPrefix("msg_", time.Now())+"race_b_"+id, acc, id, time.Now().UTC())
		}()
		// Whether it waits or not, the row must end right: the check below says which way it went wrong.
		blocked := h.waitBlocked(t, 1, done)
		if cerr := h.Commit(); cerr != nil {
			t.Fatal(cerr)
		}
		<-done
		if err != nil {
			t.Fatal(err)
		}
		if !blocked {
			t.Error("the first message did not wait for the assignment")
		}
		testenv.CheckConversationTable(t, env.Store.DB(), acc)
	})
}

// An error whose text passes the driver's default 4 KiB read buffer (a deadlock inside the conversations
// trigger, fired by an ingest function, carries both statements in its CONTEXT) is read as the server's
// error, with its code, and the connection goes on working.
func TestLongServerErrorsAreReadWhole(t *testing.T) {
	if !env.Postgres() {
		t.Skip("PostgreSQL's wire protocol")
	}
	ctx := context.Background()
	conn, err := env.Store.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `DO $$ BEGIN RAISE EXCEPTION USING MESSAGE = 'deadlock: ' || repeat('x', 20000), ERRCODE = '40P01'; END $$`)
	var pgErr pgdriver.Error
	if !errors.As(err, &pgErr) || pgErr.Field('C') != "40P01" {
		t.Fatalf("error %v (%T), want the server's 40P01", err, err)
	}
	var one int
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the connection after the error: %d, %v", one, err)
	}
}
