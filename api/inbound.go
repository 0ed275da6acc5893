package api

import (
	"crypto/subtle"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/jobs"
	"funnelchat/models"
)

// Inbound provider webhooks carry no API key: the provider's signature, checked with the account's
// credentials, is what authenticates them. Messages then take the same path as custom-channel ones.
// WhatsApp is in whatsapp_inbound.go, Messenger and Instagram in meta_inbound.go.

// smsInbound: POST /v1/channels/sms/inbound, Twilio's form webhook. The account is the one whose SMS
// credentials have the AccountSid and the number written to; X-Twilio-Signature must verify with its
// auth token (403 otherwise). Answers an empty TwiML response.
func (h *channels) smsInbound(c *fiber.Ctx) error {
	form, err := url.ParseQuery(string(c.Body()))
	if err != nil {
		return models.Errorf(models.CodeValidation, "expected a form-encoded Twilio webhook")
	}
	ctx := c.UserContext()
	to, err := models.NormalizePhone(form.Get("To"))
	if err != nil || to == "" || form.Get("AccountSid") == "" {
		return models.Errorf(models.CodeValidation, "AccountSid and To are required")
	}
	accountID, err := h.store.AccountForChannel(ctx, models.ChannelSMS, form.Get("AccountSid")+":"+to)
	if err != nil {
		return models.Errorf(models.CodeForbidden, "signature does not verify")
	}
	creds, err := h.store.SMSSettings(ctx, accountID)
	if err != nil {
		return err
	}
	if !jobs.VerifyTwilioSignature(creds.AuthToken, h.requestURL(c), form, c.Get("X-Twilio-Signature")) {
		return models.Errorf(models.CodeForbidden, "signature does not verify")
	}
	in := models.IncomingInput{
		ExternalID: form.Get("MessageSid"), FromID: form.Get("From"), ToID: to, Body: form.Get("Body"),
		Channel: models.ChannelSMS, Transport: models.ChannelSMS,
	}
	if form.Get("NumMedia") != "" && form.Get("NumMedia") != "0" {
		in.MediaURL, in.MediaContentType = form.Get("MediaUrl0"), form.Get("MediaContentType0")
		if strings.TrimSpace(in.Body) == "" {
			in.Body = "(media)"
		}
	}
	if err := h.ingestProviderMessage(c, accountID, in); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/xml")
	return c.SendString("<Response></Response>")
}

// requestURL is the URL the provider signed: the public scheme, host, path and query.
func (h *channels) requestURL(c *fiber.Ctx) string {
	scheme := "http"
	if h.https.IsTLS(c) {
		scheme = "https"
	}
	return scheme + "://" + c.Hostname() + c.OriginalURL()
}

// ingestProviderMessage stores an inbound provider message and queues what it owes (app.AcceptIncoming);
// a repeated provider message id is a no-op. Errors: VALIDATION_ERROR; UNAVAILABLE (the provider
// retries).
func (h *channels) ingestProviderMessage(c *fiber.Ctx, accountID string, in models.IncomingInput) error {
	if err := in.Validate(h.cfg.MaxMediaBytes); err != nil {
		return err
	}
	_, err := h.app.AcceptIncoming(c.UserContext(), accountID, in, nil)
	return err
}

// metaVerify answers Meta's subscription check on GET /v1/channels/{whatsapp,messenger,instagram}/inbound:
// hub.challenge as text/plain when hub.mode is subscribe and hub.verify_token is the verify token an
// account configured for that channel; 403 otherwise.
func (h *channels) metaVerify(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		token := c.Query("hub.verify_token")
		if c.Query("hub.mode") != "subscribe" || token == "" {
			return models.Errorf(models.CodeForbidden, "not a subscription check: hub.mode=subscribe and hub.verify_token are required")
		}
		tokens, err := h.store.VerifyTokens(c.UserContext(), kind)
		if err != nil {
			return err
		}
		for _, t := range tokens {
			if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
				c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
				return c.SendString(c.Query("hub.challenge"))
			}
		}
		return models.Errorf(models.CodeForbidden, "unknown verify token")
	}
}
