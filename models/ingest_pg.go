package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// On PostgreSQL an incoming message is stored by one call of the function ingest_incoming, in one round
// trip, instead of a transaction of six statements (BEGIN, identity lookup, contact, identity, message,
// COMMIT). On the 2-core machine class this service is measured on, the round trips, not the SQL, were
// what the incoming endpoint's throughput was spent on (each one costs two context switches between the
// api and a PostgreSQL backend). The function follows contactForExternalID and IngestIncoming step by
// step; SQLite (standalone mode) runs those, and the behaviour suite runs on both backends.

// ingestFunctionMigration creates ingest_incoming on PostgreSQL; on SQLite it does nothing. (It and the
// migrations after it create the functions as they were then; ingestReopenMigration adds reopening.)
func ingestFunctionMigration(db *bun.DB) migrate.Migration {
	return migrate.Migration{
		Name: "20261122000006", Comment: "ingest_function",
		Up:   postgresOnly(db, ingestFunctionSQL+";\n"+ingestBatchFunctionSQL),
		Down: postgresOnly(db, `DROP FUNCTION IF EXISTS ingest_incoming_batch; DROP FUNCTION IF EXISTS ingest_incoming`),
	}
}

// ingestFunctionTemplate is ingest_incoming; ingestSQL fills in its {{...}} parts (reopening).
// Errors FC001 (the messageSid is stored already) and FC002 (a concurrent first
// message created the sender's identity or phone meanwhile) roll the block back to its savepoint; the
// first answers duplicate, the second starts over and finds the winner's contact, as errDuplicate and
// errRetry do in the Go version. Each statement of a volatile function sees rows committed before it
// (READ COMMITTED), which is what makes the retry find them.
const ingestFunctionTemplate = `
CREATE OR REPLACE FUNCTION ingest_incoming(
    p_account_id text, p_from_id text, p_address_phone text, p_address_email text,
    p_contact_id text, p_first_name text, p_last_name text, p_email text, p_phone text,
    p_message_id text, p_campaign_id text, p_channel text, p_transport text, p_message_type text,
    p_body text, p_media_url text, p_media_content_type text, p_media_check text,
    p_external_id text, p_to_id text, p_status text, p_bot_status text, p_at timestamptz,
    OUT message_id text, OUT contact_id text, OUT duplicate boolean{{reopened_out}})
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_contact text;
    v_new boolean;
    v_reopened text;
BEGIN
    FOR attempt IN 1..6 LOOP
        BEGIN
            v_contact := NULL;
            v_new := false;
            SELECT ci.contact_id INTO v_contact FROM contact_identities ci
             WHERE ci.account_id = p_account_id AND ci.external_id = p_from_id;
            IF v_contact IS NULL THEN
                IF p_address_phone IS NOT NULL THEN
                    SELECT c.id INTO v_contact FROM contacts c
                     WHERE c.account_id = p_account_id AND c.phone = p_address_phone;
                ELSIF p_address_email IS NOT NULL THEN
                    SELECT c.id INTO v_contact FROM contacts c
                     WHERE c.account_id = p_account_id AND c.email = p_address_email AND c.origin = 'api'
                     ORDER BY c.id LIMIT 1;
                END IF;
                IF v_contact IS NULL THEN
                    INSERT INTO contacts (id, account_id, first_name, last_name, phone, email, origin, created_at, updated_at)
                    VALUES (p_contact_id, p_account_id, p_first_name, p_last_name, p_phone, p_email, 'channel', p_at, p_at)
                    ON CONFLICT DO NOTHING RETURNING id INTO v_contact;
                    IF v_contact IS NULL THEN
                        RAISE EXCEPTION 'retry' USING ERRCODE = 'FC002';
                    END IF;
                    v_new := true;
                END IF;
                INSERT INTO contact_identities (account_id, external_id, contact_id, created_at)
                VALUES (p_account_id, p_from_id, v_contact, p_at) ON CONFLICT DO NOTHING;
                IF NOT FOUND THEN
                    RAISE EXCEPTION 'retry' USING ERRCODE = 'FC002';
                END IF;
            END IF;
{{claim}}
            INSERT INTO messages (id, account_id, contact_id, campaign_id, direction, channel, transport,
                message_type, body, media_url, media_content_type, media_check, external_id, from_id, to_id,
                status, bot_status, created_at)
            VALUES (p_message_id, p_account_id, v_contact, p_campaign_id, 'incoming', p_channel, p_transport,
                p_message_type, p_body, p_media_url, p_media_content_type, p_media_check, p_external_id,
                p_from_id, p_to_id, p_status, p_bot_status, p_at)
            ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'duplicate' USING ERRCODE = 'FC001';
            END IF;
            IF p_campaign_id IS NOT NULL THEN
                UPDATE contacts SET conversation_campaign_id = p_campaign_id WHERE id = v_contact;
            END IF;{{reopen}}
            message_id := p_message_id;
            contact_id := v_contact;
            duplicate := false;
            RETURN;
        EXCEPTION
            WHEN SQLSTATE 'FC001' THEN{{duplicate_lookup}}
                duplicate := true;
                RETURN;
            WHEN SQLSTATE 'FC002' THEN
                IF attempt = 6 THEN
                    RAISE;
                END IF;
        END;
    END LOOP;
END
$fn$`

