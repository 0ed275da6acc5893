package api

import (
	"bytes"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// The team's side of conversations (README, "The inbox"): users and their availability, assignment,
// private notes and canned replies. An API key acts as the account, and writes as its owner.

// listUsers: GET /v1/users -> {"data":[{"id","email","role","available"}]}.
func (s *Server) listUsers(c *fiber.Ctx) error {
	users, err := s.store.TeamMembers(c.UserContext(), accountOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"data": users})
}

// patchUser: PATCH /v1/users/{id} {"available"} -> 200 the user.
func (s *Server) patchUser(c *fiber.Ctx) error {
	var req struct {
		Available *bool `json:"available"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Available == nil {
		return models.Errorf(models.CodeValidation, "available (true or false) is required")
	}
	u, err := s.app.SetAvailable(c.UserContext(), accountOf(c).ID, c.Params("id"), *req.Available)
	if err != nil {
		return err
	}
	return c.JSON(u)
}

// assign: PUT /v1/contacts/{id}/assignee {"userId": id | null} -> 200 {"contactId","assignee"}.
func (s *Server) assign(c *fiber.Ctx) error {
	var req struct {
		UserID json.RawMessage `json:"userId"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	var userID *string
	switch {
	case req.UserID == nil:
		return models.Errorf(models.CodeValidation, "userId is required: a user's id, or null to unassign")
	case !bytes.Equal(req.UserID, []byte("null")):
		if err := json.Unmarshal(req.UserID, &userID); err != nil {
			return models.Errorf(models.CodeValidation, "userId must be a string or null")
		}
	}
	assignee, err := s.app.Assign(c.UserContext(), accountOf(c).ID, c.Params("id"), userID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"contactId": c.Params("id"), "assignee": assignee})
}

// addNote: POST /v1/contacts/{id}/notes {"body"} -> 201 the note, written as the account's owner.
func (s *Server) addNote(c *fiber.Ctx) error {
	var req struct {
		Body string `json:"body"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	acc := accountOf(c)
	note, err := s.app.AddNote(c.UserContext(), acc.ID, c.Params("id"), acc.OwnerUserID, req.Body)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(note)
}

// listNotes: GET /v1/contacts/{id}/notes -> {"data":[note...]}, oldest first.
func (s *Server) listNotes(c *fiber.Ctx) error {
	notes, err := s.store.Notes(c.UserContext(), accountOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	if notes == nil {
		notes = []models.Note{}
	}
	return c.JSON(fiber.Map{"data": notes})
}

// cannedReplyRequest is the body of POST and PUT /v1/canned_replies.
type cannedReplyRequest struct {
	Shortcut string `json:"shortcut"`
	Body     string `json:"body"`
}

// listCannedReplies: GET /v1/canned_replies -> {"data":[reply...]} by shortcut.
func (s *Server) listCannedReplies(c *fiber.Ctx) error {
	replies, err := s.store.CannedReplies(c.UserContext(), accountOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"data": replies})
}

// saveCannedReply: POST /v1/canned_replies -> 201; PUT /v1/canned_replies/{id} -> 200.
func (s *Server) saveCannedReply(c *fiber.Ctx) error {
	var req cannedReplyRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	r, err := s.app.SaveCannedReply(c.UserContext(), accountOf(c).ID, c.Params("id"), req.Shortcut, req.Body)
	if err != nil {
		return err
	}
	if c.Method() == fiber.MethodPost {
		c.Status(fiber.StatusCreated)
	}
	return c.JSON(r)
}

// deleteCannedReply: DELETE /v1/canned_replies/{id} -> 204.
func (s *Server) deleteCannedReply(c *fiber.Ctx) error {
	if err := s.app.DeleteCannedReply(c.UserContext(), accountOf(c).ID, c.Params("id")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}
