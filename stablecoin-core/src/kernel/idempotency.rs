//! Reading an idempotency record, once for every product (issue #45).
//!
//! Each product stores the first result of a keyed request in the same batch as the
//! change (`Batch::idempotency`) and answers a later request with the same key from it.
//! The read was written three times (the wallet engine, escrow's deal creation,
//! checkout's session creation); [`recorded`] is the one copy. What a product does with
//! the answer (its own error for another request, its replay flag) stays its own.

use crate::ports::store::{Store, StoreError};
use serde::de::DeserializeOwned;

/// What the store holds under a tenant's idempotency key, against this request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded<T> {
    /// No record: the request runs.
    Nothing,
    /// The first result of the same request: answer it again.
    Same(T),
    /// The key was first used for another request (its fingerprint differs):
    /// `IDEMPOTENCY_KEY_REUSED`.
    Other,
}

/// The record under `tenant`'s `key`, compared with this request's fingerprint `hash`
/// and decoded as the product's response type. A record that does not decode is a store
/// fault (`StoreError::Backend`), never a fresh run: it would run the request twice.
pub async fn recorded<T: DeserializeOwned>(
    store: &dyn Store,
    tenant: &str,
    key: &str,
    hash: &str,
) -> Result<Recorded<T>, StoreError> {
    let Some(rec) = store.idempotency(tenant, key).await? else {
        return Ok(Recorded::Nothing);
    };
    if rec.request_hash != hash {
        return Ok(Recorded::Other);
    }
    serde_json::from_value(rec.response)
        .map(Recorded::Same)
        .map_err(|e| StoreError::Backend(format!("decode stored response: {e}")))
}
