// Package models holds the domain: bun models, migrations, and the operations both binaries need, as
// methods on Store. All SQL lives here, and it runs on PostgreSQL and on SQLite (standalone mode).
package models

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/dialect/pgdialect"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/migrate"
	"modernc.org/sqlite" // pure-Go SQLite driver, registered as "sqlite"
)

// SQLite's built-in LOWER folds only A-Z, so a search for "élodie" would miss "Élodie" there while
// PostgreSQL finds it; LOWER is replaced on SQLite connections with Go's Unicode lower-casing.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("lower", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case string:
			return strings.ToLower(v), nil
		case []byte:
			return strings.ToLower(string(v)), nil
		}
		return args[0], nil
	})
}

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is the service's persistence: every domain operation is a method on it.
type Store struct {
	db *bun.DB
	// ingest batches incoming messages on PostgreSQL (nil on SQLite).
	ingest *ingestBatcher
	// records batches the bot replies' records on PostgreSQL (nil on SQLite).
	records *recordBatcher
	// keys caches API keys in Redis (see UseKeyCache); nil: every request asks the database.
	keys *keyCache
	// stmts are the prepared statements of hot queries (PostgreSQL only; see prepared.go).
	stmts statements
	// events carries changes to live listeners (see UseEvents); nil: none.
	events EventPublisher
	// quietDefault is the operator's quiet hours (see SetDefaultQuietHours); nil: DefaultQuietHours.
	quietDefault *QuietHours
	// secrets seals and opens stored credentials and signing secrets (see UseSecrets); nil: stored
	// as they are.
	secrets *Secrets
	// clock is the time of the incoming messages this store creates, their ids' time included; nil:
	// time.Now. Only tests set it (export_test.go), to write around a partition's bound.
	clock func() time.Time
	// conversionHook is told each step the conversion to partitions reaches (tests only).
	conversionHook func(step string)
}

// clockNow is the store's clock.
func (s *Store) clockNow() time.Time {
	if s.clock != nil {
		return s.clock()
	}
	return time.Now()
}

// pgReadBuffer is the size of each connection's read buffer, which must hold the server's longest
// message (see OpenPostgres).
const pgReadBuffer = 64 << 10

// genericPlans sets plan_cache_mode = force_generic_plan on every connection (unless the URL sets it).
// It governs only the statements PostgreSQL keeps plans for: the hot prepared statements (prepared.go),
// the statements inside the ingest functions and triggers, and the foreign keys' checks; bun's other
// queries are planned once each, as before. All of those find rows by their keys. On the partitioned
// messages table (partitions.go) a generic plan prunes its partitions when it runs, but PostgreSQL's
// choice between plans counted every partition in the generic plan's cost, so it chose a custom plan,
// planned anew on each execution: a message read by id, a reply's update or an attempt's key check cost
// 40 to 60 µs more each (a PL/pgSQL loop of 5,000 of each, 3 partitions, on the 2-core machine of
// README "Performance"), which is what the prepared statements were made to save.
func genericPlans(conf *pgdriver.Config) {
	if conf.ConnParams == nil {
		conf.ConnParams = map[string]any{}
	}
	if _, set := conf.ConnParams["plan_cache_mode"]; !set {
		conf.ConnParams["plan_cache_mode"] = "force_generic_plan"
	}
}

// OpenPostgres connects to PostgreSQL at url (postgres://...). The pool is sized for one api or worker
// process; poolSize <= 0 keeps the default.
func OpenPostgres(url string, poolSize int) (*Store, error) {
	s := &Store{db: OpenPostgresDB(url, poolSize, 0)}
	s.ingest = newIngestBatcher(s)
	s.records = newRecordBatcher(s)
	return s, nil
}

// OpenPostgresDB opens a pool of poolSize connections (<= 0: database/sql's default) to the PostgreSQL
// database at url, made as the store's are. It is the store's own pool and that of a second database,
// the read replica (models/report). dialTimeout > 0 bounds each connection attempt (pgdriver's default
// is 5 s), unless the URL sets connect_timeout.
func OpenPostgresDB(url string, poolSize int, dialTimeout time.Duration) *bun.DB {
	// The driver reads each message of the server whole into its buffer: an error raised inside a
	// trigger that one of the ingest's functions fired carries both statements' text in its CONTEXT,
	// past the driver's default 4 KiB, and was read as "bufio: buffer full" (so a deadlock was not
	// retried as one). 64 KiB a connection holds any of ours.
	opts := []pgdriver.Option{pgdriver.WithBufferSize(pgReadBuffer), genericPlans}
	if dialTimeout > 0 {
		opts = append(opts, pgdriver.WithDialTimeout(dialTimeout))
	}
	sqldb := sql.OpenDB(pgConnector{pgdriver.NewConnector(append(opts, pgdriver.WithDSN(url))...)})
	if poolSize > 0 {
		sqldb.SetMaxOpenConns(poolSize)
		sqldb.SetMaxIdleConns(poolSize)
	}
	return bun.NewDB(sqldb, pgdialect.New())
}

