package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/driver/pgdriver"
	"github.com/uptrace/bun/migrate"
)

// On PostgreSQL, messages and consent_events are range-partitioned by month (README, "Partitioning").
//
// The key is the id, never a time a client gives: a message id is "msg_" and a lower-case ULID, a
// consent event's "cns_" and one, both made from the server's clock when the row is created (newIDAt),
// so ids sort by creation time and a month's rows are an id range. A month's partition holds the ids
// from idBound of its first millisecond (UTC) to idBound of the next month's, so PRIMARY KEY (id) and
// the foreign key of message_attempts to messages (id) keep holding across partitions. consent_events.at
// is not the key: the caller may date an event in the past, and it would land in a month that retention
// has dropped, or in none. A bot reply's id (BotReplyID) is one millisecond after its message's, so it
// lands in its message's month, or in the next when the message came in the month's last millisecond.
//
// Every id falls in a partition or is refused: there is no DEFAULT partition. The partition of the table
// as it was before (the_table_legacy) holds every id below its upper bound, from MINVALUE; the monthly
// partitions are made PartitionMonthsAhead months ahead by admin migrate and by the worker's hourly
// maintenance task, so an id from the clock always has one. An id beyond the last made partition (the
// clock ran months past a worker and a release that both stopped; or an id that is not ours, such as
// "msg_x", which sorts after every ULID) fails its INSERT with SQLSTATE 23514, "no partition of relation
// ... found for row", which IsUnavailable counts as UNAVAILABLE (503, retried by the client once the
// partition is made). A DEFAULT partition would take such rows silently, and then each partition made
// after them would have to scan it under an exclusive lock and fail on the first row of its range.
//
// The unique keys that a partitioned table cannot keep (a unique index must contain the partition key)
// became claims, rows of small plain tables written in the statement that writes the message, where the
// unique index entry was: message_claims (account_id, external_id) for the messageSid's de-duplication
// (the ingest functions, ingest_pg.go), reply_claims (reply_to_id) for one reply per message (the
// trigger messages_claim_reply, for every writer of a reply). Both are exact across partitions.

// PartitionMonthsAhead is how many months after the current one have their partitions made already.
const PartitionMonthsAhead = 3

// partitionedTable is a table that is partitioned by month on PostgreSQL.
type partitionedTable struct {
	name, prefix string
	// leftBehind are the indexes of the table before partitioning that the partitioned table does not
	// take, dropped once the conversion is done: the unique ones (replaced by claims) and
	// messages_account_idx, which no query reads since the conversation list reads the conversations
	// table (a message by account and id is found by its primary key).
	leftBehind []string
	// claims says that the table has the claims (messages).
	claims bool
}

var partitionedTables = []partitionedTable{
	{name: "messages", prefix: prefixMessage, claims: true,
		leftBehind: []string{"messages_external_key", "messages_reply_key", "messages_account_idx"}},
	{name: "consent_events", prefix: prefixConsent},
}

// monthStart is the first instant (UTC) of t's month; addMonths moves it by n months.
func monthStart(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

func addMonths(month time.Time, n int) time.Time { return month.AddDate(0, n, 0) }

// partitionName is the name of table's partition for the month that begins at month.
func partitionName(table string, month time.Time) string {
	return fmt.Sprintf("%s_p%04d%02d", table, month.Year(), int(month.Month()))
}

func legacyName(table string) string     { return table + "_legacy" }
func rangeCheckName(table string) string { return table + "_partition_range" }

// partitionInfo is one partition and its bounds: lo "" is MINVALUE, hi "" MAXVALUE.
type partitionInfo struct {
	name, lo, hi  string
	detachPending bool
}

var boundRE = regexp.MustCompile(`^FOR VALUES FROM \((MINVALUE|'[^']*')\) TO \((MAXVALUE|'[^']*')\)$`)

// listPartitions returns table's partitions, lowest first.
func listPartitions(ctx context.Context, db bun.IDB, table string) ([]partitionInfo, error) {
	rows, err := db.QueryContext(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), i.inhdetachpending
		FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []partitionInfo
	for rows.Next() {
		var p partitionInfo
		var bound string
		if err := rows.Scan(&p.name, &bound, &p.detachPending); err != nil {
			return nil, err
		}
		m := boundRE.FindStringSubmatch(bound)
		if m == nil {
			return nil, fmt.Errorf("partition %s of %s: bounds %q are not a range this service makes", p.name, table, bound)
		}
		p.lo, p.hi = strings.Trim(strings.TrimPrefix(m[1], "MINVALUE"), "'"), strings.Trim(strings.TrimPrefix(m[2], "MAXVALUE"), "'")
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b partitionInfo) int { return strings.Compare(a.lo, b.lo) })
	return out, nil
}

