//! The single SQLite writer: group commit on a dedicated thread.
//!
//! The writer is an OS thread that owns the only write connection (rusqlite, on the
//! same SQLite library and file as the sqlx readers). It waits for one request, takes
//! every request already queued behind it (up to `max_group` interactive ones, plus a
//! few held background ones: `schedule.rs`), and runs them all in ONE `BEGIN IMMEDIATE`
//! transaction:
//!
//! ```text
//! BEGIN IMMEDIATE
//!   load the ledger rows the group may touch that are not cached (prepared point reads)
//!   for each operation, in arrival order:
//!     accounts + ledger rules: checked in memory over the loaded rows (crate::ledger)
//!     idempotency record + puts: [SAVEPOINT op;] INSERT/UPDATE ...; [RELEASE op]
//!     a batch failing any check: [ROLLBACK TO op;] its ledger/outbox part is dropped
//!     (the savepoint only where the batch could fail after writing: needs_savepoint)
//!   write the ledger and outbox changes of every kept batch
//! COMMIT                 -- one fsync of the WAL for the whole group (synchronous=FULL)
//! answer every caller    -- only now: an Ok is durable
//! ```
//!
//! So a batch that fails its own checks (version, unique key, idempotency, ledger rules)
//! is answered with its typed error and the others go on. A SQL-level failure (I/O
//! error, disk full, a constraint the checks should have caught) rolls back the whole
//! group and every caller of it gets `StoreError::Backend`: nothing of it was written.
//!
//! Why a thread and not an async task over sqlx: every statement through sqlx is a
//! channel round trip to its connection's worker thread and back (two thread wake-ups),
//! which cost more than SQLite's own work for the small statements a group is made of.
//! Here a group runs start to finish on one thread with prepared statements from the
//! connection's cache; callers still `await` a channel, once per operation.
//!
//! BEGIN IMMEDIATE holds SQLite's write lock for the whole group, so rows loaded inside
//! it cannot change underneath. Ledger accounts and the two sequence counters are also
//! cached across groups; the cache is dropped whenever another connection (another
//! process on the same file) committed in between (`PRAGMA data_version`), a group
//! failed, or it grew too large.

use super::schedule::Schedule;
use super::{backend, balance_from_sums, record_from_row, record_keys};
use crate::codec::{i64_to_db, keys_from_db, keys_to_db, phase_from_db, phase_to_db, u64_from_db};
use crate::ledger::{
    AccountState, Known, LedgerChanges, Overlay, TransferState, needed_ids, sort_dedup,
};
use rusqlite::{Connection, OptionalExtension, params};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{LedgerAccount, LedgerTransfer};
use stablecoin_core::ports::store::{Batch, CommitReceipt, StoreError, StoredRecord, Unchanged};
use std::collections::HashSet;
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

/// A batch made ready for the writer by its caller: every JSON value is already text,
/// so the writer thread (the one serial part of the store) only binds strings, and the
/// batch's JSON trees are freed on the caller's thread, not the writer's.
pub(crate) struct Prepared {
    background: bool,
    unchanged: Vec<Unchanged>,
    accounts: Vec<LedgerAccount>,
    ledger: Vec<LedgerTransfer>,
    idempotency: Option<PreparedIdempotency>,
    puts: Vec<PreparedPut>,
    outbox: Vec<PreparedOutbox>,
}

struct PreparedIdempotency {
    tenant: String,
    key: String,
    request_hash: String,
    response: String,
    created_at: i64,
}

struct PreparedPut {
    kind: String,
    id: String,
    tenant: Option<String>,
    created_at: i64,
    status: Option<String>,
    due_at: Option<i64>,
    expected_version: Option<u64>,
    /// The keys to check, as given.
    unique_keys: Vec<String>,
    /// The keys the record keeps (deduplicated), and their stored JSON form.
    keys: Vec<String>,
    keys_json: String,
    body: String,
}

