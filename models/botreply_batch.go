package models

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// On PostgreSQL the bot replies that workers record at the same moment (RecordBotReply) are stored
// together, as the ingest stores incoming messages (batcher.go): one statement, one round trip and
// one commit for the batch. The worker answers a batch of incoming messages side by side, so their
// records arrive together. Measured alone (pgbench, one client, commits not waited for, the 2-core
// machine of README "Performance"): PostgreSQL spent 0.45 ms per reply in batches of 8 against
// 0.70-0.76 ms for the single statement, which was about half of its time in the closed loop.
//
// A batch does, for each reply, what the single statement does (recordBotReplySQL): the reply, its
// attempt when the reply is new, and its incoming message marked answered, with the same triggers (the
// reply's claim, its conversation). Its rows are written and locked in the incoming messages' id order
// (models/tx.go). A batch that fails as a whole (a reply whose contact was erased meanwhile, a
// deadlock) is recorded reply by reply, so that one reply's failure is never another's.

// recordItem is one reply to record and its first attempt.
type recordItem struct {
	reply   *Message
	attempt *Attempt
}

// recordBatcher batches RecordBotReply's writes; its outcome is whether the reply was new.
type recordBatcher = batcher[recordItem, bool]

const (
	recordFlushers     = 2
	recordMaxBatch     = 32
	recordBatchTimeout = 10 * time.Second
)

func newRecordBatcher(s *Store) *recordBatcher {
	return newBatcher("bot_record", recordFlushers, recordMaxBatch, errRecordClosed, func(batch []*batchCall[recordItem, bool]) {
		s.flushRecords(batch)
	})
}

// errRecordClosed answers a record the batcher will not write because the store is closing: the
// worker's task fails and runs again, and RecordBotReply is idempotent.
var errRecordClosed = Errorf(CodeUnavailable, "the store is closing")

// flushRecords writes a batch of replies and says how many went in one statement. A second record of
// the same reply (a task that ran twice at once) goes alone after the batch, so that only the record
// that stored the reply says so.
func (s *Store) flushRecords(batch []*batchCall[recordItem, bool]) (together int) {
	ctx, cancel := context.WithTimeout(context.Background(), recordBatchTimeout)
	defer cancel()
	rest, alone := splitRepeatedReplies(batch)
	if len(rest) > 1 {
		stored, err := s.recordBotRepliesPG(ctx, rest)
		if err == nil {
			for _, call := range rest {
				call.answer(stored[call.in.reply.ID], nil)
			}
			together, rest = len(rest), nil
		}
	}
	for _, call := range append(rest, alone...) {
		call.answer(s.recordBotReplyPG(ctx, call.in.reply, call.in.attempt))
	}
	return together
}

// splitRepeatedReplies sorts the batch by incoming message id (the order its rows are locked in) and
// sets aside each record of a reply that the batch records already.
func splitRepeatedReplies(batch []*batchCall[recordItem, bool]) (together, alone []*batchCall[recordItem, bool]) {
	seen := make(map[string]bool, len(batch))
	for _, call := range batch {
		if seen[call.in.reply.ID] {
			alone = append(alone, call)
			continue
		}
		seen[call.in.reply.ID] = true
		together = append(together, call)
	}
	slices.SortFunc(together, func(a, b *batchCall[recordItem, bool]) int {
		return strings.Compare(*a.in.reply.ReplyToID, *b.in.reply.ReplyToID)
	})
	return together, alone
}

// recordRow is one reply and its attempt as record_bot_replies reads them.
type recordRow struct {
	N                 int        `json:"n"`
	ID                string     `json:"id"`
	AccountID         string     `json:"account_id"`
	ContactID         string     `json:"contact_id"`
	CampaignID        *string    `json:"campaign_id"`
	Direction         string     `json:"direction"`
	Channel           string     `json:"channel"`
	Transport         string     `json:"transport"`
	MessageType       string     `json:"message_type"`
	Body              string     `json:"body"`
	ToID              string     `json:"to_id"`
	Author            string     `json:"author"`
	Status            string     `json:"status"`
	ReplyToID         string     `json:"reply_to_id"`
	CreatedAt         time.Time  `json:"created_at"`
	Error             *string    `json:"error"`
	NextAttemptAt     *time.Time `json:"next_attempt_at"`
	SentAt            *time.Time `json:"sent_at"`
	ProviderMessageID *string    `json:"provider_message_id"`
	GivenUpAt         *time.Time `json:"given_up_at"`
	AttemptID         string     `json:"attempt_id"`
	AttemptAt         time.Time  `json:"attempt_at"`
	StatusCode        *int       `json:"status_code"`
	DurationMS        int64      `json:"duration_ms"`
}

