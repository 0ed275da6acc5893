package inbox

import (
	"context"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// Creating and editing a campaign in the inbox (README, "Campaigns"): one form for every field of POST
// /v1/campaigns, saved by the same calls (Store.CreateCampaign; App.UpdateCampaign, which queues what a
// pause held when the campaign goes live again). A refused form comes back with what was typed and the
// store's reason in the form's words.

// campaignVariants is how many variant boxes the form has: the most a campaign may have.
const campaignVariants = 5

// campaignForm is the form's data: the values as typed (or as stored), and what the form offers.
type campaignForm struct {
	// ID is the campaign's ("" for a new one); Action the form's target.
	ID, Action             string
	Name, Type, Language   string
	Channel, CustomLabel   string // Channel: "", "custom", or a built-in channel
	ListID                 string
	Opening                string
	Variants               [campaignVariants]string
	Goal, Instructions     string
	FollowUps, Trigger     bool
	Delays                 string
	OpeningDelay, SendRate string
	Template, Status       string
	Error                  string
	Lists                  []models.List
	Connected              map[string]bool
	DefaultRate            int
}

// VariantName is the letter of variant i ("Variant A").
func (f campaignForm) VariantName(i int) string { return variantName(i) }

// HasVariants reports whether any variant box holds text (the variants' part is then open).
func (f campaignForm) HasVariants() bool {
	for _, v := range f.Variants {
		if strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// ChannelOptions are the channel select's choices.
func (f campaignForm) ChannelOptions() []channelOption {
	out := []channelOption{{"", "None yet", false}, {"custom", "Custom channel (your webhook)", false}}
	for _, kind := range channelKinds {
		label := blankChannelForm(kind, "").Title
		if !f.Connected[kind] {
			label += " (not connected yet)"
		}
		out = append(out, channelOption{kind, label, !f.Connected[kind]})
	}
	return out
}

type channelOption struct {
	Value, Label string
	Unconnected  bool
}

// campaignTypes and campaignStatuses are the selects' choices, with what each means.
var (
	campaignTypes = []channelOption{
		{Value: models.CampaignCombined, Label: "Combined: opens and answers"},
		{Value: models.CampaignOutgoing, Label: "Outgoing: opens only"},
		{Value: models.CampaignIncoming, Label: "Incoming: answers only"},
	}
	campaignStatuses = []channelOption{
		{Value: models.CampaignDraft, Label: "Draft: sends nothing"},
		{Value: models.CampaignLive, Label: "Live: sends"},
		{Value: models.CampaignPaused, Label: "Paused: holds its sends"},
	}
)

// Types and Statuses are the selects' choices.
func (f campaignForm) Types() []channelOption    { return campaignTypes }
func (f campaignForm) Statuses() []channelOption { return campaignStatuses }

// campaignFields are a campaign's fields as the store names them in errors, and as the form does.
var campaignFields = []fieldLabel{
	{Field: "name", Label: "name"}, {Field: "botInstructions", Label: "bot instructions"},
	{Field: "openingMessages", Label: "variants", Item: func(i int) string { return variantName(i) }},
	{Field: "openingMessage", Label: "opening message"}, {Field: "goal", Label: "goal"},
	{Field: "whatsappTemplate", Label: "WhatsApp template"}, {Field: "listId", Label: "list"},
	{Field: "followUpDelaysHours", Label: "follow-up delays", Item: func(i int) string { return "follow-up delay " + strconv.Itoa(i+1) }},
	{Field: "sendRatePerMinute", Label: "send rate"}, {Field: "openingDelayMinutes", Label: "opening delay"},
}

// newCampaignForm is the form for a new campaign, with the store's defaults.
func newCampaignForm() campaignForm {
	return campaignForm{Action: "/inbox/campaigns/new", Type: models.CampaignCombined, Language: "en",
		FollowUps: false, Trigger: true, Delays: "24, 72", OpeningDelay: "0", Status: models.CampaignDraft}
}

// campaignFormOf is the edit form of a stored campaign.
func campaignFormOf(cp *models.Campaign) campaignForm {
	f := campaignForm{ID: cp.ID, Action: campaignPath(cp.ID) + "/edit", Name: cp.Name, Type: cp.Type, Language: cp.Language,
		Channel: cp.Channel, Opening: cp.OpeningMessage, Goal: cp.Goal, Instructions: cp.BotInstructions,
		FollowUps: cp.FollowUpsEnabled, Trigger: cp.TriggerOnListAdd, OpeningDelay: strconv.Itoa(cp.OpeningDelayMinutes),
		Template: deref(cp.WhatsAppTemplate), Status: cp.Status}
	if label, ok := strings.CutPrefix(cp.Channel, "custom:"); ok {
		f.Channel, f.CustomLabel = "custom", label
	}
	if cp.ListID != nil {
		f.ListID = *cp.ListID
	}
	if active := cp.ActiveOpenings(); len(active) > 1 {
		f.Opening = ""
		copy(f.Variants[:], active) // retired variants stay in the report, not in the form
	} else if len(active) == 1 {
		f.Opening = active[0]
	}
	delays := make([]string, len(cp.FollowUpDelaysHours))
	for i, d := range cp.FollowUpDelaysHours {
		delays[i] = strconv.FormatFloat(d, 'f', -1, 64)
	}
	f.Delays = strings.Join(delays, ", ")
	if cp.SendRatePerMinute != nil {
		f.SendRate = strconv.Itoa(*cp.SendRatePerMinute)
	}
	return f
}

// deref is a text that may be absent, "" when it is (also the templates' deref).
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// typedCampaignForm reads the posted form as typed, into f (which carries its id and action).
func typedCampaignForm(c *fiber.Ctx, f campaignForm) campaignForm {
	text := func(name string) string { return strings.ReplaceAll(c.FormValue(name), "\r\n", "\n") }
	f.Name, f.Type, f.Language = text("name"), text("type"), text("language")
	f.Channel, f.CustomLabel, f.ListID = text("channel"), text("customLabel"), text("listId")
	f.Opening, f.Goal, f.Instructions = text("openingMessage"), text("goal"), text("botInstructions")
	for i := range f.Variants {
		f.Variants[i] = text("variant" + strconv.Itoa(i))
	}
	f.FollowUps, f.Trigger = c.FormValue("followUpsEnabled") == "true", c.FormValue("triggerOnListAdd") == "true"
	f.Delays, f.OpeningDelay, f.SendRate = text("followUpDelaysHours"), text("openingDelayMinutes"), text("sendRatePerMinute")
	f.Template, f.Status = text("whatsappTemplate"), text("status")
	return f
}

// input is the form as a campaign input: every field, the opening as one message or as the non-empty
// variants (both is the store's to refuse). A number that is not one is refused here, in the form's
// words, before the store sees anything.
func (f campaignForm) input() (models.CampaignInput, string) {
	in := models.CampaignInput{Name: &f.Name, Type: &f.Type, Language: &f.Language, Goal: &f.Goal, BotInstructions: &f.Instructions,
		FollowUpsEnabled: &f.FollowUps, TriggerOnListAdd: &f.Trigger, Status: &f.Status}
	listID := strings.TrimSpace(f.ListID)
	in.ListID = &listID
	channel := strings.TrimSpace(f.Channel)
	if channel == "custom" {
		label := strings.TrimSpace(f.CustomLabel)
		if label == "" {
			return in, "Give the custom channel's label (such as live-chat), or choose another channel."
		}
		channel = "custom:" + label
	}
	in.Channel = &channel
	var variants []string
	for _, v := range f.Variants {
		if strings.TrimSpace(v) != "" {
			variants = append(variants, v)
		}
	}
	opening := f.Opening
	switch {
	case len(variants) > 0 && strings.TrimSpace(opening) != "":
		in.OpeningMessage, in.OpeningMessages = &opening, &variants // the store says: not both
	case len(variants) > 0:
		in.OpeningMessages = &variants
	default:
		in.OpeningMessage = &opening
	}
	var delays []float64
	for _, part := range strings.FieldsFunc(f.Delays, func(r rune) bool { return r == ',' || r == ';' || r == ' ' }) {
		h, err := strconv.ParseFloat(part, 64)
		if err != nil {
			return in, "Follow-up delays: “" + part + "” is not a number of hours. Write them separated by commas, such as 24, 72."
		}
		delays = append(delays, h)
	}
	if delays == nil {
		delays = []float64{}
	}
	in.FollowUpDelaysHours = &delays
	delay, ok := formMinutes(f.OpeningDelay)
	if !ok {
		return in, "The opening delay must be a whole number of minutes (0 for none)."
	}
	if delay == nil {
		delay = new(int)
	}
	in.OpeningDelayMinutes = delay
	rate, ok := formMinutes(f.SendRate)
	if !ok || (rate != nil && *rate == 0) {
		return in, "The send rate must be a whole number of messages per minute, or empty for the default."
	}
	if rate == nil {
		rate = new(int) // 0: the default
	}
	in.SendRatePerMinute = rate
	tmpl := strings.TrimSpace(f.Template)
	in.WhatsAppTemplate = &tmpl
	return in, ""
}

// withChoices adds what the form offers: the account's lists and which channels are connected.
func (h *Handler) withChoices(ctx context.Context, accountID string, f *campaignForm) error {
	page := models.Page{Limit: models.MaxPageLimit}
	for range 10 { // up to 2,000 lists
		lists, next, err := h.store.Lists(ctx, accountID, page)
		if err != nil {
			return err
		}
		f.Lists = append(f.Lists, lists...)
		if next == "" {
			break
		}
		page.Cursor = next
	}
	f.Connected = map[string]bool{}
	for _, kind := range channelKinds {
		stored, err := h.loadChannel(ctx, accountID, kind)
		if err != nil {
			return err
		}
		f.Connected[kind] = stored != nil
	}
	f.DefaultRate = h.cfg.CampaignSendsPerMinute
	return nil
}

// renderCampaignForm shows the form with status.
func (h *Handler) renderCampaignForm(c *fiber.Ctx, status int, f campaignForm) error {
	if err := h.withChoices(c.UserContext(), sessionOf(c).AccountID, &f); err != nil {
		return h.inboxFailure(c, err)
	}
	title := "New campaign"
	if f.ID != "" {
		title = "Edit " + f.Name
	}
	return h.render(c, status, "campaign_form", h.view(c, title, "campaigns", f))
}

// newCampaignPage: GET /inbox/campaigns/new shows the form for a new campaign.
func (h *Handler) newCampaignPage(c *fiber.Ctx) error {
	return h.renderCampaignForm(c, fiber.StatusOK, newCampaignForm())
}

// editCampaignPage: GET /inbox/campaigns/{id}/edit shows the campaign's form.
func (h *Handler) editCampaignPage(c *fiber.Ctx) error {
	cp, err := h.store.CampaignByID(c.UserContext(), sessionOf(c).AccountID, c.Params("id"))
	if err != nil {
		return h.campaignMissing(c, err)
	}
	return h.renderCampaignForm(c, fiber.StatusOK, campaignFormOf(cp))
}

// createCampaign: POST /inbox/campaigns/new creates the campaign and goes to the campaigns (303).
func (h *Handler) createCampaign(c *fiber.Ctx) error {
	f := typedCampaignForm(c, newCampaignForm())
	in, problem := f.input()
	if problem != "" {
		f.Error = problem + " Nothing was saved."
		return h.renderCampaignForm(c, fiber.StatusUnprocessableEntity, f)
	}
	cp, err := h.app.CreateCampaign(c.UserContext(), sessionOf(c).AccountID, in)
	if err != nil {
		return h.campaignRefused(c, f, err)
	}
	return h.done(c, "/inbox/campaigns", true, "Campaign “"+cp.Name+"” created ("+cp.Status+").")
}

// updateCampaign: POST /inbox/campaigns/{id}/edit saves the campaign's form and goes to the campaigns
// (303). Going live queues what a pause held, as PATCH /v1/campaigns/{id} does.
func (h *Handler) updateCampaign(c *fiber.Ctx) error {
	sess := sessionOf(c)
	id := strings.Clone(c.Params("id"))
	if _, err := h.store.CampaignByID(c.UserContext(), sess.AccountID, id); err != nil {
		return h.campaignMissing(c, err)
	}
	f := typedCampaignForm(c, campaignForm{ID: id, Action: campaignPath(id) + "/edit"})
	in, problem := f.input()
	if problem != "" {
		f.Error = problem + " Nothing was saved."
		return h.renderCampaignForm(c, fiber.StatusUnprocessableEntity, f)
	}
	cp, err := h.app.UpdateCampaign(c.UserContext(), sess.AccountID, id, in)
	if err != nil {
		return h.campaignRefused(c, f, err)
	}
	return h.done(c, "/inbox/campaigns", true, "Campaign “"+cp.Name+"” saved ("+cp.Status+").")
}

// campaignRefused shows the form again after the store refused it: a validation error in the form's
// words with what was typed (422); anything else as the inbox shows it.
func (h *Handler) campaignRefused(c *fiber.Ctx, f campaignForm, err error) error {
	switch models.ErrorCode(err) {
	case models.CodeValidation, models.CodeConflict:
		f.Error = formMessage(err, campaignFields) + " Nothing was saved."
		return h.renderCampaignForm(c, fiber.StatusUnprocessableEntity, f)
	case models.CodeNotFound:
		return h.inboxNotFound(c)
	}
	return h.inboxFailure(c, err)
}
