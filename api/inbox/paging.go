package inbox

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/web"
	"funnelchat/models"
	"funnelchat/models/report"
)

// Paging the conversation list both ways: Older (?cursor=, the last row's message) and, from any page
// but the first, Newer (?newer=, the first row's message: the page just before) and Newest (the first
// page), each keeping the filters and the view.

// newerOf reads the list's ?newer=. Errors: VALIDATION_ERROR for one the inbox did not make.
func newerOf(c *fiber.Ctx) (string, error) {
	newer := strings.Clone(c.Query("newer"))
	if newer != "" && !web.PlainToken(newer, 64) {
		return "", models.Errorf(models.CodeValidation, "newer is not a cursor the inbox made")
	}
	return newer, nil
}

// listPage reads the list's page into v: the page of page's cursor, or with f.Newer the page before
// that row; a way back that reaches the top shows the first page itself, which may hold more.
func (h *Handler) listPage(c *fiber.Ctx, v *listView, f report.ConversationFilter, page models.Page) error {
	sess := sessionOf(c)
	items, next, err := h.reports.Conversations(c.UserContext(), sess.AccountID, sess.UserID, f, page)
	if err != nil {
		return err
	}
	if f.Newer == "" {
		v.Items, v.Next, v.Paged = items, next, page.Cursor != ""
		if v.Paged && len(items) > 0 {
			v.Newer = items[0].LastMessage.ID
		}
		return nil
	}
	if next == "" {
		// Nothing newer than this page: it is the top of the list.
		f.Newer, page.Cursor = "", ""
		return h.listPage(c, v, f, page)
	}
	v.Items, v.Newer, v.Paged = items, next, true
	if len(items) > 0 {
		v.Next = items[len(items)-1].LastMessage.ID
	}
	return nil
}

// MoreLink is the older page of the list with the same filters.
func (v listView) MoreLink() string {
	q := v.query()
	q.Set("cursor", v.Next)
	return "/inbox/?" + q.Encode()
}

// NewerLink is the newer page of the list with the same filters ("" on the first page).
func (v listView) NewerLink() string {
	if v.Newer == "" {
		return ""
	}
	q := v.query()
	q.Set("newer", v.Newer)
	return "/inbox/?" + q.Encode()
}

// NewestLink is the list's first page with the same filters.
func (v listView) NewestLink() string {
	if q := v.query(); len(q) > 0 {
		return "/inbox/?" + q.Encode()
	}
	return "/inbox/"
}
