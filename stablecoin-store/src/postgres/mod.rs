//! `PgStore`: `Store` + `Ledger` on PostgreSQL, safe with several engine processes on one
//! database.
//!
//! A commit is one READ COMMITTED transaction, in the order `Store::commit` documents:
//!
//! 1. The ledger rows (`ledger_rows.rs`): the transfers the batch names, locked in id
//!    order (a pending transfer is posted or voided once); the accounts it names, read
//!    as row + deltas; and only the accounts whose balance the rules must check (a
//!    `Single` or `Pending` debit of an account without `allow_negative`) locked `FOR NO
//!    KEY UPDATE` in id order, their deltas folded into their rows (this lock is taken
//!    after the idempotency record and the puts of step 2, so that a sender's account,
//!    debited by each of its sends, is held for the ledger writes and COMMIT only). The
//!    ledger rules run
//!    in memory on those rows (`stablecoin_core::domain::ledger`, the one implementation
//!    SQLite and `MemoryStore` run too): concurrent debits of one account queue on its
//!    row lock and each sees the balance the previous one left, so a refusal is always
//!    `InsufficientFunds`, never a serialization error. Credits and postings append
//!    signed deltas to `ledger_deltas` and hold no account row, so no hot account (the
//!    service fee account, a treasury, a recipient) is held across a durable commit.
//! 2. Accounts, idempotency record (`ON CONFLICT DO NOTHING`), puts, ledger writes. The
//!    puts are statements over arrays (`UNNEST`), not a statement per put (`puts.rs`):
//!    one `INSERT ... ON CONFLICT DO NOTHING RETURNING` of the new records, one
//!    `UPDATE ... FROM UNNEST(..) WHERE version = expected RETURNING` of the others, and
//!    one DELETE, one INSERT and one SELECT of their unique keys; the outcome and the
//!    error are those of writing the puts one by one in the batch's order.
//! 3. Outbox last: `UPDATE outbox_counter ... RETURNING last_seq` takes the counter row's
//!    lock and holds it until COMMIT. Sequence numbers are therefore handed out in commit
//!    order and become visible in order: a reader paging with `outbox_after` never sees
//!    seq n+1 while seq n is still invisible (and so never skips it).
//!
//! So a commit is a bounded number of round trips whatever its size: BEGIN, one
//! statement for all `unchanged` checks (`FOR SHARE`), three for the ledger rows, one for
//! the idempotency record, at most five for the puts, at most five for the ledger writes,
//! two for the outbox, COMMIT; each only when the batch has something for it (a batch
//! that puts one record twice writes its puts one at a time: five statements a put).
//!
//! A deadlock (between record updates of two batches), a serialization failure, or a
//! unique violation from a race on a new id (account, transfer) rolls the transaction back
//! and the store runs the batch again, up to `PgConfig::max_retries` times: callers see
//! the typed outcome, not the race.
//!
//! `claim_due` is one `UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED)`: two workers
//! (in one process or many) never hold one record.

//! The files: `config.rs` (what a store connects with), `failover.rs` (several hosts,
//! following the writable one), `commit.rs` (one commit's
//! transaction), `ledger_rows.rs` (its ledger rows, and the deltas' compaction),
//! `puts.rs` (its puts), `rows.rs` (row decoding), `store.rs` and `ledger.rs` (the two
//! traits).

mod commit;
mod config;
mod failover;
mod ledger;
mod ledger_rows;
mod puts;
mod rows;
mod store;

use crate::error::Error;
use commit::commit_in;
use sqlx::postgres::{PgPool, PgPoolOptions};
use stablecoin_core::ports::ledger::LedgerError;
use stablecoin_core::ports::store::{Batch, CommitReceipt, StoreError};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use config::PgConfig;

