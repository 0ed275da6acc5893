DROP TABLE list_members;
--bun:split
DROP TABLE lists;
--bun:split
DROP TABLE contact_identities;
--bun:split
DROP TABLE contacts;
--bun:split
DROP TABLE api_keys;
--bun:split
DROP TABLE users;
--bun:split
DROP TABLE accounts;
