package inbox

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/web"
	"funnelchat/models"
	"funnelchat/models/report"
)

// The Deliveries page (README, "The inbox"): the account's outgoing messages whose delivery failed,
// those that gave up (no next attempt) apart from those still retrying, each tab with its count;
// newest first, 50 at a time, each with its contact, error, attempts and what happens next, a Retry
// button, and Retry all failed (App.RetryAllFailed: each message moves once, however many press it).

// deliveriesPageSize is how many failed messages the page lists at once.
const deliveriesPageSize = 50

const deliveriesPath = "/inbox/deliveries"

// deliveryRow is a failed message as the page lists it.
type deliveryRow struct {
	models.Message
	// Name names the contact; Excerpt is the message's start; By says who wrote it.
	Name, Excerpt, By string
}

// deliveryAuthors name who wrote a failed message. (The conversation list's "Sent" for the API's own
// messages would read oddly beside a failure.)
var deliveryAuthors = map[string]string{
	models.AuthorBot: "Bot", models.AuthorCampaign: "Campaign", models.AuthorHuman: "Team", models.AuthorAPI: "API",
	models.AuthorSystem: "Auto-reply",
}

// excerpt is the start of a message's text, on one line.
func excerpt(m *models.Message) string {
	text := strings.Join(strings.Fields(m.Body), " ")
	if text == "" && m.MediaURL != nil {
		text = "[attachment]"
	}
	if r := []rune(text); len(r) > 120 {
		text = string(r[:119]) + "…"
	}
	return text
}

// deliveriesView is the page's data.
type deliveriesView struct {
	Rows []deliveryRow
	// State is the tab shown (report.DeliveryGaveUp or report.DeliveryRetrying).
	State string
	// Next is the next page's cursor ("" on the last); Cursor this page's ("" on the first).
	Next, Cursor string
	MaxRetryAll  string
	Counts       *report.DeliveryCounts
}

// deliveriesLink is the page of the tab state, from cursor ("" for its first page). The tab that
// gave up is the page's first, at /inbox/deliveries.
func deliveriesLink(state, cursor string) string {
	q := url.Values{}
	if state != report.DeliveryGaveUp {
		q.Set("state", state)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if len(q) == 0 {
		return deliveriesPath
	}
	return deliveriesPath + "?" + q.Encode()
}

// MoreLink is the next page.
func (v deliveriesView) MoreLink() string { return deliveriesLink(v.State, v.Next) }

// FirstLink is the tab's first page.
func (v deliveriesView) FirstLink() string { return deliveriesLink(v.State, "") }

// GaveUp reports whether the tab shown is the deliveries that gave up.
func (v deliveriesView) GaveUp() bool { return v.State == report.DeliveryGaveUp }

// deliveryTab is a tab of the page: a state with its count.
type deliveryTab struct {
	Label, Href, Count string
	Current            bool
}

// Tabs are the page's two tabs, Gave up and Retrying, each with its count.
func (v deliveriesView) Tabs() []deliveryTab {
	count := func(n int) string {
		if n > report.MaxDeliveryCount {
			return thousands(report.MaxDeliveryCount) + "+"
		}
		return thousands(n)
	}
	return []deliveryTab{
		{Label: "Gave up", Href: deliveriesLink(report.DeliveryGaveUp, ""), Count: count(v.Counts.GaveUp), Current: v.GaveUp()},
		{Label: "Retrying", Href: deliveriesLink(report.DeliveryRetrying, ""), Count: count(v.Counts.Retrying), Current: !v.GaveUp()},
	}
}

// deliveryState reads the page's ?state= (the tab; the one that gave up when empty); ok is false for
// anything else.
func deliveryState(v string) (state string, ok bool) {
	switch v {
	case "", report.DeliveryGaveUp:
		return report.DeliveryGaveUp, true
	case report.DeliveryRetrying:
		return v, true
	}
	return "", false
}

// deliveriesPage: GET /inbox/deliveries[?state=retrying][&cursor=] lists the failed deliveries that
// gave up (or, with state=retrying, those still retrying), newest first, with both tabs' counts.
func (h *Handler) deliveriesPage(c *fiber.Ctx) error {
	sess := sessionOf(c)
	page, err := pageOf(c)
	if err != nil {
		return h.inboxNotFound(c)
	}
	state, ok := deliveryState(c.Query("state"))
	if !ok {
		return h.inboxNotFound(c)
	}
	page.Limit = deliveriesPageSize
	msgs, next, err := h.reports.Deliveries(c.UserContext(), sess.AccountID, state, page)
	if err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return h.inboxNotFound(c)
		}
		return h.inboxFailure(c, err)
	}
	v := deliveriesView{State: state, Next: next, Cursor: page.Cursor, MaxRetryAll: thousands(models.MaxRetryAll)}
	if v.Counts, err = h.reports.DeliveryCounts(c.UserContext(), sess.AccountID); err != nil {
		return h.inboxFailure(c, err)
	}
	if v.Rows, err = h.deliveryRows(c.UserContext(), sess.AccountID, msgs); err != nil {
		return h.inboxFailure(c, err)
	}
	return h.render(c, fiber.StatusOK, "deliveries", h.view(c, "Deliveries", "deliveries", v))
}

