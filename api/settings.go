package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"
)

// getWebhook: GET /v1/settings/webhook -> {"url","signingSecret"}.
func (s *Server) getWebhook(c *fiber.Ctx) error {
	settings, err := s.app.WebhookSettings(c.UserContext(), accountOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(settings)
}

// putWebhook: PUT /v1/settings/webhook {"url"} -> {"url","signingSecret"}. The URL must be https and
// public unless WEBHOOK_ALLOW_PRIVATE is set.
func (s *Server) putWebhook(c *fiber.Ctx) error {
	url, err := webhookURLFromBody(c)
	if err != nil {
		return err
	}
	settings, err := s.app.SaveWebhookURL(c.UserContext(), accountOf(c).ID, url)
	if err != nil {
		return err
	}
	return c.JSON(settings)
}

// putAlertWebhook: PUT /v1/settings/alert_webhook {"url"} -> {"url"}; an empty url turns alerts off.
func (s *Server) putAlertWebhook(c *fiber.Ctx) error {
	url, err := webhookURLFromBody(c)
	if err != nil {
		return err
	}
	if url, err = s.app.SaveAlertWebhookURL(c.UserContext(), accountOf(c).ID, url); err != nil {
		return err
	}
	var out any
	if url != "" {
		out = url
	}
	return c.JSON(fiber.Map{"url": out})
}

func webhookURLFromBody(c *fiber.Ctx) (string, error) {
	var req struct {
		URL *string `json:"url"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return "", err
	}
	return strings.TrimSpace(str(req.URL)), nil
}

// testWebhook: POST /v1/settings/webhook/test -> {"delivered","statusCode","error"}. The worker sends
// the signed test event (the api never calls a customer URL) and this request waits for its outcome.
func (s *Server) testWebhook(c *fiber.Ctx) error {
	result, err := s.app.TestWebhook(c.UserContext(), accountOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(result)
}
