package models

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"golang.org/x/text/language"

	"funnelchat/models/rules"
)

// Campaign types, statuses and built-in channels.
const (
	CampaignCombined = "combined"
	CampaignOutgoing = "outgoing"
	CampaignIncoming = "incoming"

	CampaignDraft  = "draft"
	CampaignLive   = "live"
	CampaignPaused = "paused"

	ChannelSMS      = "sms"
	ChannelWhatsApp = rules.ChannelWhatsApp
	customPrefix    = "custom:"
)

// Campaign sends an opening message to contacts added to its list and gives the bot its voice.
type Campaign struct {
	bun.BaseModel `bun:"table:campaigns"`

	ID              string `bun:"id,pk" json:"id"`
	AccountID       string `bun:"account_id" json:"-"`
	Name            string `bun:"name" json:"name"`
	Type            string `bun:"type" json:"type"`
	Language        string `bun:"language" json:"language"`
	BotInstructions string `bun:"bot_instructions" json:"botInstructions"`
	OpeningMessage  string `bun:"opening_message" json:"openingMessage"`
	// OpeningMessages are the opening's variants by index, retired ones included, used instead of
	// OpeningMessage: each contact added gets an active one at random and keeps it (its send's
	// variant). The JSON shows them through MarshalJSON (campaign_variants.go).
	OpeningMessages []string `bun:"opening_messages,nullzero" json:"-"`
	// RetiredVariants are the indexes of variants no new send gets (see campaign_variants.go).
	RetiredVariants     []int     `bun:"retired_variants,nullzero" json:"-"`
	Goal                string    `bun:"goal" json:"goal"`
	FollowUpsEnabled    bool      `bun:"follow_ups_enabled" json:"followUpsEnabled"`
	FollowUpDelaysHours []float64 `bun:"follow_up_delays" json:"followUpDelaysHours"`
	TriggerOnListAdd    bool      `bun:"trigger_on_list_add" json:"triggerOnListAdd"`
	ListID              *string   `bun:"list_id" json:"listId"`
	Channel             string    `bun:"channel" json:"channel"`
	Status              string    `bun:"status" json:"status"`
	SendRatePerMinute   *int      `bun:"send_rate_per_minute" json:"sendRatePerMinute"`
	OpeningDelayMinutes int       `bun:"opening_delay_minutes" json:"openingDelayMinutes"`
	// WhatsAppTemplate is the approved template that carries the opening message on WhatsApp outside
	// the 24-hour window, with the contact's first name as its one body parameter.
	WhatsAppTemplate *string   `bun:"whatsapp_template" json:"whatsappTemplate"`
	CreatedAt        time.Time `bun:"created_at" json:"createdAt"`
	UpdatedAt        time.Time `bun:"updated_at" json:"-"`

	// Sends counts the campaign's opening messages by outcome (filled by CampaignSends).
	Sends *SendCounts `bun:"-" json:"sends,omitempty"`
}

// Transport is how the campaign's messages leave: "custom" (the webhook), or the built-in channel
// ("sms", "whatsapp", "messenger", "instagram").
func (c *Campaign) Transport() string {
	if strings.HasPrefix(c.Channel, customPrefix) {
		return TransportCustom
	}
	return c.Channel
}

// ChannelLabel is the channel recorded on the campaign's messages: the custom label, or the built-in
// channel.
func (c *Campaign) ChannelLabel() string { return strings.TrimPrefix(c.Channel, customPrefix) }

// Message transports.
const (
	TransportCustom = "custom"
)

// CampaignInput is a create or a patch: nil fields are left as they are (or defaulted on create).
type CampaignInput struct {
	Name                *string
	Type                *string
	Language            *string
	BotInstructions     *string
	OpeningMessage      *string
	OpeningMessages     *[]string // replaces OpeningMessage; giving both is a VALIDATION_ERROR
	Goal                *string
	FollowUpsEnabled    *bool
	FollowUpDelaysHours *[]float64
	TriggerOnListAdd    *bool
	ListID              *string // "" unlinks
	Channel             *string
	Status              *string
	SendRatePerMinute   *int // 0 returns to the default
	OpeningDelayMinutes *int
	WhatsAppTemplate    *string // "" clears
}

// Campaign limits.
const (
	maxCampaignText      = 8000
	maxFollowUps         = 10
	maxFollowUpDelay     = 24 * 60 // hours: sixty days
	maxSendRatePerMinute = 6000
	maxOpeningDelay      = 24 * 60 // minutes
	minOpeningVariants   = 2
	maxOpeningVariants   = 5
)

