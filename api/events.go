package api

import (
	"github.com/gofiber/fiber/v2"
)

// events: GET /v1/events -> the key's account's events as Server-Sent Events.
func (s *Server) events(c *fiber.Ctx) error {
	return s.hub.Stream(c, accountOf(c).ID, false)
}
