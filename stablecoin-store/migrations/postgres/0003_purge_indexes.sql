-- stablecoin-store schema v3 (PostgreSQL): indexes on creation time for `Store::purge`
-- (retention: old idempotency records, quotes, challenges, webhook deliveries and
-- events are deleted in small batches by a background job).
--
-- A purge deletes the oldest rows of one kind (of every tenant) created before a
-- cut-off. No existing index serves that: the list indexes lead with the tenant. Without
-- these, every purge call would scan the whole table. Each costs every insert one more
-- B-tree write; the records one is (kind, created_at) only, the least a purge needs.
--
-- Like every migration, this runs in a transaction: building the indexes blocks writes
-- to the two tables until it is done (seconds for millions of rows). A deployment with
-- a very large database can create them beforehand with CREATE INDEX CONCURRENTLY under
-- the same names; IF NOT EXISTS then leaves them alone.

CREATE INDEX IF NOT EXISTS records_created ON records (kind, created_at);
CREATE INDEX IF NOT EXISTS idempotency_created ON idempotency (created_at);
