package inbox

import (
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
	"funnelchat/models/report"
)

// The team's side of the inbox (README, "The inbox"): what waits for each user (unread conversations
// and open alerts, in the navigation and the title), who owns a conversation (the list's Mine /
// Unassigned / All views and the conversation's assign control), private notes among the messages,
// who wrote each outgoing message, and the account's canned replies in the reply box.

// countsOf reads what waits for the signed-in user; nil when it cannot be read, so that a page still
// shows (without its counts) while the database has a hiccup.
func (h *Handler) countsOf(c *fiber.Ctx) *report.InboxCounts {
	sess := sessionOf(c)
	if sess == nil {
		return nil
	}
	n, err := h.reports.Counts(c.UserContext(), sess.AccountID, sess.UserID)
	if err != nil {
		h.log.WarnContext(c.UserContext(), "inbox counts", "error", err.Error())
		return nil
	}
	return n
}

// navCountView is a count beside a navigation entry: Text as shown ("" at 0); Label, what it counts,
// for a screen reader; Max, where the count stops (0: it does not), which the script needs to write it
// alike.
type navCountView struct {
	Text, Label string
	Max         int
}

// navCount is the count of counts named section ("unread", "openAlerts", "gaveUp"); the deliveries
// that gave up stop at report.MaxGaveUpCount, shown as "99+".
func navCount(counts *report.InboxCounts, section string) navCountView {
	var n int
	var v navCountView
	switch section {
	case "unread":
		v.Label = "unread"
	case "openAlerts":
		v.Label = "open"
	case "gaveUp":
		v.Label, v.Max = "gave up in the last 7 days", report.MaxGaveUpCount
	}
	if counts != nil {
		n = map[string]int{"unread": counts.Unread, "openAlerts": counts.OpenAlerts, "gaveUp": counts.GaveUp}[section]
	}
	switch {
	case n <= 0:
	case v.Max > 0 && n >= v.Max:
		v.Text = itoa(v.Max-1) + "+"
	default:
		v.Text = itoa(n)
	}
	return v
}

// counts: GET /inbox/counts -> {"unread","openAlerts","gaveUp"} for the signed-in user, which the pages' script
// fetches when an event may have changed them (and after the user read a conversation).
func (h *Handler) counts(c *fiber.Ctx) error {
	sess := sessionOf(c)
	n, err := h.reports.Counts(c.UserContext(), sess.AccountID, sess.UserID)
	c.Set(fiber.HeaderCacheControl, "no-store")
	if err != nil {
		status := fiber.StatusInternalServerError
		if models.ErrorCode(err) == models.CodeUnavailable {
			status = fiber.StatusServiceUnavailable
		} else {
			h.log.ErrorContext(c.UserContext(), "inbox counts", "error", err.Error())
		}
		return c.Status(status).JSON(fiber.Map{"error": "counts unavailable"})
	}
	return c.JSON(n)
}

// Views of the conversation list by assignee (?assignee=).
const (
	viewMine       = "me"
	viewUnassigned = report.AssigneeNone
)

// assigneeView maps the list's ?assignee= to the view it names ("me", "none", or "" for all) and the
// store's filter (the user's id, report.AssigneeNone or "").
func assigneeView(q, userID string) (view, filter string) {
	switch q {
	case viewMine:
		return viewMine, userID
	case viewUnassigned:
		return viewUnassigned, report.AssigneeNone
	}
	return "", ""
}

// listTab is one of the conversation list's views, as a link keeping the other filters.
type listTab struct {
	Label, Href string
	Current     bool
}

// Views are the list's Mine / Unassigned / All links.
func (v listView) Views() []listTab {
	return v.tabs("assignee", v.Assignee, []string{viewMine, viewUnassigned, ""}, "Mine", "Unassigned", "All")
}

// tabs are links to the list in each of a view's values (param=value; "" leaves param out), each
// keeping the list's other filters, labelled in order; the one equal to current is Current.
func (v listView) tabs(param, current string, values []string, labels ...string) []listTab {
	tabs := make([]listTab, len(values))
	for i, value := range values {
		q := v.query()
		q.Del(param)
		if value != "" {
			q.Set(param, value)
		}
		tabs[i] = listTab{Label: labels[i], Href: "/inbox/", Current: current == value}
		if len(q) > 0 {
			tabs[i].Href += "?" + q.Encode()
		}
	}
	return tabs
}

