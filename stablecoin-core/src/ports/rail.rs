//! `Rail`: one blockchain. Pure build/parse code lives beside each implementation; this
//! is the transport face the engine drives.

use crate::domain::money::{Micros, Token};
use crate::domain::time::Timestamp;
use crate::ports::signer::KeyPurpose;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Re-exported from [`crate::domain::chain`], where the domain names them too.
pub use crate::domain::chain::{ChainAddress, RailId};

/// Readiness as the spec defines it (1.4, 1.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReadinessStatus {
    /// Sponsored sends may be called.
    Ready,
    /// Reads and receipts work; sends answer 503.
    InboundReady,
    /// Something the rail needs is missing or failing (reasons say what).
    Degraded,
    /// Not configured.
    Disabled,
}

impl ReadinessStatus {
    /// The spec's name (`READY`, `INBOUND_READY`, `DEGRADED`, `DISABLED`), as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadinessStatus::Ready => "READY",
            ReadinessStatus::InboundReady => "INBOUND_READY",
            ReadinessStatus::Degraded => "DEGRADED",
            ReadinessStatus::Disabled => "DISABLED",
        }
    }
}

/// What [`Rail::readiness`] answers: the status and, unless READY, why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    /// Which calls the rail can serve now.
    pub status: ReadinessStatus,
    /// Human-readable causes of a status below READY (what is missing or failing), as
    /// the readiness endpoint and a RAIL_NOT_READY error show them; empty when READY.
    pub reasons: Vec<String>,
}

impl Readiness {
    /// READY with no reasons: a rail that needs nothing checked.
    pub fn ready() -> Self {
        Readiness {
            status: ReadinessStatus::Ready,
            reasons: vec![],
        }
    }

    /// Whether sponsored sends may be called: only at READY (spec 1.4; INBOUND_READY
    /// still refuses sends).
    pub fn can_send(&self) -> bool {
        self.status == ReadinessStatus::Ready
    }

    /// The status and its reasons in one line (`INBOUND_READY: sponsor ...`), as a
    /// RAIL_NOT_READY error states them.
    pub fn describe(&self) -> String {
        let status = self.status.as_str();
        if self.reasons.is_empty() {
            status.to_string()
        } else {
            format!("{status}: {}", self.reasons.join("; "))
        }
    }
}

/// One of a rail's node URLs as readiness shows it (`rpc_urls`, issue #49): the rail
/// moves to the next URL when one times out, refuses connections, answers 5xx or answers
/// something that is not JSON, and this says which URL is down and why. `endpoint` is
/// the URL's host and port only: providers put API keys in paths, queries and userinfo.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpcEndpointHealth {
    /// `host:port` of the URL (never its scheme, credentials, path or query).
    pub endpoint: String,
    /// False from the URL's last failure until a request through it succeeds again.
    pub healthy: bool,
    /// Failed requests in a row (0 when healthy).
    pub consecutive_failures: u32,
    /// What the last failure was (`timed out`, `connection failed`, `HTTP 503`,
    /// `malformed answer`), in words that carry no URL.
    pub last_error: Option<String>,
}

/// What a payment leg is for; rails may batch all legs atomically (EVM `executeBatch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LegRole {
    /// The amount the recipient receives (the requested amount less the fees).
    Recipient,
    /// The service's fee, paid to its `service/fees` address.
    ServiceFee,
    /// The tenant's own fee, paid to the tenant's configured `fee_address`.
    TenantFee,
}

/// One transfer of a [`RailPayment`]: the legs' amounts add up to what the sender is
/// debited.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaymentLeg {
    /// Where this leg's tokens go.
    pub to: ChainAddress,
    /// Micro-units; the rail converts to the token's base units on its chain.
    pub amount: Micros,
    /// What the leg pays for.
    pub role: LegRole,
}

