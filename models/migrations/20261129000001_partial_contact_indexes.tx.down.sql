DROP INDEX contacts_email_idx;

--bun:split

CREATE INDEX contacts_email_idx ON contacts (account_id, email, id);

--bun:split

DROP INDEX contacts_assignee_idx;

--bun:split

CREATE INDEX contacts_assignee_idx ON contacts (account_id, assignee_id);
