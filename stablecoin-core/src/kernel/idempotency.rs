//! Idempotent requests, once for every product (issue #45).
//!
//! Each product stores the first result of a keyed request in the same batch as the
//! change (`Batch::idempotency`) and answers a later request with the same key from it.
//! The wallet engine, escrow's deal creation and checkout's session creation each had
//! their own copy of the fingerprint, the look-up and the commit race; they now all go
//! through [`Kernel::idempotent`] (or its two halves, [`Kernel::idempotency_lookup`] and
//! [`Kernel::commit_keyed`], for a product that retries its commit in a loop). What
//! stays a product's own: which requests take a key, the error type it answers in (each
//! implements `From<IdempotencyError>`), and, for checkout, the namespace its keys are
//! filed under.

use super::Kernel;
use crate::domain::consent::hex;
use crate::error::{CoreError, CoreResult};
use crate::ports::store::{Batch, IdempotencyRecord, Store, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use std::future::Future;

/// The reason every product gives for a malformed key (API-CONVENTIONS).
pub const INVALID_KEY_REASON: &str = "must be 1 to 255 printable ASCII characters";

/// 1-255 printable ASCII characters (API-CONVENTIONS).
pub fn validate_idempotency_key(key: &str) -> CoreResult<()> {
    if !key_is_valid(key) {
        return Err(CoreError::InvalidIdempotencyKey {
            reason: INVALID_KEY_REASON.into(),
        });
    }
    Ok(())
}

fn key_is_valid(key: &str) -> bool {
    !key.is_empty() && key.len() <= 255 && key.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// The fingerprint of a request: hex SHA-256 of `operation`, a line feed and `body`. A
/// key replays only for the request with the same fingerprint. The products hash their
/// typed request ([`request_hash`]); the HTTP layer hashes method and path as the
/// operation and the canonical body.
pub fn fingerprint(operation: &str, body: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(operation.as_bytes());
    h.update(b"\n");
    h.update(body);
    hex(&h.finalize())
}

/// The fingerprint of a typed request under `operation` (its scope: `escrow.create`,
/// `checkout.create`, a wallet operation and its chain). Typed, so `"10"` and `"10.00"`
/// are the same request once parsed.
pub fn request_hash(operation: &str, request: &impl Serialize) -> Result<String, IdempotencyError> {
    let body = serde_json::to_vec(request)
        .map_err(|e| IdempotencyError::Encode(format!("encode request: {e}")))?;
    Ok(fingerprint(operation, &body))
}

tokio::task_local! {
    /// Set by a keyed call that answered a replay (see [`observe_replay`]).
    static REPLAYED: std::cell::Cell<bool>;
}

/// Runs `f` and tells whether a keyed call inside it answered with the first result of
/// its key (a replay) rather than running anew: what an HTTP layer reports as
/// `Idempotent-Replayed` without storing a response record of its own next to the
/// product's (one commit per keyed request instead of two).
pub async fn observe_replay<F: Future>(f: F) -> (F::Output, bool) {
    REPLAYED
        .scope(std::cell::Cell::new(false), async move {
            let out = f.await;
            (out, REPLAYED.with(std::cell::Cell::get))
        })
        .await
}

/// Why a keyed request was not run, or its result not stored. Each product answers it
/// in its own error (`From<IdempotencyError>`), with the same codes everywhere.
#[derive(Debug)]
pub enum IdempotencyError {
    /// The key is not 1 to 255 printable ASCII characters: INVALID_IDEMPOTENCY_KEY
    /// (with [`INVALID_KEY_REASON`]).
    InvalidKey,
    /// The key was first used for another request: IDEMPOTENCY_KEY_REUSED.
    Reused,
    /// A concurrent request with the key committed first and its record cannot be read
    /// back: IDEMPOTENCY_KEY_IN_USE.
    InUse,
    /// The request or its result could not be encoded as JSON (a product bug, never the
    /// caller's input).
    Encode(String),
    /// The store failed, or the commit lost a race for a record (as the store said it:
    /// the product maps it, and may retry on a conflict).
    Store(StoreError),
}

impl From<StoreError> for IdempotencyError {
    fn from(e: StoreError) -> Self {
        IdempotencyError::Store(e)
    }
}

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

/// Who asks, with which key, for what: the first argument of [`Kernel::idempotent`].
#[derive(Clone, Copy, Debug)]
pub struct KeyedRequest<'a> {
    /// The tenant the record belongs to.
    pub tenant: &'a str,
    /// The client's `Idempotency-Key`; `None` runs the request unkeyed.
    pub key: Option<&'a str>,
    /// Put before the key in the record (`""`: the bare key). Checkout files its keys
    /// per business and mode (`checkout:{business}:{mode}:`), so two businesses of one
    /// tenant may use the same key.
    pub namespace: &'a str,
    /// The request's scope in its fingerprint (`escrow.create`, ...).
    pub operation: &'a str,
}

impl<'a> KeyedRequest<'a> {
    /// A request keyed (or not) under the bare key.
    pub fn new(tenant: &'a str, key: Option<&'a str>, operation: &'a str) -> Self {
        KeyedRequest {
            tenant,
            key,
            namespace: "",
            operation,
        }
    }
}

/// A request that runs: whether and where its result is to be recorded.
#[derive(Clone, Debug)]
pub struct Keyed {
    /// (tenant, record key, fingerprint); `None` for an unkeyed request.
    record: Option<(String, String, String)>,
}

/// The answer of [`Kernel::idempotency_lookup`].
#[derive(Debug)]
pub enum Lookup<T> {
    /// The first result of the same request: answer it, run nothing.
    Replay(T),
    /// Run the request, then commit its batch through [`Kernel::commit_keyed`].
    Run(Keyed),
}

impl Kernel {
    /// Runs `decide` under an idempotency key: a recorded key with the same request
    /// replays its result without running anything; with another request it is
    /// `IDEMPOTENCY_KEY_REUSED`. `decide` returns the batch to commit and the result;
    /// the result is stored in that same batch. A concurrent duplicate that loses the
    /// commit race replays the winner's result. Without a key, `decide`'s batch is
    /// simply committed.
    pub async fn idempotent<T, E, F, Fut>(
        &self,
        at: KeyedRequest<'_>,
        request: &impl Serialize,
        decide: F,
    ) -> Result<T, E>
    where
        T: Serialize + DeserializeOwned,
        E: From<IdempotencyError>,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(Batch, T), E>>,
    {
        let keyed = match self.idempotency_lookup(at, request).await? {
            Lookup::Replay(found) => return Ok(found),
            Lookup::Run(keyed) => keyed,
        };
        let (batch, result) = decide().await?;
        Ok(self.commit_keyed(&keyed, batch, result).await?)
    }

    /// The first half of [`Kernel::idempotent`]: checks the key, fingerprints the
    /// request and reads the record.
    pub async fn idempotency_lookup<T: DeserializeOwned>(
        &self,
        at: KeyedRequest<'_>,
        request: &impl Serialize,
    ) -> Result<Lookup<T>, IdempotencyError> {
        let Some(key) = at.key else {
            return Ok(Lookup::Run(Keyed { record: None }));
        };
        if !key_is_valid(key) {
            return Err(IdempotencyError::InvalidKey);
        }
        let hash = request_hash(at.operation, request)?;
        let key = format!("{}{key}", at.namespace);
        if let Some(found) = self.replay(at.tenant, &key, &hash).await? {
            return Ok(Lookup::Replay(found));
        }
        Ok(Lookup::Run(Keyed {
            record: Some((at.tenant.to_string(), key, hash)),
        }))
    }

    /// The second half of [`Kernel::idempotent`]: commits `batch` with `result` recorded
    /// under the key. When a concurrent request with the key committed first, its result
    /// is the answer. Any other store error comes back as the store said it, so a
    /// product can retry a lost race (escrow draws a fresh id on a clash).
    pub async fn commit_keyed<T: Serialize + DeserializeOwned>(
        &self,
        keyed: &Keyed,
        mut batch: Batch,
        result: T,
    ) -> Result<T, IdempotencyError> {
        if let Some((tenant, key, hash)) = &keyed.record {
            batch.idempotency = Some(IdempotencyRecord {
                tenant: tenant.clone(),
                key: key.clone(),
                request_hash: hash.clone(),
                response: serde_json::to_value(&result)
                    .map_err(|e| IdempotencyError::Encode(format!("encode response: {e}")))?,
                created_at: self.now(),
            });
        }
        match self.commit(batch).await {
            Ok(_) => Ok(result),
            Err(StoreError::IdempotencyExists { .. }) => match &keyed.record {
                Some((tenant, key, hash)) => self
                    .replay(tenant, key, hash)
                    .await?
                    .ok_or(IdempotencyError::InUse),
                None => Err(IdempotencyError::InUse),
            },
            Err(e) => Err(IdempotencyError::Store(e)),
        }
    }

    /// The recorded first result of the same request, if any (and the replay flag of
    /// [`observe_replay`] set).
    async fn replay<T: DeserializeOwned>(
        &self,
        tenant: &str,
        key: &str,
        hash: &str,
    ) -> Result<Option<T>, IdempotencyError> {
        match recorded(&*self.ports().store, tenant, key, hash).await? {
            Recorded::Nothing => Ok(None),
            Recorded::Other => Err(IdempotencyError::Reused),
            Recorded::Same(found) => {
                // Outside `observe_replay` there is no flag to set.
                let _ = REPLAYED.try_with(|r| r.set(true));
                Ok(Some(found))
            }
        }
    }
}

#[cfg(all(test, feature = "memory"))]
mod tests {
    use super::*;
    use crate::domain::time::Timestamp;
    use crate::kernel::Ports;
    use crate::memory::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn kernel() -> Kernel {
        let store = Arc::new(MemoryStore::new());
        Kernel::new(
            Ports {
                store: store.clone(),
                ledger: store,
                signer: Arc::new(LocalSigner::from_seed([9; 32])),
                notifier: Arc::new(MemoryNotifier::new()),
                rates: Arc::new(FixedRates::demo()),
                payouts: Arc::new(MemoryPayouts::new()),
                clock: Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600))),
                entropy: Arc::new(SeededEntropy::new(7)),
            },
            Vec::new(),
        )
    }

    /// One keyed call: `decide` counts its runs and answers a fresh id.
    async fn call(
        k: &Kernel,
        at: KeyedRequest<'_>,
        request: &str,
        runs: &AtomicUsize,
    ) -> Result<String, IdempotencyError> {
        k.idempotent(at, &request, || async {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, IdempotencyError>((Batch::default(), k.new_id("t")))
        })
        .await
    }

    /// The same key and request replays the first result without running; another
    /// request is refused; another namespace is another key.
    #[tokio::test]
    async fn a_key_runs_its_request_once() {
        let k = kernel();
        let runs = AtomicUsize::new(0);
        let at = KeyedRequest::new("ten_a", Some("k1"), "op");
        let first = call(&k, at, "req", &runs).await.unwrap();
        let (again, replayed) = observe_replay(call(&k, at, "req", &runs)).await;
        assert_eq!((again.unwrap(), replayed), (first.clone(), true));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let other = call(&k, at, "another", &runs).await;
        assert!(matches!(other, Err(IdempotencyError::Reused)));
        let elsewhere = KeyedRequest {
            namespace: "biz_b:",
            ..at
        };
        assert_ne!(call(&k, elsewhere, "req", &runs).await.unwrap(), first);
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    /// Two requests with one key that both looked before either committed: the loser's
    /// commit answers the winner's result.
    #[tokio::test]
    async fn the_loser_of_a_commit_race_replays_the_winner() {
        let k = kernel();
        let at = KeyedRequest::new("ten_a", Some("k1"), "op");
        let Lookup::Run(a) = k.idempotency_lookup::<String>(at, &"req").await.unwrap() else {
            panic!("nothing is recorded yet");
        };
        let Lookup::Run(b) = k.idempotency_lookup::<String>(at, &"req").await.unwrap() else {
            panic!("nothing is recorded yet");
        };
        let won = k.commit_keyed(&a, Batch::default(), "first".to_string());
        assert_eq!(won.await.unwrap(), "first");
        let lost = k.commit_keyed(&b, Batch::default(), "second".to_string());
        assert_eq!(lost.await.unwrap(), "first");
    }

    /// A malformed key runs nothing; no key runs every time.
    #[tokio::test]
    async fn a_bad_key_is_refused_and_no_key_always_runs() {
        let k = kernel();
        let runs = AtomicUsize::new(0);
        let bad = KeyedRequest::new("ten_a", Some(""), "op");
        let refused = call(&k, bad, "req", &runs).await;
        assert!(matches!(refused, Err(IdempotencyError::InvalidKey)));
        let none = KeyedRequest::new("ten_a", None, "op");
        call(&k, none, "req", &runs).await.unwrap();
        call(&k, none, "req", &runs).await.unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }
}
