package app

import (
	"context"

	"funnelchat/models"
)

// A channel's credentials are checked, then stored: a transport hands over what it was given and shows
// what was stored (the values normalized, such as the sender number), never the secrets.

// SaveSMSSettings checks and normalizes the account's SMS credentials and stores them; it returns them
// as stored. Errors: those of models.SMSSettings.Validate (nothing stored) and of
// models.Store.SetSMSSettings.
func (a *App) SaveSMSSettings(ctx context.Context, accountID string, in models.SMSSettings) (*models.SMSSettings, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := a.store.SetSMSSettings(ctx, accountID, in); err != nil {
		return nil, err
	}
	return &in, nil
}

// SaveWhatsAppSettings checks the account's WhatsApp credentials and stores them; it returns them as
// stored. Errors: those of models.WhatsAppSettings.Validate (nothing stored) and of
// models.Store.SetWhatsAppSettings.
func (a *App) SaveWhatsAppSettings(ctx context.Context, accountID string, in models.WhatsAppSettings) (*models.WhatsAppSettings, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if err := a.store.SetWhatsAppSettings(ctx, accountID, in); err != nil {
		return nil, err
	}
	return &in, nil
}

// MetaCredentials are a Meta channel's credentials as a transport takes them
// (models.MessengerSettings, models.InstagramSettings).
type MetaCredentials interface {
	Meta() (models.MetaSettings, error)
}

// SaveMetaSettings checks the account's credentials for a Meta channel (messenger or instagram) and
// stores them; it returns them as stored. Errors: those of Meta (nothing stored) and of
// models.Store.SetMetaSettings.
func (a *App) SaveMetaSettings(ctx context.Context, accountID, channel string, in MetaCredentials) (*models.MetaSettings, error) {
	v, err := in.Meta()
	if err != nil {
		return nil, err
	}
	if err := a.store.SetMetaSettings(ctx, accountID, channel, v); err != nil {
		return nil, err
	}
	return &v, nil
}
