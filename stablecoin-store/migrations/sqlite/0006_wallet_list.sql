-- stablecoin-store schema v6 (SQLite): wallets are listable.
--
-- A wallet belongs to no one tenant (its members change by consent), so it was stored
-- with no tenant and sat in no list. The chain reconciliation (issue #33) walks every
-- wallet to compare its ledger balances with the chains, so wallets are now listed
-- under the reserved list owner `_system` (`Wallet::LIST_OWNER`; tenant ids are
-- `ten_...`, so it names no tenant). New wallets are written with it; this moves the
-- existing ones.

UPDATE records SET tenant = '_system' WHERE kind = 'wallet' AND tenant IS NULL;