// ClearLink is the list without filters or search, in the same views.
func (v listView) ClearLink() string {
	q := url.Values{}
	if v.Assignee != "" {
		q.Set("assignee", v.Assignee)
	}
	if v.Status != "" {
		q.Set("status", v.Status)
	}
	if len(q) == 0 {
		return "/inbox/"
	}
	return "/inbox/?" + q.Encode()
}

// EmptyText is what the list says when nothing is in it.
func (v listView) EmptyText() string {
	switch {
	case v.Filtered:
		return "No conversation matches."
	case v.Status == viewSnoozed:
		return "No conversation is snoozed. A snoozed conversation comes back to Open when its time comes, or when the contact writes."
	case v.Status == viewResolved:
		return "No conversation is resolved yet."
	case v.Assignee == viewMine:
		return "No conversation is assigned to you. Conversations a hand-off gives you, and those you assign to yourself, show here."
	case v.Assignee == viewUnassigned:
		return "Every conversation has someone: none is unassigned."
	}
	return "No conversations yet. Messages posted to the incoming endpoint, provider messages and campaign openings appear here as they arrive."
}

// teamView is the conversation page's team side.
type teamView struct {
	// Members are the account's users, for the assign control; Assignee is the conversation's (nil:
	// unassigned).
	Members  []models.TeamMember
	Assignee *models.Assignee
	// Me is the signed-in user's id.
	Me string
	// Timeline is the page's messages with the notes left among them, oldest first.
	Timeline []timelineItem
	// Canned are the account's canned replies, filled for the contact.
	Canned []cannedReply
}

// timelineItem is a message or a note of the conversation's timeline.
type timelineItem struct {
	Message models.Message // when Note is nil
	Note    *models.Note
}

// cannedReply is a canned reply as the reply box offers it: its body filled for the contact.
type cannedReply struct {
	Shortcut, Body string
}

// AssigneeEmail is the assignee's email, "" when unassigned.
func (t teamView) AssigneeEmail() string {
	if t.Assignee == nil {
		return ""
	}
	return t.Assignee.Email
}

// AssigneeID is the assignee's user id, "" when unassigned.
func (t teamView) AssigneeID() string {
	if t.Assignee == nil {
		return ""
	}
	return t.Assignee.UserID
}

// withTeam adds the team's side to the conversation page's data.
func (h *Handler) withTeam(c *fiber.Ctx, v *conversationView) error {
	ctx, sess := c.UserContext(), sessionOf(c)
	members, err := h.store.TeamMembers(ctx, sess.AccountID)
	if err != nil {
		return err
	}
	t := teamView{Members: members, Me: sess.UserID}
	if id := v.Contact.AssigneeID; id != nil {
		for _, m := range members {
			if m.ID == *id {
				t.Assignee = &models.Assignee{UserID: m.ID, Email: m.Email}
			}
		}
	}
	notes, err := h.store.Notes(ctx, sess.AccountID, v.Contact.ID)
	if err != nil {
		return err
	}
	// The notes of this page of messages: from its first message (all the earlier ones on the
	// oldest page) to the first message of the next page (all the later ones on the newest page).
	var from, until time.Time
	if v.Older != "" && len(v.Messages) > 0 {
		from = v.Messages[0].CreatedAt
	}
	if v.Cursor != "" {
		if next, err := h.store.MessageByID(ctx, sess.AccountID, v.Cursor); err == nil {
			until = next.CreatedAt
		}
	}
	t.Timeline = timeline(v.Messages, notes, from, until)
	replies, err := h.store.CannedReplies(ctx, sess.AccountID)
	if err != nil {
		return err
	}
	for i := range replies {
		t.Canned = append(t.Canned, cannedReply{Shortcut: replies[i].Shortcut, Body: models.FillCannedReply(&replies[i], v.Contact)})
	}
	v.Team = t
	return nil
}

