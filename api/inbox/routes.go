package inbox

import (
	"encoding/base64"
	"log/slog"
	"net/url"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"funnelchat/api/app"
	"funnelchat/api/web"
	"funnelchat/config"
	"funnelchat/models"
	"funnelchat/models/report"
)

// Deps are the inbox's dependencies, owned by the caller (the api's Server, which mounts it).
type Deps struct {
	Config *config.Config
	// App runs the use cases the inbox shares with the JSON API; its store is the inbox's.
	App *app.App
	// Reports runs the reads behind the pages (models/report); nil: a reader over App's store.
	Reports *report.Reader
	Redis   redis.UniversalClient
	// Hub streams the accounts' live events to the pages.
	Hub    *web.Hub
	Logger *slog.Logger
}

// Handler serves the inbox: the account team's web app (README, "The inbox"). Its store is for reads
// and for the writes only the inbox makes (sessions, users, passwords), its reports for the reads that
// make up its pages (models/report); a write the JSON API makes too goes through app, so that both obey
// one rule.
type Handler struct {
	cfg   *config.Config
	app   *app.App
	store *models.Store
	// reports runs the reads behind the pages: the conversation list, the campaign report, the
	// deliveries and the counts.
	reports *report.Reader
	redis   redis.UniversalClient
	hub     *web.Hub
	https   web.HTTPS
	log     *slog.Logger
}