// deliveryRows names each message's contact (the page's contacts read in one query) and cuts its
// excerpt.
func (h *Handler) deliveryRows(ctx context.Context, accountID string, msgs []models.Message) ([]deliveryRow, error) {
	ids := make([]string, len(msgs))
	for i := range msgs {
		ids[i] = msgs[i].ContactID
	}
	contacts, err := h.store.ContactsByID(ctx, accountID, ids)
	if err != nil {
		return nil, err
	}
	rows := make([]deliveryRow, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		rows[i] = deliveryRow{Message: *m, Excerpt: excerpt(m), By: deliveryAuthors[m.Author], Name: m.ToID}
		if m.By != nil && m.By.Email != "" {
			rows[i].By = "Team (" + m.By.Email + ")"
		}
		if ct := contacts[m.ContactID]; ct != nil {
			rows[i].Name = contactName(ct, m.ToID)
		}
	}
	return rows, nil
}

// deliveriesBack is the page a Retry form was on: its tab, from the first page or its cursor.
func deliveriesBack(c *fiber.Ctx) string {
	state, ok := deliveryState(c.FormValue("state"))
	if !ok {
		state = report.DeliveryGaveUp
	}
	cursor := c.FormValue("cursor")
	if cursor != "" && !web.PlainToken(cursor, 64) {
		cursor = ""
	}
	return deliveriesLink(state, cursor)
}

// retryDelivery: POST /inbox/deliveries/{messageId}/retry {cursor} delivers one failed message again
// and goes back to the page (303). A message that is no longer failed (retried meanwhile, by someone
// else or by Retry all) is left as it is, and the page says so.
func (h *Handler) retryDelivery(c *fiber.Ctx) error {
	sess := sessionOf(c)
	back := deliveriesBack(c)
	m, err := h.app.Redeliver(c.UserContext(), sess.AccountID, c.Params("id"))
	if err != nil {
		if models.ErrorCode(err) == models.CodeConflict {
			// Retried meanwhile (another Retry, Retry all failed, someone else): it is not failed now.
			if m, lookErr := h.store.MessageByID(c.UserContext(), sess.AccountID, c.Params("id")); lookErr == nil {
				return h.done(c, back, false, "Nothing was queued: that message is "+m.Status+" now, not failed.")
			}
			return h.done(c, back, false, "Nothing was queued: that message is not failed now.")
		}
		return h.actionFailed(c, back, err)
	}
	name := m.ToID
	if rows, err := h.deliveryRows(c.UserContext(), sess.AccountID, []models.Message{*m}); err == nil {
		name = rows[0].Name
	}
	if ok, text := retryOutcome(m); m.Status != models.StatusPending || m.NextAttemptAt != nil {
		return h.done(c, back, ok, "The message to "+name+": "+text)
	}
	return h.done(c, back, true, "The message to "+name+" is queued again.")
}

// retryOutcome says what a retry did with the message (App.Redeliver asks the outgoing door again):
// sending again, deferred past the contact's quiet hours, or not sent with the door's reason.
func retryOutcome(m *models.Message) (ok bool, text string) {
	switch {
	case m.Status != models.StatusPending:
		reason := "the message may not go now"
		if m.Error != nil {
			reason = *m.Error
		}
		return false, "Not sent: " + reason
	case m.NextAttemptAt != nil && m.NextAttemptAt.After(time.Now()):
		return true, "Queued for " + m.NextAttemptAt.UTC().Format("Jan 2 15:04 MST") + ", after the contact's quiet hours."
	}
	return true, "Sending again."
}

// retryAllFailed: POST /inbox/deliveries/retry-all {state} queues again up to models.MaxRetryAll failed
// messages and says how many (303 to the page). A second press, or another user's at the same time,
// finds them moved and queues nothing again.
func (h *Handler) retryAllFailed(c *fiber.Ctx) error {
	back := deliveriesBack(c)
	n, err := h.app.RetryAllFailed(c.UserContext(), sessionOf(c).AccountID)
	if err != nil {
		if n == 0 {
			return h.actionFailed(c, back, err)
		}
		h.log.ErrorContext(c.UserContext(), "retry all failed stopped", "error", err.Error(), "queued", n)
		return h.done(c, back, false, fmt.Sprintf("%s queued again, then something went wrong on our side: press Retry all failed again for the rest.", messagesCount(n)))
	}
	switch {
	case n == 0:
		return h.done(c, back, true, "No failed messages: nothing was queued again.")
	case n >= models.MaxRetryAll:
		return h.done(c, back, true, messagesCount(n)+" queued again (the most one press queues): press Retry all failed again for the rest.")
	}
	return h.done(c, back, true, messagesCount(n)+" queued again.")
}

// messagesCount is "1 message" or "N messages".
func messagesCount(n int) string {
	if n == 1 {
		return "1 message"
	}
	return thousands(n) + " messages"
}

// RetryLabel is what a Retry button's accessible name adds to "Retry": which message it sends again.
func (r deliveryRow) RetryLabel() string {
	return strings.TrimSpace("the message to " + r.Name + ": " + r.Excerpt)
}
