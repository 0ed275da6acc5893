package inbox

import (
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// settingsView is the settings page's data.
type settingsView struct {
	Webhook      *models.WebhookSettings
	AlertWebhook string
	Bot          *models.BotSettings
	Compliance   complianceView
	Users        []models.User
	Owner        bool
	// MayRoute: the user may change where messages go (mayRoute): the webhooks, the channels and the
	// bot's switch; others see them read only.
	MayRoute    bool
	OwnerUserID string
	// NewKey is the API key just generated: shown on this one response and never again.
	NewKey string
	// NewMember is a member just added, with the password to hand over (shown once).
	NewMember *models.AddedUser
	// RevealGone: the page was opened with a one-time reveal that was shown already (a reload).
	RevealGone bool
	// Handoff are the hand-off settings' limits and default, for the bot section's hints.
	Handoff handoffView
	// Canned is the canned replies' section (admin_team.go); Channels the built-in channels'
	// (admin_channels.go).
	Canned   cannedView
	Channels []channelForm
	// Sections are the page's sections in order, for its table of contents.
	Sections []settingsSection
}

// handoffView is what the bot section says of the hand-off settings.
type handoffView struct {
	Default    string
	MaxMessage int
	MaxMinutes int
}

// settingsSection is an entry of the settings page's table of contents.
type settingsSection struct{ ID, Label string }

// settingsPage: GET /inbox/settings[?shown=token]. With the token of a one-time reveal (a new API
// key, a new member's password) made by this session, the page shows it, once.
func (h *Handler) settingsPage(c *fiber.Ctx) error {
	v := settingsView{}
	if token := c.Query("shown"); token != "" {
		r, err := h.takeReveal(c, token)
		if err != nil {
			return h.inboxFailure(c, err)
		}
		if r != nil {
			r.view(&v)
		} else {
			v.RevealGone = true
		}
	}
	return h.renderSettings(c, v)
}

func (h *Handler) renderSettings(c *fiber.Ctx, v settingsView) error {
	return h.renderSettingsStatus(c, fiber.StatusOK, v)
}

// renderSettingsStatus renders the settings page with status: 422 when it shows a refused form with
// what was typed (a canned reply, a channel's settings, the compliance settings), 200 otherwise.
func (h *Handler) renderSettingsStatus(c *fiber.Ctx, status int, v settingsView) error {
	sess := sessionOf(c)
	ctx := c.UserContext()
	acc, err := h.store.AccountByID(ctx, sess.AccountID)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	if v.Webhook, err = h.app.WebhookSettings(ctx, acc.ID); err != nil {
		return h.inboxFailure(c, err)
	}
	if acc.AlertWebhookURL != nil {
		v.AlertWebhook = *acc.AlertWebhookURL
	}
	if v.Bot, err = h.store.BotSettings(ctx, acc.ID); err != nil {
		return h.inboxFailure(c, err)
	}
	v.Compliance.TimeZones, v.Compliance.MaxText = commonTimeZones, models.MaxComplianceText
	if v.Compliance.ComplianceSettings == nil { // else a refused form, as typed (compliance.go)
		if v.Compliance.ComplianceSettings, err = h.store.ComplianceSettings(ctx, acc.ID); err != nil {
			return h.inboxFailure(c, err)
		}
	}
	v.Owner, v.MayRoute = isOwner(sess), mayRoute(sess)
	if !v.Owner {
		v.Webhook.SigningSecret = "" // the page never carries it to a member
	}
	v.OwnerUserID = acc.OwnerUserID
	if v.Owner {
		if v.Users, err = h.store.Users(ctx, acc.ID); err != nil {
			return h.inboxFailure(c, err)
		}
	}
	v.Handoff = handoffView{Default: models.DefaultHandoffMessage, MaxMessage: maxHandoffMessage, MaxMinutes: maxHandoffMinutes}
	if v.Canned.Replies, err = h.store.CannedReplies(ctx, acc.ID); err != nil {
		return h.inboxFailure(c, err)
	}
	v.Canned.MaxShortcut, v.Canned.MaxBody = maxShortcut, maxCannedBody
	if v.Channels, err = h.channelForms(c, acc.ID, v.Channels); err != nil {
		return h.inboxFailure(c, err)
	}
	v.Sections = settingsSections(v.Owner)
	return h.render(c, status, "settings", h.view(c, "Settings", "settings", v))
}

// settingsSections are the page's sections in the order the template shows them.
func settingsSections(owner bool) []settingsSection {
	out := []settingsSection{{"availability", "Your availability"}, {"channels", "Channels"}}
	if owner {
		out = append(out, settingsSection{"api-key", "API key"})
	}
	out = append(out, []settingsSection{{"webhook", "Webhook"}, {"alerts", "Alert webhook"}, {"bot", "Bot and hand-off"},
		{"canned", "Canned replies"}, {"compliance", "Compliance"}, {"password", "Your password"}}...)
	if owner {
		out = append(out, settingsSection{"team", "Team"})
	}
	return out
}

const settingsPath = "/inbox/settings"

// generateKey: POST /inbox/settings/api-key (owners) replaces the account's API key; the old key stops
// working at once. The answer is 303 to the settings page, which shows the new key once.
func (h *Handler) generateKey(c *fiber.Ctx) error {
	key, err := h.app.RotateAPIKey(c.UserContext(), sessionOf(c).AccountID)
	if err != nil {
		return h.actionFailed(c, settingsPath+"#api-key", err)
	}
	return h.revealOnce(c, reveal{Key: key}, "#api-key")
}

// saveWebhook: POST /inbox/settings/webhook {url} (those mayRoute allows).
func (h *Handler) saveWebhook(c *fiber.Ctx) error {
	url := strings.TrimSpace(c.FormValue("url"))
	if url == "" {
		return h.done(c, settingsPath+"#webhook", false, "Enter the webhook URL.")
	}
	if _, err := h.app.SaveWebhookURL(c.UserContext(), sessionOf(c).AccountID, url); err != nil {
		return h.actionFailed(c, settingsPath+"#webhook", err)
	}
	return h.done(c, settingsPath+"#webhook", true, "Webhook saved.")
}

// sendTestEvent: POST /inbox/settings/webhook/test sends a signed test event and tells the outcome.
func (h *Handler) sendTestEvent(c *fiber.Ctx) error {
	res, err := h.app.TestWebhook(c.UserContext(), sessionOf(c).AccountID)
	if err != nil {
		return h.done(c, settingsPath+"#webhook", false, models.ErrorMessage(err))
	}
	switch {
	case res.Delivered:
		return h.done(c, settingsPath+"#webhook", true, fmt.Sprintf("Test event delivered (HTTP %d).", *res.StatusCode))
	case res.Error != nil:
		return h.done(c, settingsPath+"#webhook", false, "Test event not delivered: "+*res.Error)
	}
	return h.done(c, settingsPath+"#webhook", false, "Test event not delivered.")
}

// saveAlertWebhook: POST /inbox/settings/alert-webhook {url} (those mayRoute allows); empty turns the
// alert webhook off.
func (h *Handler) saveAlertWebhook(c *fiber.Ctx) error {
	url, err := h.app.SaveAlertWebhookURL(c.UserContext(), sessionOf(c).AccountID, c.FormValue("url"))
	if err != nil {
		return h.actionFailed(c, settingsPath+"#alerts", err)
	}
	if url == "" {
		return h.done(c, settingsPath+"#alerts", true, "Alert webhook turned off.")
	}
	return h.done(c, settingsPath+"#alerts", true, "Alert webhook saved.")
}

// saveBot: POST /inbox/settings/bot {active, activeShown, instructions, goal, language,
// handoffMessage, handoffEscalationMinutes, botResumeMinutes}. The bot's switch is posted when the
// form had it (activeShown: an unticked box sends nothing), and only a user mayRoute allows may turn
// it: anyone else's request that would turn it is refused whole (403). The hand-off message is saved
// only when the form changed it, so that an account still on the default keeps following it; an empty
// escalation is 0 (never), an empty resume time never. A field the form did not send is left as it is.
func (h *Handler) saveBot(c *fiber.Ctx) error {
	const back = settingsPath + "#bot"
	sess := sessionOf(c)
	cur, err := h.store.BotSettings(c.UserContext(), sess.AccountID)
	if err != nil {
		return h.actionFailed(c, back, err)
	}
	instructions, goal, lang := c.FormValue("instructions"), c.FormValue("goal"), c.FormValue("language")
	in := models.BotSettingsInput{Instructions: &instructions, Goal: &goal, Language: &lang}
	if hasField(c, "activeShown") || hasField(c, "active") {
		if active := c.FormValue("active") == "true"; active != cur.Active {
			if !mayRoute(sess) {
				return h.routingRefused(c)
			}
			in.Active = &active
		}
	}
	if hasField(c, "handoffMessage") {
		// The textarea sends the text with CRLF line ends; the store trims it.
		if msg := strings.TrimSpace(strings.ReplaceAll(c.FormValue("handoffMessage"), "\r\n", "\n")); msg != cur.HandoffMessage {
			in.HandoffMessage = &msg
		}
	}
	if hasField(c, "handoffEscalationMinutes") {
		n, ok := formMinutes(c.FormValue("handoffEscalationMinutes"))
		if !ok {
			return h.done(c, back, false, "Escalate after must be a whole number of minutes (0 for never). Nothing was saved.")
		}
		if n == nil {
			n = new(int)
		}
		in.HandoffEscalationMinutes = n
	}
	if hasField(c, "botResumeMinutes") {
		n, ok := formMinutes(c.FormValue("botResumeMinutes"))
		if !ok {
			return h.done(c, back, false, "Resume the bot after must be a whole number of minutes, or empty for never. Nothing was saved.")
		}
		in.SetBotResume, in.BotResumeMinutes = true, n
	}
	if _, err := h.app.UpdateBotSettings(c.UserContext(), sess.AccountID, in); err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return h.done(c, back, false, formMessage(err, botFields)+" Nothing was saved.")
		}
		return h.actionFailed(c, back, err)
	}
	return h.done(c, back, true, "Bot settings saved.")
}

