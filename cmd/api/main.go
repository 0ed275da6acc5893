// Command api is the HTTP server (Procfile: web). With neither DATABASE_URL nor REDIS_URL set it runs the
// whole service in one process: SQLite, an in-process Redis and the worker (standalone mode).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"funnelchat/api"
	"funnelchat/cmd/internal/boot"
	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
	"funnelchat/models/report"
)

func main() {
	cfg := boot.LoadConfig()
	log := boot.Logger(os.Stdout, cfg)
	if err := run(cfg, log); err != nil {
		log.Error("api stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(cfg *config.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	store, err := boot.OpenStore(cfg, cfg.APIDatabasePool())
	if err != nil {
		return err
	}
	defer store.Close()
	rdb, err := boot.OpenRedis(cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()

	queue := jobs.NewQueue(rdb.Asynq, cfg)
	defer queue.Close()
	// Changes to messages and alerts reach the inbox and GET /v1/events of every api process.
	events := models.NewRedisEvents(rdb.Client, log)
	defer events.Close()
	store.UseEvents(events)
	if !cfg.Standalone {
		// In standalone mode the admin CLI cannot reach the in-process Redis to mark a rotated key.
		boot.UseKeyCache(cfg, store, rdb)
		// The release phase (admin migrate) has created the tables; standalone mode migrates below.
		if err := boot.UseSecrets(ctx, cfg, store, log); err != nil {
			return err
		}
	}
	var worker *jobs.Worker
	if cfg.Standalone {
		log.Warn("standalone mode: SQLite in DATA_DIR, in-process Redis and worker; queued jobs do not survive a restart (the database does). Set DATABASE_URL and REDIS_URL for production.",
			"data_dir", cfg.DataDir)
		if err := boot.PrepareStandalone(ctx, store, os.Stdout, log); err != nil {
			return err
		}
		if err := boot.UseSecrets(ctx, cfg, store, log); err != nil {
			return err
		}
		worker = jobs.NewWorker(rdb.Asynq, cfg, jobs.NewHandler(store, cfg, log, queue, rdb.Client), log)
		if err := worker.Start(); err != nil {
			return err
		}
	}

	var replica *report.Replica
	if cfg.DatabaseReplicaURL != "" {
		// Sized like the primary's pool: the routed reads are some of the requests, and all of them
		// when the replica is in use and the page views are the load.
		replica = report.OpenReplica(report.ReplicaConfig{
			PrimaryURL: cfg.DatabaseURL, URL: cfg.DatabaseReplicaURL, PoolSize: cfg.APIDatabasePool(), MaxLag: cfg.ReplicaMaxLag, Logger: log,
		})
		defer replica.Close()
	}

	srv := api.New(api.Deps{Config: cfg, Store: store, Redis: rdb.Client, Queue: queue, Logger: log, AsynqRedis: rdb.Asynq, Replica: replica})
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", cfg.Port))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("api listening", "addr", ln.Addr().String(), "tls", cfg.TLSEnabled(), "standalone", cfg.Standalone)

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Error("http shutdown", "error", err.Error())
	}
	if worker != nil {
		worker.Shutdown()
	}
	log.Info("api stopped")
	return nil
}
