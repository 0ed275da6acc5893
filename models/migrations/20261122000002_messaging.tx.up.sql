-- Custom-channel messaging: account webhook settings and bot defaults, per-contact bot state,
-- messages with their delivery attempts, and alerts for the team.
ALTER TABLE accounts ADD COLUMN webhook_url TEXT;

--bun:split

ALTER TABLE accounts ADD COLUMN webhook_secret TEXT;

--bun:split

ALTER TABLE accounts ADD COLUMN alert_webhook_url TEXT;

--bun:split

ALTER TABLE accounts ADD COLUMN bot_instructions TEXT NOT NULL DEFAULT '';

--bun:split

ALTER TABLE accounts ADD COLUMN bot_goal TEXT NOT NULL DEFAULT '';

--bun:split

ALTER TABLE accounts ADD COLUMN bot_language TEXT NOT NULL DEFAULT 'en';

--bun:split

ALTER TABLE contacts ADD COLUMN bot_paused BOOLEAN NOT NULL DEFAULT FALSE;

--bun:split

-- The campaign whose bot configuration the conversation continues with (its latest campaign message).
ALTER TABLE contacts ADD COLUMN conversation_campaign_id TEXT;

--bun:split

CREATE TABLE messages (
    id                 TEXT PRIMARY KEY,
    account_id         TEXT NOT NULL REFERENCES accounts (id),
    contact_id         TEXT NOT NULL REFERENCES contacts (id),
    campaign_id        TEXT,
    direction          TEXT NOT NULL,             -- incoming | outgoing
    channel            TEXT NOT NULL,             -- custom-channel label as received, or sms / whatsapp
    message_type       TEXT NOT NULL DEFAULT 'text',
    body               TEXT NOT NULL,
    media_url          TEXT,
    media_content_type TEXT,
    media_check        TEXT,                      -- a linked file, as the worker found it: pending | ok | a problem
    external_id        TEXT,                      -- incoming: messageSid or id, for de-duplication
    from_id            TEXT NOT NULL DEFAULT '',  -- incoming: the sender's id on the client's platform
    to_id              TEXT NOT NULL DEFAULT '',  -- incoming: the business id; outgoing: the contact's fromId
    author             TEXT NOT NULL DEFAULT '',  -- outgoing: bot | human | api
    status             TEXT NOT NULL,             -- incoming: received...; outgoing: pending | sent | failed
    error              TEXT,
    attempts           INTEGER NOT NULL DEFAULT 0,
    delivery_round     INTEGER NOT NULL DEFAULT 0, -- bumped by redeliver; part of the delivery task id
    next_attempt_at    TIMESTAMPTZ,
    reply_to_id        TEXT,                      -- a bot reply: the incoming message it answers
    bot_status         TEXT,                      -- incoming: pending | done | skipped | handoff | failed | none
    created_at         TIMESTAMPTZ NOT NULL,
    sent_at            TIMESTAMPTZ
);

--bun:split

-- The guarantee behind messageSid de-duplication (Redis is only the fast path).
CREATE UNIQUE INDEX messages_external_key ON messages (account_id, external_id) WHERE external_id IS NOT NULL;

--bun:split

-- At most one bot reply per incoming message, however often the task runs.
CREATE UNIQUE INDEX messages_reply_key ON messages (reply_to_id) WHERE reply_to_id IS NOT NULL;

--bun:split

CREATE INDEX messages_contact_idx ON messages (contact_id, id);

--bun:split

-- What the sweep looks for: incoming messages still owed a bot reply, outgoing ones still owed a delivery.
CREATE INDEX messages_bot_pending_idx ON messages (created_at) WHERE bot_status = 'pending';

--bun:split

CREATE INDEX messages_delivery_due_idx ON messages (created_at) WHERE direction = 'outgoing' AND status IN ('pending', 'failed');

--bun:split

CREATE TABLE message_attempts (
    id          TEXT PRIMARY KEY,
    message_id  TEXT NOT NULL REFERENCES messages (id),
    at          TIMESTAMPTZ NOT NULL,
    status_code INTEGER,
    error       TEXT,
    duration_ms INTEGER NOT NULL
);

--bun:split

CREATE INDEX message_attempts_message_idx ON message_attempts (message_id, id);

--bun:split

CREATE TABLE alerts (
    id             TEXT PRIMARY KEY,
    account_id     TEXT NOT NULL REFERENCES accounts (id),
    contact_id     TEXT NOT NULL REFERENCES contacts (id),
    message_id     TEXT,
    reason         TEXT NOT NULL,
    webhook_status TEXT NOT NULL,                 -- none | pending | sent | failed
    webhook_error  TEXT,
    created_at     TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE INDEX alerts_account_idx ON alerts (account_id, id);
