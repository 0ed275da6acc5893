package report

import (
	"context"
	"fmt"
	"time"

	"funnelchat/models"
)

// Failed deliveries, for the inbox's Deliveries page (README, "The inbox"), and the team's counts.

// FailedDeliveries lists one page of the account's outgoing messages whose delivery failed (given up,
// or waiting for a retry), newest first. Errors: VALIDATION_ERROR for a bad cursor.
func (r *Reader) FailedDeliveries(ctx context.Context, accountID string, page models.Page) ([]models.Message, string, error) {
	var out []models.Message
	q := r.db.NewSelect().Model(&out).
		Where("account_id = ? AND direction = ? AND status = ?", accountID, models.DirectionOutgoing, models.StatusFailed).
		OrderExpr("id DESC").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("id < ?", page.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("failed deliveries: %w", err)
	}
	out, next := models.CutPage(out, page, func(i int) string { return out[i].ID })
	return out, next, nil
}

// InboxCounts is what waits for a user: open conversations with a message the user has not read, and
// the account's open alerts. Resolved and snoozed conversations wait for nobody.
type InboxCounts struct {
	Unread     int `json:"unread"`
	OpenAlerts int `json:"openAlerts"`
}

// Counts returns what waits for the reader (an inbox user) in the account.
func (r *Reader) Counts(ctx context.Context, accountID, readerID string) (*InboxCounts, error) {
	out := &InboxCounts{}
	unread, args := conversationMarkers(accountID, readerID).unread("c.id")
	open, openArgs := models.ConversationIs(models.ConversationOpen, "c", time.Now().UTC())
	err := r.db.NewSelect().TableExpr("contacts AS c").ColumnExpr("count(*)").
		Where("c.account_id = ?", accountID).Where(open, openArgs...).Where(unread, args...).Scan(ctx, &out.Unread)
	if err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	alerts, err := r.db.NewSelect().Model((*models.Alert)(nil)).Where("account_id = ? AND resolved_at IS NULL", accountID).Count(ctx)
	out.OpenAlerts = int(alerts)
	if err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	return out, nil
}
