-- Messenger and Instagram (channel_credentials kinds messenger and instagram need no new table): the
-- provider's id of each outgoing message it accepted and the message a reaction is on; and follow-ups
-- that fell due while their campaign was paused.
ALTER TABLE messages ADD COLUMN provider_message_id TEXT;

--bun:split

CREATE INDEX messages_provider_id_idx ON messages (account_id, provider_message_id) WHERE provider_message_id IS NOT NULL;

--bun:split

-- A reaction: the message it is on (when the provider named one we have).
ALTER TABLE messages ADD COLUMN reacts_to_id TEXT;

--bun:split

-- A follow-up that fell due while the campaign was paused: sent, at the pacing rate, once it is live.
ALTER TABLE campaign_sends ADD COLUMN follow_up_held BOOLEAN NOT NULL DEFAULT FALSE;
