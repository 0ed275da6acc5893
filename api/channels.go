package api

import (
	"github.com/gofiber/fiber/v2"

	"funnelchat/api/app"
	"funnelchat/models"
)

// putSMSSettings: PUT /v1/settings/channels/sms {"accountSid","authToken","from"} -> 200 without the
// auth token.
func (h *channels) putSMSSettings(c *fiber.Ctx) error {
	var req models.SMSSettings
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	stored, err := h.app.SaveSMSSettings(c.UserContext(), accountOf(c).ID, req)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"accountSid": stored.AccountSID, "from": stored.From, "authTokenSet": true})
}

// putWhatsAppSettings: PUT /v1/settings/channels/whatsapp {"phoneNumberId","accessToken","appSecret"?,
// "verifyToken"?} -> 200 without the secrets.
func (h *channels) putWhatsAppSettings(c *fiber.Ctx) error {
	var req models.WhatsAppSettings
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	stored, err := h.app.SaveWhatsAppSettings(c.UserContext(), accountOf(c).ID, req)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{
		"phoneNumberId": stored.PhoneNumberID, "accessTokenSet": true,
		"appSecretSet": stored.AppSecret != "", "verifyTokenSet": stored.VerifyToken != "",
	})
}

// putMessengerSettings: PUT /v1/settings/channels/messenger {"pageId","pageAccessToken","appSecret",
// "verifyToken"} -> 200 with the page id only. Errors: VALIDATION_ERROR, CONFLICT when another account
// has connected the page.
func (h *channels) putMessengerSettings(c *fiber.Ctx) error {
	return h.putMetaSettings(c, models.ChannelMessenger, &models.MessengerSettings{}, "pageId", "pageAccessTokenSet")
}

// putInstagramSettings: PUT /v1/settings/channels/instagram {"accountId","accessToken","appSecret",
// "verifyToken"} -> 200 with the Instagram account id only. Errors: VALIDATION_ERROR, CONFLICT when
// another account has connected the Instagram account.
func (h *channels) putInstagramSettings(c *fiber.Ctx) error {
	return h.putMetaSettings(c, models.ChannelInstagram, &models.InstagramSettings{}, "accountId", "accessTokenSet")
}

// putMetaSettings saves the Meta channel's settings decoded into req and answers with the id (under
// idField) and which secrets are set, never the secrets.
func (h *channels) putMetaSettings(c *fiber.Ctx, channel string, req app.MetaCredentials, idField, tokenSetField string) error {
	if err := decodeJSON(c, req); err != nil {
		return err
	}
	v, err := h.app.SaveMetaSettings(c.UserContext(), accountOf(c).ID, channel, req)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{idField: v.ID, tokenSetField: true, "appSecretSet": true, "verifyTokenSet": true})
}
