//! Row decoding, and the error mapping of the store's calls.

use super::backend;
use crate::codec::{keys_from_db, phase_from_db, u64_from_db};
use sqlx::Row;
use sqlx::postgres::PgRow;
use stablecoin_core::domain::ledger::TransferState;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::ledger::{Balance, LedgerTransfer};
use stablecoin_core::ports::store::{JsonText, StoreError, StoredRecord};

pub(super) const RECORD_COLS: &str =
    "kind, id, tenant, version, created_at, status, due_at, unique_keys, body, subkind, lane";

pub(super) fn record_from_row(row: &PgRow) -> Result<StoredRecord, StoreError> {
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
            subkind: row.try_get(9).map_err(s)?,
            due_at: row.try_get::<Option<i64>, _>(6).map_err(s)?.map(Timestamp),
            lane: u8::try_from(row.try_get::<i16, _>(10).map_err(s)?)
                .map_err(|_| "lane out of range".to_string())?,
            unique_keys: keys_from_db(&keys)?,
            body: JsonText::from_stored_text(body),
        })
    };
    decode().map_err(backend)
}

pub(super) fn balance_from_row(row: &PgRow, first: usize) -> Result<Balance, String> {
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

/// A transfer's seven columns from column `first` on: id, debit, credit, amount, phase,
/// pending_id, resolved.
pub(super) fn transfer_from_row(row: &PgRow, first: usize) -> Result<TransferState, String> {
    let s = |e: sqlx::Error| e.to_string();
    let amount: i64 = row.try_get(first + 3).map_err(s)?;
    let phase: String = row.try_get(first + 4).map_err(s)?;
    Ok(TransferState {
        transfer: LedgerTransfer {
            id: row.try_get(first).map_err(s)?,
            debit: row.try_get(first + 1).map_err(s)?,
            credit: row.try_get(first + 2).map_err(s)?,
            amount: Micros(u64_from_db(amount, "amount")?),
            phase: phase_from_db(&phase, row.try_get(first + 5).map_err(s)?)?,
        },
        resolved: row.try_get(first + 6).map_err(s)?,
    })
}