// timeline puts the notes written from (zero: any time) until (zero: now) among the messages, by
// time; a note written in the same instant as a message comes after it.
func timeline(msgs []models.Message, notes []models.Note, from, until time.Time) []timelineItem {
	kept := notes[:0:0]
	for _, n := range notes {
		if (!from.IsZero() && n.CreatedAt.Before(from)) || (!until.IsZero() && !n.CreatedAt.Before(until)) {
			continue
		}
		kept = append(kept, n)
	}
	out := make([]timelineItem, 0, len(msgs)+len(kept))
	j := 0
	for i := range msgs {
		for j < len(kept) && kept[j].CreatedAt.Before(msgs[i].CreatedAt) {
			out = append(out, timelineItem{Note: &kept[j]})
			j++
		}
		out = append(out, timelineItem{Message: msgs[i]})
	}
	for ; j < len(kept); j++ {
		out = append(out, timelineItem{Note: &kept[j]})
	}
	return out
}

// assign: POST /inbox/conversations/{contactId}/assignee {userId} gives the conversation to a user of
// the account ("" unassigns it).
func (h *Handler) assign(c *fiber.Ctx) error {
	sess := sessionOf(c)
	back := "/inbox/conversations/" + url.PathEscape(c.Params("id")) + "#assign"
	var userID *string
	if id := strings.TrimSpace(c.FormValue("userId")); id != "" {
		userID = &id
	}
	assignee, err := h.app.Assign(c.UserContext(), sess.AccountID, c.Params("id"), userID)
	if err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return h.done(c, back, false, "That person is not on the team any more. Nothing was changed.")
		}
		return h.actionFailed(c, back, err)
	}
	switch {
	case assignee == nil:
		return h.done(c, back, true, "Unassigned: the conversation is back with the whole team.")
	case assignee.UserID == sess.UserID:
		return h.done(c, back, true, "Assigned to you.")
	}
	return h.done(c, back, true, "Assigned to "+assignee.Email+".")
}

// addNote: POST /inbox/conversations/{contactId}/notes {body} leaves a private note on the
// conversation, written by the signed-in user; the contact never sees it.
func (h *Handler) addNote(c *fiber.Ctx) error {
	sess := sessionOf(c)
	back := "/inbox/conversations/" + url.PathEscape(c.Params("id"))
	if _, err := h.app.AddNote(c.UserContext(), sess.AccountID, c.Params("id"), sess.UserID, c.FormValue("body")); err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			msg := strings.Replace(models.ErrorMessage(err), "body", "the note", 1)
			if strings.Contains(msg, "required") {
				msg = "the note is empty"
			}
			return h.done(c, back+"#compose", false, "No note was added: "+msg+".")
		}
		return h.actionFailed(c, back+"#compose", err)
	}
	return c.Redirect(back+"#bottom", fiber.StatusSeeOther)
}

// messageAuthors name who wrote an outgoing message on the conversation page (a team reply shows
// its writer's email instead).
var messageAuthors = map[string]string{
	models.AuthorBot: "Bot", models.AuthorCampaign: "Campaign", models.AuthorHuman: "Team", models.AuthorAPI: "API",
	models.AuthorSystem: "Auto-reply",
}

// byLabel names who wrote an outgoing message: the team member's email for a team reply, else its
// kind ("Bot", "Campaign", "API", "Auto-reply").
func byLabel(m models.Message) string {
	if m.Author == models.AuthorHuman && m.By != nil && m.By.Email != "" {
		return m.By.Email
	}
	if l, ok := messageAuthors[m.Author]; ok {
		return l
	}
	return m.Author
}

// snippet is the start of a text on one line, for a button's accessible name ("Retry now: Hi Tom…").
func snippet(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > 40 {
		text = string(r[:39]) + "…"
	}
	return text
}

// waitingFor says how long something has waited: "waiting 23 min", "waiting 2 h 5 min", "waiting 3
// days".
func waitingFor(d time.Duration) string {
	m := int(d / time.Minute)
	switch {
	case m < 1:
		return "waiting under a minute"
	case m < 60:
		return "waiting " + itoa(m) + " min"
	case m < 24*60:
		if m%60 == 0 {
			return "waiting " + itoa(m/60) + " h"
		}
		return "waiting " + itoa(m/60) + " h " + itoa(m%60) + " min"
	case m < 48*60:
		return "waiting 1 day"
	}
	return "waiting " + itoa(m/(24*60)) + " days"
}
