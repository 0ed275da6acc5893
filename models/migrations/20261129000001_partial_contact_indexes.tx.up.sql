-- Contacts without an assignee or an email (every new sender of a custom channel) no longer get an
-- entry in these indexes: each lookup through them names a non-null value, which implies the predicate.
DROP INDEX contacts_assignee_idx;

--bun:split

CREATE INDEX contacts_assignee_idx ON contacts (account_id, assignee_id) WHERE assignee_id IS NOT NULL;

--bun:split

DROP INDEX contacts_email_idx;

--bun:split

CREATE INDEX contacts_email_idx ON contacts (account_id, email, id) WHERE email IS NOT NULL;
