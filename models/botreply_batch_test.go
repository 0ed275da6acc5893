package models_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// A batch of bot reply records stores what each record alone stores: each reply with its outcome and
// its one attempt, each incoming message answered, each conversation's last message the reply; and it
// goes in one statement.
func TestRecordBatchStoresWhatEachRecordWould(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the records' batches are PostgreSQL's (SQLite records each reply in its own transaction)")
	}
	ctx := context.Background()
	acc := newAccount(t)
	id := acc.Account.ID
	next := time.Now().Add(time.Minute).UTC().Truncate(time.Microsecond)
	outs := []models.AttemptOutcome{
		{StatusCode: 200, Duration: 7 * time.Millisecond},
		{StatusCode: 503, Error: "webhook answered 503", NextAttemptAt: &next},
		{StatusCode: 410, Error: "webhook answered 410"}, // given up
		{StatusCode: 200, ProviderID: "prov-1"},
	}
	ins := make([]*models.Message, len(outs))
	replies := make([]*models.Message, len(outs))
	// Stored newest first, so that the batch's own order (by incoming id) is not the callers'.
	for i := len(outs) - 1; i >= 0; i-- {
		ins[i] = csIncoming(t, env.Store, id, csFrom("batch"), "chat", fmt.Sprintf("m%d", i))
	}
	for i, in := range ins {
		replies[i] = models.NewBotReply(in, nil, fmt.Sprintf("reply %d", i))
	}
	stored, errs, together := env.Store.RecordBatchForTest(replies, outs)
	if together != len(outs) {
		t.Fatalf("%d of %d records went in one statement, want all", together, len(outs))
	}
	for i := range outs {
		if errs[i] != nil || !stored[i] {
			t.Fatalf("record %d: stored %v, %v", i, stored[i], errs[i])
		}
	}
	for i, in := range ins {
		got := csMessage(t, id, replies[i].ID)
		attempts, err := env.Store.MessageAttempts(ctx, id, replies[i].ID)
		if err != nil || len(attempts) != 1 || *attempts[0].StatusCode != outs[i].StatusCode {
			t.Fatalf("reply %d: attempts %+v, %v; want one with %d", i, attempts, err, outs[i].StatusCode)
		}
		if got.Attempts != 1 || csStr(got.ReplyToID) != in.ID || got.Author != models.AuthorBot || got.Body != fmt.Sprintf("reply %d", i) {
			t.Fatalf("reply %d stored as %+v", i, got)
		}
		switch i {
		case 0:
			if got.Status != models.StatusSent || got.SentAt == nil || got.Error != nil || attempts[0].DurationMS != 7 {
				t.Fatalf("reply 0 %+v, want sent", got)
			}
		case 1:
			if got.Status != models.StatusFailed || csStr(got.Error) != "webhook answered 503" || got.NextAttemptAt == nil ||
				!got.NextAttemptAt.Equal(next) || got.GivenUpAt != nil {
				t.Fatalf("reply 1 %+v, want failed, retried at %v", got, next)
			}
		case 2:
			if got.Status != models.StatusFailed || got.NextAttemptAt != nil || got.GivenUpAt == nil {
				t.Fatalf("reply 2 %+v, want failed for good", got)
			}
		case 3:
			if got.Status != models.StatusSent || csStr(got.ProviderMessageID) != "prov-1" {
				t.Fatalf("reply 3 %+v, want sent with the provider's id", got)
			}
		}
		csWantBotStatus(t, id, in, models.BotDone)
		if last := lastMessageOf(t, in.ContactID); last != replies[i].ID {
			t.Errorf("reply %d: the conversation's last message is %s, want the reply %s", i, last, replies[i].ID)
		}
	}

	// The same batch again (its tasks ran twice): nothing new, in one statement too.
	again := make([]*models.Message, len(ins))
	for i, in := range ins {
		again[i] = models.NewBotReply(in, nil, "other words")
	}
	stored, errs, together = env.Store.RecordBatchForTest(again, outs)
	for i := range outs {
		if errs[i] != nil || stored[i] {
			t.Fatalf("second record %d: stored %v, %v; want nothing stored", i, stored[i], errs[i])
		}
		if attempts, _ := env.Store.MessageAttempts(ctx, id, replies[i].ID); len(attempts) != 1 {
			t.Fatalf("reply %d: %d attempts after a second record, want 1", i, len(attempts))
		}
	}
	if together != len(outs) {
		t.Fatalf("%d of %d second records went in one statement", together, len(outs))
	}
}

