ALTER TABLE accounts DROP COLUMN bot_active;
