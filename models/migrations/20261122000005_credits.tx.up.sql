-- Credit history, idempotency keys of credit grants, and auto-recharge settings of sub-accounts.
CREATE TABLE credit_transactions (
    id                  TEXT PRIMARY KEY,
    account_id          TEXT NOT NULL REFERENCES accounts (id),  -- whose balance changed
    kind                TEXT NOT NULL,                           -- grant | bot_reply
    amount_milli        BIGINT NOT NULL,                         -- positive for a grant, negative for a use
    balance_after_milli BIGINT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    actor_account_id    TEXT,                                    -- the agency that granted
    reference           TEXT,                                    -- the message a bot reply answered
    created_at          TIMESTAMPTZ NOT NULL
);

--bun:split

CREATE INDEX credit_transactions_account_idx ON credit_transactions (account_id, id);

--bun:split

-- A bot reply is charged once, however often its task runs.
CREATE UNIQUE INDEX credit_transactions_reference_key ON credit_transactions (account_id, kind, reference) WHERE reference IS NOT NULL;

--bun:split

-- The IETF idempotency-key draft: the first request with a key is remembered with its fingerprint and,
-- once done, its response.
CREATE TABLE idempotency_keys (
    account_id      TEXT NOT NULL REFERENCES accounts (id),
    key             TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,
    status          TEXT NOT NULL,                               -- in_flight | done
    response_status INTEGER,
    response_body   TEXT,
    created_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (account_id, key)
);

--bun:split

-- Auto-recharge of a sub-account: when its balance falls below the threshold, the agency's webhook is
-- called once; a grant that lifts the balance to the threshold or above arms it again.
ALTER TABLE accounts ADD COLUMN auto_recharge_threshold_milli BIGINT;

--bun:split

ALTER TABLE accounts ADD COLUMN auto_recharge_amount_milli BIGINT;

--bun:split

ALTER TABLE accounts ADD COLUMN auto_recharge_webhook_url TEXT;

--bun:split

ALTER TABLE accounts ADD COLUMN auto_recharge_armed BOOLEAN NOT NULL DEFAULT TRUE;

--bun:split

-- Numbers the low-balance events, so each has its own idempotency key.
ALTER TABLE accounts ADD COLUMN auto_recharge_event INTEGER NOT NULL DEFAULT 0;
