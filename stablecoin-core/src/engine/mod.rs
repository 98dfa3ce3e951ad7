//! The use cases, as async methods on [`Engine`].
//!
//! Each use case validates its input, reads what it needs, asks the domain what to do,
//! and commits ONE `Batch` (records, ledger transfers, outbox events and the idempotency
//! record together). Background work (submitting to rails, confirming, reconciling,
//! scanning) happens in [`Engine::tick`]: a host runs the engine as a
//! [`crate::kernel::Worker`] on the kernel's [`crate::kernel::Runtime`] beside the other
//! products, and tests call it one step at a time.

mod admission;
mod chain_reconciliation;
mod checkout_codes;
mod consent;
mod console_sessions;
mod idempotency;
mod operation_reads;
mod operation_view;
mod operations;
mod payout_reconciliation;
mod payout_resolution;
mod policies;
mod policy_approvers;
mod policy_gate;
mod polls;
mod quarantine;
mod records;
mod retention;
mod sandbox;
mod scanner;
mod sms;
mod sponsorship;
mod staff;
mod statements;
mod stray_returns;
mod submissions;
mod swaps;
mod tenants;
#[cfg(all(test, feature = "memory"))]
mod test_engine;
mod topups;
mod transfers;
mod treasury_credits;
mod wallets;
mod withdrawals;
mod worker;

/// The ports every product drives, defined in the kernel; re-exported where they were.
pub use crate::kernel::Ports;
/// Tenants, API keys and the caller: every product's identity, defined in the kernel.
pub use crate::kernel::auth::{ApiKey, AuthContext, IssuedKey, KeyKind, KeyMode, KeyRole, Tenant};
/// Idempotency keys: the kernel's, re-exported where they were.
pub use crate::kernel::idempotency::{observe_replay, validate_idempotency_key};
/// The staff types, defined in the kernel (escrow records staff decisions too).
pub use crate::kernel::staff::{
    IssuedStaff, STAFF_ACTOR_CLI, STAFF_ADMIN_TOKEN, STAFF_ID_PREFIX, STAFF_LIST_OWNER,
    STAFF_SECRET_PREFIX, StaffAccount, StaffAuditEntry, StaffIdentity,
};
/// Ledger account naming, defined beside the ports (adapters name accounts too).
pub use crate::ports::accounts;
/// The delivery report type lives beside the Notifier port; re-exported where it was.
pub use crate::ports::services::SmsDelivery;
pub use chain_reconciliation::{DriftDirection, DriftLine, ReconciliationReport, drift_micros};
pub use console_sessions::{
    CONSOLE_SESSION_PREFIX, CONSOLE_SESSION_RETENTION_MS, ConsoleSession, ConsoleSubject,
    MAX_CONSOLE_SESSION_TTL_MS,
};
pub use operations::{
    FundRequest, LANE_ADVANCE, LANE_SUBMIT, Operation, OperationView, PayoutLeg, PayoutResolution,
    SendRequest, SendView,
};
pub use payout_resolution::{PayoutDecision, ResolvePayoutRequest};
pub use policies::{AddressBookEntry, DestinationSeen, POLICY_ACTOR, PolicyInput, PolicyUsage};
pub use policy_gate::{PendingRequest, PolicyApproval, PolicyQuery};
pub use quarantine::{QUARANTINE_OPEN, QuarantineTotals};
pub use retention::{PurgeReport, Retention};
pub use sandbox::Sandbox;
pub use scanner::WALLET_PRODUCT;
pub use sms::{SmsPolicy, SmsRecord, SmsStatus};
pub use sponsorship::SponsorBudget;
pub use stray_returns::StrayView;
pub use swaps::{
    DEFAULT_SLIPPAGE_BPS, MAX_SLIPPAGE_BPS, SwapLeg, SwapRequest, min_amount_out, venue_account,
};
pub use tenants::{FeeCeiling, check_fee_address, key_actor};
pub use topups::topup_transfer_id;
pub use treasury_credits::{StaffCreditView, TreasuryCredit};
pub use wallets::{BalanceView, ChallengeView, ProvisionView, RailBalanceView, sum_balances};
pub use withdrawals::WithdrawRequest;
pub use worker::{DepositRecord, DepositStatus, TickReport};

