//! The shared kernel: what the three products (wallets in [`crate::engine`], escrow and
//! checkout in their own crates) have in common, written once (KERNEL.md §2).
//!
//! - [`Kernel`] (here): the ports and the rail set every product runs on, with the one
//!   clock read, id draw and commit. The wallet engine holds one; escrow and checkout
//!   are built on one (`engine.kernel()`), so all three share its ports, rails and
//!   caches instead of each copying them;
//! - [`auth`]: tenants, API keys and the caller a key establishes: every product's
//!   identity;
//! - [`staff`]: staff accounts, the identity a host proved, and the audit entry a staff
//!   decision commits in its own batch;
//! - [`screening`]: the sanctions screening gate of every outbound payment;
//! - [`quarantine`]: inbound screening: deposits from flagged senders held apart until
//!   staff release or return them;
//! - [`error`]: the classes every product error falls into, so the server maps classes,
//!   not each product's variants, to HTTP;
//! - [`runtime`]: every product's background work behind one [`Worker`] trait, run by
//!   one [`Runtime`];
//! - [`idempotency`]: keys, request fingerprints and the one idempotent path of every
//!   product ([`Kernel::idempotent`]);
//! - [`lease`]: singleton jobs (the chain scan, reconciliation, retention) under a
//!   lease in the shared store, so of N nodes on one database one runs each;
//! - [`inbound`]: one scan of each rail page feeding every product, over one address
//!   namespace, with each product's position kept apart;
//! - [`phone_pay`]: what checkout asks of the wallets to take a payment from a phone
//!   wallet (the wallet engine implements it), so checkout need not name the engine;
//! - [`accounts`]: the ledger's account names every product posts to. Defined beside the
//!   ports (`ports::accounts`), because adapters name accounts too (a swap venue's), and
//!   re-exported here as the products' vocabulary.

pub mod attempts;
pub mod auth;
pub mod destination;
pub mod error;
pub mod idempotency;
pub mod inbound;
pub mod lease;
pub mod phone_pay;
pub mod quarantine;
pub(crate) mod read_cache;
pub mod runtime;
pub mod screening;
pub mod spending;
pub mod sponsorship;
pub mod staff;
pub mod stray;

pub use crate::ports::accounts;
pub use auth::{ApiKey, AuthContext, IssuedKey, KeyKind, KeyMode, Tenant};
pub use error::{BudgetRefs, ErrorClass, ProductError};
pub use inbound::{
    InboundError, InboundHandler, InboundOutcome, InboundReport, InboundRouter, address_key,
};
pub use lease::{LeaseRecord, LeaseStatus, Leases, default_node_id};
pub use phone_pay::{
    PaymentCodeCheck, PaymentCodeRequest, PaymentCodeSent, PaymentConsent, PhoneWalletPayments,
};
pub use runtime::{Product, RoundObserver, RoundReport, Runtime, Worker};
pub use screening::{SCREENING_ACTOR, ScreeningFailMode, ScreeningGate};
pub use spending::{ProductSpend, SpendingPolicies};

use crate::domain::ids::{TenantId, make_id};
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Every port a product drives.
#[derive(Clone)]
pub struct Ports {
    /// Records, ledger transfers, outbox and idempotency records: every decision commits
    /// here.
    pub store: Arc<dyn Store>,
    /// Ledger reads; must read the ledger that `store` commits to (the same database).
    pub ledger: Arc<dyn Ledger>,
    /// Key custody for wallet and service addresses.
    pub signer: Arc<dyn Signer>,
    /// Sends SMS: one-time codes, and the "money received" notice to a recipient no tenant
    /// serves.
    pub notifier: Arc<dyn Notifier>,
    /// FX rates for quotes and withdrawals.
    pub rates: Arc<dyn RateSource>,
    /// Mobile-money payouts of withdrawals.
    pub payouts: Arc<dyn PayoutProvider>,
    /// The only source of time the products read.
    pub clock: Arc<dyn Clock>,
    /// The only source of randomness the products read (ids, codes, API keys).
    pub entropy: Arc<dyn Entropy>,
}

/// The kernel: the ports and rails the products share. Cheap to clone (one `Arc`); every
/// clone is the same kernel, caches included.
#[derive(Clone)]
pub struct Kernel {
    inner: Arc<Inner>,
}

