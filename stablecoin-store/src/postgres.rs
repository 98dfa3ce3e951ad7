//! `PgStore`: `Store` + `Ledger` on PostgreSQL, safe with several engine processes on one
//! database.
//!
//! A commit is one READ COMMITTED transaction, in the order `Store::commit` documents:
//!
//! 1. `SELECT ... FROM ledger_accounts WHERE id = ANY(..) ORDER BY id COLLATE "C" FOR
//!    UPDATE` locks every account the batch names, always in the same order (no two
//!    commits deadlock on accounts), then loads the transfers it names (own and pending
//!    ids). The ledger rules run in memory on those locked rows (`crate::ledger`, the same
//!    code as SQLite, mirroring `MemoryStore`): concurrent debits of one account queue on
//!    its row lock and each sees the balance the previous one left, so a refusal is always
//!    `InsufficientFunds`, never a serialization error.
//! 2. Accounts, idempotency record (`ON CONFLICT DO NOTHING`), puts (insert `ON CONFLICT
//!    DO NOTHING` / `UPDATE ... WHERE version = expected`, unique keys), ledger writes.
//! 3. Outbox last: `UPDATE outbox_counter ... RETURNING last_seq` takes the counter row's
//!    lock and holds it until COMMIT. Sequence numbers are therefore handed out in commit
//!    order and become visible in order: a reader paging with `outbox_after` never sees
//!    seq n+1 while seq n is still invisible (and so never skips it).
//!
//! A deadlock (between record updates of two batches), a serialization failure, or a
//! unique violation from a race on a new id (account, transfer) rolls the transaction back
//! and the store runs the batch again, up to `PgConfig::max_retries` times: callers see
//! the typed outcome, not the race.
//!
//! `claim_due` is one `UPDATE ... FROM (SELECT ... FOR UPDATE SKIP LOCKED)`: two workers
//! (in one process or many) never hold one record.

use crate::codec::{
    dedup_keys, i64_to_db, json_from_db, keys_from_db, keys_to_db, phase_from_db, phase_to_db,
    sql_count, u64_from_db,
};
use crate::error::Error;
use crate::ledger::{AccountState, Known, Overlay, TransferState, needed_ids, sort_dedup};
use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::{Connection as _, Row};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Balance, Ledger, LedgerEntry, LedgerError, LedgerTransfer};
use stablecoin_core::ports::store::{
    Batch, CommitReceipt, IdempotencyRecord, JsonText, ListQuery, OutboxEvent, Put, Store,
    StoreError, StoredRecord,
};
use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

/// Configuration of a [`PgStore`].
#[derive(Clone, PartialEq, Eq)]
pub struct PgConfig {
    /// `postgres://user:password@host:port/database`.
    pub url: String,
    /// A schema to keep the store's tables in (created if missing; the connections'
    /// `search_path`). `None`: the database's default (usually `public`).
    pub schema: Option<String>,
    /// Pool size of this store (each in-flight commit holds one connection).
    pub max_connections: u32,
    /// How often a commit that lost a race (deadlock, serialization failure, concurrent
    /// insert of the same new id) is run again before it fails with `Backend`.
    pub max_retries: u32,
    pub acquire_timeout: Duration,
}

impl std::fmt::Debug for PgConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConfig")
            .field("url", &crate::redact_url(&self.url))
            .field("schema", &self.schema)
            .field("max_connections", &self.max_connections)
            .field("max_retries", &self.max_retries)
            .field("acquire_timeout", &self.acquire_timeout)
            .finish()
    }
}

