//! A commit's puts in a bounded number of statements, whatever their number: one INSERT
//! of the new records, one versioned UPDATE of the others, then one DELETE, one INSERT
//! and one SELECT of their unique keys (`write_puts`). The outcome, and the error when
//! there is one, are those of writing the puts one after the other in the batch's order
//! (`Store::commit`): the first put that fails reports, as the one-by-one path would.
//!
//! Why it is the same: each record is put at most once here (a batch that puts one
//! record twice writes them one at a time), so the statements of two puts
//! touch different record rows, and the only way one put's write bears on another's is
//! through a unique key, which the checks in `first_error` replay in batch order. A batch
//! that puts one record twice writes its puts one at a time, each as a batch of one.

use super::backend;
use super::{Attempt, classify};
use crate::codec::{dedup_keys, keys_to_db};
use sqlx::Row;
use sqlx::postgres::PgConnection;
use stablecoin_core::ports::store::{Put, StoreError};
use std::collections::{HashMap, HashSet};

/// (kind, id) of a record.
type RecordId = (String, String);

/// The puts, after the idempotency record and before the ledger writes (`commit_in`):
/// version checks and writes (releasing any claim), then unique keys.
pub(super) async fn write_puts(conn: &mut PgConnection, puts: &[Put]) -> Result<(), Attempt> {
    let mut seen = HashSet::new();
    if puts
        .iter()
        .all(|p| seen.insert((p.record.kind.as_str(), p.record.id.as_str())))
    {
        return write_distinct(conn, puts).await;
    }
    // A record put twice: its second put depends on the first one's write.
    for put in puts {
        write_distinct(conn, std::slice::from_ref(put)).await?;
    }
    Ok(())
}

/// Puts of distinct records: at most five statements.
async fn write_distinct(conn: &mut PgConnection, puts: &[Put]) -> Result<(), Attempt> {
    if puts.is_empty() {
        return Ok(());
    }
    let keys: Vec<Vec<String>> = puts
        .iter()
        .map(|p| dedup_keys(&p.record.unique_keys))
        .collect();
    let mut written = insert_new(conn, puts, &keys).await?;
    written.extend(update_versioned(conn, puts, &keys).await?);
    // The puts that ran before the first one that failed its version check: the
    // one-by-one path never reaches the others, so their keys are not written either.
    let ran = puts
        .iter()
        .position(|p| !written.contains(&(p.record.kind.clone(), p.record.id.clone())))
        .unwrap_or(puts.len());
    let (ran_puts, ran_keys) = (&puts[..ran], &keys[..ran]);
    let mut dropped = HashMap::new();
    if ran_puts.iter().any(|p| p.expected_version.is_some()) {
        dropped = drop_keys(conn, ran_puts, ran_keys).await?;
    }
    let mut held = HashMap::new();
    if ran_keys.iter().any(|k| !k.is_empty()) {
        held = claim_keys(conn, ran_puts, ran_keys).await?;
    }
    match first_error(puts, ran, &dropped, &held) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The error of the first put that fails, in batch order, as the one-by-one path
/// finds it: its version check (`ran` is the first put not written), then each of its
/// keys in its order. A key a later put of the batch dropped was still that put's
/// record's when this put claimed it (`dropped`: key -> index of the put that dropped
/// it); `held`: who holds each claimed key now.
fn first_error(
    puts: &[Put],
    ran: usize,
    dropped: &HashMap<String, usize>,
    held: &HashMap<String, RecordId>,
) -> Option<Attempt> {
    for (i, put) in puts.iter().enumerate() {
        let rec = &put.record;
        if i == ran {
            return Some(Attempt::Done(StoreError::VersionConflict {
                kind: rec.kind.clone(),
                id: rec.id.clone(),
            }));
        }
        for key in &rec.unique_keys {
            let violation = || {
                Some(Attempt::Done(StoreError::UniqueViolation {
                    key: key.clone(),
                }))
            };
            if dropped.get(key).is_some_and(|&j| j > i) {
                return violation();
            }
            match held.get(key) {
                Some((kind, id)) if kind == &rec.kind && id == &rec.id => {}
                Some(_) => return violation(),
                // Its holder released it between our insert and our read: try again.
                None => {
                    return Some(Attempt::Retry(format!("unique key {key} changed hands")));
                }
            }
        }
    }
    None
}

/// The records of a set of puts, each as a column.
struct Columns {
    kind: Vec<String>,
    id: Vec<String>,
    status: Vec<Option<String>>,
    due_at: Vec<Option<i64>>,
    lane: Vec<i16>,
    keys: Vec<String>,
    body: Vec<String>,
}

impl Columns {
    fn of<'a>(puts: impl Iterator<Item = (&'a Put, &'a Vec<String>)>) -> Self {
        let mut c = Columns {
            kind: Vec::new(),
            id: Vec::new(),
            status: Vec::new(),
            due_at: Vec::new(),
            lane: Vec::new(),
            keys: Vec::new(),
            body: Vec::new(),
        };
        for (put, keys) in puts {
            let rec = &put.record;
            c.kind.push(rec.kind.clone());
            c.id.push(rec.id.clone());
            c.status.push(rec.status.clone());
            c.due_at.push(rec.due_at.map(|t| t.0));
            c.lane.push(i16::from(rec.lane));
            c.keys.push(keys_to_db(keys));
            c.body.push(rec.body.text().into_owned());
        }
        c
    }
}

