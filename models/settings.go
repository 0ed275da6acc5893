package models

import (
	"context"
	"fmt"
)

// WebhookSettings is where an account's replies go and the secret that signs them.
type WebhookSettings struct {
	URL           *string `json:"url"`
	SigningSecret string  `json:"signingSecret"`
}

// WebhookSettings returns the account's reply webhook. newSecret becomes the signing secret when the
// account has none yet, so the secret exists (and is stable) before the first URL is saved; an
// account that has one is only read.
func (s *Store) WebhookSettings(ctx context.Context, accountID, newSecret string) (*WebhookSettings, error) {
	acc, err := s.AccountByID(ctx, accountID)
	if err != nil {
		return nil, err
	}
	if acc.WebhookSecret == nil {
		return s.updateWebhook(ctx, accountID, nil, newSecret)
	}
	secret, err := s.OpenWebhookSecret(acc)
	if err != nil {
		return nil, err
	}
	return &WebhookSettings{URL: acc.WebhookURL, SigningSecret: *secret}, nil
}

// SetWebhookURL saves the account's reply webhook URL (validated by the caller) and returns the
// settings; the signing secret is kept, or set to newSecret when the account has none.
func (s *Store) SetWebhookURL(ctx context.Context, accountID, url, newSecret string) (*WebhookSettings, error) {
	return s.updateWebhook(ctx, accountID, &url, newSecret)
}

func (s *Store) updateWebhook(ctx context.Context, accountID string, url *string, newSecret string) (*WebhookSettings, error) {
	sealed, err := s.secrets.seal(newSecret, webhookSecretAAD(accountID))
	if err != nil {
		return nil, err
	}
	q := s.db.NewUpdate().Model((*Account)(nil)).
		Set("webhook_secret = COALESCE(webhook_secret, ?)", sealed).
		Where("id = ?", accountID)
	if url != nil {
		q = q.Set("webhook_url = ?", *url)
	}
	if _, err := q.Exec(ctx); err != nil {
		return nil, fmt.Errorf("webhook settings: %w", err)
	}
	acc, err := s.AccountByID(ctx, accountID)
	if err != nil {
		return nil, err
	}
	secret, err := s.OpenWebhookSecret(acc)
	if err != nil {
		return nil, err
	}
	return &WebhookSettings{URL: acc.WebhookURL, SigningSecret: *secret}, nil
}

// SetAlertWebhookURL saves (or, with "", clears) the URL that receives alerts.
func (s *Store) SetAlertWebhookURL(ctx context.Context, accountID, url string) error {
	var v *string
	if url != "" {
		v = &url
	}
	_, err := s.db.NewUpdate().Model((*Account)(nil)).Set("alert_webhook_url = ?", v).Where("id = ?", accountID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("alert webhook: %w", err)
	}
	return nil
}

// AccountByID returns an account, or NOT_FOUND.
func (s *Store) AccountByID(ctx context.Context, id string) (*Account, error) {
	acc := new(Account)
	if err := s.db.NewSelect().Model(acc).Where("id = ?", id).Scan(ctx); err != nil {
		if isNoRows(err) {
			return nil, notFound("account")
		}
		return nil, fmt.Errorf("account by id: %w", err)
	}
	return acc, nil
}
