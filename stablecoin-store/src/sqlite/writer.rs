//! The single SQLite writer: group commit.
//!
//! The writer waits for one request, takes every request already queued behind it (up
//! to `max_group`), and runs them all in ONE `BEGIN IMMEDIATE` transaction:
//!
//! ```text
//! BEGIN IMMEDIATE
//!   load the ledger rows the group may touch that are not cached (one SELECT per table)
//!   for each operation, in arrival order:
//!     accounts + ledger rules: checked in memory over the loaded rows (crate::ledger)
//!     idempotency record + puts: SAVEPOINT op; INSERT/UPDATE ...; RELEASE op
//!     a batch failing any check: ROLLBACK TO op; its ledger/outbox part is dropped
//!   write the ledger and outbox changes of every kept batch (one multi-statement flush)
//! COMMIT                 -- one fsync of the WAL for the whole group (synchronous=FULL)
//! answer every caller    -- only now: an Ok is durable
//! ```
//!
//! So a batch that fails its own checks (version, unique key, idempotency, ledger rules)
//! is answered with its typed error and the others go on. A SQL-level failure (I/O
//! error, disk full, a constraint the checks should have caught) rolls back the whole
//! group and every caller of it gets `StoreError::Backend`: nothing of it was written.
//!
//! The writer is the only writer: BEGIN IMMEDIATE holds SQLite's write lock for the whole
//! group, so rows loaded inside it cannot change underneath. Ledger accounts and the two
//! sequence counters are also cached across groups; the cache is dropped whenever
//! another connection committed in between (`PRAGMA data_version`), the connection was
//! replaced (a TEMP marker table is gone), a group failed, or it grew too large.

use super::{backend, record_cols, record_from_row, record_keys};
use crate::codec::{i64_to_db, keys_from_db, keys_to_db, phase_from_db, phase_to_db, u64_from_db};
use crate::ledger::{
    AccountState, Known, LedgerChanges, Overlay, TransferState, needed_ids, sort_dedup,
};
use serde_json::json;
use sqlx::sqlite::{SqliteConnection, SqlitePool};
use sqlx::{Connection as _, Row};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::LedgerTransfer;
use stablecoin_core::ports::store::{Batch, CommitReceipt, Put, StoreError, StoredRecord};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};

pub(crate) struct Claim {
    pub kind: String,
    pub worker: String,
    pub now: Timestamp,
    pub until: Timestamp,
    pub limit: usize,
}

pub(crate) enum Request {
    Commit {
        batch: Batch,
        reply: oneshot::Sender<Result<CommitReceipt, StoreError>>,
    },
    Claim {
        claim: Claim,
        reply: oneshot::Sender<Result<Vec<StoredRecord>, StoreError>>,
    },
    Close(oneshot::Sender<()>),
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Request::Commit { .. } => "Commit",
            Request::Claim { .. } => "Claim",
            Request::Close(_) => "Close",
        })
    }
}

/// Counters of the writer (see [`super::SqliteStore::writer_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Transactions committed (or attempted) by the writer.
    pub groups: u64,
    /// Operations (commits and claims) those transactions carried.
    pub operations: u64,
    /// Groups whose transaction failed as a whole.
    pub failed_groups: u64,
    /// The most operations one transaction carried.
    pub largest_group: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Stats {
    groups: AtomicU64,
    operations: AtomicU64,
    failed_groups: AtomicU64,
    largest_group: AtomicU64,
}

impl Stats {
    pub fn snapshot(&self) -> WriterStats {
        WriterStats {
            groups: self.groups.load(Ordering::Relaxed),
            operations: self.operations.load(Ordering::Relaxed),
            failed_groups: self.failed_groups.load(Ordering::Relaxed),
            largest_group: self.largest_group.load(Ordering::Relaxed),
        }
    }
}

enum Work {
    Commit(Batch),
    Claim(Claim),
}

enum Reply {
    Commit(oneshot::Sender<Result<CommitReceipt, StoreError>>),
    Claim(oneshot::Sender<Result<Vec<StoredRecord>, StoreError>>),
}

