-- stablecoin-store schema v4 (PostgreSQL): claim lanes (see the SQLite migration
-- 0005_claim_lanes.sql for why). Adding a column with a constant default rewrites no
-- rows; the due index is rebuilt with the lane leading.

ALTER TABLE records ADD COLUMN lane SMALLINT NOT NULL DEFAULT 0;
DROP INDEX records_due;
CREATE INDEX records_due ON records (kind, lane, due_at, id) WHERE due_at IS NOT NULL;
