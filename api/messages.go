package api

import (
	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// getMessage: GET /v1/messages/{id} -> the message with its delivery status, error and attempt count.
func (s *Server) getMessage(c *fiber.Ctx) error {
	m, err := s.store.MessageByID(c.UserContext(), accountOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(m)
}

// messageAttempts: GET /v1/messages/{id}/attempts -> {"data":[{at, statusCode, error, durationMs}]}.
func (s *Server) messageAttempts(c *fiber.Ctx) error {
	attempts, err := s.store.MessageAttempts(c.UserContext(), accountOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(pageBody(attempts, ""))
}

// redeliverMessage: POST /v1/messages/{id}/redeliver queues a failed outgoing message again, as the
// outgoing door decides now -> 200 with the message: pending (nextAttemptAt set when deferred past
// the contact's quiet hours), or still failed with the door's reason as its error (OPTED_OUT: ...).
// 409 CONFLICT for a message that is not a failed outgoing one.
func (s *Server) redeliverMessage(c *fiber.Ctx) error {
	m, err := s.app.Redeliver(c.UserContext(), accountOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(m)
}

// contactMessages: GET /v1/contacts/{id}/messages -> the conversation, oldest first, paged.
func (s *Server) contactMessages(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	msgs, next, err := s.store.ContactMessages(c.UserContext(), accountOf(c).ID, c.Params("id"), page)
	if err != nil {
		return err
	}
	return c.JSON(pageBody(msgs, next))
}

// humanReply: POST /v1/contacts/{id}/messages {"body","channel"?} -> 201 message. A reply typed by a
// team member; it also pauses the bot for the contact.
func (s *Server) humanReply(c *fiber.Ctx) error {
	var req struct {
		Body    *string `json:"body"`
		Channel *string `json:"channel"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	m, err := s.app.TeamReply(c.UserContext(), accountOf(c).ID, c.Params("id"), "", str(req.Body), str(req.Channel))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(m)
}

// setContactBot: PUT /v1/contacts/{id}/bot {"active": bool} pauses or resumes the bot for the contact.
func (s *Server) setContactBot(c *fiber.Ctx) error {
	var req struct {
		Active *bool `json:"active"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Active == nil {
		return models.Errorf(models.CodeValidation, "active (true or false) is required")
	}
	contact, err := s.app.SetBotActive(c.UserContext(), accountOf(c).ID, c.Params("id"), *req.Active)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"contactId": contact.ID, "active": !contact.BotPaused})
}

// listAlerts: GET /v1/alerts[?all=true] -> {"data":[{id, contactId, messageId, reason, createdAt,
// resolvedAt}], "nextCursor"}, newest first: the open alerts, or all of them with all=true.
func (s *Server) listAlerts(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	all, err := boolQuery(c, "all")
	if err != nil {
		return err
	}
	alerts, next, err := s.store.Alerts(c.UserContext(), accountOf(c).ID, models.AlertFilter{All: all != nil && *all}, page)
	if err != nil {
		return err
	}
	return c.JSON(pageBody(alerts, next))
}
