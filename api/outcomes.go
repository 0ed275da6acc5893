package api

import (
	"bytes"
	"context"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/web"
	"funnelchat/models"
	"funnelchat/models/report"
)

// Funnel outcomes (README, "Campaign reports"): goals reached, and each campaign's report.

// goalRequest is the body of POST /v1/contacts/{id}/goal; both members are optional.
type goalRequest struct {
	CampaignID *string `json:"campaignId"`
	Note       string  `json:"note"`
}

// reachGoal: POST /v1/contacts/{id}/goal -> 200 the goal record. Idempotent: a goal already recorded
// for the contact and campaign is answered as it was first recorded. Without campaignId the goal is
// the conversation's campaign's (the contact's most recent opening), else the account's own bot's.
func (s *Server) reachGoal(c *fiber.Ctx) error {
	var req goalRequest
	if len(bytes.TrimSpace(c.Body())) > 0 { // no body: the conversation's campaign, no note
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
	}
	goal, _, err := s.app.ReachGoal(c.UserContext(), accountOf(c).ID, c.Params("id"), models.GoalInput{
		CampaignID: req.CampaignID, Source: models.GoalSourceAPI, Note: req.Note,
	})
	if err != nil {
		return err
	}
	return c.JSON(goal)
}

// campaignReport: GET /v1/campaigns/{id}/report -> the campaign's funnel; ?format=csv -> one row per
// added contact (report.CampaignReportCSVHeader), streamed.
func (s *Server) campaignReport(c *fiber.Ctx) error {
	ctx, accountID, id := c.UserContext(), accountOf(c).ID, c.Params("id")
	format := c.Query("format")
	if format == "" && !c.Context().QueryArgs().Has("format") {
		format = "json"
	}
	switch format {
	case "json":
		r, err := s.reports.CampaignReport(ctx, accountID, id)
		if err != nil {
			return err
		}
		return c.JSON(r)
	case "csv":
		if _, err := s.store.CampaignByID(ctx, accountID, id); err != nil {
			return err // before the first byte, so that it is a 404
		}
		return web.StreamCSV(c, s.log.With("account_id", accountID, "campaign_id", id), "campaign report", "campaign-"+id+".csv",
			report.CampaignReportCSVHeader, func(ctx context.Context, write func([]string) error) error {
				return s.reports.CampaignReportCSV(ctx, accountID, id, write)
			})
	}
	return models.Errorf(models.CodeValidation, "format must be json or csv")
}
