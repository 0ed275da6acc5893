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
