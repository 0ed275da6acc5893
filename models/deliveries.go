package models

import (
	"context"
	"fmt"
)

// "Retry all failed", on the inbox's Deliveries page (README, "The inbox"); the page's list and the
// team's counts are reads, in models/report.

// MaxRetryAll is how many failed messages one "Retry all failed" queues again.
const MaxRetryAll = 1000

// RetryAllFailed puts up to MaxRetryAll of the account's failed outgoing messages, oldest first, back
// to pending in a new delivery round (as Redeliver does one, asking the door again) and returns those
// it moved, for the caller to queue; one the door refuses now stays failed and is not returned. Each
// message moves once however many ask at the same time: a second press, or another user's, finds it
// pending and leaves it.
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