use crate::domain::consent::Wallet;
use crate::domain::ids::WalletId;
use crate::domain::limits::{MinSend, RentQuota};
use crate::domain::money::Token;
use crate::domain::otp::{CodeKey, OtpPolicy};
use crate::error::{CoreError, CoreResult};
use crate::kernel::{Kernel, read_cache};
use crate::ports::record::Versioned;
use crate::ports::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Engine settings; every field has a default.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The EVM chain that `/v1/users/*` wallets operate on (first enabled EVM rail if
    /// `None`).
    pub primary_evm_rail: Option<RailId>,
    /// How long a worker holds a claimed record before another may take it.
    pub claim_lease_ms: i64,
    /// Delay between status polls of a submitted payment.
    pub poll_interval_ms: i64,
    /// The margin after a payment's deadline (`RailPayment::valid_until`) before a
    /// `NotFound` from the rail is trusted as "can no longer land" and the operation is
    /// failed: it covers the skew between this clock and the chain's block timestamps.
    /// Never a timer on its own: a payment without a deadline is never failed on
    /// `NotFound`.
    pub unknown_grace_ms: i64,
    /// How long after its first submission a payment may still be included on chain
    /// (its `valid_until`, enforced by every rail). Also how long a payment whose fate is
    /// unknown can stay SUBMISSION_UNKNOWN before the rail's `NotFound` can fail it.
    pub payment_validity_ms: i64,
    /// The first wait before a withdrawal's failed refund is tried again; each further
    /// failure doubles it, up to `refund_retry_max_ms`.
    pub refund_retry_ms: i64,
    /// The longest wait between two refund attempts.
    pub refund_retry_max_ms: i64,
    /// Records each worker step handles at most.
    pub batch_limit: usize,
    /// Name of this worker (for claims); unique per process.
    pub worker_id: String,
    /// How long an API key's authentication and a tenant record are reused from memory
    /// (`read_cache`); changes made by another process show after at most this long. 0
    /// reads the store on every request.
    pub read_cache_ms: i64,
    /// How long a wallet read by a transfer is reused from memory. Safe at any length: a
    /// transfer that decided on a cached wallet commits only if the wallet is still at
    /// that version (`Batch::unchanged`), and reads it again otherwise. 0 turns it off.
    pub wallet_cache_ms: i64,
    /// Limits of one-time codes: requests per wallet, phone and tenant, wrong codes
    /// before a lockout, and the lockout's length.
    pub otp: OtpPolicy,
    /// The key one-time codes are hashed with. Processes sharing a database must share
    /// it (the server derives it from the master seed); `None` draws a random one at
    /// start, so codes sent before a restart can no longer be confirmed.
    pub code_key: Option<CodeKey>,
    /// How long a rail's readiness, asked before a sponsored send, is reused (for rails
    /// whose check is not cheap: [`Rail::readiness_is_cheap`]). A rail that stops being
    /// READY refuses sends at most this long later; 0 asks on every send.
    pub readiness_cache_ms: i64,
    /// The smallest send per rail family (default: none). The reference server sets
    /// floors that cover a send's sponsored cost.
    pub min_send: MinSend,
    /// Rent-paying wallet preparations (Solana provisionings) one tenant may ask for
    /// per window.
    pub rent_quota: RentQuota,
    /// Whether withdrawals are admitted. Off when the deployment has no payout
    /// provider: a withdrawal is then refused (WITHDRAWALS_UNAVAILABLE) before anything
    /// is read or held, rather than accepted and refunded later.
    pub withdrawals_enabled: bool,
    /// The SMS outbox: retries with backoff, and the per-country USSD instructions of
    /// the "you received money" message.
    pub sms: SmsPolicy,
    /// How long a top-up quote can be confirmed by staff after it was asked for
    /// (default [`crate::domain::topup::TOPUP_TTL_MS`], 24 hours).
    pub topup_ttl_ms: i64,
    /// The largest treasury credit one staff member may approve alone (a top-up's
    /// `token_amount`, a staff treasury credit's amount). Above it the first staff
    /// confirmation is only a proposal and a second, DIFFERENT staff identity must
    /// approve it (default [`crate::domain::topup::SINGLE_APPROVAL_MAX`], 10,000 tokens).
    pub topup_single_approval_max: crate::domain::money::Micros,
    /// How long after it is added an address-book entry becomes usable (issue #51;
    /// default 24 hours, as Circle's and BitGo's address books): a stolen key that adds
    /// its own destination cannot pay it before someone notices.
    pub address_book_cooling_off_ms: i64,
    /// How long a request held above a policy's approval threshold waits for its second
    /// approver (default 24 hours); past it, approving it is refused.
    pub policy_approval_ttl_ms: i64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            primary_evm_rail: None,
            claim_lease_ms: 30_000,
            poll_interval_ms: 1_000,
            unknown_grace_ms: 60_000,
            payment_validity_ms: 600_000,
            refund_retry_ms: 30_000,
            refund_retry_max_ms: 3_600_000,
            batch_limit: 64,
            worker_id: "worker-1".into(),
            read_cache_ms: crate::kernel::DEFAULT_READ_CACHE_MS,
            wallet_cache_ms: 60_000,
            otp: OtpPolicy::default(),
            code_key: None,
            readiness_cache_ms: 2_000,
            min_send: MinSend::default(),
            rent_quota: RentQuota::default(),
            withdrawals_enabled: true,
            sms: SmsPolicy::default(),
            topup_ttl_ms: crate::domain::topup::TOPUP_TTL_MS,
            topup_single_approval_max: crate::domain::topup::SINGLE_APPROVAL_MAX,
            address_book_cooling_off_ms: 24 * 3_600_000,
            policy_approval_ttl_ms: 24 * 3_600_000,
        }
    }
}