enum Output {
    Commit(CommitReceipt),
    Claim(Vec<StoredRecord>),
}

impl Reply {
    fn send(self, result: Result<Output, StoreError>) {
        // A caller that went away (cancelled future) just misses its answer; the
        // outcome is in the database either way.
        match (self, result) {
            (Reply::Commit(tx), Ok(Output::Commit(r))) => drop(tx.send(Ok(r))),
            (Reply::Claim(tx), Ok(Output::Claim(r))) => drop(tx.send(Ok(r))),
            (Reply::Commit(tx), Err(e)) => drop(tx.send(Err(e))),
            (Reply::Claim(tx), Err(e)) => drop(tx.send(Err(e))),
            (Reply::Commit(tx), Ok(_)) => drop(tx.send(Err(internal_mismatch()))),
            (Reply::Claim(tx), Ok(_)) => drop(tx.send(Err(internal_mismatch()))),
        }
    }
}

fn internal_mismatch() -> StoreError {
    StoreError::Backend("internal: writer answered with the wrong kind of result".into())
}

fn closed() -> StoreError {
    StoreError::Backend("sqlite store is closed".into())
}

/// Ledger accounts cached across groups before the cache is dropped (~150 B each).
const MAX_CACHED_ACCOUNTS: usize = 262_144;

/// What the writer remembers between groups (see the module doc for when it is dropped).
#[derive(Default)]
struct Cache {
    /// Accounts persist across groups; transfers only within one group.
    known: Known,
    next_transfer_seq: Option<i64>,
    next_outbox_seq: Option<i64>,
    data_version: Option<i64>,
}

impl Cache {
    fn clear(&mut self) {
        *self = Cache::default();
    }
}

/// The writer task: runs until every sender is gone or `Close` arrives.
pub(crate) async fn run(
    pool: SqlitePool,
    mut rx: mpsc::Receiver<Request>,
    stats: Arc<Stats>,
    max_group: usize,
) {
    let mut cache = Cache::default();
    let mut close = None;
    while let Some(first) = rx.recv().await {
        let mut works = Vec::new();
        let mut replies = Vec::new();
        let mut next = Some(first);
        while let Some(request) = next.take() {
            match request {
                Request::Commit { batch, reply } => {
                    works.push(Work::Commit(batch));
                    replies.push(Reply::Commit(reply));
                }
                Request::Claim { claim, reply } => {
                    works.push(Work::Claim(claim));
                    replies.push(Reply::Claim(reply));
                }
                Request::Close(done) => {
                    close = Some(done);
                    break;
                }
            }
            if works.len() < max_group {
                next = rx.try_recv().ok();
            }
        }
        if !works.is_empty() {
            process(&pool, &mut cache, works, replies, &stats).await;
        }
        if close.is_some() {
            break;
        }
    }
    rx.close();
    while let Ok(request) = rx.try_recv() {
        match request {
            Request::Commit { reply, .. } => drop(reply.send(Err(closed()))),
            Request::Claim { reply, .. } => drop(reply.send(Err(closed()))),
            Request::Close(done) => drop(done.send(())),
        }
    }
    if let Some(done) = close {
        let _ = done.send(());
    }
}

async fn process(
    pool: &SqlitePool,
    cache: &mut Cache,
    works: Vec<Work>,
    replies: Vec<Reply>,
    stats: &Stats,
) {
    let n = works.len() as u64;
    let result = match pool.acquire().await {
        Ok(mut conn) => run_group(&mut conn, cache, &works).await,
        Err(e) => Err(backend(e)),
    };
    stats.groups.fetch_add(1, Ordering::Relaxed);
    stats.operations.fetch_add(n, Ordering::Relaxed);
    stats.largest_group.fetch_max(n, Ordering::Relaxed);
    match result {
        Ok(results) => {
            for (reply, r) in replies.into_iter().zip(results) {
                reply.send(r);
            }
        }
        Err(e) => {
            cache.clear();
            stats.failed_groups.fetch_add(1, Ordering::Relaxed);
            for reply in replies {
                reply.send(Err(e.clone()));
            }
        }
    }
}

