//! A commit's ledger rows: what it loads for the rules, and how it writes their decisions,
//! so that no hot account row is held across a durable commit.
//!
//! Why: every send credits the same few accounts (the service fee account, the tenant's
//! fee account, a popular recipient) and every settlement posts into them. Locking
//! those rows `FOR UPDATE` until COMMIT made every transfer of the service queue behind
//! the previous one's WAL flush (#46: 25-50 ms waits per lock under load). Yet the rules
//! need an account's balance for one thing only: that a debit of an account without
//! `allow_negative` (`Single` or `Pending`) stays covered. A credit, the posting or
//! voiding of a pending transfer (they never lower what is available), or any change to
//! an account that may go negative, decides the same whatever the exact balance is.
//!
//! So a commit:
//! 1. reads the transfers it names, and
//! 2. every account it names, unlocked, as row + deltas, both in one statement (one
//!    snapshot; the rules see exact sums as of it); then marks the pending transfers it
//!    posts or voids resolved only if they still are not, else the batch runs again
//!    (resolved once, without a lock on read);
//! 3. locks the accounts it must check ([`checked_accounts`]), `FOR NO KEY UPDATE` in
//!    id order (the key-share locks of transfers' foreign keys do not conflict with
//!    it), and in the same statement folds their deltas into their rows: the balance
//!    the rules check is exact, and deltas other commits append meanwhile only add to
//!    what is available;
//! 4. writes its decisions: new accounts inserted, locked accounts updated to their
//!    final sums, every other account's change appended to `ledger_deltas` as signed
//!    deltas, with no row lock at all.
//!
//! The deltas of accounts nobody debits (fee income) are folded by [`compact`], run by
//! the store every [`COMPACT_EVERY`] commits that appended deltas.

use super::rows::{balance_from_row, transfer_from_row};
use super::{Attempt, backend, classify};
use crate::codec::{i64_to_db, phase_to_db, sort_dedup};
use sqlx::Row;
use sqlx::postgres::{PgConnection, PgPool};
use stablecoin_core::domain::ledger::{
    AccountChange, AccountState, Known, LedgerChanges, TransferState, needed_ids,
};
use stablecoin_core::ports::ledger::{Balance, LedgerTransfer, Phase};
use stablecoin_core::ports::store::Batch;
use std::collections::HashSet;

/// How many commits that appended deltas pass between two compactions (per store
/// process). Small enough that an account's deltas stay a short index range to sum,
/// large enough that compaction is a small share of the commits.
pub(super) const COMPACT_EVERY: u64 = 64;

/// What a commit loaded: the rows for the rules, and the accounts it holds locked.
pub(super) struct Loaded {
    /// The rows, as the rules read them.
    pub known: Known,
    /// The accounts locked and folded in step 3: written as final sums.
    pub locked: HashSet<String>,
    /// The pending transfers marked resolved in step 1 (`claim_pending`).
    pub claimed: HashSet<String>,
}

/// The row + deltas sums of an account (`a` its row, `d` its summed deltas), as
/// `balance_from_row` reads them.
const SUMS: &str = "(a.debits_posted + COALESCE(d.dp, 0))::int8, \
     (a.credits_posted + COALESCE(d.cp, 0))::int8, \
     (a.debits_pending + COALESCE(d.dpe, 0))::int8, \
     (a.credits_pending + COALESCE(d.cpe, 0))::int8";

/// Deltas summed per account, from a relation with `ledger_deltas`' columns.
const SUMMED: &str = "SELECT account, SUM(debits_posted) AS dp, \
     SUM(credits_posted) AS cp, SUM(debits_pending) AS dpe, SUM(credits_pending) AS cpe";

/// Deletes the deltas of the accounts of the locked relation `l`, returning them.
const FOLD: &str = "DELETE FROM ledger_deltas x USING l WHERE x.account = l.id \
     RETURNING x.account, x.debits_posted, x.credits_posted, x.debits_pending, \
     x.credits_pending";

/// Steps 1 and 2 of the module doc: the rows, none of the accounts locked yet.
pub(super) async fn read(conn: &mut PgConnection, batch: &Batch) -> Result<Loaded, Attempt> {
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
    if !transfer_ids.is_empty() || !account_ids.is_empty() {
        read_rows(conn, &transfer_ids, &account_ids, &mut known).await?;
    }
    let mut loaded = Loaded {
        known,
        locked: HashSet::new(),
        claimed: HashSet::new(),
    };
    claim_pending(conn, batch, &mut loaded).await?;
    Ok(loaded)
}

