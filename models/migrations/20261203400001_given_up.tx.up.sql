-- When an outgoing message's delivery gave up (status failed with no next attempt: the retries ran
-- out, a receiver's answer was final, or the outgoing door refused it). The inbox's navigation counts
-- the deliveries that gave up in the last 7 days on every page (README, "The inbox"), so the count
-- reads a short range of this index. A redelivery that fails for good again sets it anew; a message
-- that is retrying keeps an older value, which the index's condition leaves out.
ALTER TABLE messages ADD COLUMN given_up_at TIMESTAMPTZ;

--bun:split

-- Messages that gave up before this column: their last attempt's time, else when they were written
-- (a message the door refused has no attempt).
UPDATE messages SET given_up_at = COALESCE(
	(SELECT MAX(a.at) FROM message_attempts AS a WHERE a.message_id = messages.id), created_at)
WHERE direction = 'outgoing' AND status = 'failed' AND next_attempt_at IS NULL;

--bun:split

CREATE INDEX messages_given_up_idx ON messages (account_id, given_up_at)
WHERE direction = 'outgoing' AND status = 'failed' AND next_attempt_at IS NULL;
