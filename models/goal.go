package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Who recorded a goal.
const (
	GoalSourceBot   = "bot"   // the model called its goal_reached tool
	GoalSourceAPI   = "api"   // POST /v1/contacts/{id}/goal
	GoalSourceInbox = "inbox" // the conversation page's "Goal reached" button
)

// EventGoalReached tells listeners that a contact reached a goal; its data is the goal record.
const EventGoalReached = "goal.reached"

// Goal records that a contact reached a campaign's goal (CampaignID nil: the goal of the account's
// own bot). There is at most one per contact and campaign: the first is kept.
type Goal struct {
	bun.BaseModel `bun:"table:goals"`

	ID         string    `bun:"id,pk" json:"-"`
	AccountID  string    `bun:"account_id" json:"-"`
	ContactID  string    `bun:"contact_id" json:"contactId"`
	CampaignID *string   `bun:"campaign_id" json:"campaignId"`
	Source     string    `bun:"source" json:"source"`
	Note       string    `bun:"note" json:"note"`
	Summary    string    `bun:"summary" json:"summary"`
	MessageID  *string   `bun:"message_id" json:"-"`
	UserID     *string   `bun:"user_id" json:"-"`
	At         time.Time `bun:"at" json:"at"`
}

// GoalInput is a goal to record. CampaignID nil means the conversation's campaign: the campaign of
// the contact's most recent opening (none: the account's own bot).
type GoalInput struct {
	CampaignID *string
	Source     string
	Note       string // the team's words (api, inbox)
	Summary    string // the model's words (bot)
	MessageID  *string
	UserID     *string
}

// Goal text limits.
const maxGoalText = 2000

// ReachGoal records that the contact reached the goal of a campaign, once: a second call answers the
// first record (created false). A new goal ends the contact's follow-ups of that campaign and is
// published as goal.reached. Errors: NOT_FOUND for a contact or campaignId that is not the account's,
// VALIDATION_ERROR for an over-long note.
func (s *Store) ReachGoal(ctx context.Context, accountID, contactID string, in GoalInput) (g *Goal, created bool, err error) {
	in.Note, in.Summary = strings.TrimSpace(in.Note), cutRunes(strings.TrimSpace(in.Summary), maxGoalText)
	if err := checkTexts(textField{"note", in.Note, maxGoalText}); err != nil {
		return nil, false, err
	}
	contact, err := s.ContactByID(ctx, accountID, contactID)
	if err != nil {
		return nil, false, err
	}
	campaignID := contact.ConversationCampaignID
	if in.CampaignID != nil {
		campaignID = in.CampaignID
	}
	if campaignID != nil {
		if _, err := s.CampaignByID(ctx, accountID, *campaignID); err != nil {
			if in.CampaignID == nil && ErrorCode(err) == CodeNotFound {
				campaignID = nil // the conversation's campaign is gone: the account's own goal
			} else {
				return nil, false, err
			}
		}
	}
	fresh := &Goal{
		ID: newID(prefixGoal), AccountID: accountID, ContactID: contact.ID, CampaignID: campaignID, Source: in.Source,
		Note: in.Note, Summary: in.Summary, MessageID: in.MessageID, UserID: in.UserID, At: now(),
	}
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		g, created = fresh, false
		res, err := tx.NewInsert().Model(g).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			g = new(Goal)
			return tx.NewSelect().Model(g).Where("contact_id = ? AND COALESCE(campaign_id, '') = ?", contact.ID, derefOr(campaignID, "")).Scan(ctx)
		}
		created = true
		if campaignID == nil {
			return nil
		}
		// The person is where the campaign wanted them: no more nudges.
		_, err = tx.NewUpdate().Model((*CampaignSend)(nil)).Set("follow_ups_done = ?", true).Set("next_follow_up_at = NULL").
			Where("campaign_id = ? AND contact_id = ?", *campaignID, contact.ID).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("reach goal: %w", err)
	}
	if created {
		s.emit(ctx, accountID, EventGoalReached, g)
	}
	return g, created, nil
}

// GoalsOf returns the goals a contact reached, oldest first.
func (s *Store) GoalsOf(ctx context.Context, accountID, contactID string) ([]Goal, error) {
	var out []Goal
	err := s.db.NewSelect().Model(&out).Where("account_id = ? AND contact_id = ?", accountID, contactID).Order("at", "id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("goals: %w", err)
	}
	return out, nil
}

// goalReached reports whether the contact reached the campaign's goal.
func goalReached(ctx context.Context, db bun.IDB, campaignID, contactID string) (bool, error) {
	return db.NewSelect().Model((*Goal)(nil)).Where("contact_id = ? AND campaign_id = ?", contactID, campaignID).Exists(ctx)
}

// cutRunes keeps at most n runes of s: a model's summary is kept, not refused, when it runs long.
func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