// covers reports whether one of parts holds every id from lo to hi.
func covers(parts []partitionInfo, lo, hi string) bool {
	for _, p := range parts {
		if !p.detachPending && p.lo <= lo && (p.hi == "" || p.hi >= hi) {
			return true
		}
	}
	return false
}

// isPartitioned reports whether table is a partitioned table (PostgreSQL).
func isPartitioned(ctx context.Context, db bun.IDB, table string) (bool, error) {
	var kind sql.NullString
	err := db.QueryRowContext(ctx, "SELECT relkind::text FROM pg_class WHERE oid = to_regclass(?)", table).Scan(&kind)
	if err != nil && !isNoRows(err) {
		return false, err
	}
	return kind.String == "p", nil
}

// DDL waits for its locks at most ddlLockWait at a time, and is tried ddlTries times: a statement that
// needs a lock held by a long transaction (a report, a backup) would otherwise hold up, while it waits,
// every write queued behind it.
const (
	ddlLockWait = 2 * time.Second
	ddlTries    = 30
)

// isLockWait reports whether err is PostgreSQL giving up a lock wait (lock_timeout, 55P03) or breaking
// a deadlock (40P01).
func isLockWait(err error) bool {
	var pgErr pgdriver.Error
	if !errors.As(err, &pgErr) {
		return false
	}
	code := pgErr.Field('C')
	return code == "55P03" || code == "40P01"
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// ddlTx runs fn in a transaction whose lock waits last at most ddlLockWait; one that gave up (or was
// chosen to break a deadlock) rolls the transaction back and it runs again, up to ddlTries times.
func ddlTx(ctx context.Context, db *bun.DB, fn func(ctx context.Context, tx bun.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL lock_timeout = '%dms'", ddlLockWait.Milliseconds())); err != nil {
				return err
			}
			return fn(ctx, tx)
		})
		if err == nil || !isLockWait(err) || attempt >= ddlTries {
			return err
		}
		if err := pause(ctx, min(time.Duration(attempt)*200*time.Millisecond, 5*time.Second)); err != nil {
			return err
		}
	}
}

// concurrently runs a ... CONCURRENTLY statement, which PostgreSQL refuses inside a transaction. Such
// a statement takes SHARE UPDATE EXCLUSIVE, which no read or write waits for, and then waits for the
// transactions older than it to end; it runs without lock_timeout, since one that gave up half way
// would leave an invalid index, or a partition pending detach, behind.
func concurrently(ctx context.Context, db *bun.DB, query string, args ...any) error {
	_, err := db.ExecContext(ctx, query, args...)
	return err
}

// retentionLockKey is the advisory lock a run of the retention holds (DropExpiredMessages).
const retentionLockKey = 0x66635f7265746e // "fc_retn"

// partitionLockKey is the advisory lock that the makers of partitions (admin migrate, the worker's
// task, the conversion) take, so that two of them never make the same partition.
const partitionLockKey = 0x66635f7061727473 // "fc_parts"

// partitionMigration partitions messages and consent_events in place (convertToPartitions) and makes
// the partitions ahead. On SQLite, which keeps plain tables, it drops messages_account_idx, which no
// query reads. It runs outside a transaction, step by step, each step idempotent: Store.Migrate runs
// the conversion again after the migrations, so a run that stopped half way is completed by the next
// admin migrate. It has no Down: the partitioned tables are not turned back into plain ones.
func partitionMigration(s *Store) migrate.Migration {
	return migrate.Migration{
		Name: "20261205100001", Comment: "partition_messages_and_consent_events",
		Up: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			if s.db.Dialect().Name() != dialect.PG {
				_, err := s.db.ExecContext(ctx, "DROP INDEX IF EXISTS messages_account_idx")
				return err
			}
			return s.convertToPartitions(ctx, time.Now())
		},
		Down: func(context.Context, *migrate.Migrator, *migrate.Migration) error {
			if s.db.Dialect().Name() != dialect.PG {
				_, err := s.db.ExecContext(context.Background(), "CREATE INDEX IF NOT EXISTS messages_account_idx ON messages (account_id, id)")
				return err
			}
			return errors.New("20261205100001 (partitioned messages and consent_events) has no Down: restore a backup taken before it")
		},
	}
}

