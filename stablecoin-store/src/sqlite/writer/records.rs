//! The SQL of one batch's records: version checks, puts with their unique keys, and
//! worker claims.

use super::Claim;
use super::prepared::PreparedPut;
use crate::codec::{i64_to_db, keys_from_db, u64_from_db};
use crate::sqlite::{backend, record_cols, record_from_row};
use rusqlite::{Connection, OptionalExtension, params};
use stablecoin_core::ports::store::{StoreError, StoredRecord, Unchanged};

pub(super) fn check_unchanged(
    conn: &Connection,
    check: &Unchanged,
) -> Result<Result<(), StoreError>, StoreError> {
    let version = current_version(conn, &check.kind, &check.id)?;
    Ok(check.verify(version.and_then(|v| u64::try_from(v).ok())))
}

/// The version of a record now (`None`: there is none).
fn current_version(conn: &Connection, kind: &str, id: &str) -> Result<Option<i64>, StoreError> {
    conn.prepare_cached("SELECT version FROM records WHERE kind = ?1 AND id = ?2")
        .and_then(|mut s| {
            s.query_row(params![kind, id], |r| r.get::<_, i64>(0))
                .optional()
        })
        .map_err(backend)
}

/// The version a put writes, or the `VersionConflict` it fails with: an insert needs no
/// current record, an update needs exactly the expected version.
fn next_version(
    put: &PreparedPut,
    current: Option<u64>,
) -> Result<Result<u64, StoreError>, StoreError> {
    Ok(match (put.expected_version, current) {
        (None, None) => Ok(1),
        (Some(expected), Some(now)) if expected == now => Ok(now
            .checked_add(1)
            .filter(|v| *v <= i64::MAX as u64)
            .ok_or_else(|| backend("record version overflow"))?),
        _ => Err(StoreError::VersionConflict {
            kind: put.kind.clone(),
            id: put.id.clone(),
        }),
    })
}

/// One put: version check, unique-key check, write (and release of any claim).
/// Outer `Err`: SQL failure; inner: `VersionConflict` / `UniqueViolation`, always found
/// before the put writes anything (`needs_savepoint` relies on it).
pub(super) fn put_record(
    conn: &Connection,
    put: &PreparedPut,
) -> Result<Result<(), StoreError>, StoreError> {
    if put.expected_version.is_none() {
        return insert_record(conn, put);
    }
    let rec = put;
    let current = conn
        .prepare_cached("SELECT version, unique_keys FROM records WHERE kind = ?1 AND id = ?2")
        .and_then(|mut s| {
            s.query_row(params![rec.kind, rec.id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .optional()
        })
        .map_err(backend)?;
    let current = match current {
        Some((version, keys)) => Some((
            u64_from_db(version, "version").map_err(backend)?,
            keys_from_db(&keys).map_err(backend)?,
        )),
        None => None,
    };
    let version = match next_version(put, current.as_ref().map(|c| c.0))? {
        Ok(v) => v,
        Err(e) => return Ok(Err(e)),
    };
    if let Err(e) = check_unique_keys(conn, rec)? {
        return Ok(Err(e));
    }
    let keys = &rec.keys;
    let old_keys = current.map(|c| c.1);
    if old_keys.as_ref() != Some(keys) {
        if old_keys.as_ref().is_some_and(|k| !k.is_empty()) {
            conn.prepare_cached("DELETE FROM unique_keys WHERE kind = ?1 AND id = ?2")
                .and_then(|mut s| s.execute(params![rec.kind, rec.id]))
                .map_err(backend)?;
        }
        insert_unique_keys(conn, rec)?;
    }
    // An update (the version check found the row): only the columns a record's life
    // changes. Its kind, id, tenant, creation time and subkind are fixed at insert
    // (`Store::commit`), and leaving them out of the SET spares SQLite the rewrite of
    // the list and purge indexes that lead with them (~30% of an update's cost,
    // measured: scripts/sqlite-ceiling.py). The due index changes with the stage.
    conn.prepare_cached(
        "UPDATE records SET version = ?3, status = ?4, due_at = ?5, lane = ?6, \
           unique_keys = ?7, body = ?8 \
         WHERE kind = ?1 AND id = ?2",
    )
    .and_then(|mut s| {
        s.execute(params![
            rec.kind,
            rec.id,
            i64_to_db(version),
            rec.status,
            rec.due_at,
            rec.lane,
            rec.keys_json,
            rec.body,
        ])
    })
    .map_err(backend)?;
    // A commit that puts a record releases any claim on it (`Store::commit`).
    conn.prepare_cached(RELEASE_CLAIM)
        .and_then(|mut s| s.execute(params![rec.kind, rec.id]))
        .map_err(backend)?;
    Ok(Ok(()))
}

/// Drops the claim on one record (`?1` kind, `?2` id), if any.
pub(crate) const RELEASE_CLAIM: &str = "DELETE FROM claims WHERE kind = ?1 AND id = ?2";

/// A put that must create its record (most puts: every accepted operation). The plain
/// INSERT is the existence check: `records_key` refuses a second (kind, id), which is
/// the `VersionConflict` an insert of an existing record is. That saves the point read
/// an update needs. The keys are checked before the row goes in, so a failing insert
/// has written nothing (its batch needs no savepoint for it); a record that exists
/// still reports `VersionConflict` first, as an update does. The row goes in before its
/// keys: for an existing record the conflict is found there, before its keys (held by
/// itself, so they pass the check) could reach the `unique_keys` primary key as a SQL
/// error that fails the whole group.
fn insert_record(
    conn: &Connection,
    rec: &PreparedPut,
) -> Result<Result<(), StoreError>, StoreError> {
    let conflict = || StoreError::VersionConflict {
        kind: rec.kind.clone(),
        id: rec.id.clone(),
    };
    if let Err(e) = check_unique_keys(conn, rec)? {
        let exists = current_version(conn, &rec.kind, &rec.id)?.is_some();
        return Ok(Err(if exists { conflict() } else { e }));
    }
    let inserted = conn
        .prepare_cached(
            "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
               lease_owner, lease_until, unique_keys, body, subkind, lane) \
             VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, NULL, NULL, ?7, ?8, ?9, ?10)",
        )
        .and_then(|mut s| {
            s.execute(params![
                rec.kind,
                rec.id,
                rec.tenant,
                rec.created_at,
                rec.status,
                rec.due_at,
                rec.keys_json,
                rec.body,
                rec.subkind,
                rec.lane
            ])
        });
    match inserted {
        Ok(_) => {}
        Err(rusqlite::Error::SqliteFailure(e, _))
            if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE =>
        {
            return Ok(Err(conflict()));
        }
        Err(e) => return Err(backend(e)),
    }
    insert_unique_keys(conn, rec)?;
    Ok(Ok(()))
}