// check rejects what no campaign could become: both forms of the opening message at once.
func (in *CampaignInput) check() error {
	if in.OpeningMessage != nil && in.OpeningMessages != nil {
		return Errorf(CodeValidation, "give openingMessage or openingMessages, not both")
	}
	if in.OpeningMessages != nil {
		return checkOpeningVariants(in.openingTexts())
	}
	return nil
}

// apply sets the given fields on c, the openings apart (setOpenings, which needs the variants the
// campaign's sends used).
func (in *CampaignInput) apply(c *Campaign) {
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	set(&c.Name, in.Name)
	set(&c.Type, in.Type)
	set(&c.Language, in.Language)
	set(&c.BotInstructions, in.BotInstructions)
	set(&c.Goal, in.Goal)
	set(&c.Channel, in.Channel)
	set(&c.Status, in.Status)
	if in.FollowUpsEnabled != nil {
		c.FollowUpsEnabled = *in.FollowUpsEnabled
	}
	if in.FollowUpDelaysHours != nil {
		c.FollowUpDelaysHours = *in.FollowUpDelaysHours
	}
	if in.TriggerOnListAdd != nil {
		c.TriggerOnListAdd = *in.TriggerOnListAdd
	}
	if in.ListID != nil {
		if id := strings.TrimSpace(*in.ListID); id == "" {
			c.ListID = nil
		} else {
			c.ListID = &id
		}
	}
	if in.SendRatePerMinute != nil {
		if *in.SendRatePerMinute == 0 {
			c.SendRatePerMinute = nil
		} else {
			v := *in.SendRatePerMinute
			c.SendRatePerMinute = &v
		}
	}
	if in.OpeningDelayMinutes != nil {
		c.OpeningDelayMinutes = *in.OpeningDelayMinutes
	}
	if in.WhatsAppTemplate != nil {
		if name := strings.TrimSpace(*in.WhatsAppTemplate); name == "" {
			c.WhatsAppTemplate = nil
		} else {
			c.WhatsAppTemplate = &name
		}
	}
}

// validate checks a campaign as it would be stored. Going live needs a list, an opening message for
// the types that send one, and a configured channel.
func (s *Store) validateCampaign(ctx context.Context, db bun.IDB, c *Campaign) error {
	if c.Name == "" {
		return Errorf(CodeValidation, "name is required")
	}
	if err := checkTexts(
		textField{"name", c.Name, maxListNameLength},
		textField{"botInstructions", c.BotInstructions, maxCampaignText},
		textField{"openingMessage", c.OpeningMessage, maxBodyLength},
		textField{"goal", c.Goal, maxCampaignText},
		textField{"channel", c.Channel, maxLabelLength + len(customPrefix)},
		textField{"whatsappTemplate", derefOr(c.WhatsAppTemplate, ""), 512},
	); err != nil {
		return err
	}
	switch c.Type {
	case CampaignCombined, CampaignOutgoing, CampaignIncoming:
	default:
		return Errorf(CodeValidation, "type must be combined, outgoing or incoming")
	}
	switch c.Status {
	case CampaignDraft, CampaignLive, CampaignPaused:
	default:
		return Errorf(CodeValidation, "status must be draft, live or paused")
	}
	tag, err := language.Parse(c.Language)
	if err != nil {
		return Errorf(CodeValidation, "language must be a BCP 47 tag such as en or pt-BR")
	}
	c.Language = tag.String()
	switch {
	case c.Channel == "", c.Channel == ChannelSMS, c.Channel == ChannelWhatsApp, IsMetaChannel(c.Channel):
	case strings.HasPrefix(c.Channel, customPrefix) && strings.TrimSpace(c.ChannelLabel()) != "":
	default:
		return Errorf(CodeValidation, `channel must be "custom:<label>", "sms", "whatsapp", "messenger" or "instagram"`)
	}
	if len(c.FollowUpDelaysHours) > maxFollowUps {
		return Errorf(CodeValidation, "followUpDelaysHours may hold at most %d delays", maxFollowUps)
	}
	for i, h := range c.FollowUpDelaysHours {
		if math.IsNaN(h) || h <= 0 || h > maxFollowUpDelay {
			return Errorf(CodeValidation, "followUpDelaysHours[%d] must be a number of hours above 0 and at most %d", i, maxFollowUpDelay)
		}
		if i > 0 && h <= c.FollowUpDelaysHours[i-1] {
			return Errorf(CodeValidation, "followUpDelaysHours must increase: each delay counts from the opening message")
		}
	}
	if c.SendRatePerMinute != nil && (*c.SendRatePerMinute < 1 || *c.SendRatePerMinute > maxSendRatePerMinute) {
		return Errorf(CodeValidation, "sendRatePerMinute must be from 1 to %d", maxSendRatePerMinute)
	}
	if c.OpeningDelayMinutes < 0 || c.OpeningDelayMinutes > maxOpeningDelay {
		return Errorf(CodeValidation, "openingDelayMinutes must be from 0 to %d", maxOpeningDelay)
	}
	if c.ListID != nil {
		if _, err := listByID(ctx, db, c.AccountID, *c.ListID); err != nil {
			return Errorf(CodeValidation, "listId does not name one of your lists")
		}
	}
	if c.Status != CampaignLive {
		return nil
	}
	switch {
	case c.ListID == nil && c.Type != CampaignIncoming:
		return Errorf(CodeValidation, "a live campaign needs a listId")
	case len(c.ActiveOpenings()) == 0 && c.Type != CampaignIncoming:
		return Errorf(CodeValidation, "a live %s campaign needs an openingMessage or openingMessages", c.Type)
	case c.Channel == "":
		return Errorf(CodeValidation, "a live campaign needs a channel")
	case c.Transport() != TransportCustom:
		if _, err := channelSettings(ctx, db, c.AccountID, c.Channel); err != nil {
			return Errorf(CodeValidation, "a live %s campaign needs the account's %s credentials: PUT /v1/settings/channels/%s", c.Channel, c.Channel, c.Channel)
		}
	}
	return nil
}