async fn exec(conn: &mut SqliteConnection, sql: &'static str) -> Result<(), StoreError> {
    sqlx::query(sql)
        .execute(&mut *conn)
        .await
        .map(|_| ())
        .map_err(backend)
}

/// One group transaction. `Err` = the whole group failed (nothing of it committed).
async fn run_group(
    conn: &mut SqliteConnection,
    cache: &mut Cache,
    works: &[Work],
) -> Result<Vec<Result<Output, StoreError>>, StoreError> {
    let begun = sqlx::query(
        "BEGIN IMMEDIATE; \
         SELECT (SELECT data_version FROM pragma_data_version()), \
                (SELECT COUNT(*) FROM sqlite_temp_master WHERE name = 'stablecoin_writer')",
    )
    .fetch_one(&mut *conn)
    .await;
    let row = match begun {
        Ok(row) => row,
        Err(e) => {
            rollback(conn).await;
            return Err(backend(e));
        }
    };
    let body = async {
        let data_version: i64 = row.try_get(0).map_err(backend)?;
        let marked: i64 = row.try_get(1).map_err(backend)?;
        if marked == 0 {
            // A connection we have not used yet: nothing cached can be trusted.
            exec(conn, "CREATE TEMP TABLE stablecoin_writer (x INTEGER)").await?;
            cache.clear();
        }
        if cache.data_version != Some(data_version)
            || cache.known.accounts.len() > MAX_CACHED_ACCOUNTS
        {
            cache.clear();
        }
        cache.data_version = Some(data_version);
        cache.known.transfers.clear();
        group_body(conn, cache, works).await
    }
    .await;
    let results = match body {
        Ok(results) => results,
        Err(e) => {
            rollback(conn).await;
            return Err(e);
        }
    };
    if let Err(e) = exec(conn, "COMMIT").await {
        rollback(conn).await;
        return Err(StoreError::Backend(format!(
            "group commit failed, nothing of it was written: {e}"
        )));
    }
    Ok(results)
}

async fn rollback(conn: &mut SqliteConnection) {
    if exec(conn, "ROLLBACK").await.is_err() {
        // Nothing left to roll back (SQLite already did), or the connection is gone.
        let _ = conn.ping().await;
    }
}

/// Ledger and outbox writes of the group's kept batches, flushed once before COMMIT.
#[derive(Default)]
struct GroupWrites {
    dirty_accounts: Vec<String>,
    dirty_set: HashSet<String>,
    /// Transfers applied in this group, in order (final state is in the cache).
    new_transfers: Vec<String>,
    new_set: HashSet<String>,
    /// Pending transfers from before this group that it posted or voided.
    resolved_before: Vec<String>,
    outbox: Vec<serde_json::Value>,
}

