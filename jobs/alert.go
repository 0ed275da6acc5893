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
	// Escalated: the alert waited handoffEscalationMinutes with no team reply (the second call).
	Escalated   bool       `json:"escalated"`
	EscalatedAt *time.Time `json:"escalatedAt"`
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
	// The first call and the escalation's are recorded apart, under webhook-ids of their own.
	status, webhookID := alert.WebhookStatus, alert.ID
	record := func(status, errText string) error {
		return h.Store.SetAlertWebhookResult(ctx, alert.ID, status, errText)
	}
	if p.Escalated {
		status, webhookID = derefString(alert.EscalationWebhookStatus), alert.ID+":escalated"
		record = func(status, _ string) error { return h.Store.SetEscalationWebhookResult(ctx, alert.ID, status) }
	}
	if status != models.AlertWebhookPending && status != models.AlertWebhookFailed {
		return nil
	}
	acc, err := h.Store.AccountByID(ctx, alert.AccountID)
	if err != nil {
		return err
	}
	if acc.AlertWebhookURL == nil {
		return record(models.AlertWebhookNone, "")
	}
	settings, err := h.Store.WebhookSettings(ctx, acc.ID, NewWebhookSecret())
	if err != nil {
		return err
	}
	body, _ := json.Marshal(alertPayload{AlertID: alert.ID, ContactID: alert.ContactID, MessageID: alert.MessageID, Reason: alert.Reason,
		CreatedAt: alert.CreatedAt, Escalated: p.Escalated, EscalatedAt: alert.EscalatedAt})
	res := h.Sender.Send(ctx, WebhookRequest{URL: *acc.AlertWebhookURL, Secret: settings.SigningSecret, ID: webhookID, Payload: body})
	if res.OK() {
		return record(models.AlertWebhookSent, "")
	}
	if err := record(models.AlertWebhookFailed, res.Error); err != nil {
		return err
	}
	return h.retryFailedWebhook(ctx, t, "alert "+webhookID, res)
}
