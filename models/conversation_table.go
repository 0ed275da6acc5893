package models

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// The conversations table keeps one row per conversation (a contact with at least one message), so
// that the conversation list, its filters and its counts read one small row per conversation, through
// an index made for each view, instead of finding each contact's latest message among all of the
// account's messages (README, "Performance"; docs/performance.md, "Inbox at an agency's size").
//
//	contact_id        the contact (the primary key: one conversation per contact)
//	account_id        the contact's account
//	last_message_id   the id of its latest message (ids grow with time): the list's order and cursor
//	last_incoming_id  the id of its latest incoming message, NULL if none: unread for a reader when
//	                  greater than what the reader read (conversation_reads)
//	failed            how many of its outgoing messages have status failed
//	conversation_status, snoozed_until, assignee_id
//	                  copies of the contact's columns of these names, so
//	                  that the Open/Snoozed/Resolved and Mine/Unassigned views are ranges of one index
//
// Database triggers keep it, in the same transaction as every write they follow, whichever code path
// writes (the ingest's PostgreSQL functions included): a message inserted (last ids, failed count; the
// row is made with the contact's columns by the conversation's first message), a message's status
// changing to or from failed, and a contact's conversation_status, snoozed_until or assignee_id
// changing. No code writes the table itself. Messages are never deleted nor moved to another contact.
//
// Locks. On PostgreSQL the triggers run at the commit (conversationTriggersPG says why). A
// conversation's first message takes a share lock on its contact while it copies the contact's columns,
// so that a concurrent change of those columns (Assign before the contact's first message) either
// commits first and is copied, or waits for the new row and then updates it.
//
// The copies have the contact's names so that one rule reads both (ConversationIs, ConversationRanges):
// the open view is status 'open' plus the snoozes that have ended at the time of the read, two ranges of
// conversations_status_idx; every conversation is its three statuses' ranges.