struct Inner {
    ports: Ports,
    rails: BTreeMap<RailId, Arc<dyn Rail>>,
    /// Tenant records as last read (`read_cache`): every authenticated request of every
    /// product reads its tenant.
    tenant_cache: read_cache::TtlCache<TenantId, Tenant>,
    /// The sanctions screening gate of every outbound payment ([`screening`]); set
    /// after construction, so escrow and checkout built on a clone see it too.
    screening: std::sync::RwLock<Option<ScreeningGate>>,
}

/// How long a tenant record is reused from memory unless told otherwise (the wallet
/// engine's `EngineConfig::read_cache_ms` default).
pub const DEFAULT_READ_CACHE_MS: i64 = 1_000;

/// Tenants the cache holds before it starts over.
const TENANT_CACHE_ENTRIES: usize = 65_536;

impl Kernel {
    /// A kernel over `ports` and `rails` (one per [`RailId`]; a later duplicate replaces
    /// an earlier one). Does no I/O: rails are asked for readiness when used.
    /// Tenant records are reused from memory for [`DEFAULT_READ_CACHE_MS`].
    pub fn new(ports: Ports, rails: Vec<Arc<dyn Rail>>) -> Kernel {
        Kernel::with_read_cache_ms(ports, rails, DEFAULT_READ_CACHE_MS)
    }

    /// [`Kernel::new`] with tenant records reused from memory for `read_cache_ms`: a
    /// change made by another process shows after at most this long (this process's
    /// own changes at once). 0 reads the store every time.
    pub fn with_read_cache_ms(
        ports: Ports,
        rails: Vec<Arc<dyn Rail>>,
        read_cache_ms: i64,
    ) -> Kernel {
        let rails = rails.into_iter().map(|r| (r.id(), r)).collect();
        Kernel {
            inner: Arc::new(Inner {
                ports,
                rails,
                tenant_cache: read_cache::TtlCache::new(read_cache_ms, TENANT_CACHE_ENTRIES),
                screening: Default::default(),
            }),
        }
    }

    /// The ports (for products and hosts that share the store, clock, ...).
    pub fn ports(&self) -> &Ports {
        &self.inner.ports
    }

    /// The configured rail `id`; `RailNotReady` if it is not configured.
    pub fn rail(&self, id: RailId) -> CoreResult<&Arc<dyn Rail>> {
        self.inner
            .rails
            .get(&id)
            .ok_or_else(|| CoreError::RailNotReady {
                rail: id.name(),
                reason: "rail is not configured".into(),
            })
    }

    /// Every configured rail, in [`RailId`] order.
    pub fn rails(&self) -> impl Iterator<Item = &Arc<dyn Rail>> {
        self.inner.rails.values()
    }

    /// An inbound router over every rail of the kernel, with no product yet: each
    /// product adds itself ([`InboundRouter::with_handler`], or
    /// [`Runtime::products`] for all of them), `page_limit` transfers per scan.
    pub fn inbound_router(&self, page_limit: usize) -> InboundRouter {
        let ports = self.ports();
        InboundRouter::new(
            ports.store.clone(),
            ports.clock.clone(),
            self.rails().cloned().collect(),
            page_limit,
        )
        .with_kernel(self.clone())
    }

    /// The rail set by id, for the wallet engine's own look-ups.
    pub(crate) fn rail_map(&self) -> &BTreeMap<RailId, Arc<dyn Rail>> {
        &self.inner.rails
    }

    fn tenant_cache(&self) -> &read_cache::TtlCache<TenantId, Tenant> {
        &self.inner.tenant_cache
    }

    /// Now, by the one clock every product reads.
    pub fn now(&self) -> Timestamp {
        self.inner.ports.clock.now()
    }

    /// Ten random bytes from the one entropy source: the random half of an id.
    pub fn random10(&self) -> [u8; 10] {
        let mut b = [0u8; 10];
        self.inner.ports.entropy.fill(&mut b);
        b
    }

    /// A fresh `<prefix>_...` id: the time now and ten random bytes.
    pub fn new_id(&self, prefix: &str) -> String {
        make_id(prefix, self.now().millis(), self.random10())
    }

    /// Commits one batch to the store. The store's own error comes back: each product
    /// names it in its own error type (and the wallet engine drops its cached wallets
    /// first).
    pub async fn commit(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        self.inner.ports.store.commit(batch).await
    }
}
