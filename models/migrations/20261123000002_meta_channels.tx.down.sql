ALTER TABLE campaign_sends DROP COLUMN follow_up_held;
--bun:split
ALTER TABLE messages DROP COLUMN reacts_to_id;
--bun:split
DROP INDEX messages_provider_id_idx;
--bun:split
ALTER TABLE messages DROP COLUMN provider_message_id;
