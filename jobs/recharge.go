package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/hibiken/asynq"

	"funnelchat/models"
)

// TypeAutoRecharge sends a sub-account's low-balance event to its agency's auto-recharge webhook.
const TypeAutoRecharge = "credits:auto_recharge"

// RechargePayload names a low-balance event.
type RechargePayload struct {
	SubAccountID string `json:"subAccountId"`
	Event        int    `json:"event"`
}

// Recharge enqueues the auto-recharge webhook of one low-balance event (one task per event, ever).
func (q *Queue) Recharge(ctx context.Context, e models.RechargeEvent) error {
	return q.enqueue(ctx, TypeAutoRecharge, RechargePayload{SubAccountID: e.SubAccountID, Event: e.Event},
		asynq.TaskID(fmt.Sprintf("recharge:%s:%d", e.SubAccountID, e.Event)), asynq.Queue(QueueLow),
		asynq.MaxRetry(len(q.cfg.WebhookRetrySchedule)))
}

// rechargePayload is the body of the auto-recharge webhook (AutoRechargeWebhookPayload in the OpenAPI document).
type rechargePayload struct {
	IdempotencyKey string  `json:"idempotency_key"`
	SubAccountID   string  `json:"sub_account_id"`
	Email          string  `json:"email"`
	Balance        float64 `json:"balance"`
	Threshold      float64 `json:"threshold"`
	Amount         float64 `json:"amount"`
}

// handleRecharge posts a low-balance event to the sub-account's auto-recharge webhook, signed with the
// agency's secret. The idempotency_key is the same on every retry, so the agency grants once.
func (h *Handler) handleRecharge(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[RechargePayload](t)
	if err != nil {
		return err
	}
	sub, err := h.Store.AccountByID(ctx, p.SubAccountID)
	if err != nil {
		return gone(err)
	}
	if sub.ParentID == nil || sub.RechargeWebhookURL == nil || sub.RechargeThresholdMilli == nil || sub.RechargeAmountMilli == nil {
		return nil
	}
	agency, err := h.Store.WebhookSettings(ctx, *sub.ParentID, NewWebhookSecret())
	if err != nil {
		return err
	}
	event := models.RechargeEvent{SubAccountID: sub.ID, Event: p.Event}
	body, _ := json.Marshal(rechargePayload{
		IdempotencyKey: event.IdempotencyKey(), SubAccountID: sub.ID, Email: sub.Email, Balance: sub.Credits(),
		Threshold: float64(*sub.RechargeThresholdMilli) / 1000, Amount: float64(*sub.RechargeAmountMilli) / 1000,
	})
	res := h.Sender.Send(ctx, WebhookRequest{URL: *sub.RechargeWebhookURL, Secret: agency.SigningSecret, ID: event.IdempotencyKey(), Payload: body})
	h.Log.InfoContext(ctx, "auto-recharge webhook", "account_id", sub.ID, "event", p.Event, "status_code", res.StatusCode, "ok", res.OK())
	if res.OK() {
		return nil
	}
	return h.retryFailedWebhook(ctx, t, "recharge "+event.IdempotencyKey(), res)
}

// botReplyCost is BOT_REPLY_CREDITS in stored thousandths.
func (h *Handler) botReplyCost() int64 { return int64(math.Round(h.Config.BotReplyCredits * 1000)) }