// botFields are the bot settings' fields as the API names them in errors, and as the form does.
var botFields = []fieldLabel{
	{Field: "instructions", Label: "instructions"}, {Field: "goal", Label: "goal"}, {Field: "language", Label: "language"},
	{Field: "handoffMessage", Label: "the hand-off message"}, {Field: "handoffEscalationMinutes", Label: "escalate after"},
	{Field: "botResumeMinutes", Label: "resume the bot after"}, {Field: "null", Label: "empty"},
}

// requireOwner lets only the account's owners generate the API key, manage the team and change the
// compliance settings (403 for a member, however the request was made); where messages go is
// requireRouting's (routing.go).
func (h *Handler) requireOwner(c *fiber.Ctx) error {
	if !isOwner(sessionOf(c)) {
		return h.render(c, fiber.StatusForbidden, "problem", h.view(c, "Not allowed", "settings",
			problemView{Heading: "Not allowed", Text: "Only the account's owners can generate the API key, see the signing secret, manage the team and change the compliance settings."}))
	}
	return c.Next()
}

// isOwner is the one rule for what only owners may do and see in the inbox.
func isOwner(sess *session) bool { return sess.User.Role == models.RoleOwner }

// addMember: POST /inbox/settings/team {email, role} adds a user with a generated password; the
// answer is 303 to the settings page, which shows the password once.
func (h *Handler) addMember(c *fiber.Ctx) error {
	added, err := h.store.AddUser(c.UserContext(), sessionOf(c).AccountID, c.FormValue("email"), c.FormValue("role"))
	if err != nil {
		return h.actionFailed(c, settingsPath+"#team", err)
	}
	return h.revealOnce(c, reveal{MemberEmail: added.User.Email, MemberPassword: added.Password}, "#team")
}

