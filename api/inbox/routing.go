package inbox

import (
	"github.com/gofiber/fiber/v2"
)

// Where the account's messages go is the owners' to change in the inbox (README, "The inbox"): the
// custom-channel webhook replies are posted to, the alert webhook, the channels' credentials, and the
// switch that turns the account's bot on or off. Members see them read only. A member who pauses the
// bot for one conversation is taking it over, not changing where messages go: that stays open to
// everyone. The API is not concerned: its key belongs to the account, not to a user, so
// PUT /v1/settings/webhook and its siblings are the account's own.

// mayRoute is the one rule for whether the signed-in user may change where the account's messages
// go; every route and page that changes or offers to change them asks it.
func mayRoute(sess *session) bool { return isOwner(sess) }

// requireRouting refuses, with 403 and nothing changed, a request to change where messages go from a
// user mayRoute does not allow, however the request was made.
func (h *Handler) requireRouting(c *fiber.Ctx) error {
	if !mayRoute(sessionOf(c)) {
		return h.routingRefused(c)
	}
	return c.Next()
}

// routingRefused is the 403 page of a change to where messages go that the user may not make.
func (h *Handler) routingRefused(c *fiber.Ctx) error {
	return h.render(c, fiber.StatusForbidden, "problem", h.view(c, "Not allowed", "settings", problemView{
		Heading: "Not allowed",
		Text:    "Only the account's owners can change where messages go: the webhooks, the channels and the bot's on/off switch. Nothing was changed.",
	}))
}
