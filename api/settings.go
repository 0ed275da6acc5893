package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/jobs"
	"funnelchat/models"
)

// getWebhook: GET /v1/settings/webhook -> {"url","signingSecret"}.
func (s *Server) getWebhook(c *fiber.Ctx) error {
	settings, err := s.store.WebhookSettings(c.UserContext(), accountOf(c).ID, jobs.NewWebhookSecret())
	if err != nil {
		return err
	}
	return c.JSON(settings)
}

// putWebhook: PUT /v1/settings/webhook {"url"} -> {"url","signingSecret"}. The URL must be https and
// public unless WEBHOOK_ALLOW_PRIVATE is set.
func (s *Server) putWebhook(c *fiber.Ctx) error {
	url, err := s.webhookURLFromBody(c, false)
	if err != nil {
		return err
	}
	settings, err := s.store.SetWebhookURL(c.UserContext(), accountOf(c).ID, url, jobs.NewWebhookSecret())
	if err != nil {
		return err
	}
	return c.JSON(settings)
}

// putAlertWebhook: PUT /v1/settings/alert_webhook {"url"} -> {"url"}; an empty url turns alerts off.
func (s *Server) putAlertWebhook(c *fiber.Ctx) error {
	url, err := s.webhookURLFromBody(c, true)
	if err != nil {
		return err
	}
	if err := s.store.SetAlertWebhookURL(c.UserContext(), accountOf(c).ID, url); err != nil {
		return err
	}
	var out any
	if url != "" {
		out = url
	}
	return c.JSON(fiber.Map{"url": out})
}

func (s *Server) webhookURLFromBody(c *fiber.Ctx, emptyAllowed bool) (string, error) {
	var req struct {
		URL *string `json:"url"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return "", err
	}
	url := strings.TrimSpace(str(req.URL))
	if url == "" {
		if emptyAllowed {
			return "", nil
		}
		return "", models.Errorf(models.CodeValidation, "url is required")
	}
	if err := jobs.ValidateWebhookURL(c.UserContext(), url, s.cfg.WebhookAllowPrivate); err != nil {
		return "", err
	}
	return url, nil
}

// testWebhook: POST /v1/settings/webhook/test -> {"delivered","statusCode","error"}. The worker sends
// the signed test event (the api never calls a customer URL) and this request waits for its outcome.
func (s *Server) testWebhook(c *fiber.Ctx) error {
	result, err := s.webhookTest(c.UserContext(), accountOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(result)
}

// webhookTest has the worker send the account a signed test event and waits for the outcome.
func (s *Server) webhookTest(ctx context.Context, accountID string) (*jobs.WebhookTestResult, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	key := "webhooktest:" + hex.EncodeToString(b)
	if err := s.queue.WebhookTest(ctx, accountID, key); err != nil {
		return nil, err
	}
	res, err := s.redis.BLPop(ctx, s.cfg.WebhookTimeout+3*time.Second, key).Result()
	if err != nil {
		return nil, models.Errorf(models.CodeUnavailable, "no worker answered in time; is a worker running?")
	}
	var result jobs.WebhookTestResult
	if err := json.Unmarshal([]byte(res[1]), &result); err != nil {
		return nil, err
	}
	return &result, nil
}