// removeMember: POST /inbox/settings/team/{userId}/remove; the user's sessions end at once.
func (h *Handler) removeMember(c *fiber.Ctx) error {
	sess := sessionOf(c)
	if c.Params("id") == sess.UserID {
		return h.done(c, settingsPath+"#team", false, "You cannot remove yourself.")
	}
	if err := h.store.RemoveUser(c.UserContext(), sess.AccountID, c.Params("id")); err != nil {
		return h.actionFailed(c, settingsPath+"#team", err)
	}
	return h.done(c, settingsPath+"#team", true, "Member removed.")
}

// changePassword: POST /inbox/settings/password {current, new}. Every session of the user ends,
// this one included; the browser that changed it is signed in again with a new session.
func (h *Handler) changePassword(c *fiber.Ctx) error {
	sess := sessionOf(c)
	ctx := c.UserContext()
	if _, err := h.store.SignIn(ctx, sess.User.Email, c.FormValue("current")); err != nil {
		if models.ErrorCode(err) == models.CodeUnauthorized {
			return h.done(c, settingsPath+"#password", false, "The current password is wrong.")
		}
		return h.inboxFailure(c, err)
	}
	if err := h.store.SetPassword(ctx, sess.UserID, c.FormValue("new")); err != nil {
		return h.actionFailed(c, settingsPath+"#password", err)
	}
	token, _, err := h.store.NewSession(ctx, sess.User)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	h.setCookie(c, sessionCookie, token, 0)
	return h.done(c, settingsPath+"#password", true, "Password changed; every other session was signed out.")
}

