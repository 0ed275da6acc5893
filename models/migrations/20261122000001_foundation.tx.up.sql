-- Accounts, their owners and API keys; contacts, contact identities, lists and list members.
-- The SQL is written to run unchanged on PostgreSQL and SQLite: TEXT ids, TIMESTAMPTZ columns,
-- partial unique indexes.
CREATE TABLE accounts (
    id                   TEXT PRIMARY KEY,
    name                 TEXT NOT NULL DEFAULT '',
    email                TEXT NOT NULL,
    is_agency            BOOLEAN NOT NULL DEFAULT FALSE,
    parent_id            TEXT REFERENCES accounts (id),
    owner_user_id        TEXT NOT NULL,
    credit_balance_milli BIGINT NOT NULL DEFAULT 0,
    created_at           TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE UNIQUE INDEX accounts_email_key ON accounts (email);

--bun:split

CREATE INDEX accounts_parent_idx ON accounts (parent_id, id);

--bun:split

CREATE TABLE users (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    email      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE UNIQUE INDEX users_email_key ON users (email);

--bun:split

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    key_hash   TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ
);

--bun:split

CREATE UNIQUE INDEX api_keys_hash_key ON api_keys (key_hash);

--bun:split

-- One active key per account: rotation revokes the old key and inserts the new one in one transaction.
CREATE UNIQUE INDEX api_keys_active_key ON api_keys (account_id) WHERE revoked_at IS NULL;

--bun:split

CREATE TABLE contacts (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    first_name TEXT NOT NULL DEFAULT '',
    last_name  TEXT NOT NULL DEFAULT '',
    phone      TEXT,
    email      TEXT,
    -- 'api' for contacts created through POST /contacts or an import, 'channel' for contacts a
    -- custom-channel sender (fromId) brought in.
    origin     TEXT NOT NULL DEFAULT 'api',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

--bun:split

-- One contact per phone in an account (NULL phones do not collide).
CREATE UNIQUE INDEX contacts_phone_key ON contacts (account_id, phone);

--bun:split

-- A contact created through the API without a phone is identified by its email, so concurrent creates
-- of one email make one contact. Channel contacts are identified by their fromId instead.
CREATE UNIQUE INDEX contacts_email_only_key ON contacts (account_id, email) WHERE phone IS NULL AND origin = 'api';

--bun:split

CREATE INDEX contacts_email_idx ON contacts (account_id, email, id);

--bun:split

-- A sender id on a custom channel (fromId) maps to exactly one contact.
CREATE TABLE contact_identities (
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    external_id TEXT NOT NULL,
    contact_id  TEXT NOT NULL REFERENCES contacts (id),
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, external_id)
);

--bun:split

CREATE TABLE lists (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE INDEX lists_account_idx ON lists (account_id, id);

--bun:split

-- A member row's id is time-sortable, so list pages come in the order contacts were added.
CREATE TABLE list_members (
    id         TEXT PRIMARY KEY,
    list_id    TEXT NOT NULL REFERENCES lists (id),
    contact_id TEXT NOT NULL REFERENCES contacts (id),
    added_at   TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE UNIQUE INDEX list_members_key ON list_members (list_id, contact_id);

--bun:split

CREATE INDEX list_members_page_idx ON list_members (list_id, id);

--bun:split

CREATE INDEX list_members_contact_idx ON list_members (contact_id);
