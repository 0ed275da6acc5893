package models

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// A campaign send keeps, beside its opening's message id, two times the campaign report and its CSV
// read (package report) instead of looking them up for each of a campaign's sends:
//
//	written_at      when its opening message was written: that message's created_at
//	first_reply_at  when the contact first replied after it: the created_at of the contact's first
//	                incoming message after written_at that is a reply (FirstReplySQL); NULL if none
//
// Database triggers keep both, in the transaction of every write that can change them, whichever code
// path writes (the ingest's PostgreSQL functions included): an opening inserted (both), an incoming
// message inserted (an earlier first reply), an incoming message's bot status changing to or from
// "keyword" and an opt-in recorded for a message (a keyword that opted in is a reply; the first reply
// is looked up again). No code writes the columns itself, so that a process of the release before them
// keeps them right too.
//
// Locks and races (PostgreSQL; SQLite runs one writer at a time). The triggers run at the commit, like
// the conversations table's, before them (their names sort first), so a transaction takes these send
// rows after its own statements' locks and before its conversations rows (models/tx.go). Each one first
// locks every send of the contact that has an opening or may get one (queued, deferred), in id order,
// and only then, in a statement of its own, reads and writes: PostgreSQL gives that statement a snapshot
// taken after the lock, which sees whatever the lock waited for. So an incoming message whose
// transaction commits while an opening for the same contact is being written waits for that opening,
// and then sees its written_at; the opening's transaction, in turn, looks its first reply up after
// holding the send, and sees every message committed before it; and a keyword's lookup waits for a
// reply being stored. Without the lock, a statement that began before the other committed would skip
// the row on its old version (written_at NULL, or an earlier first reply) and the reply would be lost.

// isReplySQL is true for an incoming message m (an alias) that counts as a reply to a campaign: every
// incoming message except an opt-out or a HELP. Both are handled as keywords (bot status "keyword"):
// the built-in and the account's words, and the plain-language requests the bot reads (its opt_out tool,
// the offline bot's phrases) through the same path; an opt-in keyword, which records an opted_in
// consent event for the message, is a reply.
func isReplySQL(m string) string {
	return `(COALESCE(` + m + `.bot_status, '') <> '` + BotKeyword + `' OR EXISTS (SELECT 1 FROM consent_events AS ei
		WHERE ei.message_id = ` + m + `.id AND ei.status = '` + ConsentOptedIn + `'))`
}

// FirstReplySQL is the time of the first reply (isReplySQL) that contact wrote after after (two SQL
// expressions), NULL if none: one range of messages_replies_idx, which holds the columns it reads. The
// one rule behind first_reply_at; the triggers and the backfill use it, and the tests compare the
// stored times with it.
func FirstReplySQL(contact, after string) string {
	return `(SELECT min(r.created_at) FROM messages AS r
		WHERE r.contact_id = ` + contact + ` AND r.direction = '` + DirectionIncoming + `' AND r.created_at > ` + after + `
		AND ` + isReplySQL("r") + `)`
}

// sendsLockSQL locks the sends of contact that have an opening or may get one, in id order.
func sendsLockSQL(contact string) string {
	return `PERFORM 1 FROM campaign_sends WHERE campaign_sends.contact_id = ` + contact + `
        AND (campaign_sends.message_id IS NOT NULL OR campaign_sends.status IN ('` + SendQueued + `', '` + SendDeferred + `'))
        ORDER BY campaign_sends.id FOR UPDATE;`
}

