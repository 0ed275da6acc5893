package inbox

import (
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// Conversation status in the inbox (README, "Conversations: open, resolved, snoozed"): the list's Open
// / Snoozed / Resolved views, and the conversation page's Resolve, Reopen and Snooze.

// The list's status views (?status=); the Open view is the list without it.
const (
	viewSnoozed  = models.ConversationSnoozed
	viewResolved = models.ConversationResolved
)

// statusView maps the list's ?status= to the view it names ("" for Open, "snoozed", "resolved") and
// the store's filter; anything else is the Open view, as an unknown ?assignee= is All.
func statusView(q string) (view, filter string) {
	switch q {
	case viewSnoozed, viewResolved:
		return q, q
	}
	return "", models.ConversationOpen
}

// StatusViews are the list's Open / Snoozed / Resolved links, each keeping the other filters.
func (v listView) StatusViews() []listTab {
	return v.tabs("status", v.Status, []string{"", viewSnoozed, viewResolved}, "Open", "Snoozed", "Resolved")
}

// snoozeChoice is one of the Snooze menu's choices: its form value, its label, and when it ends.
type snoozeChoice struct {
	Value, Label string
	Until        time.Time
}

// snoozeChoices are the Snooze menu's choices at the time now, in the account's time zone: an hour,
// tomorrow at 9:00, and the next Monday at 9:00 (a week on, from a Monday).
func snoozeChoices(now time.Time, loc *time.Location) []snoozeChoice {
	local := now.In(loc)
	nine := func(days int) time.Time {
		return time.Date(local.Year(), local.Month(), local.Day()+days, 9, 0, 0, 0, loc)
	}
	toMonday := (int(time.Monday) - int(local.Weekday()) + 7) % 7
	if toMonday == 0 {
		toMonday = 7
	}
	return []snoozeChoice{
		{Value: "hour", Label: "1 hour", Until: now.Add(time.Hour)},
		{Value: "tomorrow", Label: "Tomorrow, 9:00", Until: nine(1)},
		{Value: "week", Label: "Next week (Monday, 9:00)", Until: nine(toMonday)},
	}
}

// accountZone is the account's time zone (Settings, Compliance), where the snooze times are counted.
func (h *Handler) accountZone(c *fiber.Ctx, accountID string) (*time.Location, error) {
	settings, err := h.store.ComplianceSettings(c.UserContext(), accountID)
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(settings.TimeZone)
	if err != nil {
		return time.UTC, nil // stored zones are checked (ValidTimeZone); UTC rather than no page
	}
	return loc, nil
}

// statusBox is the conversation page's status controls: the snooze choices now, and the zone they are
// counted in.
type statusBox struct {
	Choices []snoozeChoice
	Zone    string
}

// withStatus adds the status controls to the conversation page's data (the status itself is the
// report's: v.Status).
func (h *Handler) withStatus(c *fiber.Ctx, v *conversationView) error {
	loc, err := h.accountZone(c, sessionOf(c).AccountID)
	if err != nil {
		return err
	}
	v.StatusBox = statusBox{Choices: snoozeChoices(time.Now(), loc), Zone: loc.String()}
	return nil
}

// setStatus: POST /inbox/conversations/{contactId}/status {status: open|resolved|snoozed, snooze:
// hour|tomorrow|week for snoozed} gives the conversation that status, and goes back to it.
func (h *Handler) setStatus(c *fiber.Ctx) error {
	sess := sessionOf(c)
	back := "/inbox/conversations/" + url.PathEscape(c.Params("id")) + "#status"
	in := models.ConversationStatusInput{Status: c.FormValue("status")}
	var loc *time.Location
	if in.Status == models.ConversationSnoozed {
		var err error
		if loc, err = h.accountZone(c, sess.AccountID); err != nil {
			return h.inboxFailure(c, err)
		}
		for _, choice := range snoozeChoices(time.Now(), loc) {
			if choice.Value == c.FormValue("snooze") {
				in.SnoozedUntil = &choice.Until
			}
		}
		if in.SnoozedUntil == nil {
			return h.done(c, back, false, "Choose how long to snooze: 1 hour, tomorrow at 9:00 or next week. Nothing was changed.")
		}
	}
	st, changed, err := h.app.SetConversationStatus(c.UserContext(), sess.AccountID, c.Params("id"), in)
	if err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return h.done(c, back, false, "Nothing was changed: "+models.ErrorMessage(err)+".")
		}
		return h.actionFailed(c, back, err)
	}
	var text string
	switch st.Status {
	case models.ConversationResolved:
		text = "Resolved: the conversation left the Open list. A new message from the contact reopens it."
		if !changed {
			text = "The conversation was resolved already."
		}
	case models.ConversationSnoozed:
		text = "Snoozed until " + st.SnoozedUntil.In(loc).Format("Mon 2 Jan, 15:04") + " (" + loc.String() + "). It comes back to Open then, or when the contact writes."
	default:
		text = "Reopened: the conversation is in the Open list."
		if !changed {
			text = "The conversation was open already."
		}
	}
	return h.done(c, back, true, text)
}
