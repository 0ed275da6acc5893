package api

import (
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/jobs"
	"funnelchat/models"
)

// settingsView is the settings page's data.
type settingsView struct {
	Webhook      *models.WebhookSettings
	AlertWebhook string
	Bot          *models.BotSettings
	Users        []models.User
	Owner        bool
	OwnerUserID  string
	// NewKey is the API key just generated: shown on this one response and never again.
	NewKey string
	// NewMember is a member just added, with the password to hand over (shown once).
	NewMember *models.AddedUser
}

// settingsPage: GET /inbox/settings.
func (s *Server) settingsPage(c *fiber.Ctx) error {
	return s.renderSettings(c, settingsView{})
}

func (s *Server) renderSettings(c *fiber.Ctx, v settingsView) error {
	sess := sessionOf(c)
	ctx := c.UserContext()
	acc, err := s.store.AccountByID(ctx, sess.AccountID)
	if err != nil {
		return s.inboxFailure(c, err)
	}
	if v.Webhook, err = s.store.WebhookSettings(ctx, acc.ID, jobs.NewWebhookSecret()); err != nil {
		return s.inboxFailure(c, err)
	}
	if acc.AlertWebhookURL != nil {
		v.AlertWebhook = *acc.AlertWebhookURL
	}
	if v.Bot, err = s.store.BotSettings(ctx, acc.ID); err != nil {
		return s.inboxFailure(c, err)
	}
	v.Owner = sess.User.Role == models.RoleOwner
	v.OwnerUserID = acc.OwnerUserID
	if v.Owner {
		if v.Users, err = s.store.Users(ctx, acc.ID); err != nil {
			return s.inboxFailure(c, err)
		}
	}
	return s.render(c, fiber.StatusOK, "settings", s.view(c, "Settings", "settings", v))
}

const settingsPath = "/inbox/settings"

// generateKey: POST /inbox/settings/api-key replaces the account's API key; the old key stops working
// at once and the new one is shown on this response only.
func (s *Server) generateKey(c *fiber.Ctx) error {
	key, err := s.store.RotateAPIKey(c.UserContext(), sessionOf(c).AccountID)
	if err != nil {
		return s.actionFailed(c, settingsPath, err)
	}
	return s.renderSettings(c, settingsView{NewKey: key})
}

// saveWebhook: POST /inbox/settings/webhook {url}.
func (s *Server) saveWebhook(c *fiber.Ctx) error {
	url := strings.TrimSpace(c.FormValue("url"))
	if url == "" {
		return s.done(c, settingsPath+"#webhook", false, "Enter the webhook URL.")
	}
	if err := jobs.ValidateWebhookURL(c.UserContext(), url, s.cfg.WebhookAllowPrivate); err != nil {
		return s.actionFailed(c, settingsPath+"#webhook", err)
	}
	if _, err := s.store.SetWebhookURL(c.UserContext(), sessionOf(c).AccountID, url, jobs.NewWebhookSecret()); err != nil {
		return s.actionFailed(c, settingsPath+"#webhook", err)
	}
	return s.done(c, settingsPath+"#webhook", true, "Webhook saved.")
}

// sendTestEvent: POST /inbox/settings/webhook/test sends a signed test event and tells the outcome.
func (s *Server) sendTestEvent(c *fiber.Ctx) error {
	res, err := s.webhookTest(c.UserContext(), sessionOf(c).AccountID)
	if err != nil {
		return s.done(c, settingsPath+"#webhook", false, models.ErrorMessage(err))
	}
	switch {
	case res.Delivered:
		return s.done(c, settingsPath+"#webhook", true, fmt.Sprintf("Test event delivered (HTTP %d).", *res.StatusCode))
	case res.Error != nil:
		return s.done(c, settingsPath+"#webhook", false, "Test event not delivered: "+*res.Error)
	}
	return s.done(c, settingsPath+"#webhook", false, "Test event not delivered.")
}

// saveAlertWebhook: POST /inbox/settings/alert-webhook {url}; empty turns the alert webhook off.
func (s *Server) saveAlertWebhook(c *fiber.Ctx) error {
	url := strings.TrimSpace(c.FormValue("url"))
	if url != "" {
		if err := jobs.ValidateWebhookURL(c.UserContext(), url, s.cfg.WebhookAllowPrivate); err != nil {
			return s.actionFailed(c, settingsPath+"#alerts", err)
		}
	}
	if err := s.store.SetAlertWebhookURL(c.UserContext(), sessionOf(c).AccountID, url); err != nil {
		return s.actionFailed(c, settingsPath+"#alerts", err)
	}
	if url == "" {
		return s.done(c, settingsPath+"#alerts", true, "Alert webhook turned off.")
	}
	return s.done(c, settingsPath+"#alerts", true, "Alert webhook saved.")
}

// saveBot: POST /inbox/settings/bot {active, instructions, goal, language}.
func (s *Server) saveBot(c *fiber.Ctx) error {
	active := c.FormValue("active") == "true"
	instructions, goal, lang := c.FormValue("instructions"), c.FormValue("goal"), c.FormValue("language")
	_, err := s.store.UpdateBotSettings(c.UserContext(), sessionOf(c).AccountID, models.BotSettingsInput{
		Active: &active, Instructions: &instructions, Goal: &goal, Language: &lang,
	})
	if err != nil {
		return s.actionFailed(c, settingsPath+"#bot", err)
	}
	return s.done(c, settingsPath+"#bot", true, "Bot settings saved.")
}