// replyStoredPG is what an incoming message does to its contact's sends, in PL/pgSQL statements on
// row (the message: its id, contact_id and created_at): an earlier first reply. The reply's trigger
// runs it, and a set-based ingest batch for each of its known contacts (batch_keeps.go).
func replyStoredPG(row string) string {
	return `IF EXISTS (SELECT 1 FROM campaign_sends WHERE campaign_sends.contact_id = ` + row + `.contact_id) THEN
        -- (most senders never had a campaign's opening)
        -- The contact's first message share-locks the contact after this, for its conversation's
        -- row (conversationUpsertPG); it takes that lock here, before the sends, as models/tx.go
        -- orders them. A conversation row once committed stays, and then nothing locks the contact.
        PERFORM 1 FROM contacts WHERE contacts.id = ` + row + `.contact_id
            AND NOT EXISTS (SELECT 1 FROM conversations WHERE conversations.contact_id = ` + row + `.contact_id)
            FOR SHARE OF contacts;
        ` + sendsLockSQL(row+".contact_id") + `
        UPDATE campaign_sends SET first_reply_at = ` + row + `.created_at
        WHERE campaign_sends.contact_id = ` + row + `.contact_id AND campaign_sends.written_at < ` + row + `.created_at
            AND (campaign_sends.first_reply_at IS NULL OR campaign_sends.first_reply_at > ` + row + `.created_at)
            AND EXISTS (SELECT 1 FROM messages AS m WHERE m.id = ` + row + `.id AND ` + isReplySQL("m") + `);
    END IF;`
}

// replyStoredFunctionPG is the reply's trigger function.
func replyStoredFunctionPG() string {
	return `
CREATE OR REPLACE FUNCTION campaign_sends_reply_stored() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    ` + replyStoredPG("NEW") + `
    RETURN NULL;
END $$`
}

// replyTriggerPG is the reply's trigger; and is a further condition on the row (batch_keeps.go), ""
// as migration 20261205900001 made it.
func replyTriggerPG(and string) string {
	return `CREATE CONSTRAINT TRIGGER campaign_sends_on_reply AFTER INSERT ON messages
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.direction = 'incoming'` + and + `)
    EXECUTE FUNCTION campaign_sends_reply_stored()`
}

// campaignFirstReplyPG: one function per event, each a deferred constraint trigger (see above).
func campaignFirstReplyPG() []string {
	// recompute looks the first reply up again for the sends of contact whose first reply t could
	// change, after locking them.
	recompute := func(contact, t string) string {
		return sendsLockSQL(contact) + `
    UPDATE campaign_sends SET first_reply_at = ` + FirstReplySQL("campaign_sends.contact_id", "campaign_sends.written_at") + `
    WHERE contact_id = ` + contact + ` AND written_at < ` + t + ` AND (first_reply_at IS NULL OR first_reply_at >= ` + t + `);`
	}
	return []string{`
CREATE OR REPLACE FUNCTION campaign_sends_opening_written() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The send is this transaction's already (WriteOpening updates it before inserting its opening).
    UPDATE campaign_sends SET written_at = NEW.created_at,
        first_reply_at = ` + FirstReplySQL("NEW.contact_id", "NEW.created_at") + `
    WHERE message_id = NEW.id;
    RETURN NULL;
END $$`, `
` + replyStoredFunctionPG(), `
CREATE OR REPLACE FUNCTION campaign_sends_keyword_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    ` + recompute("NEW.contact_id", "NEW.created_at") + `
    RETURN NULL;
END $$`, `
CREATE OR REPLACE FUNCTION campaign_sends_opt_in_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    at TIMESTAMPTZ;
BEGIN
    SELECT m.created_at INTO at FROM messages AS m WHERE m.id = NEW.message_id AND m.contact_id = NEW.contact_id;
    IF at IS NOT NULL THEN
        ` + recompute("NEW.contact_id", "at") + `
    END IF;
    RETURN NULL;
END $$`,
		`
CREATE OR REPLACE FUNCTION campaign_sends_message_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    ` + sendsLockSQL("NEW.contact_id") + `
    ` + movedSQL + `
    RETURN NULL;
END $$`,
		`
CREATE OR REPLACE FUNCTION campaign_sends_opening_set() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.written_at := (SELECT m.created_at FROM messages AS m WHERE m.id = NEW.message_id);
    NEW.first_reply_at := CASE WHEN NEW.written_at IS NOT NULL THEN ` + FirstReplySQL("NEW.contact_id", "NEW.written_at") + ` END;
    RETURN NEW;
END $$`,
		`DROP TRIGGER IF EXISTS campaign_sends_on_message_id ON campaign_sends`,
		`CREATE TRIGGER campaign_sends_on_message_id BEFORE UPDATE OF message_id ON campaign_sends
    FOR EACH ROW WHEN (OLD.message_id IS DISTINCT FROM NEW.message_id) EXECUTE FUNCTION campaign_sends_opening_set()`,
		`DROP TRIGGER IF EXISTS campaign_sends_on_insert ON campaign_sends`,
		`CREATE TRIGGER campaign_sends_on_insert BEFORE INSERT ON campaign_sends
    FOR EACH ROW WHEN (NEW.message_id IS NOT NULL) EXECUTE FUNCTION campaign_sends_opening_set()`,
		`DROP TRIGGER IF EXISTS campaign_sends_on_opening ON messages`,
		`CREATE CONSTRAINT TRIGGER campaign_sends_on_opening AFTER INSERT ON messages
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.direction = 'outgoing' AND NEW.campaign_id IS NOT NULL)
    EXECUTE FUNCTION campaign_sends_opening_written()`,
		`DROP TRIGGER IF EXISTS campaign_sends_on_reply ON messages`, replyTriggerPG(""),
		`DROP TRIGGER IF EXISTS campaign_sends_on_keyword ON messages`,
		`CREATE CONSTRAINT TRIGGER campaign_sends_on_keyword AFTER UPDATE OF bot_status ON messages
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.direction = 'incoming' AND (OLD.bot_status = 'keyword') IS DISTINCT FROM (NEW.bot_status = 'keyword'))
    EXECUTE FUNCTION campaign_sends_keyword_changed()`,
		`DROP TRIGGER IF EXISTS campaign_sends_on_opt_in ON consent_events`,
		`CREATE CONSTRAINT TRIGGER campaign_sends_on_opt_in AFTER INSERT ON consent_events
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.status = 'opted_in' AND NEW.message_id IS NOT NULL)
    EXECUTE FUNCTION campaign_sends_opt_in_recorded()`,
		`DROP TRIGGER IF EXISTS campaign_sends_on_moved ON messages`,
		`CREATE CONSTRAINT TRIGGER campaign_sends_on_moved AFTER UPDATE OF created_at ON messages
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.created_at IS DISTINCT FROM NEW.created_at)
    EXECUTE FUNCTION campaign_sends_message_moved()`,
	}
}