// CreateCampaign creates a campaign. Errors: VALIDATION_ERROR.
func (s *Store) CreateCampaign(ctx context.Context, accountID string, in CampaignInput) (*Campaign, error) {
	at := now()
	c := &Campaign{
		ID: newID(prefixCampaign), AccountID: accountID, Type: CampaignCombined, Language: "en",
		FollowUpDelaysHours: []float64{24, 72}, TriggerOnListAdd: true, Status: CampaignDraft,
		CreatedAt: at, UpdatedAt: at,
	}
	if err := in.check(); err != nil {
		return nil, err
	}
	in.apply(c)
	if texts := in.openingTexts(); texts != nil {
		if err := c.setOpenings(texts, nil); err != nil {
			return nil, err
		}
	}
	if err := s.validateCampaign(ctx, s.db, c); err != nil {
		return nil, err
	}
	if _, err := s.db.NewInsert().Model(c).Exec(ctx); err != nil {
		return nil, fmt.Errorf("create campaign: %w", err)
	}
	return c, nil
}

// UpdateCampaign applies a patch. When it moves the campaign back to live, resumed lists the openings
// and follow-ups its pause held, now queued again, for the caller to enqueue (nil otherwise). Errors:
// NOT_FOUND, VALIDATION_ERROR.
func (s *Store) UpdateCampaign(ctx context.Context, accountID, id string, in CampaignInput) (c *Campaign, resumed *Resumed, err error) {
	if err := in.check(); err != nil {
		return nil, nil, err
	}
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		resumed = nil
		// The row lock with the read: a list add share-locks the campaign while it writes the sends it
		// owes (triggerCampaigns), so the variants read below are all the sends will ever have
		// recorded under the old texts, and an add waiting here reads the new ones.
		c, err = campaignByID(ctx, tx, accountID, id, !s.IsSQLite())
		if err != nil {
			return err
		}
		was := c.Status
		in.apply(c)
		if texts := in.openingTexts(); texts != nil {
			used, err := usedVariants(ctx, tx, c.ID)
			if err != nil {
				return err
			}
			if err := c.setOpenings(texts, used); err != nil {
				return err
			}
		}
		if err := s.validateCampaign(ctx, tx, c); err != nil {
			return err
		}
		c.UpdatedAt = now()
		if _, err := tx.NewUpdate().Model(c).WherePK().Exec(ctx); err != nil {
			return err
		}
		if was != CampaignLive && c.Status == CampaignLive {
			resumed, err = resumeSends(ctx, tx, c.ID)
		}
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("update campaign: %w", err)
	}
	return c, resumed, nil
}

