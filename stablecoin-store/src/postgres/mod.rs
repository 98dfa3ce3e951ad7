//! `PgStore`: `Store` + `Ledger` on PostgreSQL, safe with several engine processes on one
//! database.
//!
//! A commit is one READ COMMITTED transaction, in the order `Store::commit` documents:
//!
//! 1. The ledger rows (`ledger_rows.rs`): the transfers the batch names (a pending
//!    transfer is marked resolved only if it still is not: posted or voided once); the
//!    accounts it names, read
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
//! statement for all `unchanged` checks (`FOR SHARE`), two for the ledger rows (the
//! transfers and accounts read in one, the pending transfers it resolves marked in the
//! other), one for the idempotency record, at most five for the puts, one to lock the
//! checked accounts, at most four for the ledger writes, two for the outbox, COMMIT (at
//! most 19); each only
//! when the batch has something for it (a batch that puts one record twice writes its
//! puts one at a time: five statements a put).
//!
//! A deadlock (between record updates of two batches), a serialization failure, or a
//! unique violation from a race on a new id (account, transfer) rolls the transaction back
//! and the store runs the batch again, up to `PgConfig::max_retries` times: callers see
//! the typed outcome, not the race.
//!
//! Concurrent interactive commits are grouped (`group.rs`): the batches waiting are
//! merged into one batch and committed in one such transaction, and committed one by one
//! if it fails, so each caller sees the outcome it would have had alone.
//!
//! `claim_due` is one `UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED)`: two workers
//! (in one process or many) never hold one record.

//! The files: `config.rs` (what a store connects with), `failover.rs` (several hosts,
//! following the writable one), `group.rs` (group commit), `commit.rs` (one commit's
//! transaction), `ledger_rows.rs` (its ledger rows, and the deltas' compaction),
//! `puts.rs` (its puts), `rows.rs` (row decoding), `store.rs` and `ledger.rs` (the two
//! traits), `rate_limits.rs` (the server's shared rate-limit state).

mod commit;
mod config;
mod failover;
mod group;
mod ledger;
mod ledger_rows;
mod puts;
mod rate_limits;
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
pub use group::GroupStats;
pub use rate_limits::RateLimitStep;

/// The migrations shipped in `migrations/postgres/`.
pub(crate) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("migrations/postgres");

/// Applies the shipped migrations (in `config.schema` if set). [`PgStore::connect`] does
/// this too; this is for a `migrate` command. Safe to run from several processes at once
/// (sqlx takes an advisory lock).
pub async fn migrate(config: &PgConfig) -> Result<(), Error> {
    let (options, pooler) = config.options().await?;
    if pooler {
        return Err(Error::Config {
            reason: "migrations run over a direct connection, not through a transaction \
                     pooler (pooler=transaction): use the database's own address"
                .into(),
        });
    }
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
    /// Connected through a transaction pooler (`PgConfig::transaction_pooler`): a
    /// statement that writes outside a commit (a claim, a purge, a rate-limit step) runs
    /// in a transaction of its own, committed before it returns, since the pool's
    /// wrapping transaction commits only once the connection is back in the pool.
    pooler: bool,
    /// Group commit's queue (`group.rs`); `None` when it is off, and in the writers'
    /// own handle.
    group: Option<Arc<group::Queue>>,
}

/// See [`PgStore::write_conn`].
pub(crate) enum WriteConn {
    /// Autocommit: the statement's write is committed when it returns.
    Direct(sqlx::pool::PoolConnection<sqlx::Postgres>),
    /// Through a transaction pooler: committed by [`WriteConn::done`].
    Tx(sqlx::Transaction<'static, sqlx::Postgres>),
}

impl WriteConn {
    /// The connection to run the statement on.
    pub(crate) fn conn(&mut self) -> &mut sqlx::PgConnection {
        match self {
            WriteConn::Direct(c) => c,
            WriteConn::Tx(t) => t,
        }
    }