// requireOwner lets only the account's owners manage the team.
func (s *Server) requireOwner(c *fiber.Ctx) error {
	if sessionOf(c).User.Role != models.RoleOwner {
		return s.render(c, fiber.StatusForbidden, "problem", s.view(c, "Not allowed", "settings",
			problemView{Heading: "Not allowed", Text: "Only the account's owners manage the team."}))
	}
	return c.Next()
}

// addMember: POST /inbox/settings/team {email, role} adds a user with a generated password, shown on
// this response only.
func (s *Server) addMember(c *fiber.Ctx) error {
	added, err := s.store.AddUser(c.UserContext(), sessionOf(c).AccountID, c.FormValue("email"), c.FormValue("role"))
	if err != nil {
		return s.actionFailed(c, settingsPath+"#team", err)
	}
	return s.renderSettings(c, settingsView{NewMember: added})
}

// removeMember: POST /inbox/settings/team/{userId}/remove; the user's sessions end at once.
func (s *Server) removeMember(c *fiber.Ctx) error {
	sess := sessionOf(c)
	if c.Params("id") == sess.UserID {
		return s.done(c, settingsPath+"#team", false, "You cannot remove yourself.")
	}
	if err := s.store.RemoveUser(c.UserContext(), sess.AccountID, c.Params("id")); err != nil {
		return s.actionFailed(c, settingsPath+"#team", err)
	}
	return s.done(c, settingsPath+"#team", true, "Member removed.")
}

// changePassword: POST /inbox/settings/password {current, new}. Every session of the user ends,
// this one included; the browser that changed it is signed in again with a new session.
func (s *Server) changePassword(c *fiber.Ctx) error {
	sess := sessionOf(c)
	ctx := c.UserContext()
	if _, err := s.store.SignIn(ctx, sess.User.Email, c.FormValue("current")); err != nil {
		if models.ErrorCode(err) == models.CodeUnauthorized {
			return s.done(c, settingsPath+"#password", false, "The current password is wrong.")
		}
		return s.inboxFailure(c, err)
	}
	if err := s.store.SetPassword(ctx, sess.UserID, c.FormValue("new")); err != nil {
		return s.actionFailed(c, settingsPath+"#password", err)
	}
	token, _, err := s.store.NewSession(ctx, sess.User)
	if err != nil {
		return s.inboxFailure(c, err)
	}
	s.setCookie(c, sessionCookie, token, 0)
	return s.done(c, settingsPath+"#password", true, "Password changed; every other session was signed out.")
}

// campaignsPage: GET /inbox/campaigns lists the campaigns with their sends.
func (s *Server) campaignsPage(c *fiber.Ctx) error {
	sess := sessionOf(c)
	page, err := pageOf(c)
	if err != nil {
		return s.inboxNotFound(c)
	}
	campaigns, next, err := s.store.Campaigns(c.UserContext(), sess.AccountID, page)
	if err != nil {
		return s.inboxFailure(c, err)
	}
	all := make([]*models.Campaign, len(campaigns))
	lists := map[string]string{}
	for i := range campaigns {
		all[i] = &campaigns[i]
		if id := campaigns[i].ListID; id != nil {
			if _, ok := lists[*id]; !ok {
				if l, err := s.store.ListByID(c.UserContext(), sess.AccountID, *id); err == nil {
					lists[*id] = l.Name
				}
			}
		}
	}
	if err := s.store.CountSends(c.UserContext(), all...); err != nil {
		return s.inboxFailure(c, err)
	}
	return s.render(c, fiber.StatusOK, "campaigns", s.view(c, "Campaigns", "campaigns", struct {
		Campaigns []models.Campaign
		Lists     map[string]string
		Next      string
	}{campaigns, lists, next}))
}

// setCampaignStatus: POST /inbox/campaigns/{id}/status {status: live|paused}. Going live queues what
// the pause held, as PATCH /v1/campaigns/{id} does.
func (s *Server) setCampaignStatus(c *fiber.Ctx) error {
	status := c.FormValue("status")
	if status != models.CampaignLive && status != models.CampaignPaused {
		return s.done(c, "/inbox/campaigns", false, "Choose Live or Pause.")
	}
	campaign, resumed, err := s.store.UpdateCampaign(c.UserContext(), sessionOf(c).AccountID, c.Params("id"), models.CampaignInput{Status: &status})
	if err != nil {
		return s.actionFailed(c, "/inbox/campaigns", err)
	}
	if resumed != nil {
		s.enqueueOpenings(c, resumed.Openings)
		s.enqueueFollowUps(c, resumed.FollowUps)
	}
	if status == models.CampaignLive {
		return s.done(c, "/inbox/campaigns", true, campaign.Name+" is live.")
	}
	return s.done(c, "/inbox/campaigns", true, campaign.Name+" is paused.")
}
