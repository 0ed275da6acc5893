DROP INDEX campaign_sends_message_idx;

--bun:split

DROP INDEX campaign_sends_campaign_idx;

--bun:split

UPDATE campaign_sends SET status = 'sent' WHERE status = 'pending' OR (status = 'failed' AND message_id IS NOT NULL);

--bun:split

ALTER TABLE campaign_sends DROP COLUMN status_at;