// convertToPartitions converts messages and consent_events, where they are plain tables still, into
// partitioned tables whose first partition is the table as it was, without copying a row and without
// holding a lock that blocks writes for longer than a catalog change (README, "Partitioning": each step
// and what it locks):
//
//  1. messages only: the claim tables, the trigger that claims replies, and the ingest functions that
//     claim messageSids (claimsTransition), in one short transaction; from then on every new message
//     is claimed. Then messages_reply_idx, built CONCURRENTLY, for the lookups of a message's reply
//     that messages_reply_key served.
//  2. a CHECK constraint id < bound, bound the first id of the month after next, added NOT VALID (a
//     moment's ACCESS EXCLUSIVE lock), then VALIDATEd (a scan under SHARE UPDATE EXCLUSIVE, which
//     writes pass).
//  3. messages only: the claims of the messages stored before step 1, copied in batches of
//     claimFillBatch messages, each its own short transaction.
//  4. one short transaction: the table is renamed the_table_legacy (its indexes too), the partitioned
//     table is created with its columns, primary key, indexes, foreign keys and triggers, and the old
//     table attached as its partition FROM (MINVALUE) TO (bound): its CHECK constraint proves the
//     range, so ATTACH scans nothing, and its indexes and foreign keys become the partitioned table's
//     own without being built or checked again. The foreign keys that reference it are re-created NOT
//     VALID. This transaction holds ACCESS EXCLUSIVE on the table (and SHARE ROW EXCLUSIVE on the
//     tables its keys name) for its catalog changes only: milliseconds, plus its wait for the lock.
//  5. the monthly partitions from bound on, through PartitionMonthsAhead months after the current one
//     (ensurePartitions).
//  6. the referencing foreign keys VALIDATEd (a scan of message_attempts, which writes pass); the final
//     ingest functions; the left-behind indexes dropped CONCURRENTLY.
func (s *Store) convertToPartitions(ctx context.Context, now time.Time) error {
	db := s.db
	for _, t := range partitionedTables {
		done, err := isPartitioned(ctx, db, t.name)
		if err != nil || done {
			if err != nil {
				return fmt.Errorf("partition %s: %w", t.name, err)
			}
			continue
		}
		if t.claims {
			if err := prepareClaims(ctx, db); err != nil {
				return fmt.Errorf("partition %s: claims: %w", t.name, err)
			}
			s.conversionStep("claims")
		}
		bound, err := ensureRangeCheck(ctx, db, t, now)
		if err != nil {
			return fmt.Errorf("partition %s: range check: %w", t.name, err)
		}
		s.conversionStep("checked " + t.name)
		if t.claims {
			if err := fillClaims(ctx, db); err != nil {
				return fmt.Errorf("partition %s: fill claims: %w", t.name, err)
			}
			s.conversionStep("filled")
		}
		if err := swapIn(ctx, db, t, bound); err != nil {
			return fmt.Errorf("partition %s: %w", t.name, err)
		}
		s.conversionStep("swapped " + t.name)
	}
	if _, err := ensurePartitions(ctx, db, now); err != nil {
		return err
	}
	if err := finalIngestFunctions(ctx, db); err != nil {
		return fmt.Errorf("partition messages: ingest functions: %w", err)
	}
	for _, t := range partitionedTables {
		if err := finishConversion(ctx, db, t); err != nil {
			return fmt.Errorf("partition %s: %w", t.name, err)
		}
	}
	return nil
}

// conversionStep tells the test's hook (export_test.go) that the conversion reached step.
func (s *Store) conversionStep(step string) {
	if s.conversionHook != nil {
		s.conversionHook(step)
	}
}

// replyClaimSQL is the trigger that claims a reply: inserted with a reply_to_id, a message first takes
// that message's row in reply_claims; when another reply has it, the message is not inserted (the
// trigger answers NULL), which is what ON CONFLICT DO NOTHING did when messages_reply_key was the
// unique index it met: every writer of a reply inserts it so (CreateBotReply, RecordBotReply, the
// keyword and hand-off replies) and reads the existing reply when its own was not stored. A claim that
// another transaction holds uncommitted makes this one wait for it, as the unique index did.
var replyClaimSQL = []string{`
CREATE OR REPLACE FUNCTION messages_claim_reply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO reply_claims (reply_to_id, message_id) VALUES (NEW.reply_to_id, NEW.id) ON CONFLICT DO NOTHING;
    IF FOUND THEN
        RETURN NEW;
    END IF;
    RETURN NULL;
END $$`,
	`DROP TRIGGER IF EXISTS messages_claim_reply ON messages`,
	`CREATE TRIGGER messages_claim_reply BEFORE INSERT ON messages FOR EACH ROW
    WHEN (NEW.reply_to_id IS NOT NULL) EXECUTE FUNCTION messages_claim_reply()`,
}

