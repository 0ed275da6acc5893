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
