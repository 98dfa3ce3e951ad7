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

/// An account's transfers on each side (`?1`: the account's number), newest first, on
/// the side's index (its entries are (account, seq): migration 0010), each account
/// number turned back into its name; columns as `entry_from_row` reads them, then seq
/// and committed_at. CROSS JOIN keeps the transfers the outer loop.
pub(super) const SINCE_DEBIT: &str = "SELECT t.id, d.id, c.id, t.amount, t.phase, t.pending_id, t.seq, \
     t.committed_at FROM ledger_transfers t CROSS JOIN ledger_accounts d \
     CROSS JOIN ledger_accounts c \
     WHERE t.debit = ?1 AND d.num = t.debit AND c.num = t.credit ORDER BY t.seq DESC";
pub(super) const SINCE_CREDIT: &str = "SELECT t.id, d.id, c.id, t.amount, t.phase, t.pending_id, t.seq, \
     t.committed_at FROM ledger_transfers t CROSS JOIN ledger_accounts d \
     CROSS JOIN ledger_accounts c \
     WHERE t.credit = ?1 AND d.num = t.debit AND c.num = t.credit ORDER BY t.seq DESC";

/// A page of an account's transfers, oldest first (`Ledger::history`; `?1`: the
/// account's number).
pub(super) const HISTORY: &str = "SELECT u.id, d.id, c.id, u.amount, u.phase, u.pending_id \
     FROM ( \
       SELECT seq, id, debit, credit, amount, phase, pending_id \
         FROM ledger_transfers WHERE debit = ?1 \
       UNION ALL \
       SELECT seq, id, debit, credit, amount, phase, pending_id \
         FROM ledger_transfers WHERE credit = ?1 \
     ) u CROSS JOIN ledger_accounts d CROSS JOIN ledger_accounts c \
     WHERE d.num = u.debit AND c.num = u.credit \
     ORDER BY u.seq LIMIT ?2 OFFSET ?3";

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
                let num = conn
                    .prepare_cached("SELECT num FROM ledger_accounts WHERE id = ?1")?
                    .query_row([account], |r| r.get::<_, i64>(0))
                    .optional()?;
                let Some(num) = num else {
                    return Ok(None);
                };
                conn.prepare_cached(HISTORY)?
                    .query_map(
                        params![num, sql_count(limit), sql_count(offset)],
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
                        "SELECT num, debits_posted, credits_posted, debits_pending, \
                           credits_pending FROM ledger_accounts WHERE id = ?1",
                    )?
                    .query_row([account], |r| {
                        Ok((
                            r.get::<_, i64>(0)?,
                            [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?],
                        ))
                    })
                    .optional()?;
                let Some((num, sums)) = sums else {
                    return Ok(None);
                };
                let mut rows = Vec::new();
                for sql in [SINCE_DEBIT, SINCE_CREDIT] {
                    let mut stmt = conn.prepare_cached(sql)?;
                    let mut side = stmt.query([num])?;
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