struct PreparedOutbox {
    id: String,
    tenant: String,
    event_type: String,
    occurred_at: i64,
    payload: String,
}

impl Prepared {
    pub(crate) fn new(batch: Batch) -> Self {
        Prepared {
            background: batch.background,
            unchanged: batch.unchanged,
            idempotency: batch.idempotency.map(|i| PreparedIdempotency {
                response: i.response.to_string(),
                tenant: i.tenant,
                key: i.key,
                request_hash: i.request_hash,
                created_at: i.created_at.0,
            }),
            puts: batch
                .puts
                .into_iter()
                .map(|p| {
                    let keys = record_keys(&p.record);
                    let r = p.record;
                    PreparedPut {
                        keys_json: keys_to_db(&keys),
                        keys,
                        body: r.body.into_string(),
                        kind: r.kind,
                        id: r.id,
                        tenant: r.tenant,
                        created_at: r.created_at.0,
                        status: r.status,
                        due_at: r.due_at.map(|t| t.0),
                        expected_version: p.expected_version,
                        unique_keys: r.unique_keys,
                    }
                })
                .collect(),
            outbox: batch
                .outbox
                .into_iter()
                .map(|e| PreparedOutbox {
                    payload: e.payload.to_string(),
                    id: e.id,
                    tenant: e.tenant,
                    event_type: e.event_type,
                    occurred_at: e.occurred_at.0,
                })
                .collect(),
            accounts: batch.accounts,
            ledger: batch.ledger,
        }
    }
}

