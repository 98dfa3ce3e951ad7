-- stablecoin-store schema v10 (SQLite): ledger rows name their accounts by number
-- (issue 47: bytes per settled transfer).
--
-- Why: a settled transfer writes four ledger rows (two pending holds, two posts), and
-- each carried both account names as text (`wallet:wal_<26 chars>:USDC`, ~40 bytes)
-- in the row and again in each of its two history index entries, with the transfer's
-- own ~42-byte id beside them (the key of a WITHOUT ROWID table is in every index
-- entry): ~1.4 KB of the ~3.4 KB a settled transfer keeps for good.
--
-- Now:
-- - `ledger_accounts` is a rowid table: `num` (its rowid) is the account's number, the
--   name keeps a unique index (`ledger_accounts_id`), and upserts still find rows by name.
-- - `ledger_transfers` is a rowid table keyed by `seq` (its application order, already
--   unique, assigned by the single writer): `debit` and `credit` are account numbers,
--   and the history indexes are `(debit)` / `(credit)`, whose entries end with the
--   rowid, so they are ordered by seq within an account as `(debit, seq)` was, at a few
--   bytes an entry. The transfer id keeps a unique index (`ledger_transfers_id`).
-- - Inserts land at the end of the table's B-tree (seq grows), not at random places.
--
-- Every row is carried over with its seq; a transfer naming an account that does not
-- exist (none can: the writer checks before writing) fails the migration on NOT NULL
-- rather than be dropped.

CREATE TABLE ledger_accounts_v10 (
    num             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL,
    allow_negative  INTEGER NOT NULL CHECK (allow_negative IN (0, 1)),
    debits_posted   INTEGER NOT NULL DEFAULT 0 CHECK (debits_posted >= 0),
    credits_posted  INTEGER NOT NULL DEFAULT 0 CHECK (credits_posted >= 0),
    debits_pending  INTEGER NOT NULL DEFAULT 0 CHECK (debits_pending >= 0),
    credits_pending INTEGER NOT NULL DEFAULT 0 CHECK (credits_pending >= 0),
    CHECK (allow_negative = 1 OR debits_posted <= credits_posted - debits_pending)
);
INSERT INTO ledger_accounts_v10 (id, allow_negative, debits_posted, credits_posted,
                                 debits_pending, credits_pending)
    SELECT id, allow_negative, debits_posted, credits_posted, debits_pending, credits_pending
    FROM ledger_accounts ORDER BY id;

CREATE TABLE ledger_transfers_v10 (
    seq          INTEGER PRIMARY KEY,
    id           TEXT    NOT NULL,
    debit        INTEGER NOT NULL,
    credit       INTEGER NOT NULL,
    amount       INTEGER NOT NULL CHECK (amount > 0),
    phase        TEXT    NOT NULL CHECK (phase IN ('single', 'pending', 'post', 'void')),
    pending_id   TEXT,
    resolved     INTEGER NOT NULL DEFAULT 0 CHECK (resolved IN (0, 1)),
    committed_at INTEGER,
    CHECK (debit <> credit),
    CHECK ((phase IN ('post', 'void')) = (pending_id IS NOT NULL))
);
INSERT INTO ledger_transfers_v10 (seq, id, debit, credit, amount, phase, pending_id,
                                  resolved, committed_at)
    SELECT t.seq, t.id,
           (SELECT a.num FROM ledger_accounts_v10 a WHERE a.id = t.debit),
           (SELECT a.num FROM ledger_accounts_v10 a WHERE a.id = t.credit),
           t.amount, t.phase, t.pending_id, t.resolved, t.committed_at
    FROM ledger_transfers t ORDER BY t.seq;

DROP TABLE ledger_transfers;
DROP TABLE ledger_accounts;
ALTER TABLE ledger_accounts_v10 RENAME TO ledger_accounts;
ALTER TABLE ledger_transfers_v10 RENAME TO ledger_transfers;
CREATE UNIQUE INDEX ledger_accounts_id ON ledger_accounts (id);
CREATE UNIQUE INDEX ledger_transfers_id ON ledger_transfers (id);
CREATE INDEX ledger_transfers_debit ON ledger_transfers (debit);
CREATE INDEX ledger_transfers_credit ON ledger_transfers (credit);