// prepareClaims is step 1: the claim tables, the reply trigger and the claiming ingest functions, in
// one transaction; then messages_reply_idx.
func prepareClaims(ctx context.Context, db *bun.DB) error {
	err := ddlTx(ctx, db, func(ctx context.Context, tx bun.Tx) error {
		stmts := append([]string{`
CREATE TABLE IF NOT EXISTS message_claims (
    account_id  TEXT NOT NULL,
    external_id TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    PRIMARY KEY (account_id, external_id)
)`, `
CREATE TABLE IF NOT EXISTS reply_claims (
    reply_to_id TEXT PRIMARY KEY,
    message_id  TEXT NOT NULL
)`}, replyClaimSQL...)
		stmts = append(stmts, ingestSQL(ingestFunctionTemplate, true, claimsTransition, true),
			ingestSQL(ingestBatchFunctionTemplate, true, claimsTransition, true))
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// A build that failed before leaves an invalid index of that name.
	var valid sql.NullBool
	err = db.QueryRowContext(ctx, `SELECT i.indisvalid FROM pg_index AS i WHERE i.indexrelid = to_regclass('messages_reply_idx')`).Scan(&valid)
	if err != nil && !isNoRows(err) {
		return err
	}
	if valid.Valid && !valid.Bool {
		if err := concurrently(ctx, db, "DROP INDEX CONCURRENTLY IF EXISTS messages_reply_idx"); err != nil {
			return err
		}
	}
	return concurrently(ctx, db, "CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_reply_idx ON messages (reply_to_id) WHERE reply_to_id IS NOT NULL")
}

var (
	checkBoundRE = regexp.MustCompile(`'([^']*)'`)
	referencesRE = regexp.MustCompile(`REFERENCES ([a-z_0-9.]+)\(`)
)

// ensureRangeCheck is step 2. It returns the CHECK's bound: the first id of the month after next, so
// that ids from the clock stay below it for at least a month while the conversion runs. A CHECK left by
// a run that stopped is kept while its bound is at least a month away, made anew otherwise.
func ensureRangeCheck(ctx context.Context, db *bun.DB, t partitionedTable, now time.Time) (string, error) {
	name := rangeCheckName(t.name)
	var def string
	var valid bool
	err := db.QueryRowContext(ctx, `SELECT pg_get_constraintdef(oid), convalidated FROM pg_constraint
		WHERE conrelid = to_regclass(?) AND conname = ?`, t.name, name).Scan(&def, &valid)
	if err != nil && !isNoRows(err) {
		return "", err
	}
	bound := ""
	if m := checkBoundRE.FindStringSubmatch(def); m != nil {
		bound = m[1]
	}
	if bound == "" || bound < idBound(t.prefix, addMonths(monthStart(now), 1)) {
		bound = idBound(t.prefix, addMonths(monthStart(now), 2))
		err := ddlTx(ctx, db, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "ALTER TABLE ? DROP CONSTRAINT IF EXISTS ?; ALTER TABLE ? ADD CONSTRAINT ? CHECK (id < ?) NOT VALID",
				bun.Ident(t.name), bun.Ident(name), bun.Ident(t.name), bun.Ident(name), bound)
			return err
		})
		if err != nil {
			return "", err
		}
		valid = false
	}
	if !valid {
		if _, err := db.ExecContext(ctx, "ALTER TABLE ? VALIDATE CONSTRAINT ?", bun.Ident(t.name), bun.Ident(name)); err != nil {
			return "", err
		}
	}
	return bound, nil
}

// claimFillBatch is how many messages each transaction of the claims' fill reads.
const claimFillBatch = 5000

// fillClaims is step 3: the claims of the messages stored before the claiming began, walked in id
// order, each batch its own transaction. It locks no message (a plain read: ACCESS SHARE on messages,
// which only DDL waits for) and writes only claims. A messageSid or reply claimed meanwhile by a new
// message cannot be an old message's (the unique indexes still hold until the conversion ends). The
// one exception is a reply written for a message that was answered before step 1: its claim was taken
// by a reply that messages_reply_key then refused; the fill points that claim at the reply stored.
func fillClaims(ctx context.Context, db *bun.DB) error {
	last := ""
	for {
		var n int
		var next sql.NullString
		err := db.QueryRowContext(ctx, `
WITH b AS (SELECT id, account_id, external_id, reply_to_id FROM messages WHERE id > ? ORDER BY id LIMIT ?),
s AS (INSERT INTO message_claims (account_id, external_id, message_id)
      SELECT account_id, external_id, id FROM b WHERE external_id IS NOT NULL ON CONFLICT DO NOTHING),
r AS (INSERT INTO reply_claims (reply_to_id, message_id)
      SELECT reply_to_id, id FROM b WHERE reply_to_id IS NOT NULL
      ON CONFLICT (reply_to_id) DO UPDATE SET message_id = EXCLUDED.message_id)
SELECT count(*), max(id) FROM b`, last, claimFillBatch).Scan(&n, &next)
		if err != nil {
			return err
		}
		if n < claimFillBatch || !next.Valid {
			return nil
		}
		last = next.String
	}
}

// catalogRow is a name and the definition PostgreSQL gives for it, with what kind of object it is.
type catalogRow struct {
	Table string `bun:"tbl"`
	Name  string `bun:"name"`
	Def   string `bun:"def"`
	Kind  string `bun:"kind"`
	Valid bool   `bun:"valid"`
}

