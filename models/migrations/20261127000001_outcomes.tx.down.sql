DROP INDEX consent_events_opt_out_idx;

--bun:split

DROP INDEX alerts_contact_idx;

--bun:split

DROP INDEX messages_incoming_idx;

--bun:split

DROP TABLE goals;

--bun:split

ALTER TABLE campaign_sends DROP COLUMN variant;

--bun:split

ALTER TABLE campaigns DROP COLUMN opening_messages;
