-- stablecoin-store schema v4 (SQLite): indexes on creation time for `Store::purge`
-- (retention: old idempotency records, quotes, challenges, webhook deliveries and
-- events are deleted in small batches by a background job).
--
-- A purge deletes the oldest rows of one kind (of every tenant) created before a
-- cut-off. No existing index serves that: the list indexes lead with the tenant. Without
-- these, every purge call would scan the whole table. Each costs every insert one more
-- B-tree write; the records one is (kind, created_at) only, the least a purge needs.

CREATE INDEX records_created ON records (kind, created_at);
CREATE INDEX idempotency_created ON idempotency (created_at);
