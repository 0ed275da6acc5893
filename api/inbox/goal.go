package inbox

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// Goals on the conversation page (README, "Goals and campaign reports"): the goals the contact
// reached, and a Goal reached button that records, for the team, that the conversation got where its
// campaign wanted (Store.ReachGoal with source inbox). A goal is kept once per contact and campaign,
// so the button goes away once the conversation's goal is recorded.

// maxGoalNote is the longest note the form takes: ReachGoal's limit on a goal's note (it checks it
// too; the form says it first).
const maxGoalNote = 2000

// goalRow is a goal the contact reached, as the conversation page lists it.
type goalRow struct {
	models.Goal
	// For names the goal: its campaign's name, or "Account bot" for the account's own bot's goal;
	// Link is its campaign's page ("" for the bot's or a deleted campaign's).
	For, Link string
	// Text is the team's note, else the bot's summary.
	Text string
}

// goalSources name who recorded a goal.
var goalSources = map[string]string{models.GoalSourceBot: "recorded by the bot", models.GoalSourceAPI: "recorded through the API",
	models.GoalSourceInbox: "recorded in the inbox"}

// SourceLabel says who recorded the goal.
func (g goalRow) SourceLabel() string {
	if l, ok := goalSources[g.Source]; ok {
		return l
	}
	return g.Source
}

// goalsView is the conversation page's Goals section.
type goalsView struct {
	Rows []goalRow
	// Target is what the button records: the conversation's campaign's name, or "Account bot"; Goal
	// is that goal's text ("" when none is written); Link the campaign's page.
	Target, Goal, Link string
	// Done is the target's goal when it is recorded already (no button then).
	Done *goalRow
}

// withGoals adds the contact's goals to the conversation page's data.
func (h *Handler) withGoals(c *fiber.Ctx, v *conversationView) error {
	g, err := h.goalsOf(c, v.Contact)
	v.Goals = g
	return err
}

// goalsOf reads the contact's goals, as the conversation page and the contact page list them. The
// button's goal is the conversation's campaign's (Contact.ConversationCampaignID) or, without one or
// when that campaign is gone, the account's own bot's: what ReachGoal records without a campaign id.
func (h *Handler) goalsOf(c *fiber.Ctx, contact *models.Contact) (goalsView, error) {
	ctx, accountID := c.UserContext(), sessionOf(c).AccountID
	goals, err := h.store.GoalsOf(ctx, accountID, contact.ID)
	if err != nil {
		return goalsView{}, err
	}
	names := map[string]*models.Campaign{}
	campaign := func(id string) (*models.Campaign, error) {
		if cp, ok := names[id]; ok {
			return cp, nil
		}
		cp, err := h.store.CampaignByID(ctx, accountID, id)
		if err != nil && models.ErrorCode(err) != models.CodeNotFound {
			return nil, err
		}
		names[id] = cp // nil: deleted
		return cp, nil
	}
	var target *models.Campaign
	if id := contact.ConversationCampaignID; id != nil {
		if target, err = campaign(*id); err != nil {
			return goalsView{}, err
		}
	}
	g := goalsView{Target: "Account bot"}
	if target != nil {
		g.Target, g.Goal, g.Link = target.Name, target.Goal, campaignPath(target.ID)
	} else {
		bot, err := h.store.BotSettings(ctx, accountID)
		if err != nil {
			return goalsView{}, err
		}
		g.Goal = bot.Goal
	}
	done := -1
	for _, goal := range goals {
		row := goalRow{Goal: goal, For: "Account bot", Text: goal.Note}
		if row.Text == "" {
			row.Text = goal.Summary
		}
		if goal.CampaignID != nil {
			cp, err := campaign(*goal.CampaignID)
			if err != nil {
				return goalsView{}, err
			}
			row.For = "A deleted campaign"
			if cp != nil {
				row.For, row.Link = cp.Name, campaignPath(cp.ID)
			}
		}
		if (goal.CampaignID == nil && target == nil) || (goal.CampaignID != nil && target != nil && *goal.CampaignID == target.ID) {
			done = len(g.Rows)
		}
		g.Rows = append(g.Rows, row)
	}
	if done >= 0 {
		g.Done = &g.Rows[done]
	}
	return g, nil
}

// reachGoal: POST /inbox/conversations/{contactId}/goal {note} records that the contact reached the
// conversation's goal, with the signed-in user (members and owners alike). A goal already recorded is
// not recorded again; the page says since when it is.
func (h *Handler) reachGoal(c *fiber.Ctx) error {
	sess := sessionOf(c)
	back := "/inbox/conversations/" + url.PathEscape(c.Params("id")) + "#goal"
	note := strings.TrimSpace(c.FormValue("note"))
	if utf8.RuneCountInString(note) > maxGoalNote {
		return h.done(c, back, false, "The note must be at most "+itoa(maxGoalNote)+" characters. Nothing was recorded.")
	}
	userID := sess.UserID
	goal, created, err := h.app.ReachGoal(c.UserContext(), sess.AccountID, c.Params("id"), models.GoalInput{
		Source: models.GoalSourceInbox, Note: note, UserID: &userID,
	})
	if err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return h.done(c, back, false, sentence(models.ErrorMessage(err))+" Nothing was recorded.")
		}
		return h.actionFailed(c, back, err)
	}
	if !created {
		return h.done(c, back, true, "Goal was already recorded on "+goal.At.UTC().Format("Jan 2, 2006")+".")
	}
	return h.done(c, back, true, "Goal reached recorded.")
}
