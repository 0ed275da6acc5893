package models_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// A bot reply's id is the same every time it is asked for the same message, differs between messages,
// is one of ours (a lower-case ULID with the message prefix), and sorts right after the message it
// answers: after it, and before a message that arrives later.
func TestBotReplyIDIsStableAndSortsAfterItsMessage(t *testing.T) {
	acc := newAccount(t)
	first := csIncoming(t, env.Store, acc.Account.ID, csFrom("rid"), "chat", "hello")
	time.Sleep(3 * time.Millisecond) // ids order by their millisecond
	later := csIncoming(t, env.Store, acc.Account.ID, csFrom("rid"), "chat", "hello again")

	id := models.BotReplyID(first.ID)
	if again := models.BotReplyID(first.ID); again != id {
		t.Fatalf("BotReplyID(%s) = %s, then %s", first.ID, id, again)
	}
	if other := models.BotReplyID(later.ID); other == id {
		t.Fatalf("two messages' replies share the id %s", id)
	}
	if !strings.HasPrefix(id, "msg_") || len(id) != len(first.ID) || strings.ToLower(id) != id {
		t.Fatalf("BotReplyID = %q, want msg_ and a lower-case ULID like %q", id, first.ID)
	}
	if !(first.ID < id && id < later.ID) {
		t.Fatalf("reply id %s does not sort between its message %s and the next one %s", id, first.ID, later.ID)
	}
	// Not one of our ids: still stable, still a message id.
	if a, b := models.BotReplyID("msg_not-a-ulid"), models.BotReplyID("msg_not-a-ulid"); a != b || !strings.HasPrefix(a, "msg_") {
		t.Fatalf("BotReplyID of a foreign id: %q then %q", a, b)
	}
}

// RecordBotReply stores a reply sent before it was stored: the reply with its outcome, its one attempt,
// and the incoming message as answered; a second call (a task that ran twice) changes nothing.
func TestRecordBotReplyStoresReplyAttemptAndAnswer(t *testing.T) {
	ctx := context.Background()
	s, rec := eventStore(t)
	acc := newAccount(t)
	id := acc.Account.ID
	in := csIncoming(t, s, id, csFrom("rbr"), "chat", "hello")
	rec.take(id)

	reply := models.NewBotReply(in, nil, "hi there")
	if reply.ID != models.BotReplyID(in.ID) || reply.ToID != in.FromID || reply.Channel != "chat" || reply.Author != models.AuthorBot {
		t.Fatalf("NewBotReply = %+v", reply)
	}
	stored, err := s.RecordBotReply(ctx, reply, models.AttemptOutcome{StatusCode: 200, Duration: 7 * time.Millisecond})
	if err != nil || !stored {
		t.Fatalf("RecordBotReply: stored %v, %v", stored, err)
	}
	data := oneEvent(t, rec, id, models.EventMessageCreated, "RecordBotReply")
	wantFields(t, data, "RecordBotReply", map[string]any{
		"id": reply.ID, "status": "sent", "attempts": float64(1), "replyToId": in.ID, "body": "hi there", "authorType": "bot",
	})

	got := csMessage(t, id, reply.ID)
	if got.Status != models.StatusSent || got.Attempts != 1 || got.SentAt == nil || got.Error != nil || got.NextAttemptAt != nil {
		t.Fatalf("stored reply %+v, want sent with one attempt", got)
	}
	attempts, err := s.MessageAttempts(ctx, id, reply.ID)
	if err != nil || len(attempts) != 1 || attempts[0].StatusCode == nil || *attempts[0].StatusCode != 200 || attempts[0].DurationMS != 7 {
		t.Fatalf("attempts %+v, %v: want the one 200", attempts, err)
	}
	csWantBotStatus(t, id, in, models.BotDone)

	// The same reply again (a rerun whose first record landed after all): nothing new.
	again := models.NewBotReply(in, nil, "hi there")
	stored, err = s.RecordBotReply(ctx, again, models.AttemptOutcome{StatusCode: 200})
	if err != nil || stored {
		t.Fatalf("second RecordBotReply: stored %v, %v; want nothing stored", stored, err)
	}
	noEvents(t, rec, id, "a second RecordBotReply")
	if attempts, _ := s.MessageAttempts(ctx, id, reply.ID); len(attempts) != 1 {
		t.Fatalf("%d attempts after a second record, want 1", len(attempts))
	}

	// A failed first attempt: stored failed, with its error and the retry's time.
	in2 := csIncoming(t, s, id, csFrom("rbr"), "chat", "hello")
	rec.take(id)
	next := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)
	failed := models.NewBotReply(in2, nil, "hi")
	if _, err := s.RecordBotReply(ctx, failed, models.AttemptOutcome{StatusCode: 503, Error: "webhook answered 503", NextAttemptAt: &next}); err != nil {
		t.Fatal(err)
	}
	rec.take(id)
	got = csMessage(t, id, failed.ID)
	if got.Status != models.StatusFailed || got.Attempts != 1 || got.Error == nil || *got.Error != "webhook answered 503" ||
		got.NextAttemptAt == nil || !got.NextAttemptAt.Equal(next) || got.SentAt != nil {
		t.Fatalf("stored reply %+v, want failed, retry at %v", got, next)
	}
	csWantBotStatus(t, id, in2, models.BotDone)
}