/// The rest of step 1: marks resolved, at once, the pending transfers the batch posts or
/// voids that were read unresolved (its own Post or Void not applied yet), if they still
/// are not. The UPDATE waits for a concurrent commit holding one of them and then sees
/// its outcome; if that commit resolved it first, fewer rows change, and the batch runs
/// again (`Retry`): it then reads the transfer resolved, and the rules answer
/// `PendingResolved`. Done before the rules run, so that a commit that resolved one of
/// them after this batch's read is found before anything is decided on that read. So a
/// pending transfer is resolved once, without a lock taken when it is read (a settlement
/// reads hundreds); if the batch fails, the marks roll back with it.
async fn claim_pending(
    conn: &mut PgConnection,
    batch: &Batch,
    loaded: &mut Loaded,
) -> Result<(), Attempt> {
    let known = &loaded.known;
    let mut ids: Vec<String> = batch
        .ledger
        .iter()
        .filter_map(|t| match &t.phase {
            Phase::Post { pending_id } | Phase::Void { pending_id } => Some((t, pending_id)),
            _ => None,
        })
        .filter(|(t, _)| matches!(known.transfers.get(&t.id), Some(None)))
        .filter(|(_, p)| {
            matches!(known.transfers.get(*p),
                Some(Some(s)) if s.transfer.phase == Phase::Pending && !s.resolved)
        })
        .map(|(_, p)| p.clone())
        .collect();
    sort_dedup(&mut ids);
    if !ids.is_empty() {
        resolve(conn, &ids).await?;
    }
    loaded.claimed = ids.into_iter().collect();
    Ok(())
}

/// Step 3 of the module doc. The commit runs it as late as it can, after its
/// idempotency record and puts, so that an account it must lock (a sender's, debited
/// by each of its sends) is held for the ledger writes and COMMIT only.
pub(super) async fn lock_checked(
    conn: &mut PgConnection,
    batch: &Batch,
    loaded: &mut Loaded,
) -> Result<(), Attempt> {
    let checked = checked_accounts(&batch.ledger, &loaded.known);
    if !checked.is_empty() {
        lock_and_fold(conn, &checked, &mut loaded.known).await?;
    }
    loaded.locked = checked.into_iter().collect();
    Ok(())
}

