// Package boot opens what the binaries share: configuration, logger, database and Redis, on PostgreSQL
// and Redis in production or on SQLite and an in-process Redis in standalone mode.
package boot

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
	var (
		store *models.Store
		err   error
	)
	if cfg.Standalone {
		store, err = models.OpenSQLite(filepath.Join(cfg.DataDir, "funnelchat.db"))
	} else {
		store, err = models.OpenPostgres(cfg.DatabaseURL, poolSize)
	}
	if err != nil {
		return nil, err
	}
	store.SetDefaultQuietHours(cfg.DefaultQuietHours)
	return store, nil
}

// Redis is the process's one Redis client. Every Redis user of the process works on it: go-redis's
// own users (rate limits, the key cache, de-duplication keys, pacing, sign-in attempts, pub/sub events)
// through Client, and asynq's (its client, servers, scheduler and inspector, and asynqmon) through
// Asynq, which hands out the same client (jobs.SharedRedis). So a process has one connection pool per
// Redis node and, on Redis Cluster, one map of the cluster.
type Redis struct {
	Client redis.UniversalClient
	Asynq  asynq.RedisConnOpt
	mini   *miniredis.Miniredis
}

// OpenRedis connects to REDIS_URL, through Redis Sentinel (REDIS_SENTINEL_ADDRS), or to a Redis
// Cluster (REDIS_CLUSTER_ADDRS); in standalone mode it starts an in-process Redis on a free loopback
// port. Nothing in the in-process Redis survives the process. The client connects on first use.
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
	opt.PoolSize = poolSize(cfg)
	var client redis.UniversalClient
	switch {
	case len(cfg.RedisClusterAddrs) > 0:
		client = openCluster(cfg, opt)
	case len(cfg.RedisSentinelAddrs) > 0:
		client = openSentinel(cfg, opt)
	default:
		client = redis.NewClient(opt)
	}
	return &Redis{Client: client, Asynq: jobs.SharedRedis{Client: client}, mini: mini}, nil
}

// poolSize is the connections the process's client keeps to each Redis node. Every Redis user of the
// process shares them (asynq's servers each had a pool of their own before), so a worker gets room for
// its tasks' and asynq's own commands beside go-redis's default of ten per CPU.
func poolSize(cfg *config.Config) int {
	return max(10*runtime.GOMAXPROCS(0), 2*cfg.WorkerConcurrency+10)
}

// openSentinel connects through Redis Sentinel (REDIS_SENTINEL_ADDRS, REDIS_SENTINEL_MASTER): each
// connection asks a sentinel for the current master, so after a failover new connections reach the
// promoted replica, and connections to the old master are dropped when the sentinels announce the
// switch. url (REDIS_URL) supplies only the credentials, the database number and TLS; the sentinels'
// own password, if they have one, is REDIS_SENTINEL_PASSWORD.
func openSentinel(cfg *config.Config, url *redis.Options) *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:       cfg.RedisSentinelMaster,
		SentinelAddrs:    cfg.RedisSentinelAddrs,
		SentinelPassword: cfg.RedisSentinelPassword,
		Username:         url.Username,
		Password:         url.Password,
		DB:               url.DB,
		TLSConfig:        url.TLSConfig,
		PoolSize:         url.PoolSize,
	})
}

// clusterReload is how often the cluster client reloads the cluster's map (which node serves which
// slot) while it is in use. go-redis reloads it at once after a MOVED answer, but a master that died
// answers nothing: until the map is reloaded, the commands of its slots keep going to the dead
// address, whatever replica the cluster has promoted meanwhile. go-redis's default is 60 s; with a
// second, the processes reach the promoted replica within a second of the promotion. Each reload is
// one CLUSTER SLOTS call to one node.
const clusterReload = time.Second

// openCluster connects to a Redis Cluster (REDIS_CLUSTER_ADDRS): the client learns the cluster's
// nodes and slots from those given, and sends each command to the master of its key's slot. url
// (REDIS_URL) supplies only the credentials and TLS; a cluster has only database 0 (config.Load
// refuses another).
func openCluster(cfg *config.Config, url *redis.Options) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                      cfg.RedisClusterAddrs,
		Username:                   url.Username,
		Password:                   url.Password,
		TLSConfig:                  url.TLSConfig,
		PoolSize:                   url.PoolSize,
		ClusterStateReloadInterval: clusterReload,
	})
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

// secretsKeyFile is where standalone mode keeps the key it creates when SECRETS_KEY is not set.
const secretsKeyFile = "secrets.key"

