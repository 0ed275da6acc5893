DROP TABLE idempotency_keys;
--bun:split
DROP TABLE credit_transactions;
