package api

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
	"funnelchat/models/report"
)

// listConversations: GET /v1/conversations[?status=&unread=&needsHuman=&failed=&q=&assignee=] ->
// {"data":[{contact, lastMessage, unread, needsHuman, failed, assignee, status, snoozedUntil}],
// "nextCursor"}, newest activity first; the open ones unless ?status= says otherwise. unread is the
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
	if f.Status, err = report.ParseStatusFilter(c.Query("status")); err != nil {
		return f, err
	}
	return f, nil
}

// conversationStatusRequest is the body of PATCH /v1/conversations/{contactId}. snoozedUntil is read
// as text, so that a time that is not RFC 3339 is a VALIDATION_ERROR naming the field.
type conversationStatusRequest struct {
	Status       *string `json:"status"`
	SnoozedUntil *string `json:"snoozedUntil"`
}

// patchConversation: PATCH /v1/conversations/{contactId} {"status","snoozedUntil"?} -> 200 with the
// conversation as GET /v1/conversations lists it.
func (s *Server) patchConversation(c *fiber.Ctx) error {
	var req conversationStatusRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	var in models.ConversationStatusInput
	if req.Status != nil {
		in.Status = *req.Status
	}
	if req.SnoozedUntil != nil {
		until, err := time.Parse(time.RFC3339, *req.SnoozedUntil)
		if err != nil {
			return models.Errorf(models.CodeValidation, "snoozedUntil must be an RFC 3339 time, such as 2026-12-24T09:00:00Z")
		}
		in.SnoozedUntil = &until
	}
	ctx, accountID, contactID := c.UserContext(), accountOf(c).ID, c.Params("contactId")
	if _, _, err := s.app.SetConversationStatus(ctx, accountID, contactID, in); err != nil {
		return err
	}
	conv, err := s.reports.Conversation(ctx, accountID, models.ReaderAPI, contactID)
	if err != nil {
		return err
	}
	return c.JSON(conv)
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
