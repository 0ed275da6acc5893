DROP INDEX messages_given_up_idx;

--bun:split

ALTER TABLE messages DROP COLUMN given_up_at;
