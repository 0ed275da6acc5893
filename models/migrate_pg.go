package models

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// Migrations that only PostgreSQL runs (the SQL files in migrations/ run on both backends).

// postgresOnly is a migration step that runs sql on PostgreSQL and does nothing on SQLite (or for "").
func postgresOnly(db *bun.DB, sql string) func(context.Context, *migrate.Migrator, *migrate.Migration) error {
	return func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
		if db.Dialect().Name() != dialect.PG || sql == "" {
			return nil
		}
		_, err := db.ExecContext(ctx, sql)
		return err
	}
}

// accountForeignKeysMigration drops the foreign keys to accounts of the three tables every incoming
// message writes to (messages, contacts, contact_identities). Such a key makes each insert lock the
// account's one row (FOR KEY SHARE), so every concurrent write of an account shares that lock: with two
// or more it becomes a MultiXact, created and logged anew by each new locker. Accounts are never
// deleted, and every row's account_id is the authenticated account's or its parent row's, so the keys
// guarded nothing the code does not. Measured (README "Performance"): PostgreSQL's CPU per answered
// message -5 to -7%, replies/s +4 to +7% in 3 closed-loop pairs. The other tables keep theirs.
func accountForeignKeysMigration(db *bun.DB) migrate.Migration {
	return migrate.Migration{
		Name: "20261130000002", Comment: "hot_path_account_foreign_keys",
		Up: postgresOnly(db, `
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_account_id_fkey;
ALTER TABLE contacts DROP CONSTRAINT IF EXISTS contacts_account_id_fkey;
ALTER TABLE contact_identities DROP CONSTRAINT IF EXISTS contact_identities_account_id_fkey;`),
		Down: postgresOnly(db, `
ALTER TABLE messages ADD CONSTRAINT messages_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id);
ALTER TABLE contacts ADD CONSTRAINT contacts_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id);
ALTER TABLE contact_identities ADD CONSTRAINT contact_identities_account_id_fkey FOREIGN KEY (account_id) REFERENCES accounts (id);`),
	}
}
