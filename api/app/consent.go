package app

import (
	"context"

	"funnelchat/models"
)

// Consent and the account's compliance settings (README, "Compliance").

// SetConsent records consent given or withdrawn by hand (PUT /v1/contacts/{id}/consent, the inbox's
// Consent form): always an event in the ledger, as evidence. in must have passed Normalize, with the
// transport's own default source. It returns the contact with its consent after the change. Errors:
// those of models.Store.SetConsent.
func (a *App) SetConsent(ctx context.Context, accountID, contactID string, in models.ConsentInput) (*models.Contact, error) {
	return a.store.SetConsent(ctx, accountID, contactID, in)
}

// UpdateComplianceSettings changes the account's consent keywords, their texts, its quiet hours and
// its time zone, and returns the effective settings after the update; nothing is stored when a field
// is invalid. Errors: those of models.Store.UpdateComplianceSettings.
func (a *App) UpdateComplianceSettings(ctx context.Context, accountID string, in models.ComplianceInput) (*models.ComplianceSettings, error) {
	return a.store.UpdateComplianceSettings(ctx, accountID, in)
}