pub(crate) enum Request {
    Commit {
        batch: Prepared,
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
    Commit(Prepared),
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

/// The writer thread's body: runs until every sender is gone or `Close` arrives, then
/// closes the connection (before `Close` is answered, so the file is free by then).
///
/// Each round takes what is queued (blocking only when nothing is held), sorts it into
/// interactive and background requests, and lets [`Schedule`] decide the group.
pub(crate) fn run(
    conn: Connection,
    mut rx: mpsc::Receiver<Request>,
    stats: Arc<Stats>,
    max_group: usize,
    max_background: usize,
) {
    let mut cache = Cache::default();
    let mut schedule = Schedule::new(max_group, max_background);
    let mut close = None;
    loop {
        let mut next = if schedule.is_idle() {
            match rx.blocking_recv() {
                Some(request) => Some(request),
                None => break,
            }
        } else {
            rx.try_recv().ok()
        };
        let mut group = Vec::new();
        while let Some(request) = next.take() {
            let (item, background) = match request {
                Request::Commit { batch, reply } => {
                    let background = batch.background;
                    ((Work::Commit(batch), Reply::Commit(reply)), background)
                }
                // Only workers claim.
                Request::Claim { claim, reply } => {
                    ((Work::Claim(claim), Reply::Claim(reply)), true)
                }
                Request::Close(done) => {
                    close = Some(done);
                    break;
                }
            };
            if background {
                schedule.hold(item);
            } else {
                group.push(item);
            }
            if !schedule.is_full(&group) {
                next = rx.try_recv().ok();
            }
        }
        if close.is_none() {
            schedule.complete(&mut group);
        } else {
            // Everything that arrived before `Close` is written, held work included.
            group.extend(schedule.drain());
        }
        if !group.is_empty() {
            let (works, replies) = group.into_iter().unzip();
            process(&conn, &mut cache, works, replies, &stats);
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
    drop(conn);
    if let Some(done) = close {
        let _ = done.send(());
    }
}

fn process(
    conn: &Connection,
    cache: &mut Cache,
    works: Vec<Work>,
    replies: Vec<Reply>,
    stats: &Stats,
) {
    let n = works.len() as u64;
    let result = run_group(conn, cache, &works);
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

/// A statement without results, prepared once per connection.
fn exec(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .map(|_| ())
        .map_err(backend)
}

/// One group transaction. `Err` = the whole group failed (nothing of it committed).
fn run_group(
    conn: &Connection,
    cache: &mut Cache,
    works: &[Work],
) -> Result<Vec<Result<Output, StoreError>>, StoreError> {
    exec(conn, "BEGIN IMMEDIATE")?;
    let body = (|| {
        let data_version: i64 = conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(backend)?;
        if cache.data_version != Some(data_version)
            || cache.known.accounts.len() > MAX_CACHED_ACCOUNTS
        {
            cache.clear();
        }
        cache.data_version = Some(data_version);
        cache.known.transfers.clear();
        group_body(conn, cache, works)
    })();
    let results = match body {
        Ok(results) => results,
        Err(e) => {
            rollback(conn);
            return Err(e);
        }
    };
    if let Err(e) = exec(conn, "COMMIT") {
        rollback(conn);
        return Err(StoreError::Backend(format!(
            "group commit failed, nothing of it was written: {e}"
        )));
    }
    Ok(results)
}

fn rollback(conn: &Connection) {
    // An error here means nothing is left to roll back (SQLite already did).
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
}

/// Ledger and outbox writes of the group's kept batches, flushed once before COMMIT.
#[derive(Default)]
struct GroupWrites<'g> {
    dirty_accounts: Vec<String>,
    dirty_set: HashSet<String>,
    /// Transfers applied in this group, in order (final state is in the cache).
    new_transfers: Vec<String>,
    new_set: HashSet<String>,
    /// Pending transfers from before this group that it posted or voided.
    resolved_before: Vec<String>,
    /// The kept batches' events with the sequence numbers they were given (borrowed from
    /// the batches, which live until the group is answered).
    outbox: Vec<(i64, &'g PreparedOutbox)>,
}

impl GroupWrites<'_> {
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
}

fn group_body(
    conn: &Connection,
    cache: &mut Cache,
    works: &[Work],
) -> Result<Vec<Result<Output, StoreError>>, StoreError> {
    prefetch(conn, cache, works)?;
    let mut writes = GroupWrites::default();
    let mut results = Vec::with_capacity(works.len());
    for work in works {
        let result = match work {
            Work::Commit(batch) => {
                let ledger = check_ledger(cache, batch);
                let savepoint = needs_savepoint(batch, &ledger);
                if savepoint {
                    exec(conn, "SAVEPOINT op")?;
                }
                match apply_batch(conn, cache, batch, ledger)? {
                    Ok((receipt, changes)) => {
                        if savepoint {
                            exec(conn, "RELEASE op")?;
                        }
                        cache.known.merge(&changes);
                        writes.take(&changes);
                        if !batch.outbox.is_empty() {
                            let first = cache.next_outbox_seq.unwrap_or(1);
                            writes.outbox.extend((first..).zip(&batch.outbox));
                            cache.next_outbox_seq = Some(first + batch.outbox.len() as i64);
                        }
                        Ok(Output::Commit(receipt))
                    }
                    Err(e) => {
                        if savepoint {
                            exec(conn, "ROLLBACK TO op")?;
                            exec(conn, "RELEASE op")?;
                        }
                        Err(e)
                    }
                }
            }
            // One statement: atomic by itself.
            Work::Claim(claim) => Ok(Output::Claim(claim_due(conn, claim)?)),
        };
        results.push(result);
    }
    flush(conn, cache, &writes)?;
    Ok(results)
}

/// Loads what the group's batches may touch and the cache lacks.
fn prefetch(conn: &Connection, cache: &mut Cache, works: &[Work]) -> Result<(), StoreError> {
    let mut accounts = Vec::new();
    let mut transfers = Vec::new();
    let mut outbox = false;
    for work in works {
        if let Work::Commit(batch) = work {
            needed_ids(
                &batch.accounts,
                &batch.ledger,
                &mut accounts,
                &mut transfers,
            );
            outbox |= !batch.outbox.is_empty();
        }
    }
    accounts.retain(|id| !cache.known.accounts.contains_key(id));
    sort_dedup(&mut accounts);
    sort_dedup(&mut transfers);
    if !accounts.is_empty() {
        let mut stmt = conn
            .prepare_cached(
                "SELECT allow_negative, debits_posted, credits_posted, debits_pending, \
                 credits_pending FROM ledger_accounts WHERE id = ?1",
            )
            .map_err(backend)?;
        for id in accounts {
            let state = stmt
                .query_row([&id], |r| {
                    Ok((
                        r.get::<_, bool>(0)?,
                        [r.get::<_, i64>(1)?, r.get(2)?, r.get(3)?, r.get(4)?],
                    ))
                })
                .optional()
                .map_err(backend)?
                .map(|(allow_negative, sums)| {
                    Ok::<_, StoreError>(AccountState {
                        allow_negative,
                        balance: balance_from_sums(sums).map_err(backend)?,
                    })
                })
                .transpose()?;
            cache.known.accounts.insert(id, state);
        }
    }
    if !transfers.is_empty() {
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, debit, credit, amount, phase, pending_id, resolved \
                 FROM ledger_transfers WHERE id = ?1",
            )
            .map_err(backend)?;
        for id in transfers {
            let state = stmt
                .query_row([&id], transfer_from_row)
                .optional()
                .map_err(backend)?
                .transpose()
                .map_err(backend)?;
            cache.known.transfers.insert(id, state);
        }
        if cache.next_transfer_seq.is_none() {
            cache.next_transfer_seq = Some(
                conn.prepare_cached(
                    "SELECT value FROM ledger_meta WHERE key = 'next_transfer_seq'",
                )
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
                .map_err(backend)?,
            );
        }
    }
    if outbox && cache.next_outbox_seq.is_none() {
        cache.next_outbox_seq = Some(
            conn.prepare_cached("SELECT COALESCE(MAX(seq), 0) + 1 FROM outbox")
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
                .map_err(backend)?,
        );
    }
    Ok(())
}

/// A `ledger_transfers` row; the inner `Err` is a corrupt row.
fn transfer_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<TransferState, String>> {
    let amount: i64 = row.get(3)?;
    let phase: String = row.get(4)?;
    let pending_id: Option<String> = row.get(5)?;
    let (id, debit, credit, resolved) = (row.get(0)?, row.get(1)?, row.get(2)?, row.get(6)?);
    Ok((|| {
        Ok(TransferState {
            transfer: LedgerTransfer {
                id,
                debit,
                credit,
                amount: Micros(u64_from_db(amount, "amount")?),
                phase: phase_from_db(&phase, pending_id)?,
            },
            resolved,
        })
    })())
}

type Applied = (CommitReceipt, LedgerChanges);

/// Applies one batch in the order `Store::commit` documents: accounts, idempotency
/// record, puts, ledger transfers, outbox. The outer `Err` is a SQL failure (the group
/// fails); the inner one is the batch's own typed error (nothing of the batch is left:
/// it failed before writing, or inside its savepoint, see `needs_savepoint`).
fn apply_batch(
    conn: &Connection,
    cache: &Cache,
    batch: &Prepared,
    ledger: LedgerCheck,
) -> Result<Result<Applied, StoreError>, StoreError> {
    // The order in which a failing batch reports its first failure: version checks,
    // accounts, idempotency record, puts, ledger transfers.
    for check in &batch.unchanged {
        if let Err(e) = check_unchanged(conn, check)? {
            return Ok(Err(e));
        }
    }
    let transfers = match ledger {
        LedgerCheck::Accounts(e) => return Ok(Err(e)),
        LedgerCheck::Transfers(result) => result,
    };
    if let Some(idem) = &batch.idempotency {
        let inserted = conn
            .prepare_cached(
                "INSERT INTO idempotency (tenant, key, request_hash, response, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
            )
            .and_then(|mut s| {
                s.execute(params![
                    idem.tenant,
                    idem.key,
                    idem.request_hash,
                    idem.response,
                    idem.created_at
                ])
            })
            .map_err(backend)?;
        if inserted == 0 {
            return Ok(Err(StoreError::IdempotencyExists {
                key: idem.key.clone(),
            }));
        }
    }
    for put in &batch.puts {
        if let Err(e) = put_record(conn, put)? {
            return Ok(Err(e));
        }
    }
    let changes = match transfers {
        Ok(changes) => changes,
        Err(e) => return Ok(Err(e)),
    };
    // The numbers the group gives this batch's events if it is kept (`group_body`).
    let first_seq = cache.next_outbox_seq.unwrap_or(1);
    let outbox_seqs = (first_seq..)
        .take(batch.outbox.len())
        .map(|seq| seq as u64)
        .collect();
    Ok(Ok((CommitReceipt { outbox_seqs }, changes)))
}

/// The batch's ledger part decided in memory, before any of its SQL runs: an account it
/// may not create, or its transfers' outcome.
enum LedgerCheck {
    Accounts(StoreError),
    Transfers(Result<LedgerChanges, StoreError>),
}

fn check_ledger(cache: &Cache, batch: &Prepared) -> LedgerCheck {
    let mut overlay = Overlay::new(&cache.known);
    for account in &batch.accounts {
        if let Err(e) = overlay.create_account(account) {
            return LedgerCheck::Accounts(e.into());
        }
    }
    for transfer in &batch.ledger {
        if let Err(e) = overlay.transfer(transfer) {
            return LedgerCheck::Transfers(Err(e.into()));
        }
    }
    LedgerCheck::Transfers(Ok(overlay.into_changes()))
}

/// Whether the batch's SQL needs a savepoint: only if it can fail after writing. Each
/// SQL step (the idempotency record, a put) fails, if at all, before it writes; the
/// ledger outcome is already known. So a batch with one SQL step and good ledger
/// transfers (an accepted send, every worker step) writes without one, which saves a
/// copy of every page it touches into the statement journal (~3% of the writer's
/// samples) and two statements.
fn needs_savepoint(batch: &Prepared, ledger: &LedgerCheck) -> bool {
    let steps = usize::from(batch.idempotency.is_some()) + batch.puts.len();
    match ledger {
        LedgerCheck::Accounts(_) => false,
        LedgerCheck::Transfers(Ok(_)) => steps > 1,
        LedgerCheck::Transfers(Err(_)) => steps > 0,
    }
}

fn check_unchanged(
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
fn put_record(conn: &Connection, put: &PreparedPut) -> Result<Result<(), StoreError>, StoreError> {
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
    conn.prepare_cached(
        "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
           lease_owner, lease_until, unique_keys, body) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, NULL, NULL, ?8, ?9) \
         ON CONFLICT (kind, id) DO UPDATE SET tenant = excluded.tenant, \
           version = excluded.version, created_at = excluded.created_at, \
           status = excluded.status, due_at = excluded.due_at, lease_owner = NULL, \
           lease_until = NULL, unique_keys = excluded.unique_keys, body = excluded.body",
    )
    .and_then(|mut s| {
        s.execute(params![
            rec.kind,
            rec.id,
            rec.tenant,
            i64_to_db(version),
            rec.created_at,
            rec.status,
            rec.due_at,
            rec.keys_json,
            rec.body
        ])
    })
    .map_err(backend)?;
    Ok(Ok(()))
}

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
               lease_owner, lease_until, unique_keys, body) \
             VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, NULL, NULL, ?7, ?8)",
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
                rec.body
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

