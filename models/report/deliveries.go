package report

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// Failed deliveries, for the inbox's Deliveries page (README, "The inbox"): those that gave up apart
// from those still retrying; and the team's counts.

// The states of a failed delivery, which the Deliveries page shows apart.
const (
	// DeliveryGaveUp: failed with no next attempt (the retries ran out, the receiver's answer was
	// final, or the outgoing door refused it); only Retry sends it again.
	DeliveryGaveUp = "gave-up"
	// DeliveryRetrying: failed, with a next attempt due on its own.
	DeliveryRetrying = "retrying"
)

// FailedDeliveries lists one page of the account's outgoing messages whose delivery failed (given up,
// or waiting for a retry), newest first. Errors: VALIDATION_ERROR for a bad cursor.
func (r *Reader) FailedDeliveries(ctx context.Context, accountID string, page models.Page) ([]models.Message, string, error) {
	return r.Deliveries(ctx, accountID, "", page)
}

// Deliveries lists one page of the account's failed deliveries in state (DeliveryGaveUp,
// DeliveryRetrying; "" for both), newest first, through messages_failed_list_idx.
func (r *Reader) Deliveries(ctx context.Context, accountID, state string, page models.Page) ([]models.Message, string, error) {
	var out []models.Message
	q := failedIn(r.db.NewSelect().Model(&out), accountID, state).OrderExpr("id DESC").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("id < ?", page.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("failed deliveries: %w", err)
	}
	out, next := models.CutPage(out, page, func(i int) string { return out[i].ID })
	return out, next, nil
}

// failedIn keeps the account's failed outgoing messages in state ("" for every one).
func failedIn(q *bun.SelectQuery, accountID, state string) *bun.SelectQuery {
	q = q.Where("account_id = ? AND direction = ? AND status = ?", accountID, models.DirectionOutgoing, models.StatusFailed)
	switch state {
	case DeliveryGaveUp:
		q = q.Where("next_attempt_at IS NULL")
	case DeliveryRetrying:
		q = q.Where("next_attempt_at IS NOT NULL")
	}
	return q
}

// MaxDeliveryCount is where the Deliveries page's counts stop (the most one Retry all failed
// queues): a count reads at most this many rows and one more, so that an account with a long outage
// behind it still gets its page at once.
const MaxDeliveryCount = models.MaxRetryAll

// DeliveryCounts are the account's failed deliveries in each state, each counted up to
// MaxDeliveryCount (a count above it is MaxDeliveryCount + 1).
type DeliveryCounts struct {
	GaveUp, Retrying int
}

// DeliveryCounts counts the account's failed deliveries in each state, for the Deliveries page's tabs.
func (r *Reader) DeliveryCounts(ctx context.Context, accountID string) (*DeliveryCounts, error) {
	out := &DeliveryCounts{}
	for _, c := range []struct {
		state string
		n     *int
	}{{DeliveryGaveUp, &out.GaveUp}, {DeliveryRetrying, &out.Retrying}} {
		capped := failedIn(r.db.NewSelect().TableExpr("messages").ColumnExpr("1"), accountID, c.state).Limit(MaxDeliveryCount + 1)
		if err := r.db.NewSelect().TableExpr("(?) AS f", capped).ColumnExpr("count(*)").Scan(ctx, c.n); err != nil {
			return nil, fmt.Errorf("delivery counts: %w", err)
		}
	}
	return out, nil
}

// GaveUpWindow is how far back the navigation's count of deliveries that gave up looks.
const GaveUpWindow = 7 * 24 * time.Hour

// MaxGaveUpCount is where that count stops (the navigation shows "99+" beyond it): each page load
// reads at most this many entries of messages_given_up_idx, however many deliveries failed.
const MaxGaveUpCount = 100

// InboxCounts is what waits for a user: open conversations with a message the user has not read
// (resolved and snoozed ones wait for nobody), the account's open alerts, and its deliveries that
// gave up within GaveUpWindow (up to MaxGaveUpCount).
type InboxCounts struct {
	Unread     int `json:"unread"`
	OpenAlerts int `json:"openAlerts"`
	GaveUp     int `json:"gaveUp"`
}

// Counts returns what waits for the reader (an inbox user) in the account.
func (r *Reader) Counts(ctx context.Context, accountID, readerID string) (*InboxCounts, error) {
	out := &InboxCounts{}
	// The reader's reads joined, not looked up per conversation: an account's open conversations are
	// counted in one pass over conversations_status_idx and one over the reader's reads (a look-up per
	// conversation took 0.55 s at 64,000 open conversations; docs/performance.md).
	open, openArgs := models.ConversationIs(models.ConversationOpen, "cv", time.Now().UTC())
	err := r.db.NewSelect().TableExpr("conversations AS cv").
		Join("LEFT JOIN conversation_reads AS r ON r.account_id = cv.account_id AND r.reader_id = ? AND r.contact_id = cv.contact_id", readerID).
		ColumnExpr("count(*)").Where("cv.account_id = ?", accountID).Where(open, openArgs...).
		Where(unreadAgainst("cv", "r.last_read_id")).Scan(ctx, &out.Unread)
	if err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	// The open alerts and the deliveries that gave up lately in one round trip; the latter a range of
	// messages_given_up_idx, at most MaxGaveUpCount entries of it.
	gaveUp := failedIn(r.db.NewSelect().TableExpr("messages").ColumnExpr("1"), accountID, DeliveryGaveUp).
		Where("given_up_at >= ?", time.Now().Add(-GaveUpWindow).UTC()).Limit(MaxGaveUpCount)
	err = r.db.NewSelect().TableExpr("alerts").ColumnExpr("count(*)").
		ColumnExpr("(SELECT count(*) FROM (?) AS g)", gaveUp).
		Where("account_id = ? AND resolved_at IS NULL", accountID).Scan(ctx, &out.OpenAlerts, &out.GaveUp)
	if err != nil {
		return nil, fmt.Errorf("counts: %w", err)
	}
	return out, nil
}
