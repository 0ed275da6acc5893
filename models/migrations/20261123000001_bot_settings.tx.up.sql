-- The account's bot switch: false stops every bot reply of the account (its own defaults and its
-- campaigns alike); messages are still stored and campaigns' openings and follow-ups still go.
ALTER TABLE accounts ADD COLUMN bot_active BOOLEAN NOT NULL DEFAULT TRUE;
