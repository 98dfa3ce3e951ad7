-- stablecoin-store schema v8 (PostgreSQL): the server's per-key rate limits, shared by
-- every node on the database (issue #46, item 3; `PgStore::rate_limit`).
--
-- One row per (key, budget class): GCRA's theoretical arrival time, in microseconds on
-- the database's clock (so nodes whose clocks differ share one timeline). Each request is
-- one `INSERT .. ON CONFLICT DO UPDATE .. RETURNING` in autocommit: the row lock lasts
-- that statement only. `allowed` and `seen_us` are the last request's outcome and time,
-- returned by the same statement. A row whose `tat_us` has passed is a whole budget,
-- the same as no row: `PgStore::purge_rate_limits` deletes those.
--
-- UNLOGGED: the table is not WAL-logged (no fsync per request, not replicated, emptied
-- after a crash). Losing it gives every key a whole budget once: a rate limit is a
-- guard against floods, not a record of money.

CREATE UNLOGGED TABLE rate_limits (
    key     TEXT    NOT NULL,
    class   TEXT    NOT NULL,
    tat_us  BIGINT  NOT NULL,
    seen_us BIGINT  NOT NULL,
    allowed BOOLEAN NOT NULL,
    PRIMARY KEY (key, class)
);
