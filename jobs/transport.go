package jobs

import (
	"context"
	"encoding/json"

	"funnelchat/models"
)

// Transport delivers one outgoing message for an account: the custom-channel webhook, SMS, WhatsApp,
// Messenger or Instagram. It is called only with the door's leave for this attempt (d, from
// models.Store.DecideAttempt), whose details it follows (a WhatsApp template, Meta's HUMAN_AGENT tag);
// it never asks the door again. It never returns an error: every outcome, with whether a retry may
// help, is the result.
type Transport interface {
	Deliver(ctx context.Context, m *models.Message, acc *models.Account, d models.Decision) DeliveryResult
}

// transports maps a message's transport to the one that delivers it.
func (h *Handler) transports() map[string]Transport {
	return map[string]Transport{
		models.TransportCustom:  webhookTransport{store: h.Store, sender: h.Sender},
		models.ChannelSMS:       smsTransport{store: h.Store, client: h.Providers},
		models.ChannelWhatsApp:  whatsAppTransport{store: h.Store, client: h.Providers},
		models.ChannelMessenger: metaTransport{channel: models.ChannelMessenger, store: h.Store, client: h.Providers},
		models.ChannelInstagram: metaTransport{channel: models.ChannelInstagram, store: h.Store, client: h.Providers},
	}
}

// webhookTransport posts replies to the account's custom-channel webhook (ReplyWebhookPayload in the OpenAPI document).
type webhookTransport struct {
	store  *models.Store
	sender *WebhookSender
}

func (t webhookTransport) Deliver(ctx context.Context, m *models.Message, acc *models.Account, _ models.Decision) DeliveryResult {
	if acc.WebhookURL == nil || acc.WebhookSecret == nil {
		return DeliveryResult{Error: errNoWebhook.Error()}
	}
	secret, err := t.store.OpenWebhookSecret(acc)
	if err != nil {
		// Only a process started with other keys than the one that stored the secret gets here (a
		// rolling key change); the next attempt, by a process with the right keys, can succeed.
		return DeliveryResult{Error: err.Error(), Retryable: true}
	}
	// userId is the team member who wrote a team reply; for every other message, the account's owner.
	userID := acc.OwnerUserID
	if m.AuthorUserID != nil {
		userID = *m.AuthorUserID
	}
	body, err := json.Marshal(replyPayload{
		ContactID: m.ContactID, MessageID: m.ID, UserID: userID, Body: m.Body, ToID: m.ToID, Channel: m.Channel,
	})
	if err != nil {
		return DeliveryResult{Error: "encode payload: " + err.Error()}
	}
	return t.sender.Send(ctx, WebhookRequest{URL: *acc.WebhookURL, Secret: *secret, ID: m.ID, Payload: body})
}

// smsTransport sends through the account's Twilio-compatible SMS credentials.
type smsTransport struct {
	store  *models.Store
	client *ProviderClient
}

func (t smsTransport) Deliver(ctx context.Context, m *models.Message, acc *models.Account, _ models.Decision) DeliveryResult {
	creds, err := t.store.SMSSettings(ctx, acc.ID)
	if err != nil {
		return credentialsFailure(err, models.ChannelSMS)
	}
	return t.client.SendSMS(ctx, SMSCredentials{AccountSID: creds.AccountSID, AuthToken: creds.AuthToken, From: creds.From}, m.ToID, m.Body)
}

// whatsAppTransport sends through the WhatsApp Cloud API: text inside the 24-hour window, the
// campaign's approved template (with the first name as its parameter) outside it, as the outgoing
// door decided for this attempt.
type whatsAppTransport struct {
	store  *models.Store
	client *ProviderClient
}

func (t whatsAppTransport) Deliver(ctx context.Context, m *models.Message, acc *models.Account, d models.Decision) DeliveryResult {
	creds, err := t.store.WhatsAppSettings(ctx, acc.ID)
	if err != nil {
		return credentialsFailure(err, models.ChannelWhatsApp)
	}
	var template *WhatsAppTemplate
	if d.Template {
		campaign, err := t.store.Campaign(ctx, *m.CampaignID)
		if err != nil {
			return DeliveryResult{Error: "load campaign: " + err.Error(), Retryable: models.ErrorCode(err) != models.CodeNotFound}
		}
		contact, err := t.store.ContactByID(ctx, m.AccountID, m.ContactID)
		if err != nil {
			return DeliveryResult{Error: "load contact: " + err.Error(), Retryable: true}
		}
		first := contact.FirstName
		if first == "" {
			first = "there"
		}
		template = &WhatsAppTemplate{Name: *campaign.WhatsAppTemplate, Language: campaign.Language, Parameters: []string{first}}
	}
	return t.client.SendWhatsApp(ctx, WhatsAppCredentials{PhoneNumberID: creds.PhoneNumberID, AccessToken: creds.AccessToken}, m.ToID, m.Body, template)
}

// credentialsFailure is the outcome of a send whose channel credentials could not be loaded: final
// when the account has none, retried when the database failed.
func credentialsFailure(err error, channel string) DeliveryResult {
	if models.ErrorCode(err) == models.CodeNotFound {
		return DeliveryResult{Error: "no " + channel + " credentials configured: PUT /v1/settings/channels/" + channel}
	}
	return DeliveryResult{Error: "load " + channel + " credentials: " + err.Error(), Retryable: true}
}
