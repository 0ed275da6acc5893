// Package api is the HTTP interface: a Fiber app whose handlers authenticate, validate, call models,
// enqueue work for the worker, and encode. It never calls a customer URL, an LLM or a provider.
package api

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/hibiken/asynq"
	"github.com/hibiken/asynqmon"
	"github.com/redis/go-redis/v9"

	"funnelchat/api/app"
	"funnelchat/api/inbox"
	"funnelchat/api/web"
	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
	"funnelchat/models/report"
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
	// AsynqRedis is where the queues live, for the asynqmon dashboard at /monitoring/ and the queue
	// metrics; the process's one client (jobs.SharedRedis) in the binaries.
	AsynqRedis asynq.RedisConnOpt
	// Replica serves the lag-tolerant reads while it is close enough behind (DATABASE_REPLICA_URL,
	// models/report); nil: every read on Store.
	Replica *report.Replica
}

// Server is the api process's HTTP server.
type Server struct {
	cfg   *config.Config
	store *models.Store
	// reports runs the reads behind the pages and exports (models/report).
	reports *report.Reader
	redis   redis.UniversalClient
	queue   *jobs.Queue
	log     *slog.Logger

	asynqRedis asynq.RedisConnOpt
	monitor    *asynqmon.HTTPHandler
	// checks sends the requests' checksScript calls to Redis in pipelines (checks_batch.go).
	checks *checksBatcher
	// app runs the use cases the JSON API shares with the inbox.
	app   *app.App
	hub   *web.Hub
	https web.HTTPS
	fiber *fiber.App
	// chunked keeps the incoming endpoint's error form for chunked bodies over the limit (bodylimit.go).
	chunked chunkedIncoming
}

// channels are the endpoints of the built-in channels: their settings, and the providers' inbound
// webhooks, which authenticate with the provider's signature instead of an API key.
type channels struct {
	cfg   *config.Config
	store *models.Store
	app   *app.App
	https web.HTTPS
	log   *slog.Logger
}

// credits are the agency endpoints: balances, transactions, sub-accounts, grants and auto-recharge.
type credits struct {
	store *models.Store
	app   *app.App
	redis redis.UniversalClient
	log   *slog.Logger
}

// New builds the server and its routes.
func New(d Deps) *Server {
	s := &Server{cfg: d.Config, store: d.Store, reports: report.New(d.Store), redis: d.Redis, queue: d.Queue, log: d.Logger, asynqRedis: d.AsynqRedis}
	// The reads a replica may serve are counted by target (api/metrics.go) with or without one.
	s.reports.Route(d.Replica, readObserver)
	if d.Replica != nil {
		useReplicaMetrics(d.Replica)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = web.Logger(s.log)
	s.hub = web.NewHub(s.redis, s.log)
	s.checks = newChecksBatcher(s.redis)
	s.https = web.HTTPSOf(d.Config)
	s.app = app.New(app.Deps{Config: d.Config, Store: d.Store, Queue: d.Queue, Redis: d.Redis, Logger: s.log})
	s.fiber = fiber.New(fiber.Config{
		AppName:               "funnelchat",
		BodyLimit:             d.Config.MaxBodyBytes,
		ErrorHandler:          s.handleError,
		DisableStartupMessage: true,
		// Long query strings (lookups, cursors) fit; a request line or headers beyond this get 431.
		ReadBufferSize: 16 << 10,
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    120 * time.Second,
		// Fiber's methods, and methodOther for every method it does not know (see otherMethods).
		RequestMethods: append(slices.Clone(fiber.DefaultMethods), methodOther),
	})
	srv := s.fiber.Server()
	srv.Handler = s.chunked.clearing(otherMethods(srv.Handler))
	srv.HeaderReceived = s.chunked.headerReceived
	s.routes()
	return s
}

// App exposes the Fiber app, for tests that drive it with app.Test.
func (s *Server) App() *fiber.App { return s.fiber }

// Serve answers requests on ln until Shutdown; it terminates TLS itself when TLS_CERT_FILE is set.
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.TLSEnabled() {
		cert, err := tls.LoadX509KeyPair(s.cfg.TLSCertFile, s.cfg.TLSKeyFile)
		if err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	}
	return s.fiber.Listener(ln)
}

