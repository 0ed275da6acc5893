package api

import (
	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// campaignRequest is the body of a campaign create or patch; absent fields are left alone.
type campaignRequest struct {
	Name                *string    `json:"name"`
	Type                *string    `json:"type"`
	Language            *string    `json:"language"`
	BotInstructions     *string    `json:"botInstructions"`
	OpeningMessage      *string    `json:"openingMessage"`
	OpeningMessages     *[]string  `json:"openingMessages"`
	Goal                *string    `json:"goal"`
	FollowUpsEnabled    *bool      `json:"followUpsEnabled"`
	FollowUpDelaysHours *[]float64 `json:"followUpDelaysHours"`
	TriggerOnListAdd    *bool      `json:"triggerOnListAdd"`
	ListID              *string    `json:"listId"`
	Channel             *string    `json:"channel"`
	Status              *string    `json:"status"`
	SendRatePerMinute   *int       `json:"sendRatePerMinute"`
	OpeningDelayMinutes *int       `json:"openingDelayMinutes"`
	WhatsAppTemplate    *string    `json:"whatsappTemplate"`
}

func (r *campaignRequest) input() models.CampaignInput {
	return models.CampaignInput{
		Name: r.Name, Type: r.Type, Language: r.Language, BotInstructions: r.BotInstructions,
		OpeningMessage: r.OpeningMessage, OpeningMessages: r.OpeningMessages, Goal: r.Goal, FollowUpsEnabled: r.FollowUpsEnabled,
		FollowUpDelaysHours: r.FollowUpDelaysHours, TriggerOnListAdd: r.TriggerOnListAdd, ListID: r.ListID,
		Channel: r.Channel, Status: r.Status, SendRatePerMinute: r.SendRatePerMinute, OpeningDelayMinutes: r.OpeningDelayMinutes,
		WhatsAppTemplate: r.WhatsAppTemplate,
	}
}

// createCampaign: POST /v1/campaigns -> 201 campaign.
func (s *Server) createCampaign(c *fiber.Ctx) error {
	var req campaignRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	campaign, err := s.app.CreateCampaign(c.UserContext(), accountOf(c).ID, req.input())
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(campaign)
}

// patchCampaign: PATCH /v1/campaigns/{id} -> 200 campaign. Going back to live queues the sends the
// pause held; switching to live sends nothing to contacts already on the list.
func (s *Server) patchCampaign(c *fiber.Ctx) error {
	var req campaignRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	campaign, err := s.app.UpdateCampaign(c.UserContext(), accountOf(c).ID, c.Params("id"), req.input())
	if err != nil {
		return err
	}
	if err := s.store.CountSends(c.UserContext(), campaign); err != nil {
		return err
	}
	return c.JSON(campaign)
}

// getCampaign: GET /v1/campaigns/{id} -> the campaign with its sends counted.
func (s *Server) getCampaign(c *fiber.Ctx) error {
	campaign, err := s.store.CampaignByID(c.UserContext(), accountOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	if err := s.store.CountSends(c.UserContext(), campaign); err != nil {
		return err
	}
	return c.JSON(campaign)
}

// campaignSends: GET /v1/campaigns/{id}/sends[?status=] -> {"data":[send...],"nextCursor"}: what
// happened to each contact the campaign owes an opening, in the order owed.
func (s *Server) campaignSends(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	sends, next, err := s.store.CampaignSends(c.UserContext(), accountOf(c).ID, c.Params("id"), c.Query("status"), page)
	if err != nil {
		return err
	}
	return c.JSON(pageBody(sends, next))
}

// listCampaigns: GET /v1/campaigns -> {"data":[campaign...],"nextCursor"}.
func (s *Server) listCampaigns(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	campaigns, next, err := s.store.Campaigns(c.UserContext(), accountOf(c).ID, page)
	if err != nil {
		return err
	}
	all := make([]*models.Campaign, len(campaigns))
	for i := range campaigns {
		all[i] = &campaigns[i]
	}
	if err := s.store.CountSends(c.UserContext(), all...); err != nil {
		return err
	}
	return c.JSON(pageBody(campaigns, next))
}