/// Writes the ledger and outbox changes of every kept batch, a prepared statement per
/// row (no SQL text is built per group).
fn flush(conn: &Connection, cache: &mut Cache, writes: &GroupWrites) -> Result<(), StoreError> {
    let missing = |what: &str, id: &str| backend(format!("internal: {what} {id} not cached"));
    if !writes.dirty_accounts.is_empty() {
        let mut stmt = conn
            .prepare_cached(
                "INSERT INTO ledger_accounts (id, allow_negative, debits_posted, \
                   credits_posted, debits_pending, credits_pending) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (id) DO UPDATE SET debits_posted = excluded.debits_posted, \
                   credits_posted = excluded.credits_posted, \
                   debits_pending = excluded.debits_pending, \
                   credits_pending = excluded.credits_pending",
            )
            .map_err(backend)?;
        for id in &writes.dirty_accounts {
            let Some(Some(a)) = cache.known.accounts.get(id) else {
                return Err(missing("account", id));
            };
            let b = a.balance;
            stmt.execute(params![
                id,
                a.allow_negative,
                i64_to_db(b.debits_posted),
                i64_to_db(b.credits_posted),
                i64_to_db(b.debits_pending),
                i64_to_db(b.credits_pending)
            ])
            .map_err(backend)?;
        }
    }
    if !writes.new_transfers.is_empty() {
        let first_seq = cache.next_transfer_seq.unwrap_or(1);
        let mut stmt = conn
            .prepare_cached(
                "INSERT INTO ledger_transfers (id, seq, debit, credit, amount, phase, \
                   pending_id, resolved) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(backend)?;
        for (seq, id) in (first_seq..).zip(&writes.new_transfers) {
            let Some(Some(t)) = cache.known.transfers.get(id) else {
                return Err(missing("transfer", id));
            };
            let (phase, pending_id) = phase_to_db(&t.transfer.phase);
            stmt.execute(params![
                t.transfer.id,
                seq,
                t.transfer.debit,
                t.transfer.credit,
                i64_to_db(t.transfer.amount.0),
                phase,
                pending_id,
                t.resolved
            ])
            .map_err(backend)?;
        }
        let next_seq = first_seq + writes.new_transfers.len() as i64;
        conn.prepare_cached("UPDATE ledger_meta SET value = ?1 WHERE key = 'next_transfer_seq'")
            .and_then(|mut s| s.execute([next_seq]))
            .map_err(backend)?;
        cache.next_transfer_seq = Some(next_seq);
    }
    if !writes.resolved_before.is_empty() {
        let mut stmt = conn
            .prepare_cached("UPDATE ledger_transfers SET resolved = 1 WHERE id = ?1")
            .map_err(backend)?;
        for id in &writes.resolved_before {
            stmt.execute([id]).map_err(backend)?;
        }
    }
    if !writes.outbox.is_empty() {
        let mut stmt = conn
            .prepare_cached(
                "INSERT INTO outbox (seq, id, tenant, event_type, occurred_at, payload) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .map_err(backend)?;
        for (seq, e) in &writes.outbox {
            stmt.execute(params![
                seq,
                e.id,
                e.tenant,
                e.event_type,
                e.occurred_at,
                e.payload
            ])
            .map_err(backend)?;
        }
    }
    Ok(())
}

fn claim_due(conn: &Connection, claim: &Claim) -> Result<Vec<StoredRecord>, StoreError> {
    let mut stmt = conn
        .prepare_cached(concat!(
            "UPDATE records SET lease_owner = ?1, lease_until = ?2 \
             WHERE kind = ?3 AND id IN ( \
               SELECT id FROM records WHERE kind = ?3 AND due_at IS NOT NULL \
                 AND due_at <= ?4 AND (lease_until IS NULL OR lease_until <= ?4) \
               ORDER BY due_at, id LIMIT ?5) RETURNING ",
            super::record_cols!()
        ))
        .map_err(backend)?;
    let rows = stmt
        .query_map(
            params![
                claim.worker,
                claim.until.0,
                claim.kind,
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
    records.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
    Ok(records)
}
