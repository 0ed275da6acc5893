package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/models"
)

// replyPayload is the body of the outbound custom-channel webhook (ReplyWebhookPayload in the OpenAPI document).
type replyPayload struct {
	ContactID string `json:"contactId"`
	MessageID string `json:"messageId"`
	UserID    string `json:"userId"`
	Body      string `json:"body"`
	ToID      string `json:"toId"`
	Channel   string `json:"channel"`
}

// handleDeliver posts an outgoing message to the account's webhook and records the attempt. Retryable
// failures return an error so asynq retries on WEBHOOK_RETRY_SCHEDULE (a longer Retry-After is
// honoured); final ones are recorded as failed and end the task.
func (h *Handler) handleDeliver(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[DeliverPayload](t)
	if err != nil {
		return err
	}
	m, err := h.Store.MessageForWork(ctx, p.MessageID)
	if err != nil {
		return gone(err)
	}
	if m.Status == models.StatusSent || m.DeliveryRound != p.Round || m.Direction != models.DirectionOutgoing {
		return nil // delivered already, or superseded by a redeliver
	}
	acc := m.Account
	transport, ok := h.transports()[m.Transport]
	if !ok {
		return fmt.Errorf("deliver %s: unknown transport %q: %w", m.ID, m.Transport, asynq.SkipRetry)
	}
	res := transport.Deliver(ctx, m, acc)
	deliveryLatency.WithLabelValues(m.Transport).Observe(res.Duration.Seconds())
	h.Log.InfoContext(ctx, "delivery", "message_id", m.ID, "account_id", m.AccountID, "transport", m.Transport,
		"status_code", res.StatusCode, "ok", res.OK(), "duration_ms", res.Duration.Milliseconds())
	return h.recordDelivery(ctx, t, m.ID, m.Transport, res)
}

// recordDelivery stores the attempt's outcome and tells asynq whether to retry.
func (h *Handler) recordDelivery(ctx context.Context, t *asynq.Task, messageID, transport string, res DeliveryResult) error {
	out := models.AttemptOutcome{StatusCode: res.StatusCode, Error: res.Error, Duration: res.Duration, ProviderID: res.ProviderID}
	if res.OK() {
		out.Error = ""
		deliveries.WithLabelValues(transport, "sent").Inc()
		return h.recordSent(ctx, messageID, out)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	final := !res.Retryable || retried >= maxRetry
	var next time.Time
	if !final {
		next = nextAttempt(h.Config.WebhookRetrySchedule, retried, t.Payload(), res.RetryAfter)
		out.NextAttemptAt = &next
	}
	if err := h.Store.RecordAttempt(ctx, messageID, out); err != nil {
		return err
	}
	if final {
		deliveries.WithLabelValues(transport, "failed").Inc()
		return fmt.Errorf("deliver %s: %s: %w", messageID, res.Error, asynq.SkipRetry)
	}
	deliveries.WithLabelValues(transport, "retry").Inc()
	return &retryAt{err: errors.New(res.Error), at: next}
}

// recordSent records a delivery the receiver accepted. Failing here would retry the task and send the
// message again, so an outage of our own database is waited out instead (until the task's deadline);
// only a worker that dies meanwhile leaves a repeat, which the receiver drops by its webhook-id.
func (h *Handler) recordSent(ctx context.Context, messageID string, out models.AttemptOutcome) error {
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := h.Store.RecordAttempt(ctx, messageID, out)
		if err == nil || !models.IsUnavailable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}
