DROP INDEX contacts_conversation_status_idx;

--bun:split

ALTER TABLE contacts DROP COLUMN conversation_status_at;

--bun:split

ALTER TABLE contacts DROP COLUMN snoozed_until;

--bun:split

ALTER TABLE contacts DROP COLUMN conversation_status;
