package api

import (
	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// getBotSettings: GET /v1/settings/bot -> {"active","instructions","goal","language","handoffMessage",
// "handoffEscalationMinutes","botResumeMinutes"}.
func (s *Server) getBotSettings(c *fiber.Ctx) error {
	settings, err := s.store.BotSettings(c.UserContext(), accountOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(settings)
}

// putBotSettings: PUT /v1/settings/bot with any of {"active","instructions","goal","language"} -> the
// full settings after the update; absent fields are left as they are, unknown fields are ignored (as
// decodeJSON does for every endpoint). Validation is models.UpdateBotSettings'.
func (s *Server) putBotSettings(c *fiber.Ctx) error {
	var req struct {
		Active                   *bool         `json:"active"`
		Instructions             *string       `json:"instructions"`
		Goal                     *string       `json:"goal"`
		Language                 *string       `json:"language"`
		HandoffMessage           *string       `json:"handoffMessage"`
		HandoffEscalationMinutes *int          `json:"handoffEscalationMinutes"`
		BotResumeMinutes         nullable[int] `json:"botResumeMinutes"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	settings, err := s.app.UpdateBotSettings(c.UserContext(), accountOf(c).ID, models.BotSettingsInput{
		Active: req.Active, Instructions: req.Instructions, Goal: req.Goal, Language: req.Language,
		HandoffMessage: req.HandoffMessage, HandoffEscalationMinutes: req.HandoffEscalationMinutes,
		SetBotResume: req.BotResumeMinutes.Set, BotResumeMinutes: req.BotResumeMinutes.Value,
	})
	if err != nil {
		return err
	}
	return c.JSON(settings)
}