// One reply that cannot be stored (its contact is not there) fails alone: the batch is recorded reply by
// reply, and the others are stored. Two records of one reply in a batch store it once, and only one of
// them says it stored it.
func TestRecordBatchFailureAndRepeatsStayWithTheirRecord(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the records' batches are PostgreSQL's")
	}
	ctx := context.Background()
	acc := newAccount(t)
	id := acc.Account.ID
	var replies []*models.Message
	var ins []*models.Message
	for i := range 3 {
		in := csIncoming(t, env.Store, id, csFrom("bfail"), "chat", fmt.Sprintf("m%d", i))
		ins = append(ins, in)
		replies = append(replies, models.NewBotReply(in, nil, "hi"))
	}
	orphan := *ins[1]
	orphan.ContactID = "con_not_there"
	replies[1] = models.NewBotReply(&orphan, nil, "hi")
	replies = append(replies, models.NewBotReply(ins[2], nil, "hi")) // ins[2]'s reply twice
	ok := models.AttemptOutcome{StatusCode: 200}
	stored, errs, together := env.Store.RecordBatchForTest(replies, []models.AttemptOutcome{ok, ok, ok, ok})
	if together != 0 {
		t.Fatalf("%d records went in one statement, want the batch recorded reply by reply", together)
	}
	if errs[1] == nil {
		t.Fatalf("the reply without its contact was stored (%v)", stored[1])
	}
	if errs[0] != nil || !stored[0] {
		t.Fatalf("reply 0: stored %v, %v", stored[0], errs[0])
	}
	if errs[2] != nil || errs[3] != nil || stored[2] == stored[3] {
		t.Fatalf("the two records of one reply: stored %v and %v (%v, %v), want exactly one", stored[2], stored[3], errs[2], errs[3])
	}
	for _, i := range []int{0, 2} {
		csWantBotStatus(t, id, ins[i], models.BotDone)
		if attempts, err := env.Store.MessageAttempts(ctx, id, replies[i].ID); err != nil || len(attempts) != 1 {
			t.Fatalf("reply %d: %d attempts, %v; want 1", i, len(attempts), err)
		}
	}
	csWantBotStatus(t, id, ins[1], models.BotPending)

	// The same in a batch that succeeds: the repeat goes after it, alone, and stores nothing.
	a := csIncoming(t, env.Store, id, csFrom("brep"), "chat", "a")
	b := csIncoming(t, env.Store, id, csFrom("brep"), "chat", "b")
	twice := []*models.Message{models.NewBotReply(a, nil, "hi"), models.NewBotReply(b, nil, "hi"), models.NewBotReply(a, nil, "hi")}
	stored, errs, together = env.Store.RecordBatchForTest(twice, []models.AttemptOutcome{ok, ok, ok})
	if together != 2 || errs[0] != nil || errs[1] != nil || errs[2] != nil || !stored[0] || !stored[1] || stored[2] {
		t.Fatalf("a, b, a again: %d together, stored %v, errors %v; want a and b together and stored, the repeat not", together, stored, errs)
	}
	if attempts, err := env.Store.MessageAttempts(ctx, id, twice[0].ID); err != nil || len(attempts) != 1 {
		t.Fatalf("a's reply: %d attempts, %v; want 1", len(attempts), err)
	}
}

// Workers recording many replies at once through RecordBotReply share statements, and every reply is
// stored once, with one attempt, its message answered.
func TestRecordBotRepliesConcurrently(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)
	id := acc.Account.ID
	const n = 48
	ins := make([]*models.Message, n)
	for i := range ins {
		ins[i] = csIncoming(t, env.Store, id, csFrom("many"), "chat", fmt.Sprintf("m%d", i))
	}
	var wg sync.WaitGroup
	for i := range ins {
		wg.Go(func() {
			stored, err := env.Store.RecordBotReply(ctx, models.NewBotReply(ins[i], nil, "hi"), models.AttemptOutcome{StatusCode: 200})
			if err != nil || !stored {
				t.Errorf("record %d: stored %v, %v", i, stored, err)
			}
		})
	}
	wg.Wait()
	for i, in := range ins {
		csWantBotStatus(t, id, in, models.BotDone)
		if attempts, err := env.Store.MessageAttempts(ctx, id, models.BotReplyID(in.ID)); err != nil || len(attempts) != 1 {
			t.Fatalf("reply %d: %d attempts, %v; want 1", i, len(attempts), err)
		}
	}
}

// lastMessageOf is the last message id of the contact's conversation row.
func lastMessageOf(t *testing.T, contactID string) string {
	t.Helper()
	var last string
	err := env.Store.DB().NewSelect().TableExpr("conversations").Column("last_message_id").
		Where("contact_id = ?", contactID).Scan(context.Background(), &last)
	if err != nil {
		t.Fatal(err)
	}
	return last
}