// ingestBatchFunctionTemplate is ingest_incoming_batch; ingestSQL fills in its {{...}} parts. It
// stores several messages in one transaction, so that concurrent requests share
// one round trip and one commit (one WAL flush).
//
// It first tries the whole batch set-based: one statement looks up each sender's contact and inserts
// the new contacts, the new identities and the messages, three multi-row INSERTs instead of a savepoint
// and three single-row statements per message (on the 2-core machine of README "Performance", pgbench
// with one client: 2.1-2.4 ms for a batch of 16 new senders instead of 2.5-2.8). That is the same as
// storing the messages one by one only when they are independent of each other, so it is tried only
// when no two messages share a sender, a messageSid, an existing contact, or (for new senders) a phone
// number; and it is kept only when every insert inserted what it should. Anything else rolls it back
// to its savepoint, and the batch is stored message by message, in order, each in its own savepoint
// inside ingest_incoming, so that a duplicate or a lost race affects only that message:
//   - a messageSid stored already: its message's insert inserts nothing (FC003);
//   - a concurrent first message of one of the senders, or of one of the new phone numbers (another
//     batch's, committed after this statement began): the contact insert inserts nothing, and the
//     message (and the identity, for a fromId the other batch did not store) that name the contact it
//     meant to insert fail their foreign keys when the statement ends (foreign_key_violation), before
//     the counts are compared.
//
// set_based says which way the batch went.
const ingestBatchFunctionTemplate = `
CREATE OR REPLACE FUNCTION ingest_incoming_batch(p_batch jsonb)
RETURNS TABLE (ord bigint, message_id text, contact_id text, duplicate boolean, set_based boolean{{reopened_column}})
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    r record;
    o record;
    v_independent boolean;
    v_complete boolean;
    v_ord bigint[];
    v_messages text[];
    v_contacts text[];
    v_ats timestamptz[];
    v_reopened text[];
    v_known text[];
    v_known_ats timestamptz[];
    v_carry text[];
    v_carry_campaigns text[];
BEGIN
    BEGIN{{batch_keep_on}}
        WITH x AS (
            SELECT * FROM jsonb_to_recordset(p_batch) AS x(
                account_id text, from_id text, address_phone text, address_email text, contact_id text,
                first_name text, last_name text, email text, phone text, message_id text, campaign_id text,
                channel text, transport text, message_type text, body text, media_url text,
                media_content_type text, media_check text, external_id text, to_id text, status text,
                bot_status text, at timestamptz, n bigint)
        ), res AS (
            -- The lookups of ingest_incoming. LIMIT 1 keeps each one an index probe per message (a
            -- plain join may be planned as a scan of all contacts).
            SELECT x.*, ci.contact_id AS known_identity, COALESCE(ci.contact_id, ph.id, em.id) AS known_contact
            FROM x
            LEFT JOIN LATERAL (SELECT i.contact_id FROM contact_identities i
                WHERE i.account_id = x.account_id AND i.external_id = x.from_id LIMIT 1) ci ON true
            LEFT JOIN LATERAL (SELECT c.id FROM contacts c WHERE ci.contact_id IS NULL AND x.address_phone IS NOT NULL
                AND c.account_id = x.account_id AND c.phone = x.address_phone LIMIT 1) ph ON true
            LEFT JOIN LATERAL (SELECT c.id FROM contacts c WHERE ci.contact_id IS NULL AND x.address_phone IS NULL
                AND x.address_email IS NOT NULL AND c.account_id = x.account_id AND c.email = x.address_email
                AND c.origin = 'api' ORDER BY c.id LIMIT 1) em ON true
        ), ok AS (
            SELECT count(*) = count(DISTINCT (account_id, from_id))
               AND count(external_id)
                   = count(DISTINCT (account_id, external_id)) FILTER (WHERE external_id IS NOT NULL)
               AND count(known_contact) = count(DISTINCT known_contact)
               AND NOT EXISTS (
                   SELECT 1 FROM res, LATERAL (SELECT DISTINCT v FROM unnest(ARRAY[res.address_phone, res.phone]) v
                       WHERE v IS NOT NULL) p
                   WHERE res.known_contact IS NULL GROUP BY res.account_id, p.v HAVING count(*) > 1) AS independent
            FROM res
        ), c AS (
            INSERT INTO contacts (id, account_id, first_name, last_name, phone, email, origin, created_at, updated_at,
                conversation_campaign_id)
            SELECT res.contact_id, res.account_id, res.first_name, res.last_name, res.phone, res.email, 'channel',
                res.at, res.at, res.campaign_id
            FROM res, ok WHERE ok.independent AND res.known_contact IS NULL
            ON CONFLICT DO NOTHING RETURNING 1
        ), i AS (
            INSERT INTO contact_identities (account_id, external_id, contact_id, created_at)
            SELECT res.account_id, res.from_id, COALESCE(res.known_contact, res.contact_id), res.at
            FROM res, ok WHERE ok.independent AND res.known_identity IS NULL
            ON CONFLICT DO NOTHING RETURNING 1
        ){{batch_claim}}, m AS (
            INSERT INTO messages (id, account_id, contact_id, campaign_id, direction, channel, transport,
                message_type, body, media_url, media_content_type, media_check, external_id, from_id, to_id,
                status, bot_status, created_at)
            SELECT res.message_id, res.account_id, COALESCE(res.known_contact, res.contact_id), res.campaign_id,
                'incoming', res.channel, res.transport, res.message_type, res.body, res.media_url,
                res.media_content_type, res.media_check, res.external_id, res.from_id, res.to_id, res.status,
                res.bot_status, res.at
            FROM res, ok WHERE ok.independent
            ON CONFLICT DO NOTHING RETURNING 1
        ){{batch_new_conversations}}
        SELECT ok.independent,
            (SELECT count(*) FROM c) = (SELECT count(*) FROM res WHERE known_contact IS NULL)
            AND (SELECT count(*) FROM i) = (SELECT count(*) FROM res WHERE known_identity IS NULL){{batch_claim_check}}
            AND (SELECT count(*) FROM m) = (SELECT count(*) FROM res),
            (SELECT array_agg(res.n ORDER BY res.n) FROM res),
            (SELECT array_agg(res.message_id ORDER BY res.n) FROM res),
            (SELECT array_agg(COALESCE(res.known_contact, res.contact_id) ORDER BY res.n) FROM res),
            (SELECT array_agg(res.at ORDER BY res.n) FROM res),
            (SELECT array_agg(res.known_contact ORDER BY res.known_contact) FROM res WHERE res.known_contact IS NOT NULL),
            (SELECT array_agg(res.at ORDER BY res.known_contact) FROM res WHERE res.known_contact IS NOT NULL),
            (SELECT array_agg(res.known_contact ORDER BY res.known_contact) FROM res
             WHERE res.known_contact IS NOT NULL AND res.campaign_id IS NOT NULL),
            (SELECT array_agg(res.campaign_id ORDER BY res.known_contact) FROM res
             WHERE res.known_contact IS NOT NULL AND res.campaign_id IS NOT NULL)
        INTO v_independent, v_complete, v_ord, v_messages, v_contacts, v_ats, v_known, v_known_ats, v_carry,
            v_carry_campaigns FROM ok;{{batch_keep_off}}
        IF v_independent AND NOT v_complete THEN
            RAISE EXCEPTION 'conflict' USING ERRCODE = 'FC003';
        END IF;
        -- The batch's known contacts only, and only when there are some: a new contact has no campaign
        -- to carry over and starts open. As joins over every contact of the batch, these updates were
        -- planned, on a young database, as scans of all contacts for every batch (docs/performance.md,
        -- 2026-11-27).
        IF v_independent AND v_carry IS NOT NULL THEN
            UPDATE contacts SET conversation_campaign_id = x.campaign
            FROM unnest(v_carry, v_carry_campaigns) AS x(id, campaign) WHERE contacts.id = x.id;
        END IF;
    EXCEPTION WHEN SQLSTATE 'FC003' OR foreign_key_violation THEN
        v_independent := false;
    END;
    IF v_independent THEN{{batch_reopen}}{{batch_keep}}
        RETURN QUERY SELECT u.n, u.m, u.c, false, true{{batch_reopened}} FROM unnest(v_ord, v_messages, v_contacts) AS u(n, m, c);
        RETURN;
    END IF;
    FOR r IN SELECT * FROM jsonb_to_recordset(p_batch) AS x(
        account_id text, from_id text, address_phone text, address_email text, contact_id text,
        first_name text, last_name text, email text, phone text, message_id text, campaign_id text,
        channel text, transport text, message_type text, body text, media_url text,
        media_content_type text, media_check text, external_id text, to_id text, status text,
        bot_status text, at timestamptz, n bigint) ORDER BY x.n
    LOOP
        SELECT * INTO o FROM ingest_incoming(r.account_id, r.from_id, r.address_phone, r.address_email,
            r.contact_id, r.first_name, r.last_name, r.email, r.phone, r.message_id, r.campaign_id,
            r.channel, r.transport, r.message_type, r.body, r.media_url, r.media_content_type,
            r.media_check, r.external_id, r.to_id, r.status, r.bot_status, r.at);
        ord := r.n;
        message_id := o.message_id;
        contact_id := o.contact_id;
        duplicate := o.duplicate;
        set_based := false;{{loop_reopened}}
        RETURN NEXT;
    END LOOP;
END
$fn$`