/// One outbound payment: all legs from one source, atomically where the chain allows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RailPayment {
    /// Idempotency id (the operation id): submitting the same id twice never pays twice.
    pub id: String,
    /// The key that signs (customer wallet, treasury, escrow deal).
    pub from: KeyPurpose,
    /// The address of `from` on this rail (what the legs are debited from).
    pub from_address: ChainAddress,
    /// The token every leg moves.
    pub token: Token,
    /// The transfers; the engine adds a fee leg only for a fee above zero.
    pub legs: Vec<PaymentLeg>,
    /// The payment's deadline: no rail lets it be included on chain after this instant.
    ///
    /// Why: it is what makes "this payment can no longer land" provable. Without it a
    /// payment the rail cannot find (`NotFound`) may still be on its way (another worker
    /// inside `submit`, a node that has not seen it yet) and land at any later time, so
    /// the engine could return its money to the ledger while it is paid on chain. With
    /// it, `NotFound` asked after the deadline (plus a margin for the clocks) is a proof
    /// (see [`RailPayment::past_deadline`] and [`Rail::status`]).
    ///
    /// The engine sets it when it first submits the payment and stores it with the
    /// operation, so every later submit of the same id carries the same deadline. How
    /// each rail enforces it:
    /// - EVM: the paymaster's `validUntil` (seconds, rounded down), which the sponsor
    ///   signs and the EntryPoint checks against the block's timestamp (`AA32`).
    /// - TRON: the transaction's `expiration` is at most the deadline (and the node
    ///   refuses a transaction whose expiration has passed).
    /// - Simulated chain: refuses the payment, at submit and at inclusion, once its clock
    ///   has passed the deadline (a simulated chain without a clock has no time and
    ///   enforces nothing).
    /// - Solana: not encoded. A Solana transaction lands only until its recent blockhash
    ///   expires (about a minute after signing), and the rail reports `NotFound` only
    ///   for an id it never journaled or once that blockhash expired unseen: that expiry
    ///   is its proof.
    ///
    /// `None` (payments built before deadlines existed, escrow payouts): no deadline,
    /// so `NotFound` never proves anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Timestamp>,
}

impl RailPayment {
    /// The sum of the legs, i.e. what the sender pays; `None` if it overflows.
    pub fn total(&self) -> Option<Micros> {
        self.legs
            .iter()
            .try_fold(Micros::ZERO, |acc, l| acc.checked_add(l.amount))
    }

    /// Whether the deadline has passed by more than `margin_ms` at `now`: from then on
    /// no rail can include the payment, so a `NotFound` means it never will land. At the
    /// deadline itself a payment is still valid (the EntryPoint accepts `validUntil ==
    /// block.timestamp`). The margin covers the difference between the caller's clock
    /// and the chain's (block timestamps run a little behind or ahead). `false` without
    /// a deadline.
    pub fn past_deadline(&self, now: Timestamp, margin_ms: i64) -> bool {
        self.valid_until
            .is_some_and(|d| now.millis() > d.millis().saturating_add(margin_ms.max(0)))
    }

    /// Whether the deadline, if any, is already behind `now` (a rail refuses such a
    /// payment instead of sending it).
    pub fn expired_at(&self, now: Timestamp) -> bool {
        self.valid_until.is_some_and(|d| now > d)
    }
}

/// The rail's acknowledgement of a submission.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Submission {
    /// The submitted [`RailPayment::id`].
    pub payment_id: String,
    /// The real transaction hash when already known at submission.
    pub tx_hash: Option<String>,
}

