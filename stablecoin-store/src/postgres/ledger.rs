//! `Ledger` on PostgreSQL: the read side (transfers are written by commits).

use super::PgStore;
use super::ledger_backend;
use super::rows::balance_from_row;
use crate::codec::{phase_from_db, sql_count, u64_from_db};
use async_trait::async_trait;
use sqlx::Row;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{
    AccountEntries, Balance, Ledger, LedgerEntry, LedgerError, TimedEntry,
};

/// An account's balance, row + deltas, in one statement (see `ledger_rows`).
const BALANCE: &str = "SELECT (a.debits_posted + COALESCE(SUM(d.debits_posted), 0))::int8, \
       (a.credits_posted + COALESCE(SUM(d.credits_posted), 0))::int8, \
       (a.debits_pending + COALESCE(SUM(d.debits_pending), 0))::int8, \
       (a.credits_pending + COALESCE(SUM(d.credits_pending), 0))::int8 \
     FROM ledger_accounts a LEFT JOIN ledger_deltas d ON d.account = a.id \
     WHERE a.id = $1 GROUP BY a.id";

/// A ledger row as a `LedgerEntry` (columns id, debit, credit, amount, phase,
/// pending_id).
fn entry_from_row(row: &sqlx::postgres::PgRow) -> Result<LedgerEntry, LedgerError> {
    let s = |e: sqlx::Error| ledger_backend(e);
    let amount: i64 = row.try_get(3).map_err(s)?;
    let phase: String = row.try_get(4).map_err(s)?;
    Ok(LedgerEntry {
        transfer_id: row.try_get(0).map_err(s)?,
        debit: row.try_get(1).map_err(s)?,
        credit: row.try_get(2).map_err(s)?,
        amount: Micros(u64_from_db(amount, "amount").map_err(ledger_backend)?),
        phase: phase_from_db(&phase, row.try_get(5).map_err(s)?).map_err(ledger_backend)?,
    })
}

#[async_trait]
impl Ledger for PgStore {
    async fn balance(&self, account: &str) -> Result<Balance, LedgerError> {
        // Row + deltas in one statement: one snapshot (see `ledger_rows`).
        let row = sqlx::query(BALANCE)
            .bind(account)
            .fetch_optional(&self.pool)
            .await
            .map_err(ledger_backend)?;
        match row {
            Some(row) => balance_from_row(&row, 0).map_err(ledger_backend),
            None => Err(LedgerError::unknown_account(account)),
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
            return Err(LedgerError::unknown_account(account));
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
        rows.iter().map(entry_from_row).collect()
    }

    /// One snapshot (REPEATABLE READ): the balance as row + deltas, then the transfers
    /// on either side of the account stamped at or after `since` (migration 0009; a
    /// transfer without a stamp is older than any `since`), in `seq` order.
    async fn entries_since(
        &self,
        account: &str,
        since: Option<Timestamp>,
    ) -> Result<AccountEntries, LedgerError> {
        let mut tx = self.pool.begin().await.map_err(ledger_backend)?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(ledger_backend)?;
        let Some(row) = sqlx::query(BALANCE)
            .bind(account)
            .fetch_optional(&mut *tx)
            .await
            .map_err(ledger_backend)?
        else {
            return Err(LedgerError::unknown_account(account));
        };
        let balance = balance_from_row(&row, 0).map_err(ledger_backend)?;
        let rows = sqlx::query(
            "SELECT id, debit, credit, amount, phase, pending_id, committed_at \
             FROM ledger_transfers WHERE (debit = $1 OR credit = $1) \
               AND ($2::int8 IS NULL OR committed_at >= $2) ORDER BY seq",
        )
        .bind(account)
        .bind(since.map(|t| t.0))
        .fetch_all(&mut *tx)
        .await
        .map_err(ledger_backend)?;
        tx.commit().await.map_err(ledger_backend)?;
        let entries = rows
            .iter()
            .map(|row| {
                let at: Option<i64> = row.try_get(6).map_err(ledger_backend)?;
                Ok(TimedEntry {
                    entry: entry_from_row(row)?,
                    committed_at: at.map(Timestamp),
                })
            })
            .collect::<Result<Vec<_>, LedgerError>>()?;
        Ok(AccountEntries {
            balance,
            entries,
            timed: true,
        })
    }

    async fn posted_sum(&self) -> Result<i128, LedgerError> {
        // SUM(bigint) is numeric in PostgreSQL: no overflow; read it as text.
        // Rows and deltas in one statement: one snapshot.
        let sum: String = sqlx::query_scalar(
            "SELECT ((SELECT COALESCE(SUM(credits_posted - debits_posted), 0) \
               FROM ledger_accounts) + (SELECT COALESCE(SUM(credits_posted - debits_posted), 0) \
               FROM ledger_deltas))::text",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(ledger_backend)?;
        sum.parse::<i128>()
            .map_err(|e| ledger_backend(format!("posted_sum {sum:?}: {e}")))
    }
}