// CampaignByID returns the account's campaign, or NOT_FOUND.
func (s *Store) CampaignByID(ctx context.Context, accountID, id string) (*Campaign, error) {
	return campaignByID(ctx, s.db, accountID, id)
}

// Campaign returns a campaign by id alone, for the worker.
func (s *Store) Campaign(ctx context.Context, id string) (*Campaign, error) {
	c := new(Campaign)
	if err := s.db.NewSelect().Model(c).Where("id = ?", id).Scan(ctx); err != nil {
		if isNoRows(err) {
			return nil, notFound("campaign")
		}
		return nil, fmt.Errorf("campaign: %w", err)
	}
	return c, nil
}

func campaignByID(ctx context.Context, db bun.IDB, accountID, id string, forUpdate ...bool) (*Campaign, error) {
	if id == "" || len(id) > maxIDLength {
		return nil, notFound("campaign")
	}
	c := new(Campaign)
	q := db.NewSelect().Model(c).Where("account_id = ? AND id = ?", accountID, id)
	if len(forUpdate) > 0 && forUpdate[0] {
		q = q.For("UPDATE") // PostgreSQL only: SQLite runs one writer at a time
	}
	if err := q.Scan(ctx); err != nil {
		if isNoRows(err) {
			return nil, notFound("campaign")
		}
		return nil, fmt.Errorf("campaign by id: %w", err)
	}
	return c, nil
}

// Campaigns returns one page of the account's campaigns, oldest first.
func (s *Store) Campaigns(ctx context.Context, accountID string, page Page) ([]Campaign, string, error) {
	var out []Campaign
	q := s.db.NewSelect().Model(&out).Where("account_id = ?", accountID).Order("id").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("id > ?", page.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("campaigns: %w", err)
	}
	out, next := cutPage(out, page, func(i int) string { return out[i].ID })
	return out, next, nil
}

// Personalize fills {{firstName}} and {{lastName}} (spaces inside the braces allowed) with the
// contact's names. A name the contact has not given is removed cleanly: with the space before it
// ("Hi {{firstName}}, ..." -> "Hi, ..."), or at the start of the text with the punctuation and space
// after it ("{{firstName}}, your call ..." -> "Your call ...").
func Personalize(template string, c *Contact) string {
	out := template
	for _, f := range []struct {
		names []string
		value string
	}{
		{[]string{"{{firstName}}", "{{ firstName }}"}, strings.TrimSpace(c.FirstName)},
		{[]string{"{{lastName}}", "{{ lastName }}"}, strings.TrimSpace(c.LastName)},
	} {
		for _, name := range f.names {
			if f.value == "" {
				out = removePlaceholder(out, name)
			}
			out = strings.ReplaceAll(out, name, f.value)
		}
	}
	return out
}

// removePlaceholder removes a placeholder whose value is missing, with the space before it, or, where
// it begins the text, with the separators after it (", ", " - "), raising the first letter of what
// follows ("{{firstName}}, ¿qué tal?" -> "¿Qué tal?").
func removePlaceholder(text, name string) string {
	text = strings.ReplaceAll(text, " "+name, "")
	for strings.HasPrefix(text, name) {
		rest := strings.TrimLeftFunc(text[len(name):], func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune(",;:.-–—!?", r)
		})
		if i := strings.IndexFunc(rest, unicode.IsLetter); i >= 0 && strings.TrimLeft(rest[:i], "¿¡\"'«“(") == "" {
			r, size := utf8.DecodeRuneInString(rest[i:])
			rest = rest[:i] + string(unicode.ToUpper(r)) + rest[i+size:]
		}
		text = rest
	}
	return strings.ReplaceAll(text, name, "")
}

func checkOpeningVariants(texts []string) error {
	if texts == nil {
		return nil
	}
	if len(texts) < minOpeningVariants || len(texts) > maxOpeningVariants {
		return Errorf(CodeValidation, "openingMessages must hold %d to %d texts", minOpeningVariants, maxOpeningVariants)
	}
	for i, text := range texts {
		if text == "" {
			return Errorf(CodeValidation, "openingMessages[%d] is empty", i)
		}
		if err := checkTexts(textField{fmt.Sprintf("openingMessages[%d]", i), text, maxBodyLength}); err != nil {
			return err
		}
	}
	return nil
}

func derefOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}