impl GroupWrites {
    fn take(&mut self, changes: &LedgerChanges) {
        for a in &changes.accounts {
            if self.dirty_set.insert(a.id.clone()) {
                self.dirty_accounts.push(a.id.clone());
            }
        }
        for t in &changes.new_transfers {
            self.new_set.insert(t.transfer.id.clone());
            self.new_transfers.push(t.transfer.id.clone());
        }
        for id in &changes.resolved {
            if !self.new_set.contains(id) {
                self.resolved_before.push(id.clone());
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.dirty_accounts.is_empty()
            && self.new_transfers.is_empty()
            && self.resolved_before.is_empty()
            && self.outbox.is_empty()
    }
}

async fn group_body(
    conn: &mut SqliteConnection,
    cache: &mut Cache,
    works: &[Work],
) -> Result<Vec<Result<Output, StoreError>>, StoreError> {
    prefetch(conn, cache, works).await?;
    let mut writes = GroupWrites::default();
    let mut results = Vec::with_capacity(works.len());
    for work in works {
        let result = match work {
            Work::Commit(batch) => {
                let sql_part = batch.idempotency.is_some() || !batch.puts.is_empty();
                if sql_part {
                    exec(conn, "SAVEPOINT op").await?;
                }
                match apply_batch(conn, cache, batch).await? {
                    Ok((receipt, changes, outbox)) => {
                        if sql_part {
                            exec(conn, "RELEASE op").await?;
                        }
                        cache.known.merge(&changes);
                        writes.take(&changes);
                        if !outbox.is_empty() {
                            cache.next_outbox_seq =
                                Some(cache.next_outbox_seq.unwrap_or(1) + outbox.len() as i64);
                            writes.outbox.extend(outbox);
                        }
                        Ok(Output::Commit(receipt))
                    }
                    Err(e) => {
                        if sql_part {
                            exec(conn, "ROLLBACK TO op; RELEASE op").await?;
                        }
                        Err(e)
                    }
                }
            }
            // One statement: atomic by itself.
            Work::Claim(claim) => Ok(Output::Claim(claim_due(conn, claim).await?)),
        };
        results.push(result);
    }
    flush(conn, cache, &writes).await?;
    Ok(results)
}

/// Loads what the group's batches may touch and the cache lacks.
async fn prefetch(
    conn: &mut SqliteConnection,
    cache: &mut Cache,
    works: &[Work],
) -> Result<(), StoreError> {
    let mut accounts = Vec::new();
    let mut transfers = Vec::new();
    let mut outbox = false;
    for work in works {
        if let Work::Commit(batch) = work {
            needed_ids(batch, &mut accounts, &mut transfers);
            outbox |= !batch.outbox.is_empty();
        }
    }
    accounts.retain(|id| !cache.known.accounts.contains_key(id));
    sort_dedup(&mut accounts);
    sort_dedup(&mut transfers);
    if !accounts.is_empty() {
        let rows = sqlx::query(
            "SELECT id, allow_negative, debits_posted, credits_posted, debits_pending, \
             credits_pending FROM ledger_accounts \
             WHERE id IN (SELECT value FROM json_each(?1))",
        )
        .bind(json!(accounts).to_string())
        .fetch_all(&mut *conn)
        .await
        .map_err(backend)?;
        for id in accounts {
            cache.known.accounts.insert(id, None);
        }
        for row in rows {
            let id: String = row.try_get(0).map_err(backend)?;
            let state = AccountState {
                allow_negative: row.try_get(1).map_err(backend)?,
                balance: super::balance_from_row(&row, 2).map_err(backend)?,
            };
            cache.known.accounts.insert(id, Some(state));
        }
    }
    if !transfers.is_empty() {
        let rows = sqlx::query(
            "SELECT id, debit, credit, amount, phase, pending_id, resolved \
             FROM ledger_transfers WHERE id IN (SELECT value FROM json_each(?1))",
        )
        .bind(json!(transfers).to_string())
        .fetch_all(&mut *conn)
        .await
        .map_err(backend)?;
        for id in transfers {
            cache.known.transfers.insert(id, None);
        }
        for row in rows {
            let t = transfer_from_row(&row).map_err(backend)?;
            cache.known.transfers.insert(t.transfer.id.clone(), Some(t));
        }
        if cache.next_transfer_seq.is_none() {
            cache.next_transfer_seq = Some(
                sqlx::query_scalar("SELECT value FROM ledger_meta WHERE key = 'next_transfer_seq'")
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(backend)?,
            );
        }
    }
    if outbox && cache.next_outbox_seq.is_none() {
        cache.next_outbox_seq = Some(
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox")
                .fetch_one(&mut *conn)
                .await
                .map_err(backend)?,
        );
    }
    Ok(())
}

fn transfer_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<TransferState, String> {
    let s = |e: sqlx::Error| e.to_string();
    let amount: i64 = row.try_get(3).map_err(s)?;
    let phase: String = row.try_get(4).map_err(s)?;
    Ok(TransferState {
        transfer: LedgerTransfer {
            id: row.try_get(0).map_err(s)?,
            debit: row.try_get(1).map_err(s)?,
            credit: row.try_get(2).map_err(s)?,
            amount: Micros(u64_from_db(amount, "amount")?),
            phase: phase_from_db(&phase, row.try_get(5).map_err(s)?)?,
        },
        resolved: row.try_get(6).map_err(s)?,
    })
}

type Applied = (CommitReceipt, LedgerChanges, Vec<serde_json::Value>);

/// Applies one batch in the order `Store::commit` documents: accounts, idempotency
/// record, puts, ledger transfers, outbox. The outer `Err` is a SQL failure (the group
/// fails); the inner one is the batch's own typed error (its savepoint is rolled back).
async fn apply_batch(
    conn: &mut SqliteConnection,
    cache: &Cache,
    batch: &Batch,
) -> Result<Result<Applied, StoreError>, StoreError> {
    let mut overlay = Overlay::new(&cache.known);
    for account in &batch.accounts {
        if let Err(e) = overlay.create_account(account) {
            return Ok(Err(e.into()));
        }
    }
    if let Some(idem) = &batch.idempotency {
        let done = sqlx::query(
            "INSERT INTO idempotency (tenant, key, request_hash, response, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
        )
        .bind(idem.tenant.clone())
        .bind(idem.key.clone())
        .bind(idem.request_hash.clone())
        .bind(idem.response.to_string())
        .bind(idem.created_at.0)
        .execute(&mut *conn)
        .await
        .map_err(backend)?;
        if done.rows_affected() == 0 {
            return Ok(Err(StoreError::IdempotencyExists {
                key: idem.key.clone(),
            }));
        }
    }
    if let Err(e) = put_records(conn, &batch.puts).await? {
        return Ok(Err(e));
    }
    for transfer in &batch.ledger {
        if let Err(e) = overlay.transfer(transfer) {
            return Ok(Err(e.into()));
        }
    }
    let changes = overlay.into_changes();
    let first_seq = cache.next_outbox_seq.unwrap_or(1);
    let mut outbox_seqs = Vec::with_capacity(batch.outbox.len());
    let mut rows = Vec::with_capacity(batch.outbox.len());
    for (seq, e) in (first_seq..).zip(&batch.outbox) {
        outbox_seqs.push(seq as u64);
        rows.push(json!([
            seq,
            e.id,
            e.tenant,
            e.event_type,
            e.occurred_at.0,
            e.payload.to_string()
        ]));
    }
    Ok(Ok((CommitReceipt { outbox_seqs }, changes, rows)))
}

/// Below this many puts, one statement each costs less than building the JSON.
const PUTS_IN_BULK_FROM: usize = 4;

/// Rows per multi-row upsert (8 parameters each, far below SQLite's 32,766).
const UPSERT_ROWS: usize = 64;

/// `INSERT INTO records ... VALUES (...), ... ON CONFLICT ... DO UPDATE` for `rows` rows
/// (the text depends only on `rows`, so sqlx's statement cache keeps it prepared).
fn upsert_sql(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
           lease_owner, lease_until, unique_keys, body) VALUES ",
    );
    for i in 0..rows {
        if i > 0 {
            sql.push(',');
        }
        sql.push_str("(?, ?, ?, ?, ?, ?, ?, NULL, NULL, '[]', ?)");
    }
    sql.push_str(
        " ON CONFLICT (kind, id) DO UPDATE SET tenant = excluded.tenant, \
           version = excluded.version, created_at = excluded.created_at, \
           status = excluded.status, due_at = excluded.due_at, lease_owner = NULL, \
           lease_until = NULL, unique_keys = excluded.unique_keys, body = excluded.body",
    );
    sql
}

