package models

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Alert asks the account's team for help with a contact: a handoff, or a bot that could not answer.
type Alert struct {
	bun.BaseModel `bun:"table:alerts"`

	ID            string    `bun:"id,pk" json:"id"`
	AccountID     string    `bun:"account_id" json:"-"`
	ContactID     string    `bun:"contact_id" json:"contactId"`
	MessageID     *string   `bun:"message_id" json:"messageId"`
	Reason        string    `bun:"reason" json:"reason"`
	WebhookStatus string    `bun:"webhook_status" json:"-"`
	WebhookError  *string   `bun:"webhook_error" json:"-"`
	CreatedAt     time.Time `bun:"created_at" json:"createdAt"`
	// ResolvedAt is when a person marked the alert dealt with; nil while it is open.
	ResolvedAt *time.Time `bun:"resolved_at" json:"resolvedAt"`
	// ResolvedBy is who resolved it: a user id, or "api".
	ResolvedBy *string `bun:"resolved_by" json:"-"`

	// EscalatedAt is when the alert waited handoffEscalationMinutes without a team reply (see
	// EscalateAlerts); nil until then.
	EscalatedAt             *time.Time `bun:"escalated_at" json:"escalatedAt"`
	EscalationWebhookStatus *string    `bun:"escalation_webhook_status" json:"-"`

	// HandoffReply is the account's hand-off message written by Handoff, to deliver (nil: none).
	HandoffReply *Message `bun:"-" json:"-"`
	// assigned is who raising it gave the unassigned conversation to (see assignInTurn).
	assigned *Assignee
	// reopened says that raising it reopened the resolved or snoozed conversation.
	reopened bool
}

// Alert webhook states.
const (
	AlertWebhookNone    = "none" // no alert webhook configured when the alert was raised
	AlertWebhookPending = "pending"
	AlertWebhookSent    = "sent"
	AlertWebhookFailed  = "failed"
)

// Handoff hands a conversation to the team: it raises an alert (which reopens a resolved or snoozed
// conversation), pauses the bot for the contact, marks the incoming message as handed off and writes the account's hand-off message to the contact (the
// alert's HandoffReply, for the caller to deliver; none when the account has none or the door
// refuses it), in one transaction. The message answers the incoming message, so one hand-off writes
// it once however often the bot's task runs.
func (s *Store) Handoff(ctx context.Context, incoming *Message, reason string) (*Alert, error) {
	var alert *Alert
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if alert, err = raiseAlert(ctx, tx, incoming.AccountID, incoming.ContactID, &incoming.ID, reason); err != nil {
			return err
		}
		if err := setBotPaused(ctx, tx, incoming.ContactID, true); err != nil {
			return err
		}
		if err := setBotStatus(ctx, tx, incoming.ID, BotHandoff); err != nil {
			return err
		}
		alert.HandoffReply, err = s.writeHandoffMessage(ctx, tx, incoming)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("handoff: %w", err)
	}
	s.emitAlert(ctx, alert)
	if alert.HandoffReply != nil {
		s.emit(ctx, alert.AccountID, EventMessageCreated, alert.HandoffReply)
	}
	return alert, nil
}

// writeHandoffMessage writes the account's hand-off message in answer to incoming, where it came from,
// if the door lets it go; nil when there is nothing to send.
func (s *Store) writeHandoffMessage(ctx context.Context, tx bun.Tx, incoming *Message) (*Message, error) {
	var text sql.NullString
	if err := tx.NewSelect().Model((*Account)(nil)).Column("handoff_message").Where("id = ?", incoming.AccountID).Scan(ctx, &text); err != nil {
		return nil, err
	}
	body := DefaultHandoffMessage
	if text.Valid {
		body = text.String
	}
	if body == "" {
		return nil, nil
	}
	r := AnswerRoute(incoming)
	reply := &Message{
		ID: newID(prefixMessage), AccountID: incoming.AccountID, ContactID: incoming.ContactID, CampaignID: copyOf(incoming.CampaignID),
		Direction: DirectionOutgoing, Channel: r.Channel, Transport: r.Transport, MessageType: MessageTypeText,
		Body: body, ToID: r.ToID, Author: AuthorBot, Status: StatusPending, ReplyToID: &incoming.ID, CreatedAt: now(),
	}
	d, err := s.decide(ctx, tx, Outgoing{Purpose: PurposeBotReply, AccountID: incoming.AccountID, ContactID: incoming.ContactID,
		RepliesTo: incoming, Route: r})
	if err != nil || !d.Allowed() {
		return nil, err
	}
	res, err := tx.NewInsert().Model(reply).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, nil // the bot answered this message already
	}
	return reply, nil
}

// BotFailed records that the bot could not answer an incoming message and raises an alert, so the
// message is answered by a person instead of not at all.
func (s *Store) BotFailed(ctx context.Context, incoming *Message, reason string) (*Alert, error) {
	var alert *Alert
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if alert, err = raiseAlert(ctx, tx, incoming.AccountID, incoming.ContactID, &incoming.ID, reason); err != nil {
			return err
		}
		return setBotStatus(ctx, tx, incoming.ID, BotFailed)
	})
	if err != nil {
		return nil, fmt.Errorf("bot failed: %w", err)
	}
	s.emitAlert(ctx, alert)
	return alert, nil
}

