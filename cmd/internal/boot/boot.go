// Package boot opens what the binaries share: configuration, logger, database and Redis, on PostgreSQL
// and Redis in production or on SQLite and an in-process Redis in standalone mode.
package boot

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

// LoadConfig reads the environment; on error it prints the message and exits 1, as every binary would.
func LoadConfig() *config.Config {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return cfg
}

// Logger writes structured JSON lines to w at the configured level.
func Logger(w io.Writer, cfg *config.Config) *slog.Logger {
	return slog.New(jobs.NewLogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: cfg.LogLevel})))
}

// OpenStore opens PostgreSQL (DATABASE_URL) or, in standalone mode, SQLite in DATA_DIR.
func OpenStore(cfg *config.Config, poolSize int) (*models.Store, error) {
	if cfg.Standalone {
		return models.OpenSQLite(filepath.Join(cfg.DataDir, "funnelchat.db"))
	}
	return models.OpenPostgres(cfg.DatabaseURL, poolSize)
}

// Redis is a connection to Redis for go-redis (rate limits, de-duplication) and for asynq (jobs).
type Redis struct {
	Client *redis.Client
	Asynq  asynq.RedisConnOpt
	mini   *miniredis.Miniredis
}

// OpenRedis connects to REDIS_URL or, in standalone mode, starts an in-process Redis on a free
// loopback port. Nothing in the in-process Redis survives the process.
func OpenRedis(cfg *config.Config) (*Redis, error) {
	url := cfg.RedisURL
	var mini *miniredis.Miniredis
	if cfg.Standalone {
		mini = miniredis.NewMiniRedis()
		if err := mini.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("start in-process redis: %w", err)
		}
		url = "redis://" + mini.Addr()
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	asynqOpt, err := asynq.ParseRedisURI(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	return &Redis{Client: redis.NewClient(opt), Asynq: asynqOpt, mini: mini}, nil
}

// Close closes the client and stops the in-process Redis, if any.
func (r *Redis) Close() {
	_ = r.Client.Close()
	if r.mini != nil {
		r.mini.Close()
	}
}

// DemoEmail is the email of the demo account that standalone mode creates, and of its owner.
const DemoEmail = "demo@example.com"

// PrepareStandalone migrates the SQLite database and, when it has no account yet, creates a demo
// account and prints its API key once on a line of its own ("demo API key: <key>"), followed by a
// generated inbox password for the account's owner ("demo inbox password: <password>"). A database
// from before inbox passwords, whose demo owner has none, gets one, printed the same way once.
func PrepareStandalone(ctx context.Context, store *models.Store, out io.Writer, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	n, err := store.CountAccounts(ctx)
	if err != nil {
		return fmt.Errorf("count accounts: %w", err)
	}
	if n == 0 {
		created, err := store.CreateAccount(ctx, models.NewAccount{Email: DemoEmail, Name: "Demo"})
		if err != nil {
			return fmt.Errorf("create demo account: %w", err)
		}
		// The key goes out at once: should the password fail, the next start sets one (below) and the
		// key is not lost.
		fmt.Fprintf(out, "demo API key: %s\n", created.APIKey)
		return setDemoPassword(ctx, store, created.User.ID, out)
	}
	owner, err := store.UserByEmail(ctx, DemoEmail)
	if err != nil && models.ErrorCode(err) != models.CodeNotFound {
		return fmt.Errorf("demo owner: %w", err)
	}
	if owner != nil && owner.PasswordHash == nil {
		log.Info("standalone mode: the demo owner had no inbox password; printing a new one once (reset it with: go run ./cmd/admin user set-password --email " + DemoEmail + ")")
		return setDemoPassword(ctx, store, owner.ID, out)
	}
	log.Info("standalone mode: using the existing database; the demo API key and inbox password were printed on first start (rotate the key with: go run ./cmd/admin key rotate --email " + DemoEmail + "; reset the password with: go run ./cmd/admin user set-password --email " + DemoEmail + ")")
	return nil
}

// setDemoPassword gives the demo owner a generated password and prints it ("demo inbox password: ...").
func setDemoPassword(ctx context.Context, store *models.Store, userID string, out io.Writer) error {
	password := models.GeneratePassword()
	if err := store.SetPassword(ctx, userID, password); err != nil {
		return fmt.Errorf("set the demo inbox password: %w", err)
	}
	fmt.Fprintf(out, "demo inbox password: %s\n", password)
	return nil
}
