DROP INDEX messages_handover_idx;

--bun:split

ALTER TABLE messages DROP COLUMN handover_until;