/// The version a put writes, or the `VersionConflict` it fails with: an insert needs no
/// current record, an update needs exactly the expected version.
fn next_version(put: &Put, current: Option<u64>) -> Result<Result<u64, StoreError>, StoreError> {
    Ok(match (put.expected_version, current) {
        (None, None) => Ok(1),
        (Some(expected), Some(now)) if expected == now => Ok(now
            .checked_add(1)
            .filter(|v| *v <= i64::MAX as u64)
            .ok_or_else(|| backend("record version overflow"))?),
        _ => Err(StoreError::VersionConflict {
            kind: put.record.kind.clone(),
            id: put.record.id.clone(),
        }),
    })
}

async fn one_by_one(
    conn: &mut SqliteConnection,
    puts: &[Put],
) -> Result<Result<(), StoreError>, StoreError> {
    for put in puts {
        if let Err(e) = put_record(conn, put).await? {
            return Ok(Err(e));
        }
    }
    Ok(Ok(()))
}

/// The puts of one batch. Many puts without unique keys (webhook fan-out, a round of
/// delivery outcomes) take two statements in all: one SELECT of every current version,
/// one multi-row upsert; each statement is a round trip to sqlx's worker thread, which
/// costs more than SQLite's own work here. Anything else (few puts, unique keys, the
/// same record twice) goes one put at a time. Same checks and errors either way: the
/// first put in order that conflicts is the one reported.
async fn put_records(
    conn: &mut SqliteConnection,
    puts: &[Put],
) -> Result<Result<(), StoreError>, StoreError> {
    let mut seen = HashSet::with_capacity(puts.len());
    let bulk = puts.len() >= PUTS_IN_BULK_FROM
        && puts.iter().all(|p| {
            p.record.unique_keys.is_empty() && seen.insert((&p.record.kind, &p.record.id))
        });
    if !bulk {
        return one_by_one(conn, puts).await;
    }
    let ids: Vec<serde_json::Value> = puts
        .iter()
        .map(|p| json!([p.record.kind, p.record.id]))
        .collect();
    let rows = sqlx::query(
        "SELECT kind, id, version, unique_keys FROM records          WHERE (kind, id) IN (SELECT value->>0, value->>1 FROM json_each(?1))",
    )
    .bind(serde_json::Value::Array(ids).to_string())
    .fetch_all(&mut *conn)
    .await
    .map_err(backend)?;
    let mut current: HashMap<(String, String), (u64, bool)> = HashMap::with_capacity(rows.len());
    for row in &rows {
        let kind: String = row.try_get(0).map_err(backend)?;
        let id: String = row.try_get(1).map_err(backend)?;
        let version: i64 = row.try_get(2).map_err(backend)?;
        let keys: String = row.try_get(3).map_err(backend)?;
        let has_keys = !keys_from_db(&keys).map_err(backend)?.is_empty();
        current.insert(
            (kind, id),
            (u64_from_db(version, "version").map_err(backend)?, has_keys),
        );
    }
    let mut values = Vec::with_capacity(puts.len());
    for put in puts {
        let rec = &put.record;
        let now = current.get(&(rec.kind.clone(), rec.id.clone()));
        if now.is_some_and(|c| c.1) {
            // Dropping a record's unique keys: the one-at-a-time path does that.
            return one_by_one(conn, puts).await;
        }
        let version = match next_version(put, now.map(|c| c.0))? {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        values.push((rec, version));
    }
    for chunk in values.chunks(UPSERT_ROWS) {
        let mut query = sqlx::query(sqlx::AssertSqlSafe(upsert_sql(chunk.len())));
        for (rec, version) in chunk {
            query = query
                .bind(rec.kind.as_str())
                .bind(rec.id.as_str())
                .bind(rec.tenant.as_deref())
                .bind(i64_to_db(*version))
                .bind(rec.created_at.0)
                .bind(rec.status.as_deref())
                .bind(rec.due_at.map(|t| t.0))
                .bind(rec.body.to_string());
        }
        query.execute(&mut *conn).await.map_err(backend)?;
    }
    Ok(Ok(()))
}

/// One put: version check, unique-key check, write (and release of any claim).
/// Outer `Err`: SQL failure; inner: `VersionConflict` / `UniqueViolation`.
async fn put_record(
    conn: &mut SqliteConnection,
    put: &Put,
) -> Result<Result<(), StoreError>, StoreError> {
    let rec = &put.record;
    let current =
        sqlx::query("SELECT version, unique_keys FROM records WHERE kind = ?1 AND id = ?2")
            .bind(rec.kind.clone())
            .bind(rec.id.clone())
            .fetch_optional(&mut *conn)
            .await
            .map_err(backend)?;
    let current = match current {
        Some(row) => {
            let version: i64 = row.try_get(0).map_err(backend)?;
            let keys: String = row.try_get(1).map_err(backend)?;
            Some((
                u64_from_db(version, "version").map_err(backend)?,
                keys_from_db(&keys).map_err(backend)?,
            ))
        }
        None => None,
    };
    let version = match next_version(put, current.as_ref().map(|c| c.0))? {
        Ok(v) => v,
        Err(e) => return Ok(Err(e)),
    };
    if !rec.unique_keys.is_empty() {
        let rows = sqlx::query(
            "SELECT key, kind, id FROM unique_keys \
             WHERE key IN (SELECT value FROM json_each(?1))",
        )
        .bind(keys_to_db(&rec.unique_keys))
        .fetch_all(&mut *conn)
        .await
        .map_err(backend)?;
        let mut held = HashMap::new();
        for row in &rows {
            let key: String = row.try_get(0).map_err(backend)?;
            let kind: String = row.try_get(1).map_err(backend)?;
            let id: String = row.try_get(2).map_err(backend)?;
            held.insert(key, (kind, id));
        }
        for key in &rec.unique_keys {
            if let Some((kind, id)) = held.get(key)
                && (kind != &rec.kind || id != &rec.id)
            {
                return Ok(Err(StoreError::UniqueViolation { key: key.clone() }));
            }
        }
    }
    let keys = record_keys(rec);
    let old_keys = current.map(|c| c.1);
    if old_keys.as_ref() != Some(&keys) {
        if old_keys.as_ref().is_some_and(|k| !k.is_empty()) {
            sqlx::query("DELETE FROM unique_keys WHERE kind = ?1 AND id = ?2")
                .bind(rec.kind.clone())
                .bind(rec.id.clone())
                .execute(&mut *conn)
                .await
                .map_err(backend)?;
        }
        if !keys.is_empty() {
            sqlx::query(
                "INSERT INTO unique_keys (key, kind, id) \
                 SELECT value, ?2, ?3 FROM json_each(?1)",
            )
            .bind(keys_to_db(&keys))
            .bind(rec.kind.clone())
            .bind(rec.id.clone())
            .execute(&mut *conn)
            .await
            .map_err(backend)?;
        }
    }
    sqlx::query(
        "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
           lease_owner, lease_until, unique_keys, body) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, NULL, ?8, ?9) \
         ON CONFLICT (kind, id) DO UPDATE SET tenant = excluded.tenant, \
           version = excluded.version, created_at = excluded.created_at, \
           status = excluded.status, due_at = excluded.due_at, lease_owner = NULL, \
           lease_until = NULL, unique_keys = excluded.unique_keys, body = excluded.body",
    )
    .bind(rec.kind.clone())
    .bind(rec.id.clone())
    .bind(rec.tenant.clone())
    .bind(i64_to_db(version))
    .bind(rec.created_at.0)
    .bind(rec.status.clone())
    .bind(rec.due_at.map(|t| t.0))
    .bind(keys_to_db(&keys))
    .bind(rec.body.to_string())
    .execute(&mut *conn)
    .await
    .map_err(backend)?;
    Ok(Ok(()))
}

