//! Idempotent mutations of the wallet engine: the kernel's one path
//! ([`Kernel::idempotent`](crate::kernel::Kernel::idempotent)), answered in `CoreError`.
//! The first result for a key is stored in the same batch as the change and replayed
//! for every later request with the same key and parameters.

use super::{Engine, store_err};
use crate::domain::ids::TenantId;
use crate::error::{CoreError, CoreResult};
use crate::kernel::idempotency::{INVALID_KEY_REASON, IdempotencyError, KeyedRequest};
use crate::ports::store::Batch;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;

impl From<IdempotencyError> for CoreError {
    /// The wallet engine's codes: a store error as every engine commit maps it
    /// (`store_err`: a ledger overdraft is INSUFFICIENT_FUNDS, ...).
    fn from(e: IdempotencyError) -> Self {
        match e {
            IdempotencyError::InvalidKey => CoreError::InvalidIdempotencyKey {
                reason: INVALID_KEY_REASON.into(),
            },
            IdempotencyError::Reused => CoreError::IdempotencyKeyReused,
            IdempotencyError::InUse => CoreError::IdempotencyKeyInUse,
            IdempotencyError::Encode(why) => CoreError::Storage(why),
            IdempotencyError::Store(e) => store_err(e),
        }
    }
}

impl Engine {
    /// Runs `decide` under an idempotency key, through the kernel (see
    /// [`Kernel::idempotent`](crate::kernel::Kernel::idempotent)); `operation` is the
    /// request's scope (kind and chain). The wallet cache forgets what the batch changes
    /// before it is committed, as on every engine commit.
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
        let at = KeyedRequest::new(&tenant.0, key, operation);
        self.kernel
            .idempotent(at, request, || async {
                let (batch, result) = decide().await?;
                self.forget_changed_wallets(&batch);
                Ok((batch, result))
            })
            .await
    }
}
