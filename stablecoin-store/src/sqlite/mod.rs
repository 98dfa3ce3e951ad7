//! `SqliteStore`: `Store` + `Ledger` on an embedded SQLite database.
//!
//! - WAL journal, `synchronous=FULL` by default ([`Durability::Full`]): a commit is
//!   acknowledged only once the WAL is fsynced. [`Durability::Normal`] trades the last
//!   transactions before a power loss (never consistency) for speed.
//! - One writer thread owns the only write connection. `commit` and `claim_due` queue their
//!   work on a channel; the writer takes everything queued (up to
//!   [`SqliteConfig::max_group`] operations; background work, `Batch::background` and
//!   claims, rides behind interactive commits, [`SqliteConfig::max_background`] per
//!   group, see `schedule.rs`) and runs it in ONE `BEGIN IMMEDIATE` transaction: the
//!   ledger rules are checked in memory on rows loaded (and cached) by the writer, the
//!   SQL-checked parts of a batch (idempotency record, puts) run inside a `SAVEPOINT`
//!   that is rolled back if the batch fails any check (none where it cannot fail after
//!   writing), and the ledger and outbox rows of every kept batch are written in one
//!   flush. One `COMMIT` (one WAL
//!   fsync) for the group, and only then is every caller answered. A batch that fails its
//!   own checks fails alone; a SQL-level failure (I/O, disk full) fails the whole group
//!   with `StoreError::Backend`, and nothing of it is written. See `writer.rs`.
//! - Reads go to a pool of reader connections (WAL lets them run beside the writer).
//! - `:memory:` opens a private database in a temporary directory that is removed with
//!   the store (tests; nothing is durable, `synchronous=OFF`): the same writer, readers
//!   and WAL as a file database, so tests run the code production runs.

mod schedule;
mod writer;

use crate::codec::{dedup_keys, json_from_db, keys_from_db, phase_from_db, sql_count, u64_from_db};
use crate::error::Error;
use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Balance, Ledger, LedgerEntry, LedgerError};
use stablecoin_core::ports::store::{
    Batch, CommitReceipt, IdempotencyRecord, JsonText, ListQuery, OutboxEvent, Store, StoreError,
    StoredRecord,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

pub use writer::WriterStats;

/// The path that selects an in-memory database.
pub const MEMORY_PATH: &str = ":memory:";

/// How hard a commit waits for the disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Durability {
    /// `synchronous=FULL`: the WAL is fsynced before a commit is acknowledged; an
    /// acknowledged commit survives a crash of the process, the OS or the machine.
    /// The default: durability is not optional for money.
    #[default]
    Full,
    /// `synchronous=NORMAL`: the WAL is fsynced only at checkpoints. The database stays
    /// consistent, an acknowledged commit survives a crash of the process, but the last
    /// commits before an OS crash or power loss may be lost. For tests, benchmarks and
    /// data you can rebuild.
    Normal,
}

/// The default of [`SqliteConfig::max_background`] (one source for the server's
/// default too).
pub const DEFAULT_MAX_BACKGROUND: usize = 4;

/// Configuration of a [`SqliteStore`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteConfig {
    /// Database file (created if missing), or [`MEMORY_PATH`] (`":memory:"`).
    pub path: PathBuf,
    pub durability: Durability,
    /// Reader connections for `get`, `list`, `balance`, ... (file databases only). >= 1.
    pub readers: u32,
    /// Most operations (commits and claims) the writer puts in one transaction. >= 1.
    pub max_group: usize,
    /// Most background operations (worker commits and claims) the writer adds to a group
    /// that has interactive commits in it (see `sqlite/schedule.rs`). >= 1. The default,
    /// 4, bounds what a settlement backlog adds to a send's wait to a few row writes;
    /// once the API is quiet, background work fills whole groups.
    pub max_background: usize,
    /// How long the writer waits for another process's write lock before failing.
    pub busy_timeout: Duration,
    /// How often a background thread copies the WAL back into the database file
    /// (`PRAGMA wal_checkpoint(PASSIVE)` on its own connection; `Duration::ZERO`: never,
    /// the writer checkpoints alone at `checkpoint_pages`). A passive checkpoint runs
    /// beside the writer and the readers: the writer no longer stops every few seconds
    /// to write tens of MiB into the database file and fsync it while every caller of
    /// its group waits (those commits were the p99). A page many commits dirty is still
    /// written to the file once per interval, not once per commit.
    pub checkpoint_interval: Duration,
    /// WAL size (in pages, 4 KiB each) at which the writer checkpoints by itself
    /// (`wal_autocheckpoint`): the bound on the WAL if the background checkpoints fall
    /// behind or are off. SQLite's default is 1,000; the default here is 10,000
    /// (~40 MiB of WAL).
    pub checkpoint_pages: u32,
}

