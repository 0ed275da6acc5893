package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// DueDelivery names an outgoing message owed a delivery in its current round.
type DueDelivery struct {
	MessageID string `bun:"id"`
	Round     int    `bun:"delivery_round"`
	// ReplyToID is, for a bot reply, the incoming message it answers; Attempts the attempts so far.
	ReplyToID *string `bun:"reply_to_id"`
	Attempts  int     `bun:"attempts"`
}

// DueWorkList is what the sweep re-enqueues.
type DueWorkList struct {
	BotReplies []string
	Deliveries []DueDelivery
	Alerts     []string
	// Escalations are escalated alerts whose webhook call is owed.
	Escalations []string
	Openings    []DueSend
	FollowUps   []DueFollowUp
	// Unsettled are openings whose delivery ended but whose send does not say so yet (a worker died
	// between recording the delivery and settling the send).
	Unsettled []UnsettledOpening
	// MediaChecks are incoming messages whose media link the worker has yet to check.
	MediaChecks []string
}

// DueFollowUp names the next follow-up of a send.
type DueFollowUp struct {
	SendID string    `bun:"id"`
	Step   int       `bun:"step"`
	DueAt  time.Time `bun:"-"`
}

// UnsettledOpening is an opening message whose delivery ended (sent, or failed with no retry left).
type UnsettledOpening struct {
	MessageID string     `bun:"id"`
	Status    string     `bun:"status"`
	SentAt    *time.Time `bun:"sent_at"`
	Error     *string    `bun:"error"`
}

// DueWork lists work that should have been done before cutoff but was not: incoming messages still
// owed a bot reply or a check of their media link, outgoing messages still pending or whose scheduled
// retry is overdue, and alerts not yet sent to the alert webhook. At most limit of each.
func (s *Store) DueWork(ctx context.Context, cutoff time.Time, limit int) (*DueWorkList, error) {
	due := &DueWorkList{}
	err := s.db.NewSelect().Model((*Message)(nil)).Column("id").
		Where("bot_status = ? AND created_at < ?", BotPending, cutoff).
		Order("created_at").Limit(int64(limit)).Scan(ctx, &due.BotReplies)
	if err != nil {
		return nil, fmt.Errorf("due bot replies: %w", err)
	}
	err = s.db.NewSelect().Model((*Message)(nil)).Column("id", "delivery_round", "reply_to_id", "attempts").
		Where("direction = ? AND status IN (?, ?)", DirectionOutgoing, StatusPending, StatusFailed).
		// A pending message with a later next_attempt_at was deferred (a retry inside the contact's
		// quiet hours, Redeliver): it is due then, not before.
		Where("(status = ? AND created_at < ? AND (next_attempt_at IS NULL OR next_attempt_at < ?)) OR (status = ? AND next_attempt_at < ?)",
			StatusPending, cutoff, cutoff, StatusFailed, cutoff).
		Order("created_at").Limit(int64(limit)).Scan(ctx, &due.Deliveries)
	if err != nil {
		return nil, fmt.Errorf("due deliveries: %w", err)
	}
	err = s.db.NewSelect().Model((*Alert)(nil)).Column("id").
		Where("webhook_status = ? AND created_at < ?", AlertWebhookPending, cutoff).
		Order("created_at").Limit(int64(limit)).Scan(ctx, &due.Alerts)
	if err != nil {
		return nil, fmt.Errorf("due alerts: %w", err)
	}
	err = s.db.NewSelect().Model((*Alert)(nil)).Column("id").
		Where("escalation_webhook_status = ? AND escalated_at < ?", AlertWebhookPending, cutoff).
		Order("escalated_at").Limit(int64(limit)).Scan(ctx, &due.Escalations)
	if err != nil {
		return nil, fmt.Errorf("due escalations: %w", err)
	}
	err = s.db.NewSelect().Model((*CampaignSend)(nil)).Column("id", "due_at").
		Where("status IN (?) AND due_at < ?", bun.In([]string{SendQueued, SendDeferred}), cutoff).
		Order("due_at").Limit(int64(limit)).Scan(ctx, &due.Openings)
	if err != nil {
		return nil, fmt.Errorf("due openings: %w", err)
	}
	err = s.db.NewSelect().Model((*CampaignSend)(nil)).ColumnExpr("id, follow_up_step + 1 AS step").
		Where("status = ? AND NOT follow_ups_done AND NOT follow_up_held AND next_follow_up_at < ?", SendSent, cutoff).
		Order("next_follow_up_at").Limit(int64(limit)).Scan(ctx, &due.FollowUps)
	if err != nil {
		return nil, fmt.Errorf("due follow-ups: %w", err)
	}
	err = s.db.NewSelect().TableExpr("messages AS m").ColumnExpr("m.id, m.status, m.sent_at, m.error").
		Join("JOIN campaign_sends AS cs ON cs.message_id = m.id").
		Where("cs.status = ? AND (m.status = ? OR (m.status = ? AND m.next_attempt_at IS NULL)) AND m.created_at < ?",
			SendPending, StatusSent, StatusFailed, cutoff).
		Order("m.created_at").Limit(int64(limit)).Scan(ctx, &due.Unsettled)
	if err != nil {
		return nil, fmt.Errorf("unsettled openings: %w", err)
	}
	err = s.db.NewSelect().Model((*Message)(nil)).Column("id").
		Where("media_check = ? AND created_at < ?", MediaCheckPending, cutoff).
		Order("created_at").Limit(int64(limit)).Scan(ctx, &due.MediaChecks)
	if err != nil {
		return nil, fmt.Errorf("due media checks: %w", err)
	}
	return due, nil
}
