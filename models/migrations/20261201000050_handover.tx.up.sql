-- handover_until: a campaign message's delivery attempt is in flight until then (a webhook or provider
-- call, at most WEBHOOK_TIMEOUT). A consent keyword's confirmation waits for it, so the receiver never
-- gets an opening after the opt-out's confirmation, with no lock held across the call.
ALTER TABLE messages ADD COLUMN handover_until TIMESTAMPTZ;

--bun:split

CREATE INDEX messages_handover_idx ON messages (contact_id, handover_until) WHERE handover_until IS NOT NULL;