impl SqliteConfig {
    /// A database file at `path`, with the defaults: FULL durability, 4 readers, groups
    /// of up to 1,024 operations ([`DEFAULT_MAX_BACKGROUND`] background ones beside
    /// interactive ones), 5 s busy timeout, background checkpoints every 250 ms, the
    /// writer's own at 10,000 WAL pages.
    pub fn file(path: impl AsRef<Path>) -> Self {
        SqliteConfig {
            path: path.as_ref().to_path_buf(),
            durability: Durability::Full,
            readers: 4,
            max_group: 1024,
            max_background: DEFAULT_MAX_BACKGROUND,
            busy_timeout: Duration::from_secs(5),
            checkpoint_interval: Duration::from_millis(250),
            checkpoint_pages: 10_000,
        }
    }

    /// A private in-memory database (for tests): nothing survives the store.
    pub fn in_memory() -> Self {
        Self::file(MEMORY_PATH)
    }

    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    pub fn readers(mut self, readers: u32) -> Self {
        self.readers = readers;
        self
    }

    pub fn max_group(mut self, max_group: usize) -> Self {
        self.max_group = max_group;
        self
    }

    pub fn max_background(mut self, max_background: usize) -> Self {
        self.max_background = max_background;
        self
    }

    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    pub fn checkpoint_interval(mut self, every: Duration) -> Self {
        self.checkpoint_interval = every;
        self
    }

    pub fn checkpoint_pages(mut self, pages: u32) -> Self {
        self.checkpoint_pages = pages;
        self
    }

    pub fn is_memory(&self) -> bool {
        self.path.as_os_str() == MEMORY_PATH
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |reason: &str| {
            Err(Error::Config {
                reason: reason.to_string(),
            })
        };
        if self.path.as_os_str().is_empty() {
            return bad("sqlite path is empty");
        }
        if self.readers == 0 {
            return bad("sqlite readers must be at least 1");
        }
        if self.max_group == 0 {
            return bad("sqlite max_group must be at least 1");
        }
        if self.max_background == 0 {
            return bad("sqlite max_background must be at least 1");
        }
        Ok(())
    }

    /// The file the store opens: the configured path, or a fresh temporary directory's
    /// database for `:memory:` (removed when the returned guard drops).
    fn resolve(&self) -> Result<(PathBuf, Option<TempDb>), Error> {
        if !self.is_memory() {
            return Ok((self.path.clone(), None));
        }
        static MEMORY_DB: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "stablecoin-store-mem-{}-{}",
            std::process::id(),
            MEMORY_DB.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| Error::Config {
            reason: format!(
                "cannot create a temporary directory for :memory: at {}: {e}",
                dir.display()
            ),
        })?;
        Ok((dir.join("store.db"), Some(TempDb(dir))))
    }

    /// The `synchronous` pragma of every connection (one source for sqlx's and rusqlite's).
    fn synchronous(&self) -> &'static str {
        match (self.is_memory(), self.durability) {
            (true, _) => "OFF",
            (false, Durability::Full) => "FULL",
            (false, Durability::Normal) => "NORMAL",
        }
    }

    fn connect_options(&self, file: &Path) -> SqliteConnectOptions {
        SqliteConnectOptions::new()
            .filename(file)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .pragma("synchronous", self.synchronous())
            .foreign_keys(true)
            // 64 MiB page cache per connection (SQLite's default is 2 MiB).
            .pragma("cache_size", "-65536")
            .pragma("wal_autocheckpoint", self.checkpoint_pages.to_string())
            .busy_timeout(self.busy_timeout)
            .statement_cache_capacity(256)
    }

    /// A connection of the writer or the readers: the settings of `connect_options`, on
    /// rusqlite (the same SQLite library as sqlx's).
    fn open_connection(&self, file: &Path) -> Result<rusqlite::Connection, Error> {
        let conn = rusqlite::Connection::open(file).map_err(open_failed)?;
        conn.busy_timeout(self.busy_timeout).map_err(open_failed)?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {}; PRAGMA foreign_keys = ON; \
             PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = {};",
            self.synchronous(),
            self.checkpoint_pages
        ))
        .map_err(open_failed)?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(conn)
    }
}

