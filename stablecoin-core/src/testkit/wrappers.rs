//! Delegating [`Store`] and [`Rail`] wrappers: a test that needs one method to misbehave
//! (a commit that loses a race, a submit whose answer is lost, a probe that counts calls)
//! overrides that one method and inherits the rest, instead of forwarding every method of
//! the port by hand.
//!
//! [`DelegatingStore`] and [`DelegatingRail`] hold the real adapter (`Arc<dyn Store>`,
//! `Arc<dyn Rail>`) and an override: a value of a type implementing [`StoreOverride`] or
//! [`RailOverride`]. Every method of those traits has a default body that forwards to the
//! inner adapter it is handed, so an override implements only what it changes, and may
//! still call the inner adapter around its own behaviour. `()` overrides nothing (a pure
//! pass-through).
//!
//! ```
//! use async_trait::async_trait;
//! use stablecoin_core::memory::MemoryStore;
//! use stablecoin_core::ports::{Batch, CommitReceipt, Store, StoreError};
//! use stablecoin_core::testkit::{DelegatingStore, StoreOverride};
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! /// Counts commits and fails the second one; every other method is the store's own.
//! #[derive(Default)]
//! struct FailSecondCommit {
//!     commits: AtomicUsize,
//! }
//!
//! #[async_trait]
//! impl StoreOverride for FailSecondCommit {
//!     async fn commit(&self, inner: &dyn Store, batch: Batch) -> Result<CommitReceipt, StoreError> {
//!         if self.commits.fetch_add(1, Ordering::SeqCst) == 1 {
//!             return Err(StoreError::Backend("disk full (injected)".into()));
//!         }
//!         inner.commit(batch).await
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let store = DelegatingStore::new(Arc::new(MemoryStore::new()), FailSecondCommit::default());
//! assert!(store.commit(Batch::default()).await.is_ok());
//! assert!(store.commit(Batch::default()).await.is_err());
//! assert_eq!(store.overrides().commits.load(Ordering::SeqCst), 2);
//! // Reads were not overridden: they reach the memory store.
//! assert!(store.get("widget", "w1").await.unwrap().is_none());
//! # });
//! ```
//!
//! A rail works the same way; the rail suite's port-level "lost response" is one
//! (`submit` forwards, then answers `Unknown`):
//!
//! ```ignore
//! struct LoseAnswers;
//!
//! #[async_trait]
//! impl RailOverride for LoseAnswers {
//!     async fn submit(&self, inner: &dyn Rail, p: &RailPayment) -> Result<Submission, RailError> {
//!         inner.submit(p).await?;
//!         Err(RailError::Unknown { reason: "answer lost".into() })
//!     }
//! }
//!
//! let rail: Arc<dyn Rail> = Arc::new(DelegatingRail::new(sim_rail, LoseAnswers));
//! ```

use crate::domain::money::{Micros, Token};
use crate::domain::time::Timestamp;
use crate::ports::rail::{
    ChainAddress, Rail, RailError, RailId, RailPayment, Readiness, ScanBatch, Submission,
    SubmissionStatus,
};
use crate::ports::signer::KeyPurpose;
use crate::ports::store::{
    Batch, CommitReceipt, IdempotencyRecord, ListPosition, ListQuery, OutboxEvent, Purge, Store,
    StoreError, StoredRecord,
};
use async_trait::async_trait;
use std::sync::Arc;

/// The [`Store`] methods a [`DelegatingStore`] lets a test replace. Each default forwards
/// to `inner`, the wrapped store.
#[async_trait]
pub trait StoreOverride: Send + Sync {
    /// Replaces [`Store::commit`]; the default forwards to `inner`.
    async fn commit(&self, inner: &dyn Store, batch: Batch) -> Result<CommitReceipt, StoreError> {
        inner.commit(batch).await
    }

    /// Replaces [`Store::get`]; the default forwards to `inner`.
    async fn get(
        &self,
        inner: &dyn Store,
        kind: &str,
        id: &str,
    ) -> Result<Option<StoredRecord>, StoreError> {
        inner.get(kind, id).await
    }

    /// Replaces [`Store::get_by_unique`]; the default forwards to `inner`.
    async fn get_by_unique(
        &self,
        inner: &dyn Store,
        key: &str,
    ) -> Result<Option<StoredRecord>, StoreError> {
        inner.get_by_unique(key).await
    }