/// Where a payment stands, as [`Rail::status`] answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SubmissionStatus {
    /// The rail knows of no transaction of this payment id that is on the chain or can
    /// still get there: never sent, refused before the network, or (TRON, Solana, EVM
    /// after the deadline) expired unseen.
    ///
    /// On its own this is NOT a proof that the payment will never land: another worker
    /// may be inside `submit` for the same id, or a node may not have seen it yet. It is
    /// a proof once asked after the payment's `valid_until` plus a margin for clock skew
    /// ([`RailPayment::past_deadline`]), because no rail includes a payment after its
    /// deadline. The engine fails an operation on `NotFound` only then.
    NotFound,
    /// In the mempool or below the confirmation depth.
    Pending {
        /// The transaction hash once known (`None` before the rail sent one, e.g. an EVM
        /// user operation not yet bundled).
        tx_hash: Option<String>,
    },
    /// Confirmed at the rail's confirmation depth.
    Confirmed {
        /// The including transaction (EVM: the bundle's transaction; Solana: signature).
        tx_hash: String,
        /// The block number (slot on Solana) that includes it.
        block: u64,
        /// The transaction opened the recipient's token account, the service paying its
        /// rent (Solana's `created_recipient_ata`: a recipient that never held the mint).
        /// Always `false` on chains without token accounts.
        #[serde(default)]
        created_recipient_account: bool,
        /// What the service paid to land it, when the rail can read it from the receipt
        /// (sponsorship budgets meter this). `None` when the rail does not report it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<SponsorCost>,
    },
    /// Reverted or rejected; nothing moved. Gas, fees or Energy may still have been
    /// spent: a transaction that lands and fails is paid for like one that succeeds.
    Failed {
        /// What the chain or the rail said (revert reason, refusal), for the operation's
        /// failure text.
        reason: String,
        /// The reverted transaction, `None` when it never reached the chain.
        tx_hash: Option<String>,
        /// What the failed attempts cost the service all the same (a reverted user
        /// operation's `actualGasCost`, a failed Solana transaction's fee, the Energy an
        /// `OUT_OF_ENERGY` TRON transfer burnt), so a sponsorship budget meters failures
        /// too. `None` when nothing reached the chain or the rail cannot read it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost: Option<SponsorCost>,
    },
}

/// What one confirmed transaction cost the service that sponsored it, read from its
/// receipt: the money a sponsorship budget meters.
///
/// Units are the chain's own, never converted: the rail knows them, a price feed would
/// only add a guess. `native` is the smallest unit of the chain's native coin that left
/// the service (EVM: wei of the user operation's `actualGasCost`; TRON: sun the
/// sponsor's own transactions burnt for the payment (activation, delegations, Bandwidth
/// paid by burning): the transfer itself is signed by the customer's address, so what it
/// burns is not the service's; Solana: the fee payer's lamports, fee plus any
/// token-account rent the service paid). `energy` and `bandwidth` are TRON's resources
/// consumed whether staked or burnt (zero elsewhere), so a budget can cap them even when
/// staking makes `native` zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SponsorCost {
    /// Smallest native unit paid (wei, sun or lamports).
    pub native: u128,
    /// TRON Energy units consumed (staked or burnt); 0 on other chains.
    #[serde(default)]
    pub energy: u64,
    /// TRON Bandwidth bytes consumed (staked or burnt); 0 on other chains.
    #[serde(default)]
    pub bandwidth: u64,
}

/// A deposit seen by the inbound scanner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbound {
    /// The transaction carrying the transfer (Solana: its signature).
    pub tx_hash: String,
    /// Position inside the transaction (log index), so one tx can carry several.
    pub index: u32,
    /// The sender (Solana: the owner of the debited token account, or the mint for a
    /// mint-to).
    pub from: ChainAddress,
    /// The credited address (Solana: the owner of the credited token account), which the
    /// engine matches to a wallet.
    pub to: ChainAddress,
    /// Which stablecoin moved (the rail maps the contract or mint to it).
    pub token: Token,
    /// Micro-units, converted from the chain's base units.
    pub amount: Micros,
    /// The including block number (slot on Solana).
    pub block: u64,
    /// Blocks from the including one to the head, both counted (1 = in the head block).
    pub confirmations: u64,
    /// True when at the rail's confirmation depth.
    pub confirmed: bool,
}

/// Result of one scan step. `cursor` is opaque to the engine, which persists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScanBatch {
    /// Transfers found in this step, possibly not yet confirmed (seen again later).
    pub inbound: Vec<Inbound>,
    /// Where the next [`Rail::scan`] resumes; the engine stores it unchanged.
    pub cursor: String,
}

