DROP INDEX messages_failed_idx;

--bun:split

DROP INDEX contacts_bot_paused_idx;

--bun:split

DROP INDEX messages_account_idx;

--bun:split

DROP INDEX alerts_open_idx;

--bun:split

ALTER TABLE alerts DROP COLUMN resolved_by;

--bun:split

ALTER TABLE alerts DROP COLUMN resolved_at;

--bun:split

DROP TABLE conversation_reads;

--bun:split

DROP TABLE sessions;

--bun:split

DROP INDEX users_account_idx;

--bun:split

ALTER TABLE users DROP COLUMN password_hash;

--bun:split

ALTER TABLE users DROP COLUMN role;