// swapIn is step 4, for table t whose CHECK bound is bound.
func swapIn(ctx context.Context, db *bun.DB, t partitionedTable, bound string) error {
	legacy := legacyName(t.name)
	return ddlTx(ctx, db, func(ctx context.Context, tx bun.Tx) error {
		if done, err := isPartitioned(ctx, tx, t.name); err != nil || done {
			return err
		}
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", int64(partitionLockKey)); err != nil {
			return err
		}
		// What the table has, read before it is renamed (so that each definition names t.name).
		var indexes, constraints, triggers, referencing []catalogRow
		if err := tx.NewRaw(`SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def,
				CASE WHEN i.indisprimary THEN 'p' WHEN i.indisunique THEN 'u' ELSE 'i' END AS kind
			FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid WHERE i.indrelid = to_regclass(?)`, t.name).Scan(ctx, &indexes); err != nil {
			return err
		}
		if err := tx.NewRaw(`SELECT conname AS name, pg_get_constraintdef(oid) AS def, contype::text AS kind, convalidated AS valid
			FROM pg_constraint WHERE conrelid = to_regclass(?) AND contype <> 't'`, t.name).Scan(ctx, &constraints); err != nil {
			return err
		}
		if err := tx.NewRaw(`SELECT tgname AS name, pg_get_triggerdef(oid) AS def FROM pg_trigger
			WHERE tgrelid = to_regclass(?) AND NOT tgisinternal`, t.name).Scan(ctx, &triggers); err != nil {
			return err
		}
		if err := tx.NewRaw(`SELECT conrelid::regclass::text AS tbl, conname AS name, pg_get_constraintdef(oid) AS def
			FROM pg_constraint WHERE confrelid = to_regclass(?) AND contype = 'f'`, t.name).Scan(ctx, &referencing); err != nil {
			return err
		}

		// The locks, in the order the writers take them: the tables the keys name, then the table,
		// then the tables whose keys name it.
		var lockFirst []string
		for _, c := range constraints {
			if c.Kind == "f" {
				if m := referencesRE.FindStringSubmatch(c.Def); m != nil && !slices.Contains(lockFirst, m[1]) {
					lockFirst = append(lockFirst, m[1])
				}
			}
		}
		slices.Sort(lockFirst)
		for _, name := range lockFirst {
			if _, err := tx.ExecContext(ctx, "LOCK TABLE "+name+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "LOCK TABLE ? IN ACCESS EXCLUSIVE MODE", bun.Ident(t.name)); err != nil {
			return err
		}
		for _, r := range referencing {
			if _, err := tx.ExecContext(ctx, "LOCK TABLE "+r.Table+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
				return err
			}
		}

		stmts := []string{fmt.Sprintf("ALTER TABLE %s RENAME TO %s", t.name, legacy)}
		var create []string
		for _, ix := range indexes {
			if slices.Contains(t.leftBehind, ix.Name) {
				continue
			}
			if ix.Kind == "u" {
				return fmt.Errorf("unique index %s cannot be carried to a table partitioned by id: %s", ix.Name, ix.Def)
			}
			renamed := legacy + strings.TrimPrefix(ix.Name, t.name)
			if !strings.HasPrefix(ix.Name, t.name) {
				renamed = ix.Name + "_legacy"
			}
			stmts = append(stmts, fmt.Sprintf("ALTER INDEX %s RENAME TO %s", ix.Name, renamed))
			if ix.Kind == "i" {
				create = append(create, ix.Def)
			}
		}
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING STORAGE) PARTITION BY RANGE (id)", t.name, legacy))
		for _, c := range constraints {
			switch {
			case c.Kind == "p":
				stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s %s", t.name, c.Name, c.Def))
			case c.Kind == "f" && c.Valid:
				stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s %s", t.name, c.Name, c.Def))
			case c.Kind == "c" && c.Name == rangeCheckName(t.name):
			case c.Kind == "u" && slices.Contains(t.leftBehind, c.Name):
			default:
				return fmt.Errorf("constraint %s (%s) is not one the conversion carries over", c.Name, c.Def)
			}
		}
		stmts = append(stmts, create...)
		for _, tg := range triggers {
			stmts = append(stmts, fmt.Sprintf("DROP TRIGGER %s ON %s", tg.Name, legacy))
		}
		stmts = append(stmts,
			fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (MINVALUE) TO ('%s')", t.name, legacy, bound),
			fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", legacy, rangeCheckName(t.name)))
		for _, tg := range triggers {
			stmts = append(stmts, tg.Def)
		}
		for _, r := range referencing {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT %s", r.Table, r.Name),
				fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s %s NOT VALID", r.Table, r.Name, strings.TrimSuffix(r.Def, " NOT VALID")))
		}
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
}

// finishConversion is step 6 for t: the foreign keys that reference it validated, its left-behind
// indexes dropped.
func finishConversion(ctx context.Context, db *bun.DB, t partitionedTable) error {
	var unchecked []catalogRow
	if err := db.NewRaw(`SELECT conrelid::regclass::text AS tbl, conname AS name FROM pg_constraint
		WHERE confrelid = to_regclass(?) AND contype = 'f' AND NOT convalidated`, t.name).Scan(ctx, &unchecked); err != nil {
		return err
	}
	for _, c := range unchecked {
		if _, err := db.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s VALIDATE CONSTRAINT %s", c.Table, c.Name)); err != nil {
			return err
		}
	}
	for _, ix := range t.leftBehind {
		if err := concurrently(ctx, db, "DROP INDEX CONCURRENTLY IF EXISTS "+ix); err != nil {
			return err
		}
	}
	return nil
}

// finalIngestFunctions installs the ingest functions that answer duplicates from the claims alone,
// once every message has its claim (step 6).
func finalIngestFunctions(ctx context.Context, db *bun.DB) error {
	if claims, err := ingestClaims(ctx, db); err != nil || claims == claimsFinal {
		return err
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for _, q := range []string{ingestSQL(ingestFunctionTemplate, true, claimsFinal, true), ingestSQL(ingestBatchFunctionTemplate, true, claimsFinal, true)} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
}

// ensurePartitions makes the monthly partitions of every partitioned table from the current month
// through PartitionMonthsAhead months after it, where no partition holds that month yet, and returns
// their names. Each is made in a transaction of its own, under the advisory lock partitionLockKey, which
// makes concurrent makers wait for each other and then find the partition there: as a plain table
// first, then ATTACHed, which takes SHARE UPDATE EXCLUSIVE on the partitioned table (writes and reads
// go on) and, for a moment, SHARE ROW EXCLUSIVE on the tables its foreign keys name (contacts,
// accounts) and on message_attempts, whose key names messages. A table not partitioned yet (the
// conversion has not run) is skipped.
func ensurePartitions(ctx context.Context, db *bun.DB, now time.Time) ([]string, error) {
	var made []string
	for _, t := range partitionedTables {
		done, err := isPartitioned(ctx, db, t.name)
		if err != nil {
			return made, err
		}
		if !done {
			continue
		}
		parts, err := listPartitions(ctx, db, t.name)
		if err != nil {
			return made, err
		}
		for i := 0; i <= PartitionMonthsAhead; i++ {
			month := addMonths(monthStart(now), i)
			lo, hi := idBound(t.prefix, month), idBound(t.prefix, addMonths(month, 1))
			if covers(parts, lo, hi) {
				continue
			}
			name := partitionName(t.name, month)
			created := false
			err := ddlTx(ctx, db, func(ctx context.Context, tx bun.Tx) error {
				created = false
				if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?)", int64(partitionLockKey)); err != nil {
					return err
				}
				parts, err := listPartitions(ctx, tx, t.name)
				if err != nil || covers(parts, lo, hi) {
					return err
				}
				if _, err := tx.ExecContext(ctx, "CREATE TABLE ? (LIKE ? INCLUDING DEFAULTS INCLUDING STORAGE)", bun.Ident(name), bun.Ident(t.name)); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, "ALTER TABLE ? ATTACH PARTITION ? FOR VALUES FROM (?) TO (?)",
					bun.Ident(t.name), bun.Ident(name), lo, hi); err != nil {
					return err
				}
				created = true
				return nil
			})
			if err != nil {
				return made, fmt.Errorf("make partition %s: %w", name, err)
			}
			if created {
				made = append(made, name)
			}
		}
	}
	return made, nil
}

