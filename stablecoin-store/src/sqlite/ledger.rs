//! `Ledger` on SQLite: the read side (transfers are written by the writer's commits).

use super::SqliteStore;
use super::rows::{balance_from_sums, entry_from_row, ledger_backend};
use crate::codec::sql_count;
use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{
    AccountEntries, Balance, Ledger, LedgerEntry, LedgerError, TimedEntry,
};

/// An account's transfers on each side, newest first, on the side's (account, seq)
/// index; columns as `entry_from_row` reads them, then seq and committed_at.
const SINCE_DEBIT: &str = "SELECT id, debit, credit, amount, phase, pending_id, seq, \
     committed_at FROM ledger_transfers WHERE debit = ?1 ORDER BY seq DESC";
const SINCE_CREDIT: &str = "SELECT id, debit, credit, amount, phase, pending_id, seq, \
     committed_at FROM ledger_transfers WHERE credit = ?1 ORDER BY seq DESC";

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
            None => Err(LedgerError::unknown_account(account)),
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
            None => Err(LedgerError::unknown_account(account)),
            Some(rows) => rows
                .into_iter()
                .map(|r| r.map_err(ledger_backend))
                .collect(),
        }
    }

    /// One read snapshot: the account's row, then each side's transfers walked
    /// backwards on its (debit, seq) / (credit, seq) index until one is older than
    /// `since` (stamps never decrease along `seq`, see migration 0008), merged by `seq`.
    async fn entries_since(
        &self,
        account: &str,
        since: Option<Timestamp>,
    ) -> Result<AccountEntries, LedgerError> {
        let floor = since.map(|t| t.0);
        let read = self
            .inner
            .readers
            .snapshot(|conn| {
                let sums = conn
                    .prepare_cached(
                        "SELECT debits_posted, credits_posted, debits_pending, credits_pending \
                         FROM ledger_accounts WHERE id = ?1",
                    )?
                    .query_row([account], |r| {
                        Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?])
                    })
                    .optional()?;
                let Some(sums) = sums else { return Ok(None) };
                let mut rows = Vec::new();
                for sql in [SINCE_DEBIT, SINCE_CREDIT] {
                    let mut stmt = conn.prepare_cached(sql)?;
                    let mut side = stmt.query([account])?;
                    while let Some(row) = side.next()? {
                        let at: Option<i64> = row.get(7)?;
                        if let Some(floor) = floor
                            && at.is_none_or(|at| at < floor)
                        {
                            break;
                        }
                        rows.push((row.get::<_, i64>(6)?, at, entry_from_row(row)?));
                    }
                }
                Ok(Some((sums, rows)))
            })
            .map_err(LedgerError::Backend)?;
        let Some((sums, mut rows)) = read else {
            return Err(LedgerError::unknown_account(account));
        };
        rows.sort_by_key(|(seq, _, _)| *seq);
        let entries = rows
            .into_iter()
            .map(|(_, at, entry)| {
                Ok(TimedEntry {
                    entry: entry.map_err(ledger_backend)?,
                    committed_at: at.map(Timestamp),
                })
            })
            .collect::<Result<Vec<_>, LedgerError>>()?;
        Ok(AccountEntries {
            balance: balance_from_sums(sums).map_err(ledger_backend)?,
            entries,
            timed: true,
        })
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
