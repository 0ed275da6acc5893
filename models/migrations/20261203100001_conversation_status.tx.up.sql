-- Conversation status (README, "Conversations: open, resolved, snoozed"): each conversation (one per
-- contact) is open, resolved, or snoozed until snoozed_until; conversation_status_at is when it last
-- changed (NULL: never). A snooze ends by itself: the reads decide "snoozed" as status = 'snoozed' AND
-- snoozed_until > now (models/conversation_status.go), so nothing rewrites the row at its end. Existing
-- conversations start open; new contacts are inserted open by this default.
ALTER TABLE contacts ADD COLUMN conversation_status TEXT NOT NULL DEFAULT 'open';

--bun:split

ALTER TABLE contacts ADD COLUMN snoozed_until TIMESTAMPTZ;

--bun:split

ALTER TABLE contacts ADD COLUMN conversation_status_at TIMESTAMPTZ;

--bun:split

-- The Snoozed and Resolved lists, and the status filter of the selective conversation list
-- (report.conversationsByContacts). Open contacts, the great majority and every new one, stay out of
-- it, so the ingest's inserts do not maintain it.
CREATE INDEX contacts_conversation_status_idx ON contacts (account_id, conversation_status, snoozed_until)
    WHERE conversation_status <> 'open';