// EnsurePartitions makes the partitions of messages and consent_events for the current month and the
// PartitionMonthsAhead months after now's, where missing, and returns their names (PostgreSQL; nothing
// on SQLite, which keeps plain tables).
func (s *Store) EnsurePartitions(ctx context.Context, now time.Time) ([]string, error) {
	if s.IsSQLite() {
		return nil, nil
	}
	return ensurePartitions(ctx, s.db, now)
}

// PartitionReport is what MaintainPartitions did.
type PartitionReport struct {
	Created []string `json:"created"`
	Dropped []string `json:"dropped"`
}

// MaintainPartitions is the worker's periodic task: the partitions ahead (EnsurePartitions) and, when
// retentionMonths > 0, the messages older than that (DropExpiredMessages).
func (s *Store) MaintainPartitions(ctx context.Context, now time.Time, retentionMonths int) (PartitionReport, error) {
	var rep PartitionReport
	var err error
	if rep.Created, err = s.EnsurePartitions(ctx, now); err != nil {
		return rep, fmt.Errorf("partitions: %w", err)
	}
	if retentionMonths > 0 {
		if rep.Dropped, err = s.DropExpiredMessages(ctx, now, retentionMonths); err != nil {
			return rep, fmt.Errorf("retention: %w", err)
		}
	}
	return rep, nil
}

// RetentionCutoff is the first message id that MESSAGE_RETENTION_MONTHS=months keeps at now: the
// messages created before the first day (UTC) of the month months months before now's go, so the
// last months whole months and the current one stay.
func RetentionCutoff(now time.Time, months int) string {
	return idBound(prefixMessage, addMonths(monthStart(now), -months))
}

