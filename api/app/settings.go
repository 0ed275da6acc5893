package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"funnelchat/jobs"
	"funnelchat/models"
)

// WebhookSettings returns the account's reply webhook and its signing secret (created on first use).
func (a *App) WebhookSettings(ctx context.Context, accountID string) (*models.WebhookSettings, error) {
	return a.store.WebhookSettings(ctx, accountID, jobs.NewWebhookSecret())
}

// SaveWebhookURL checks a reply webhook URL (https and public, unless WEBHOOK_ALLOW_PRIVATE) and saves
// it. Errors: VALIDATION_ERROR (empty, or not a URL the worker may call).
func (a *App) SaveWebhookURL(ctx context.Context, accountID, url string) (*models.WebhookSettings, error) {
	url = strings.TrimSpace(url)
	if url == "" {
		return nil, models.Errorf(models.CodeValidation, "url is required")
	}
	if err := a.checkWebhookURL(ctx, url); err != nil {
		return nil, err
	}
	return a.store.SetWebhookURL(ctx, accountID, url, jobs.NewWebhookSecret())
}

// SetAutoRecharge checks the auto-recharge webhook URL and saves a sub-account's auto-recharge for
// its agency. Errors: VALIDATION_ERROR, and those of SetAutoRecharge.
func (a *App) SetAutoRecharge(ctx context.Context, agency *models.Account, subAccountID string, in models.AutoRecharge) (*models.AutoRecharge, error) {
	in.WebhookURL = strings.TrimSpace(in.WebhookURL)
	if err := a.checkWebhookURL(ctx, in.WebhookURL); err != nil {
		return nil, err
	}
	return a.store.SetAutoRecharge(ctx, agency, subAccountID, in)
}

// checkWebhookURL is the one check of a URL the worker will call: https and public, unless
// WEBHOOK_ALLOW_PRIVATE. Errors: VALIDATION_ERROR.
func (a *App) checkWebhookURL(ctx context.Context, url string) error {
	return jobs.ValidateWebhookURL(ctx, url, a.cfg.WebhookAllowPrivate)
}

// SaveAlertWebhookURL checks and saves the URL that receives alerts; "" turns alerts off. Errors:
// VALIDATION_ERROR.
func (a *App) SaveAlertWebhookURL(ctx context.Context, accountID, url string) (string, error) {
	url = strings.TrimSpace(url)
	if url != "" {
		if err := a.checkWebhookURL(ctx, url); err != nil {
			return "", err
		}
	}
	return url, a.store.SetAlertWebhookURL(ctx, accountID, url)
}

// TestWebhook has the worker send the account a signed test event (the api never calls a customer
// URL) and waits for the outcome. Errors: UNAVAILABLE when no worker answers in time.
func (a *App) TestWebhook(ctx context.Context, accountID string) (*jobs.WebhookTestResult, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	key := "webhooktest:" + hex.EncodeToString(b)
	if err := a.queue.WebhookTest(ctx, accountID, key); err != nil {
		return nil, err
	}
	res, err := a.redis.BLPop(ctx, a.cfg.WebhookTimeout+3*time.Second, key).Result()
	if err != nil {
		return nil, models.Errorf(models.CodeUnavailable, "no worker answered in time; is a worker running?")
	}
	var result jobs.WebhookTestResult
	if err := json.Unmarshal([]byte(res[1]), &result); err != nil {
		return nil, err
	}
	return &result, nil
}

// UpdateBotSettings changes the account's bot and hand-off settings given in in and returns them after
// the update; nothing is stored when a field is invalid. Errors: those of
// models.Store.UpdateBotSettings.
func (a *App) UpdateBotSettings(ctx context.Context, accountID string, in models.BotSettingsInput) (*models.BotSettings, error) {
	return a.store.UpdateBotSettings(ctx, accountID, in)
}

// RotateAPIKey replaces the account's API key and returns the new one; the old key stops working in
// every process before this returns (the store marks it revoked in the key cache before the revocation
// commits). Errors: those of models.Store.RotateAPIKey (UNAVAILABLE when that mark cannot be written:
// nothing changes then).
func (a *App) RotateAPIKey(ctx context.Context, accountID string) (string, error) {
	return a.store.RotateAPIKey(ctx, accountID)
}
