-- stablecoin-store schema v5 (PostgreSQL): wallets are listable under the reserved list
-- owner `_system` (see the SQLite migration 0006_wallet_list.sql for why).

UPDATE records SET tenant = '_system' WHERE kind = 'wallet' AND tenant IS NULL;
