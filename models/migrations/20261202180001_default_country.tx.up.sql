-- The country in which the account's phone numbers written without a country code are read (ISO 3166
-- alpha-2); NULL: the country of its time zone, when that zone is one country's.
ALTER TABLE compliance_settings ADD COLUMN default_country TEXT;
