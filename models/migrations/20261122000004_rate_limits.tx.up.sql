-- A per-account override of RATE_LIMIT_PER_MINUTE (NULL: the default).
ALTER TABLE accounts ADD COLUMN rate_limit_per_minute INTEGER;