    /// Replaces [`Store::list`]; the default forwards to `inner`.
    async fn list(
        &self,
        inner: &dyn Store,
        query: &ListQuery,
    ) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        inner.list(query).await
    }

    /// Replaces [`Store::list_before`]; the default forwards to `inner`.
    async fn list_before(
        &self,
        inner: &dyn Store,
        query: &ListQuery,
        before: Option<&ListPosition>,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        inner.list_before(query, before).await
    }

    /// Replaces [`Store::idempotency`]; the default forwards to `inner`.
    async fn idempotency(
        &self,
        inner: &dyn Store,
        tenant: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        inner.idempotency(tenant, key).await
    }

    /// Replaces [`Store::claim_due`]; the default forwards to `inner`.
    #[allow(clippy::too_many_arguments)] // the port's six, and `inner`
    async fn claim_due(
        &self,
        inner: &dyn Store,
        kind: &str,
        lane: u8,
        worker: &str,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        inner
            .claim_due(kind, lane, worker, now, lease_ms, limit)
            .await
    }

    /// Replaces [`Store::outbox_after`]; the default forwards to `inner`.
    async fn outbox_after(
        &self,
        inner: &dyn Store,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEvent)>, StoreError> {
        inner.outbox_after(after_seq, limit).await
    }

    /// Replaces [`Store::purge`]; the default forwards to `inner`.
    async fn purge(&self, inner: &dyn Store, purge: &Purge) -> Result<u64, StoreError> {
        inner.purge(purge).await
    }
}

/// Overrides nothing: a pure pass-through.
impl StoreOverride for () {}

/// A [`Store`] that forwards every call to `inner` through the override `O`.
pub struct DelegatingStore<O> {
    inner: Arc<dyn Store>,
    overrides: O,
}

impl<O: StoreOverride> DelegatingStore<O> {
    /// Wraps `inner`; the calls `overrides` replaces go to it, the others to `inner`.
    pub fn new(inner: Arc<dyn Store>, overrides: O) -> Self {
        DelegatingStore { inner, overrides }
    }

    /// The wrapped store (what the override's `inner` is).
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    /// The override, for a test reading back what it recorded.
    pub fn overrides(&self) -> &O {
        &self.overrides
    }
}

#[async_trait]
impl<O: StoreOverride> Store for DelegatingStore<O> {
    async fn commit(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        self.overrides.commit(&*self.inner, batch).await
    }

    async fn get(&self, kind: &str, id: &str) -> Result<Option<StoredRecord>, StoreError> {
        self.overrides.get(&*self.inner, kind, id).await
    }

    async fn get_by_unique(&self, key: &str) -> Result<Option<StoredRecord>, StoreError> {
        self.overrides.get_by_unique(&*self.inner, key).await
    }

    async fn list(&self, query: &ListQuery) -> Result<(Vec<StoredRecord>, u64), StoreError> {
        self.overrides.list(&*self.inner, query).await
    }

    async fn list_before(
        &self,
        query: &ListQuery,
        before: Option<&ListPosition>,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        self.overrides
            .list_before(&*self.inner, query, before)
            .await
    }

    async fn idempotency(
        &self,
        tenant: &str,
        key: &str,
    ) -> Result<Option<IdempotencyRecord>, StoreError> {
        self.overrides.idempotency(&*self.inner, tenant, key).await
    }

    async fn claim_due(
        &self,
        kind: &str,
        lane: u8,
        worker: &str,
        now: Timestamp,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        self.overrides
            .claim_due(&*self.inner, kind, lane, worker, now, lease_ms, limit)
            .await
    }

    async fn outbox_after(
        &self,
        after_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEvent)>, StoreError> {
        self.overrides
            .outbox_after(&*self.inner, after_seq, limit)
            .await
    }

    async fn purge(&self, purge: &Purge) -> Result<u64, StoreError> {
        self.overrides.purge(&*self.inner, purge).await
    }
}

/// The [`Rail`] methods a [`DelegatingRail`] lets a test replace. Each default forwards
/// to `inner`, the wrapped rail.
#[async_trait]
pub trait RailOverride: Send + Sync {
    /// Replaces `Rail::id`; the default forwards to `inner`.
    fn id(&self, inner: &dyn Rail) -> RailId {
        inner.id()
    }

    /// Replaces `Rail::tokens`; the default forwards to `inner`.
    fn tokens(&self, inner: &dyn Rail) -> Vec<Token> {
        inner.tokens()
    }

    /// Replaces `Rail::monitors_inbound`; the default forwards to `inner`.
    fn monitors_inbound(&self, inner: &dyn Rail) -> bool {
        inner.monitors_inbound()
    }

