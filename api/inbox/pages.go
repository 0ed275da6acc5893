package inbox

import (
	"crypto/rand"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/web"
	"funnelchat/models"
	"funnelchat/models/report"
)

// conversationMessages is how many messages the conversation page shows at once (older ones page).
const conversationMessages = 100

func itoa(n int) string { return strconv.Itoa(n) }

// pageOf reads a listing page's ?cursor= (the inbox's pages have their own sizes). Errors:
// VALIDATION_ERROR for a cursor the inbox did not make.
func pageOf(c *fiber.Ctx) (models.Page, error) {
	p := models.Page{Limit: models.DefaultPageLimit, Cursor: strings.Clone(c.Query("cursor"))}
	if p.Cursor != "" && !web.PlainToken(p.Cursor, 64) {
		return p, models.Errorf(models.CodeValidation, "cursor is not a cursor the inbox made")
	}
	return p, nil
}

// newFormToken returns a random token for a form's CSRF field.
func newFormToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// view starts a page's data for the signed-in user, taking the flash message left by the last action.
func (h *Handler) view(c *fiber.Ctx, title, nav string, data any) inboxView {
	sess := sessionOf(c)
	v := inboxView{Title: title, Nav: nav, User: sess.User, CSRF: sess.CSRFToken, Data: data}
	if f := c.Cookies(flashCookie); f != "" && c.Get("X-Inbox-Live") == "" {
		f, _ = url.QueryUnescape(f) // escaped by done; an unreadable one shows as empty
		kind, rest, _ := strings.Cut(f, ":")
		v.FlashOK = kind == "ok"
		v.FlashFor, v.Flash, _ = strings.Cut(rest, ":")
		h.setCookie(c, flashCookie, "", -1)
	}
	if c.Get("X-Inbox-Live") == "" {
		v.Counts = h.countsOf(c)
	}
	return v
}

// done ends an action: it leaves a message for the next page and goes back, with 303, to the page the
// form was on, so that reloading that page repeats nothing. When to names a section ("#webhook") the
// message is shown in that section, where the user pressed the button, rather than at the top.
func (h *Handler) done(c *fiber.Ctx, to string, ok bool, message string) error {
	prefix := "error:"
	if ok {
		prefix = "ok:"
	}
	if r := []rune(message); len(r) > 300 {
		message = string(r[:300])
	}
	section := ""
	if i := strings.IndexByte(to, '#'); i >= 0 {
		section = to[i+1:]
	}
	// Escaped: a ";" would end the cookie's value, and clients drop or cut values with quotes, spaces
	// or non-ASCII characters, which messages naming a user's input hold.
	h.setCookie(c, flashCookie, url.QueryEscape(prefix+section+":"+message), 60)
	return c.Redirect(safeNext(to), fiber.StatusSeeOther)
}

// actionFailed ends an action that a domain error stopped: the error's message is shown on the page
// the form was on; anything else is a failure page.
func (h *Handler) actionFailed(c *fiber.Ctx, to string, err error) error {
	switch models.ErrorCode(err) {
	case models.CodeInternal, models.CodeUnavailable:
		return h.inboxFailure(c, err)
	case models.CodeNotFound:
		return h.inboxNotFound(c)
	}
	return h.done(c, to, false, models.ErrorMessage(err))
}

// inboxNotFound is the 404 page: an unknown id, or one of another account (which is not told apart).
func (h *Handler) inboxNotFound(c *fiber.Ctx) error {
	return h.render(c, fiber.StatusNotFound, "problem", h.view(c, "Not found", "", problemView{
		Heading: "Not found", Text: "There is nothing here, or it belongs to another account.",
	}))
}

// inboxFailure is the page for what went wrong on our side; the error is logged with the request id.
func (h *Handler) inboxFailure(c *fiber.Ctx, err error) error {
	status, text := fiber.StatusInternalServerError, "Something went wrong on our side. Try again in a moment."
	if models.ErrorCode(err) == models.CodeUnavailable {
		status, text = fiber.StatusServiceUnavailable, "The service is briefly unavailable. Try again in a moment."
	} else {
		h.log.ErrorContext(c.UserContext(), "inbox", "error", err.Error(), "path", c.Path())
	}
	v := inboxView{Title: "Error", Data: problemView{Heading: "Sorry", Text: text, RequestID: web.RequestIDOf(c)}}
	if sess := sessionOf(c); sess != nil {
		v.User, v.CSRF = sess.User, sess.CSRFToken
	}
	return h.render(c, status, "problem", v)
}

type problemView struct {
	Heading, Text, RequestID string
}