// purgeBatch is how many messages of a partition each transaction of the retention's clean-up takes.
const purgeBatch = 2000

// DropExpiredMessages deletes the messages older than months whole months before now's month
// (RetentionCutoff), with their delivery attempts and claims, and forgets the conversations that had
// no other message. On PostgreSQL it drops whole partitions only, the ones that end at or before the
// cutoff (so a partition is kept until its last message is old enough; the legacy partition, which
// ends a month or two after the conversion, is one of them), and returns their names; consent_events
// is never touched: consent is evidence, kept for as long as the contact is. On SQLite it deletes the
// messages in batches, and returns nil.
//
// For each partition, in order, each step idempotent (a run that stopped is completed by the next):
//
//  1. the partition's delivery attempts (their foreign key would refuse the detach) and its messages'
//     claims, in batches of purgeBatch messages;
//  2. the conversations: each that had a failed delivery in the partition gets the count of those left;
//     each whose latest message is in the partition (so all of its messages are) is deleted, and the
//     inbox no longer lists it: a new message makes it anew, with that message alone; one whose latest
//     incoming message is in the partition is no longer unread for it;
//  3. DETACH PARTITION CONCURRENTLY (SHARE UPDATE EXCLUSIVE on messages, writes and reads go on; it
//     waits for the queries that still see the partition) and DROP TABLE.
func (s *Store) DropExpiredMessages(ctx context.Context, now time.Time, months int) ([]string, error) {
	if months <= 0 {
		return nil, nil
	}
	cutoff := RetentionCutoff(now, months)
	if s.IsSQLite() {
		return nil, s.deleteExpiredSQLite(ctx, cutoff)
	}
	if done, err := isPartitioned(ctx, s.db, "messages"); err != nil || !done {
		return nil, err
	}
	// One run at a time (every worker schedules the task): another that runs now does the work.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var mine bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock(?)", int64(retentionLockKey)).Scan(&mine); err != nil || !mine {
		return nil, err
	}
	defer conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(?)", int64(retentionLockKey)) //nolint:errcheck // closing the session releases it too
	parts, err := listPartitions(ctx, s.db, "messages")
	if err != nil {
		return nil, err
	}
	slices.SortFunc(parts, func(a, b partitionInfo) int { return strings.Compare(a.hi, b.hi) })
	var dropped []string
	for _, p := range parts {
		if p.hi == "" || p.hi > cutoff {
			continue
		}
		if !p.detachPending {
			if err := s.purgePartition(ctx, p.name); err != nil {
				return dropped, fmt.Errorf("%s: %w", p.name, err)
			}
			if err := s.forgetConversations(ctx, p.name, p.hi); err != nil {
				return dropped, fmt.Errorf("%s: conversations: %w", p.name, err)
			}
			err := concurrently(ctx, s.db, "ALTER TABLE messages DETACH PARTITION ? CONCURRENTLY", bun.Ident(p.name))
			if err != nil {
				return dropped, fmt.Errorf("%s: detach: %w", p.name, err)
			}
		} else if err := concurrently(ctx, s.db, "ALTER TABLE messages DETACH PARTITION ? FINALIZE", bun.Ident(p.name)); err != nil {
			return dropped, fmt.Errorf("%s: detach: %w", p.name, err)
		}
		if err := ddlTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
			_, err := tx.ExecContext(ctx, "DROP TABLE IF EXISTS ?", bun.Ident(p.name))
			return err
		}); err != nil {
			return dropped, fmt.Errorf("%s: drop: %w", p.name, err)
		}
		dropped = append(dropped, p.name)
	}
	return dropped, nil
}

// purgePartition deletes what references the messages of the partition part: their delivery attempts
// and claims, walking it in id order.
func (s *Store) purgePartition(ctx context.Context, part string) error {
	last := ""
	for {
		var n int
		var next sql.NullString
		err := s.db.QueryRowContext(ctx, `
WITH b AS (SELECT id, account_id, external_id, reply_to_id FROM ? WHERE id > ? ORDER BY id LIMIT ?),
a AS (DELETE FROM message_attempts WHERE message_id IN (SELECT id FROM b)),
c AS (DELETE FROM message_claims AS mc USING b
      WHERE b.external_id IS NOT NULL AND mc.account_id = b.account_id AND mc.external_id = b.external_id AND mc.message_id = b.id),
r AS (DELETE FROM reply_claims AS rc USING b WHERE b.reply_to_id IS NOT NULL AND rc.reply_to_id = b.reply_to_id)
SELECT count(*), max(id) FROM b`, bun.Ident(part), last, purgeBatch).Scan(&n, &next)
		if err != nil {
			return err
		}
		if n < purgeBatch || !next.Valid {
			return nil
		}
		last = next.String
	}
}