    /// Commits the statement's write (a no-op in autocommit).
    pub(crate) async fn done(self) -> Result<(), sqlx::Error> {
        match self {
            WriteConn::Direct(_) => Ok(()),
            WriteConn::Tx(t) => t.commit().await,
        }
    }
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

/// A pool whose every connection is inside a transaction from the moment a caller gets
/// it until it comes back, with the schema set for that transaction. Through a pooler in
/// transaction mode this keeps the caller on one server connection for its statements,
/// each of which sqlx sends as a parse and then a bind in two round trips; outside a
/// transaction the pooler could hand the second to another server connection. A
/// caller's own transaction (`pool.begin()`, every commit) runs inside it: its `BEGIN` is
/// a no-op, and its `COMMIT` or `ROLLBACK` ends the transaction, as it would alone.
///
/// sqlx names every statement it prepares (`sqlx_s_<n>`, counted per client
/// connection) even with its statement cache off, and never closes one it does not
/// cache: the server connection the pooler hands out next may still hold another
/// client's `sqlx_s_1`. So each acquire first clears the server connection it got
/// (`DEALLOCATE ALL` in a transaction of its own, in the same message, so on the same
/// server connection), then begins the caller's transaction. Both strings are one
/// simple-query message each, and neither leaves anything on the server session:
///
/// - acquire: `BEGIN; DEALLOCATE ALL; COMMIT; BEGIN; SET LOCAL ...` (the transaction's
///   own settings: the schema, and `client_min_messages = error`, which keeps
///   PostgreSQL's "already in a transaction" warning on the caller's `BEGIN` out of the
///   logs);
/// - release: `SET LOCAL client_min_messages = error; COMMIT`, which commits what is
///   open, and is silent when the caller's own `COMMIT` already ended it.
fn pooled_in_transactions(pool: PgPoolOptions, schema: Option<String>) -> PgPoolOptions {
    let mut begin = String::from(
        "BEGIN; DEALLOCATE ALL; COMMIT; BEGIN; SET LOCAL client_min_messages TO error",
    );
    if let Some(schema) = &schema {
        // Validated by `PgConfig` (a plain lowercase identifier), safe to splice.
        begin.push_str(&format!("; SET LOCAL search_path TO {schema}"));
    }
    let begin: std::sync::Arc<str> = begin.into();
    let on_connect = begin.clone();
    pool.after_connect(move |conn, _| {
        let begin = on_connect.clone();
        Box::pin(async move {
            sqlx::raw_sql(sqlx::AssertSqlSafe(begin.to_string()))
                .execute(conn)
                .await
                .map(|_| ())
        })
    })
    .before_acquire(move |conn, _| {
        let begin = begin.clone();
        Box::pin(async move {
            sqlx::raw_sql(sqlx::AssertSqlSafe(begin.to_string()))
                .execute(conn)
                .await
                .map(|_| true)
        })
    })
    .after_release(|conn, _| {
        Box::pin(async move {
            sqlx::raw_sql("SET LOCAL client_min_messages TO error; COMMIT")
                .execute(conn)
                .await
                .map(|_| true)
        })
    })
}

/// The first shipped migration the database has not applied (or applied with other
/// contents), if any.
async fn pending_migration(pool: &PgPool) -> Result<Option<i64>, Error> {
    let exists: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await?;
    let applied: Vec<(i64, Vec<u8>)> = if exists {
        sqlx::query_as("SELECT version, checksum FROM _sqlx_migrations WHERE success")
            .fetch_all(pool)
            .await?
    } else {
        Vec::new()
    };
    Ok(MIGRATOR
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .find(|m| {
            !applied
                .iter()
                .any(|(v, sum)| *v == m.version && sum.as_slice() == &*m.checksum)
        })
        .map(|m| m.version))
}

impl PgStore {
    /// Connects, creates the schema if one is configured, and applies the migrations.
    pub async fn connect(config: PgConfig) -> Result<Self, Error> {
        let (options, pooler) = config.options().await?;
        let mut pool = PgPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(config.acquire_timeout);
        if pooler {
            pool = pooled_in_transactions(pool, config.schema.clone());
        }
        let pool = pool.connect_with(options).await?;
        if pooler {
            // Never through the pooler (see `PgConfig::transaction_pooler`).
            if let Some(pending) = pending_migration(&pool).await? {
                pool.close().await;
                return Err(Error::Config {
                    reason: format!(
                        "the schema needs migration {pending}, and this URL goes through a \
                         transaction pooler: migrate over a direct connection first \
                         (`stablecoin-server migrate` with the database's own address)"
                    ),
                });
            }
        } else {
            MIGRATOR.run(&pool).await?;
        }
        // Several hosts: keep the pool on the writable one (failover.rs).
        failover::follow(&pool, &config);
        let mut store = PgStore {
            pool,
            max_retries: config.max_retries,
            delta_commits: Arc::default(),
            pooler,
            group: None,
        };
        // One connection stays for reads and background commits.
        let writers = config.group_writers.min(config.max_connections - 1);
        let size = config.group_size()?;
        if size > 1 && writers > 0 {
            store.group = Some(group::Queue::start(
                store.clone(),
                writers as usize,
                size as usize,
            ));
        }
        Ok(store)
    }

