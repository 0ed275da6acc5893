// Command worker runs the background jobs (Procfile: worker): bot replies, webhook deliveries, paced
// campaign sends, follow-ups, alerts and sweeps. Run as many as the load needs.
package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"funnelchat/cmd/internal/boot"
	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

func main() {
	cfg := boot.LoadConfig()
	log := boot.Logger(os.Stdout, cfg)
	if err := run(cfg, log); err != nil {
		log.Error("worker stopped", "error", err.Error())
		os.Exit(1)
	}
}

func run(cfg *config.Config, log *slog.Logger) error {
	if cfg.Standalone {
		return errors.New("worker needs DATABASE_URL and REDIS_URL; in standalone mode the api runs the worker in-process")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	store, err := boot.OpenStore(cfg, cfg.WorkerDatabasePool())
	if err != nil {
		return err
	}
	defer store.Close()
	if err := boot.UseSecrets(ctx, cfg, store, log); err != nil {
		return err
	}
	rdb, err := boot.OpenRedis(cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()

	queue := jobs.NewQueue(rdb.Asynq, cfg)
	defer queue.Close()
	// Delivery outcomes, bot replies and alerts reach the inbox of every api process live.
	events := models.NewRedisEvents(rdb.Client, log)
	defer events.Close()
	store.UseEvents(events)
	worker := jobs.NewWorker(rdb.Asynq, cfg, jobs.NewHandler(store, cfg, log, queue, rdb.Client), log)
	if err := worker.Start(); err != nil {
		return err
	}
	log.Info("worker started", "concurrency", cfg.WorkerConcurrency)
	if cfg.MetricsPort != 0 {
		metrics := jobs.MetricsServer(cfg.MetricsPort)
		go func() {
			if err := metrics.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server stopped", "error", err.Error())
			}
		}()
		defer metrics.Close()
		log.Info("metrics served", "port", cfg.MetricsPort)
	}
	<-ctx.Done()
	log.Info("shutting down: finishing running tasks")
	worker.Shutdown()
	log.Info("worker stopped")
	return nil
}
