-- stablecoin-store schema v9 (SQLite): worker claims move out of the records table into
-- a table of their own (issue 47).
--
-- Why: a claim wrote `lease_owner`/`lease_until` on the record's row, and SQLite rewrites
-- a whole row to change any column of it: every claim of an operation copied its ~1.4 KB
-- body into a new page version and the WAL, twice per transfer (the submission lane's
-- claim and the poll lane's), for two small columns. A claim is now one small row here,
-- written by `claim_due` and deleted by the commit that puts the record (which releases
-- its claim, as before) or by the purge that deletes it.
--
-- The columns stay on `records` (always NULL from now on): dropping them would rebuild
-- the table and its indexes for nothing. Live claims are carried over.

CREATE TABLE claims (
    kind        TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    lease_owner TEXT    NOT NULL,
    lease_until INTEGER NOT NULL,
    PRIMARY KEY (kind, id)
) WITHOUT ROWID;

INSERT INTO claims (kind, id, lease_owner, lease_until)
    SELECT kind, id, lease_owner, lease_until FROM records
    WHERE lease_owner IS NOT NULL AND lease_until IS NOT NULL;

UPDATE records SET lease_owner = NULL, lease_until = NULL
    WHERE lease_owner IS NOT NULL OR lease_until IS NOT NULL;
