-- Consent, opt-out and quiet hours (README, "Compliance").
-- A contact's consent state per channel, as JSON {"<channel>": {"status","at","source"}}: read with the
-- contact, so that the outgoing door needs no extra query to know it. The ledger below is the evidence.
ALTER TABLE contacts ADD COLUMN consent TEXT NOT NULL DEFAULT '{}';

--bun:split

-- The contact's IANA time zone for quiet hours; NULL: its phone's zone, else the account's.
ALTER TABLE contacts ADD COLUMN time_zone TEXT;

--bun:split

-- Every change of a contact's consent, append-only: nothing updates or deletes a row.
CREATE TABLE consent_events (
    id          TEXT PRIMARY KEY,                 -- ordered by creation
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    contact_id  TEXT NOT NULL REFERENCES contacts (id),
    channel     TEXT NOT NULL,
    status      TEXT NOT NULL,                    -- opted_in | opted_out
    source      TEXT NOT NULL,                    -- keyword | bot | inbox | import | api | the caller's
    text        TEXT NOT NULL DEFAULT '',         -- the message, or the wording the person agreed to
    ip          TEXT,
    message_id  TEXT,                             -- the message that changed it (keyword, bot)
    user_id     TEXT,                             -- the inbox user who recorded it
    at          TIMESTAMPTZ NOT NULL              -- when consent was given or withdrawn
);

--bun:split

CREATE INDEX consent_events_contact_idx ON consent_events (contact_id, id);

--bun:split

CREATE INDEX consent_events_export_idx ON consent_events (account_id, at, id);

--bun:split

-- An account's keywords, confirmations, quiet hours and time zone; NULL texts are the defaults.
CREATE TABLE compliance_settings (
    account_id            TEXT PRIMARY KEY REFERENCES accounts (id),
    opt_out_keywords      TEXT NOT NULL DEFAULT '[]',   -- JSON array, besides the built-in words
    opt_in_keywords       TEXT NOT NULL DEFAULT '[]',
    opt_out_confirmation  TEXT,
    opt_in_confirmation   TEXT,
    help_text             TEXT,
    quiet_hours           TEXT,                         -- HH:MM-HH:MM or off; NULL: DEFAULT_QUIET_HOURS
    time_zone             TEXT NOT NULL DEFAULT 'UTC',
    updated_at            TIMESTAMPTZ NOT NULL
);