/// The stablecoin engine: cheap to clone, share it across tasks.
#[derive(Clone)]
pub struct Engine {
    /// The ports and rails, shared with the other products built on this kernel.
    pub(crate) kernel: Kernel,
    pub(crate) config: EngineConfig,
    /// Service addresses (treasury, fee collection) per rail: derived once, since a
    /// derivation is an elliptic-curve multiplication and they never change.
    service_addresses: Arc<std::sync::RwLock<BTreeMap<(RailId, KeyPurpose), ChainAddress>>>,
    /// Secret hash -> the authenticated caller.
    pub(crate) auth_cache: Arc<read_cache::TtlCache<String, AuthContext>>,
    /// Phone key -> the wallet as read, for transfers only (see `wallet_cache_ms`).
    pub(crate) wallet_cache: Arc<read_cache::TtlCache<String, Versioned<Wallet>>>,
    /// [`EngineConfig::code_key`], or the random key drawn at start.
    pub(crate) code_key: CodeKey,
    /// Readiness as the send gate last read it, per rail (see `readiness_cache_ms`).
    pub(crate) readiness_cache: Arc<read_cache::TtlCache<RailId, Readiness>>,
    /// FX quotes of sandbox (test-key) simulations: in memory only, never stored.
    pub(crate) sandbox_quotes: Arc<sandbox::SimQuotes>,
    /// The swap venue of each rail that has one ([`Engine::with_swap_venue`]).
    pub(crate) swap_venues: Arc<BTreeMap<RailId, Arc<dyn SwapVenue>>>,
    /// The last [`Engine::reconcile_chains`] report.
    pub(crate) last_reconciliation: Arc<std::sync::RwLock<Option<ReconciliationReport>>>,
}

/// Entries each read cache holds before it starts over.
const READ_CACHE_ENTRIES: usize = 65_536;

/// Wallets the transfer cache holds before it starts over: a wallet record in memory is
/// up to ~1 KiB (addresses on every rail, members), so this bounds it near 16 MiB.
const WALLET_CACHE_ENTRIES: usize = 16_384;

/// Rails an engine can have (every chain profile, TRON, Solana), bounding the readiness
/// cache.
const RAILS_MAX: usize = 64;

