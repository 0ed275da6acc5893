package api

import (
	"crypto/subtle"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/basicauth"
	"github.com/hibiken/asynqmon"
)

// mountMonitoring serves asynqmon (queues, tasks, retries, archived tasks) at /monitoring/ behind HTTP
// basic auth with ADMIN_USER and ADMIN_PASSWORD, under the same HTTPS rule as /v1. Without those
// variables it is not mounted at all (404).
func (s *Server) mountMonitoring() {
	if s.cfg.AdminUser == "" || s.asynqRedis == nil {
		return
	}
	s.monitor = asynqmon.New(asynqmon.Options{RootPath: "/monitoring", RedisConnOpt: s.asynqRedis})
	user, password := []byte(s.cfg.AdminUser), []byte(s.cfg.AdminPassword)
	s.fiber.Use("/monitoring", s.https.Require, basicauth.New(basicauth.Config{
		Realm: "funnelchat monitoring",
		Authorizer: func(u, p string) bool {
			// Both compared in constant time, and both always compared.
			okUser := subtle.ConstantTimeCompare([]byte(u), user)
			okPassword := subtle.ConstantTimeCompare([]byte(p), password)
			return okUser&okPassword == 1
		},
		Unauthorized: func(c *fiber.Ctx) error {
			c.Set(fiber.HeaderWWWAuthenticate, `Basic realm="funnelchat monitoring"`)
			return c.Status(fiber.StatusUnauthorized).SendString("authentication required")
		},
	}), adaptor.HTTPHandler(s.monitor))
}
