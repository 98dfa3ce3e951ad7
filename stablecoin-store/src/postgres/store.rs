//! `Store` on PostgreSQL: commits retried on lost races, reads on the pool.

use super::PgStore;
use super::backend;
use super::rows::{RECORD_COLS, record_from_row};
use crate::codec::{json_from_db, sql_count, u64_from_db};
use async_trait::async_trait;
use sqlx::Row;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::store::{
    Batch, CommitReceipt, IdempotencyRecord, ListPosition, ListQuery, OutboxEvent, Purge,
    PurgeTarget, Store, StoreError, StoredRecord,
};

/// The WHERE clause of a list, and the number of the next bind parameter. The values to
/// bind after `$1` kind and `$2` tenant are the query's subkind and status, those that
/// are set, in that order.
///
/// Each (subkind, status) shape gets its own text: `subkind IS NULL` or `subkind = $3`,
/// a status or none. So every statement is equalities on the leading columns of
/// `records_list` / `records_list_status`, which the planner walks as one index range;
/// `IS NOT DISTINCT FROM` or `($3 IS NULL OR status = $3)` cannot use the index.
fn list_filter(query: &ListQuery) -> (String, usize) {
    let mut filter = String::from("kind = $1 AND tenant = $2");
    let mut next = 3;
    match &query.subkind {
        None => filter.push_str(" AND subkind IS NULL"),
        Some(_) => {
            filter.push_str(&format!(" AND subkind = ${next}"));
            next += 1;
        }
    }
    if query.status.is_some() {
        filter.push_str(&format!(" AND status = ${next}"));
        next += 1;
    }
    (filter, next)
}

/// `Store::purge` of records: one statement deletes the oldest `$3` records of kind `$1`
/// created before `$2` (walked on `records_created`, rows another transaction holds
/// skipped, not waited for), with `$status` the filter on status, and, in the same
/// statement, their unique keys; it answers how many records went.
macro_rules! purge_records {
    ($status:literal) => {
        concat!(
            "WITH gone AS ( \
               DELETE FROM records r USING ( \
                 SELECT kind, id FROM records WHERE kind = $1 AND created_at < $2",
            $status,
            " ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED) old \
               WHERE r.kind = old.kind AND r.id = old.id RETURNING r.kind, r.id), \
             keys AS (DELETE FROM unique_keys u USING gone \
               WHERE u.kind = gone.kind AND u.id = gone.id) \
             SELECT COUNT(*) FROM gone"
        )
    };
}

/// Records in any status.
const PURGE_RECORDS: &str = purge_records!("");

/// Records in a status of the array `$4`.
const PURGE_RECORDS_STATUS: &str = purge_records!(" AND status = ANY($4)");

/// `Store::purge` of idempotency records: the oldest `$2` created before `$1`.
const PURGE_IDEMPOTENCY: &str = "WITH gone AS ( \
       DELETE FROM idempotency i USING ( \
         SELECT tenant, key FROM idempotency WHERE created_at < $1 \
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED) old \
       WHERE i.tenant = old.tenant AND i.key = old.key RETURNING 1) \
     SELECT COUNT(*) FROM gone";

/// `Store::purge` of the outbox: the `$3` lowest sequence numbers up to `$1` that
/// occurred before `$2` (the primary key in order). Sequence numbers come from
/// `outbox_counter`, never from the rows, so any row may go.
const PURGE_OUTBOX: &str = "WITH gone AS ( \
       DELETE FROM outbox o USING ( \
         SELECT seq FROM outbox WHERE seq <= $1 AND occurred_at < $2 \
         ORDER BY seq LIMIT $3 FOR UPDATE SKIP LOCKED) old \
       WHERE o.seq = old.seq RETURNING 1) \
     SELECT COUNT(*) FROM gone";

#[async_trait]
impl Store for PgStore {
    async fn commit(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        if batch.is_empty() {
            return Ok(CommitReceipt::default());
        }
        self.commit_batch(batch).await
    }