// conversationTableMigration creates the table, its indexes and triggers, and fills it from the
// messages already stored.
func conversationTableMigration(db *bun.DB) migrate.Migration {
	sqlite := db.Dialect().Name() == dialect.SQLite
	return migrate.Migration{
		Name: "20261204100001", Comment: "conversations_table",
		Up: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			stmts := conversationTableSQL
			if sqlite {
				stmts = append(stmts, conversationTriggersSQLite...)
			} else {
				stmts = append(stmts, conversationTriggersPG...)
			}
			stmts = append(stmts, conversationBackfillSQL)
			for _, s := range stmts {
				if _, err := db.ExecContext(ctx, s); err != nil {
					return err
				}
			}
			return nil
		},
		Down: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			stmts := []string{
				"DROP TRIGGER IF EXISTS conversations_on_message_insert ON messages",
				"DROP TRIGGER IF EXISTS conversations_on_message_failed ON messages",
				"DROP TRIGGER IF EXISTS conversations_on_contact ON contacts",
				"DROP FUNCTION IF EXISTS conversations_message_insert()",
				"DROP FUNCTION IF EXISTS conversations_message_failed()",
				"DROP FUNCTION IF EXISTS conversations_contact()",
				"DROP TABLE IF EXISTS conversations",
			}
			if sqlite {
				stmts = []string{
					"DROP TRIGGER IF EXISTS conversations_on_message_insert",
					"DROP TRIGGER IF EXISTS conversations_on_message_failed",
					"DROP TRIGGER IF EXISTS conversations_on_contact",
					"DROP TABLE IF EXISTS conversations",
				}
			}
			for _, s := range stmts {
				if _, err := db.ExecContext(ctx, s); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

var conversationTableSQL = []string{`
CREATE TABLE IF NOT EXISTS conversations (
    contact_id       TEXT PRIMARY KEY,
    account_id       TEXT NOT NULL,
    last_message_id  TEXT NOT NULL,
    last_incoming_id TEXT,
    failed           INTEGER NOT NULL DEFAULT 0,
    conversation_status TEXT NOT NULL DEFAULT 'open',
    snoozed_until    TIMESTAMPTZ,
    assignee_id      TEXT
)`,
	// Open, Snoozed, Resolved, and every conversation (the three merged). Each message rewrites its
	// conversation's entry in every index of the table (the order moves), so the table has few: the
	// accept path pays for each (docs/performance.md, 2026-11-27).
	`CREATE INDEX IF NOT EXISTS conversations_status_idx ON conversations (account_id, conversation_status, last_message_id)`,
	// Mine (and another user's). Unassigned, most conversations, walks conversations_status_idx; a new
	// conversation starts unassigned and adds no entry here.
	`CREATE INDEX IF NOT EXISTS conversations_assignee_idx ON conversations (account_id, assignee_id, conversation_status, last_message_id)
    WHERE assignee_id IS NOT NULL`,
	// The failed filter: few conversations, so a partial index.
	`CREATE INDEX IF NOT EXISTS conversations_failed_idx ON conversations (account_id, last_message_id) WHERE failed > 0`,
}

// conversationBackfillSQL makes the rows of the conversations stored before the table (nothing on a new
// database). It runs after the triggers exist and outside a transaction, so that writes go on meanwhile
// (admin migrate runs it in the release phase, beside the old processes): a message committed before its
// snapshot is counted by it, one committed after by its trigger, on the row either made. A conversation
// that both made keeps the greater ids and the backfill's failed count, which covers every message it
// saw.
const conversationBackfillSQL = `
INSERT INTO conversations AS cv (contact_id, account_id, last_message_id, last_incoming_id, failed, conversation_status, snoozed_until, assignee_id)
SELECT c.id, c.account_id, m.last_id, m.last_in, m.failed, c.conversation_status, c.snoozed_until, c.assignee_id
FROM (SELECT contact_id, MAX(id) AS last_id,
             MAX(CASE WHEN direction = 'incoming' THEN id END) AS last_in,
             SUM(CASE WHEN direction = 'outgoing' AND status = 'failed' THEN 1 ELSE 0 END) AS failed
      FROM messages GROUP BY contact_id) AS m
JOIN contacts AS c ON c.id = m.contact_id
WHERE true
ON CONFLICT (contact_id) DO UPDATE
SET last_message_id = CASE WHEN EXCLUDED.last_message_id > cv.last_message_id THEN EXCLUDED.last_message_id ELSE cv.last_message_id END,
    last_incoming_id = CASE WHEN cv.last_incoming_id IS NULL OR EXCLUDED.last_incoming_id > cv.last_incoming_id
                            THEN EXCLUDED.last_incoming_id ELSE cv.last_incoming_id END,
    failed = EXCLUDED.failed`

// On PostgreSQL the triggers are deferred to the commit: a transaction takes its conversations' row
// locks last, after every lock its statements took, so the rows cannot join a lock cycle with the
// message and contact locks that the writers take in their own orders (models/tx.go); and they are held
// only for the commit's moment. A transaction that writes to several conversations locks them in the
// order it wrote them; two such transactions in opposite orders can still deadlock, and are retried
// as every deadlock is (the ingest's batches go message by message).
var conversationTriggersPG = []string{`
CREATE OR REPLACE FUNCTION conversations_message_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    ` + conversationUpsertPG("NEW", "RETURN NULL;") + `
    RETURN NULL;
END $$`, `
CREATE OR REPLACE FUNCTION conversations_message_failed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET failed = failed + CASE WHEN NEW.status = 'failed' THEN 1 ELSE -1 END
    WHERE contact_id = NEW.contact_id;
    RETURN NULL;
END $$`, `
CREATE OR REPLACE FUNCTION conversations_contact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE conversations SET conversation_status = NEW.conversation_status, snoozed_until = NEW.snoozed_until,
        assignee_id = NEW.assignee_id
    WHERE contact_id = NEW.id;
    RETURN NULL;
END $$`,
	`DROP TRIGGER IF EXISTS conversations_on_message_insert ON messages`,
	`CREATE CONSTRAINT TRIGGER conversations_on_message_insert AFTER INSERT ON messages
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION conversations_message_insert()`,
	`DROP TRIGGER IF EXISTS conversations_on_message_failed ON messages`,
	`CREATE CONSTRAINT TRIGGER conversations_on_message_failed AFTER UPDATE OF status ON messages
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.direction = 'outgoing' AND (OLD.status = 'failed') IS DISTINCT FROM (NEW.status = 'failed'))
    EXECUTE FUNCTION conversations_message_failed()`,
	`DROP TRIGGER IF EXISTS conversations_on_contact ON contacts`,
	`CREATE CONSTRAINT TRIGGER conversations_on_contact AFTER UPDATE OF conversation_status, snoozed_until, assignee_id ON contacts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.conversation_status IS DISTINCT FROM NEW.conversation_status OR OLD.snoozed_until IS DISTINCT FROM NEW.snoozed_until
          OR OLD.assignee_id IS DISTINCT FROM NEW.assignee_id)
    EXECUTE FUNCTION conversations_contact()`,
}

// conversationUpsertPG is what a message does to its conversation's row, in PL/pgSQL statements on row
// (the message: its id, contact_id, direction and status); done ends them once the row is updated.
// The message insert's trigger runs it, and a set-based ingest batch for each of its known contacts
// (batch_keeps.go).
func conversationUpsertPG(row, done string) string {
	return `UPDATE conversations
    SET last_message_id = GREATEST(last_message_id, ` + row + `.id),
        last_incoming_id = CASE WHEN ` + row + `.direction = 'incoming' THEN GREATEST(last_incoming_id, ` + row + `.id) ELSE last_incoming_id END,
        failed = failed + (` + row + `.direction = 'outgoing' AND ` + row + `.status = 'failed')::int
    WHERE conversations.contact_id = ` + row + `.contact_id;
    IF FOUND THEN
        ` + done + `
    END IF;
    -- The conversation's first message: the row, with the contact's columns read under a share lock
    -- (see the table's comment). A concurrent first message of the same contact meets the conflict.
    INSERT INTO conversations AS cv (contact_id, account_id, last_message_id, last_incoming_id, failed,
        conversation_status, snoozed_until, assignee_id)
    SELECT c.id, c.account_id, ` + row + `.id, CASE WHEN ` + row + `.direction = 'incoming' THEN ` + row + `.id END,
        (` + row + `.direction = 'outgoing' AND ` + row + `.status = 'failed')::int, c.conversation_status, c.snoozed_until, c.assignee_id
    FROM contacts AS c WHERE c.id = ` + row + `.contact_id FOR SHARE
    ON CONFLICT ON CONSTRAINT conversations_pkey DO UPDATE
    SET last_message_id = GREATEST(cv.last_message_id, EXCLUDED.last_message_id),
        last_incoming_id = GREATEST(cv.last_incoming_id, EXCLUDED.last_incoming_id),
        failed = cv.failed + EXCLUDED.failed;`
}

// SQLite runs one writing transaction at a time: row triggers, no locks to order.
var conversationTriggersSQLite = []string{`
CREATE TRIGGER IF NOT EXISTS conversations_on_message_insert AFTER INSERT ON messages BEGIN
    INSERT INTO conversations (contact_id, account_id, last_message_id, last_incoming_id, failed, conversation_status, snoozed_until, assignee_id)
    SELECT c.id, c.account_id, NEW.id, CASE WHEN NEW.direction = 'incoming' THEN NEW.id END,
           CASE WHEN NEW.direction = 'outgoing' AND NEW.status = 'failed' THEN 1 ELSE 0 END,
           c.conversation_status, c.snoozed_until, c.assignee_id
    FROM contacts AS c WHERE c.id = NEW.contact_id
    ON CONFLICT (contact_id) DO UPDATE
    SET last_message_id = CASE WHEN excluded.last_message_id > last_message_id THEN excluded.last_message_id ELSE last_message_id END,
        last_incoming_id = CASE WHEN excluded.last_incoming_id IS NULL THEN last_incoming_id
                                WHEN last_incoming_id IS NULL OR excluded.last_incoming_id > last_incoming_id THEN excluded.last_incoming_id
                                ELSE last_incoming_id END,
        failed = failed + excluded.failed;
END`, `
CREATE TRIGGER IF NOT EXISTS conversations_on_message_failed AFTER UPDATE OF status ON messages
WHEN NEW.direction = 'outgoing' AND (OLD.status = 'failed') IS NOT (NEW.status = 'failed') BEGIN
    UPDATE conversations SET failed = failed + CASE WHEN NEW.status = 'failed' THEN 1 ELSE -1 END
    WHERE contact_id = NEW.contact_id;
END`, `
CREATE TRIGGER IF NOT EXISTS conversations_on_contact AFTER UPDATE OF conversation_status, snoozed_until, assignee_id ON contacts
WHEN OLD.conversation_status IS NOT NEW.conversation_status OR OLD.snoozed_until IS NOT NEW.snoozed_until
     OR OLD.assignee_id IS NOT NEW.assignee_id BEGIN
    UPDATE conversations SET conversation_status = NEW.conversation_status, snoozed_until = NEW.snoozed_until, assignee_id = NEW.assignee_id
    WHERE contact_id = NEW.id;
END`,
}
