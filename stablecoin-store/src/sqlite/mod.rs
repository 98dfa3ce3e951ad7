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
//!   with `StoreError::Backend`, and nothing of it is written. See `writer/`.
//! - Reads go to a pool of reader connections (WAL lets them run beside the writer).
//! - `:memory:` opens a private database in a temporary directory that is removed with
//!   the store (tests; nothing is durable, `synchronous=OFF`): the same writer, readers
//!   and WAL as a file database, so tests run the code production runs.

//!
//! The files: `config.rs` (what a store is opened with), `readers.rs` (the reader
//! connections), `checkpoint.rs` (the background WAL checkpoints), `writer/` (the group
//! committing writer thread), `schedule.rs` (which queued work a group takes),
//! `rows.rs` (row decoding), `store.rs` and `ledger.rs` (the two traits' read paths).

mod body;
mod checkpoint;
mod config;
mod ledger;
mod readers;
#[cfg(test)]
mod reprepare_tests;
mod rows;
mod schedule;
mod store;
mod writer;

use crate::error::Error;
use checkpoint::Checkpointer;
use config::{TempDb, WRITER_CACHE_KIB, open_failed};
use readers::Readers;
use sqlx::sqlite::SqlitePoolOptions;
use stablecoin_core::ports::store::StoreError;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use tokio::sync::{mpsc, oneshot};

pub use config::{DEFAULT_MAX_BACKGROUND, Durability, MEMORY_PATH, SqliteConfig};
pub(crate) use rows::{backend, balance_from_sums, record_cols, record_from_row, record_keys};
pub use writer::WriterStats;

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
        let readers = Readers::new(readers);
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

    /// The configuration this store was opened with.
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