impl Engine {
    /// An engine over `ports` and `rails` (one per [`RailId`]; a later duplicate replaces
    /// an earlier one). Does no I/O: rails are asked for readiness when used.
    pub fn new(ports: Ports, rails: Vec<Arc<dyn Rail>>, config: EngineConfig) -> Self {
        let ttl = config.read_cache_ms;
        let wallet_ttl = config.wallet_cache_ms;
        let code_key = config.code_key.clone().unwrap_or_else(|| {
            let mut key = [0u8; 32];
            ports.entropy.fill(&mut key);
            CodeKey::new(key)
        });
        let readiness_ttl = config.readiness_cache_ms;
        Engine {
            code_key,
            kernel: Kernel::with_read_cache_ms(ports, rails, ttl),
            config,
            service_addresses: Default::default(),
            auth_cache: Arc::new(read_cache::TtlCache::new(ttl, READ_CACHE_ENTRIES)),
            wallet_cache: Arc::new(read_cache::TtlCache::new(wallet_ttl, WALLET_CACHE_ENTRIES)),
            readiness_cache: Arc::new(read_cache::TtlCache::new(readiness_ttl, RAILS_MAX)),
            sandbox_quotes: Default::default(),
            swap_venues: Default::default(),
            last_reconciliation: Default::default(),
        }
    }

    /// The ports the engine was built with (for hosts that share the store, clock, ...).
    pub fn ports(&self) -> &Ports {
        self.kernel.ports()
    }

    /// The kernel the engine runs on: its ports and rails, to build escrow and checkout
    /// on beside the wallets (`EscrowEngine::new(engine.kernel(), ..)`).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The settings the engine was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// The configured rail `id`; `RailNotReady` if it is not configured.
    pub fn rail(&self, id: RailId) -> CoreResult<&Arc<dyn Rail>> {
        self.kernel.rail(id)
    }

    /// Every configured rail, in [`RailId`] order.
    pub fn rails(&self) -> impl Iterator<Item = &Arc<dyn Rail>> {
        self.kernel.rails()
    }

    /// The EVM rail of `/v1/users/*`.
    pub fn evm_rail(&self) -> CoreResult<&Arc<dyn Rail>> {
        if let Some(id) = self.config.primary_evm_rail {
            return self.rail(id);
        }
        self.kernel
            .rail_map()
            .iter()
            .find(|(id, _)| matches!(id, RailId::Evm(_)))
            .map(|(_, r)| r)
            .ok_or_else(|| CoreError::RailNotReady {
                rail: "evm".into(),
                reason: "no EVM rail is configured".into(),
            })
    }

    /// The EVM chain a request names (`network`), or the primary one when it names none.
    /// A network that is not an enabled EVM chain is INVALID_PARAMETER (`network`).
    pub fn evm_rail_for(&self, network: Option<RailId>) -> CoreResult<&Arc<dyn Rail>> {
        match network {
            None => self.evm_rail(),
            Some(id @ RailId::Evm(_)) => {
                self.kernel
                    .rail_map()
                    .get(&id)
                    .ok_or_else(|| CoreError::InvalidParameter {
                        field: "network",
                        reason: format!("{} is not an enabled EVM chain here", id.name()),
                    })
            }
            Some(other) => Err(CoreError::InvalidParameter {
                field: "network",
                reason: format!(
                    "{} is not an EVM chain (it has its own routes)",
                    other.name()
                ),
            }),
        }
    }

    /// Every enabled EVM chain, primary first.
    pub fn evm_rails(&self) -> Vec<&Arc<dyn Rail>> {
        let primary = self.evm_rail().ok().map(|r| r.id());
        let mut out: Vec<&Arc<dyn Rail>> = self
            .kernel
            .rail_map()
            .iter()
            .filter(|(id, _)| matches!(id, RailId::Evm(_)))
            .map(|(_, r)| r)
            .collect();
        out.sort_by_key(|r| Some(r.id()) != primary);
        out
    }

