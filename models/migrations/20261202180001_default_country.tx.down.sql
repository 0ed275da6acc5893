ALTER TABLE compliance_settings DROP COLUMN default_country;