/// The writer's page cache, in KiB: 8 MiB, where the readers have 64 MiB.
///
/// Why smaller: at the end of every write transaction SQLite drops cached pages past the
/// end of the database (`pcache1Truncate`), and it scans the whole cache's hash table to
/// do so whenever the highest page number it has seen lies more than a table's length
/// beyond that end. A B-tree rebalance that reorders sibling pages parks one of them
/// under the page number of the lock byte (1 GiB), so while the database is below 1 GiB
/// almost every group commit paid that scan: with 64 MiB (16,384 pages) it was ~1.4 ms
/// per commit and 7% of the writer's CPU (perf; counted with a uprobe on
/// `pcache1TruncateUnsafe`). What the writer touches (the right edges of the indexes,
/// the ledger accounts, the records it updates) fits in 8 MiB; a miss is a copy from
/// the OS page cache. Measured side by side: 7.3-7.7k -> 8.3-9.3k sends/s, 191-205 ->
/// 163-180 us of CPU per send.
const WRITER_CACHE_KIB: u32 = 8192;

fn open_failed(e: rusqlite::Error) -> Error {
    Error::Config {
        reason: format!("sqlite: cannot open a connection: {e}"),
    }
}

/// The reader connections, used synchronously by the calling task.
///
/// Why not an async pool: a read here is a point lookup or a short page on an index,
/// which takes SQLite microseconds; handing it to a connection's worker thread and back
/// (sqlx's model) costs two thread wake-ups, and under load those hand-offs were most of
/// a read's cost. WAL readers never wait for the writer, so a read holds the calling
/// thread only for SQLite's own work. A task takes a free connection, or waits for one
/// only when every connection is busy (more concurrent reads than `readers`).
#[derive(Debug)]
struct Readers {
    /// `None` once the store is closed.
    conns: Vec<Mutex<Option<rusqlite::Connection>>>,
    next: AtomicUsize,
}

