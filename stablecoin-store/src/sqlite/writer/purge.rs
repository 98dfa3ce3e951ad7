//! The SQL of `Store::purge` on SQLite: one group's delete of the oldest selected rows,
//! walked on the creation-time indexes of migration 0004 (`records_created`,
//! `idempotency_created`) or the outbox's sequence numbers, so a purge reads only what it deletes and what it skips
//! (an old record in a status that is kept), never the whole table.

use crate::codec::{keys_from_db, sql_count};
use crate::sqlite::backend;
use rusqlite::{Connection, params};
use stablecoin_core::ports::store::{Purge, PurgeTarget, StoreError};

/// The oldest records of kind `?1` created before `?2`, with `$status` the filter on
/// status and `$limit` the parameter of the limit.
macro_rules! purge_records {
    ($status:literal, $limit:literal) => {
        concat!(
            "DELETE FROM records WHERE rowid IN ( \
               SELECT rowid FROM records WHERE kind = ?1 AND created_at < ?2",
            $status,
            " ORDER BY created_at LIMIT ",
            $limit,
            ") RETURNING id, unique_keys"
        )
    };
}

/// Any status; limit `?3`.
pub(crate) const PURGE_RECORDS: &str = purge_records!("", "?3");

/// Only in a status of the JSON array `?3`; limit `?4`.
pub(crate) const PURGE_RECORDS_STATUS: &str =
    purge_records!(" AND status IN (SELECT value FROM json_each(?3))", "?4");

/// The oldest `?2` idempotency records created before `?1`.
pub(crate) const PURGE_IDEMPOTENCY: &str = "DELETE FROM idempotency WHERE rowid IN ( \
       SELECT rowid FROM idempotency WHERE created_at < ?1 \
       ORDER BY created_at LIMIT ?2)";

/// The oldest `?3` outbox events with a sequence number up to `?1` that occurred before
/// `?2`, on the rowid (`seq`) in order. Never the newest row: the writer numbers new
/// events from `MAX(seq)` when it opens the database, and a purged-out table would
/// number them from 1 again, behind every consumer's cursor.
pub(crate) const PURGE_OUTBOX: &str = "DELETE FROM outbox WHERE seq IN ( \
       SELECT seq FROM outbox WHERE seq <= ?1 AND occurred_at < ?2 \
         AND seq < (SELECT MAX(seq) FROM outbox) \
       ORDER BY seq LIMIT ?3)";

/// Deletes what `purge` selects, up to its limit, with the deleted records' unique keys;
/// inside the group's transaction, so the rows and their keys go together.
pub(super) fn purge(conn: &Connection, purge: &Purge) -> Result<u64, StoreError> {
    if purge.limit == 0 {
        return Ok(0);
    }
    let (before, limit) = (purge.before.0, sql_count(purge.limit));
    let (kind, statuses) = match &purge.target {
        PurgeTarget::Idempotency => {
            let n = conn
                .prepare_cached(PURGE_IDEMPOTENCY)
                .and_then(|mut s| s.execute(params![before, limit]))
                .map_err(backend)?;
            return Ok(n as u64);
        }
        PurgeTarget::Outbox { through_seq } => {
            let through = i64::try_from(*through_seq).unwrap_or(i64::MAX);
            let n = conn
                .prepare_cached(PURGE_OUTBOX)
                .and_then(|mut s| s.execute(params![through, before, limit]))
                .map_err(backend)?;
            return Ok(n as u64);
        }
        PurgeTarget::Records { kind, statuses } => (kind, statuses),
    };
    let row = |r: &rusqlite::Row<'_>| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?));
    let gone: Vec<(String, String)> = match statuses {
        None => conn.prepare_cached(PURGE_RECORDS).and_then(|mut s| {
            s.query_map(params![kind, before, limit], row)?
                .collect::<Result<_, _>>()
        }),
        Some(list) if list.is_empty() => return Ok(0),
        Some(list) => {
            let list = serde_json::to_string(list).map_err(backend)?;
            conn.prepare_cached(PURGE_RECORDS_STATUS).and_then(|mut s| {
                s.query_map(params![kind, before, list, limit], row)?
                    .collect::<Result<_, _>>()
            })
        }
    }
    .map_err(backend)?;
    let mut keys = conn
        .prepare_cached("DELETE FROM unique_keys WHERE kind = ?1 AND id = ?2")
        .map_err(backend)?;
    let mut claims = conn
        .prepare_cached(super::records::RELEASE_CLAIM)
        .map_err(backend)?;
    for (id, unique_keys) in &gone {
        // A purged record's claim goes with it (a record put again under its id is
        // unclaimed).
        claims.execute(params![kind, id]).map_err(backend)?;
        // A record without keys (most) costs no statement; a corrupt list is not a
        // reason to leave keys behind.
        if keys_from_db(unique_keys).is_ok_and(|k| k.is_empty()) {
            continue;
        }
        keys.execute(params![kind, id]).map_err(backend)?;
    }
    Ok(gone.len() as u64)
}
