-- Funnel outcomes (README, "Campaign reports"): goals reached, opening variants, and the indexes the
-- campaign report reads through.
-- A campaign's opening variants: a JSON array of 2 to 5 texts, used instead of opening_message.
ALTER TABLE campaigns ADD COLUMN opening_messages TEXT;

--bun:split

-- The 0-based variant a send's contact got (0 for a campaign with one opening message).
ALTER TABLE campaign_sends ADD COLUMN variant INTEGER NOT NULL DEFAULT 0;

--bun:split

-- A contact reached a campaign's goal (campaign_id NULL: the account's own bot's goal). At most one
-- per contact and campaign: the first is kept.
CREATE TABLE goals (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    contact_id  TEXT NOT NULL REFERENCES contacts (id),
    campaign_id TEXT REFERENCES campaigns (id),
    source      TEXT NOT NULL,                    -- bot | api | inbox
    note        TEXT NOT NULL DEFAULT '',
    summary     TEXT NOT NULL DEFAULT '',         -- the model's summary (source bot)
    message_id  TEXT,                             -- the incoming message the bot answered
    user_id     TEXT,                             -- the inbox user who recorded it
    at          TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE UNIQUE INDEX goals_key ON goals (contact_id, COALESCE(campaign_id, ''));

--bun:split

CREATE INDEX goals_campaign_idx ON goals (campaign_id, contact_id);

--bun:split

-- The report's first reply after an opening, and hand-offs after it, by contact and time.
CREATE INDEX messages_incoming_idx ON messages (contact_id, created_at) WHERE direction = 'incoming';

--bun:split

CREATE INDEX alerts_contact_idx ON alerts (contact_id, created_at);

--bun:split

CREATE INDEX consent_events_opt_out_idx ON consent_events (contact_id, at) WHERE status = 'opted_out';
