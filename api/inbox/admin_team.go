package inbox

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// The team's own settings on the settings page: whether the signed-in user takes hand-offs in turn
// (App.SetAvailable, the user's own only), and the account's canned replies, which members and owners
// alike add, edit and delete.

// saveAvailability: POST /inbox/settings/availability {available: "true"|"false"} says whether the
// signed-in user takes hand-offs in turn. The form posts the state it asks for, not a toggle, so that a
// page left open and pressed twice does what it says.
func (h *Handler) saveAvailability(c *fiber.Ctx) error {
	const back = settingsPath + "#availability"
	sess := sessionOf(c)
	var available bool
	switch c.FormValue("available") {
	case "true":
		available = true
	case "false":
	default:
		return h.done(c, back, false, "Choose whether you take hand-offs.")
	}
	if _, err := h.app.SetAvailable(c.UserContext(), sess.AccountID, sess.UserID, available); err != nil {
		return h.actionFailed(c, back, err)
	}
	if available {
		return h.done(c, back, true, "You take hand-offs in turn: conversations the bot hands over are assigned to you too.")
	}
	return h.done(c, back, true, "You are away: hand-offs go to the others who are available.")
}

// cannedView is the canned replies' section.
type cannedView struct {
	Replies []models.CannedReply
	// Draft is a refused save, shown with what was typed and why ("" ID: the add form).
	Draft                *cannedDraft
	MaxShortcut, MaxBody int
}

// cannedDraft is a canned reply as typed into a form the store refused.
type cannedDraft struct {
	ID, Shortcut, Body, Error string
}

// For returns the draft of the reply with id (nil when the refused form was another).
func (v cannedView) For(id string) *cannedDraft {
	if v.Draft != nil && v.Draft.ID == id {
		return v.Draft
	}
	return nil
}

// cannedFieldsView fills the fields of a canned reply's form.
type cannedFieldsView struct {
	Shortcut, Body       string
	MaxShortcut, MaxBody int
}

// Fields are the form's fields with shortcut and body in them.
func (v cannedView) Fields(shortcut, body string) cannedFieldsView {
	return cannedFieldsView{Shortcut: shortcut, Body: body, MaxShortcut: v.MaxShortcut, MaxBody: v.MaxBody}
}

// cannedFields are a canned reply's fields as the store names them in errors, and as the form does.
var cannedFields = []fieldLabel{{Field: "shortcut", Label: "shortcut"}, {Field: "body", Label: "reply text"}}

// addCannedReply: POST /inbox/settings/canned {shortcut, body}.
func (h *Handler) addCannedReply(c *fiber.Ctx) error { return h.saveCannedReply(c, "") }

// editCannedReply: POST /inbox/settings/canned/{id} {shortcut, body}.
func (h *Handler) editCannedReply(c *fiber.Ctx) error {
	return h.saveCannedReply(c, strings.Clone(c.Params("id")))
}

// saveCannedReply creates (id "") or replaces a canned reply. A refused one (a bad shortcut or text,
// a shortcut the account has already) comes back in its form with what was typed and the store's
// reason, as a 422 page; a saved one is a 303 to the section.
func (h *Handler) saveCannedReply(c *fiber.Ctx, id string) error {
	sess := sessionOf(c)
	shortcut, body := c.FormValue("shortcut"), strings.ReplaceAll(c.FormValue("body"), "\r\n", "\n")
	r, err := h.app.SaveCannedReply(c.UserContext(), sess.AccountID, id, shortcut, body)
	switch {
	case err == nil:
	case models.ErrorCode(err) == models.CodeValidation || models.ErrorCode(err) == models.CodeConflict:
		draft := &cannedDraft{ID: id, Shortcut: shortcut, Body: body, Error: formMessage(err, cannedFields) + " Nothing was saved."}
		return h.renderSettingsStatus(c, fiber.StatusUnprocessableEntity, settingsView{Canned: cannedView{Draft: draft}})
	case models.ErrorCode(err) == models.CodeNotFound:
		return h.done(c, settingsPath+"#canned", false, "That canned reply is gone: someone deleted it meanwhile. Nothing was saved.")
	default:
		return h.actionFailed(c, settingsPath+"#canned", err)
	}
	if id == "" {
		return h.done(c, settingsPath+"#canned", true, "Canned reply /"+r.Shortcut+" added.")
	}
	return h.done(c, settingsPath+"#canned", true, "Canned reply /"+r.Shortcut+" saved.")
}

// deleteCannedReply: POST /inbox/settings/canned/{id}/delete.
func (h *Handler) deleteCannedReply(c *fiber.Ctx) error {
	sess := sessionOf(c)
	if err := h.app.DeleteCannedReply(c.UserContext(), sess.AccountID, c.Params("id")); err != nil {
		if models.ErrorCode(err) == models.CodeNotFound {
			return h.done(c, settingsPath+"#canned", true, "That canned reply was deleted already.")
		}
		return h.actionFailed(c, settingsPath+"#canned", err)
	}
	return h.done(c, settingsPath+"#canned", true, "Canned reply deleted.")
}
