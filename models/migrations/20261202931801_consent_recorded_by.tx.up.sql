-- Who recorded a consent change by hand (README, "Compliance"): the inbox user's email as it was then
-- (user_id holds the user; the email stays after they leave the team), or the last 4 characters of
-- the API key of the request (the key itself is never stored). Both NULL: the service made the change
-- itself (keyword, bot), or it was recorded before this column existed.
ALTER TABLE consent_events ADD COLUMN user_email TEXT;

--bun:split

ALTER TABLE consent_events ADD COLUMN api_key_last4 TEXT;

--bun:split

-- Events the inbox recorded before: the email of their user, while that user is still on the team.
UPDATE consent_events SET user_email = (SELECT u.email FROM users AS u WHERE u.id = consent_events.user_id)
WHERE user_id IS NOT NULL;
