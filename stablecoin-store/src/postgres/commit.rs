//! One commit: a READ COMMITTED transaction in the order `Store::commit` documents (see
//! the module doc of `postgres`).

use super::backend;
use super::puts::write_puts;
use super::rows::{balance_from_row, transfer_from_row};
use super::{Attempt, classify};
use crate::codec::{i64_to_db, phase_to_db, sort_dedup};
use sqlx::Row;
use sqlx::postgres::PgConnection;
use stablecoin_core::domain::ledger::{
    AccountChange, AccountState, Known, LedgerChanges, Overlay, TransferState, needed_ids,
};
use stablecoin_core::ports::ledger::Balance;
use stablecoin_core::ports::store::{Batch, CommitReceipt, OutboxEvent, StoreError};
use std::collections::HashMap;

/// One commit, in `Store::commit`'s steps: the unchanged checks, the ledger rows locked
/// and the batch's accounts created (so an account error comes before any write), the
/// idempotency record, the puts, the ledger transfers and their writes, the outbox.
pub(super) async fn commit_in(
    conn: &mut PgConnection,
    batch: &Batch,
) -> Result<CommitReceipt, Attempt> {
    check_unchanged(conn, batch).await?;
    let known = lock_ledger_rows(conn, batch).await?;
    let mut overlay = Overlay::new(&known);
    for account in &batch.accounts {
        overlay.create_account(account)?;
    }
    insert_idempotency(conn, batch).await?;
    write_puts(conn, &batch.puts).await?;
    for transfer in &batch.ledger {
        overlay.transfer(transfer)?;
    }
    write_ledger(conn, &overlay.into_changes()).await?;
    let outbox_seqs = append_outbox(conn, &batch.outbox).await?;
    Ok(CommitReceipt { outbox_seqs })
}

/// Step 0: the records the batch relied on are still at their version, and
/// share-locked so a concurrent update waits for this commit (READ COMMITTED would not
/// keep them still). One statement, the rows locked in (kind, id) order; then each check
/// in the batch's order, so the first stale one reports.
async fn check_unchanged(conn: &mut PgConnection, batch: &Batch) -> Result<(), Attempt> {
    if batch.unchanged.is_empty() {
        return Ok(());
    }
    let (kinds, ids): (Vec<_>, Vec<_>) = batch
        .unchanged
        .iter()
        .map(|c| (c.kind.clone(), c.id.clone()))
        .unzip();
    let rows = sqlx::query(
        "SELECT kind, id, version FROM records \
         WHERE (kind, id) IN (SELECT * FROM UNNEST($1::text[], $2::text[])) \
         ORDER BY kind, id FOR SHARE",
    )
    .bind(&kinds)
    .bind(&ids)
    .fetch_all(&mut *conn)
    .await
    .map_err(classify)?;
    let mut versions = HashMap::new();
    for row in &rows {
        let kind: String = row.try_get(0).map_err(backend)?;
        let id: String = row.try_get(1).map_err(backend)?;
        let version: i64 = row.try_get(2).map_err(backend)?;
        versions.insert((kind, id), u64::try_from(version).ok());
    }
    for check in &batch.unchanged {
        let current = versions
            .get(&(check.kind.clone(), check.id.clone()))
            .copied()
            .flatten();
        check.verify(current).map_err(Attempt::Done)?;
    }
    Ok(())
}

/// Step 1: locks the accounts the ledger rules may read (`FOR UPDATE`, in id order) and
/// loads the transfers, every id the rules may read present in the result.
async fn lock_ledger_rows(conn: &mut PgConnection, batch: &Batch) -> Result<Known, Attempt> {
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
        lock_accounts(conn, &account_ids, &mut known).await?;
    }
    if !transfer_ids.is_empty() {
        load_transfers(conn, &transfer_ids, &mut known).await?;
    }
    Ok(known)
}

async fn lock_accounts(
    conn: &mut PgConnection,
    account_ids: &[String],
    known: &mut Known,
) -> Result<(), Attempt> {
    let rows = sqlx::query(
        "SELECT id, allow_negative, debits_posted, credits_posted, debits_pending, \
         credits_pending FROM ledger_accounts WHERE id = ANY($1) \
         ORDER BY id COLLATE \"C\" FOR UPDATE",
    )
    .bind(account_ids)
    .fetch_all(&mut *conn)
    .await
    .map_err(classify)?;
    for id in account_ids {
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
    Ok(())
}

async fn load_transfers(
    conn: &mut PgConnection,
    transfer_ids: &[String],
    known: &mut Known,
) -> Result<(), Attempt> {
    let rows = sqlx::query(
        "SELECT id, debit, credit, amount, phase, pending_id, resolved \
         FROM ledger_transfers WHERE id = ANY($1)",
    )
    .bind(transfer_ids)
    .fetch_all(&mut *conn)
    .await
    .map_err(classify)?;
    for id in transfer_ids {
        known.transfers.insert(id.clone(), None);
    }
    for row in rows {
        let t = transfer_from_row(&row).map_err(backend)?;
        known.transfers.insert(t.transfer.id.clone(), Some(t));
    }
    Ok(())
}

/// Step 2: the idempotency record; a key already recorded is `IdempotencyExists`.
async fn insert_idempotency(conn: &mut PgConnection, batch: &Batch) -> Result<(), Attempt> {
    let Some(idem) = &batch.idempotency else {
        return Ok(());
    };
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
    Ok(())
}

/// Step 3: the ledger's final states, a statement per kind of change.
async fn write_ledger(conn: &mut PgConnection, changes: &LedgerChanges) -> Result<(), Attempt> {
    let (created, updated): (Vec<_>, Vec<_>) = changes.accounts.iter().partition(|a| a.created);
    if !created.is_empty() {
        insert_accounts(conn, &created).await?;
    }
    if !updated.is_empty() {
        update_accounts(conn, &updated).await?;
    }
    if !changes.new_transfers.is_empty() {
        insert_transfers(conn, &changes.new_transfers).await?;
    }
    if !changes.resolved.is_empty() {
        sqlx::query("UPDATE ledger_transfers SET resolved = true WHERE id = ANY($1)")
            .bind(&changes.resolved)
            .execute(&mut *conn)
            .await
            .map_err(classify)?;
    }
    Ok(())
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
    Ok(())
}

/// Step 4, last: the outbox events with their sequence numbers. The counter row stays
/// locked until COMMIT, so sequence order is commit order.
async fn append_outbox(conn: &mut PgConnection, ev: &[OutboxEvent]) -> Result<Vec<u64>, Attempt> {
    if ev.is_empty() {
        return Ok(Vec::new());
    }
    let n = ev.len() as i64;
    let last: i64 = sqlx::query_scalar(
        "UPDATE outbox_counter SET last_seq = last_seq + $1 WHERE id = 1 \
         RETURNING last_seq",
    )
    .bind(n)
    .fetch_one(&mut *conn)
    .await
    .map_err(classify)?;
    let seqs: Vec<i64> = (last - n + 1..=last).collect();
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
    Ok(seqs.into_iter().map(|s| s as u64).collect())
}