    /// What group commit has done so far (all zero when it is off).
    pub fn group_commit_stats(&self) -> GroupStats {
        self.group.as_ref().map(|g| g.stats()).unwrap_or_default()
    }

    /// Connects with the default configuration.
    pub async fn connect_url(url: &str) -> Result<Self, Error> {
        Self::connect(PgConfig::new(url)).await
    }

    /// A connection for one statement that writes outside a commit (a claim, a purge,
    /// a rate-limit step), whose write is committed by [`WriteConn::done`]: in
    /// autocommit on a direct connection, in a transaction of its own through a
    /// transaction pooler (see `PgStore::pooler`).
    pub(crate) async fn write_conn(&self) -> Result<WriteConn, sqlx::Error> {
        Ok(if self.pooler {
            WriteConn::Tx(self.pool.begin().await?)
        } else {
            WriteConn::Direct(self.pool.acquire().await?)
        })
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

    /// A commit: an interactive one through group commit when it is on, any other
    /// alone.
    async fn commit_batch(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        match &self.group {
            Some(group) if !batch.background => match group.commit(batch).await {
                Ok(outcome) => outcome,
                Err(batch) => self.commit_alone(&batch).await,
            },
            _ => self.commit_alone(&batch).await,
        }
    }

    /// One batch in a transaction of its own, run again after each lost race (up to
    /// `max_retries`).
    async fn commit_alone(&self, batch: &Batch) -> Result<CommitReceipt, StoreError> {
        let mut attempt: u32 = 0;
        loop {
            match self.try_commit(&[batch]).await {
                Ok(mut receipts) => return Ok(receipts.pop().unwrap_or_default()),
                Err(group::Failed::AtCommit(e)) => return Err(e),
                Err(group::Failed::Before(Attempt::Done(e))) => return Err(e),
                Err(group::Failed::Before(Attempt::Retry(reason))) => {
                    attempt += 1;
                    if attempt > self.max_retries {
                        return Err(StoreError::Backend(format!(
                            "postgres: commit lost {attempt} races in a row, last: {reason}"
                        )));
                    }
                    // Back off a little, with jitter, so racing commits spread out.
                    let jitter = u64::from(
                        std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .map(|d| d.subsec_micros())
                            .unwrap_or(0)
                            % 1_000,
                    );
                    let base = 500u64 << attempt.min(6);
                    tokio::time::sleep(std::time::Duration::from_micros(base + jitter)).await;
                }
            }
        }
    }

    /// One transaction of one batch, or of a group's batches merged (`group.rs`); a
    /// receipt for each.
    async fn try_commit(&self, batches: &[&Batch]) -> Result<Vec<CommitReceipt>, group::Failed> {
        let before = |e: Attempt| group::Failed::Before(e);
        let mut tx = self.pool.begin().await.map_err(|e| before(classify(e)))?;
        let outcome = match batches {
            [one] => {
                let idempotency: Vec<_> = one.idempotency.iter().collect();
                commit_in(&mut tx, one, &idempotency)
                    .await
                    .map(|(r, d)| (vec![r], d))
            }
            _ => {
                let (merged, idempotency, counts) = group::merge(batches);
                commit_in(&mut tx, &merged, &idempotency)
                    .await
                    .map(|(r, d)| (group::split(r, &counts), d))
            }
        };
        match outcome {
            Ok((receipts, deltas)) => {
                // The server's error answer to COMMIT means it rolled back; any other
                // failure (the connection lost) leaves the outcome unknown.
                tx.commit().await.map_err(|e| {
                    if e.as_database_error().is_some() {
                        before(classify(e))
                    } else {
                        group::Failed::AtCommit(backend(e))
                    }
                })?;
                if deltas {
                    self.after_deltas().await;
                }
                Ok(receipts)
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(before(e))
            }
        }
    }
}
