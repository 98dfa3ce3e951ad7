-- stablecoin-store schema v7 (PostgreSQL): no hot ledger row held across a durable commit.
--
-- A change the ledger rules need no balance for (a credit, the posting or voiding of a
-- pending transfer, any change to an account that may go negative) is appended here
-- instead of updating the account's row, so concurrent transfers into one account (the
-- service fee account, a tenant's fee account, a popular recipient) never queue on its
-- row lock. An account's sums are its row plus the sum of its deltas: every reader reads
-- both in one statement (one snapshot). A commit that must check a balance (a debit of a
-- non-negative account) locks the row and folds the account's deltas into it in the same
-- statement; a compaction folds the rest now and then (`postgres/ledger_deltas.rs`).
-- Deltas are signed: posting a pending transfer moves its amount from pending to posted.
-- No foreign key to ledger_accounts: the rules checked the account exists (accounts are
-- never deleted), and a key-share lock per delta on a hot row is the contention this
-- table removes.
CREATE TABLE ledger_deltas (
    account         TEXT   NOT NULL,
    debits_posted   BIGINT NOT NULL,
    credits_posted  BIGINT NOT NULL,
    debits_pending  BIGINT NOT NULL,
    credits_pending BIGINT NOT NULL
);
CREATE INDEX ledger_deltas_account ON ledger_deltas (account);
-- Every delta is deleted soon after it is written (folded), like a queue's rows: vacuum
-- this table after every thousand dead rows, not after a share of a table that stays
-- small, so a hot account's index range is not a walk over dead entries. (How often
-- autovacuum looks is the server's `autovacuum_naptime`: see the store README.)
ALTER TABLE ledger_deltas SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);

-- The transfers' foreign keys to their accounts go for the same reason: each one took a
-- key-share lock on both account rows of every transfer, so every concurrent transfer
-- into the service fee account shared a lock on one row (a MultiXact rewritten by each
-- new locker, and a WAL record per lock). The rules check both accounts exist before a
-- transfer is written, accounts are never deleted, and the SQLite schema never had
-- these keys.
ALTER TABLE ledger_transfers
    DROP CONSTRAINT IF EXISTS ledger_transfers_debit_fkey,
    DROP CONSTRAINT IF EXISTS ledger_transfers_credit_fkey;