// recordBotRepliesFunctionSQL is record_bot_replies, recordBotReplySQL for a batch: p_rows is the
// replies (recordRow, as JSON), p_done BotDone, p_incoming the incoming messages' ids (a JSON array).
// It returns the ids of the replies that were new.
//
// It is a function, run through a prepared statement, so that nothing in it is planned per batch:
// planned on each run, the batch's update of the incoming messages (a partitioned table with a dozen
// partial indexes to prove against) cost 1.5-2.4 ms of planning per batch, more than the batch's
// writes (docs/performance.md, 2026-11-28, third sitting). Each statement in it keeps a plan that does
// not depend on the tables' sizes when it was made (the connections keep generic plans, store.go): the
// inserts read only their JSON, and each incoming message is updated alone, through its primary key.
// The replies and attempts are written first, then the incoming messages are locked and marked in id
// order (models/tx.go).
const recordBotRepliesFunctionSQL = `CREATE OR REPLACE FUNCTION record_bot_replies(p_rows jsonb, p_done text, p_incoming jsonb)
RETURNS SETOF text LANGUAGE plpgsql AS $fn$
DECLARE
	v_stored text[];
	v_id text;
BEGIN
	WITH x AS (
		SELECT * FROM jsonb_to_recordset(p_rows) AS x(n int, id text, account_id text, contact_id text,
			campaign_id text, direction text, channel text, transport text, message_type text, body text, to_id text,
			author text, status text, reply_to_id text, created_at timestamptz, error text, next_attempt_at timestamptz,
			sent_at timestamptz, provider_message_id text, given_up_at timestamptz, attempt_id text,
			attempt_at timestamptz, status_code int, duration_ms int)
	), reply AS (
		INSERT INTO messages (id, account_id, contact_id, campaign_id, direction, channel, transport, message_type,
			body, to_id, author, status, reply_to_id, created_at, attempts, error, next_attempt_at, sent_at,
			provider_message_id, given_up_at)
		SELECT id, account_id, contact_id, campaign_id, direction, channel, transport, message_type, body, to_id,
			author, status, reply_to_id, created_at, 1, error, next_attempt_at, sent_at, provider_message_id, given_up_at
		FROM x ORDER BY x.n
		ON CONFLICT DO NOTHING RETURNING id
	), attempt AS (
		INSERT INTO message_attempts (id, message_id, at, status_code, error, duration_ms)
		SELECT x.attempt_id, x.id, x.attempt_at, x.status_code, x.error, x.duration_ms
		FROM x JOIN reply ON reply.id = x.id ORDER BY x.n
	)
	SELECT array_agg(reply.id) INTO v_stored FROM reply;
	FOR v_id IN SELECT DISTINCT i FROM jsonb_array_elements_text(p_incoming) AS i ORDER BY i LOOP
		UPDATE messages SET bot_status = p_done WHERE id = v_id;
	END LOOP;
	RETURN QUERY SELECT unnest(v_stored);
END
$fn$`

// recordBotRepliesMigration installs record_bot_replies (recordBotRepliesFunctionSQL).
func recordBotRepliesMigration(db *bun.DB) migrate.Migration {
	return migrate.Migration{
		Name: "20261208100001", Comment: "record_bot_replies",
		Up:   postgresOnly(db, recordBotRepliesFunctionSQL),
		Down: postgresOnly(db, `DROP FUNCTION IF EXISTS record_bot_replies(jsonb, text, jsonb)`),
	}
}

// recordBotRepliesPG writes the batch (sorted by splitRepeatedReplies) in one statement and says, by
// reply id, which replies were new.
func (s *Store) recordBotRepliesPG(ctx context.Context, batch []*batchCall[recordItem, bool]) (map[string]bool, error) {
	rows := make([]recordRow, len(batch))
	incoming := make([]string, len(batch))
	for i, call := range batch {
		m, a := call.in.reply, call.in.attempt
		rows[i] = recordRow{N: i, ID: m.ID, AccountID: m.AccountID, ContactID: m.ContactID, CampaignID: m.CampaignID,
			Direction: m.Direction, Channel: m.Channel, Transport: m.Transport, MessageType: m.MessageType, Body: m.Body,
			ToID: m.ToID, Author: m.Author, Status: m.Status, ReplyToID: *m.ReplyToID, CreatedAt: m.CreatedAt,
			Error: m.Error, NextAttemptAt: m.NextAttemptAt, SentAt: m.SentAt, ProviderMessageID: m.ProviderMessageID,
			GivenUpAt: m.GivenUpAt, AttemptID: a.ID, AttemptAt: a.At, StatusCode: a.StatusCode, DurationMS: a.DurationMS}
		incoming[i] = *m.ReplyToID
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	ids, err := json.Marshal(incoming)
	if err != nil {
		return nil, err
	}
	stmt, err := s.prepared(ctx, "record_bot_replies", func() string {
		return "SELECT record_bot_replies($1::jsonb, $2, $3::jsonb)"
	})
	if err != nil {
		return nil, fmt.Errorf("record bot replies: %w", err)
	}
	found, err := stmt.QueryContext(ctx, string(raw), BotDone, string(ids))
	if err != nil {
		return nil, fmt.Errorf("record bot replies: %w", err)
	}
	defer found.Close()
	stored := make(map[string]bool, len(batch))
	for found.Next() {
		var id string
		if err := found.Scan(&id); err != nil {
			return nil, fmt.Errorf("record bot replies: %w", err)
		}
		stored[id] = true
	}
	if err := found.Err(); err != nil {
		return nil, fmt.Errorf("record bot replies: %w", err)
	}
	return stored, nil
}
