package models

import (
	"context"
	"time"

	"github.com/uptrace/bun"
)

// IngestedForTest is what the PostgreSQL ingest answered for one message.
type IngestedForTest struct {
	MessageID, ContactID          string
	Duplicate, SetBased, Reopened bool
}

// IngestForTest stores ins (each passed Validate) on PostgreSQL as IngestIncoming would, but in a batch
// the test chooses: all in one ingest_incoming_batch call, or (oneByOne) each by itself through
// ingest_incoming, as a request that finds the database idle is stored.
func (s *Store) IngestForTest(ctx context.Context, accountID string, ins []IncomingInput, oneByOne bool) ([]IngestedForTest, error) {
	rows := make([]ingestRow, len(ins))
	for i, in := range ins {
		m, c := s.newIncoming(accountID, in)
		rows[i] = newIngestRow(m, newChannelContact(accountID, in.FromID, c, m.CreatedAt))
	}
	var res []ingestResult
	if oneByOne {
		for _, r := range rows {
			one, err := s.ingestOne(ctx, r)
			if err != nil {
				return nil, err
			}
			res = append(res, one)
		}
	} else {
		var err error
		if res, err = s.ingestBatch(ctx, rows); err != nil {
			return nil, err
		}
	}
	out := make([]IngestedForTest, len(res))
	for i, r := range res {
		out[i] = IngestedForTest{MessageID: r.MessageID, ContactID: r.ContactID, Duplicate: r.Duplicate, SetBased: r.SetBased, Reopened: r.Reopened}
	}
	return out, nil
}

// AssignInTurnForTest runs assignInTurn in the test's transaction, which the test may hold open.
func AssignInTurnForTest(ctx context.Context, tx bun.Tx, accountID, contactID string) (*Assignee, error) {
	return assignInTurn(ctx, tx, accountID, contactID)
}

// SetBotPausedForTest runs setBotPaused (what a hand-off, a team reply and the bot's switch write) on
// db, a transaction the test may hold open.
func SetBotPausedForTest(ctx context.Context, db bun.IDB, contactID string, paused bool) error {
	return setBotPaused(ctx, db, contactID, paused)
}

// IngestFlushersForTest is how many batches the ingest batcher has in flight at most.
const IngestFlushersForTest = ingestFlushers

// IngestQueuedForTest is how many messages wait in the ingest batcher's queue for a free flusher.
func (s *Store) IngestQueuedForTest() int { return len(s.ingest.queue) }

// RecordBatchForTest records the replies, each with its outcome, as one batch of RecordBotReply's
// batcher (PostgreSQL): stored and errs by reply, and how many went in one statement.
func (s *Store) RecordBatchForTest(replies []*Message, outs []AttemptOutcome) (stored []bool, errs []error, together int) {
	batch := make([]*batchCall[recordItem, bool], len(replies))
	for i, m := range replies {
		batch[i] = &batchCall[recordItem, bool]{in: recordItem{reply: m, attempt: settleBotReply(m, outs[i])},
			done: make(chan batchOutcome[bool], 1)}
	}
	together = s.flushRecords(batch)
	stored, errs = make([]bool, len(batch)), make([]error, len(batch))
	for i, call := range batch {
		o := <-call.done
		stored[i], errs[i] = o.out, o.err
	}
	return stored, errs, together
}

// MessageForWorkSQLForTest is MessageForWork's prepared statement, with the message's id as $1.
func (s *Store) MessageForWorkSQLForTest() string { return s.messageForWorkSQL() }

// BackfillFirstRepliesForTest runs the campaign first-reply migration's backfill.
func BackfillFirstRepliesForTest(ctx context.Context, db *bun.DB) error {
	return backfillFirstReplies(ctx, db)
}

// SetClockForTest sets the time of the incoming messages the store creates, their ids' time included,
// so that a test writes into the partition of another month.
func (s *Store) SetClockForTest(clock func() time.Time) { s.clock = clock }

// OnConversionStepForTest calls f at each step the conversion to partitions reaches (partitions.go).
func (s *Store) OnConversionStepForTest(f func(step string)) { s.conversionHook = f }

// MigrateBeforeForTest applies only the migrations whose names sort before name: the schema as it was
// before that migration.
func (s *Store) MigrateBeforeForTest(ctx context.Context, name string) error {
	return s.migrate(ctx, name)
}

// PartitionMigrationForTest is the name of the migration that partitions messages and consent_events.
const PartitionMigrationForTest = "20261205100001"

// IDBoundForTest is idBound: the smallest id with prefix created at t or later.
func IDBoundForTest(prefix string, t time.Time) string { return idBound(prefix, t) }

// MonthStartForTest is the first instant (UTC) of t's month, moved by n months.
func MonthStartForTest(t time.Time, n int) time.Time { return addMonths(monthStart(t), n) }

// PartitionNameForTest is the name of table's partition of the month that begins at month.
func PartitionNameForTest(table string, month time.Time) string { return partitionName(table, month) }

// NewIDAtForTest is newIDAt: a new id with prefix made at t.
func NewIDAtForTest(prefix string, t time.Time) string { return newIDAt(prefix, t) }

// MessagesForWorkSQLForTest is MessagesForWork's prepared statement, with the ids as $1.
func (s *Store) MessagesForWorkSQLForTest() string { return s.messagesForWorkSQL() }
