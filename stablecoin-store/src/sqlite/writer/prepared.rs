//! A batch as the caller hands it to the writer, its JSON already text.

use super::super::body::BodyCell;
use super::super::record_keys;
use crate::codec::keys_to_db;
use stablecoin_core::ports::ledger::{LedgerAccount, LedgerTransfer};
use stablecoin_core::ports::store::{Batch, Unchanged};

/// A batch made ready for the writer by its caller: every JSON value is already text,
/// so the writer thread (the one serial part of the store) only binds strings, and the
/// batch's JSON trees are freed on the caller's thread, not the writer's.
pub(crate) struct Prepared {
    pub(super) background: bool,
    pub(super) unchanged: Vec<Unchanged>,
    pub(super) accounts: Vec<LedgerAccount>,
    pub(super) ledger: Vec<LedgerTransfer>,
    pub(super) idempotency: Option<PreparedIdempotency>,
    pub(super) puts: Vec<PreparedPut>,
    pub(super) outbox: Vec<PreparedOutbox>,
}

pub(super) struct PreparedIdempotency {
    pub(super) tenant: String,
    pub(super) key: String,
    pub(super) request_hash: String,
    pub(super) response: String,
    pub(super) created_at: i64,
}

pub(super) struct PreparedPut {
    pub(super) kind: String,
    pub(super) id: String,
    pub(super) tenant: Option<String>,
    pub(super) created_at: i64,
    pub(super) status: Option<String>,
    pub(super) subkind: Option<String>,
    pub(super) due_at: Option<i64>,
    pub(super) lane: u8,
    pub(super) expected_version: Option<u64>,
    /// The keys to check, as given.
    pub(super) unique_keys: Vec<String>,
    /// The keys the record keeps (deduplicated), and their stored JSON form.
    pub(super) keys: Vec<String>,
    pub(super) keys_json: String,
    /// Compact when the format takes it (`sqlite::body`), encoded here on the caller's
    /// thread, not the writer's.
    pub(super) body: BodyCell,
}

pub(super) struct PreparedOutbox {
    pub(super) id: String,
    pub(super) tenant: String,
    pub(super) event_type: String,
    pub(super) occurred_at: i64,
    pub(super) payload: String,
}

impl Prepared {
    pub(crate) fn new(batch: Batch) -> Self {
        Prepared {
            background: batch.background,
            unchanged: batch.unchanged,
            idempotency: batch.idempotency.map(|i| PreparedIdempotency {
                response: i.response.to_string(),
                tenant: i.tenant,
                key: i.key,
                request_hash: i.request_hash,
                created_at: i.created_at.0,
            }),
            puts: batch
                .puts
                .into_iter()
                .map(|p| {
                    let keys = record_keys(&p.record);
                    let r = p.record;
                    PreparedPut {
                        keys_json: keys_to_db(&keys),
                        keys,
                        body: BodyCell(r.body.into_stored()),
                        kind: r.kind,
                        id: r.id,
                        tenant: r.tenant,
                        created_at: r.created_at.0,
                        status: r.status,
                        subkind: r.subkind,
                        due_at: r.due_at.map(|t| t.0),
                        lane: r.lane,
                        expected_version: p.expected_version,
                        unique_keys: r.unique_keys,
                    }
                })
                .collect(),
            outbox: batch
                .outbox
                .into_iter()
                .map(|e| PreparedOutbox {
                    payload: e.payload.to_string(),
                    id: e.id,
                    tenant: e.tenant,
                    event_type: e.event_type,
                    occurred_at: e.occurred_at.0,
                })
                .collect(),
            accounts: batch.accounts,
            ledger: batch.ledger,
        }
    }
}