/// Why a rail call failed. What the engine may conclude depends on the variant: only
/// `Rejected` proves that a submit sent nothing.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RailError {
    /// Definitely not submitted (bad input, insufficient balance, rejected by the node).
    #[error("rejected: {reason}")]
    Rejected {
        /// The node's or the rail's refusal, for the operation's failure text.
        reason: String,
    },
    /// May or may not have reached the network (timeout, dropped connection).
    #[error("outcome unknown: {reason}")]
    Unknown {
        /// What went wrong (for logs; the status query decides the outcome).
        reason: String,
    },
    /// The rail cannot serve the call now (node or signer unreachable, sends disabled by
    /// configuration, sponsor resources short); the engine reports RAIL_NOT_READY.
    #[error("rail unavailable: {reason}")]
    Unavailable {
        /// What is missing or failing.
        reason: String,
    },
    /// An address is not valid on this chain (bad encoding or checksum); the engine
    /// reports INVALID_PARAMETER on `address`.
    #[error("invalid address {address:?}: {reason}")]
    InvalidAddress {
        /// The address as given.
        address: String,
        /// Why the chain's codec refused it.
        reason: String,
    },
    /// The rail cannot do this by design or configuration (a token without a contract on
    /// the chain, fee legs on TRON).
    #[error("unsupported: {what}")]
    Unsupported {
        /// What was asked that the rail does not do.
        what: String,
    },
}

impl RailError {
    /// The stable error code of the variant (`RAIL_REJECTED`, `SUBMISSION_UNKNOWN`,
    /// `RAIL_UNAVAILABLE`, `INVALID_ADDRESS`, `UNSUPPORTED`), for logs and callers that
    /// match on codes rather than on the enum.
    pub fn code(&self) -> &'static str {
        match self {
            RailError::Rejected { .. } => "RAIL_REJECTED",
            RailError::Unknown { .. } => "SUBMISSION_UNKNOWN",
            RailError::Unavailable { .. } => "RAIL_UNAVAILABLE",
            RailError::InvalidAddress { .. } => "INVALID_ADDRESS",
            RailError::Unsupported { .. } => "UNSUPPORTED",
        }
    }
}

/// One blockchain, as the engine drives it: addresses, balances, sends, their status and
/// the inbound scan. Implemented in `stablecoin-rails` (EVM, TRON, Solana, simulated).
#[async_trait]
pub trait Rail: Send + Sync {
    /// Which chain this is; the engine keys its rails and records by it.
    fn id(&self) -> RailId;

    /// The tokens this rail carries, as configured (an EVM chain without a USDT contract
    /// carries USDC only; TRON carries USDT). The engine refuses any other token with
    /// `UNKNOWN_TOKEN` before it reads or writes anything, so the rule is the same for an
    /// embedder as for the server. A token the rail can only see and send back (TRON's
    /// optional USDC contract, for deposits made by mistake) is not carried: customers
    /// neither send nor hold it there.
    fn tokens(&self) -> Vec<Token>;

    /// Whether the rail can send now, and why not (spec 1.4, 1.5): the engine refuses a
    /// sponsored send with RAIL_NOT_READY unless READY. Never fails: a failing check is
    /// itself a reason.
    async fn readiness(&self) -> Readiness;

    /// The health of each node URL the rail talks to, in configured order (empty for a
    /// rail without node URLs, such as a simulated chain). Cheap: what the rail already
    /// knows from its last requests, no request of its own.
    fn rpc_endpoints(&self) -> Vec<RpcEndpointHealth> {
        Vec::new()
    }

    /// Whether [`Rail::readiness`] is cheap enough to ask before every send. The engine
    /// gates every sponsored send on readiness (RAIL_NOT_READY unless READY, spec 1.4,
    /// 1.5, 7); for a rail that answers `false` (the default) it reuses an answer for
    /// `EngineConfig::readiness_cache_ms`, since a real chain's check is several RPC round
    /// trips (chain id, sponsor balances, paymaster deposit) and would otherwise be paid
    /// by every send. Why the rail says so and not the engine's configuration: only the
    /// adapter knows what its check costs. A rail whose readiness is a memory read (the
    /// simulated chain, whose readiness tests flip between two requests) answers `true`
    /// and is asked every time, so a change shows at once.
    fn readiness_is_cheap(&self) -> bool {
        false
    }

