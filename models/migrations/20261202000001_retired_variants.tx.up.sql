-- The indexes of a campaign's retired opening variants (models/campaign_variants.go): JSON, NULL when none.
ALTER TABLE campaigns ADD COLUMN retired_variants TEXT;
