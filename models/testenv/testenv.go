// Package testenv gives each test package its own database and its own Redis: real PostgreSQL and
// Redis when TEST_DATABASE_URL and TEST_REDIS_URL are set, SQLite and miniredis otherwise, so the same
// behaviour suite runs on both backends. A configured service that does not answer fails the run; it
// is never skipped.
package testenv

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun/driver/pgdriver"

	"funnelchat/models"
)

// testPoolSize bounds each test package's connections: go test runs packages in parallel, and with the
// api and worker processes that the process tests start they must all fit in PostgreSQL's default
// max_connections (100).
const testPoolSize = 16

// Env is one test package's backends.
type Env struct {
	// Backend is "postgres" or "sqlite".
	Backend string
	Store   *models.Store
	// DatabaseURL is the package's own PostgreSQL database, empty on SQLite.
	DatabaseURL string
	// SQLitePath is the package's SQLite file, empty on PostgreSQL.
	SQLitePath string
	Redis      *redis.Client
	// RedisURL addresses the package's own Redis (a claimed database number, or a miniredis).
	RedisURL string
	Asynq    asynq.RedisConnOpt
	// SecretsKey is the package's SECRETS_KEY (base64): Store encrypts stored secrets with it, as a
	// deployment with a key does, and Getenv passes it on.
	SecretsKey string

	// adminURL is TEST_DATABASE_URL, for creating databases (PostgreSQL only).
	adminURL string
	cleanup  []func()
}

// Postgres reports whether the real services are in use.
func (e *Env) Postgres() bool { return e.Backend == "postgres" }

// Main sets up the package's backends in *env, runs the package's own setup functions, runs the tests
// and tears down; use it as func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }. A setup
// failure fails the package.
func Main(m *testing.M, env **Env, setup ...func() error) int {
	e, err := Setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		return 1
	}
	*env = e
	for _, f := range setup {
		if err := f(); err != nil {
			fmt.Fprintln(os.Stderr, "testenv: setup:", err)
			e.Close()
			return 1
		}
	}
	code := m.Run()
	e.Close()
	return code
}

// Setup creates and migrates a fresh database and claims a fresh Redis.
func Setup() (*Env, error) {
	e := &Env{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbURL, redisURL := os.Getenv("TEST_DATABASE_URL"), os.Getenv("TEST_REDIS_URL")
	if (dbURL == "") != (redisURL == "") {
		return nil, errors.New("set both TEST_DATABASE_URL and TEST_REDIS_URL, or neither")
	}
	var err error
	if dbURL != "" {
		e.Backend = "postgres"
		e.adminURL = dbURL
		err = e.setupPostgres(ctx, dbURL)
		if err == nil {
			err = e.setupRedis(ctx, redisURL)
		}
	} else {
		e.Backend = "sqlite"
		err = e.setupEmbedded()
	}
	if err == nil {
		err = e.Store.Migrate(ctx)
	}
	if err == nil {
		err = e.useSecrets()
	}
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close drops the database and empties the Redis database it claimed.
func (e *Env) Close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
	e.cleanup = nil
}

func (e *Env) setupPostgres(ctx context.Context, adminURL string) error {
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(adminURL)))
	defer admin.Close()
	if err := admin.PingContext(ctx); err != nil {
		return fmt.Errorf("TEST_DATABASE_URL does not answer: %w", err)
	}
	name := "funnelchat_test_" + randomHex(6)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("create test database: %w", err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return err
	}
	u.Path = "/" + name
	e.DatabaseURL = u.String()
	e.cleanup = append(e.cleanup, func() {
		if os.Getenv("TEST_KEEP_DATABASE") == "1" {
			// A benchmark's filled database, kept to measure the service against it
			// (docs/performance.md, "Inbox at an agency's size").
			fmt.Fprintln(os.Stderr, "testenv: kept database", name)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(adminURL)))
		defer admin.Close()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			fmt.Fprintln(os.Stderr, "testenv: drop database:", err)
		}
	})
	store, err := models.OpenPostgres(e.DatabaseURL, testPoolSize)
	if err != nil {
		return err
	}
	e.Store = store
	e.cleanup = append(e.cleanup, func() { _ = store.Close() })
	return nil
}

// lockKey marks a Redis database number as taken by a running test package or test. asynq's keys are
// global within a database, so packages running in parallel must not share one.
const lockKey = "funnelchat:testenv:lock"

