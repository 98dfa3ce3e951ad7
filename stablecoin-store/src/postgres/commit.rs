//! One commit: a READ COMMITTED transaction in the order `Store::commit` documents (see
//! the module doc of `postgres`).

use super::backend;
use super::rows::{balance_from_row, transfer_from_row};
use super::{Attempt, classify};
use crate::codec::{dedup_keys, i64_to_db, keys_to_db, phase_to_db, sort_dedup};
use sqlx::Row;
use sqlx::postgres::PgConnection;
use stablecoin_core::domain::ledger::{
    AccountChange, AccountState, Known, LedgerChanges, Overlay, TransferState, needed_ids,
};
use stablecoin_core::ports::ledger::Balance;
use stablecoin_core::ports::store::{Batch, CommitReceipt, OutboxEvent, Put, StoreError};
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
    for put in &batch.puts {
        put_record(conn, put).await?;
    }
    for transfer in &batch.ledger {
        overlay.transfer(transfer)?;
    }
    write_ledger(conn, &overlay.into_changes()).await?;
    let outbox_seqs = append_outbox(conn, &batch.outbox).await?;
    Ok(CommitReceipt { outbox_seqs })
}

/// Step 0: the records the batch relied on are still at their version, and
/// share-locked so a concurrent update waits for this commit (READ COMMITTED would not
/// keep them still).
async fn check_unchanged(conn: &mut PgConnection, batch: &Batch) -> Result<(), Attempt> {
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

/// One put: version check and write (releasing any claim), then the unique keys.
async fn put_record(conn: &mut PgConnection, put: &Put) -> Result<(), Attempt> {
    let rec = &put.record;
    let keys = dedup_keys(&rec.unique_keys);
    let lane = i16::from(rec.lane);
    let query = match put.expected_version {
        None => sqlx::query(
            "INSERT INTO records (kind, id, tenant, version, created_at, status, due_at, \
               lease_owner, lease_until, unique_keys, body, subkind, lane) \
             VALUES ($1, $2, $3, 1, $4, $5, $6, NULL, NULL, $7, $8, $9, $10) \
             ON CONFLICT (kind, id) DO NOTHING",
        )
        .bind(&rec.kind)
        .bind(&rec.id)
        .bind(&rec.tenant)
        .bind(rec.created_at.0)
        .bind(&rec.status)
        .bind(rec.due_at.map(|t| t.0))
        .bind(keys_to_db(&keys))
        .bind(rec.body.as_str())
        .bind(&rec.subkind)
        .bind(lane),
        // Only what a record's life changes: its tenant, creation time and subkind are
        // fixed at insert (`Store::commit`), as in the SQLite store.
        Some(v) => sqlx::query(
            "UPDATE records SET version = version + 1, status = $3, due_at = $4, \
               lane = $5, lease_owner = NULL, lease_until = NULL, unique_keys = $6, \
               body = $7 \
             WHERE kind = $1 AND id = $2 AND version = $8",
        )
        .bind(&rec.kind)
        .bind(&rec.id)
        .bind(&rec.status)
        .bind(rec.due_at.map(|t| t.0))
        .bind(lane)
        .bind(keys_to_db(&keys))
        .bind(rec.body.as_str())
        // A version beyond i64 cannot be stored, so it can never match: -1 never does.
        .bind(i64::try_from(v).unwrap_or(-1)),
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