func raiseAlert(ctx context.Context, tx bun.Tx, accountID, contactID string, messageID *string, reason string) (*Alert, error) {
	var hook []string
	if err := tx.NewSelect().Model((*Account)(nil)).Column("alert_webhook_url").Where("id = ? AND alert_webhook_url IS NOT NULL", accountID).Scan(ctx, &hook); err != nil {
		return nil, err
	}
	a := &Alert{
		ID: newID(prefixAlert), AccountID: accountID, ContactID: contactID, MessageID: copyOf(messageID),
		Reason: truncate(reason, 500), WebhookStatus: AlertWebhookNone, CreatedAt: now(),
	}
	if len(hook) > 0 {
		a.WebhookStatus = AlertWebhookPending
	}
	if _, err := tx.NewInsert().Model(a).Exec(ctx); err != nil {
		return nil, err
	}
	// Every alert asks for a person: a resolved or snoozed conversation is open again, and an
	// unassigned one gets someone now, in turn.
	var err error
	if a.reopened, err = reopenConversation(ctx, tx, contactID, a.CreatedAt); err != nil {
		return nil, err
	}
	a.assigned, err = assignInTurn(ctx, tx, accountID, contactID)
	return a, err
}

// emitAlert publishes a new alert, and the reopening and the assignment it made.
func (s *Store) emitAlert(ctx context.Context, a *Alert) {
	s.emit(ctx, a.AccountID, EventAlertCreated, a)
	if a.reopened {
		s.emitReopened(ctx, a.AccountID, a.ContactID)
	}
	if a.assigned != nil {
		s.emit(ctx, a.AccountID, EventContactAssigned, contactAssigned{ContactID: a.ContactID, Assignee: a.assigned})
	}
}

// AlertByID returns an alert by id, for the worker.
func (s *Store) AlertByID(ctx context.Context, id string) (*Alert, error) {
	a := new(Alert)
	if err := s.db.NewSelect().Model(a).Where("id = ?", id).Scan(ctx); err != nil {
		if isNoRows(err) {
			return nil, notFound("alert")
		}
		return nil, fmt.Errorf("alert by id: %w", err)
	}
	return a, nil
}

// SetAlertWebhookResult records the outcome of delivering an alert to the alert webhook.
func (s *Store) SetAlertWebhookResult(ctx context.Context, id, status, errText string) error {
	q := s.db.NewUpdate().Model((*Alert)(nil)).Set("webhook_status = ?", status).Where("id = ?", id)
	if errText == "" {
		q = q.Set("webhook_error = NULL")
	} else {
		q = q.Set("webhook_error = ?", errText)
	}
	_, err := q.Exec(ctx)
	return err
}

// AlertFilter narrows a listing of alerts.
type AlertFilter struct {
	All       bool   // resolved ones too; otherwise open alerts only
	ContactID string // one contact's; "" for all
}

// Alerts returns one page of the account's alerts, newest first.
func (s *Store) Alerts(ctx context.Context, accountID string, f AlertFilter, page Page) ([]Alert, string, error) {
	var alerts []Alert
	q := s.db.NewSelect().Model(&alerts).Where("account_id = ?", accountID).Order("id DESC").Limit(int64(page.Limit) + 1)
	if !f.All {
		q = q.Where("resolved_at IS NULL")
	}
	if f.ContactID != "" {
		q = q.Where("contact_id = ?", f.ContactID)
	}
	if page.Cursor != "" {
		q = q.Where("id < ?", page.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("alerts: %w", err)
	}
	alerts, next := cutPage(alerts, page, func(i int) string { return alerts[i].ID })
	return alerts, next, nil
}

// ResolveAlert marks the account's alert dealt with, by a user id or "api". Resolving a resolved alert
// again changes nothing and returns it as it is. Errors: NOT_FOUND (another account's alert too).
func (s *Store) ResolveAlert(ctx context.Context, accountID, alertID, by string) (*Alert, error) {
	if len(alertID) > maxIDLength {
		return nil, notFound("alert")
	}
	res, err := s.db.NewUpdate().Model((*Alert)(nil)).Set("resolved_at = ?", now()).Set("resolved_by = ?", by).
		Where("id = ? AND account_id = ? AND resolved_at IS NULL", alertID, accountID).Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("resolve alert: %w", err)
	}
	a := new(Alert)
	if err := s.db.NewSelect().Model(a).Where("id = ? AND account_id = ?", alertID, accountID).Scan(ctx); err != nil {
		if isNoRows(err) {
			return nil, notFound("alert")
		}
		return nil, fmt.Errorf("resolve alert: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		s.emit(ctx, accountID, EventAlertResolved, a)
	}
	return a, nil
}