// campaignFirstReplySQLite: the same events as row triggers.
func campaignFirstReplySQLite() []string {
	recompute := func(contact, t string) string {
		return `UPDATE campaign_sends SET first_reply_at = ` + FirstReplySQL("campaign_sends.contact_id", "campaign_sends.written_at") + `
    WHERE contact_id = ` + contact + ` AND written_at < ` + t + ` AND (first_reply_at IS NULL OR first_reply_at >= ` + t + `);`
	}
	return []string{`
CREATE TRIGGER IF NOT EXISTS campaign_sends_on_opening AFTER INSERT ON messages
WHEN NEW.direction = 'outgoing' AND NEW.campaign_id IS NOT NULL BEGIN
    UPDATE campaign_sends SET written_at = NEW.created_at,
        first_reply_at = ` + FirstReplySQL("NEW.contact_id", "NEW.created_at") + `
    WHERE message_id = NEW.id;
END`, `
CREATE TRIGGER IF NOT EXISTS campaign_sends_on_reply AFTER INSERT ON messages WHEN NEW.direction = 'incoming' BEGIN
    UPDATE campaign_sends SET first_reply_at = NEW.created_at
    WHERE contact_id = NEW.contact_id AND written_at < NEW.created_at
        AND (first_reply_at IS NULL OR first_reply_at > NEW.created_at)
        AND EXISTS (SELECT 1 FROM messages AS m WHERE m.id = NEW.id AND ` + isReplySQL("m") + `);
END`, `
CREATE TRIGGER IF NOT EXISTS campaign_sends_on_keyword AFTER UPDATE OF bot_status ON messages
WHEN NEW.direction = 'incoming' AND (OLD.bot_status = 'keyword') IS NOT (NEW.bot_status = 'keyword') BEGIN
    ` + recompute("NEW.contact_id", "NEW.created_at") + `
END`, `
CREATE TRIGGER IF NOT EXISTS campaign_sends_on_opt_in AFTER INSERT ON consent_events
WHEN NEW.status = 'opted_in' AND NEW.message_id IS NOT NULL BEGIN
    ` + recompute("NEW.contact_id", "(SELECT m.created_at FROM messages AS m WHERE m.id = NEW.message_id)") + `
END`, `
CREATE TRIGGER IF NOT EXISTS campaign_sends_on_message_id AFTER UPDATE OF message_id ON campaign_sends
WHEN OLD.message_id IS NOT NEW.message_id BEGIN
    ` + openingSetSQLite + `
END`, `
CREATE TRIGGER IF NOT EXISTS campaign_sends_on_insert AFTER INSERT ON campaign_sends WHEN NEW.message_id IS NOT NULL BEGIN
    ` + openingSetSQLite + `
END`, `
CREATE TRIGGER IF NOT EXISTS campaign_sends_on_moved AFTER UPDATE OF created_at ON messages
WHEN OLD.created_at IS NOT NEW.created_at BEGIN
    ` + movedSQL + `
END`,
	}
}

