package models

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"
)

// Transactions and locks: every writer follows these rules, so that two transactions never wait for
// each other in a circle, and none waits on the network.
//
// Lock order. A transaction that locks several rows takes them in this order:
//
//  1. the contact (lockContactFirst, or lockContact when it reads the contact too);
//  2. then the contact's campaign sends;
//  3. then its messages.
//
// A campaign's row comes before its sends: a status change locks it (UpdateCampaign, then the held
// sends it queues again) and a list add share-locks it after inserting the list's members and before
// writing the sends it owes (triggerCampaigns).
//
// A removal from a list locks the contact, then deletes its membership and skips its unwritten sends
// (RemoveFromList), so it and the worker's WriteOpening, which also locks the contact first, run one
// after the other.
//
// Several rows of one table are locked in id order: a batch add to a list inserts its members, and
// queues its campaign sends, with the contact ids sorted (AddToList); a batch of bot reply records
// (botreply_batch.go) claims its replies and marks their incoming messages answered in the incoming
// messages' id order. An insert that a unique key or
// a foreign key makes wait counts as a lock of that row.
//
// Last, at the commit, where PostgreSQL's deferred triggers run once every statement of the transaction
// has: first the campaign sends whose opening time and first reply a message changes
// (campaign_first_reply.go: a contact's sends, in id order), then the conversations table's rows
// (conversation_table.go), each in the order the transaction wrote its messages; a conversation's
// first message share-locks its contact there, or, when the contact has campaign sends, before them
// (replyStoredPG), so that the contact still comes first. A set-based ingest batch takes the same locks in the
// same order itself, as its transaction's last statements, instead of through the triggers
// (batch_keeps.go); the conversation rows of the contacts it makes, which no other transaction can
// see, it writes in its insert.
//
// Claims (PostgreSQL, partitions.go) are taken where the unique index entries they replace were: a
// messageSid's row of message_claims just before its message is inserted (the ingest functions), a
// reply's row of reply_claims by the message insert's BEFORE trigger. A claim that another transaction
// holds uncommitted makes the insert wait, as the unique keys did, and counts as a lock of that message.
// The retention's recount of failed deliveries (DropExpiredMessages) locks only conversations rows, in
// contact id order. DDL on the partitioned tables that writes would queue behind (the conversion's
// steps, a partition's attach, a detached partition's drop) waits for a table lock at most 400 ms,
// below the deadlock check's 1 s, and is tried again later: a writer is never held up behind it for
// longer. The ... CONCURRENTLY statements (an index, a partition's detach) hold up no writer.
//
// Nothing waits on the network holding a lock or a pooled connection: a delivery reads what it needs,
// lets the connection go, makes its call, and then writes conditionally (ClaimHandover, RecordAttempt).
//
// Conflicts are retried: PostgreSQL may still abort a transaction to break a deadlock (40P01) or a
// serialization failure (40001), for instance between two ingest batches that update the same
// contacts. inTx runs the transaction again a few times, after a short random wait; a conflict that
// outlasts them is UNAVAILABLE (IsUnavailable), which the api answers 503 with Retry-After. fn must
// therefore set everything it returns anew on each run.

// txAttempts is how many times inTx runs a transaction that keeps conflicting.
const txAttempts = 6

// inTx runs fn in a transaction, running it again when PostgreSQL aborted it for a conflict
// (isConflict) or when fn asked for it with errRetry (it lost a race for a new row and must read the
// winner's).
func (s *Store) inTx(ctx context.Context, fn func(context.Context, bun.Tx) error) error {
	return retryConflicts(ctx, func() error { return s.db.RunInTx(ctx, nil, fn) })
}

// retryConflicts runs one transaction, run, again as inTx does: a single statement outside inTx (the
// ingest's functions, ingestOne) is a transaction of its own and is retried the same way.
func retryConflicts(ctx context.Context, run func() error) error {
	for attempt := 1; ; attempt++ {
		err := run()
		if attempt >= txAttempts || !(isConflict(err) || errors.Is(err, errRetry)) {
			return err
		}
		if isConflict(err) {
			// Jitter, so that the two that collided do not collide again: 1-4 ms, doubling.
			wait := time.Duration(rand.Int64N(int64(3*time.Millisecond))) + time.Millisecond
			select {
			case <-ctx.Done():
				return err
			case <-time.After(wait << (attempt - 1)):
			}
		}
	}
}

// InTx is inTx for the read models outside this package (models/report): a read that sets up its
// transaction (SET LOCAL) runs it again on a conflict as every transaction here does.
func (s *Store) InTx(ctx context.Context, fn func(context.Context, bun.Tx) error) error {
	return s.inTx(ctx, fn)
}

// isConflict reports whether PostgreSQL aborted a transaction to break a deadlock (40P01) or for a
// serialization failure (40001): the same transaction run again may succeed.
func isConflict(err error) bool {
	var pgErr pgdriver.Error
	if !errors.As(err, &pgErr) {
		return false
	}
	code := pgErr.Field('C')
	return code == "40P01" || code == "40001"
}

// lockContactFirst locks the contact's row for the rest of tx on PostgreSQL (SQLite has one writer at
// a time), as the first lock of a transaction that goes on to lock the contact's sends or messages
// (see the lock order above). It is the lock an UPDATE of the contact takes, so a transaction that
// later updates the contact does not need a stronger one.
func (s *Store) lockContactFirst(ctx context.Context, tx bun.IDB, contactID string) error {
	if s.IsSQLite() {
		return nil
	}
	_, err := tx.NewSelect().Model((*Contact)(nil)).Column("id").Where("id = ?", contactID).For("NO KEY UPDATE").Exec(ctx)
	return err
}
