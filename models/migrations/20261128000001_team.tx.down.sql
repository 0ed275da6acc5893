DROP INDEX messages_failed_list_idx;

--bun:split

ALTER TABLE messages DROP COLUMN author_email;

--bun:split

ALTER TABLE messages DROP COLUMN author_user_id;

--bun:split

DROP INDEX contacts_paused_idx;

--bun:split

ALTER TABLE contacts DROP COLUMN bot_paused_at;

--bun:split

DROP INDEX alerts_escalation_idx;

--bun:split

ALTER TABLE alerts DROP COLUMN escalation_webhook_status;

--bun:split

ALTER TABLE alerts DROP COLUMN escalated_at;

--bun:split

ALTER TABLE accounts DROP COLUMN bot_resume_minutes;

--bun:split

ALTER TABLE accounts DROP COLUMN handoff_escalation_minutes;

--bun:split

ALTER TABLE accounts DROP COLUMN handoff_message;

--bun:split

DROP TABLE canned_replies;

--bun:split

DROP TABLE notes;

--bun:split

DROP INDEX contacts_assignee_idx;

--bun:split

ALTER TABLE contacts DROP COLUMN assignee_id;

--bun:split

ALTER TABLE users DROP COLUMN last_assigned_at;

--bun:split

ALTER TABLE users DROP COLUMN available;