    /// The address of a key purpose on this chain, offline where the chain allows
    /// (EVM counterfactual CREATE2, TRON, Solana).
    async fn address_for(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError>;

    /// Chain-side preparation of a wallet (Solana: its USDC and USDT ATAs, finalized); a
    /// no-op where none is needed. Idempotent: the engine calls it on every provisioning
    /// of the wallet on this rail, so a wallet whose address was recorded by a send (the
    /// payment opening only the sent token's account) is completed too.
    async fn prepare_wallet(&self, purpose: &KeyPurpose) -> Result<(), RailError>;

    /// True when [`Rail::prepare_wallet`] spends the service's money that does not come
    /// back (Solana: rent of two token accounts). The engine then counts a wallet's first
    /// preparation on this rail against the tenant's quota
    /// ([`EngineConfig::rent_quota`](crate::engine::EngineConfig::rent_quota)).
    fn prepare_wallet_pays_rent(&self) -> bool {
        false
    }

    /// Whether receipt monitoring is configured, i.e. whether the engine's deposit
    /// scanner should call [`Rail::scan`]. A rail switched off on purpose (Solana without
    /// `SOLANA_SCAN_ENABLED`) is skipped instead of failing every tick; it reports the
    /// reason through [`Rail::readiness`].
    fn monitors_inbound(&self) -> bool {
        true
    }

    /// Live balance in micro-units.
    async fn balance(&self, address: &ChainAddress, token: Token) -> Result<Micros, RailError>;

    /// Submits a payment. Idempotent by `payment.id`. `Err(Unknown)` means the payment
    /// may be on its way: ask `status`, never submit under a new id.
    ///
    /// A payment whose `valid_until` has passed must not be sent: the rail answers
    /// `Rejected` (or lets the chain refuse it), and in no case may it be included after
    /// its deadline. A rail that keeps trying in the background (rebroadcasts, re-signs)
    /// stops at the deadline too.
    ///
    /// Called concurrently, for payments of one sender too (the engine advances a
    /// claimed batch side by side). A rail whose chain needs one account's transactions
    /// in sequence (an EVM account's deploying `initCode`, TRON's resource delegation)
    /// serializes them inside.
    async fn submit(&self, payment: &RailPayment) -> Result<Submission, RailError>;

    /// Where the payment with this id stands, from the chain (and the rail's journal of
    /// what it sent), never from a timer: `Confirmed` and `Failed` are final, `Pending`
    /// may still go either way, and `NotFound` proves that the payment will never land
    /// only when asked after its deadline (see [`SubmissionStatus::NotFound`]). Asking
    /// never sends anything new: at most the same signed bytes again.
    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError>;

    /// Submits several payments at once, as few chain transactions as the rail can (EVM:
    /// the operations of many accounts in one `handleOps` bundle). One answer per
    /// payment, in order, each meaning exactly what [`Rail::submit`]'s would; a payment
    /// the chain refuses never fails the others. The default makes one [`Rail::submit`]
    /// per payment, side by side.
    async fn submit_batch(&self, payments: &[RailPayment]) -> Vec<Result<Submission, RailError>> {
        futures_util::future::join_all(payments.iter().map(|p| self.submit(p))).await
    }

    /// Inbound transfers after `cursor` (empty cursor = from the rail's configured
    /// start) to the `watched` addresses, or to any address when `watched` is empty (the
    /// engine then filters by its own address index, which scales to many wallets).
    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_name_is_its_serialized_form_and_describe_joins_the_reasons() {
        for s in [
            ReadinessStatus::Ready,
            ReadinessStatus::InboundReady,
            ReadinessStatus::Degraded,
            ReadinessStatus::Disabled,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        assert_eq!(Readiness::ready().describe(), "READY");
        let r = Readiness {
            status: ReadinessStatus::InboundReady,
            reasons: vec!["a".into(), "b".into()],
        };
        assert_eq!(r.describe(), "INBOUND_READY: a; b");
    }
}
