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
// guarded nothing the code does not. Measured (docs/performance.md, fourth sitting): PostgreSQL's CPU
// per answered message -5 to -7%, replies/s +4 to +7% in 3 closed-loop pairs. The other tables keep
// theirs.
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

// assigneeForeignKeyMigration makes contacts.assignee_id a foreign key to users that is set to NULL
// when the user is deleted. RemoveUser unassigns the user's conversations and then deletes the user;
// an assignment committed in between (Assign, or assignInTurn holding the user's row) would otherwise
// leave a conversation with a user who no longer exists. With the key, the deletion unassigns what such
// an assignment committed, and an assignment whose user's deletion commits first fails its check
// (Assign answers VALIDATION_ERROR). SQLite cannot add a key to an existing table; there one
// transaction runs at a time and the assignments check the user in their write.
//
// The key is added NOT VALID, so that taking it locks contacts only for a moment; then the
// conversations of users deleted before it are unassigned (none can be added once the key is there),
// and VALIDATE checks the table while writes go on. Each step is its own transaction. A contact is
// inserted unassigned, and a NULL key, or an update that leaves assignee_id as it was, neither looks up
// nor locks a user: the ingest's writes do not meet the users' rows (unlike the keys to accounts that
// accountForeignKeysMigration dropped).
func assigneeForeignKeyMigration(db *bun.DB) migrate.Migration {
	return migrate.Migration{
		Name: "20261201780001", Comment: "contacts_assignee_foreign_key",
		Up: func(ctx context.Context, m *migrate.Migrator, mg *migrate.Migration) error {
			for _, step := range []string{`
DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'contacts_assignee_id_fkey' AND conrelid = 'contacts'::regclass) THEN
        ALTER TABLE contacts ADD CONSTRAINT contacts_assignee_id_fkey
            FOREIGN KEY (assignee_id) REFERENCES users (id) ON DELETE SET NULL NOT VALID;
    END IF;
END $$`, `
UPDATE contacts SET assignee_id = NULL
WHERE assignee_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM users AS u WHERE u.id = contacts.assignee_id)`, `
ALTER TABLE contacts VALIDATE CONSTRAINT contacts_assignee_id_fkey`} {
				if err := postgresOnly(db, step)(ctx, m, mg); err != nil {
					return err
				}
			}
			return nil
		},
		Down: postgresOnly(db, `ALTER TABLE contacts DROP CONSTRAINT IF EXISTS contacts_assignee_id_fkey`),
	}
}