// listView is the conversation list page's data.
type listView struct {
	Items []report.Conversation
	// Next is the older page's cursor, Newer the newer page's ("" when there is none); Paged: this
	// is not the first page (paging.go).
	Next, Newer               string
	Paged                     bool
	Unread, NeedsHuman, Fails bool
	Q                         string
	// Filtered: some filter or search is on.
	Filtered bool
	// Assignee is the list's view: "me", "none" (unassigned) or "" (all); see team_inbox.go.
	Assignee string
	// Status is the list's status view: "" (open), "snoozed" or "resolved"; see status.go.
	Status string
}

// query is the list's filters, search and view as a query string.
func (v listView) query() url.Values {
	q := url.Values{}
	if v.Q != "" {
		q.Set("q", v.Q)
	}
	for name, on := range map[string]bool{"unread": v.Unread, "needsHuman": v.NeedsHuman, "failed": v.Fails} {
		if on {
			q.Set(name, "true")
		}
	}
	if v.Assignee != "" {
		q.Set("assignee", v.Assignee)
	}
	if v.Status != "" {
		q.Set("status", v.Status)
	}
	return q
}

// conversationsPage: GET /inbox/ lists the conversations, newest activity first, with filters
// (unread, needsHuman, failed: "true") and search (q).
func (h *Handler) conversationsPage(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return h.inboxNotFound(c)
	}
	page.Limit = 30
	v := listView{Q: strings.TrimSpace(c.Query("q")), Unread: c.Query("unread") == "true",
		NeedsHuman: c.Query("needsHuman") == "true", Fails: c.Query("failed") == "true"}
	f := report.ConversationFilter{Query: v.Q}
	yes := true
	if v.Unread {
		f.Unread = &yes
	}
	if v.NeedsHuman {
		f.NeedsHuman = &yes
	}
	if v.Fails {
		f.Failed = &yes
	}
	v.Filtered = v.Unread || v.NeedsHuman || v.Fails || v.Q != ""
	sess := sessionOf(c)
	v.Assignee, f.Assignee = assigneeView(c.Query("assignee"), sess.UserID)
	v.Status, f.Status = statusView(c.Query("status"))
	if f.Newer, err = newerOf(c); err != nil {
		return h.inboxNotFound(c)
	}
	err = h.listPage(c, &v, f, page)
	if err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return h.render(c, fiber.StatusBadRequest, "problem", h.view(c, "Search", "conversations",
				problemView{Heading: "Search too long", Text: models.ErrorMessage(err)}))
		}
		return h.inboxFailure(c, err)
	}
	return h.render(c, fiber.StatusOK, "conversations", h.view(c, "Conversations", "conversations", v))
}

// conversationView is the conversation page's data.
type conversationView struct {
	*report.ConversationView
	Name    string
	BotOn   bool
	Path    string
	Cursor  string
	Attempt map[string][]models.Attempt
	// Consent is the contact's consent by channel, the all-channels state first.
	Consent []consentRow
	// OptedOut is the state that stops a reply: the contact opted out on the reply's channel (nil
	// when it did not); the page shows a notice instead of the reply box.
	OptedOut *consentRow
	// ConsentHistory is the contact's consent ledger, newest first.
	ConsentHistory consentHistory
	// ConsentChannels are the channels the form to record consent offers, besides all channels.
	ConsentChannels []string
	// Goals are the contact's goals and the Goal reached button's (goal.go).
	Goals goalsView
	// Team is the team's side: the assignee, the notes among the messages, the canned replies
	// (team_inbox.go).
	Team teamView
	// StatusBox is the status controls' snooze choices (status.go); the status is Status.
	StatusBox statusBox
}

// conversationPage: GET /inbox/conversations/{contactId} shows the conversation and marks it read for
// the user.
func (h *Handler) conversationPage(c *fiber.Ctx) error {
	sess := sessionOf(c)
	before := c.Query("before")
	if len(before) > 64 {
		return h.inboxNotFound(c)
	}
	conv, err := h.reports.ConversationFor(c.UserContext(), sess.AccountID, c.Params("id"), before, conversationMessages)
	if err != nil {
		if models.ErrorCode(err) == models.CodeNotFound {
			return h.inboxNotFound(c)
		}
		return h.inboxFailure(c, err)
	}
	if before == "" {
		if err := h.app.MarkRead(c.UserContext(), sess.AccountID, sess.UserID, conv.Contact.ID); err != nil {
			return h.inboxFailure(c, err)
		}
	}
	v := conversationView{ConversationView: conv, Name: contactName(conv.Contact, conv.SenderID),
		BotOn: !conv.Contact.BotPaused, Path: "/inbox/conversations/" + url.PathEscape(conv.Contact.ID), Cursor: before}
	if err := h.withConsent(c, &v); err != nil {
		return h.inboxFailure(c, err)
	}
	if err := h.withGoals(c, &v); err != nil {
		return h.inboxFailure(c, err)
	}
	if err := h.withTeam(c, &v); err != nil {
		return h.inboxFailure(c, err)
	}
	if err := h.withStatus(c, &v); err != nil {
		return h.inboxFailure(c, err)
	}
	return h.render(c, fiber.StatusOK, "conversation", h.view(c, v.Name, "conversations", v))
}