/// Steps 1 and 2's reads, in one statement (one round trip, one snapshot): the
/// transfers and the accounts (row + deltas), every id present in `known`. Nothing is
/// locked: the pending transfers the batch resolves are marked by a conditional UPDATE
/// (`claim_pending`), so two commits that both read one unresolved cannot both resolve
/// it.
async fn read_rows(
    conn: &mut PgConnection,
    transfer_ids: &[String],
    account_ids: &[String],
    known: &mut Known,
) -> Result<(), Attempt> {
    let sql = format!(
        "SELECT 't', id, debit, credit, amount, phase, pending_id, resolved, \
           NULL::bool, NULL::int8, NULL::int8, NULL::int8, NULL::int8 \
         FROM ledger_transfers WHERE id = ANY($1) \
         UNION ALL \
         SELECT 'a', a.id, NULL, NULL, NULL, NULL, NULL, NULL, a.allow_negative, {SUMS} \
         FROM ledger_accounts a \
         LEFT JOIN ({SUMMED} FROM ledger_deltas WHERE account = ANY($2) GROUP BY account) d \
         ON d.account = a.id WHERE a.id = ANY($2)"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(transfer_ids)
        .bind(account_ids)
        .fetch_all(&mut *conn)
        .await
        .map_err(classify)?;
    for id in transfer_ids {
        known.transfers.insert(id.clone(), None);
    }
    for id in account_ids {
        known.accounts.insert(id.clone(), None);
    }
    for row in rows {
        let what: String = row.try_get(0).map_err(backend)?;
        if what == "t" {
            let t = transfer_from_row(&row, 1).map_err(backend)?;
            known.transfers.insert(t.transfer.id.clone(), Some(t));
        } else {
            let id: String = row.try_get(1).map_err(backend)?;
            let state = AccountState {
                allow_negative: row.try_get(8).map_err(backend)?,
                balance: balance_from_row(&row, 9).map_err(backend)?,
            };
            known.accounts.insert(id, Some(state));
        }
    }
    Ok(())
}

/// The accounts whose balance the rules check: existing accounts without
/// `allow_negative` that a `Single` or `Pending` transfer debits, sorted. An absent
/// account has no row to lock: the batch creates it (inserted; a concurrent creation is
/// a unique violation, retried) or the rules refuse the transfer.
pub(super) fn checked_accounts(batch_ledger: &[LedgerTransfer], known: &Known) -> Vec<String> {
    let mut ids: Vec<String> = batch_ledger
        .iter()
        .filter(|t| matches!(t.phase, Phase::Single | Phase::Pending))
        .filter(|t| matches!(known.accounts.get(&t.debit), Some(Some(s)) if !s.allow_negative))
        .map(|t| t.debit.clone())
        .collect();
    sort_dedup(&mut ids);
    ids
}

/// Step 3: locks `ids` in id order and folds their deltas into their rows, in one
/// statement; `known` gets their exact sums.
///
/// Safe in one statement: the DELETE reads the deltas with the statement's snapshot,
/// but a delta another folder deleted and committed meanwhile (it held the row lock
/// this statement waited for) is skipped, not returned, while the locked row is read at
/// its newest version; so every delta is counted once, in the row or in the sum.
async fn lock_and_fold(
    conn: &mut PgConnection,
    ids: &[String],
    known: &mut Known,
) -> Result<(), Attempt> {
    let sql = format!(
        "WITH l AS ( \
           SELECT id, debits_posted, credits_posted, debits_pending, credits_pending \
           FROM ledger_accounts WHERE id = ANY($1) \
           ORDER BY id COLLATE \"C\" FOR NO KEY UPDATE), \
         gone AS ({FOLD}), d AS ({SUMMED} FROM gone GROUP BY account) \
         SELECT a.id, {SUMS} FROM l a LEFT JOIN d ON d.account = a.id"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(ids)
        .fetch_all(&mut *conn)
        .await
        .map_err(classify)?;
    for row in rows {
        let id: String = row.try_get(0).map_err(backend)?;
        let balance = balance_from_row(&row, 1).map_err(backend)?;
        match known.accounts.get_mut(&id) {
            Some(Some(state)) => state.balance = balance,
            _ => {
                return Err(Attempt::Done(backend(format!(
                    "locked unread account {id}"
                ))));
            }
        }
    }
    Ok(())
}

/// Step 4: the decisions, a statement per kind of change.
pub(super) async fn write(
    conn: &mut PgConnection,
    loaded: &Loaded,
    changes: &LedgerChanges,
) -> Result<bool, Attempt> {
    let mut created = Vec::new();
    let mut updated = Vec::new();
    let mut deltas = Vec::new();
    for change in &changes.accounts {
        if change.created {
            created.push(change);
        } else if loaded.locked.contains(&change.id) {
            updated.push(change);
        } else {
            let before = match loaded.known.accounts.get(&change.id) {
                Some(Some(state)) => state.balance,
                _ => {
                    return Err(Attempt::Done(backend(format!(
                        "changed unread account {}",
                        change.id
                    ))));
                }
            };
            let delta = Delta::between(&change.id, &before, &change.state.balance);
            if !delta.is_zero() {
                deltas.push(delta);
            }
        }
    }
    if !created.is_empty() {
        insert_accounts(conn, &created).await?;
    }
    if !updated.is_empty() {
        update_accounts(conn, &updated).await?;
    }
    if !deltas.is_empty() {
        append_deltas(conn, &deltas).await?;
    }
    if !changes.new_transfers.is_empty() {
        insert_transfers(conn, &changes.new_transfers).await?;
    }
    // Marked in step 1 already; anything else the rules resolved (none expected) the same
    // way now.
    let unclaimed: Vec<String> = changes
        .resolved
        .iter()
        .filter(|id| !loaded.claimed.contains(*id))
        .cloned()
        .collect();
    if !unclaimed.is_empty() {
        resolve(conn, &unclaimed).await?;
    }
    Ok(!deltas.is_empty())
}

/// Marks these pending transfers resolved if they still are not; if any already was,
/// the batch runs again (see `claim_pending`).
async fn resolve(conn: &mut PgConnection, ids: &[String]) -> Result<(), Attempt> {
    let done = sqlx::query(
        "UPDATE ledger_transfers SET resolved = true WHERE id = ANY($1) AND NOT resolved",
    )
    .bind(ids)
    .execute(&mut *conn)
    .await
    .map_err(classify)?;
    if done.rows_affected() != ids.len() as u64 {
        return Err(Attempt::Retry(format!(
            "{} of {} pending transfers were resolved by a concurrent commit",
            ids.len() as u64 - done.rows_affected(),
            ids.len()
        )));
    }
    Ok(())
}

/// One account's signed change, as `ledger_deltas` stores it.
struct Delta {
    account: String,
    sums: [i64; 4],
}

impl Delta {
    /// `after - before`, per sum. Both are at most `i64::MAX` (the rules refuse more), so
    /// each difference fits an `i64`.
    fn between(account: &str, before: &Balance, after: &Balance) -> Delta {
        let d = |b: u64, a: u64| i64_to_db(a).wrapping_sub(i64_to_db(b));
        Delta {
            account: account.to_string(),
            sums: [
                d(before.debits_posted, after.debits_posted),
                d(before.credits_posted, after.credits_posted),
                d(before.debits_pending, after.debits_pending),
                d(before.credits_pending, after.credits_pending),
            ],
        }
    }

    fn is_zero(&self) -> bool {
        self.sums == [0; 4]
    }
}

async fn append_deltas(conn: &mut PgConnection, deltas: &[Delta]) -> Result<(), Attempt> {
    let col = |i: usize| deltas.iter().map(|d| d.sums[i]).collect::<Vec<_>>();
    sqlx::query(
        "INSERT INTO ledger_deltas (account, debits_posted, credits_posted, \
           debits_pending, credits_pending) \
         SELECT * FROM UNNEST($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[])",
    )
    .bind(deltas.iter().map(|d| d.account.clone()).collect::<Vec<_>>())
    .bind(col(0))
    .bind(col(1))
    .bind(col(2))
    .bind(col(3))
    .execute(&mut *conn)
    .await
    .map_err(classify)?;
    Ok(())
}

/// Folds the deltas of every account no other transaction holds into its row, in one
/// short transaction of its own (one round trip). Its commit need not be durable
/// (`synchronous_commit = off`): lost in a crash, it is lost whole (the deltas and the
/// row as they were), and a later durable commit flushes it with its own. Rows another
/// transaction holds are skipped, not waited for, and folded next time.
pub(super) async fn compact(pool: &PgPool) -> Result<u64, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    let sql = format!(
        "BEGIN; SET LOCAL synchronous_commit = off; \
         WITH l AS ( \
           SELECT id FROM ledger_accounts \
           WHERE id IN (SELECT DISTINCT account FROM ledger_deltas) \
           ORDER BY id COLLATE \"C\" FOR NO KEY UPDATE SKIP LOCKED), \
         gone AS ({FOLD}), d AS ({SUMMED} FROM gone GROUP BY account) \
         UPDATE ledger_accounts a SET debits_posted = (a.debits_posted + d.dp)::int8, \
           credits_posted = (a.credits_posted + d.cp)::int8, \
           debits_pending = (a.debits_pending + d.dpe)::int8, \
           credits_pending = (a.credits_pending + d.cpe)::int8 \
         FROM d WHERE a.id = d.account; \
         COMMIT;"
    );
    let done = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut *conn)
        .await;
    match done {
        Ok(r) => Ok(r.rows_affected()),
        Err(e) => {
            // The connection may be left inside the failed transaction: end it before
            // the pool hands it out again.
            let _ = sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await;
            Err(e)
        }
    }
}

