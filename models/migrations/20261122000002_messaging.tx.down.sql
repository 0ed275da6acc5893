DROP TABLE alerts;
--bun:split
DROP TABLE message_attempts;
--bun:split
DROP TABLE messages;