// The functions as created before conversations had a status, and as ingestReopenMigration makes
// them: storing a message reopens its conversation when resolved or snoozed (reopenSQL, the rule
// reopenConversation runs on SQLite), in the same transaction, and says so in the column reopened.
var (
	ingestFunctionSQL            = ingestSQL(ingestFunctionTemplate, false, claimsNone, false)
	ingestBatchFunctionSQL       = ingestSQL(ingestBatchFunctionTemplate, false, claimsNone, false)
	ingestFunctionReopenSQL      = ingestSQL(ingestFunctionTemplate, true, claimsNone, false)
	ingestBatchFunctionReopenSQL = ingestSQL(ingestBatchFunctionTemplate, true, claimsNone, false)
)

// How the functions de-duplicate messageSids. Before messages was partitioned (claimsNone), its
// unique index messages_external_key did, which the INSERT's ON CONFLICT DO NOTHING met. A unique index
// of a partitioned table must contain the partition key, so it could only hold within each monthly
// partition; instead each messageSid is claimed in message_claims (primary key (account_id,
// external_id), naming the message), in the same statement as the message, where the index entry was:
// exact across partitions, and no more index writes than before (the claim's key replaces the
// message's). A messageSid stored already fails its claim (FC001, or in a set-based batch FC003) and is
// answered with the message its claim names. claimsTransition is the same while the conversion fills
// the claims of the messages stored before them (partitions.go): a messageSid that has no claim yet is
// still found by messages_external_key.
const (
	claimsNone = iota
	claimsTransition
	claimsFinal
)