/// Writes the ledger and outbox changes of every kept batch in one round trip.
async fn flush(
    conn: &mut SqliteConnection,
    cache: &mut Cache,
    writes: &GroupWrites,
) -> Result<(), StoreError> {
    if writes.is_empty() {
        return Ok(());
    }
    let missing = |what: &str, id: &str| backend(format!("internal: {what} {id} not cached"));
    let mut accounts = Vec::with_capacity(writes.dirty_accounts.len());
    for id in &writes.dirty_accounts {
        let Some(Some(a)) = cache.known.accounts.get(id) else {
            return Err(missing("account", id));
        };
        let b = a.balance;
        accounts.push(json!([
            id,
            i64::from(a.allow_negative),
            i64_to_db(b.debits_posted),
            i64_to_db(b.credits_posted),
            i64_to_db(b.debits_pending),
            i64_to_db(b.credits_pending)
        ]));
    }
    let first_seq = cache.next_transfer_seq.unwrap_or(1);
    let mut transfers = Vec::with_capacity(writes.new_transfers.len());
    for (i, id) in writes.new_transfers.iter().enumerate() {
        let Some(Some(t)) = cache.known.transfers.get(id) else {
            return Err(missing("transfer", id));
        };
        let (phase, pending_id) = phase_to_db(&t.transfer.phase);
        transfers.push(json!([
            t.transfer.id,
            first_seq + i as i64,
            t.transfer.debit,
            t.transfer.credit,
            i64_to_db(t.transfer.amount.0),
            phase,
            pending_id,
            i64::from(t.resolved)
        ]));
    }
    let next_seq = first_seq + transfers.len() as i64;
    sqlx::query(
        // Plain `?`: sqlx binds the arguments of a multi-statement query in order.
        "INSERT INTO ledger_accounts (id, allow_negative, debits_posted, credits_posted, \
           debits_pending, credits_pending) \
         SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5 \
         FROM jsonb_each(?) WHERE true \
         ON CONFLICT (id) DO UPDATE SET debits_posted = excluded.debits_posted, \
           credits_posted = excluded.credits_posted, \
           debits_pending = excluded.debits_pending, \
           credits_pending = excluded.credits_pending; \
         INSERT INTO ledger_transfers (id, seq, debit, credit, amount, phase, pending_id, \
           resolved) \
         SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, \
           value->>6, value->>7 \
         FROM jsonb_each(?); \
         UPDATE ledger_transfers SET resolved = 1 \
           WHERE id IN (SELECT value FROM json_each(?)); \
         UPDATE ledger_meta SET value = ? WHERE key = 'next_transfer_seq'; \
         INSERT INTO outbox (seq, id, tenant, event_type, occurred_at, payload) \
         SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5 \
         FROM jsonb_each(?)",
    )
    .bind(serde_json::Value::Array(accounts).to_string())
    .bind(serde_json::Value::Array(transfers).to_string())
    .bind(json!(writes.resolved_before).to_string())
    .bind(next_seq)
    .bind(serde_json::Value::Array(writes.outbox.clone()).to_string())
    .execute(&mut *conn)
    .await
    .map_err(backend)?;
    cache.next_transfer_seq = Some(next_seq);
    Ok(())
}

async fn claim_due(
    conn: &mut SqliteConnection,
    claim: &Claim,
) -> Result<Vec<StoredRecord>, StoreError> {
    let rows = sqlx::query(concat!(
        "UPDATE records SET lease_owner = ?1, lease_until = ?2 \
         WHERE kind = ?3 AND id IN ( \
           SELECT id FROM records WHERE kind = ?3 AND due_at IS NOT NULL \
             AND due_at <= ?4 AND (lease_until IS NULL OR lease_until <= ?4) \
           ORDER BY due_at, id LIMIT ?5) RETURNING ",
        record_cols!()
    ))
    .bind(claim.worker.clone())
    .bind(claim.until.0)
    .bind(claim.kind.clone())
    .bind(claim.now.0)
    .bind(crate::codec::sql_count(claim.limit))
    .fetch_all(&mut *conn)
    .await
    .map_err(backend)?;
    let mut records = rows
        .iter()
        .map(record_from_row)
        .collect::<Result<Vec<_>, _>>()?;
    records.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
    Ok(records)
}