// campaignsPage: GET /inbox/campaigns lists the campaigns with their sends.
func (h *Handler) campaignsPage(c *fiber.Ctx) error {
	sess := sessionOf(c)
	page, err := pageOf(c)
	if err != nil {
		return h.inboxNotFound(c)
	}
	campaigns, next, err := h.store.Campaigns(c.UserContext(), sess.AccountID, page)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	all := make([]*models.Campaign, len(campaigns))
	lists := map[string]string{}
	for i := range campaigns {
		all[i] = &campaigns[i]
		if id := campaigns[i].ListID; id != nil {
			if _, ok := lists[*id]; !ok {
				if l, err := h.store.ListByID(c.UserContext(), sess.AccountID, *id); err == nil {
					lists[*id] = l.Name
				}
			}
		}
	}
	if err := h.store.CountSends(c.UserContext(), all...); err != nil {
		return h.inboxFailure(c, err)
	}
	return h.render(c, fiber.StatusOK, "campaigns", h.view(c, "Campaigns", "campaigns", struct {
		Campaigns []models.Campaign
		Lists     map[string]string
		Next      string
	}{campaigns, lists, next}))
}

// setCampaignStatus: POST /inbox/campaigns/{id}/status {status: live|paused}. Going live queues what
// the pause held, as PATCH /v1/campaigns/{id} does.
func (h *Handler) setCampaignStatus(c *fiber.Ctx) error {
	status := c.FormValue("status")
	if status != models.CampaignLive && status != models.CampaignPaused {
		return h.done(c, "/inbox/campaigns", false, "Choose Live or Pause.")
	}
	campaign, err := h.app.UpdateCampaign(c.UserContext(), sessionOf(c).AccountID, c.Params("id"), models.CampaignInput{Status: &status})
	if err != nil {
		return h.actionFailed(c, "/inbox/campaigns", err)
	}
	if status == models.CampaignLive {
		return h.done(c, "/inbox/campaigns", true, campaign.Name+" is live.")
	}
	return h.done(c, "/inbox/campaigns", true, campaign.Name+" is paused.")
}