// Shutdown stops accepting connections and waits for in-flight requests until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	// Open event streams would hold the graceful stop until ctx ends; their clients reconnect to
	// another process.
	s.hub.Close()
	err := s.fiber.ShutdownWithContext(ctx)
	s.checks.close()
	if _, shared := s.asynqRedis.(jobs.SharedRedis); s.monitor != nil && !shared {
		// asynqmon closes the clients it made; a shared one is its owner's to close.
		_ = s.monitor.Close()
	}
	return err
}

func (s *Server) routes() {
	s.fiber.Use(web.RequestID, s.accessLog, s.recoverPanic, web.Deadline(requestTimeout), checkMethod)

	s.fiber.Get("/healthz", s.healthz)
	s.fiber.Get("/readyz", s.readyz)
	s.fiber.Get("/metrics", s.metricsHandler())
	s.mountMonitoring()
	inbox.New(inbox.Deps{Config: s.cfg, App: s.app, Reports: s.reports, Redis: s.redis, Hub: s.hub, Logger: s.log}).
		Mount(s.fiber.Group("/inbox", s.https.Require))

	v1 := s.fiber.Group("/v1", s.https.Require)
	ch := &channels{cfg: s.cfg, store: s.store, app: s.app, https: s.https, log: s.log}
	cr := &credits{store: s.store, app: s.app, redis: s.redis, log: s.log}
	cs := &consent{store: s.store, reports: s.reports, app: s.app, log: s.log}
	v1.Get("/openapi.json", s.openAPI)
	// Authentication is attached per route rather than with Use, so that an unknown path is a 404 and
	// a wrong method a 405 before any key is asked for (README, "API at a glance").
	auth := s.authenticate(true)
	// authed registers an endpoint behind the API key and its rate limit. A GET endpoint answers HEAD
	// too, as Fiber's Get does (Add does not): the same handlers, so the same status and headers, and
	// fasthttp leaves the body out.
	authed := func(method, path string, h fiber.Handler) {
		if method == fiber.MethodGet {
			v1.Add(fiber.MethodHead, path, auth, s.rateLimit, h)
		}
		v1.Add(method, path, auth, s.rateLimit, h)
	}

	authed(fiber.MethodPost, "/api_key", s.rotateAPIKey)

	authed(fiber.MethodPost, "/contacts", s.createContact)
	authed(fiber.MethodGet, "/contacts", s.findContact)
	authed(fiber.MethodGet, "/contacts/:id", s.getContact)
	authed(fiber.MethodGet, "/contacts/:id/consent", cs.getConsent)
	authed(fiber.MethodPut, "/contacts/:id/consent", cs.putConsent)
	authed(fiber.MethodGet, "/consent/export", cs.exportConsent)

	authed(fiber.MethodPost, "/lists", s.createList)
	authed(fiber.MethodGet, "/lists", s.listLists)
	authed(fiber.MethodGet, "/lists/:id", s.getList)
	authed(fiber.MethodPost, "/lists/:id/contacts", s.addToList)
	authed(fiber.MethodGet, "/lists/:id/contacts", s.listContacts)
	authed(fiber.MethodDelete, "/lists/:id/contacts/:contactId", s.removeFromList)
	authed(fiber.MethodPost, "/lists/:id/import", s.importContacts)

	// The incoming endpoint checks its key, rate limit and messageSid itself, in one Redis call once the
	// body is decoded (incomingMessage); the order of its answers is that of authed routes.
	v1.Post("/incoming_custom_channel_message", s.incomingMessage)
	v1.All("/incoming_custom_channel_message", methodNotAllowed)
	authed(fiber.MethodPost, "/send_custom_channel_message", s.sendCustomMessage)

	authed(fiber.MethodGet, "/contacts/:id/messages", s.contactMessages)
	authed(fiber.MethodPost, "/contacts/:id/messages", s.humanReply)
	authed(fiber.MethodPut, "/contacts/:id/bot", s.setContactBot)
	authed(fiber.MethodPost, "/contacts/:id/goal", s.reachGoal)
	authed(fiber.MethodPut, "/contacts/:id/assignee", s.assign)
	authed(fiber.MethodPost, "/contacts/:id/notes", s.addNote)
	authed(fiber.MethodGet, "/contacts/:id/notes", s.listNotes)
	authed(fiber.MethodGet, "/users", s.listUsers)
	authed(fiber.MethodPatch, "/users/:id", s.patchUser)
	authed(fiber.MethodGet, "/canned_replies", s.listCannedReplies)
	authed(fiber.MethodPost, "/canned_replies", s.saveCannedReply)
	authed(fiber.MethodPut, "/canned_replies/:id", s.saveCannedReply)
	authed(fiber.MethodDelete, "/canned_replies/:id", s.deleteCannedReply)
	authed(fiber.MethodGet, "/messages/:id", s.getMessage)
	authed(fiber.MethodGet, "/messages/:id/attempts", s.messageAttempts)
	authed(fiber.MethodPost, "/messages/:id/redeliver", s.redeliverMessage)
	authed(fiber.MethodGet, "/alerts", s.listAlerts)
	authed(fiber.MethodPost, "/alerts/:id/resolve", s.resolveAlert)
	authed(fiber.MethodGet, "/conversations", s.listConversations)
	authed(fiber.MethodPatch, "/conversations/:contactId", s.patchConversation)
	authed(fiber.MethodPost, "/contacts/:id/read", s.markRead)
	authed(fiber.MethodGet, "/events", s.events)

	authed(fiber.MethodGet, "/settings/webhook", s.getWebhook)
	authed(fiber.MethodPut, "/settings/webhook", s.putWebhook)
	authed(fiber.MethodPost, "/settings/webhook/test", s.testWebhook)
	authed(fiber.MethodPut, "/settings/alert_webhook", s.putAlertWebhook)
	authed(fiber.MethodGet, "/settings/bot", s.getBotSettings)
	authed(fiber.MethodPut, "/settings/bot", s.putBotSettings)
	authed(fiber.MethodGet, "/settings/compliance", cs.getCompliance)
	authed(fiber.MethodPut, "/settings/compliance", cs.putCompliance)
	authed(fiber.MethodPut, "/settings/channels/sms", ch.putSMSSettings)
	authed(fiber.MethodPut, "/settings/channels/whatsapp", ch.putWhatsAppSettings)
	authed(fiber.MethodPut, "/settings/channels/messenger", ch.putMessengerSettings)
	authed(fiber.MethodPut, "/settings/channels/instagram", ch.putInstagramSettings)

	// Provider webhooks authenticate with the provider's signature instead of an API key.
	v1.Post("/channels/sms/inbound", ch.smsInbound)
	v1.Get("/channels/whatsapp/inbound", ch.metaVerify(models.ChannelWhatsApp))
	v1.Post("/channels/whatsapp/inbound", ch.whatsAppInbound)
	v1.Get("/channels/messenger/inbound", ch.metaVerify(models.ChannelMessenger))
	v1.Post("/channels/messenger/inbound", ch.metaInbound(models.ChannelMessenger))
	v1.Get("/channels/instagram/inbound", ch.metaVerify(models.ChannelInstagram))
	v1.Post("/channels/instagram/inbound", ch.metaInbound(models.ChannelInstagram))

	authed(fiber.MethodGet, "/credits", cr.getCredits)
	authed(fiber.MethodGet, "/credits/transactions", cr.creditTransactions)
	authed(fiber.MethodGet, "/subaccounts", cr.listSubAccounts)
	authed(fiber.MethodPut, "/subaccounts/:id/auto_recharge", cr.putAutoRecharge)
	// Credit grants take the key in a header only (README, "Agencies and credits"): the query form is refused with 401.
	v1.Post("/subaccounts/credits", s.authenticate(false), s.rateLimit, cr.grantCredits)

	authed(fiber.MethodPost, "/campaigns", s.createCampaign)
	authed(fiber.MethodGet, "/campaigns", s.listCampaigns)
	authed(fiber.MethodGet, "/campaigns/:id", s.getCampaign)
	authed(fiber.MethodPatch, "/campaigns/:id", s.patchCampaign)
	authed(fiber.MethodGet, "/campaigns/:id/sends", s.campaignSends)
	authed(fiber.MethodGet, "/campaigns/:id/report", s.campaignReport)
}