impl Readers {
    fn with<T>(
        &self,
        read: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> Result<T, String> {
        let n = self.conns.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let guard = (0..n)
            .find_map(|i| self.conns[(start + i) % n].try_lock().ok())
            .unwrap_or_else(|| unpoisoned(&self.conns[start]));
        match guard.as_ref() {
            Some(conn) => read(conn).map_err(|e| format!("sqlite: {e}")),
            None => Err("sqlite store is closed".to_string()),
        }
    }

    /// `read` in one read transaction: everything it selects comes from one snapshot.
    fn snapshot<T>(
        &self,
        read: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> Result<T, String> {
        self.with(|conn| {
            conn.execute_batch("BEGIN")?;
            let result = read(conn);
            let end = conn.execute_batch(if result.is_ok() { "COMMIT" } else { "ROLLBACK" });
            let value = result?;
            end?;
            Ok(value)
        })
    }

    fn close(&self) {
        for conn in &self.conns {
            unpoisoned(conn).take();
        }
    }
}

/// The background checkpoint thread (see [`SqliteConfig::checkpoint_interval`]). It
/// stops when told to, or when the store is dropped (its sender goes with it).
#[derive(Debug)]
struct Checkpointer {
    stop: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Checkpointer {
    fn start(config: &SqliteConfig, file: &Path) -> Result<Self, Error> {
        let none = Checkpointer {
            stop: Mutex::new(None),
            thread: Mutex::new(None),
        };
        let every = config.checkpoint_interval;
        if every.is_zero() {
            return Ok(none);
        }
        let conn = config.open_connection(file)?;
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    // A checkpoint that cannot finish (a reader still needs old frames,
                    // the writer holds the lock for a moment) copies what it can and the
                    // next one goes on from there: nothing to handle.
                    let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                }
            })
            .map_err(|e| Error::Config {
                reason: format!("cannot start the sqlite checkpoint thread: {e}"),
            })?;
        Ok(Checkpointer {
            stop: Mutex::new(Some(stop)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Stops the thread and waits for it (its connection is closed when this returns).
    async fn stop(&self) {
        if let Some(stop) = unpoisoned(&self.stop).take() {
            let _ = stop.send(());
        }
        let thread = unpoisoned(&self.thread).take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// A lock whose holder panicked still guards plain data here: take it.
fn unpoisoned<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The temporary directory of a `:memory:` store, removed on drop.
#[derive(Debug)]
struct TempDb(PathBuf);

impl Drop for TempDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The migrations shipped in `migrations/sqlite/`.
pub(crate) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/sqlite");

/// Applies the shipped migrations to the database `config` names (creating the file if
/// missing). [`SqliteStore::open`] does this too; this is for a `migrate` command.
pub async fn migrate(config: &SqliteConfig) -> Result<(), Error> {
    config.validate()?;
    let (file, _temp) = config.resolve()?;
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(config.connect_options(&file))
        .await?;
    let result = MIGRATOR.run(&pool).await;
    pool.close().await;
    Ok(result?)
}

/// `Store` + `Ledger` on SQLite. Cheap to clone (all clones share one writer).
#[derive(Clone, Debug)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    readers: Readers,
    tx: mpsc::Sender<writer::Request>,
    stats: Arc<writer::Stats>,
    config: SqliteConfig,
    checkpointer: Checkpointer,
    /// Last: dropped after the connections above are gone.
    _temp: Option<TempDb>,
}

impl SqliteStore {
    /// Opens (creating if missing) and migrates the database, and starts the writer task
    /// on the current tokio runtime.
    pub async fn open(config: SqliteConfig) -> Result<Self, Error> {
        config.validate()?;
        let (file, temp) = config.resolve()?;
        let options = config.connect_options(&file);
        let migrator = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await?;
        let migrated = MIGRATOR.run(&migrator).await;
        migrator.close().await;
        migrated?;
        let mut readers = Vec::with_capacity(config.readers as usize);
        for _ in 0..config.readers {
            let conn = config.open_connection(&file)?;
            conn.execute_batch("PRAGMA query_only = ON")
                .map_err(open_failed)?;
            readers.push(Mutex::new(Some(conn)));
        }
        let readers = Readers {
            conns: readers,
            next: AtomicUsize::new(0),
        };
        let conn = config.open_connection(&file)?;
        conn.execute_batch(&format!("PRAGMA cache_size = -{WRITER_CACHE_KIB}"))
            .map_err(open_failed)?;
        let stats = Arc::new(writer::Stats::default());
        let (tx, rx) = mpsc::channel(config.max_group.saturating_mul(4).max(64));
        let (thread_stats, max_group) = (stats.clone(), config.max_group);
        let max_background = config.max_background;
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer::run(conn, rx, thread_stats, max_group, max_background))
            .map_err(|e| Error::Config {
                reason: format!("cannot start the sqlite writer thread: {e}"),
            })?;
        let checkpointer = Checkpointer::start(&config, &file)?;
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                readers,
                tx,
                stats,
                config,
                checkpointer,
                _temp: temp,
            }),
        })
    }

    /// Opens a database file with the default configuration.
    pub async fn open_path(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open(SqliteConfig::file(path)).await
    }

    /// Opens a private in-memory database.
    pub async fn open_in_memory() -> Result<Self, Error> {
        Self::open(SqliteConfig::in_memory()).await
    }

    pub fn config(&self) -> &SqliteConfig {
        &self.inner.config
    }

    /// Group-commit counters of the writer.
    pub fn writer_stats(&self) -> WriterStats {
        self.inner.stats.snapshot()
    }

