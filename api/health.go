package api

import (
	"github.com/gofiber/fiber/v2"
)

// healthz answers while the process is alive; it checks nothing else, so a platform does not restart a
// healthy process because a dependency is down.
func (s *Server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

// readyz answers 200 when PostgreSQL and Redis both answer, else 503 with what failed.
func (s *Server) readyz(c *fiber.Ctx) error {
	ctx := c.UserContext()
	checks := fiber.Map{"database": "ok", "redis": "ok"}
	ready := true
	if err := s.store.Ping(ctx); err != nil {
		checks["database"], ready = "unavailable", false
		s.log.WarnContext(ctx, "readiness: database", "error", err.Error())
	}
	if err := s.redis.Ping(ctx).Err(); err != nil {
		checks["redis"], ready = "unavailable", false
		s.log.WarnContext(ctx, "readiness: redis", "error", err.Error())
	}
	if !ready {
		return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{"status": "unavailable", "checks": checks})
	}
	return c.JSON(fiber.Map{"status": "ok", "checks": checks})
}