// ingestClaims is how the installed ingest functions de-duplicate messageSids (claimsNone before the
// conversion to partitions, claimsTransition during it, claimsFinal after it).
func ingestClaims(ctx context.Context, db bun.IDB) (int, error) {
	var batch, one string
	if err := db.QueryRowContext(ctx, `SELECT
		COALESCE((SELECT prosrc FROM pg_proc WHERE proname = 'ingest_incoming_batch'), ''),
		COALESCE((SELECT prosrc FROM pg_proc WHERE proname = 'ingest_incoming'), '')`).Scan(&batch, &one); err != nil {
		return 0, err
	}
	switch {
	case !strings.Contains(batch, "message_claims"):
		return claimsNone, nil
	case strings.Contains(one, "m.external_id = p_external_id"):
		return claimsTransition, nil
	}
	return claimsFinal, nil
}

// ingestClaimSQL claims the messageSid before the message is inserted (ingest_incoming).
const ingestClaimSQL = `
            IF p_external_id IS NOT NULL THEN
                INSERT INTO message_claims (account_id, external_id, message_id)
                VALUES (p_account_id, p_external_id, p_message_id) ON CONFLICT DO NOTHING;
                IF NOT FOUND THEN
                    RAISE EXCEPTION 'duplicate' USING ERRCODE = 'FC001';
                END IF;
            END IF;`