    /// Stops the writer after the operations already queued and closes every connection.
    /// Later calls on any clone fail with `StoreError::Backend`.
    pub async fn close(&self) {
        let (done, wait) = oneshot::channel();
        if self
            .inner
            .tx
            .send(writer::Request::Close(done))
            .await
            .is_ok()
        {
            let _ = wait.await;
        }
        self.inner.readers.close();
        self.inner.checkpointer.stop().await;
    }

    async fn send<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, StoreError>>) -> writer::Request,
    ) -> Result<T, StoreError> {
        let (reply, wait) = oneshot::channel();
        self.inner
            .tx
            .send(make(reply))
            .await
            .map_err(|_| StoreError::Backend("sqlite store is closed".into()))?;
        wait.await
            .map_err(|_| StoreError::Backend("sqlite writer stopped before answering".into()))?
    }
}

// ---------------------------------------------------------------------------------------
// Row decoding

macro_rules! record_cols {
    () => {
        "kind, id, tenant, version, created_at, status, due_at, unique_keys, body"
    };
}
pub(crate) use record_cols;

pub(crate) fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("sqlite: {e}"))
}

fn ledger_backend(e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Backend(format!("sqlite: {e}"))
}

/// A `records` row selected with `record_cols!()`; the inner `Err` is a corrupt row.
pub(crate) fn record_from_row(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<Result<StoredRecord, String>> {
    let version: i64 = row.get(3)?;
    let keys: String = row.get(7)?;
    let body: String = row.get(8)?;
    let (kind, id, tenant, created_at, status, due_at) = (
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(4)?,
        row.get(5)?,
        row.get::<_, Option<i64>>(6)?,
    );
    Ok((|| {
        Ok(StoredRecord {
            kind,
            id,
            tenant,
            version: u64_from_db(version, "version")?,
            created_at: Timestamp(created_at),
            status,
            due_at: due_at.map(Timestamp),
            unique_keys: keys_from_db(&keys)?,
            body: JsonText::from_stored_text(body),
        })
    })())
}

/// A history row; the inner `Err` is a corrupt row.
fn entry_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<LedgerEntry, String>> {
    let amount: i64 = row.get(3)?;
    let phase: String = row.get(4)?;
    let pending_id: Option<String> = row.get(5)?;
    let (transfer_id, debit, credit) = (row.get(0)?, row.get(1)?, row.get(2)?);
    Ok((|| {
        Ok(LedgerEntry {
            transfer_id,
            debit,
            credit,
            amount: Micros(u64_from_db(amount, "amount")?),
            phase: phase_from_db(&phase, pending_id)?,
        })
    })())
}

/// The four sums of a `ledger_accounts` row, in column order.
pub(crate) fn balance_from_sums(sums: [i64; 4]) -> Result<Balance, String> {
    Ok(Balance {
        debits_posted: u64_from_db(sums[0], "debits_posted")?,
        credits_posted: u64_from_db(sums[1], "credits_posted")?,
        debits_pending: u64_from_db(sums[2], "debits_pending")?,
        credits_pending: u64_from_db(sums[3], "credits_pending")?,
    })
}

// ---------------------------------------------------------------------------------------
// Store

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
                     r.due_at, r.unique_keys, r.body FROM unique_keys u \
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
        let (kind, tenant) = (&query.kind, &query.tenant);
        let (limit, offset) = (sql_count(query.limit), sql_count(query.offset));
        let (rows, total) = self
            .inner
            .readers
            .snapshot(|conn| {
                let collect =
                    |rows: rusqlite::MappedRows<'_, _>| rows.collect::<Result<Vec<_>, _>>();
                Ok(match &query.status {
                    None => (
                        collect(
                            conn.prepare_cached(concat!(
                                "SELECT ",
                                record_cols!(),
                                " FROM records WHERE kind = ?1 AND tenant = ?2 \
                                 ORDER BY created_at DESC, id DESC LIMIT ?3 OFFSET ?4"
                            ))?
                            .query_map(params![kind, tenant, limit, offset], record_from_row)?,
                        )?,
                        conn.prepare_cached(
                            "SELECT COUNT(*) FROM records WHERE kind = ?1 AND tenant = ?2",
                        )?
                        .query_row(params![kind, tenant], |r| r.get::<_, i64>(0))?,
                    ),
                    Some(status) => (
                        collect(
                            conn.prepare_cached(concat!(
                                "SELECT ",
                                record_cols!(),
                                " FROM records WHERE kind = ?1 AND tenant = ?2 \
                                 AND status = ?3 \
                                 ORDER BY created_at DESC, id DESC LIMIT ?4 OFFSET ?5"
                            ))?
                            .query_map(
                                params![kind, tenant, status, limit, offset],
                                record_from_row,
                            )?,
                        )?,
                        conn.prepare_cached(
                            "SELECT COUNT(*) FROM records WHERE kind = ?1 AND tenant = ?2 \
                             AND status = ?3",
                        )?
                        .query_row(params![kind, tenant, status], |r| r.get::<_, i64>(0))?,
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
                conn.prepare_cached(
                    "SELECT seq, id, tenant, event_type, occurred_at, payload FROM outbox \
                     WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                )?
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
}

// ---------------------------------------------------------------------------------------
// Ledger

#[async_trait]
impl Ledger for SqliteStore {
    async fn balance(&self, account: &str) -> Result<Balance, LedgerError> {
        let sums = self
            .inner
            .readers
            .with(|conn| {
                conn.prepare_cached(
                    "SELECT debits_posted, credits_posted, debits_pending, credits_pending \
                     FROM ledger_accounts WHERE id = ?1",
                )?
                .query_row([account], |r| {
                    Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?])
                })
                .optional()
            })
            .map_err(LedgerError::Backend)?;
        match sums {
            Some(sums) => balance_from_sums(sums).map_err(ledger_backend),
            None => Err(LedgerError::UnknownAccount {
                account: account.to_string(),
            }),
        }
    }

    async fn history(
        &self,
        account: &str,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<LedgerEntry>, LedgerError> {
        let rows = self
            .inner
            .readers
            .snapshot(|conn| {
                let exists = conn
                    .prepare_cached("SELECT 1 FROM ledger_accounts WHERE id = ?1")?
                    .query_row([account], |_| Ok(()))
                    .optional()?;
                if exists.is_none() {
                    return Ok(None);
                }
                conn.prepare_cached(
                    "SELECT id, debit, credit, amount, phase, pending_id FROM ( \
                       SELECT seq, id, debit, credit, amount, phase, pending_id \
                         FROM ledger_transfers WHERE debit = ?1 \
                       UNION ALL \
                       SELECT seq, id, debit, credit, amount, phase, pending_id \
                         FROM ledger_transfers WHERE credit = ?1 \
                     ) ORDER BY seq LIMIT ?2 OFFSET ?3",
                )?
                .query_map(
                    params![account, sql_count(limit), sql_count(offset)],
                    entry_from_row,
                )?
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
            })
            .map_err(LedgerError::Backend)?;
        match rows {
            None => Err(LedgerError::UnknownAccount {
                account: account.to_string(),
            }),
            Some(rows) => rows
                .into_iter()
                .map(|r| r.map_err(ledger_backend))
                .collect(),
        }
    }

    async fn posted_sum(&self) -> Result<i128, LedgerError> {
        self.inner
            .readers
            .with(|conn| {
                // SQLite's SUM fails with "integer overflow" rather than wrap; then sum in
                // i128.
                let fast = conn
                    .prepare_cached(
                        "SELECT COALESCE(SUM(credits_posted - debits_posted), 0) \
                         FROM ledger_accounts",
                    )?
                    .query_row([], |r| r.get::<_, i64>(0));
                if let Ok(sum) = fast {
                    return Ok(i128::from(sum));
                }
                conn.prepare_cached("SELECT credits_posted - debits_posted FROM ledger_accounts")?
                    .query_map([], |r| r.get::<_, i64>(0))?
                    .try_fold(0i128, |sum, v| Ok(sum + i128::from(v?)))
            })
            .map_err(LedgerError::Backend)
    }
}

/// Keys a put keeps, as `MemoryStore` keeps them.
pub(crate) fn record_keys(record: &StoredRecord) -> Vec<String> {
    dedup_keys(&record.unique_keys)
}