// OpenSQLite opens (creating if needed) the SQLite database file at path, for standalone mode and tests
// on a machine with only Go.
func OpenSQLite(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite: %w", err)
	}
	// SQLite allows one writer at a time; a single connection serializes every statement in the process
	// instead of failing with SQLITE_BUSY under concurrent writes. Code inside RunInTx must therefore use
	// the transaction it is given, never s.db.
	sqldb.SetMaxOpenConns(1)
	return &Store{db: bun.NewDB(sqldb, sqlitedialect.New())}, nil
}

// Close releases the connection pool.
func (s *Store) Close() error {
	if s.ingest != nil {
		s.ingest.close()
	}
	if s.records != nil {
		s.records.close()
	}
	s.closeStatements()
	return s.db.Close()
}

// readSnapshot runs fn's reads against one snapshot of the database: a read-only REPEATABLE READ
// transaction on PostgreSQL; on SQLite a transaction on its one connection, which no write can enter
// before it ends.
func (s *Store) readSnapshot(ctx context.Context, fn func(ctx context.Context, db bun.IDB) error) error {
	var opts *sql.TxOptions
	if !s.IsSQLite() {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
	}
	return s.db.RunInTx(ctx, opts, func(ctx context.Context, tx bun.Tx) error { return fn(ctx, tx) })
}

// ReadSnapshot is readSnapshot for the read models outside this package (models/report).
func (s *Store) ReadSnapshot(ctx context.Context, fn func(ctx context.Context, db bun.IDB) error) error {
	return s.readSnapshot(ctx, fn)
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

// DB exposes the bun handle for tests and tools that inspect rows directly.
func (s *Store) DB() *bun.DB { return s.db }

// IsSQLite reports whether the store runs on SQLite.
func (s *Store) IsSQLite() bool { return s.db.Dialect().Name() == dialect.SQLite }

// Migrate applies every pending migration, completes the partitioning of messages and consent_events
// should a run have stopped half way through it (partitions.go), and makes their partitions for the
// current month and PartitionMonthsAhead months ahead. It is safe to run again. On PostgreSQL
// concurrent runs wait for each other (an advisory lock), so the second finds the work done.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrate(ctx, "")
}

// migrateLockKey is the advisory lock that Migrate holds on PostgreSQL.
const migrateLockKey = 0x66635f6d69677261 // "fc_migra"

// migrate applies the pending migrations; with before set, only those whose names sort before it, and
// nothing else (tests that build the schema as it was).
func (s *Store) migrate(ctx context.Context, before string) error {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	all := migrate.NewMigrations()
	if err := all.Discover(sub); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	all.Add(ingestFunctionMigration(s.db))
	all.Add(ingestBatchSetBasedMigration(s.db))
	all.Add(accountForeignKeysMigration(s.db))
	all.Add(assigneeForeignKeyMigration(s.db))
	all.Add(ingestBatchForeignKeyMigration(s.db))
	all.Add(ingestReopenMigration(s.db))
	all.Add(contactSearchMigration(s.db))
	all.Add(conversationTableMigration(s.db))
	all.Add(ingestBatchKnownContactsMigration(s.db))
	all.Add(campaignReportIndexesMigration(s.db))
	all.Add(partitionMigration(s))
	all.Add(campaignFirstReplyMigration(s.db))
	all.Add(batchKeepsMigration(s.db))
	all.Add(replyLocksContactFirstMigration(s.db))
	all.Add(recordBotRepliesMigration(s.db))
	migrations := all
	if before != "" {
		migrations = migrate.NewMigrations()
		for _, m := range all.Sorted() {
			if m.Name < before {
				migrations.Add(m)
			}
		}
	}
	if !s.IsSQLite() {
		// bun's own lock (below) makes a second run fail rather than wait.
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(?)", int64(migrateLockKey)); err != nil {
			return fmt.Errorf("migrate: lock: %w", err)
		}
		defer conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(?)", int64(migrateLockKey)) //nolint:errcheck // closing the session releases it too
	}
	m := migrate.NewMigrator(s.db, migrations)
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("migrate: init: %w", err)
	}
	if err := m.Lock(ctx); err != nil {
		return fmt.Errorf("migrate: lock (another migration running?): %w", err)
	}
	defer m.Unlock(ctx) //nolint:errcheck // the lock row is removed; a failure leaves nothing to undo
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if before != "" || s.IsSQLite() {
		return nil
	}
	// bun marks a migration applied before it runs: a conversion that stopped half way is completed
	// here (each of its steps finds what is done), and the partitions ahead are made.
	if err := s.convertToPartitions(ctx, time.Now()); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// isUniqueViolation reports whether err is a unique-constraint violation on either backend.
func isUniqueViolation(err error) bool {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		return pgErr.Field('C') == "23505"
	}
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// isForeignKeyViolation reports whether err is a foreign-key violation on either backend.
func isForeignKeyViolation(err error) bool {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		return pgErr.Field('C') == "23503"
	}
	return err != nil && strings.Contains(err.Error(), "FOREIGN KEY constraint failed")
}