// reply: POST /inbox/conversations/{contactId}/reply {body} sends a team member's reply on the
// conversation's channel and pauses the bot.
func (h *Handler) reply(c *fiber.Ctx) error {
	sess := sessionOf(c)
	back := "/inbox/conversations/" + url.PathEscape(c.Params("id"))
	if _, err := h.app.TeamReply(c.UserContext(), sess.AccountID, c.Params("id"), sess.UserID, c.FormValue("body"), ""); err != nil {
		return h.actionFailed(c, back+"#compose", err)
	}
	return c.Redirect(back+"#bottom", fiber.StatusSeeOther)
}

// setBot: POST /inbox/conversations/{contactId}/bot {active: "true"|"false"} resumes or pauses the bot.
func (h *Handler) setBot(c *fiber.Ctx) error {
	sess := sessionOf(c)
	back := "/inbox/conversations/" + url.PathEscape(c.Params("id"))
	active := c.FormValue("active") == "true"
	if _, err := h.app.SetBotActive(c.UserContext(), sess.AccountID, c.Params("id"), active); err != nil {
		return h.actionFailed(c, back, err)
	}
	if active {
		return h.done(c, back, true, "The bot answers this contact again.")
	}
	return h.done(c, back, true, "The bot is paused for this contact; the team answers.")
}

// retry: POST /inbox/messages/{id}/retry delivers a failed message again.
func (h *Handler) retry(c *fiber.Ctx) error {
	sess := sessionOf(c)
	m, err := h.app.Redeliver(c.UserContext(), sess.AccountID, c.Params("id"))
	if err != nil {
		back := "/inbox/"
		if existing, lookErr := h.store.MessageByID(c.UserContext(), sess.AccountID, c.Params("id")); lookErr == nil {
			back = "/inbox/conversations/" + url.PathEscape(existing.ContactID)
		}
		return h.actionFailed(c, back, err)
	}
	ok, text := retryOutcome(m)
	return h.done(c, "/inbox/conversations/"+url.PathEscape(m.ContactID), ok, text)
}

// alertsPage: GET /inbox/alerts lists the open alerts, newest first.
func (h *Handler) alertsPage(c *fiber.Ctx) error {
	sess := sessionOf(c)
	page, err := pageOf(c)
	if err != nil {
		return h.inboxNotFound(c)
	}
	alerts, next, err := h.store.Alerts(c.UserContext(), sess.AccountID, models.AlertFilter{}, page)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	type row struct {
		models.Alert
		Name string
		// Assignee is who owns the conversation ("" unassigned).
		Assignee string
	}
	members, err := h.store.TeamMembers(c.UserContext(), sess.AccountID)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	emails := map[string]string{}
	for _, m := range members {
		emails[m.ID] = m.Email
	}
	ids := make([]string, len(alerts))
	for i, a := range alerts {
		ids[i] = a.ContactID
	}
	contacts, err := h.store.ContactsByID(c.UserContext(), sess.AccountID, ids)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	senders, err := h.reports.SenderIDs(c.UserContext(), sess.AccountID, ids)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	rows := make([]row, len(alerts))
	for i, a := range alerts {
		rows[i].Alert = a
		if ct := contacts[a.ContactID]; ct != nil {
			rows[i].Name = contactName(ct, senders[a.ContactID])
			if ct.AssigneeID != nil {
				rows[i].Assignee = emails[*ct.AssigneeID]
			}
		}
	}
	return h.render(c, fiber.StatusOK, "alerts", h.view(c, "Alerts", "alerts", struct {
		Rows []row
		Next string
	}{rows, next}))
}

// resolve: POST /inbox/alerts/{id}/resolve {next} marks the alert dealt with.
func (h *Handler) resolve(c *fiber.Ctx) error {
	sess := sessionOf(c)
	back := safeNext(c.FormValue("next"))
	if _, err := h.app.ResolveAlert(c.UserContext(), sess.AccountID, c.Params("id"), sess.UserID); err != nil {
		return h.actionFailed(c, back, err)
	}
	return h.done(c, back, true, "Alert resolved.")
}