/// The records read back from `RETURNING kind, id`.
fn record_ids(rows: &[sqlx::postgres::PgRow]) -> Result<HashSet<RecordId>, Attempt> {
    rows.iter()
        .map(|row| {
            Ok((
                row.try_get(0).map_err(backend)?,
                row.try_get(1).map_err(backend)?,
            ))
        })
        .collect()
}

/// The puts of new records, in one statement; those it inserted (an existing record is
/// left alone: its put fails with `VersionConflict`).
async fn insert_new(
    conn: &mut PgConnection,
    puts: &[Put],
    keys: &[Vec<String>],
) -> Result<HashSet<RecordId>, Attempt> {
    let new: Vec<_> = puts
        .iter()
        .zip(keys)
        .filter(|(p, _)| p.expected_version.is_none())
        .collect();
    if new.is_empty() {
        return Ok(HashSet::new());
    }
    let tenant: Vec<_> = new.iter().map(|(p, _)| p.record.tenant.clone()).collect();
    let created: Vec<_> = new.iter().map(|(p, _)| p.record.created_at.0).collect();
    let subkind: Vec<_> = new.iter().map(|(p, _)| p.record.subkind.clone()).collect();
    let c = Columns::of(new.into_iter());
    let rows = sqlx::query(
        "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
           unique_keys, body, subkind, lane) \
         SELECT kind, id, tenant, 1, created_at, status, due_at, unique_keys, body, \
           subkind, lane \
         FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[], $5::text[], \
           $6::int8[], $7::text[], $8::text[], $9::text[], $10::int2[]) WITH ORDINALITY \
           AS u (kind, id, tenant, created_at, status, due_at, unique_keys, body, subkind, \
             lane, ord) \
         ORDER BY ord \
         ON CONFLICT (kind, id) DO NOTHING \
         RETURNING kind, id",
    )
    .bind(&c.kind)
    .bind(&c.id)
    .bind(&tenant)
    .bind(&created)
    .bind(&c.status)
    .bind(&c.due_at)
    .bind(&c.keys)
    .bind(&c.body)
    .bind(&subkind)
    .bind(&c.lane)
    .fetch_all(&mut *conn)
    .await
    .map_err(classify)?;
    record_ids(&rows)
}

/// The puts of existing records, in one statement, each only at its expected version;
/// those it updated. Only what a record's life changes: its tenant, creation time and
/// subkind are fixed at insert (`Store::commit`), as in the SQLite store. The rows are
/// taken in (kind, id) order, so two such commits lock shared records in one order.
async fn update_versioned(
    conn: &mut PgConnection,
    puts: &[Put],
    keys: &[Vec<String>],
) -> Result<HashSet<RecordId>, Attempt> {
    let mut old: Vec<_> = puts
        .iter()
        .zip(keys)
        .filter(|(p, _)| p.expected_version.is_some())
        .collect();
    if old.is_empty() {
        return Ok(HashSet::new());
    }
    old.sort_by(|(a, _), (b, _)| {
        (&a.record.kind, &a.record.id).cmp(&(&b.record.kind, &b.record.id))
    });
    // A version beyond i64 cannot be stored, so it can never match: -1 never does.
    let expected: Vec<i64> = old
        .iter()
        .map(|(p, _)| {
            p.expected_version
                .and_then(|v| i64::try_from(v).ok())
                .unwrap_or(-1)
        })
        .collect();
    let c = Columns::of(old.into_iter());
    let rows = sqlx::query(
        "UPDATE records r SET version = r.version + 1, status = u.status, \
           due_at = u.due_at, lane = u.lane, lease_owner = NULL, lease_until = NULL, \
           unique_keys = u.unique_keys, body = u.body \
         FROM (SELECT * FROM UNNEST($1::text[], $2::text[], $3::int8[], $4::text[], \
             $5::int8[], $6::int2[], $7::text[], $8::text[]) WITH ORDINALITY \
             AS x (kind, id, v, status, due_at, lane, unique_keys, body, ord) \
           ORDER BY ord) u \
         WHERE r.kind = u.kind AND r.id = u.id AND r.version = u.v \
         RETURNING r.kind, r.id",
    )
    .bind(&c.kind)
    .bind(&c.id)
    .bind(&expected)
    .bind(&c.status)
    .bind(&c.due_at)
    .bind(&c.lane)
    .bind(&c.keys)
    .bind(&c.body)
    .fetch_all(&mut *conn)
    .await
    .map_err(classify)?;
    record_ids(&rows)
}

