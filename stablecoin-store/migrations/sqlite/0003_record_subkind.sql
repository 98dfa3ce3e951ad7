-- stablecoin-store schema v3 (SQLite): records gain `subkind`, a second-level kind that
-- lists select on in the store (an operation's op kind: transfer, funding, swap,
-- withdrawal), so a list of one kind of operation is no longer a scan of every
-- operation of the tenant.
--
-- A list runs on exactly one (kind, tenant, subkind), NULL included, optionally one
-- status (`ListQuery::subkind`), so the two list indexes lead with those columns: every
-- list is one index range walked in the order a page is returned, and its total is a
-- count of that range. They REPLACE the v1 list indexes rather than join them: each
-- index costs every insert a B-tree write, and the two list indexes were already ~20%
-- of a send's cost in the writer.

ALTER TABLE records ADD COLUMN subkind TEXT;

-- Backfill. Operations written before v3 hold their op kind only in the body, under
-- "kind", as the engine serializes `OpKind` ("Transfer", "Funding", "Swap",
-- "Withdrawal"); the subkind the engine writes now is its lowercase (`OpKind::as_str`).
-- A body that is not JSON, or has no text "kind", keeps no subkind rather than fail the
-- migration (CASE, so json_type never sees invalid JSON).
UPDATE records
   SET subkind = CASE WHEN json_valid(body) THEN
                   CASE json_type(body, '$.kind')
                     WHEN 'text' THEN lower(json_extract(body, '$.kind'))
                   END
                 END
 WHERE kind = 'operation';

DROP INDEX records_list;
DROP INDEX records_list_status;
CREATE INDEX records_list ON records (kind, tenant, subkind, created_at, id);
CREATE INDEX records_list_status ON records (kind, tenant, subkind, status, created_at, id);
