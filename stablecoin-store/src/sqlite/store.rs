//! `Store` on SQLite: commits and claims go to the writer thread, reads to the readers.

use super::rows::{backend, record_cols, record_from_row};
use super::{SqliteStore, writer};
use crate::codec::{json_from_db, sql_count, u64_from_db};
use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::store::{
    Batch, CommitReceipt, IdempotencyRecord, ListPosition, ListQuery, OutboxEvent, Purge, Store,
    StoreError, StoredRecord,
};

/// A list's page and total, without and with a status (see `Store::list` below).
pub(super) const LIST_PAGE: &str = concat!(
    "SELECT ",
    record_cols!(),
    " FROM records WHERE kind = ?1 AND tenant = ?2 AND subkind IS ?3 \
     ORDER BY created_at DESC, id DESC LIMIT ?4 OFFSET ?5"
);
pub(super) const LIST_COUNT: &str =
    "SELECT COUNT(*) FROM records WHERE kind = ?1 AND tenant = ?2 AND subkind IS ?3";
pub(super) const LIST_STATUS_PAGE: &str = concat!(
    "SELECT ",
    record_cols!(),
    " FROM records WHERE kind = ?1 AND tenant = ?2 AND subkind IS ?3 AND status = ?4 \
     ORDER BY created_at DESC, id DESC LIMIT ?5 OFFSET ?6"
);
pub(super) const LIST_STATUS_COUNT: &str = "SELECT COUNT(*) FROM records \
     WHERE kind = ?1 AND tenant = ?2 AND subkind IS ?3 AND status = ?4";
/// Keyset pages (`Store::list_before`): the same index ranges, entered at a position.
/// The row-value comparison is a range bound SQLite's planner uses on the trailing
/// (created_at, id) columns of the index.
pub(super) const KEYSET_PAGE: &str = concat!(
    "SELECT ",
    record_cols!(),
    " FROM records WHERE kind = ?1 AND tenant = ?2 AND subkind IS ?3 \
     AND (created_at, id) < (?4, ?5) ORDER BY created_at DESC, id DESC LIMIT ?6"
);
pub(super) const KEYSET_STATUS_PAGE: &str = concat!(
    "SELECT ",
    record_cols!(),
    " FROM records WHERE kind = ?1 AND tenant = ?2 AND subkind IS ?3 AND status = ?7 \
     AND (created_at, id) < (?4, ?5) ORDER BY created_at DESC, id DESC LIMIT ?6"
);

/// The outbox after a sequence number, in order (`Store::outbox_after`).
pub(super) const OUTBOX_AFTER: &str = "SELECT seq, id, tenant, event_type, occurred_at, payload \
     FROM outbox WHERE seq > ?1 ORDER BY seq LIMIT ?2";

#[async_trait]
impl Store for SqliteStore {
    async fn commit(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        if batch.is_empty() {
            return Ok(CommitReceipt::default());
        }
        let batch = writer::Prepared::new(batch);
        self.send(|reply| writer::Request::Commit { batch, reply })
            .await
    }

    async fn get(&self, kind: &str, id: &str) -> Result<Option<StoredRecord>, StoreError> {
        self.inner
            .readers
            .with(|conn| {
                conn.prepare_cached(concat!(
                    "SELECT ",
                    record_cols!(),
                    " FROM records WHERE kind = ?1 AND id = ?2"
                ))?
                .query_row(params![kind, id], record_from_row)
                .optional()
            })
            .map_err(StoreError::Backend)?
            .transpose()
            .map_err(backend)
    }

    async fn get_by_unique(&self, key: &str) -> Result<Option<StoredRecord>, StoreError> {
        self.inner
            .readers
            .with(|conn| {
                conn.prepare_cached(
                    "SELECT r.kind, r.id, r.tenant, r.version, r.created_at, r.status, \
                     r.due_at, r.unique_keys, r.body, r.subkind, r.lane FROM unique_keys u \
                     JOIN records r ON r.kind = u.kind AND r.id = u.id WHERE u.key = ?1",
                )?
                .query_row([key], record_from_row)
                .optional()
            })
            .map_err(StoreError::Backend)?
            .transpose()
            .map_err(backend)
    }