/// The keys, flattened: one (key, kind, id) a row, in batch order.
fn flat_keys(puts: &[Put], keys: &[Vec<String>]) -> [Vec<String>; 3] {
    let mut out: [Vec<String>; 3] = Default::default();
    for (put, ks) in puts.iter().zip(keys) {
        for k in ks {
            out[0].push(k.clone());
            out[1].push(put.record.kind.clone());
            out[2].push(put.record.id.clone());
        }
    }
    out
}

/// The keys the updated records no longer name, deleted in one statement; each mapped to
/// the index of the put that dropped it.
async fn drop_keys(
    conn: &mut PgConnection,
    puts: &[Put],
    keys: &[Vec<String>],
) -> Result<HashMap<String, usize>, Attempt> {
    // A record inserted by this batch held no key before it: only the updates drop any.
    let index: HashMap<RecordId, usize> = puts
        .iter()
        .enumerate()
        .filter(|(_, p)| p.expected_version.is_some())
        .map(|(i, p)| ((p.record.kind.clone(), p.record.id.clone()), i))
        .collect();
    let (kinds, ids): (Vec<_>, Vec<_>) = index.keys().cloned().unzip();
    let [fk, fkind, fid] = flat_keys(puts, keys);
    let rows = sqlx::query(
        "DELETE FROM unique_keys k USING UNNEST($1::text[], $2::text[]) AS p (kind, id) \
         WHERE k.kind = p.kind AND k.id = p.id AND NOT EXISTS ( \
           SELECT 1 FROM UNNEST($3::text[], $4::text[], $5::text[]) AS n (key, kind, id) \
           WHERE n.key = k.key AND n.kind = k.kind AND n.id = k.id) \
         RETURNING k.key, k.kind, k.id",
    )
    .bind(&kinds)
    .bind(&ids)
    .bind(&fk)
    .bind(&fkind)
    .bind(&fid)
    .fetch_all(&mut *conn)
    .await
    .map_err(classify)?;
    let mut dropped = HashMap::new();
    for row in &rows {
        let key: String = row.try_get(0).map_err(backend)?;
        let owner: RecordId = (
            row.try_get(1).map_err(backend)?,
            row.try_get(2).map_err(backend)?,
        );
        if let Some(&i) = index.get(&owner) {
            dropped.insert(key, i);
        }
    }
    Ok(dropped)
}

/// The puts' keys claimed in one statement (in batch order: of two puts naming one
/// free key, the first gets it), then who holds each of them, read in one statement.
async fn claim_keys(
    conn: &mut PgConnection,
    puts: &[Put],
    keys: &[Vec<String>],
) -> Result<HashMap<String, RecordId>, Attempt> {
    let [fk, fkind, fid] = flat_keys(puts, keys);
    sqlx::query(
        "INSERT INTO unique_keys (key, kind, id) \
         SELECT key, kind, id FROM UNNEST($1::text[], $2::text[], $3::text[]) \
           WITH ORDINALITY AS u (key, kind, id, ord) \
         ORDER BY ord \
         ON CONFLICT (key) DO NOTHING",
    )
    .bind(&fk)
    .bind(&fkind)
    .bind(&fid)
    .execute(&mut *conn)
    .await
    .map_err(classify)?;
    let rows = sqlx::query("SELECT key, kind, id FROM unique_keys WHERE key = ANY($1)")
        .bind(&fk)
        .fetch_all(&mut *conn)
        .await
        .map_err(classify)?;
    let mut held = HashMap::new();
    for row in &rows {
        let key: String = row.try_get(0).map_err(backend)?;
        let kind: String = row.try_get(1).map_err(backend)?;
        let id: String = row.try_get(2).map_err(backend)?;
        held.insert(key, (kind, id));
    }
    Ok(held)
}
