-- The inbox: people who sign in (role and password), their server-side sessions, what each reader has
-- read of each conversation, resolved alerts, and the index behind the conversation list.
ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'member';

--bun:split

-- Every user before this migration is an account's owner (accounts were created with one user).
UPDATE users SET role = 'owner' WHERE id IN (SELECT owner_user_id FROM accounts);

--bun:split

-- An argon2id hash in PHC form; NULL until a password is set (such a user cannot sign in).
ALTER TABLE users ADD COLUMN password_hash TEXT;

--bun:split

CREATE INDEX users_account_idx ON users (account_id, id);

--bun:split

-- A signed-in browser. The cookie holds a random token; only its SHA-256 is stored, so a copy of the
-- table signs nobody in. Deleting the row ends the session at once.
CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,            -- hex SHA-256 of the cookie's token
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    csrf_token   TEXT NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    last_seen_at TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE INDEX sessions_user_idx ON sessions (user_id);

--bun:split

-- How far a reader (a user, or "api" for the account's API) has read a conversation: the newest message
-- id seen. Newer incoming messages make the conversation unread for that reader.
CREATE TABLE conversation_reads (
    account_id   TEXT NOT NULL REFERENCES accounts (id),
    reader_id    TEXT NOT NULL,
    contact_id   TEXT NOT NULL REFERENCES contacts (id),
    last_read_id TEXT NOT NULL,
    read_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, reader_id, contact_id)
);

--bun:split

ALTER TABLE alerts ADD COLUMN resolved_at TIMESTAMPTZ;

--bun:split

ALTER TABLE alerts ADD COLUMN resolved_by TEXT;

--bun:split

CREATE INDEX alerts_open_idx ON alerts (account_id, contact_id) WHERE resolved_at IS NULL;

--bun:split

-- The conversation list walks the account's messages newest first.
CREATE INDEX messages_account_idx ON messages (account_id, id);

--bun:split

-- The list's filters "needs a human" and "failed" start from these small sets of contacts.
CREATE INDEX contacts_bot_paused_idx ON contacts (account_id) WHERE bot_paused;

--bun:split

CREATE INDEX messages_failed_idx ON messages (account_id, contact_id) WHERE direction = 'outgoing' AND status = 'failed';