// New returns the inbox over d.
func New(d Deps) *Handler {
	h := &Handler{cfg: d.Config, app: d.App, store: d.App.Store(), reports: d.Reports, redis: d.Redis, hub: d.Hub, https: web.HTTPSOf(d.Config), log: d.Logger}
	if h.reports == nil {
		h.reports = report.New(h.store)
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.log = web.Logger(h.log)
	return h
}

// Mount registers the inbox's pages on in, a router under /inbox whose middleware has given the
// request its id and deadline and applied the HTTPS rule. Every page needs a session, every form a
// CSRF token.
func (h *Handler) Mount(in fiber.Router) {
	in.Use(inboxSecurityHeaders, h.unrouted)
	in.Get("/static/:name", inboxStatic) // Fiber's Get answers HEAD as well
	in.Get("/login", h.loginPage)
	in.Post("/login", h.login)

	auth := []fiber.Handler{h.requireSession, h.checkCSRF}
	// A page answers HEAD too, as every GET route of the api does.
	page := func(method, path string, h ...fiber.Handler) {
		if method == fiber.MethodGet {
			in.Add(fiber.MethodHead, path, slices.Concat(auth, h)...)
		}
		in.Add(method, path, slices.Concat(auth, h)...)
	}
	page(fiber.MethodPost, "/logout", h.logout)
	page(fiber.MethodGet, "/", h.conversationsPage)
	page(fiber.MethodGet, "/conversations/:id", h.conversationPage)
	page(fiber.MethodPost, "/conversations/:id/reply", h.reply)
	page(fiber.MethodPost, "/conversations/:id/bot", h.setBot)
	page(fiber.MethodPost, "/conversations/:id/consent", h.recordConsent)
	page(fiber.MethodPost, "/conversations/:id/goal", h.reachGoal)
	page(fiber.MethodPost, "/conversations/:id/assignee", h.assign)
	page(fiber.MethodPost, "/conversations/:id/status", h.setStatus)
	page(fiber.MethodPost, "/conversations/:id/notes", h.addNote)
	page(fiber.MethodGet, "/contacts", h.contactsPage)
	page(fiber.MethodGet, "/contacts/:id", h.contactPage)
	page(fiber.MethodPost, "/contacts/:id", h.editContact)
	page(fiber.MethodPost, "/messages/:id/retry", h.retry)
	page(fiber.MethodGet, "/media/:id", h.media)
	page(fiber.MethodGet, "/alerts", h.alertsPage)
	page(fiber.MethodPost, "/alerts/:id/resolve", h.resolve)
	page(fiber.MethodGet, "/counts", h.counts)
	page(fiber.MethodGet, "/campaigns", h.campaignsPage)
	page(fiber.MethodGet, "/campaigns/new", h.newCampaignPage)
	page(fiber.MethodPost, "/campaigns/new", h.createCampaign)
	page(fiber.MethodGet, "/campaigns/:id", h.campaignPage)
	page(fiber.MethodGet, "/campaigns/:id/edit", h.editCampaignPage)
	page(fiber.MethodPost, "/campaigns/:id/edit", h.updateCampaign)
	page(fiber.MethodGet, "/deliveries", h.deliveriesPage)
	page(fiber.MethodPost, "/deliveries/retry-all", h.retryAllFailed)
	page(fiber.MethodPost, "/deliveries/:id/retry", h.retryDelivery)
	page(fiber.MethodGet, "/campaigns/:id/report.csv", h.campaignReportCSV)
	page(fiber.MethodPost, "/campaigns/:id/status", h.setCampaignStatus)
	page(fiber.MethodGet, "/settings", h.settingsPage)
	page(fiber.MethodPost, "/settings/api-key", h.requireOwner, h.generateKey)
	page(fiber.MethodPost, "/settings/webhook", h.requireRouting, h.saveWebhook)
	page(fiber.MethodPost, "/settings/webhook/test", h.sendTestEvent)
	page(fiber.MethodPost, "/settings/alert-webhook", h.requireRouting, h.saveAlertWebhook)
	page(fiber.MethodPost, "/settings/bot", h.saveBot)
	page(fiber.MethodPost, "/settings/compliance", h.requireOwner, h.saveCompliance)
	page(fiber.MethodPost, "/settings/password", h.changePassword)
	page(fiber.MethodPost, "/settings/team", h.requireOwner, h.addMember)
	page(fiber.MethodPost, "/settings/team/:id/remove", h.requireOwner, h.removeMember)
	page(fiber.MethodPost, "/settings/availability", h.saveAvailability)
	page(fiber.MethodPost, "/settings/canned", h.addCannedReply)
	page(fiber.MethodPost, "/settings/canned/:id", h.editCannedReply)
	page(fiber.MethodPost, "/settings/canned/:id/delete", h.deleteCannedReply)
	page(fiber.MethodPost, "/settings/channels/:kind", h.requireRouting, h.saveChannel)
	page(fiber.MethodGet, "/events", h.inboxEvents)
	h.listRoutes(page)
}

// inboxEvents: GET /inbox/events streams the signed-in user's account events to the pages' script.
func (h *Handler) inboxEvents(c *fiber.Ctx) error {
	if err := h.hub.Stream(c, sessionOf(c).AccountID, true); err != nil {
		return c.Status(fiber.StatusServiceUnavailable).SendString(models.ErrorMessage(err))
	}
	return nil
}

// media: GET /inbox/media/{messageId} serves a file that came embedded in a message (a data URI), so
// that the page shows it without loading anything from another origin. It is sent as stored, under
// its own restrictive policy: an image the page previews, anything else a download.
func (h *Handler) media(c *fiber.Ctx) error {
	sess := sessionOf(c)
	m, err := h.store.MessageByID(c.UserContext(), sess.AccountID, c.Params("id"))
	if err != nil {
		if models.ErrorCode(err) == models.CodeNotFound {
			return h.inboxNotFound(c)
		}
		return h.inboxFailure(c, err)
	}
	if m.MediaURL == nil {
		return h.inboxNotFound(c)
	}
	raw := *m.MediaURL
	if !strings.HasPrefix(strings.ToLower(raw), "data:") {
		// A link: the browser goes there itself (the user clicked it).
		if u, err := url.Parse(raw); err == nil && (u.Scheme == "https" || u.Scheme == "http") {
			return c.Redirect(raw, fiber.StatusFound)
		}
		return h.inboxNotFound(c)
	}
	header, encoded, ok := strings.Cut(raw[len("data:"):], ",")
	if !ok || !strings.HasSuffix(strings.ToLower(header), ";base64") {
		return h.inboxNotFound(c)
	}
	body, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return h.inboxNotFound(c)
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
