package models

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// A bot's reply is stored one of two ways. CreateBotReply stores it pending before its first delivery
// attempt, which RecordAttempt then records: two writes, and the text is fixed before anything is sent.
// RecordBotReply stores it once, after its first attempt, together with that attempt: one write. The
// worker takes the second way when a rerun of the bot task would write the same reply (the offline bot,
// with nobody charged for it); see jobs' deliverFirst.

// NewBotReply is the bot's reply to incoming as RecordBotReply stores it: text written in the voice of
// campaignID (nil: the account's own bot), to whoever wrote incoming, on the same channel, under
// BotReplyID(incoming.ID). It is stored by nothing until then.
func NewBotReply(incoming *Message, campaignID *string, text string) *Message {
	return newBotReply(incoming, campaignID, text, BotReplyID(incoming.ID))
}

func newBotReply(incoming *Message, campaignID *string, text, id string) *Message {
	// The reply's pointer fields are its own: when the reply exists already, bun reads it into m and
	// writes through non-nil pointers, which must not land in the caller's incoming message.
	incomingID := incoming.ID
	return &Message{
		ID: id, AccountID: incoming.AccountID, ContactID: incoming.ContactID, CampaignID: copyOf(campaignID),
		Direction: DirectionOutgoing, Channel: incoming.Channel, Transport: incoming.Transport, MessageType: MessageTypeText, Body: text,
		ToID: incoming.FromID, Author: AuthorBot, Status: StatusPending, ReplyToID: &incomingID, CreatedAt: now(),
	}
}

// ChargesBotReply says whether payer pays costMilli for a bot reply: a sub-account does, when replies
// cost anything (BOT_REPLY_COST). A charged reply is stored by CreateBotReply, whose transaction takes
// the credits before anything is sent.
func ChargesBotReply(payer *Account, costMilli int64) bool {
	return payer != nil && payer.ParentID != nil && costMilli > 0
}

// RecordBotReply stores reply (NewBotReply) with the outcome of its first delivery attempt, that
// attempt, and its incoming message as answered, all at once: on PostgreSQL one statement, one round
// trip and one commit, shared with the replies recorded at the same moment (botreply_batch.go). The
// reply is stored sent, or failed with out.NextAttemptAt (nil: for good) and out.Error; reply's own
// Status, Attempts, Error, NextAttemptAt and SentAt are set to match. It is idempotent: when the reply
// is stored already (a task that ran twice), nothing changes and stored is false.
func (s *Store) RecordBotReply(ctx context.Context, reply *Message, out AttemptOutcome) (stored bool, err error) {
	a := settleBotReply(reply, out)
	if s.IsSQLite() {
		stored, err = s.recordBotReplyTx(ctx, reply, a)
	} else {
		stored, err = s.records.do(ctx, recordItem{reply: reply, attempt: a})
	}
	if err != nil {
		return false, fmt.Errorf("record bot reply: %w", err)
	}
	if stored {
		s.emit(ctx, reply.AccountID, EventMessageCreated, reply)
	}
	return stored, nil
}

// settleBotReply sets reply's outcome fields to what its first attempt, out, ended as, and returns that
// attempt's record.
func settleBotReply(reply *Message, out AttemptOutcome) *Attempt {
	a := newAttempt(reply.ID, out)
	reply.Attempts = 1
	if out.Error == "" {
		reply.Status, reply.SentAt, reply.Error, reply.NextAttemptAt = StatusSent, &a.At, nil, nil
		if out.ProviderID != "" {
			reply.ProviderMessageID = &out.ProviderID
		}
	} else {
		reply.Status, reply.SentAt, reply.Error, reply.NextAttemptAt = StatusFailed, nil, &out.Error, out.NextAttemptAt
		reply.GivenUpAt = givenUp(out, a.At)
	}
	return a
}

// recordBotReplySQL is RecordBotReply's statement (prepared, see prepared.go). The attempt is stored
// only with a reply that is new; the incoming message ($13) is marked answered ($22) either way.
var recordBotReplySQL = `WITH reply AS (
	INSERT INTO messages (id, account_id, contact_id, campaign_id, direction, channel, transport, message_type,
		body, to_id, author, status, reply_to_id, created_at, attempts, error, next_attempt_at, sent_at, provider_message_id, given_up_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, 1, $15, $16, $17, $18, $24)
	ON CONFLICT DO NOTHING RETURNING id
), attempt AS (
	INSERT INTO message_attempts (id, message_id, at, status_code, error, duration_ms)
	SELECT $19, reply.id, $20, $21, $15, $23 FROM reply
), answered AS (
	UPDATE messages SET bot_status = $22 WHERE id = $13
)
SELECT count(*) FROM reply`

func (s *Store) recordBotReplyPG(ctx context.Context, m *Message, a *Attempt) (bool, error) {
	stmt, err := s.prepared(ctx, "record_bot_reply", func() string { return recordBotReplySQL })
	if err != nil {
		return false, err
	}
	var n int
	err = stmt.QueryRowContext(ctx, m.ID, m.AccountID, m.ContactID, orNil(m.CampaignID), m.Direction, m.Channel,
		m.Transport, m.MessageType, m.Body, m.ToID, m.Author, m.Status, *m.ReplyToID, m.CreatedAt,
		orNil(m.Error), orNil(m.NextAttemptAt), orNil(m.SentAt), orNil(m.ProviderMessageID),
		a.ID, a.At, orNil(a.StatusCode), BotDone, a.DurationMS, orNil(m.GivenUpAt)).Scan(&n)
	return n == 1, err
}

// recordBotReplyTx is RecordBotReply on SQLite, which has no data-modifying WITH: one transaction.
func (s *Store) recordBotReplyTx(ctx context.Context, m *Message, a *Attempt) (bool, error) {
	stored := false
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		stored = false
		res, err := tx.NewInsert().Model(m).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			stored = true
			if _, err := tx.NewInsert().Model(a).Exec(ctx); err != nil {
				return err
			}
		}
		return setBotStatus(ctx, tx, *m.ReplyToID, BotDone)
	})
	return stored, err
}