    /// The ledger account of a wallet's `token` on `rail`. The primary EVM chain keeps
    /// the historical `wallet:<w>:<TOKEN>`; every other chain, EVM or not, has its own
    /// `wallet:<w>:<rail>:<TOKEN>`: USDC on Base is not USDC on Polygon, and a send on
    /// one chain must never spend what sits on another.
    pub fn wallet_account(&self, wallet: &WalletId, rail: RailId, token: Token) -> LedgerAccount {
        let primary = self.evm_rail().ok().map(|r| r.id());
        if matches!(rail, RailId::Evm(_)) && Some(rail) != primary {
            LedgerAccount {
                id: format!("wallet:{wallet}:{}:{token}", rail.name()),
                allow_negative: false,
            }
        } else {
            accounts::wallet_on(wallet, rail, token)
        }
    }

    /// The idempotency scope of `operation` on `rail`: the bare name on the primary EVM
    /// chain (as before chains could be chosen), `<operation>:<rail>` elsewhere, so one
    /// key on two chains is two requests.
    pub(crate) fn scope_on(&self, operation: &str, rail: RailId) -> String {
        let primary = self.evm_rail().ok().map(|r| r.id());
        if Some(rail) == primary {
            operation.to_string()
        } else {
            format!("{operation}:{}", rail.name())
        }
    }

    /// The address of a service key (treasury, fees) on a rail, cached.
    pub(crate) async fn service_address(
        &self,
        rail: &Arc<dyn Rail>,
        purpose: KeyPurpose,
    ) -> CoreResult<ChainAddress> {
        let key = (rail.id(), purpose);
        if let Some(a) = self
            .service_addresses
            .read()
            .ok()
            .and_then(|m| m.get(&key).cloned())
        {
            return Ok(a);
        }
        let address = rail.address_for(&key.1).await.map_err(rail_err)?;
        if let Ok(mut m) = self.service_addresses.write() {
            m.insert(key, address.clone());
        }
        Ok(address)
    }

    pub(crate) fn now(&self) -> crate::domain::time::Timestamp {
        self.kernel.now()
    }

    pub(crate) fn random10(&self) -> [u8; 10] {
        self.kernel.random10()
    }

    pub(crate) fn new_id(&self, prefix: &str) -> String {
        self.kernel.new_id(prefix)
    }

    pub(crate) async fn commit(&self, batch: Batch) -> CoreResult<CommitReceipt> {
        self.commit_raw(batch).await.map_err(store_err)
    }

    /// Every engine commit goes through here (callers that read the store's own error
    /// use it directly): the wallet cache drops what the batch changes first.
    pub(crate) async fn commit_raw(&self, batch: Batch) -> Result<CommitReceipt, StoreError> {
        self.forget_changed_wallets(&batch);
        self.kernel.commit(batch).await
    }
}

/// Maps storage errors to engine errors (ledger overdraft -> INSUFFICIENT_FUNDS, ...).
pub(crate) fn store_err(e: StoreError) -> CoreError {
    match e {
        StoreError::Ledger(LedgerError::InsufficientFunds {
            available, needed, ..
        }) => CoreError::InsufficientFunds {
            available: micros_str(available),
            needed: crate::domain::money::Micros(needed).to_decimal_string(),
        },
        StoreError::VersionConflict { kind, id } => CoreError::Conflict {
            what: format!("{kind} {id}"),
            record: Some(kind),
        },
        StoreError::UniqueViolation { key } => CoreError::Conflict {
            what: key,
            record: None,
        },
        StoreError::IdempotencyExists { .. } => CoreError::IdempotencyKeyInUse,
        other => CoreError::Storage(other.to_string()),
    }
}

pub(crate) fn micros_str(v: i128) -> String {
    if v < 0 {
        format!(
            "-{}",
            crate::domain::money::Micros(v.unsigned_abs() as u64).to_decimal_string()
        )
    } else {
        crate::domain::money::Micros(v as u64).to_decimal_string()
    }
}

pub(crate) fn rail_err(e: RailError) -> CoreError {
    match e {
        RailError::Unavailable { reason } => CoreError::RailNotReady {
            rail: "rail".into(),
            reason,
        },
        RailError::InvalidAddress { address, reason } => CoreError::InvalidParameter {
            field: "address",
            reason: format!("{address}: {reason}"),
        },
        other => CoreError::Rail(other.to_string()),
    }
}
