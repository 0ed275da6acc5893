package api

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/inbox"
	"funnelchat/api/web"
	"funnelchat/models"
)

// Codes that only the HTTP layer produces.
const (
	codeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	codeRateLimited      = "RATE_LIMITED"
)

// incomingPath answers every error in the string form {"error":"..."} (the OpenAPI document's StringError).
const incomingPath = "/v1/incoming_custom_channel_message"

var statusByCode = map[string]int{
	models.CodeValidation:        fiber.StatusBadRequest,
	models.CodeInvalidJSON:       fiber.StatusBadRequest,
	models.CodeInvalidPhone:      fiber.StatusBadRequest,
	models.CodeUnauthorized:      fiber.StatusUnauthorized,
	models.CodeForbidden:         fiber.StatusForbidden,
	web.CodeHTTPSRequired:        fiber.StatusForbidden,
	models.CodeNotFound:          fiber.StatusNotFound,
	codeMethodNotAllowed:         fiber.StatusMethodNotAllowed,
	models.CodeConflict:          fiber.StatusConflict,
	models.CodeOptedOut:          fiber.StatusConflict,
	models.CodeNoAddress:         fiber.StatusConflict,
	models.CodeTooLarge:          fiber.StatusRequestEntityTooLarge,
	models.CodeIdempotencyReused: fiber.StatusUnprocessableEntity,
	codeRateLimited:              fiber.StatusTooManyRequests,
	models.CodeUnavailable:       fiber.StatusServiceUnavailable,
	models.CodeInternal:          fiber.StatusInternalServerError,
}

// handleError is the one place where errors become status codes and bodies. Domain errors keep their
// code and message; a failing dependency is 503 UNAVAILABLE; anything else is logged and answered as
// 500 INTERNAL without detail. Every answer carries X-Request-Id, also a refusal by the HTTP server
// before any middleware ran.
func (s *Server) handleError(c *fiber.Ctx, err error) error {
	web.EnsureRequestID(c)
	status, code, msg := classify(err)
	if status >= 500 {
		s.log.ErrorContext(c.UserContext(), "request failed", "error", err.Error(), "code", code,
			"method", c.Method(), "path", c.Path())
	}
	if status == fiber.StatusServiceUnavailable {
		c.Set(fiber.HeaderRetryAfter, "5")
	}
	if status == fiber.StatusRequestEntityTooLarge && strings.HasPrefix(c.Path(), "/inbox/") {
		return inbox.TooLarge(c, s.cfg.MaxBodyBytes) // the import's upload: a page, not JSON
	}
	if c.Path() == incomingPath || s.chunked.take(&c.Context().Request.Header) {
		return c.Status(status).JSON(fiber.Map{"error": msg})
	}
	return c.Status(status).JSON(fiber.Map{"error": fiber.Map{"code": code, "message": msg}})
}

func classify(err error) (status int, code, msg string) {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case fiber.StatusNotFound:
			return fe.Code, models.CodeNotFound, "no such endpoint"
		case fiber.StatusMethodNotAllowed:
			return fe.Code, codeMethodNotAllowed, "method not allowed on this endpoint"
		case fiber.StatusRequestEntityTooLarge:
			return fe.Code, models.CodeTooLarge, "request body is too large"
		}
		if fe.Code < 500 {
			// Transport-level refusals from fasthttp (header too large, malformed request line...).
			return fe.Code, models.CodeValidation, fe.Message
		}
		return fiber.StatusInternalServerError, models.CodeInternal, "internal error; retry shortly"
	}
	var de *models.Error
	if errors.As(err, &de) {
		if status, ok := statusByCode[de.Code]; ok {
			return status, de.Code, de.Message
		}
		return fiber.StatusBadRequest, de.Code, de.Message
	}
	if models.IsUnavailable(err) {
		return fiber.StatusServiceUnavailable, models.CodeUnavailable, "a dependency is unavailable; retry shortly"
	}
	return fiber.StatusInternalServerError, models.CodeInternal, "internal error; retry shortly"
}