    async fn list(&self, query: &ListQuery) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        let (kind, tenant, subkind) = (&query.kind, &query.tenant, &query.subkind);
        let (limit, offset) = (sql_count(query.limit), sql_count(query.offset));
        // `subkind IS ?3` matches NULL to NULL (a query without a subkind lists the
        // records without one) and is an equality SQLite's index search uses: each
        // statement is one range of `records_list` / `records_list_status`, walked
        // backwards, no sort (`list_queries_are_index_ranges` checks the plans).
        let (rows, total) = self
            .inner
            .readers
            .snapshot(|conn| {
                let collect =
                    |rows: rusqlite::MappedRows<'_, _>| rows.collect::<Result<Vec<_>, _>>();
                Ok(match &query.status {
                    None => (
                        collect(conn.prepare_cached(LIST_PAGE)?.query_map(
                            params![kind, tenant, subkind, limit, offset],
                            record_from_row,
                        )?)?,
                        conn.prepare_cached(LIST_COUNT)?
                            .query_row(params![kind, tenant, subkind], |r| r.get::<_, i64>(0))?,
                    ),
                    Some(status) => (
                        collect(conn.prepare_cached(LIST_STATUS_PAGE)?.query_map(
                            params![kind, tenant, subkind, status, limit, offset],
                            record_from_row,
                        )?)?,
                        conn.prepare_cached(LIST_STATUS_COUNT)?
                            .query_row(params![kind, tenant, subkind, status], |r| {
                                r.get::<_, i64>(0)
                            })?,
                    ),
                })
            })
            .map_err(StoreError::Backend)?;
        let records = rows
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend)?;
        Ok((records, u64_from_db(total, "count").map_err(backend)?))
    }

    async fn list_before(
        &self,
        query: &ListQuery,
        before: Option<&ListPosition>,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        // No position: the newest records, i.e. before a position past every record.
        let (at, id) = match before {
            Some(p) => (p.created_at.0, p.id.as_str()),
            None => (i64::MAX, ""),
        };
        let (kind, tenant, subkind) = (&query.kind, &query.tenant, &query.subkind);
        let limit = sql_count(query.limit);
        let rows = self
            .inner
            .readers
            .with(|conn| match &query.status {
                None => conn
                    .prepare_cached(KEYSET_PAGE)?
                    .query_map(
                        params![kind, tenant, subkind, at, id, limit],
                        record_from_row,
                    )?
                    .collect::<Result<Vec<_>, _>>(),
                Some(status) => conn
                    .prepare_cached(KEYSET_STATUS_PAGE)?
                    .query_map(
                        params![kind, tenant, subkind, at, id, limit, status],
                        record_from_row,
                    )?
                    .collect::<Result<Vec<_>, _>>(),
            })
            .map_err(StoreError::Backend)?;
        rows.into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(backend)
    }

    async fn idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let row = self
            .inner
            .readers
            .with(|conn| {
                conn.prepare_cached(
                    "SELECT request_hash, response, created_at FROM idempotency \
                     WHERE tenant = ?1 AND key = ?2",
                )?
                .query_row(params![tenant, key], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .optional()
            })
            .map_err(StoreError::Backend)?;
        let Some((request_hash, response, created_at)) = row else {
            return Ok(None);
        };
        Ok(Some(IdempotencyRecord {
            tenant: tenant.to_string(),
            key: key.to_string(),
            request_hash,
            response: json_from_db(&response, "response").map_err(backend)?,
            created_at: Timestamp(created_at),
        }))
    }

    async fn claim_due(
        &self,
        kind: &str,
        lane: u8,
        worker: &str,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let claim = writer::Claim {
            kind: kind.to_string(),
            lane,
            worker: worker.to_string(),
            now,
            until: now.plus_millis(lease_ms),
            limit,
        };
        self.send(|reply| writer::Request::Claim { claim, reply })
            .await
    }

    async fn outbox_after(
        &self,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEvent)>, StoreError> {
        let Ok(after) = i64::try_from(after_seq) else {
            return Ok(Vec::new());
        };
        if limit == 0 {
            return Ok(Vec::new());
        }
        let rows = self
            .inner
            .readers
            .with(|conn| {
                conn.prepare_cached(OUTBOX_AFTER)?
                    .query_map(params![after, sql_count(limit)], |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, String>(3)?,
                            r.get::<_, i64>(4)?,
                            r.get::<_, String>(5)?,
                        ))
                    })?
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(StoreError::Backend)?;
        rows.into_iter()
            .map(|(seq, id, tenant, event_type, occurred_at, payload)| {
                Ok((
                    u64_from_db(seq, "seq").map_err(backend)?,
                    OutboxEvent {
                        id,
                        tenant,
                        event_type,
                        occurred_at: Timestamp(occurred_at),
                        payload: json_from_db(&payload, "payload").map_err(backend)?,
                    },
                ))
            })
            .collect()
    }

    async fn purge(&self, purge: &Purge) -> Result<u64, StoreError> {
        if purge.limit == 0 {
            return Ok(0);
        }
        let purge = purge.clone();
        self.send(|reply| writer::Request::Purge { purge, reply })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's plan of `sql` (its steps joined by ` | `), every parameter NULL.
    fn query_plan(store: &SqliteStore, sql: &str) -> String {
        store
            .inner
            .readers
            .with(|conn| {
                let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
                let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
                stmt.query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))?
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap()
            .join(" | ")
    }

    /// Every list statement is a search of one list index: no scan of the table, no
    /// sort of a tenant's records (what lets a page and its total cost the same on a
    /// tenant with millions of records).
    #[tokio::test]
    async fn list_queries_are_index_ranges() {
        let store = SqliteStore::open_in_memory().await.unwrap();
        for sql in [
            LIST_PAGE,
            LIST_COUNT,
            LIST_STATUS_PAGE,
            LIST_STATUS_COUNT,
            KEYSET_PAGE,
            KEYSET_STATUS_PAGE,
        ] {
            let plan = query_plan(&store, sql);
            assert!(plan.starts_with("SEARCH records USING "), "{sql}: {plan}");
            assert!(plan.contains("INDEX records_list"), "{sql}: {plan}");
            assert!(
                plan.contains("subkind=?"),
                "subkind is an index key: {plan}"
            );
            assert!(!plan.contains("TEMP B-TREE"), "no sort: {plan}");
            assert!(!plan.contains("SCAN"), "no scan: {plan}");
        }
        store.close().await;
    }

    /// A claim walks its lane of the due index in order: no scan, no sort, and never
    /// the rows of another lane (a long submission queue is not read by a poll claim).
    #[tokio::test]
    async fn the_claim_is_an_index_range_of_one_lane() {
        let store = SqliteStore::open_in_memory().await.unwrap();
        let plan = query_plan(&store, writer::records::CLAIM_DUE);
        assert!(
            plan.contains("INDEX records_due (kind=? AND lane=? AND due_at>? AND due_at<?)"),
            "{plan}"
        );
        assert!(
            plan.contains("SEARCH c USING PRIMARY KEY (kind=? AND id=?)"),
            "a claim is a point lookup in claims: {plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "no sort: {plan}");
        assert!(!plan.contains("SCAN"), "no scan: {plan}");
        store.close().await;
    }

    /// Every purge statement walks a creation-time index in order: no scan of the table
    /// (a purge runs on tables with millions of rows), no sort.
    #[tokio::test]
    async fn purge_statements_are_index_ranges() {
        use writer::purge::{PURGE_IDEMPOTENCY, PURGE_OUTBOX, PURGE_RECORDS, PURGE_RECORDS_STATUS};
        let store = SqliteStore::open_in_memory().await.unwrap();
        let records = "SEARCH records USING";
        let records_range = "INDEX records_created (kind=? AND created_at<?)";
        for (sql, search, range) in [
            (PURGE_RECORDS, records, records_range),
            (PURGE_RECORDS_STATUS, records, records_range),
            (
                PURGE_IDEMPOTENCY,
                "SEARCH idempotency USING",
                "INDEX idempotency_created (created_at<?)",
            ),
            (
                PURGE_OUTBOX,
                "SEARCH outbox USING",
                "INTEGER PRIMARY KEY (rowid<?)",
            ),
        ] {
            // The SELECT inside `rowid IN ( ... )` (the readers are read-only).
            let select = sql
                .split_once("IN ( ")
                .and_then(|(_, rest)| rest.rsplit_once(')'))
                .map(|(inner, _)| inner.to_string())
                .unwrap_or_default();
            let plan = query_plan(&store, &select);
            assert!(plan.starts_with(search), "{sql}: {plan}");
            assert!(plan.contains(range), "{sql}: {plan}");
            assert!(!plan.contains("SCAN records"), "no scan: {plan}");
            assert!(!plan.contains("SCAN idempotency"), "no scan: {plan}");
            assert!(!plan.contains("SCAN outbox"), "no scan: {plan}");
            assert!(!plan.contains("TEMP B-TREE"), "no sort: {plan}");
        }
        store.close().await;
    }
}
