DROP TABLE compliance_settings;

--bun:split

DROP TABLE consent_events;

--bun:split

ALTER TABLE contacts DROP COLUMN time_zone;

--bun:split

ALTER TABLE contacts DROP COLUMN consent;
