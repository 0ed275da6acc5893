-- Campaigns, the opening message each campaign owes each contact, provider credentials, and the
-- transport of each message (the custom-channel webhook, SMS or WhatsApp).
CREATE TABLE campaigns (
    id                    TEXT PRIMARY KEY,
    account_id            TEXT NOT NULL REFERENCES accounts (id),
    name                  TEXT NOT NULL,
    type                  TEXT NOT NULL,               -- combined | outgoing | incoming
    language              TEXT NOT NULL,
    bot_instructions      TEXT NOT NULL DEFAULT '',
    opening_message       TEXT NOT NULL DEFAULT '',
    goal                  TEXT NOT NULL DEFAULT '',
    follow_ups_enabled    BOOLEAN NOT NULL DEFAULT FALSE,
    follow_up_delays      TEXT NOT NULL,               -- JSON array of hours
    trigger_on_list_add   BOOLEAN NOT NULL DEFAULT FALSE,
    list_id               TEXT REFERENCES lists (id),
    channel               TEXT NOT NULL,               -- custom:<label> | sms | whatsapp
    status                TEXT NOT NULL,               -- draft | live | paused
    send_rate_per_minute  INTEGER,                     -- NULL: CAMPAIGN_SENDS_PER_MINUTE
    opening_delay_minutes INTEGER NOT NULL DEFAULT 0,
    whatsapp_template     TEXT,                        -- approved template for openings on WhatsApp
    created_at            TIMESTAMPTZ NOT NULL,
    updated_at            TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE INDEX campaigns_account_idx ON campaigns (account_id, id);

--bun:split

CREATE INDEX campaigns_list_idx ON campaigns (list_id);

--bun:split

-- The opening message a campaign owes a contact, and its follow-ups. One row per (campaign, contact):
-- a contact gets a campaign's opening message at most once.
CREATE TABLE campaign_sends (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    campaign_id     TEXT NOT NULL REFERENCES campaigns (id),
    contact_id      TEXT NOT NULL REFERENCES contacts (id),
    status          TEXT NOT NULL,                     -- queued | held | sent | skipped | failed
    detail          TEXT,                              -- why skipped or failed
    due_at          TIMESTAMPTZ NOT NULL,              -- not before (openingDelayMinutes)
    message_id      TEXT,                              -- the opening message once written
    follow_up_step  INTEGER NOT NULL DEFAULT 0,        -- follow-ups sent so far
    follow_ups_done BOOLEAN NOT NULL DEFAULT FALSE,    -- the lead replied, or none are left
    next_follow_up_at TIMESTAMPTZ,                     -- when the next follow-up is due
    created_at      TIMESTAMPTZ NOT NULL,
    sent_at         TIMESTAMPTZ
);

--bun:split

CREATE UNIQUE INDEX campaign_sends_key ON campaign_sends (campaign_id, contact_id);

--bun:split

CREATE INDEX campaign_sends_due_idx ON campaign_sends (status, due_at);

--bun:split

ALTER TABLE messages ADD COLUMN transport TEXT NOT NULL DEFAULT 'custom';

--bun:split

-- Provider credentials of an account. Secrets are never returned by the API.
CREATE TABLE channel_credentials (
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    kind        TEXT NOT NULL,                         -- sms | whatsapp
    settings    TEXT NOT NULL,                         -- JSON
    lookup_key  TEXT NOT NULL,                         -- how inbound webhooks find the account
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, kind)
);

--bun:split

CREATE UNIQUE INDEX channel_credentials_lookup_key ON channel_credentials (kind, lookup_key);
