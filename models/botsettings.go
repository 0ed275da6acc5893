package models

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/text/language"
)

// BotSettings is the account's own bot configuration: the instructions, goal and language the bot
// uses for conversations that no campaign owns, and the switch that stops every bot reply of the
// account (campaigns' included) while messages are still stored and campaigns' openings and follow-ups
// still go (README, "Custom channels, the bot and the reply webhook").
type BotSettings struct {
	Active       bool   `json:"active"`
	Instructions string `json:"instructions"`
	Goal         string `json:"goal"`
	Language     string `json:"language"`
	// HandoffMessage is what the bot sends the contact when it hands over ("": nothing);
	// HandoffEscalationMinutes how long an alert may wait for a team reply before it is escalated
	// (0: never); BotResumeMinutes how long the bot stays paused without a team reply (nil: until
	// resumed by hand).
	HandoffMessage           string `json:"handoffMessage"`
	HandoffEscalationMinutes int    `json:"handoffEscalationMinutes"`
	BotResumeMinutes         *int   `json:"botResumeMinutes"`
}

// DefaultHandoffMessage is what the bot says when it hands over, unless the account says otherwise.
const DefaultHandoffMessage = "Thanks! A member of our team will get back to you here shortly."

// Hand-off setting limits.
const (
	maxHandoffMessage = 1000
	maxHandoffMinutes = 10080 // a week
)

// BotSettingsInput is a partial update: nil fields are left as they are. SetBotResume says that
// BotResumeMinutes was given (nil then means never).
type BotSettingsInput struct {
	Active                   *bool
	Instructions             *string
	Goal                     *string
	Language                 *string
	HandoffMessage           *string
	HandoffEscalationMinutes *int
	SetBotResume             bool
	BotResumeMinutes         *int
}

func botSettingsOf(acc *Account) *BotSettings {
	return &BotSettings{Active: acc.BotActive, Instructions: acc.BotInstructions, Goal: acc.BotGoal, Language: acc.BotLanguage,
		HandoffMessage: acc.HandoffText(), HandoffEscalationMinutes: acc.HandoffEscalationMinutes, BotResumeMinutes: acc.BotResumeMinutes}
}

// HandoffText is the message the bot sends when it hands the conversation over ("": none).
func (a *Account) HandoffText() string { return derefOr(a.HandoffMessage, DefaultHandoffMessage) }

// BotSettings returns the account's bot settings. Errors: NOT_FOUND.
func (s *Store) BotSettings(ctx context.Context, accountID string) (*BotSettings, error) {
	acc, err := s.AccountByID(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return botSettingsOf(acc), nil
}

// UpdateBotSettings changes the fields in given and returns the settings after the update. Texts are
// trimmed and checked as a campaign's are (at most 8000 characters, valid UTF-8, no NUL); the language
// must be a BCP 47 tag and is stored normalized ("pt-br" becomes "pt-BR"). Nothing is stored when a
// field is invalid. Errors: VALIDATION_ERROR, NOT_FOUND.
func (s *Store) UpdateBotSettings(ctx context.Context, accountID string, in BotSettingsInput) (*BotSettings, error) {
	q := s.db.NewUpdate().Model((*Account)(nil)).Where("id = ?", accountID)
	set := false
	if in.Active != nil {
		q = q.Set("bot_active = ?", *in.Active)
		set = true
	}
	if in.Instructions != nil {
		v := strings.TrimSpace(*in.Instructions)
		if err := checkTexts(textField{"instructions", v, maxCampaignText}); err != nil {
			return nil, err
		}
		q = q.Set("bot_instructions = ?", v)
		set = true
	}
	if in.Goal != nil {
		v := strings.TrimSpace(*in.Goal)
		if err := checkTexts(textField{"goal", v, maxCampaignText}); err != nil {
			return nil, err
		}
		q = q.Set("bot_goal = ?", v)
		set = true
	}
	if in.Language != nil {
		v := strings.TrimSpace(*in.Language)
		if err := checkTexts(textField{"language", v, 64}); err != nil {
			return nil, err
		}
		tag, err := language.Parse(v)
		if err != nil {
			return nil, Errorf(CodeValidation, "language must be a BCP 47 tag such as en or pt-BR")
		}
		q = q.Set("bot_language = ?", tag.String())
		set = true
	}
	if in.HandoffMessage != nil {
		v := strings.TrimSpace(*in.HandoffMessage)
		if err := checkTexts(textField{"handoffMessage", v, maxHandoffMessage}); err != nil {
			return nil, err
		}
		q = q.Set("handoff_message = ?", v)
		set = true
	}
	if in.HandoffEscalationMinutes != nil {
		if v := *in.HandoffEscalationMinutes; v < 0 || v > maxHandoffMinutes {
			return nil, Errorf(CodeValidation, "handoffEscalationMinutes must be from 0 (never) to %d", maxHandoffMinutes)
		}
		q = q.Set("handoff_escalation_minutes = ?", *in.HandoffEscalationMinutes)
		set = true
	}
	if in.SetBotResume {
		if v := in.BotResumeMinutes; v != nil && (*v < 1 || *v > maxHandoffMinutes) {
			return nil, Errorf(CodeValidation, "botResumeMinutes must be null (never) or from 1 to %d", maxHandoffMinutes)
		}
		q = q.Set("bot_resume_minutes = ?", in.BotResumeMinutes)
		set = true
	}
	if set {
		res, err := q.Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("update bot settings: %w", err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return nil, notFound("account")
		}
	}
	return s.BotSettings(ctx, accountID)
}
