ALTER TABLE accounts DROP COLUMN rate_limit_per_minute;
