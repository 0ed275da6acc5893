// Package api is the HTTP interface: a Fiber app whose handlers authenticate, validate, call models,
// enqueue work for the worker, and encode. It never calls a customer URL, an LLM or a provider.
package api

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

// requestTimeout is the deadline every request's context carries down to the database and Redis.
const requestTimeout = 15 * time.Second

// Deps are the api's dependencies, opened by cmd/api (or a test) and owned by the caller.
type Deps struct {
	Config *config.Config
	Store  *models.Store
	Redis  redis.UniversalClient
	Queue  *jobs.Queue
	Logger *slog.Logger
}

// Server is the api process's HTTP server.
type Server struct {
	cfg   *config.Config
	store *models.Store
	redis redis.UniversalClient
	queue *jobs.Queue
	log   *slog.Logger
	app   *fiber.App
}

// New builds the server and its routes.
func New(d Deps) *Server {
	s := &Server{cfg: d.Config, store: d.Store, redis: d.Redis, queue: d.Queue, log: d.Logger}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.app = fiber.New(fiber.Config{
		AppName:               "funnelchat",
		BodyLimit:             d.Config.MaxBodyBytes,
		ErrorHandler:          s.handleError,
		DisableStartupMessage: true,
		// Long query strings (lookups, cursors) fit; a request line or headers beyond this get 431.
		ReadBufferSize: 16 << 10,
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    120 * time.Second,
	})
	s.routes()
	return s
}

// App exposes the Fiber app, for tests that drive it with app.Test.
func (s *Server) App() *fiber.App { return s.app }

// Serve answers requests on ln until Shutdown; it terminates TLS itself when TLS_CERT_FILE is set.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.TLSEnabled() {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
		if err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	return s.app.Listener(ln)
}

// Shutdown stops accepting connections and waits for in-flight requests until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.app.ShutdownWithContext(ctx)
}

func (s *Server) routes() {
	s.app.Use(s.requestID, s.accessLog, s.recoverPanic, s.deadline)

	s.app.Get("/healthz", s.healthz)
	s.app.Get("/readyz", s.readyz)

	v1 := s.app.Group("/v1", s.requireHTTPS)
	// Authentication is attached per route rather than with Use, so that an unknown path is a 404 and
	// a wrong method a 405 before any key is asked for (DESIGN.md section 8).
	auth := s.authenticate(true)

	v1.Post("/api_key", auth, s.rotateAPIKey)

	v1.Post("/contacts", auth, s.createContact)
	v1.Get("/contacts", auth, s.findContact)
	v1.Get("/contacts/:id", auth, s.getContact)

	v1.Post("/lists", auth, s.createList)
	v1.Get("/lists", auth, s.listLists)
	v1.Get("/lists/:id", auth, s.getList)
	v1.Post("/lists/:id/contacts", auth, s.addToList)
	v1.Get("/lists/:id/contacts", auth, s.listContacts)
	v1.Post("/lists/:id/import", auth, s.importContacts)

	v1.Post("/incoming_custom_channel_message", auth, s.incomingMessage)
	v1.All("/incoming_custom_channel_message", methodNotAllowed)
	v1.Post("/send_custom_channel_message", auth, s.sendCustomMessage)

	v1.Get("/contacts/:id/messages", auth, s.contactMessages)
	v1.Post("/contacts/:id/messages", auth, s.humanReply)
	v1.Put("/contacts/:id/bot", auth, s.setContactBot)
	v1.Get("/messages/:id", auth, s.getMessage)
	v1.Get("/messages/:id/attempts", auth, s.messageAttempts)
	v1.Post("/messages/:id/redeliver", auth, s.redeliverMessage)
	v1.Get("/alerts", auth, s.listAlerts)

	v1.Get("/settings/webhook", auth, s.getWebhook)
	v1.Put("/settings/webhook", auth, s.putWebhook)
	v1.Post("/settings/webhook/test", auth, s.testWebhook)
	v1.Put("/settings/alert_webhook", auth, s.putAlertWebhook)
	v1.Put("/settings/channels/sms", auth, s.putSMSSettings)
	v1.Put("/settings/channels/whatsapp", auth, s.putWhatsAppSettings)

	// Provider webhooks authenticate with the provider's signature instead of an API key.
	v1.Post("/channels/sms/inbound", s.smsInbound)
	v1.Get("/channels/whatsapp/inbound", s.whatsAppVerify)
	v1.Post("/channels/whatsapp/inbound", s.whatsAppInbound)

	v1.Post("/campaigns", auth, s.createCampaign)
	v1.Get("/campaigns", auth, s.listCampaigns)
	v1.Get("/campaigns/:id", auth, s.getCampaign)
	v1.Patch("/campaigns/:id", auth, s.patchCampaign)
}