// ingestDuplicateSQL answers a messageSid stored already (FC001) with its first message: as before
// claims, from messages_external_key; with them, from the claim. Under claimsFinal a claim that is not
// there any more was dropped with its message (MESSAGE_RETENTION_MONTHS) after this call met it: the
// message is stored anew.
var ingestDuplicateSQL = map[int]string{
	claimsNone: `
                SELECT m.id, m.contact_id INTO message_id, contact_id FROM messages m
                 WHERE m.account_id = p_account_id AND m.external_id = p_external_id;`,
	claimsTransition: `
                SELECT c.message_id INTO message_id FROM message_claims c
                 WHERE c.account_id = p_account_id AND c.external_id = p_external_id;
                IF message_id IS NULL THEN
                    SELECT m.id INTO message_id FROM messages m
                     WHERE m.account_id = p_account_id AND m.external_id = p_external_id;
                END IF;
                SELECT m.contact_id INTO contact_id FROM messages m WHERE m.id = message_id;`,
	claimsFinal: `
                SELECT c.message_id INTO message_id FROM message_claims c
                 WHERE c.account_id = p_account_id AND c.external_id = p_external_id;
                IF message_id IS NULL AND attempt < 6 THEN
                    CONTINUE;
                END IF;
                SELECT m.contact_id INTO contact_id FROM messages m WHERE m.id = message_id;`,
}

// ingestBatchClaimSQL claims the set-based batch's messageSids, just before its messages are inserted;
// a claim that is taken makes the batch go message by message (FC003).
const (
	ingestBatchClaimSQL = `, cl AS (
            INSERT INTO message_claims (account_id, external_id, message_id)
            SELECT res.account_id, res.external_id, res.message_id
            FROM res, ok WHERE ok.independent AND res.external_id IS NOT NULL
            ON CONFLICT DO NOTHING RETURNING 1
        )`
	ingestBatchClaimCheckSQL = `
            AND (SELECT count(*) FROM cl) = (SELECT count(*) FROM res WHERE external_id IS NOT NULL)`
)

// ingestSQL fills in a function template: without reopening, or with it; with the messageSid claims
// of claims; keeps: whether a set-based batch keeps its conversations and first replies itself
// (batch_keeps.go). A contact the message created is open already; an existing one is reopened by the
// UPDATE's condition (reopenSQL), which locks only a row it changes. In a set-based batch the contacts are distinct (its independence test), so each
// row is updated at most once.
func ingestSQL(template string, reopen bool, claims int, keeps bool) string {
	claim, batchClaim, batchClaimCheck := "", "", ""
	if claims != claimsNone {
		claim, batchClaim, batchClaimCheck = ingestClaimSQL, ingestBatchClaimSQL, ingestBatchClaimCheckSQL
	}
	keepOn, keepOff, keepNew, keep := "", "", "", ""
	if keeps {
		keepOn, keepOff, keepNew, keep = batchKeepsOnSQL, batchKeepsOffSQL, batchNewConversationsSQL, batchKeepsSQL
	}
	template = strings.NewReplacer("{{claim}}", claim, "{{duplicate_lookup}}", ingestDuplicateSQL[claims],
		"{{batch_claim}}", batchClaim, "{{batch_claim_check}}", batchClaimCheck,
		"{{batch_keep_on}}", keepOn, "{{batch_keep_off}}", keepOff, "{{batch_new_conversations}}", keepNew,
		"{{batch_keep}}", keep).Replace(template)
	if !reopen {
		return strings.NewReplacer("{{reopened_out}}", "", "{{reopened_column}}", "", "{{reopen}}", "", "{{batch_reopen}}", "", "{{batch_reopened}}", "",
			"{{loop_reopened}}", "").Replace(template)
	}
	return strings.NewReplacer(
		"{{reopened_out}}", ", OUT reopened boolean",
		"{{reopened_column}}", ", reopened boolean",
		"{{reopen}}", `
            reopened := false;
            IF NOT v_new THEN
                `+reopenSQL("", "contacts.id = v_contact", "p_at")+` INTO v_reopened;
                reopened := FOUND;
            END IF;`,
		"{{batch_reopen}}", `
        IF v_known IS NOT NULL THEN
            WITH reo AS (`+reopenSQL("unnest(v_known, v_known_ats) AS x(c, at)", "contacts.id = x.c", "x.at")+`)
            SELECT array_agg(reo.id) INTO v_reopened FROM reo;
        END IF;`,
		"{{batch_reopened}}", ", COALESCE(u.c = ANY(v_reopened), false)",
		"{{loop_reopened}}", `
        reopened := COALESCE(o.reopened, false);`,
	).Replace(template)
}

