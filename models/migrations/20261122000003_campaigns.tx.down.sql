DROP TABLE channel_credentials;
--bun:split
DROP TABLE campaign_sends;
--bun:split
DROP TABLE campaigns;
