-- stablecoin-store schema v5 (SQLite): claim lanes.
--
-- A record's due work may sit in one of several lanes (`StoredRecord::lane`), claimed
-- separately (`Store::claim_due`): the engine claims operations due for their first
-- submission (lane 0) apart from those it polls for confirmation (lane 1), so a long
-- queue of new submissions never starves the confirmations behind it. Every existing
-- row goes to lane 0, which the engine still advances whatever its stage; its next
-- write moves it to its lane. The due index leads with the lane, so a claim reads its
-- lane's oldest due rows in index order and never walks another lane's. Same number of
-- index writes as before: the lane joins the existing due index.

ALTER TABLE records ADD COLUMN lane INTEGER NOT NULL DEFAULT 0;
DROP INDEX records_due;
CREATE INDEX records_due ON records (kind, lane, due_at, id) WHERE due_at IS NOT NULL;