// ingestBatchSetBasedMigration gives databases migrated before it the set-based ingest_incoming_batch
// (its result gained a column, so it is dropped first). Down leaves it: the older code reads only the
// columns it knows.
func ingestBatchSetBasedMigration(db *bun.DB) migrate.Migration {
	return migrate.Migration{
		Name: "20261130000001", Comment: "ingest_batch_set_based",
		Up:   postgresOnly(db, `DROP FUNCTION IF EXISTS ingest_incoming_batch(jsonb);`+ingestBatchFunctionSQL),
		Down: postgresOnly(db, ""),
	}
}

// ingestBatchForeignKeyMigration gives databases migrated before it the ingest_incoming_batch whose
// set-based attempt also falls back to message by message on a foreign-key violation (a concurrent
// first message of a sender or phone). Before, the violation failed the whole call (pgdriver reported
// it as "bufio: buffer full": the error's context, which quotes the whole statement, did not fit its
// read buffer) and the api's batcher stored the batch again message by message, a round trip each.
// Down leaves it: the older code calls it the same way.
func ingestBatchForeignKeyMigration(db *bun.DB) migrate.Migration {
	return migrate.Migration{
		Name: "20261201780003", Comment: "ingest_batch_foreign_key_fallback",
		Up:   postgresOnly(db, ingestBatchFunctionSQL),
		Down: postgresOnly(db, ""),
	}
}

// ingestReopenMigration makes storing a message reopen its conversation (ingestSQL), once the contacts
// have a conversation status (migration 20261203100001). Both functions gain a result column, so they
// are dropped first; the older code names the columns it reads and keeps working. Down puts back the
// functions without it, which read no status column.
func ingestReopenMigration(db *bun.DB) migrate.Migration {
	const drop = `DROP FUNCTION IF EXISTS ingest_incoming_batch(jsonb); DROP FUNCTION IF EXISTS ingest_incoming;`
	return migrate.Migration{
		Name: "20261203100002", Comment: "ingest_reopens_conversations",
		Up:   postgresOnly(db, drop+ingestFunctionReopenSQL+";\n"+ingestBatchFunctionReopenSQL),
		Down: postgresOnly(db, drop+ingestFunctionSQL+";\n"+ingestBatchFunctionSQL),
	}
}

// ingestBatchKnownContactsMigration re-creates ingest_incoming_batch so that its updates of existing
// contacts (reopening, the campaign carried over) run only for the batch's known contacts, and not at
// all for a batch of new senders (ingestSQL's template says why). Down leaves it: it answers as the
// function before it did.
func ingestBatchKnownContactsMigration(db *bun.DB) migrate.Migration {
	const drop = `DROP FUNCTION IF EXISTS ingest_incoming_batch(jsonb);`
	return migrate.Migration{
		Name: "20261204100002", Comment: "ingest_batch_known_contacts",
		Up:   postgresOnly(db, drop+ingestBatchFunctionReopenSQL),
		Down: postgresOnly(db, ""),
	}
}

