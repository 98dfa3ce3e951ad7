-- stablecoin-store schema v1 (SQLite).
-- Amounts and sums are INTEGER micro-units (i64); the store refuses anything above 2^63-1.
-- Timestamps are INTEGER Unix milliseconds.

-- Every engine record: a JSON body plus the metadata the Store trait indexes.
CREATE TABLE records (
    kind        TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    tenant      TEXT,
    version     INTEGER NOT NULL CHECK (version > 0),
    created_at  INTEGER NOT NULL,
    status      TEXT,
    due_at      INTEGER,
    -- worker claim (claim_due); cleared by every commit that puts the record
    lease_owner TEXT,
    lease_until INTEGER,
    -- JSON array of the record's unique keys (the index itself is `unique_keys`)
    unique_keys TEXT    NOT NULL DEFAULT '[]',
    body        TEXT    NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;
CREATE INDEX records_list ON records (kind, tenant, created_at, id);
CREATE INDEX records_list_status ON records (kind, tenant, status, created_at, id);
CREATE INDEX records_due ON records (kind, due_at, id) WHERE due_at IS NOT NULL;

CREATE TABLE unique_keys (
    key  TEXT NOT NULL PRIMARY KEY,
    kind TEXT NOT NULL,
    id   TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX unique_keys_owner ON unique_keys (kind, id);

CREATE TABLE idempotency (
    tenant       TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    response     TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (tenant, key)
) WITHOUT ROWID;

CREATE TABLE ledger_accounts (
    id              TEXT    NOT NULL PRIMARY KEY,
    allow_negative  INTEGER NOT NULL CHECK (allow_negative IN (0, 1)),
    debits_posted   INTEGER NOT NULL DEFAULT 0 CHECK (debits_posted >= 0),
    credits_posted  INTEGER NOT NULL DEFAULT 0 CHECK (credits_posted >= 0),
    debits_pending  INTEGER NOT NULL DEFAULT 0 CHECK (debits_pending >= 0),
    credits_pending INTEGER NOT NULL DEFAULT 0 CHECK (credits_pending >= 0),
    -- defence in depth: the store checks this before writing; the database checks it again
    CHECK (allow_negative = 1 OR debits_posted <= credits_posted - debits_pending)
) WITHOUT ROWID;

-- Every applied transfer; `seq` is the application order (the accounts' history order),
-- assigned by the single writer from `ledger_meta`. No foreign keys to ledger_accounts:
-- the writer checks that both accounts exist before it writes a transfer, and the
-- per-row FK lookups cost ~15% of ledger throughput.
CREATE TABLE ledger_transfers (
    id         TEXT    NOT NULL PRIMARY KEY,
    seq        INTEGER NOT NULL,
    debit      TEXT    NOT NULL,
    credit     TEXT    NOT NULL,
    amount     INTEGER NOT NULL CHECK (amount > 0),
    phase      TEXT    NOT NULL CHECK (phase IN ('single', 'pending', 'post', 'void')),
    pending_id TEXT,
    -- for pending transfers: posted or voided already
    resolved   INTEGER NOT NULL DEFAULT 0 CHECK (resolved IN (0, 1)),
    CHECK (debit <> credit),
    CHECK ((phase IN ('post', 'void')) = (pending_id IS NOT NULL))
) WITHOUT ROWID;
CREATE INDEX ledger_transfers_debit ON ledger_transfers (debit, seq);
CREATE INDEX ledger_transfers_credit ON ledger_transfers (credit, seq);

-- Counters of the single writer.
CREATE TABLE ledger_meta (
    key   TEXT    NOT NULL PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO ledger_meta (key, value) VALUES ('next_transfer_seq', 1);

-- Transactional outbox; seq is assigned by the single writer, gap-free, in commit order.
CREATE TABLE outbox (
    seq         INTEGER NOT NULL PRIMARY KEY,
    id          TEXT    NOT NULL,
    tenant      TEXT    NOT NULL,
    event_type  TEXT    NOT NULL,
    occurred_at INTEGER NOT NULL,
    payload     TEXT    NOT NULL
);
