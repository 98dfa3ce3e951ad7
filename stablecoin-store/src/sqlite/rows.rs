//! Row decoding shared by the readers and the writer, and the error mapping of both.

use crate::codec::{dedup_keys, keys_from_db, phase_from_db, u64_from_db};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Balance, LedgerEntry, LedgerError};
use stablecoin_core::ports::store::{StoreError, StoredRecord};

macro_rules! record_cols {
    () => {
        "kind, id, tenant, version, created_at, status, due_at, unique_keys, body, subkind, lane"
    };
}
pub(crate) use record_cols;

pub(crate) fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(format!("sqlite: {e}"))
}

pub(super) fn ledger_backend(e: impl std::fmt::Display) -> LedgerError {
    LedgerError::Backend(format!("sqlite: {e}"))
}

/// A `records` row selected with `record_cols!()`; the inner `Err` is a corrupt row.
pub(crate) fn record_from_row(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<Result<StoredRecord, String>> {
    let version: i64 = row.get(3)?;
    let keys: String = row.get(7)?;
    let body = super::body::body_of(row.get_ref(8)?);
    let subkind: Option<String> = row.get(9)?;
    let lane: i64 = row.get(10)?;
    let (kind, id, tenant, created_at, status, due_at) = (
        row.get(0)?,
        row.get(1)?,
        row.get(2)?,
        row.get(4)?,
        row.get(5)?,
        row.get::<_, Option<i64>>(6)?,
    );
    Ok((|| {
        let body = body?;
        Ok(StoredRecord {
            kind,
            id,
            tenant,
            version: u64_from_db(version, "version")?,
            created_at: Timestamp(created_at),
            status,
            subkind,
            due_at: due_at.map(Timestamp),
            lane: u8::try_from(lane).map_err(|_| format!("lane {lane} out of range"))?,
            unique_keys: keys_from_db(&keys)?,
            body,
        })
    })())
}

/// A history row; the inner `Err` is a corrupt row.
pub(super) fn entry_from_row(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<Result<LedgerEntry, String>> {
    let amount: i64 = row.get(3)?;
    let phase: String = row.get(4)?;
    let pending_id: Option<String> = row.get(5)?;
    let (transfer_id, debit, credit) = (row.get(0)?, row.get(1)?, row.get(2)?);
    Ok((|| {
        Ok(LedgerEntry {
            transfer_id,
            debit,
            credit,
            amount: Micros(u64_from_db(amount, "amount")?),
            phase: phase_from_db(&phase, pending_id)?,
        })
    })())
}

/// The four sums of a `ledger_accounts` row, in column order.
pub(crate) fn balance_from_sums(sums: [i64; 4]) -> Result<Balance, String> {
    Ok(Balance {
        debits_posted: u64_from_db(sums[0], "debits_posted")?,
        credits_posted: u64_from_db(sums[1], "credits_posted")?,
        debits_pending: u64_from_db(sums[2], "debits_pending")?,
        credits_pending: u64_from_db(sums[3], "credits_pending")?,
    })
}

/// Keys a put keeps, as `MemoryStore` keeps them.
pub(crate) fn record_keys(record: &StoredRecord) -> Vec<String> {
    dedup_keys(&record.unique_keys)
}
