//! What a [`super::SqliteStore`] is opened with, and the connection settings every
//! connection of it shares (one source for sqlx's migrator and rusqlite's connections).

use crate::error::Error;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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

/// Configuration of a [`SqliteStore`](super::SqliteStore).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqliteConfig {
    /// Database file (created if missing), or [`MEMORY_PATH`] (`":memory:"`).
    pub path: PathBuf,
    /// What an acknowledged commit survives; ignored for [`MEMORY_PATH`] (nothing
    /// survives it).
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

    /// Sets what an acknowledged commit survives (default [`Durability::Full`]).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Sets the number of reader connections; must be at least 1 (checked at open).
    pub fn readers(mut self, readers: u32) -> Self {
        self.readers = readers;
        self
    }

    /// Sets the most operations per writer transaction; must be at least 1.
    pub fn max_group(mut self, max_group: usize) -> Self {
        self.max_group = max_group;
        self
    }

    /// Sets the most background operations beside interactive ones in one group; must
    /// be at least 1.
    pub fn max_background(mut self, max_background: usize) -> Self {
        self.max_background = max_background;
        self
    }

    /// Sets how long the writer waits for another process's write lock.
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// Sets the background checkpoint period (`Duration::ZERO`: no background thread).
    pub fn checkpoint_interval(mut self, every: Duration) -> Self {
        self.checkpoint_interval = every;
        self
    }

    /// Sets the WAL size, in 4 KiB pages, at which the writer checkpoints by itself.
    pub fn checkpoint_pages(mut self, pages: u32) -> Self {
        self.checkpoint_pages = pages;
        self
    }

    /// True for a [`MEMORY_PATH`] configuration: a private database removed with the
    /// store.
    pub fn is_memory(&self) -> bool {
        self.path.as_os_str() == MEMORY_PATH
    }

    pub(super) fn validate(&self) -> Result<(), Error> {
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
    pub(super) fn resolve(&self) -> Result<(PathBuf, Option<TempDb>), Error> {
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

    pub(super) fn connect_options(&self, file: &Path) -> SqliteConnectOptions {
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
    /// rusqlite (the same SQLite library as sqlx's), plus the query planner stability
    /// guarantee (QPSG, `SQLITE_DBCONFIG_ENABLE_QPSG`).
    ///
    /// Why the QPSG: without it SQLite plans a statement with the values bound to some
    /// of its parameters, and marks those parameters so that binding them again expires
    /// the statement: the next step re-prepares it (parses and plans the SQL again).
    /// The bundled SQLite (3.51) does that for every `LIMIT ?` (`computeLimitRegisters`
    /// reads the bound limit through `sqlite3ExprIsInteger`, which calls
    /// `sqlite3VdbeSetVarmask`), and rusqlite binds every parameter at every execution,
    /// so every page, keyset page, claim, purge, outbox read and ledger history was
    /// re-prepared at EVERY run, cache or not: `sqlite3Reprepare` was ~9% of the
    /// server's CPU under the send path's policy list (perf, 2026-11-29, issue 47;
    /// `sqlite::reprepare_tests` count it). The same mechanism would apply to
    /// STAT4 probes once an `ANALYZE` writes `sqlite_stat4` (the bundled build has
    /// STAT4), a `LIKE ?` and partial-index matches against bound values: the QPSG
    /// turns all of them off, and each statement keeps the one plan it was prepared
    /// with.
    ///
    /// What it costs: the planner no longer sees the limit's value, which is the plan
    /// `EXPLAIN QUERY PLAN` with NULL parameters shows and the plan tests
    /// (`list_queries_are_index_ranges`, ...) check: one index range, no sort.
    /// Rejected: `LIMIT +?` or a limit wrapped in an expression (relies on what the
    /// planner happens not to look through, undocumented); the limit as a literal (a
    /// statement per page size in a 64-entry cache); `SQLITE_PREPARE_PERSISTENT` (a
    /// memory-allocation hint, it does not stop expiry).
    pub(super) fn open_connection(&self, file: &Path) -> Result<rusqlite::Connection, Error> {
        let conn = rusqlite::Connection::open(file).map_err(open_failed)?;
        conn.busy_timeout(self.busy_timeout).map_err(open_failed)?;
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {}; PRAGMA foreign_keys = ON; \
             PRAGMA cache_size = -65536; PRAGMA wal_autocheckpoint = {};",
            self.synchronous(),
            self.checkpoint_pages
        ))
        .map_err(open_failed)?;
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )
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
pub(super) const WRITER_CACHE_KIB: u32 = 8192;

pub(super) fn open_failed(e: rusqlite::Error) -> Error {
    Error::Config {
        reason: format!("sqlite: cannot open a connection: {e}"),
    }
}

/// The temporary directory of a `:memory:` store, removed on drop.
#[derive(Debug)]
pub(super) struct TempDb(PathBuf);

impl Drop for TempDb {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
