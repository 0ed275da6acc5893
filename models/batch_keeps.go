package models

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// A set-based batch keeps its conversations and its contacts' first replies itself (PostgreSQL).
//
// Every message insert fires, at the commit, conversations_on_message_insert (conversation_table.go)
// and, for an incoming message, campaign_sends_on_reply (campaign_first_reply.go): per message, a
// trigger event queued for the commit and a PL/pgSQL call with statements of its own. For a new
// sender, the usual message of a lead funnel, those statements look for a conversation row that cannot
// exist yet, then make it from the contact the same transaction just inserted. In the set-based batch
// of ingest_incoming_batch (ingest_pg.go), the accept path's usual shape, that was about a quarter of
// the database's time per message (docs/performance.md, "2026-11-27, fourth sitting"). So the batch
// does the triggers' work itself, and the two triggers skip the rows it inserts:
//
//   - The function sets funnelchat.ingest_batch to 'on' (for its transaction) just before its one
//     INSERT statement and to '' just after it, and both triggers' WHEN reads the setting: a
//     constraint trigger's WHEN is evaluated when the row is inserted, not at the commit. A statement
//     that fails rolls the setting back with its savepoint, so the message-by-message path that
//     follows, and any later statement of the transaction, fire the triggers as every write does.
//   - The contacts the batch makes get their conversation rows in that INSERT statement, as a new
//     contact is (open, unassigned, not snoozed): no other transaction can see those contacts, or
//     write their rows, before the commit; and they have no campaign send.
//   - The batch's known contacts get, after the reopening, as the transaction's last statements, the
//     triggers' own statements (replyStoredPG, then conversationUpsertPG), message by message in the
//     batch's order: the same locks in the same order as at the commit (a contact's sends, then its
//     conversation row, after every other lock of the transaction).
//   - Both are idempotent (the greater id, the earlier reply): during a deploy, a function of the
//     release before with these triggers, or this function with the triggers before them, does the
//     work twice and stores the same.
//
// The single-message ingest_incoming and every other writer keep the triggers.

// batchKeepsSetting is the transaction-local setting by which the batch's rows skip the triggers.
const batchKeepsSetting = "funnelchat.ingest_batch"

// batchSkipsTriggerSQL is the triggers' condition: the row was not inserted by a batch that keeps it.
var batchSkipsTriggerSQL = `current_setting('` + batchKeepsSetting + `', true) IS DISTINCT FROM 'on'`

var (
	batchKeepsOnSQL = `
        PERFORM set_config('` + batchKeepsSetting + `', 'on', true);`
	batchKeepsOffSQL = `
        PERFORM set_config('` + batchKeepsSetting + `', '', true);`
)

// batchNewConversationsSQL makes, in the batch's one INSERT statement, the conversation rows of the
// contacts it makes: open, unassigned and not snoozed, as a new contact is; no other transaction can
// see the contacts, or make their rows, before the commit.
var batchNewConversationsSQL = `, cv AS (
            INSERT INTO conversations (contact_id, account_id, last_message_id, last_incoming_id, failed, conversation_status)
            SELECT res.contact_id, res.account_id, res.message_id, res.message_id, 0, '` + ConversationOpen + `'
            FROM res, ok WHERE ok.independent AND res.known_contact IS NULL
        )`

// batchKeepsSQL is the rest of the batch's own work, after its reopening, for its known contacts (a
// new contact has no campaign send, and its conversation's row is made): for each message, in the
// batch's order, the statements of the two triggers (replyStoredPG, conversationUpsertPG). v_contacts,
// v_messages and v_ats are the batch's messages' contacts, ids and times in its order, v_known its known
// contacts (NULL if none). r is the function's record for its message-by-message path, free here.
var batchKeepsSQL = `
        IF v_known IS NOT NULL THEN
            FOR r IN SELECT u.c AS contact_id, u.m AS id, u.at AS created_at, 'incoming'::text AS direction, NULL::text AS status
                FROM unnest(v_contacts, v_messages, v_ats) WITH ORDINALITY AS u(c, m, at, n) WHERE u.c = ANY(v_known) ORDER BY u.n
            LOOP
                ` + replyStoredPG("r") + `
                ` + conversationUpsertPG("r", "CONTINUE;") + `
            END LOOP;
        END IF;`

// batchKeepsMigration gives the two triggers their condition and installs the batch function that
// keeps (with the messageSid claims the database has now: the conversion of partitions.go may still
// be under way), in one transaction.
func batchKeepsMigration(db *bun.DB) migrate.Migration {
	triggers := func(skip bool) []string {
		when, and := "", ""
		if skip {
			when, and = " WHEN ("+batchSkipsTriggerSQL+")", " AND "+batchSkipsTriggerSQL
		}
		return []string{
			`DROP TRIGGER IF EXISTS conversations_on_message_insert ON messages`,
			`CREATE CONSTRAINT TRIGGER conversations_on_message_insert AFTER INSERT ON messages
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW` + when + ` EXECUTE FUNCTION conversations_message_insert()`,
			`DROP TRIGGER IF EXISTS campaign_sends_on_reply ON messages`,
			replyTriggerPG(and),
		}
	}
	return migrate.Migration{
		Name: "20261206100001", Comment: "ingest_batch_keeps_conversations",
		Up: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			return execWithClaims(ctx, db, func(claims int) []string {
				return append(triggers(true), ingestSQL(ingestBatchFunctionTemplate, true, claims, true))
			})
		},
		// The function stays: with the triggers that fire for every row, it does the work twice.
		Down: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			return execWithClaims(ctx, db, func(int) []string { return triggers(false) })
		},
	}
}

// execWithClaims runs, in one transaction on PostgreSQL (nothing on SQLite), the statements that
// stmts makes for the messageSid claims mode the database is in (ingestClaims).
func execWithClaims(ctx context.Context, db *bun.DB, stmts func(claims int) []string) error {
	if db.Dialect().Name() != dialect.PG {
		return nil
	}
	return db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		claims, err := ingestClaims(ctx, tx)
		if err != nil {
			return err
		}
		for _, s := range stmts(claims) {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
}

// replyLocksContactFirstMigration installs the reply's trigger function and the batch function with
// the contact's share lock before its sends (replyStoredPG). Down keeps them: the lock taken earlier
// is the order every writer follows, and the previous functions differ only in taking it later.
func replyLocksContactFirstMigration(db *bun.DB) migrate.Migration {
	return migrate.Migration{
		Name: "20261207100001", Comment: "reply_locks_contact_before_sends",
		Up: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			return execWithClaims(ctx, db, func(claims int) []string {
				return []string{replyStoredFunctionPG(), ingestSQL(ingestBatchFunctionTemplate, true, claims, true)}
			})
		},
		Down: func(context.Context, *migrate.Migrator, *migrate.Migration) error { return nil },
	}
}