    async fn get(&self, kind: &str, id: &str) -> Result<Option<StoredRecord>, StoreError> {
        let sql = format!("SELECT {RECORD_COLS} FROM records WHERE kind = $1 AND id = $2");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(kind)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        row.as_ref().map(record_from_row).transpose()
    }

    async fn get_by_unique(&self, key: &str) -> Result<Option<StoredRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT r.kind, r.id, r.tenant, r.version, r.created_at, r.status, r.due_at, \
             r.unique_keys, r.body, r.subkind, r.lane FROM unique_keys u \
             JOIN records r ON r.kind = u.kind AND r.id = u.id WHERE u.key = $1",
        )
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        row.as_ref().map(record_from_row).transpose()
    }

    async fn list(&self, query: &ListQuery) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        // One snapshot for the page and the total.
        let mut tx = self.pool.begin().await.map_err(backend)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        let (filter, next) = list_filter(query);
        let page = format!(
            "SELECT {RECORD_COLS} FROM records WHERE {filter} \
             ORDER BY created_at DESC, id DESC LIMIT ${next} OFFSET ${}",
            next + 1
        );
        let mut rows = sqlx::query(sqlx::AssertSqlSafe(page))
            .bind(&query.kind)
            .bind(&query.tenant);
        let count = format!("SELECT COUNT(*) FROM records WHERE {filter}");
        let mut total = sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(count))
            .bind(&query.kind)
            .bind(&query.tenant);
        for value in [&query.subkind, &query.status].into_iter().flatten() {
            rows = rows.bind(value);
            total = total.bind(value);
        }
        let rows = rows
            .bind(sql_count(query.limit))
            .bind(sql_count(query.offset))
            .fetch_all(&mut *tx)
            .await
            .map_err(backend)?;
        let total = total.fetch_one(&mut *tx).await.map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        let records = rows
            .iter()
            .map(record_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((records, u64_from_db(total, "count").map_err(backend)?))
    }

    /// One index range read: the list's equalities on the leading columns of
    /// `records_list` / `records_list_status`, entered at the position by a row
    /// comparison on its last two.
    async fn list_before(
        &self,
        query: &ListQuery,
        before: Option<&ListPosition>,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let (mut filter, mut next) = list_filter(query);
        if before.is_some() {
            filter.push_str(&format!(" AND (created_at, id) < (${next}, ${})", next + 1));
            next += 2;
        }
        let page = format!(
            "SELECT {RECORD_COLS} FROM records WHERE {filter} \
             ORDER BY created_at DESC, id DESC LIMIT ${next}"
        );
        let mut rows = sqlx::query(sqlx::AssertSqlSafe(page))
            .bind(&query.kind)
            .bind(&query.tenant);
        for value in [&query.subkind, &query.status].into_iter().flatten() {
            rows = rows.bind(value);
        }
        if let Some(p) = before {
            rows = rows.bind(p.created_at.0).bind(p.id.clone());
        }
        let rows = rows
            .bind(sql_count(query.limit))
            .fetch_all(&self.pool)
            .await
            .map_err(backend)?;
        rows.iter().map(record_from_row).collect()
    }

    async fn idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT request_hash, response, created_at FROM idempotency \
             WHERE tenant = $1 AND key = $2",
        )
        .bind(tenant)
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        let Some(row) = row else { return Ok(None) };
        let response: String = row.try_get(1).map_err(backend)?;
        Ok(Some(IdempotencyRecord {
            tenant: tenant.to_string(),
            key: key.to_string(),
            request_hash: row.try_get(0).map_err(backend)?,
            response: json_from_db(&response, "response").map_err(backend)?,
            created_at: Timestamp(row.try_get(2).map_err(backend)?),
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
        let rows = sqlx::query(
            "UPDATE records r SET lease_owner = $1, lease_until = $2 \
             FROM (SELECT kind, id FROM records \
                   WHERE kind = $3 AND lane = $6 AND due_at IS NOT NULL AND due_at <= $4 \
                     AND (lease_until IS NULL OR lease_until <= $4) \
                   ORDER BY due_at, id LIMIT $5 FOR UPDATE SKIP LOCKED) c \
             WHERE r.kind = c.kind AND r.id = c.id \
             RETURNING r.kind, r.id, r.tenant, r.version, r.created_at, r.status, r.due_at, \
               r.unique_keys, r.body, r.subkind, r.lane",
        )
        .bind(worker)
        .bind(now.plus_millis(lease_ms).0)
        .bind(kind)
        .bind(now.0)
        .bind(sql_count(limit))
        .bind(i16::from(lane));
        let mut conn = self.write_conn().await.map_err(backend)?;
        let rows = rows.fetch_all(conn.conn()).await.map_err(backend)?;
        conn.done().await.map_err(backend)?;
        let mut records = rows
            .iter()
            .map(record_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        records.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
        Ok(records)
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
        let rows = sqlx::query(
            "SELECT seq, id, tenant, event_type, occurred_at, payload FROM outbox \
             WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .bind(after)
        .bind(sql_count(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let seq: i64 = row.try_get(0).map_err(backend)?;
                let payload: String = row.try_get(5).map_err(backend)?;
                Ok((
                    u64_from_db(seq, "seq").map_err(backend)?,
                    OutboxEvent {
                        id: row.try_get(1).map_err(backend)?,
                        tenant: row.try_get(2).map_err(backend)?,
                        event_type: row.try_get(3).map_err(backend)?,
                        occurred_at: Timestamp(row.try_get(4).map_err(backend)?),
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
        let (before, limit) = (purge.before.0, sql_count(purge.limit));
        let query = match &purge.target {
            PurgeTarget::Idempotency => sqlx::query_scalar::<_, i64>(PURGE_IDEMPOTENCY)
                .bind(before)
                .bind(limit),
            PurgeTarget::Outbox { through_seq } => sqlx::query_scalar(PURGE_OUTBOX)
                .bind(i64::try_from(*through_seq).unwrap_or(i64::MAX))
                .bind(before)
                .bind(limit),
            PurgeTarget::Records {
                kind,
                statuses: None,
            } => sqlx::query_scalar(PURGE_RECORDS)
                .bind(kind)
                .bind(before)
                .bind(limit),
            PurgeTarget::Records {
                statuses: Some(list),
                ..
            } if list.is_empty() => return Ok(0),
            PurgeTarget::Records {
                kind,
                statuses: Some(list),
            } => sqlx::query_scalar(PURGE_RECORDS_STATUS)
                .bind(kind)
                .bind(before)
                .bind(limit)
                .bind(list),
        };
        let mut conn = self.write_conn().await.map_err(backend)?;
        let n = query.fetch_one(conn.conn()).await.map_err(backend)?;
        conn.done().await.map_err(backend)?;
        u64_from_db(n, "count").map_err(backend)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(subkind: Option<&str>, status: Option<&str>) -> ListQuery {
        ListQuery {
            kind: "operation".into(),
            tenant: "t1".into(),
            subkind: subkind.map(str::to_string),
            status: status.map(str::to_string),
            limit: 10,
            offset: 0,
        }
    }

    /// One text per shape, every filter an equality or IS NULL (index-usable), and the
    /// parameters numbered in the order `list` binds them.
    #[test]
    fn list_filters_are_index_equalities_numbered_in_bind_order() {
        let base = "kind = $1 AND tenant = $2";
        assert_eq!(
            list_filter(&query(None, None)),
            (format!("{base} AND subkind IS NULL"), 3)
        );
        assert_eq!(
            list_filter(&query(Some("transfer"), None)),
            (format!("{base} AND subkind = $3"), 4)
        );
        assert_eq!(
            list_filter(&query(None, Some("SETTLED"))),
            (format!("{base} AND subkind IS NULL AND status = $3"), 4)
        );
        assert_eq!(
            list_filter(&query(Some("transfer"), Some("SETTLED"))),
            (format!("{base} AND subkind = $3 AND status = $4"), 5)
        );
    }
}
