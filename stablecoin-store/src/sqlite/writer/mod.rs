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
//!     accounts + ledger rules: checked in memory over the loaded rows (core's domain::ledger)
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

//!
//! The files: this one (requests, the thread's loop, the group transaction),
//! `prepared.rs` (a batch as the caller hands it over), `group.rs` (what one group does
//! between BEGIN and COMMIT: loading, the ledger check, each batch's SQL, the flush) and
//! `records.rs` (the SQL of puts, version checks and claims).

mod group;
mod prepared;
pub(crate) mod purge;
pub(crate) mod records;

use super::backend;
use super::schedule::Schedule;
use group::group_body;
use rusqlite::Connection;
use stablecoin_core::domain::ledger::Known;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::store::{CommitReceipt, Purge, StoreError, StoredRecord};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};

pub(crate) struct Claim {
    pub kind: String,
    pub lane: u8,
    pub worker: String,
    pub now: Timestamp,
    pub until: Timestamp,
    pub limit: usize,
}
pub(crate) use prepared::Prepared;

pub(crate) enum Request {
    Commit {
        batch: Prepared,
        reply: oneshot::Sender<Result<CommitReceipt, StoreError>>,
    },
    Claim {
        claim: Claim,
        reply: oneshot::Sender<Result<Vec<StoredRecord>, StoreError>>,
    },
    Purge {
        purge: Purge,
        reply: oneshot::Sender<Result<u64, StoreError>>,
    },
    Close(oneshot::Sender<()>),
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Request::Commit { .. } => "Commit",
            Request::Claim { .. } => "Claim",
            Request::Purge { .. } => "Purge",
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
    Purge(Purge),
}

enum Reply {
    Commit(oneshot::Sender<Result<CommitReceipt, StoreError>>),
    Claim(oneshot::Sender<Result<Vec<StoredRecord>, StoreError>>),
    Purge(oneshot::Sender<Result<u64, StoreError>>),
}

enum Output {
    Commit(CommitReceipt),
    Claim(Vec<StoredRecord>),
    Purge(u64),
}

impl Reply {
    fn send(self, result: Result<Output, StoreError>) {
        // A caller that went away (cancelled future) just misses its answer; the
        // outcome is in the database either way.
        match (self, result) {
            (Reply::Commit(tx), Ok(Output::Commit(r))) => drop(tx.send(Ok(r))),
            (Reply::Claim(tx), Ok(Output::Claim(r))) => drop(tx.send(Ok(r))),
            (Reply::Purge(tx), Ok(Output::Purge(n))) => drop(tx.send(Ok(n))),
            (Reply::Commit(tx), Err(e)) => drop(tx.send(Err(e))),
            (Reply::Claim(tx), Err(e)) => drop(tx.send(Err(e))),
            (Reply::Purge(tx), Err(e)) => drop(tx.send(Err(e))),
            (Reply::Commit(tx), Ok(_)) => drop(tx.send(Err(internal_mismatch()))),
            (Reply::Claim(tx), Ok(_)) => drop(tx.send(Err(internal_mismatch()))),
            (Reply::Purge(tx), Ok(_)) => drop(tx.send(Err(internal_mismatch()))),
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
    /// The `committed_at` last given to a transfer (`ledger_meta.ledger_clock`): the
    /// next group stamps no earlier, so stamps never decrease along `seq`.
    ledger_clock: Option<i64>,
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
                // Housekeeping: never ahead of a caller waiting on a commit.
                Request::Purge { purge, reply } => {
                    ((Work::Purge(purge), Reply::Purge(reply)), true)
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
            Request::Purge { reply, .. } => drop(reply.send(Err(closed()))),
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