// openingSetSQLite sets a send's written_at and first_reply_at from its (new) message_id.
var openingSetSQLite = `UPDATE campaign_sends SET written_at = (SELECT m.created_at FROM messages AS m WHERE m.id = NEW.message_id),
        first_reply_at = ` + FirstReplySQL("NEW.contact_id", "(SELECT m.created_at FROM messages AS m WHERE m.id = NEW.message_id)") + `
    WHERE id = NEW.id;`

// movedSQL follows a message whose created_at changed (the service never changes one; fixtures and
// data repairs may): the opening's written_at, then every first reply of the contact's sends.
var movedSQL = `UPDATE campaign_sends SET written_at = NEW.created_at WHERE message_id = NEW.id AND NEW.direction = 'outgoing';
    UPDATE campaign_sends SET first_reply_at = ` + FirstReplySQL("campaign_sends.contact_id", "campaign_sends.written_at") + `
    WHERE contact_id = NEW.contact_id AND written_at IS NOT NULL;`

// firstReplyBackfillBatch is how many sends one backfill transaction fills.
const firstReplyBackfillBatch = 5000

// campaignFirstReplyMigration adds the columns, the index the triggers find a contact's sends by, and
// the triggers, then fills the columns of the sends written before them. The backfill runs after the
// triggers exist, outside the migration's transaction, in transactions of firstReplyBackfillBatch sends
// that set written_at first (locking the rows) and look the first reply up in a second statement, as
// the triggers do: writes go on meanwhile (admin migrate runs beside the old release's processes).
func campaignFirstReplyMigration(db *bun.DB) migrate.Migration {
	sqlite := db.Dialect().Name() == dialect.SQLite
	exec := func(ctx context.Context, stmts []string) error {
		for _, s := range stmts {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", strings.SplitN(strings.TrimSpace(s), "\n", 2)[0], err)
			}
		}
		return nil
	}
	return migrate.Migration{
		Name: "20261205900001", Comment: "campaign_sends_first_reply",
		Up: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			var stmts []string
			if sqlite {
				for _, col := range []string{"written_at", "first_reply_at"} {
					var n int
					if err := db.NewRaw("SELECT count(*) FROM pragma_table_info('campaign_sends') WHERE name = ?", col).Scan(ctx, &n); err != nil {
						return err
					}
					if n == 0 {
						stmts = append(stmts, "ALTER TABLE campaign_sends ADD COLUMN "+col+" TIMESTAMPTZ")
					}
				}
				stmts = append(stmts, "CREATE INDEX IF NOT EXISTS campaign_sends_contact_idx ON campaign_sends (contact_id)")
				stmts = append(stmts, campaignFirstReplySQLite()...)
			} else {
				stmts = append(stmts,
					"ALTER TABLE campaign_sends ADD COLUMN IF NOT EXISTS written_at TIMESTAMPTZ, ADD COLUMN IF NOT EXISTS first_reply_at TIMESTAMPTZ")
				// Concurrently: campaign sends go on being written while it is built. A build that
				// stopped half way left an invalid index of the name, which IF NOT EXISTS would keep.
				var invalid bool
				if err := db.NewRaw(`SELECT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = to_regclass('campaign_sends_contact_idx') AND NOT indisvalid)`).
					Scan(ctx, &invalid); err != nil {
					return err
				}
				if invalid {
					stmts = append(stmts, "DROP INDEX CONCURRENTLY IF EXISTS campaign_sends_contact_idx")
				}
				stmts = append(stmts, "CREATE INDEX CONCURRENTLY IF NOT EXISTS campaign_sends_contact_idx ON campaign_sends (contact_id)")
				stmts = append(stmts, campaignFirstReplyPG()...)
			}
			if err := exec(ctx, stmts); err != nil {
				return err
			}
			return backfillFirstReplies(ctx, db)
		},
		Down: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			if sqlite {
				return exec(ctx, []string{
					"DROP TRIGGER IF EXISTS campaign_sends_on_opening", "DROP TRIGGER IF EXISTS campaign_sends_on_reply",
					"DROP TRIGGER IF EXISTS campaign_sends_on_keyword", "DROP TRIGGER IF EXISTS campaign_sends_on_opt_in",
					"DROP TRIGGER IF EXISTS campaign_sends_on_moved", "DROP TRIGGER IF EXISTS campaign_sends_on_message_id",
					"DROP TRIGGER IF EXISTS campaign_sends_on_insert",
				})
			}
			return exec(ctx, []string{
				"DROP TRIGGER IF EXISTS campaign_sends_on_opening ON messages", "DROP TRIGGER IF EXISTS campaign_sends_on_reply ON messages",
				"DROP TRIGGER IF EXISTS campaign_sends_on_keyword ON messages", "DROP TRIGGER IF EXISTS campaign_sends_on_opt_in ON consent_events",
				"DROP FUNCTION IF EXISTS campaign_sends_opening_written()", "DROP FUNCTION IF EXISTS campaign_sends_reply_stored()",
				"DROP FUNCTION IF EXISTS campaign_sends_keyword_changed()", "DROP FUNCTION IF EXISTS campaign_sends_opt_in_recorded()",
				"DROP TRIGGER IF EXISTS campaign_sends_on_moved ON messages", "DROP TRIGGER IF EXISTS campaign_sends_on_message_id ON campaign_sends",
				"DROP TRIGGER IF EXISTS campaign_sends_on_insert ON campaign_sends",
				"DROP FUNCTION IF EXISTS campaign_sends_message_moved()", "DROP FUNCTION IF EXISTS campaign_sends_opening_set()",
			})
		},
	}
}

