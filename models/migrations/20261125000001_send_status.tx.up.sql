-- A campaign send's status follows its opening message: pending while the message is written but
-- not delivered, sent once delivered, failed when its delivery failed for good. status_at is when the
-- send reached its status; sent_at is now the delivery's time, from which follow-ups count.
ALTER TABLE campaign_sends ADD COLUMN status_at TIMESTAMPTZ;

--bun:split

UPDATE campaign_sends SET status_at = COALESCE(sent_at, created_at);

--bun:split

-- Sends recorded as sent when their opening was only written: pending, or failed with its error.
UPDATE campaign_sends SET status = 'pending'
WHERE status = 'sent' AND message_id IN (SELECT id FROM messages WHERE status = 'pending' OR (status = 'failed' AND next_attempt_at IS NOT NULL));

--bun:split

UPDATE campaign_sends SET status = 'failed', follow_ups_done = TRUE, next_follow_up_at = NULL,
	detail = (SELECT error FROM messages WHERE messages.id = campaign_sends.message_id)
WHERE status = 'sent' AND message_id IN (SELECT id FROM messages WHERE status = 'failed' AND next_attempt_at IS NULL);

--bun:split

CREATE INDEX campaign_sends_campaign_idx ON campaign_sends (campaign_id, id);

--bun:split

CREATE INDEX campaign_sends_message_idx ON campaign_sends (message_id);