/// One of the four sums of every account, as the database stores it.
fn sums(accounts: &[&AccountChange], f: fn(&Balance) -> u64) -> Vec<i64> {
    accounts
        .iter()
        .map(|a| i64_to_db(f(&a.state.balance)))
        .collect()
}

async fn insert_accounts(
    conn: &mut PgConnection,
    created: &[&AccountChange],
) -> Result<(), Attempt> {
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
    .bind(sums(created, |b| b.debits_posted))
    .bind(sums(created, |b| b.credits_posted))
    .bind(sums(created, |b| b.debits_pending))
    .bind(sums(created, |b| b.credits_pending))
    .execute(&mut *conn)
    .await
    .map_err(classify)?;
    Ok(())
}

/// The locked accounts' final sums (their deltas were folded in when they were locked).
async fn update_accounts(
    conn: &mut PgConnection,
    updated: &[&AccountChange],
) -> Result<(), Attempt> {
    sqlx::query(
        "UPDATE ledger_accounts a SET debits_posted = u.dp, credits_posted = u.cp, \
           debits_pending = u.dpe, credits_pending = u.cpe \
         FROM UNNEST($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[]) \
           AS u (id, dp, cp, dpe, cpe) \
         WHERE a.id = u.id",
    )
    .bind(updated.iter().map(|a| a.id.clone()).collect::<Vec<_>>())
    .bind(sums(updated, |b| b.debits_posted))
    .bind(sums(updated, |b| b.credits_posted))
    .bind(sums(updated, |b| b.debits_pending))
    .bind(sums(updated, |b| b.credits_pending))
    .execute(&mut *conn)
    .await
    .map_err(classify)?;
    Ok(())
}

/// The batch's transfers, in order (`WITH ORDINALITY`): the accounts' history order.
async fn insert_transfers(conn: &mut PgConnection, ts: &[TransferState]) -> Result<(), Attempt> {
    let phases: Vec<_> = ts.iter().map(|t| phase_to_db(&t.transfer.phase)).collect();
    sqlx::query(
        "INSERT INTO ledger_transfers (id, debit, credit, amount, phase, pending_id, \
           resolved, committed_at) \
         SELECT id, debit, credit, amount, phase, pending_id, resolved, $8::int8 \
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
    .bind(wall_clock_ms())
    .execute(&mut *conn)
    .await
    .map_err(classify)?;
    Ok(())
}

/// The process's wall clock in Unix milliseconds: the transfers' `committed_at`
/// (migration 0009), as the SQLite writer stamps them.
fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