    /// Replaces `Rail::readiness_is_cheap`; the default forwards to `inner`.
    fn readiness_is_cheap(&self, inner: &dyn Rail) -> bool {
        inner.readiness_is_cheap()
    }

    /// Replaces `Rail::readiness`; the default forwards to `inner`.
    async fn readiness(&self, inner: &dyn Rail) -> Readiness {
        inner.readiness().await
    }

    /// Replaces `Rail::address_for`; the default forwards to `inner`.
    async fn address_for(
        &self,
        inner: &dyn Rail,
        purpose: &KeyPurpose,
    ) -> Result<ChainAddress, RailError> {
        inner.address_for(purpose).await
    }

    /// Replaces `Rail::prepare_wallet`; the default forwards to `inner`.
    async fn prepare_wallet(
        &self,
        inner: &dyn Rail,
        purpose: &KeyPurpose,
    ) -> Result<(), RailError> {
        inner.prepare_wallet(purpose).await
    }

    /// Replaces `Rail::balance`; the default forwards to `inner`.
    async fn balance(
        &self,
        inner: &dyn Rail,
        address: &ChainAddress,
        token: Token,
    ) -> Result<Micros, RailError> {
        inner.balance(address, token).await
    }

    /// Replaces `Rail::submit`; the default forwards to `inner`.
    async fn submit(
        &self,
        inner: &dyn Rail,
        payment: &RailPayment,
    ) -> Result<Submission, RailError> {
        inner.submit(payment).await
    }

    /// Replaces `Rail::status`; the default forwards to `inner`.
    async fn status(
        &self,
        inner: &dyn Rail,
        payment_id: &str,
    ) -> Result<SubmissionStatus, RailError> {
        inner.status(payment_id).await
    }

    /// Replaces `Rail::scan`; the default forwards to `inner`.
    async fn scan(
        &self,
        inner: &dyn Rail,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError> {
        inner.scan(cursor, watched, limit).await
    }
}

/// Overrides nothing: a pure pass-through.
impl RailOverride for () {}

/// A [`Rail`] that forwards every call to `inner` through the override `O`.
pub struct DelegatingRail<O> {
    inner: Arc<dyn Rail>,
    overrides: O,
}

impl<O: RailOverride> DelegatingRail<O> {
    /// Wraps `inner`; the calls `overrides` replaces go to it, the others to `inner`.
    pub fn new(inner: Arc<dyn Rail>, overrides: O) -> Self {
        DelegatingRail { inner, overrides }
    }

    /// The wrapped rail (what the override's `inner` is).
    pub fn inner(&self) -> &Arc<dyn Rail> {
        &self.inner
    }

    /// The override, for a test reading back what it recorded.
    pub fn overrides(&self) -> &O {
        &self.overrides
    }
}

#[async_trait]
impl<O: RailOverride> Rail for DelegatingRail<O> {
    fn id(&self) -> RailId {
        self.overrides.id(&*self.inner)
    }

    fn tokens(&self) -> Vec<Token> {
        self.overrides.tokens(&*self.inner)
    }

    fn monitors_inbound(&self) -> bool {
        self.overrides.monitors_inbound(&*self.inner)
    }

    fn readiness_is_cheap(&self) -> bool {
        self.overrides.readiness_is_cheap(&*self.inner)
    }

    async fn readiness(&self) -> Readiness {
        self.overrides.readiness(&*self.inner).await
    }

    fn rpc_endpoints(&self) -> Vec<crate::ports::RpcEndpointHealth> {
        self.inner.rpc_endpoints()
    }

    async fn address_for(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError> {
        self.overrides.address_for(&*self.inner, purpose).await
    }

    async fn prepare_wallet(&self, purpose: &KeyPurpose) -> Result<(), RailError> {
        self.overrides.prepare_wallet(&*self.inner, purpose).await
    }

    fn prepare_wallet_pays_rent(&self) -> bool {
        self.inner.prepare_wallet_pays_rent()
    }

    async fn balance(&self, address: &ChainAddress, token: Token) -> Result<Micros, RailError> {
        self.overrides.balance(&*self.inner, address, token).await
    }

    async fn submit(&self, payment: &RailPayment) -> Result<Submission, RailError> {
        self.overrides.submit(&*self.inner, payment).await
    }

    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError> {
        self.overrides.status(&*self.inner, payment_id).await
    }

    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError> {
        self.overrides
            .scan(&*self.inner, cursor, watched, limit)
            .await
    }
}