// forgetConversations is step 2 of DropExpiredMessages for the partition part, whose messages all
// have ids below hi (and every message below hi is in it or gone already).
func (s *Store) forgetConversations(ctx context.Context, part, hi string) error {
	var failed []string
	if err := s.db.NewRaw(`SELECT DISTINCT contact_id FROM ? WHERE direction = 'outgoing' AND status = 'failed' ORDER BY contact_id`,
		bun.Ident(part)).Scan(ctx, &failed); err != nil {
		return err
	}
	if err := s.recountFailed(ctx, failed, hi); err != nil {
		return err
	}
	return s.deleteConversationsBelow(ctx, hi)
}

// recountFailed sets the failed count of the contacts' conversations to their failed outgoing messages
// with ids from hi on (the ones the retention keeps). The rows are locked first, in contact order
// (models/tx.go), so that a status change committing meanwhile either counts already or changes the
// count after, through its trigger.
func (s *Store) recountFailed(ctx context.Context, contacts []string, hi string) error {
	for chunk := range slices.Chunk(contacts, 500) {
		err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, "SELECT 1 FROM conversations WHERE contact_id IN (?) ORDER BY contact_id FOR UPDATE", bun.In(chunk)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `UPDATE conversations AS cv SET failed = (SELECT count(*) FROM messages AS m
				WHERE m.account_id = cv.account_id AND m.contact_id = cv.contact_id AND m.direction = 'outgoing' AND m.status = 'failed' AND m.id >= ?)
				WHERE cv.contact_id IN (?)`, hi, bun.In(chunk))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteConversationsBelow deletes the conversations whose latest message's id is below hi, and clears
// the latest incoming message of the others where it is below hi (it is not unread any more: it is
// gone), walking the table in contact order in short transactions. A message committing meanwhile makes
// the row newer and keeps it (the DELETE and UPDATE check the row they lock), or makes it anew.
func (s *Store) deleteConversationsBelow(ctx context.Context, hi string) error {
	last := ""
	for {
		var n int
		var next sql.NullString
		err := s.db.QueryRowContext(ctx, `
WITH b AS (SELECT contact_id FROM conversations WHERE contact_id > ? ORDER BY contact_id LIMIT ?),
d AS (DELETE FROM conversations AS cv USING b WHERE cv.contact_id = b.contact_id AND cv.last_message_id < ?),
u AS (UPDATE conversations AS cv SET last_incoming_id = NULL FROM b
      WHERE cv.contact_id = b.contact_id AND cv.last_incoming_id < ? AND cv.last_message_id >= ?)
SELECT count(*), max(contact_id) FROM b`, last, purgeBatch, hi, hi, hi).Scan(&n, &next)
		if err != nil {
			return err
		}
		if n < purgeBatch || !next.Valid {
			return nil
		}
		last = next.String
	}
}

// deleteExpiredSQLite is DropExpiredMessages on SQLite: the messages below cutoff, with their attempts,
// in batches; then the conversations as on PostgreSQL.
func (s *Store) deleteExpiredSQLite(ctx context.Context, cutoff string) error {
	failed := map[string]bool{}
	for {
		var ids []string
		if err := s.db.NewSelect().Model((*Message)(nil)).Column("id").Where("id < ?", cutoff).Order("id").Limit(purgeBatch).Scan(ctx, &ids); err != nil {
			return err
		}
		if len(ids) == 0 {
			break
		}
		err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			var contacts []string
			if err := tx.NewSelect().Model((*Message)(nil)).ColumnExpr("DISTINCT contact_id").
				Where("id IN (?) AND direction = 'outgoing' AND status = 'failed'", bun.In(ids)).Scan(ctx, &contacts); err != nil {
				return err
			}
			for _, c := range contacts {
				failed[c] = true
			}
			if _, err := tx.NewDelete().Model((*Attempt)(nil)).Where("message_id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
				return err
			}
			_, err := tx.NewDelete().Model((*Message)(nil)).Where("id IN (?)", bun.In(ids)).Exec(ctx)
			return err
		})
		if err != nil {
			return err
		}
	}
	contacts := make([]string, 0, len(failed))
	for c := range failed {
		contacts = append(contacts, c)
	}
	slices.Sort(contacts)
	for chunk := range slices.Chunk(contacts, 500) {
		if _, err := s.db.ExecContext(ctx, `UPDATE conversations SET failed = (SELECT count(*) FROM messages AS m
			WHERE m.contact_id = conversations.contact_id AND m.direction = 'outgoing' AND m.status = 'failed')
			WHERE contact_id IN (?)`, bun.In(chunk)); err != nil {
			return err
		}
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM conversations WHERE last_message_id < ?", cutoff); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, "UPDATE conversations SET last_incoming_id = NULL WHERE last_incoming_id < ?", cutoff)
	return err
}
