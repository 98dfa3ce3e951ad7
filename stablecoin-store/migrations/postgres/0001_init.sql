-- stablecoin-store schema v1 (PostgreSQL).
-- Amounts and sums are BIGINT micro-units; the store refuses anything above 2^63-1.
-- Timestamps are BIGINT Unix milliseconds.

CREATE TABLE records (
    kind        TEXT   NOT NULL,
    id          TEXT   NOT NULL,
    tenant      TEXT,
    version     BIGINT NOT NULL CHECK (version > 0),
    created_at  BIGINT NOT NULL,
    status      TEXT,
    due_at      BIGINT,
    -- worker claim (claim_due); cleared by every commit that puts the record
    lease_owner TEXT,
    lease_until BIGINT,
    -- JSON array of the record's unique keys (the index itself is `unique_keys`)
    unique_keys TEXT   NOT NULL DEFAULT '[]',
    body        TEXT   NOT NULL,
    PRIMARY KEY (kind, id)
);
CREATE INDEX records_list ON records (kind, tenant, created_at, id);
CREATE INDEX records_list_status ON records (kind, tenant, status, created_at, id);
CREATE INDEX records_due ON records (kind, due_at, id) WHERE due_at IS NOT NULL;

CREATE TABLE unique_keys (
    key  TEXT NOT NULL PRIMARY KEY,
    kind TEXT NOT NULL,
    id   TEXT NOT NULL
);
CREATE INDEX unique_keys_owner ON unique_keys (kind, id);

CREATE TABLE idempotency (
    tenant       TEXT   NOT NULL,
    key          TEXT   NOT NULL,
    request_hash TEXT   NOT NULL,
    response     TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (tenant, key)
);

CREATE TABLE ledger_accounts (
    id              TEXT    NOT NULL PRIMARY KEY,
    allow_negative  BOOLEAN NOT NULL,
    debits_posted   BIGINT  NOT NULL DEFAULT 0 CHECK (debits_posted >= 0),
    credits_posted  BIGINT  NOT NULL DEFAULT 0 CHECK (credits_posted >= 0),
    debits_pending  BIGINT  NOT NULL DEFAULT 0 CHECK (debits_pending >= 0),
    credits_pending BIGINT  NOT NULL DEFAULT 0 CHECK (credits_pending >= 0),
    -- defence in depth: the store checks this under row locks; the database checks it again
    CHECK (allow_negative OR debits_posted <= credits_posted - debits_pending)
);

-- Every applied transfer, in application order (seq); also the accounts' history.
CREATE TABLE ledger_transfers (
    seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    debit      TEXT    NOT NULL REFERENCES ledger_accounts (id),
    credit     TEXT    NOT NULL REFERENCES ledger_accounts (id),
    amount     BIGINT  NOT NULL CHECK (amount > 0),
    phase      TEXT    NOT NULL CHECK (phase IN ('single', 'pending', 'post', 'void')),
    pending_id TEXT,
    -- for pending transfers: posted or voided already
    resolved   BOOLEAN NOT NULL DEFAULT false,
    CHECK (debit <> credit),
    CHECK ((phase IN ('post', 'void')) = (pending_id IS NOT NULL))
);
CREATE INDEX ledger_transfers_debit ON ledger_transfers (debit, seq);
CREATE INDEX ledger_transfers_credit ON ledger_transfers (credit, seq);

-- Transactional outbox. seq comes from `outbox_counter`, whose single row a committing
-- transaction locks (UPDATE) as its last step: seqs are handed out in commit order and
-- no reader can see seq n+1 before seq n is visible.
CREATE TABLE outbox (
    seq         BIGINT NOT NULL PRIMARY KEY,
    id          TEXT   NOT NULL,
    tenant      TEXT   NOT NULL,
    event_type  TEXT   NOT NULL,
    occurred_at BIGINT NOT NULL,
    payload     TEXT   NOT NULL
);
CREATE TABLE outbox_counter (
    id       SMALLINT NOT NULL PRIMARY KEY CHECK (id = 1),
    last_seq BIGINT   NOT NULL
);
INSERT INTO outbox_counter (id, last_seq) VALUES (1, 0);
