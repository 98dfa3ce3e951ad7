//! One commit: a READ COMMITTED transaction in the order `Store::commit` documents (see
//! the module doc of `postgres`).

use super::backend;
use super::ledger_rows;
use super::puts::write_puts;
use super::{Attempt, classify};
use sqlx::Row;
use sqlx::postgres::PgConnection;
use stablecoin_core::domain::ledger::Overlay;
use stablecoin_core::ports::store::{
    Batch, CommitReceipt, IdempotencyRecord, OutboxEvent, StoreError,
};
use std::collections::HashMap;

/// One commit, in `Store::commit`'s steps: the unchanged checks, the ledger rows read
/// (`ledger_rows.rs`) and the batch's accounts created (so an account error comes before
/// any write), the idempotency record, the puts, the accounts whose balance is checked
/// locked (last, so they are held briefly), the ledger transfers and their writes, the
/// outbox. Also answers whether it appended ledger deltas. `idempotency`: the batch's
/// idempotency records (a merged group's, `group.rs`, has one per batch that had one;
/// `batch.idempotency` is not read).
pub(super) async fn commit_in(
    conn: &mut PgConnection,
    batch: &Batch,
    idempotency: &[&IdempotencyRecord],
) -> Result<(CommitReceipt, bool), Attempt> {
    check_unchanged(conn, batch).await?;
    let mut loaded = ledger_rows::read(conn, batch).await?;
    // The accounts' checks on the rows as read: an account's flags never change, and an
    // account created meanwhile by another commit makes this one's insert a unique
    // violation, retried.
    let mut accounts = Overlay::new(&loaded.known);
    for account in &batch.accounts {
        accounts.create_account(account)?;
    }
    insert_idempotency(conn, idempotency).await?;
    write_puts(conn, &batch.puts).await?;
    ledger_rows::lock_checked(conn, batch, &mut loaded).await?;
    let mut overlay = Overlay::new(&loaded.known);
    for account in &batch.accounts {
        overlay.create_account(account)?;
    }
    for transfer in &batch.ledger {
        overlay.transfer(transfer)?;
    }
    let deltas = ledger_rows::write(conn, &loaded, &overlay.into_changes()).await?;
    let outbox_seqs = append_outbox(conn, &batch.outbox).await?;
    Ok((CommitReceipt { outbox_seqs }, deltas))
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

/// Step 2: the idempotency records, in one statement; a key already recorded is
/// `IdempotencyExists` (the first such, in order).
async fn insert_idempotency(
    conn: &mut PgConnection,
    records: &[&IdempotencyRecord],
) -> Result<(), Attempt> {
    if records.is_empty() {
        return Ok(());
    }
    let rows = sqlx::query(
        "INSERT INTO idempotency (tenant, key, request_hash, response, created_at) \
         SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[]) \
         ON CONFLICT DO NOTHING RETURNING tenant, key",
    )
    .bind(records.iter().map(|i| i.tenant.clone()).collect::<Vec<_>>())
    .bind(records.iter().map(|i| i.key.clone()).collect::<Vec<_>>())
    .bind(
        records
            .iter()
            .map(|i| i.request_hash.clone())
            .collect::<Vec<_>>(),
    )
    .bind(
        records
            .iter()
            .map(|i| i.response.to_string())
            .collect::<Vec<_>>(),
    )
    .bind(records.iter().map(|i| i.created_at.0).collect::<Vec<_>>())
    .fetch_all(&mut *conn)
    .await
    .map_err(classify)?;
    if rows.len() == records.len() {
        return Ok(());
    }
    let mut inserted = std::collections::HashSet::new();
    for row in &rows {
        let tenant: String = row.try_get(0).map_err(backend)?;
        let key: String = row.try_get(1).map_err(backend)?;
        inserted.insert((tenant, key));
    }
    let taken = records
        .iter()
        .find(|i| !inserted.contains(&(i.tenant.clone(), i.key.clone())))
        .unwrap_or(&records[0]);
    Err(Attempt::Done(StoreError::IdempotencyExists {
        key: taken.key.clone(),
    }))
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