// Many workers recording the same messages' replies at once (a lease that expired while its task still
// ran, many times over) store exactly one reply and one attempt per message.
func TestRecordBotReplyConcurrentlyStoresOne(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)
	id := acc.Account.ID
	const messages, racers = 8, 6
	var wg sync.WaitGroup
	storedBy := make([][]bool, messages)
	ins := make([]*models.Message, messages)
	for i := range ins {
		ins[i] = csIncoming(t, env.Store, id, csFrom("race"), "chat", fmt.Sprintf("m%d", i))
		storedBy[i] = make([]bool, racers)
		for r := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ok, err := env.Store.RecordBotReply(ctx, models.NewBotReply(ins[i], nil, "same"), models.AttemptOutcome{StatusCode: 200})
				if err != nil {
					t.Error(err)
				}
				storedBy[i][r] = ok
			}()
		}
	}
	wg.Wait()
	for i, in := range ins {
		n := 0
		for _, ok := range storedBy[i] {
			if ok {
				n++
			}
		}
		if n != 1 {
			t.Errorf("message %d: %d racers stored its reply, want 1", i, n)
		}
		attempts, err := env.Store.MessageAttempts(ctx, id, models.BotReplyID(in.ID))
		if err != nil || len(attempts) != 1 {
			t.Errorf("message %d: %d attempts (%v), want 1", i, len(attempts), err)
		}
		msgs, _, err := env.Store.ContactMessages(ctx, id, in.ContactID, models.Page{Limit: 10})
		if err != nil || len(msgs) != 2 {
			t.Errorf("message %d: conversation of %d messages (%v), want it and one reply", i, len(msgs), err)
		}
	}
}

// MessagesForWork reads a batch's messages in one query, each with its contact and account, in the
// order of their ids; an id that names no message is left out, and an id asked twice is read once.
func TestMessagesForWorkReadsABatch(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)
	id := acc.Account.ID
	var ids []string
	for i := range 3 {
		m := csIncoming(t, env.Store, id, csFrom(fmt.Sprint("mfw-", i)), "chat", fmt.Sprint("hello ", i))
		ids = append(ids, m.ID)
	}
	asked := []string{ids[2], "msg_00000000000000000000000000", ids[0], `msg_"quoted\`, ids[1], ids[0]}
	for range 2 { // the second time on PostgreSQL runs the prepared statement
		got, err := env.Store.MessagesForWork(ctx, asked)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("%d messages, want 3", len(got))
		}
		for i, m := range got {
			if m.ID != ids[i] || m.Body != fmt.Sprint("hello ", i) {
				t.Fatalf("message %d: %s %q, want %s in id order", i, m.ID, m.Body, ids[i])
			}
			if m.Contact == nil || m.Contact.ID != m.ContactID || m.Account == nil || m.Account.ID != id {
				t.Fatalf("message %s read without its contact and account: %+v %+v", m.ID, m.Contact, m.Account)
			}
		}
	}
}