impl PgConfig {
    /// Defaults: public schema, 16 connections, 32 retries, 30 s acquire timeout.
    pub fn new(url: impl Into<String>) -> Self {
        PgConfig {
            url: url.into(),
            schema: None,
            max_connections: 16,
            max_retries: 32,
            acquire_timeout: Duration::from_secs(30),
        }
    }

    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = Some(schema.into());
        self
    }

    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = n;
        self
    }

    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |reason: String| Err(Error::Config { reason });
        if self.max_connections == 0 {
            return bad("postgres max_connections must be at least 1".into());
        }
        if let Some(schema) = &self.schema {
            let ok = !schema.is_empty()
                && schema.len() <= 63
                && schema
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
                && schema
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !ok {
                return bad(format!(
                    "postgres schema {schema:?} must match [a-z_][a-z0-9_]{{0,62}}"
                ));
            }
        }
        Ok(())
    }

    /// Connection options with the schema as search_path (creating the schema).
    async fn options(&self) -> Result<PgConnectOptions, Error> {
        self.validate()?;
        let options = PgConnectOptions::from_str(&self.url).map_err(|e| Error::Config {
            reason: format!("bad postgres URL {}: {e}", crate::redact_url(&self.url)),
        })?;
        let Some(schema) = &self.schema else {
            return Ok(options);
        };
        let mut conn = PgConnection::connect_with(&options).await?;
        // Validated above: a plain lowercase identifier, safe to splice.
        let created = sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE SCHEMA IF NOT EXISTS {schema}"
        )))
        .execute(&mut conn)
        .await;
        if let Err(e) = created {
            // Two processes creating it at once: one loses on the catalog's unique index.
            let exists: bool =
                sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
                    .bind(schema.clone())
                    .fetch_one(&mut conn)
                    .await?;
            if !exists {
                return Err(e.into());
            }
        }
        let _ = conn.close().await;
        Ok(options.options([("search_path", schema.as_str())]))
    }
}

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
        Ok(PgStore {
            pool,
            max_retries: config.max_retries,
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

    pub async fn close(&self) {
        self.pool.close().await;
    }

    async fn try_commit(&self, batch: &Batch) -> Result<CommitReceipt, Attempt> {
        let mut tx = self.pool.begin().await.map_err(classify)?;
        match commit_in(&mut tx, batch).await {
            Ok(receipt) => {
                tx.commit().await.map_err(classify)?;
                Ok(receipt)
            }
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Commit

async fn commit_in(conn: &mut PgConnection, batch: &Batch) -> Result<CommitReceipt, Attempt> {
    // 0. The records the batch relied on: still at their version, and share-locked so a
    // concurrent update waits for this commit (READ COMMITTED would not keep them still).
    for check in &batch.unchanged {
        let version: Option<i64> =
            sqlx::query_scalar("SELECT version FROM records WHERE kind = $1 AND id = $2 FOR SHARE")
                .bind(&check.kind)
                .bind(&check.id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(classify)?;
        check
            .verify(version.and_then(|v| u64::try_from(v).ok()))
            .map_err(Attempt::Done)?;
    }
    // 1. Lock the accounts, load the transfers.
    let mut account_ids = Vec::new();
    let mut transfer_ids = Vec::new();
    needed_ids(
        &batch.accounts,
        &batch.ledger,
        &mut account_ids,
        &mut transfer_ids,
    );
    sort_dedup(&mut account_ids);
    sort_dedup(&mut transfer_ids);
    let mut known = Known::default();
    if !account_ids.is_empty() {
        let rows = sqlx::query(
            "SELECT id, allow_negative, debits_posted, credits_posted, debits_pending, \
             credits_pending FROM ledger_accounts WHERE id = ANY($1) \
             ORDER BY id COLLATE \"C\" FOR UPDATE",
        )
        .bind(&account_ids)
        .fetch_all(&mut *conn)
        .await
        .map_err(classify)?;
        for id in &account_ids {
            known.accounts.insert(id.clone(), None);
        }
        for row in rows {
            let id: String = row.try_get(0).map_err(backend)?;
            let state = AccountState {
                allow_negative: row.try_get(1).map_err(backend)?,
                balance: balance_from_row(&row, 2).map_err(backend)?,
            };
            known.accounts.insert(id, Some(state));
        }
    }
    if !transfer_ids.is_empty() {
        let rows = sqlx::query(
            "SELECT id, debit, credit, amount, phase, pending_id, resolved \
             FROM ledger_transfers WHERE id = ANY($1)",
        )
        .bind(&transfer_ids)
        .fetch_all(&mut *conn)
        .await
        .map_err(classify)?;
        for id in &transfer_ids {
            known.transfers.insert(id.clone(), None);
        }
        for row in rows {
            let t = transfer_from_row(&row).map_err(backend)?;
            known.transfers.insert(t.transfer.id.clone(), Some(t));
        }
    }
    let mut overlay = Overlay::new(&known);
    for account in &batch.accounts {
        overlay.create_account(account)?;
    }
    // 2. Idempotency record, puts.
    if let Some(idem) = &batch.idempotency {
        let done = sqlx::query(
            "INSERT INTO idempotency (tenant, key, request_hash, response, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
        )
        .bind(&idem.tenant)
        .bind(&idem.key)
        .bind(&idem.request_hash)
        .bind(idem.response.to_string())
        .bind(idem.created_at.0)
        .execute(&mut *conn)
        .await
        .map_err(classify)?;
        if done.rows_affected() == 0 {
            return Err(Attempt::Done(StoreError::IdempotencyExists {
                key: idem.key.clone(),
            }));
        }
    }
    for put in &batch.puts {
        put_record(conn, put).await?;
    }
    // 3. Ledger.
    for transfer in &batch.ledger {
        overlay.transfer(transfer)?;
    }
    let changes = overlay.into_changes();
    let (created, updated): (Vec<_>, Vec<_>) = changes.accounts.iter().partition(|a| a.created);
    if !created.is_empty() {
        let b = |f: fn(&Balance) -> u64| -> Vec<i64> {
            created
                .iter()
                .map(|a| i64_to_db(f(&a.state.balance)))
                .collect()
        };
        sqlx::query(
            "INSERT INTO ledger_accounts (id, allow_negative, debits_posted, credits_posted, \
               debits_pending, credits_pending) \
             SELECT * FROM UNNEST($1::text[], $2::bool[], $3::int8[], $4::int8[], \
               $5::int8[], $6::int8[])",
        )
        .bind(created.iter().map(|a| a.id.clone()).collect::<Vec<_>>())
        .bind(
            created
                .iter()
                .map(|a| a.state.allow_negative)
                .collect::<Vec<_>>(),
        )
        .bind(b(|b| b.debits_posted))
        .bind(b(|b| b.credits_posted))
        .bind(b(|b| b.debits_pending))
        .bind(b(|b| b.credits_pending))
        .execute(&mut *conn)
        .await
        .map_err(classify)?;
    }
    if !updated.is_empty() {
        let b = |f: fn(&Balance) -> u64| -> Vec<i64> {
            updated
                .iter()
                .map(|a| i64_to_db(f(&a.state.balance)))
                .collect()
        };
        sqlx::query(
            "UPDATE ledger_accounts a SET debits_posted = u.dp, credits_posted = u.cp, \
               debits_pending = u.dpe, credits_pending = u.cpe \
             FROM UNNEST($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[]) \
               AS u (id, dp, cp, dpe, cpe) \
             WHERE a.id = u.id",
        )
        .bind(updated.iter().map(|a| a.id.clone()).collect::<Vec<_>>())
        .bind(b(|b| b.debits_posted))
        .bind(b(|b| b.credits_posted))
        .bind(b(|b| b.debits_pending))
        .bind(b(|b| b.credits_pending))
        .execute(&mut *conn)
        .await
        .map_err(classify)?;
    }
    if !changes.new_transfers.is_empty() {
        let ts = &changes.new_transfers;
        let phases: Vec<_> = ts.iter().map(|t| phase_to_db(&t.transfer.phase)).collect();
        sqlx::query(
            "INSERT INTO ledger_transfers (id, debit, credit, amount, phase, pending_id, \
               resolved) \
             SELECT id, debit, credit, amount, phase, pending_id, resolved \
             FROM UNNEST($1::text[], $2::text[], $3::text[], $4::int8[], $5::text[], \
               $6::text[], $7::bool[]) WITH ORDINALITY \
               AS u (id, debit, credit, amount, phase, pending_id, resolved, ord) \
             ORDER BY ord",
        )
        .bind(ts.iter().map(|t| t.transfer.id.clone()).collect::<Vec<_>>())
        .bind(
            ts.iter()
                .map(|t| t.transfer.debit.clone())
                .collect::<Vec<_>>(),
        )
        .bind(
            ts.iter()
                .map(|t| t.transfer.credit.clone())
                .collect::<Vec<_>>(),
        )
        .bind(
            ts.iter()
                .map(|t| i64_to_db(t.transfer.amount.0))
                .collect::<Vec<_>>(),
        )
        .bind(phases.iter().map(|p| p.0.to_string()).collect::<Vec<_>>())
        .bind(
            phases
                .iter()
                .map(|p| p.1.map(str::to_string))
                .collect::<Vec<_>>(),
        )
        .bind(ts.iter().map(|t| t.resolved).collect::<Vec<_>>())
        .execute(&mut *conn)
        .await
        .map_err(classify)?;
    }
    if !changes.resolved.is_empty() {
        sqlx::query("UPDATE ledger_transfers SET resolved = true WHERE id = ANY($1)")
            .bind(&changes.resolved)
            .execute(&mut *conn)
            .await
            .map_err(classify)?;
    }
    // 4. Outbox, last: the counter row stays locked until COMMIT.
    let mut outbox_seqs = Vec::with_capacity(batch.outbox.len());
    if !batch.outbox.is_empty() {
        let n = batch.outbox.len() as i64;
        let last: i64 = sqlx::query_scalar(
            "UPDATE outbox_counter SET last_seq = last_seq + $1 WHERE id = 1 \
             RETURNING last_seq",
        )
        .bind(n)
        .fetch_one(&mut *conn)
        .await
        .map_err(classify)?;
        let seqs: Vec<i64> = (last - n + 1..=last).collect();
        let ev = &batch.outbox;
        sqlx::query(
            "INSERT INTO outbox (seq, id, tenant, event_type, occurred_at, payload) \
             SELECT * FROM UNNEST($1::int8[], $2::text[], $3::text[], $4::text[], \
               $5::int8[], $6::text[])",
        )
        .bind(&seqs)
        .bind(ev.iter().map(|e| e.id.clone()).collect::<Vec<_>>())
        .bind(ev.iter().map(|e| e.tenant.clone()).collect::<Vec<_>>())
        .bind(ev.iter().map(|e| e.event_type.clone()).collect::<Vec<_>>())
        .bind(ev.iter().map(|e| e.occurred_at.0).collect::<Vec<_>>())
        .bind(ev.iter().map(|e| e.payload.to_string()).collect::<Vec<_>>())
        .execute(&mut *conn)
        .await
        .map_err(classify)?;
        outbox_seqs = seqs.into_iter().map(|s| s as u64).collect();
    }
    Ok(CommitReceipt { outbox_seqs })
}

/// One put: version check and write (releasing any claim), then the unique keys.
async fn put_record(conn: &mut PgConnection, put: &Put) -> Result<(), Attempt> {
    let rec = &put.record;
    let keys = dedup_keys(&rec.unique_keys);
    let query = match put.expected_version {
        None => sqlx::query(
            "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
               lease_owner, lease_until, unique_keys, body) \
             VALUES ($1, $2, $3, 1, $4, $5, $6, NULL, NULL, $7, $8) \
             ON CONFLICT (kind, id) DO NOTHING",
        ),
        Some(_) => sqlx::query(
            "UPDATE records SET tenant = $3, version = version + 1, created_at = $4, \
               status = $5, due_at = $6, lease_owner = NULL, lease_until = NULL, \
               unique_keys = $7, body = $8 \
             WHERE kind = $1 AND id = $2 AND version = $9",
        ),
    }
    .bind(&rec.kind)
    .bind(&rec.id)
    .bind(&rec.tenant)
    .bind(rec.created_at.0)
    .bind(&rec.status)
    .bind(rec.due_at.map(|t| t.0))
    .bind(keys_to_db(&keys))
    .bind(rec.body.as_str());
    let query = match put.expected_version {
        // A version beyond i64 cannot be stored, so it can never match: -1 never does.
        Some(v) => query.bind(i64::try_from(v).unwrap_or(-1)),
        None => query,
    };
    let written = query.execute(&mut *conn).await.map_err(classify)?;
    if written.rows_affected() == 0 {
        return Err(Attempt::Done(StoreError::VersionConflict {
            kind: rec.kind.clone(),
            id: rec.id.clone(),
        }));
    }
    sqlx::query("DELETE FROM unique_keys WHERE kind = $1 AND id = $2 AND key <> ALL($3)")
        .bind(&rec.kind)
        .bind(&rec.id)
        .bind(&keys)
        .execute(&mut *conn)
        .await
        .map_err(classify)?;
    if keys.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO unique_keys (key, kind, id) SELECT k, $2, $3 FROM UNNEST($1::text[]) \
         AS k ON CONFLICT (key) DO NOTHING",
    )
    .bind(&keys)
    .bind(&rec.kind)
    .bind(&rec.id)
    .execute(&mut *conn)
    .await
    .map_err(classify)?;
    let rows = sqlx::query("SELECT key, kind, id FROM unique_keys WHERE key = ANY($1)")
        .bind(&keys)
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
    for key in &rec.unique_keys {
        match held.get(key) {
            Some((kind, id)) if kind == &rec.kind && id == &rec.id => {}
            Some(_) => {
                return Err(Attempt::Done(StoreError::UniqueViolation {
                    key: key.clone(),
                }));
            }
            // Its holder released it between our insert and our read: try again.
            None => return Err(Attempt::Retry(format!("unique key {key} changed hands"))),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Row decoding

const RECORD_COLS: &str =
    "kind, id, tenant, version, created_at, status, due_at, unique_keys, body";

fn record_from_row(row: &PgRow) -> Result<StoredRecord, StoreError> {
    let decode = || -> Result<StoredRecord, String> {
        let s = |e: sqlx::Error| e.to_string();
        let version: i64 = row.try_get(3).map_err(s)?;
        let keys: String = row.try_get(7).map_err(s)?;
        let body: String = row.try_get(8).map_err(s)?;
        Ok(StoredRecord {
            kind: row.try_get(0).map_err(s)?,
            id: row.try_get(1).map_err(s)?,
            tenant: row.try_get(2).map_err(s)?,
            version: u64_from_db(version, "version")?,
            created_at: Timestamp(row.try_get(4).map_err(s)?),
            status: row.try_get(5).map_err(s)?,
            due_at: row.try_get::<Option<i64>, _>(6).map_err(s)?.map(Timestamp),
            unique_keys: keys_from_db(&keys)?,
            body: JsonText::from_stored_text(body),
        })
    };
    decode().map_err(backend)
}

fn balance_from_row(row: &PgRow, first: usize) -> Result<Balance, String> {
    let get = |i: usize, what: &str| -> Result<u64, String> {
        let v: i64 = row.try_get(first + i).map_err(|e| e.to_string())?;
        u64_from_db(v, what)
    };
    Ok(Balance {
        debits_posted: get(0, "debits_posted")?,
        credits_posted: get(1, "credits_posted")?,
        debits_pending: get(2, "debits_pending")?,
        credits_pending: get(3, "credits_pending")?,
    })
}

fn transfer_from_row(row: &PgRow) -> Result<TransferState, String> {
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

// ---------------------------------------------------------------------------------------
// Store

#[async_trait]
impl Store for PgStore {
    async fn commit(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        if batch.is_empty() {
            return Ok(CommitReceipt::default());
        }
        let mut attempt: u32 = 0;
        loop {
            match self.try_commit(&batch).await {
                Ok(receipt) => return Ok(receipt),
                Err(Attempt::Done(e)) => return Err(e),
                Err(Attempt::Retry(reason)) => {
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
                    tokio::time::sleep(Duration::from_micros(base + jitter)).await;
                }
            }
        }
    }

    async fn get(&self, kind: &str, id: &str) -> Result<Option<StoredRecord>, StoreError> {
        let sql = format!("SELECT {RECORD_COLS} FROM records WHERE kind = $1 AND id = $2");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(kind)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(backend)?;
        row.as_ref().map(record_from_row).transpose()
    }

    async fn get_by_unique(&self, key: &str) -> Result<Option<StoredRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT r.kind, r.id, r.tenant, r.version, r.created_at, r.status, r.due_at, \
             r.unique_keys, r.body FROM unique_keys u \
             JOIN records r ON r.kind = u.kind AND r.id = u.id WHERE u.key = $1",
        )
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        row.as_ref().map(record_from_row).transpose()
    }

    async fn list(&self, query: &ListQuery) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        // One snapshot for the page and the total.
        let mut tx = self.pool.begin().await.map_err(backend)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
        let filter = "kind = $1 AND tenant = $2 AND ($3::text IS NULL OR status = $3)";
        let page = format!(
            "SELECT {RECORD_COLS} FROM records WHERE {filter} \
             ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(page))
            .bind(&query.kind)
            .bind(&query.tenant)
            .bind(&query.status)
            .bind(sql_count(query.limit))
            .bind(sql_count(query.offset))
            .fetch_all(&mut *tx)
            .await
            .map_err(backend)?;
        let count = format!("SELECT COUNT(*) FROM records WHERE {filter}");
        let total: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(count))
            .bind(&query.kind)
            .bind(&query.tenant)
            .bind(&query.status)
            .fetch_one(&mut *tx)
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        let records = rows
            .iter()
            .map(record_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((records, u64_from_db(total, "count").map_err(backend)?))
    }

    async fn idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        let row = sqlx::query(
            "SELECT request_hash, response, created_at FROM idempotency \
             WHERE tenant = $1 AND key = $2",
        )
        .bind(tenant)
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        let Some(row) = row else { return Ok(None) };
        let response: String = row.try_get(1).map_err(backend)?;
        Ok(Some(IdempotencyRecord {
            tenant: tenant.to_string(),
            key: key.to_string(),
            request_hash: row.try_get(0).map_err(backend)?,
            response: json_from_db(&response, "response").map_err(backend)?,
            created_at: Timestamp(row.try_get(2).map_err(backend)?),
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
        let rows = sqlx::query(
            "UPDATE records r SET lease_owner = $1, lease_until = $2 \
             FROM (SELECT kind, id FROM records \
                   WHERE kind = $3 AND due_at IS NOT NULL AND due_at <= $4 \
                     AND (lease_until IS NULL OR lease_until <= $4) \
                   ORDER BY due_at, id LIMIT $5 FOR UPDATE SKIP LOCKED) c \
             WHERE r.kind = c.kind AND r.id = c.id \
             RETURNING r.kind, r.id, r.tenant, r.version, r.created_at, r.status, r.due_at, \
               r.unique_keys, r.body",
        )
        .bind(worker)
        .bind(now.plus_millis(lease_ms).0)
        .bind(kind)
        .bind(now.0)
        .bind(sql_count(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        let mut records = rows
            .iter()
            .map(record_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        records.sort_by(|a, b| (a.due_at, &a.id).cmp(&(b.due_at, &b.id)));
        Ok(records)
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
        let rows = sqlx::query(
            "SELECT seq, id, tenant, event_type, occurred_at, payload FROM outbox \
             WHERE seq > $1 ORDER BY seq LIMIT $2",
        )
        .bind(after)
        .bind(sql_count(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        rows.iter()
            .map(|row| {
                let seq: i64 = row.try_get(0).map_err(backend)?;
                let payload: String = row.try_get(5).map_err(backend)?;
                Ok((
                    u64_from_db(seq, "seq").map_err(backend)?,
                    OutboxEvent {
                        id: row.try_get(1).map_err(backend)?,
                        tenant: row.try_get(2).map_err(backend)?,
                        event_type: row.try_get(3).map_err(backend)?,
                        occurred_at: Timestamp(row.try_get(4).map_err(backend)?),
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
impl Ledger for PgStore {
    async fn balance(&self, account: &str) -> Result<Balance, LedgerError> {
        let row = sqlx::query(
            "SELECT debits_posted, credits_posted, debits_pending, credits_pending \
             FROM ledger_accounts WHERE id = $1",
        )
        .bind(account)
        .fetch_optional(&self.pool)
        .await
        .map_err(ledger_backend)?;
        match row {
            Some(row) => balance_from_row(&row, 0).map_err(ledger_backend),
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
        let mut tx = self.pool.begin().await.map_err(ledger_backend)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(ledger_backend)?;
        let exists: Option<i32> = sqlx::query_scalar("SELECT 1 FROM ledger_accounts WHERE id = $1")
            .bind(account)
            .fetch_optional(&mut *tx)
            .await
            .map_err(ledger_backend)?;
        if exists.is_none() {
            return Err(LedgerError::UnknownAccount {
                account: account.to_string(),
            });
        }
        let rows = sqlx::query(
            "SELECT id, debit, credit, amount, phase, pending_id FROM ledger_transfers \
             WHERE debit = $1 OR credit = $1 ORDER BY seq LIMIT $2 OFFSET $3",
        )
        .bind(account)
        .bind(sql_count(limit))
        .bind(sql_count(offset))
        .fetch_all(&mut *tx)
        .await
        .map_err(ledger_backend)?;
        tx.commit().await.map_err(ledger_backend)?;
        rows.iter()
            .map(|row| {
                let s = |e: sqlx::Error| ledger_backend(e);
                let amount: i64 = row.try_get(3).map_err(s)?;
                let phase: String = row.try_get(4).map_err(s)?;
                Ok(LedgerEntry {
                    transfer_id: row.try_get(0).map_err(s)?,
                    debit: row.try_get(1).map_err(s)?,
                    credit: row.try_get(2).map_err(s)?,
                    amount: Micros(u64_from_db(amount, "amount").map_err(ledger_backend)?),
                    phase: phase_from_db(&phase, row.try_get(5).map_err(s)?)
                        .map_err(ledger_backend)?,
                })
            })
            .collect()
    }

    async fn posted_sum(&self) -> Result<i128, LedgerError> {
        // SUM(bigint) is numeric in PostgreSQL: no overflow; read it as text.
        let sum: String = sqlx::query_scalar(
            "SELECT COALESCE(SUM(credits_posted - debits_posted), 0)::text FROM ledger_accounts",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(ledger_backend)?;
        sum.parse::<i128>()
            .map_err(|e| ledger_backend(format!("posted_sum {sum:?}: {e}")))
    }
}
