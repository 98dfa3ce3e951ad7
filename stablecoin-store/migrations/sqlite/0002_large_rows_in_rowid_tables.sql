-- stablecoin-store schema v2 (SQLite): the two tables whose rows carry a JSON body become
-- rowid tables with their key in a separate unique index.
--
-- Why: in a WITHOUT ROWID table the whole row is the B-tree key. A row larger than about
-- 1 KiB (an operation's body is ~1.5 KiB) spills onto overflow pages, and SQLite's key
-- search then reads every visited cell in full, overflow chain included, to compare
-- keys. Under the send load that search was ~23% of the server's CPU (perf:
-- sqlite3BtreeIndexMoveto -> accessPayload), for point reads of a few hundred bytes.
-- With a rowid table the search runs over the small (kind, id) index and the row is
-- fetched once by rowid. SQLite's own advice: WITHOUT ROWID suits rows below ~1/20 of
-- a page.
--
-- Columns, constraints and index names are unchanged; the primary keys become unique
-- indexes of the same columns (upserts' ON CONFLICT targets still match them).

CREATE TABLE records_v2 (
    kind        TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    tenant      TEXT,
    version     INTEGER NOT NULL CHECK (version > 0),
    created_at  INTEGER NOT NULL,
    status      TEXT,
    due_at      INTEGER,
    lease_owner TEXT,
    lease_until INTEGER,
    unique_keys TEXT    NOT NULL DEFAULT '[]',
    body        TEXT    NOT NULL
);
INSERT INTO records_v2 (kind, id, tenant, version, created_at, status, due_at, lease_owner,
                        lease_until, unique_keys, body)
    SELECT kind, id, tenant, version, created_at, status, due_at, lease_owner, lease_until,
           unique_keys, body
    FROM records ORDER BY kind, created_at, id;
DROP TABLE records;
ALTER TABLE records_v2 RENAME TO records;
CREATE UNIQUE INDEX records_key ON records (kind, id);
CREATE INDEX records_list ON records (kind, tenant, created_at, id);
CREATE INDEX records_list_status ON records (kind, tenant, status, created_at, id);
CREATE INDEX records_due ON records (kind, due_at, id) WHERE due_at IS NOT NULL;

CREATE TABLE idempotency_v2 (
    tenant       TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    response     TEXT    NOT NULL,
    created_at   INTEGER NOT NULL
);
INSERT INTO idempotency_v2 (tenant, key, request_hash, response, created_at)
    SELECT tenant, key, request_hash, response, created_at FROM idempotency;
DROP TABLE idempotency;
ALTER TABLE idempotency_v2 RENAME TO idempotency;
CREATE UNIQUE INDEX idempotency_key ON idempotency (tenant, key);
