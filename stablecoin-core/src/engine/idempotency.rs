//! Idempotent mutations: the first result for a key is stored in the same batch as the
//! change and replayed for every later request with the same key and parameters.

use super::{Engine, store_err};
use crate::domain::consent::hex;
use crate::domain::ids::TenantId;
use crate::error::{CoreError, CoreResult};
use crate::kernel::idempotency::{Recorded, recorded};
use crate::ports::store::{Batch, IdempotencyRecord, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::future::Future;

/// 1-255 printable ASCII characters (API-CONVENTIONS).
pub fn validate_idempotency_key(key: &str) -> CoreResult<()> {
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(CoreError::InvalidIdempotencyKey {
            reason: "must be 1 to 255 printable ASCII characters".into(),
        });
    }
    Ok(())
}

pub(crate) fn request_hash(operation: &str, request: &impl Serialize) -> CoreResult<String> {
    let body = serde_json::to_vec(request)
        .map_err(|e| CoreError::Storage(format!("encode request: {e}")))?;
    let mut h = Sha256::new();
    h.update(operation.as_bytes());
    h.update(b"\n");
    h.update(&body);
    Ok(hex(&h.finalize()))
}

tokio::task_local! {
    /// Set by a keyed call that answered a replay (see [`observe_replay`]).
    static REPLAYED: std::cell::Cell<bool>;
}

/// Runs `f` and tells whether a keyed engine call inside it answered with the first
/// result of its key (a replay) rather than running anew: what an HTTP layer reports as
/// `Idempotent-Replayed` without storing a response record of its own next to the
/// engine's (one commit per keyed request instead of two).
pub async fn observe_replay<F: Future>(f: F) -> (F::Output, bool) {
    REPLAYED
        .scope(std::cell::Cell::new(false), async move {
            let out = f.await;
            (out, REPLAYED.with(std::cell::Cell::get))
        })
        .await
}

impl Engine {
    /// Runs `decide` under an idempotency key: a recorded key with the same request
    /// replays its result without running anything; with another request it is
    /// `IDEMPOTENCY_KEY_REUSED`. `decide` returns the batch to commit and the result;
    /// the result is stored in that same batch. A concurrent duplicate that loses the
    /// commit race replays the winner's result.
    pub(crate) async fn idempotent<T, F, Fut>(
        &self,
        tenant: &TenantId,
        key: Option<&str>,
        operation: &str,
        request: &impl Serialize,
        decide: F,
    ) -> CoreResult<T>
    where
        T: Serialize + DeserializeOwned,
        F: FnOnce() -> Fut,
        Fut: Future<Output = CoreResult<(Batch, T)>>,
    {
        let Some(key) = key else {
            let (batch, result) = decide().await?;
            self.commit(batch).await?;
            return Ok(result);
        };
        validate_idempotency_key(key)?;
        let hash = request_hash(operation, request)?;
        if let Some(found) = self.replay(tenant, key, &hash).await? {
            return Ok(found);
        }
        let (mut batch, result) = decide().await?;
        batch.idempotency = Some(IdempotencyRecord {
            tenant: tenant.0.clone(),
            key: key.to_string(),
            request_hash: hash.clone(),
            response: serde_json::to_value(&result)
                .map_err(|e| CoreError::Storage(format!("encode response: {e}")))?,
            created_at: self.now(),
        });
        match self.commit_raw(batch).await {
            Ok(_) => Ok(result),
            Err(StoreError::IdempotencyExists { .. }) => self
                .replay(tenant, key, &hash)
                .await?
                .ok_or(CoreError::IdempotencyKeyInUse),
            Err(e) => Err(store_err(e)),
        }
    }

    async fn replay<T: DeserializeOwned>(
        &self,
        tenant: &TenantId,
        key: &str,
        hash: &str,
    ) -> CoreResult<Option<T>> {
        match recorded(&*self.ports().store, &tenant.0, key, hash)
            .await
            .map_err(store_err)?
        {
            Recorded::Nothing => Ok(None),
            Recorded::Other => Err(CoreError::IdempotencyKeyReused),
            Recorded::Same(found) => {
                // Outside `observe_replay` there is no flag to set.
                let _ = REPLAYED.try_with(|r| r.set(true));
                Ok(Some(found))
            }
        }
    }
}
