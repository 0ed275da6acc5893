package api

import (
	_ "embed"

	"github.com/gofiber/fiber/v2"
)

// openAPIDocument is the OpenAPI 3 description of every endpoint the server registers. The tests load
// it, check that its operations and the registered routes are the same set, and validate every request
// and response they exchange with the server against it, so it cannot drift from the handlers.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI: GET /v1/openapi.json -> the OpenAPI document, without authentication (the /v1 HTTPS rule
// still applies).
func (s *Server) openAPI(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(openAPIDocument)
}
