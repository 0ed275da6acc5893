package api

import (
	"github.com/gofiber/fiber/v2"
)

// rotateAPIKey: POST /v1/api_key -> 201 {"apiKey"}. The key used for this call stops working at once.
func (s *Server) rotateAPIKey(c *fiber.Ctx) error {
	key, err := s.app.RotateAPIKey(c.UserContext(), accountOf(c).ID)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{"apiKey": key})
}