/// `UniqueViolation` if another record holds one of the put's keys.
fn check_unique_keys(
    conn: &Connection,
    rec: &PreparedPut,
) -> Result<Result<(), StoreError>, StoreError> {
    if rec.unique_keys.is_empty() {
        return Ok(Ok(()));
    }
    let mut stmt = conn
        .prepare_cached("SELECT kind, id FROM unique_keys WHERE key = ?1")
        .map_err(backend)?;
    for key in &rec.unique_keys {
        let held = stmt
            .query_row([key], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .optional()
            .map_err(backend)?;
        if let Some((kind, id)) = held
            && (kind != rec.kind || id != rec.id)
        {
            return Ok(Err(StoreError::UniqueViolation { key: key.clone() }));
        }
    }
    Ok(Ok(()))
}

/// The record's (deduplicated) keys, none of them held by another record.
fn insert_unique_keys(conn: &Connection, rec: &PreparedPut) -> Result<(), StoreError> {
    if rec.keys.is_empty() {
        return Ok(());
    }
    let mut stmt = conn
        .prepare_cached("INSERT INTO unique_keys (key, kind, id) VALUES (?1, ?2, ?3)")
        .map_err(backend)?;
    for key in &rec.keys {
        stmt.execute(params![key, rec.kind, rec.id])
            .map_err(backend)?;
    }
    Ok(())
}

/// A worker's claim: the oldest due records of one kind and lane that no live claim
/// holds. The SELECT walks `records_due` (kind, lane, due_at, id) in order; a claim is a
/// row of `claims` (migration 0009), looked up by its key, so claiming never rewrites a
/// record's row.
pub(crate) const CLAIM_DUE: &str = concat!(
    "SELECT ",
    record_cols!(),
    " FROM records r WHERE kind = ?1 AND lane = ?2 \
       AND due_at IS NOT NULL AND due_at <= ?3 \
       AND NOT EXISTS (SELECT 1 FROM claims c \
         WHERE c.kind = ?1 AND c.id = r.id AND c.lease_until > ?3) \
     ORDER BY due_at, id LIMIT ?4"
);

/// Takes (or renews) the claim on one record: `?1` kind, `?2` id, `?3` owner, `?4` until.
const TAKE_CLAIM: &str = "INSERT INTO claims (kind, id, lease_owner, lease_until) \
     VALUES (?1, ?2, ?3, ?4) \
     ON CONFLICT (kind, id) DO UPDATE SET lease_owner = excluded.lease_owner, \
       lease_until = excluded.lease_until";

pub(super) fn claim_due(conn: &Connection, claim: &Claim) -> Result<Vec<StoredRecord>, StoreError> {
    let mut stmt = conn.prepare_cached(CLAIM_DUE).map_err(backend)?;
    let rows = stmt
        .query_map(
            params![
                claim.kind,
                claim.lane,
                claim.now.0,
                crate::codec::sql_count(claim.limit)
            ],
            record_from_row,
        )
        .map_err(backend)?;
    let mut records = Vec::new();
    for row in rows {
        records.push(row.map_err(backend)?.map_err(backend)?);
    }
    let mut take = conn.prepare_cached(TAKE_CLAIM).map_err(backend)?;
    for r in &records {
        take.execute(params![r.kind, r.id, claim.worker, claim.until.0])
            .map_err(backend)?;
    }
    Ok(records)
}
