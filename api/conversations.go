package api

import (
	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
	"funnelchat/models/report"
)

// listConversations: GET /v1/conversations[?unread=&needsHuman=&failed=&q=] -> {"data":[{contact,
// lastMessage, unread, needsHuman, failed}], "nextCursor"}, newest activity first. unread is the
// API's own read state (POST /v1/contacts/{id}/read), apart from each inbox user's.
func (s *Server) listConversations(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	f, err := conversationFilter(c)
	if err != nil {
		return err
	}
	list, next, err := s.reports.Conversations(c.UserContext(), accountOf(c).ID, models.ReaderAPI, f, page)
	if err != nil {
		return err
	}
	return c.JSON(pageBody(list, next))
}

// conversationFilter reads the list's filters from the query (the inbox's too).
func conversationFilter(c *fiber.Ctx) (report.ConversationFilter, error) {
	var f report.ConversationFilter
	var err error
	if f.Unread, err = boolQuery(c, "unread"); err != nil {
		return f, err
	}
	if f.NeedsHuman, err = boolQuery(c, "needsHuman"); err != nil {
		return f, err
	}
	if f.Failed, err = boolQuery(c, "failed"); err != nil {
		return f, err
	}
	f.Query = c.Query("q")
	f.Assignee = c.Query("assignee")
	return f, nil
}

// markRead: POST /v1/contacts/{id}/read -> 204; the conversation is read, for the API, up to its newest
// message.
func (s *Server) markRead(c *fiber.Ctx) error {
	if err := s.app.MarkRead(c.UserContext(), accountOf(c).ID, models.ReaderAPI, c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// resolveAlert: POST /v1/alerts/{id}/resolve -> 200 with the alert, resolvedAt set.
func (s *Server) resolveAlert(c *fiber.Ctx) error {
	a, err := s.app.ResolveAlert(c.UserContext(), accountOf(c).ID, c.Params("id"), models.ReaderAPI)
	if err != nil {
		return err
	}
	return c.JSON(a)
}
