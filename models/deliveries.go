package models

import (
	"context"
	"fmt"
)

// Failed deliveries, for the inbox's Deliveries page (README, "The inbox"), and the team's counts.

// FailedDeliveries lists one page of the account's outgoing messages whose delivery failed (given up,
// or waiting for a retry), newest first. Errors: VALIDATION_ERROR for a bad cursor.
func (s *Store) FailedDeliveries(ctx context.Context, accountID string, page Page) ([]Message, string, error) {
	var out []Message
	q := s.db.NewSelect().Model(&out).
		Where("account_id = ? AND direction = ? AND status = ?", accountID, DirectionOutgoing, StatusFailed).
		OrderExpr("id DESC").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("id < ?", page.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("failed deliveries: %w", err)
	}
	out, next := cutPage(out, page, func(i int) string { return out[i].ID })
	return out, next, nil
}

// MaxRetryAll is how many failed messages one "Retry all failed" queues again.
const MaxRetryAll = 1000

// RetryAllFailed puts up to MaxRetryAll of the account's failed outgoing messages, oldest first, back
// to pending in a new delivery round (as Redeliver does one, asking the door again) and returns those
// it moved, for the caller to queue; one the door refuses now stays failed and is not returned. Each message moves once however many ask at the same time: a second press, or another
// user's, finds it pending and leaves it.
func (s *Store) RetryAllFailed(ctx context.Context, accountID string) ([]*Message, error) {
	var ids []string
	err := s.db.NewSelect().Model((*Message)(nil)).Column("id").
		Where("account_id = ? AND direction = ? AND status = ?", accountID, DirectionOutgoing, StatusFailed).
		OrderExpr("id").Limit(MaxRetryAll).Scan(ctx, &ids)
	if err != nil {
		return nil, fmt.Errorf("retry all failed: %w", err)
	}
	out := make([]*Message, 0, len(ids))
	for _, id := range ids {
		m, err := s.Redeliver(ctx, accountID, id)
		if ErrorCode(err) == CodeConflict {
			continue // moved meanwhile by another press
		}
		if err != nil {
			return out, err
		}
		if m.Status == StatusPending {
			out = append(out, m) // not one the door refuses now (it stays failed, with the reason)
		}
	}
	return out, nil
}

// InboxCounts is what waits for a user: conversations with a message the user has not read, and the
// account's open alerts.
type InboxCounts struct {
	Unread     int `json:"unread"`
	OpenAlerts int `json:"openAlerts"`
}

// Counts returns what waits for the reader (an inbox user) in the account.
func (s *Store) Counts(ctx context.Context, accountID, readerID string) (*InboxCounts, error) {
	out := &InboxCounts{}
	unread, args := conversationMarkers(accountID, readerID).unread("c.id")
	err := s.db.NewSelect().TableExpr("contacts AS c").ColumnExpr("count(*)").
		Where("c.account_id = ?", accountID).Where(unread, args...).Scan(ctx, &out.Unread)
	if err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	open, err := s.db.NewSelect().Model((*Alert)(nil)).Where("account_id = ? AND resolved_at IS NULL", accountID).Count(ctx)
	out.OpenAlerts = int(open)
	if err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	return out, nil
}
