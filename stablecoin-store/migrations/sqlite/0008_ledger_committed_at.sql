-- stablecoin-store schema v8 (SQLite): every ledger transfer records when it was
-- committed, so an account's statement over a period (`Ledger::entries_since`, issue
-- #52) can say which postings fell before, in and after it, and reconcile to the
-- balance the ledger had at any instant.
--
-- `committed_at` is the writer's clock (Unix ms) when the transfer's group committed,
-- never earlier than the previous group's (`ledger_clock`), so it never decreases along
-- `seq`: a statement walks an account's transfers backwards on the existing
-- (debit, seq) / (credit, seq) indexes and stops at the first one older than its
-- period, without an index of its own (no extra B-tree write per transfer).
-- Transfers written before v8 keep NULL: older than any period a statement can name.

ALTER TABLE ledger_transfers ADD COLUMN committed_at INTEGER;
INSERT INTO ledger_meta (key, value) VALUES ('ledger_clock', 0);
