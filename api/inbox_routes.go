package api

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// inboxRoutes mounts the inbox under /inbox (README, "The inbox"). The HTTPS rule of /v1 applies; every
// page needs a session, every form a CSRF token.
func (s *Server) inboxRoutes() {
	in := s.app.Group("/inbox", s.requireHTTPS, inboxSecurityHeaders)
	in.Get("/static/:name", inboxStatic) // Fiber's Get answers HEAD as well
	in.Get("/login", s.loginPage)
	in.Post("/login", s.login)

	auth := []fiber.Handler{s.requireSession, s.checkCSRF}
	// A page answers HEAD too, as every GET route of the api does.
	page := func(method, path string, h ...fiber.Handler) {
		if method == fiber.MethodGet {
			in.Add(fiber.MethodHead, path, slices.Concat(auth, h)...)
		}
		in.Add(method, path, slices.Concat(auth, h)...)
	}
	page(fiber.MethodPost, "/logout", s.logout)
	page(fiber.MethodGet, "/", s.conversationsPage)
	page(fiber.MethodGet, "/conversations/:id", s.conversationPage)
	page(fiber.MethodPost, "/conversations/:id/reply", s.reply)
	page(fiber.MethodPost, "/conversations/:id/bot", s.setBot)
	page(fiber.MethodPost, "/messages/:id/retry", s.retry)
	page(fiber.MethodGet, "/media/:id", s.media)
	page(fiber.MethodGet, "/alerts", s.alertsPage)
	page(fiber.MethodPost, "/alerts/:id/resolve", s.resolve)
	page(fiber.MethodGet, "/campaigns", s.campaignsPage)
	page(fiber.MethodPost, "/campaigns/:id/status", s.setCampaignStatus)
	page(fiber.MethodGet, "/settings", s.settingsPage)
	page(fiber.MethodPost, "/settings/api-key", s.generateKey)
	page(fiber.MethodPost, "/settings/webhook", s.saveWebhook)
	page(fiber.MethodPost, "/settings/webhook/test", s.sendTestEvent)
	page(fiber.MethodPost, "/settings/alert-webhook", s.saveAlertWebhook)
	page(fiber.MethodPost, "/settings/bot", s.saveBot)
	page(fiber.MethodPost, "/settings/password", s.changePassword)
	page(fiber.MethodPost, "/settings/team", s.requireOwner, s.addMember)
	page(fiber.MethodPost, "/settings/team/:id/remove", s.requireOwner, s.removeMember)
	page(fiber.MethodGet, "/events", s.inboxEvents)
}

// inboxEvents: GET /inbox/events streams the signed-in user's account events to the pages' script.
func (s *Server) inboxEvents(c *fiber.Ctx) error {
	if err := s.streamEvents(c, sessionOf(c).AccountID, true); err != nil {
		return c.Status(fiber.StatusServiceUnavailable).SendString(models.ErrorMessage(err))
	}
	return nil
}

// media: GET /inbox/media/{messageId} serves a file that came embedded in a message (a data URI), so
// that the page shows it without loading anything from another origin. It is sent as stored, under
// its own restrictive policy: an image the page previews, anything else a download.
func (s *Server) media(c *fiber.Ctx) error {
	sess := sessionOf(c)
	m, err := s.store.MessageByID(c.UserContext(), sess.AccountID, c.Params("id"))
	if err != nil {
		if models.ErrorCode(err) == models.CodeNotFound {
			return s.inboxNotFound(c)
		}
		return s.inboxFailure(c, err)
	}
	if m.MediaURL == nil {
		return s.inboxNotFound(c)
	}
	raw := *m.MediaURL
	if !strings.HasPrefix(strings.ToLower(raw), "data:") {
		// A link: the browser goes there itself (the user clicked it).
		if u, err := url.Parse(raw); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
			return c.Redirect(raw, fiber.StatusFound)
		}
		return s.inboxNotFound(c)
	}
	header, encoded, ok := strings.Cut(raw[len("data:"):], ",")
	if !ok || !strings.HasSuffix(strings.ToLower(header), ";base64") {
		return s.inboxNotFound(c)
	}
	body, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return s.inboxNotFound(c)
	}
	ctype := "application/octet-stream"
	if m.MediaContentType != nil {
		ctype = *m.MediaContentType
	}
	c.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	c.Set(fiber.HeaderCacheControl, "private, max-age=3600")
	if previewable[ctype] {
		c.Set(fiber.HeaderContentType, ctype)
	} else {
		c.Set(fiber.HeaderContentType, "application/octet-stream")
		c.Set(fiber.HeaderContentDisposition, `attachment; filename="attachment"`)
	}
	return c.Send(body)
}
