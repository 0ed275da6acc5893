-- The inbox for a team (README, "The inbox"): who owns a conversation, private notes, saved answers.
-- A user takes hand-offs in turn while available; last_assigned_at orders the turns.
ALTER TABLE users ADD COLUMN available BOOLEAN NOT NULL DEFAULT TRUE;

--bun:split

ALTER TABLE users ADD COLUMN last_assigned_at TIMESTAMPTZ;

--bun:split

-- The user who owns the conversation with the contact; NULL: unassigned.
ALTER TABLE contacts ADD COLUMN assignee_id TEXT; -- RemoveUser sets it back to NULL

--bun:split

CREATE INDEX contacts_assignee_idx ON contacts (account_id, assignee_id);

--bun:split

-- Notes the team leaves on a conversation: never sent to the contact, never given to the bot.
CREATE TABLE notes (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    contact_id  TEXT NOT NULL REFERENCES contacts (id),
    author_id   TEXT NOT NULL,                    -- the user who wrote it (the owner for an API key)
    author_email TEXT NOT NULL,                   -- kept: the note still says who wrote it after they leave
    body        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE INDEX notes_contact_idx ON notes (contact_id, id);

--bun:split

-- Saved answers, offered in the reply box by typing / and the shortcut.
CREATE TABLE canned_replies (
    id          TEXT PRIMARY KEY,
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    shortcut    TEXT NOT NULL,
    body        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE UNIQUE INDEX canned_replies_shortcut_key ON canned_replies (account_id, lower(shortcut));

--bun:split

-- Hand-offs that are not forgotten: the message the bot sends when it hands over (NULL: the default
-- text, '': none), the minutes after which an unanswered alert is escalated (0: never), and the
-- minutes of team silence after which a paused bot resumes (NULL: never).
ALTER TABLE accounts ADD COLUMN handoff_message TEXT;

--bun:split

ALTER TABLE accounts ADD COLUMN handoff_escalation_minutes INTEGER NOT NULL DEFAULT 15;

--bun:split

ALTER TABLE accounts ADD COLUMN bot_resume_minutes INTEGER;

--bun:split

ALTER TABLE alerts ADD COLUMN escalated_at TIMESTAMPTZ;

--bun:split

-- The escalation's own alert webhook call: none | pending | sent | failed (NULL: not escalated).
ALTER TABLE alerts ADD COLUMN escalation_webhook_status TEXT;

--bun:split

CREATE INDEX alerts_escalation_idx ON alerts (created_at) WHERE resolved_at IS NULL AND escalated_at IS NULL;

--bun:split

-- When the bot was last paused for the contact (a hand-off, a team reply, the pause switch).
ALTER TABLE contacts ADD COLUMN bot_paused_at TIMESTAMPTZ;

--bun:split

CREATE INDEX contacts_paused_idx ON contacts (bot_paused_at) WHERE bot_paused;

--bun:split

-- Who wrote a team reply: the user (the owner for an API key), and their email as it was then.
ALTER TABLE messages ADD COLUMN author_user_id TEXT;

--bun:split

ALTER TABLE messages ADD COLUMN author_email TEXT;

--bun:split

-- The Deliveries page: an account's failed outgoing messages, newest first.
CREATE INDEX messages_failed_list_idx ON messages (account_id, id) WHERE direction = 'outgoing' AND status = 'failed';