// claimScript takes a database number: if no one holds its lock key, it empties the database and sets
// the key, in one step. As three commands (SETNX, FLUSHDB, SET), the lock was gone between the FLUSHDB
// and the SET, and a second claimant took the same number: a CI run's test then saw another test's
// worker run its tasks and fail them as not found.
var claimScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('FLUSHDB')
redis.call('SET', KEYS[1], ARGV[1], 'EX', 3600)
return 1`)

// ClaimRedisDB claims a free database number (1-15) on baseURL's server for the caller alone and
// returns a client of it and its URL; release empties it, and with it the claim.
func ClaimRedisDB(ctx context.Context, baseURL string) (client *redis.Client, dbURL string, release func(), err error) {
	opt, err := redis.ParseURL(baseURL)
	if err != nil {
		return nil, "", nil, fmt.Errorf("TEST_REDIS_URL: %w", err)
	}
	for db := 1; db < 16; db++ {
		o := *opt
		o.DB = db
		client := redis.NewClient(&o)
		took, err := claimScript.Run(ctx, client, []string{lockKey}, os.Getpid()).Int()
		if err != nil {
			_ = client.Close()
			return nil, "", nil, fmt.Errorf("TEST_REDIS_URL does not answer: %w", err)
		}
		if took == 0 {
			_ = client.Close()
			continue
		}
		u, _ := url.Parse(baseURL)
		u.Path = fmt.Sprintf("/%d", db)
		return client, u.String(), func() {
			_ = client.FlushDB(context.Background()).Err()
			_ = client.Close()
		}, nil
	}
	return nil, "", nil, errors.New("no free Redis database (1-15) on TEST_REDIS_URL: are stale test processes running?")
}

func (e *Env) setupRedis(ctx context.Context, baseURL string) error {
	client, dbURL, release, err := ClaimRedisDB(ctx, baseURL)
	if err != nil {
		return err
	}
	o := client.Options()
	e.Redis = client
	e.RedisURL = dbURL
	e.Asynq = asynq.RedisClientOpt{Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig}
	e.cleanup = append(e.cleanup, release)
	return nil
}

func (e *Env) setupEmbedded() error {
	dir, err := os.MkdirTemp("", "funnelchat-test-")
	if err != nil {
		return err
	}
	e.cleanup = append(e.cleanup, func() { _ = os.RemoveAll(dir) })
	e.SQLitePath = filepath.Join(dir, "test.db")
	store, err := models.OpenSQLite(e.SQLitePath)
	if err != nil {
		return err
	}
	e.Store = store
	e.cleanup = append(e.cleanup, func() { _ = store.Close() })

	mini := miniredis.NewMiniRedis()
	if err := mini.StartAddr("127.0.0.1:0"); err != nil {
		return err
	}
	e.cleanup = append(e.cleanup, mini.Close)
	e.RedisURL = "redis://" + mini.Addr()
	e.Redis = redis.NewClient(&redis.Options{Addr: mini.Addr()})
	e.cleanup = append(e.cleanup, func() { _ = e.Redis.Close() })
	e.Asynq = asynq.RedisClientOpt{Addr: mini.Addr()}
	return nil
}

// Getenv returns a getenv function for config.Load: the package's backends as DATABASE_URL and
// REDIS_URL (none on SQLite), with overrides on top ("KEY=VALUE" pairs).
func (e *Env) Getenv(overrides ...string) func(string) string {
	vars := map[string]string{}
	if e.Postgres() {
		vars["DATABASE_URL"] = e.DatabaseURL
		vars["REDIS_URL"] = e.RedisURL
	}
	vars["SECRETS_KEY"] = e.SecretsKey
	for _, kv := range overrides {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return func(k string) string { return vars[k] }
}

// FreshStore returns a store on a new, migrated database of the package's backend (without a secrets
// key), dropped when the test ends: for tests that change what every row of a table holds.
func (e *Env) FreshStore(t testing.TB) *models.Store {
	t.Helper()
	store := e.FreshUnmigratedStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := store.Migrate(ctx); err != nil {
		t.Fatalf("fresh store: %v", err)
	}
	return store
}

// FreshUnmigratedStore is FreshStore without the migrations: for tests that build the schema as it was
// before a migration.
func (e *Env) FreshUnmigratedStore(t testing.TB) *models.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var store *models.Store
	var err error
	if e.Postgres() {
		fresh := &Env{}
		if err = fresh.setupPostgres(ctx, e.adminURL); err == nil {
			store = fresh.Store
		}
		t.Cleanup(fresh.Close)
	} else {
		store, err = models.OpenSQLite(filepath.Join(t.TempDir(), "fresh.db"))
		if err == nil {
			t.Cleanup(func() { _ = store.Close() })
		}
	}
	if err != nil {
		t.Fatalf("fresh store: %v", err)
	}
	return store
}

// useSecrets gives the package a random secrets key.
func (e *Env) useSecrets() error {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	e.SecretsKey = base64.StdEncoding.EncodeToString(key)
	secrets, err := models.NewSecrets(key, nil)
	if err != nil {
		return err
	}
	e.Store.UseSecrets(secrets)
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