/// The migrations shipped in `migrations/postgres/`.
pub(crate) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// Applies the shipped migrations (in `config.schema` if set). [`PgStore::connect`] does
/// this too; this is for a `migrate` command. Safe to run from several processes at once
/// (sqlx takes an advisory lock).
pub async fn migrate(config: &PgConfig) -> Result<(), Error> {
    let options = config.options().await?;
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(config.acquire_timeout)
        .connect_with(options)
        .await?;
    let result = MIGRATOR.run(&pool).await;
    pool.close().await;
    Ok(result?)
}

/// `Store` + `Ledger` on PostgreSQL. Cheap to clone (clones share the pool).
#[derive(Clone, Debug)]
pub struct PgStore {
    pool: PgPool,
    max_retries: u32,
    /// Commits that appended ledger deltas, shared by clones: every
    /// `ledger_rows::COMPACT_EVERY`th runs a compaction.
    delta_commits: Arc<AtomicU64>,
}

/// Why one attempt at a commit ended without committing.
enum Attempt {
    /// The batch's own outcome (a typed error, or a backend failure not worth retrying).
    Done(StoreError),
    /// Lost a race with another transaction: run the batch again.
    Retry(String),
}

impl From<StoreError> for Attempt {
    fn from(e: StoreError) -> Self {
        Attempt::Done(e)
    }
}

impl From<LedgerError> for Attempt {
    fn from(e: LedgerError) -> Self {
        Attempt::Done(e.into())
    }
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("postgres: {e}"))
}

fn ledger_backend(e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Backend(format!("postgres: {e}"))
}

/// serialization_failure, deadlock_detected, unique_violation (a race on a new id).
fn classify(e: sqlx::Error) -> Attempt {
    if let Some(db) = e.as_database_error()
        && let Some(code) = db.code()
        && matches!(code.as_ref(), "40001" | "40P01" | "23505")
    {
        return Attempt::Retry(format!("{code}: {}", db.message()));
    }
    Attempt::Done(backend(e))
}

impl PgStore {
    /// Connects, creates the schema if one is configured, and applies the migrations.
    pub async fn connect(config: PgConfig) -> Result<Self, Error> {
        let options = config.options().await?;
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(config.acquire_timeout)
            .connect_with(options)
            .await?;
        MIGRATOR.run(&pool).await?;
        // Several hosts: keep the pool on the writable one (failover.rs).
        failover::follow(&pool, &config);
        Ok(PgStore {
            pool,
            max_retries: config.max_retries,
            delta_commits: Arc::default(),
        })
    }

    /// Connects with the default configuration.
    pub async fn connect_url(url: &str) -> Result<Self, Error> {
        Self::connect(PgConfig::new(url)).await
    }

    /// The connection pool (for health checks and the like).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes the pool, waiting for the connections in use to come back; later calls on
    /// any clone fail with `StoreError::Backend`.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Counts a commit that appended ledger deltas, and every
    /// `ledger_rows::COMPACT_EVERY`th folds them (see `ledger_rows`). A failed compaction
    /// loses nothing (the deltas stay, summed on every read) and is not the commit's
    /// error (it committed): the next turn tries again.
    async fn after_deltas(&self) {
        let n = self.delta_commits.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(ledger_rows::COMPACT_EVERY) {
            let _ = ledger_rows::compact(&self.pool).await;
        }
    }

    /// Folds every ledger delta no other transaction holds into its account row now
    /// (the store does this by itself every `COMPACT_EVERY` commits that append
    /// deltas); answers how many account rows took deltas. For tests and operators'
    /// maintenance; balances read the same before and after.
    pub async fn compact_ledger(&self) -> Result<u64, Error> {
        Ok(ledger_rows::compact(&self.pool).await?)
    }

    async fn try_commit(&self, batch: &Batch) -> Result<CommitReceipt, Attempt> {
        let mut tx = self.pool.begin().await.map_err(classify)?;
        match commit_in(&mut tx, batch).await {
            Ok((receipt, deltas)) => {
                tx.commit().await.map_err(classify)?;
                if deltas {
                    self.after_deltas().await;
                }
                Ok(receipt)
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }
}