// backfillFirstReplies fills written_at and first_reply_at of the sends that have an opening and no
// written_at yet, in id order, a batch per transaction.
func backfillFirstReplies(ctx context.Context, db *bun.DB) error {
	after := ""
	for {
		var last string
		err := db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			last = ""
			var ids []string
			if err := tx.NewRaw(`SELECT id FROM campaign_sends WHERE id > ? AND message_id IS NOT NULL AND written_at IS NULL
				ORDER BY id LIMIT ?`, after, firstReplyBackfillBatch).Scan(ctx, &ids); err != nil {
				return err
			}
			if len(ids) == 0 {
				return nil
			}
			last = ids[len(ids)-1]
			if _, err := tx.NewRaw(`UPDATE campaign_sends SET written_at = (SELECT m.created_at FROM messages AS m WHERE m.id = campaign_sends.message_id)
				WHERE id IN (?) AND written_at IS NULL`, bun.In(ids)).Exec(ctx); err != nil {
				return err
			}
			_, err := tx.NewRaw(`UPDATE campaign_sends SET first_reply_at = `+FirstReplySQL("campaign_sends.contact_id", "campaign_sends.written_at")+`
				WHERE id IN (?) AND written_at IS NOT NULL`, bun.In(ids)).Exec(ctx)
			return err
		})
		if err != nil {
			return fmt.Errorf("backfill first replies: %w", err)
		}
		if last == "" {
			return nil
		}
		after = last
	}
}
