ALTER TABLE consent_events DROP COLUMN api_key_last4;

--bun:split

ALTER TABLE consent_events DROP COLUMN user_email;
