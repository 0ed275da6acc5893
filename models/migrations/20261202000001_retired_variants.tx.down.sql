ALTER TABLE campaigns DROP COLUMN retired_variants;
