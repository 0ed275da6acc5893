package jobs

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hibiken/asynq"
)

// WebhookTestResult is what POST /v1/settings/webhook/test answers.
type WebhookTestResult struct {
	Delivered  bool    `json:"delivered"`
	StatusCode *int    `json:"statusCode"`
	Error      *string `json:"error"`
}

// webhookTestResultTTL keeps an unread result around just long enough for the api to read it.
const webhookTestResultTTL = time.Minute

// handleWebhookTest sends a signed test event to the account's webhook and pushes the outcome to the
// Redis list the waiting api request reads.
func (h *Handler) handleWebhookTest(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[WebhookTestPayload](t)
	if err != nil {
		return err
	}
	settings, err := h.Store.WebhookSettings(ctx, p.AccountID, NewWebhookSecret())
	if err != nil {
		return err
	}
	acc, err := h.Store.AccountByID(ctx, p.AccountID)
	if err != nil {
		return err
	}
	var result WebhookTestResult
	if settings.URL == nil {
		msg := "no webhook URL configured"
		result.Error = &msg
	} else {
		id := "test_" + p.ResultKey[len(p.ResultKey)-12:]
		body, _ := json.Marshal(replyPayload{
			ContactID: "test", MessageID: id, UserID: acc.OwnerUserID, ToID: "test",
			Body: "This is a test event from funnelchat: your webhook is reachable.", Channel: "test",
		})
		res := h.Sender.Send(ctx, WebhookRequest{URL: *settings.URL, Secret: settings.SigningSecret, ID: id, Payload: body})
		result.Delivered = res.OK()
		if res.StatusCode != 0 {
			result.StatusCode = &res.StatusCode
		}
		if res.Error != "" {
			result.Error = &res.Error
		}
	}
	raw, _ := json.Marshal(result)
	pipe := h.Redis.TxPipeline()
	pipe.RPush(ctx, p.ResultKey, raw)
	pipe.Expire(ctx, p.ResultKey, webhookTestResultTTL)
	_, err = pipe.Exec(ctx)
	return err
}