// ingestRow is one message as ingest_incoming takes it.
type ingestRow struct {
	AccountID        string    `json:"account_id"`
	FromID           string    `json:"from_id"`
	AddressPhone     *string   `json:"address_phone"`
	AddressEmail     *string   `json:"address_email"`
	ContactID        string    `json:"contact_id"`
	FirstName        string    `json:"first_name"`
	LastName         string    `json:"last_name"`
	Email            *string   `json:"email"`
	Phone            *string   `json:"phone"`
	MessageID        string    `json:"message_id"`
	CampaignID       *string   `json:"campaign_id"`
	Channel          string    `json:"channel"`
	Transport        string    `json:"transport"`
	MessageType      string    `json:"message_type"`
	Body             string    `json:"body"`
	MediaURL         *string   `json:"media_url"`
	MediaContentType *string   `json:"media_content_type"`
	MediaCheck       *string   `json:"media_check"`
	ExternalID       *string   `json:"external_id"`
	ToID             string    `json:"to_id"`
	Status           string    `json:"status"`
	BotStatus        *string   `json:"bot_status"`
	At               time.Time `json:"at"`
	// N is the row's place in its batch.
	N int `json:"n"`
}

func newIngestRow(m *Message, c *Contact) ingestRow {
	r := ingestRow{
		AccountID: m.AccountID, FromID: m.FromID, ContactID: c.ID, FirstName: c.FirstName, LastName: c.LastName,
		Email: c.Email, Phone: c.Phone, MessageID: m.ID, CampaignID: m.CampaignID, Channel: m.Channel,
		Transport: m.Transport, MessageType: m.MessageType, Body: m.Body, MediaURL: m.MediaURL,
		MediaContentType: m.MediaContentType, MediaCheck: m.MediaCheck, ExternalID: m.ExternalID, ToID: m.ToID,
		Status: m.Status, BotStatus: m.BotStatus, At: m.CreatedAt,
	}
	if phone, email := addressOf(m.FromID); phone != "" {
		r.AddressPhone = &phone
	} else if email != "" {
		r.AddressEmail = &email
	}
	return r
}

// ingestResult is what ingest_incoming answered for one message.
type ingestResult struct {
	Ord       int64  `bun:"ord"`
	MessageID string `bun:"message_id"`
	ContactID string `bun:"contact_id"`
	Duplicate bool   `bun:"duplicate"`
	// SetBased says that the message's batch was stored set-based (ingest_incoming_batch).
	SetBased bool `bun:"set_based"`
	// Reopened says that storing the message reopened its resolved or snoozed conversation.
	Reopened bool `bun:"reopened"`
}

// ingestOne stores one message by itself.
func (s *Store) ingestOne(ctx context.Context, r ingestRow) (ingestResult, error) {
	// Prepared (prepared.go): a request that finds the database idle runs this alone, so under a
	// moderate load most messages come here, and bun would write all 23 arguments into the SQL text for
	// PostgreSQL to parse every time.
	stmt, err := s.prepared(ctx, "ingest_incoming", func() string {
		return `SELECT message_id, contact_id, duplicate, COALESCE(reopened, false) FROM ingest_incoming($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`
	})
	var res ingestResult
	if err == nil {
		// A deadlock is retried, as every transaction's (tx.go): the message's commit can meet, for
		// instance, a campaign opening being written for the same contact.
		err = retryConflicts(ctx, func() error {
			res = ingestResult{}
			return stmt.QueryRowContext(ctx,
				r.AccountID, r.FromID, r.AddressPhone, r.AddressEmail, r.ContactID, r.FirstName, r.LastName, r.Email,
				r.Phone, r.MessageID, r.CampaignID, r.Channel, r.Transport, r.MessageType, r.Body, r.MediaURL,
				r.MediaContentType, r.MediaCheck, r.ExternalID, r.ToID, r.Status, r.BotStatus, r.At,
			).Scan(&res.MessageID, &res.ContactID, &res.Duplicate, &res.Reopened)
		})
	}
	if err != nil {
		return res, fmt.Errorf("ingest_incoming: %w", err)
	}
	return res, nil
}

