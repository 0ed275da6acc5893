package jobs

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/models"
)

// alertPayload is the body of the alert webhook (README, "Custom channels, the bot and the reply webhook"; AlertWebhookPayload in the OpenAPI document).
type alertPayload struct {
	AlertID   string    `json:"alertId"`
	ContactID string    `json:"contactId"`
	MessageID *string   `json:"messageId"`
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"createdAt"`
}

// handleAlert posts an alert to the account's alert webhook, signed with the account's secret, with
// the same retry rules as replies.
func (h *Handler) handleAlert(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[AlertPayload](t)
	if err != nil {
		return err
	}
	alert, err := h.Store.AlertByID(ctx, p.AlertID)
	if err != nil {
		return gone(err)
	}
	if alert.WebhookStatus != models.AlertWebhookPending && alert.WebhookStatus != models.AlertWebhookFailed {
		return nil
	}
	acc, err := h.Store.AccountByID(ctx, alert.AccountID)
	if err != nil {
		return err
	}
	if acc.AlertWebhookURL == nil {
		return h.Store.SetAlertWebhookResult(ctx, alert.ID, models.AlertWebhookNone, "")
	}
	settings, err := h.Store.WebhookSettings(ctx, acc.ID, NewWebhookSecret())
	if err != nil {
		return err
	}
	body, _ := json.Marshal(alertPayload{AlertID: alert.ID, ContactID: alert.ContactID, MessageID: alert.MessageID, Reason: alert.Reason, CreatedAt: alert.CreatedAt})
	res := h.Sender.Send(ctx, WebhookRequest{URL: *acc.AlertWebhookURL, Secret: settings.SigningSecret, ID: alert.ID, Payload: body})
	if res.OK() {
		return h.Store.SetAlertWebhookResult(ctx, alert.ID, models.AlertWebhookSent, "")
	}
	if err := h.Store.SetAlertWebhookResult(ctx, alert.ID, models.AlertWebhookFailed, res.Error); err != nil {
		return err
	}
	return h.retryFailedWebhook(ctx, t, "alert "+alert.ID, res)
}