// Secrets returns the keys that encrypt stored secrets: SECRETS_KEY and SECRETS_KEY_PREVIOUS or, in
// standalone mode without SECRETS_KEY, a key kept in DATA_DIR/secrets.key, created on first start.
// The key sits next to the database file, so it protects a copy of the database on its own (a backup,
// a file sent for support), not a copy of the whole directory.
func Secrets(cfg *config.Config) (*models.Secrets, error) {
	k, err := loadSecrets(cfg)
	return k.secrets, err
}

// loadedSecrets is the keyring and, in standalone mode without SECRETS_KEY, the file its key came from.
type loadedSecrets struct {
	secrets *models.Secrets
	keyFile string // "" when the key came from SECRETS_KEY (or there is none)
	created bool   // keyFile was created by this call
}

func loadSecrets(cfg *config.Config) (loadedSecrets, error) {
	var l loadedSecrets
	key := cfg.SecretsKey
	if key == nil && cfg.Standalone {
		l.keyFile = filepath.Join(cfg.DataDir, secretsKeyFile)
		var err error
		if key, l.created, err = standaloneSecretsKey(l.keyFile); err != nil {
			return l, err
		}
	}
	var err error
	l.secrets, err = models.NewSecrets(key, cfg.SecretsKeyPrevious)
	return l, err
}

// standaloneSecretsKey reads the key file at path, creating it with a new key when it does not exist
// (created reports that).
func standaloneSecretsKey(path string) (key []byte, created bool, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, false, fmt.Errorf("secrets key: %w", err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, false, fmt.Errorf("secrets key: %w", err)
	}
	// O_EXCL: of two processes starting at once, one creates the file and both read it.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		_, werr := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return nil, false, fmt.Errorf("secrets key %s: %w", path, werr)
		}
		return key, true, nil
	case !errors.Is(err, fs.ErrExist):
		return nil, false, fmt.Errorf("secrets key: %w", err)
	}
	for range 50 { // the creator may still be writing it
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, false, fmt.Errorf("secrets key: %w", err)
		}
		if key, err = base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw))); err == nil && len(key) == 32 {
			return key, false, nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, false, fmt.Errorf("secrets key %s: not 32 bytes in base64; restore the file, or set SECRETS_KEY to the key the data directory's secrets were encrypted with", path)
}

// UseSecrets gives the store its keys and checks at start-up that they read every stored secret: a
// wrong or missing key stops the process with an error naming the variable, rather than letting it send
// ciphertext to a provider as a token. A PostgreSQL deployment without SECRETS_KEY still starts, and
// warns once.
func UseSecrets(ctx context.Context, cfg *config.Config, store *models.Store, log *slog.Logger) error {
	loaded, err := loadSecrets(cfg)
	if err != nil {
		return err
	}
	secrets := loaded.secrets
	store.UseSecrets(secrets)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	status, err := store.CheckSecrets(ctx)
	switch {
	case err != nil && loaded.created:
		// The data directory's key file was missing (deleted, or not restored with the database): the
		// new one just made cannot help, and must not take the place of the one to restore.
		_ = os.Remove(loaded.keyFile)
		return fmt.Errorf("%s is missing, and the stored secrets need the key it held (%w): restore the file this data directory was created with, or set SECRETS_KEY to its key", loaded.keyFile, err)
	case err != nil && loaded.keyFile != "":
		return fmt.Errorf("the key in %s, used because SECRETS_KEY is not set: %w", loaded.keyFile, err)
	case err != nil:
		return err
	}
	switch {
	case !secrets.Enabled():
		log.Warn("SECRETS_KEY is not set: provider credentials and webhook signing secrets are stored in plain text; set it (openssl rand -base64 32) and run admin secrets rotate")
	case status.Plain || status.Previous:
		log.Warn("some stored secrets are in plain text or under SECRETS_KEY_PREVIOUS; run admin secrets rotate to encrypt them under SECRETS_KEY")
	}
	return nil
}

// replicaWait is how long a key rotation waits for a Redis replica to confirm the revoked mark, with
// Sentinel or on a cluster (see models.Store.KeyRevocationsWaitForAReplica).
const replicaWait = time.Second

// UseKeyCache makes the store authenticate through the API-key cache in Redis. With Sentinel or on a
// cluster, a key rotation also waits for a replica to hold the revocation (on the master of the mark's
// slot), so that a failover cannot bring the old key back.
func UseKeyCache(cfg *config.Config, store *models.Store, rdb *Redis) {
	store.UseKeyCache(rdb.Client)
	if len(cfg.RedisSentinelAddrs) > 0 || len(cfg.RedisClusterAddrs) > 0 {
		store.KeyRevocationsWaitForAReplica(replicaWait)
	}
}