// ingestBatch stores the rows in one transaction; the results come in the rows' order.
func (s *Store) ingestBatch(ctx context.Context, rows []ingestRow) ([]ingestResult, error) {
	for i := range rows {
		rows[i].N = i
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	// Prepared, so that the batch travels as one parameter instead of a literal PostgreSQL must lex.
	stmt, err := s.prepared(ctx, "ingest_incoming_batch", func() string {
		return `SELECT ord, message_id, contact_id, duplicate, set_based, reopened FROM ingest_incoming_batch($1::jsonb)`
	})
	if err != nil {
		return nil, fmt.Errorf("ingest_incoming_batch: %w", err)
	}
	found, err := stmt.QueryContext(ctx, string(raw))
	if err != nil {
		return nil, fmt.Errorf("ingest_incoming_batch: %w", err)
	}
	defer found.Close()
	res := make([]ingestResult, 0, len(rows))
	for found.Next() {
		var r ingestResult
		if err := found.Scan(&r.Ord, &r.MessageID, &r.ContactID, &r.Duplicate, &r.SetBased, &r.Reopened); err != nil {
			return nil, fmt.Errorf("ingest_incoming_batch: %w", err)
		}
		res = append(res, r)
	}
	if err := found.Err(); err != nil {
		return nil, fmt.Errorf("ingest_incoming_batch: %w", err)
	}
	if len(res) != len(rows) {
		return nil, fmt.Errorf("ingest_incoming_batch: %d results for %d messages", len(res), len(rows))
	}
	return res, nil
}

// ingestBatcher stores the incoming messages of concurrent requests in batches (batcher.go): one
// transaction, one round trip and one commit for the messages that arrive together. Every request
// still waits for its own message's commit before it answers.
type ingestBatcher = batcher[ingestRow, ingestResult]

// ingestFlushers is how many batches are in flight at once. Two, not more: a message that finds a
// flusher idle goes alone, so each extra flusher makes the batches smaller, and every batch pays its
// own statement, commit and WAL flush. Measured on the 2-core machine of docs/performance.md (fourth
// sitting of 2026-11-28, the accept path's closed loop, 64 concurrent): four flushers took 0.40-0.42 ms of
// PostgreSQL's CPU per message and accepted 2,000-2,114/s; two, 0.28-0.31 ms and 2,314-2,587/s; one,
// 0.21-0.24 ms and 2,359-2,654/s. One is not kept: a batch that waits on a row lock (a sender whose
// contact another transaction is writing) would hold up every message of the process behind it; with
// two, the other flusher goes on.
const (
	ingestFlushers     = 2
	ingestMaxBatch     = 64 // messages in one batch
	ingestBatchTimeout = 10 * time.Second
)

func newIngestBatcher(s *Store) *ingestBatcher {
	return newBatcher("ingest", ingestFlushers, ingestMaxBatch, errIngestClosed, s.flushIngest)
}

// errIngestClosed answers a message the batcher will not store because the store is closing (the
// process is shutting down): an unavailable error, so the api answers 503 and the sender retries, with
// the same messageSid, against a process that runs.
var errIngestClosed = Errorf(CodeUnavailable, "the service is shutting down; retry with the same messageSid")

// flushIngest stores a batch. When the batch as a whole fails (a deadlock between two batches creating
// the same new senders in opposite order, say), each message is stored by itself, so one message's
// failure is never another's.
func (s *Store) flushIngest(batch []*batchCall[ingestRow, ingestResult]) {
	ctx, cancel := context.WithTimeout(context.Background(), ingestBatchTimeout)
	defer cancel()
	if len(batch) > 1 {
		rows := make([]ingestRow, len(batch))
		for i, call := range batch {
			rows[i] = call.in
		}
		res, err := s.ingestBatch(ctx, rows)
		if err == nil {
			for i, call := range batch {
				call.answer(res[i], nil)
			}
			return
		}
	}
	for _, call := range batch {
		call.answer(s.ingestOne(ctx, call.in))
	}
}

// ingestPostgres stores m (an incoming message whose sender, when new, becomes newContact). It fills
// m.ContactID, or returns the id of the first message with that messageSid and duplicate true;
// reopened says that the message reopened its conversation.
func (s *Store) ingestPostgres(ctx context.Context, m *Message, newContact *Contact) (firstID string, duplicate, reopened bool, err error) {
	res, err := s.ingest.do(ctx, newIngestRow(m, newContact))
	if err != nil {
		return "", false, false, err
	}
	if res.Duplicate {
		return res.MessageID, true, false, nil
	}
	m.ContactID = res.ContactID
	return "", false, res.Reopened, nil
}
