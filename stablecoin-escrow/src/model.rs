//! Stored records of the escrow engine, its configuration, actors and ledger accounts.
//!
//! | record kind | id | what it is |
//! |---|---|---|
//! | `escrow` | `esc_...` | a deal ([`Deal`]); unique key `addr:tron:<address>` |
//! | `escrow_event` | `<deal id>:<seq, 8 digits>` | one entry of a deal's permanent history ([`HistoryEntry`]) |
//! | `escrow_deposit` | `tron:<tx hash>:<index>` | a recorded inbound deposit ([`DepositRecord`]), once each |
//! | `escrow_payout` | `<deal id>:payout:<n>` / `<deal id>:recovery:<n>` | an outbound payment ([`PayoutRecord`]); its id is the rail payment id |
//! | `escrow_scan_cursor` | `tron` | the deposit scanner's persisted position |

use crate::state::{DepositKind, EscrowState, PayoutPurpose, Phase, RecoveryKind};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::ids::{ApiKeyId, EscrowId, EventId, TenantId, WalletId};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{ChainAddress, LedgerAccount, LedgerTransfer, RailPayment, Record};
use std::collections::BTreeMap;

/// TRON mainnet's chain id (`eth_chainId` of the TRON JSON-RPC: `0x2b6653dc`). Nile
/// testnet is 3448148188 (`0xcd8690dc`), Shasta 2494104990 (`0x94a9059e`).
pub const TRON_MAINNET_CHAIN_ID: u64 = 728_126_428;

/// Escrow engine settings; every field has a default ([`EscrowConfig::default`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EscrowConfig {
    /// TRON deposits are enabled for escrow. With `false` no new escrow is admitted
    /// (`ESCROW_UNAVAILABLE`); existing deals are still scanned and paid out.
    pub deposits_enabled: bool,
    /// `network` of every view (`"mainnet"`).
    pub network: String,
    /// `chain_id` of every view ([`TRON_MAINNET_CHAIN_ID`]).
    pub chain_id: u64,
    /// Funding window when the request gives none (24 h).
    pub default_funding_window_secs: u64,
    /// Bounds of a requested funding window (15 min .. 30 days).
    pub min_funding_window_secs: u64,
    /// Upper bound of a requested funding window (30 days).
    pub max_funding_window_secs: u64,
    /// Bounds of a requested inspection window `auto_release_after_secs` (1 h .. 90 days).
    /// Absent in the request means no automatic release, ever.
    pub min_auto_release_after_secs: u64,
    /// Upper bound of a requested inspection window (90 days).
    pub max_auto_release_after_secs: u64,
    /// Largest escrow amount (1,000,000 USDT).
    pub max_amount: Micros,
    /// How long a worker holds a claimed record before another may take it.
    pub claim_lease_ms: i64,
    /// Delay between status polls of a submitted payout.
    pub poll_interval_ms: i64,
    /// Delay before a queued payout is tried again while the rail cannot send.
    pub send_retry_ms: i64,
    /// How long after an unknown submission a `NotFound` from the rail is trusted as
    /// "never reached the network". Must exceed the chain's transaction expiry (TRON:
    /// 60 s by default), so a signed transaction can no longer land afterwards.
    pub unknown_grace_ms: i64,
    /// Records each worker step handles at most (and the scan page size).
    pub batch_limit: usize,
    /// Name of this worker (for claims); unique per process.
    pub worker_id: String,
    /// Two-person rule: a staff resolution of a deal whose amount is ABOVE this, or a
    /// staff recovery of a balance above it, needs two different staff members (the
    /// first proposes, the second approves). `None` (the default of the SDK; the
    /// reference server sets 10,000): one staff member decides any amount.
    pub second_approval_above: Option<Micros>,
}

impl Default for EscrowConfig {
    fn default() -> Self {
        EscrowConfig {
            deposits_enabled: true,
            network: "mainnet".into(),
            chain_id: TRON_MAINNET_CHAIN_ID,
            default_funding_window_secs: 24 * 3600,
            min_funding_window_secs: 15 * 60,
            max_funding_window_secs: 30 * 24 * 3600,
            min_auto_release_after_secs: 3600,
            max_auto_release_after_secs: 90 * 24 * 3600,
            max_amount: Micros(1_000_000 * 1_000_000),
            claim_lease_ms: 30_000,
            poll_interval_ms: 1_000,
            send_retry_ms: 10_000,
            unknown_grace_ms: 120_000,
            batch_limit: 64,
            worker_id: "escrow-worker-1".into(),
            second_approval_above: None,
        }
    }
}

/// A party of a deal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Party {
    /// The party that pays into the deal address; refunds and recoveries go to it.
    Buyer,
    /// The party that is paid on release.
    Seller,
}

impl Party {
    /// Wire name (`BUYER`, `SELLER`), identical to the serde representation.
    pub fn as_str(self) -> &'static str {
        match self {
            Party::Buyer => "BUYER",
            Party::Seller => "SELLER",
        }
    }

    /// The `on_behalf_of` field: `BUYER` or `SELLER`, nothing else.
    pub fn parse(s: &str) -> Option<Party> {
        match s {
            "BUYER" => Some(Party::Buyer),
            "SELLER" => Some(Party::Seller),
            _ => None,
        }
    }
}

/// A party's linked customer wallet, fixed at creation: payouts go here and nowhere else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartyWallet {
    /// The linked customer wallet; the calling tenant must be a member of it at creation.
    pub wallet: WalletId,
    /// The phone number the partner gave for this party (E.164).
    pub phone: Phone,
    /// The wallet's TRON address (`rail.address_for(KeyPurpose::Wallet(wallet))`).
    pub address: ChainAddress,
}

/// Who made something happen; recorded in every history entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Actor {
    /// A tenant, through one of its API keys.
    Tenant {
        /// The tenant that acted.
        tenant: TenantId,
        /// The key it acted with (`key_...`), recorded as the authority.
        api_key_id: ApiKeyId,
    },
    /// Service staff, through the admin API.
    Staff {
        /// The [`StaffActor`](crate::admin::StaffActor) id (an email, a username).
        staff_id: String,
    },
    /// A background job of the service (`funding_expiry`, `auto_release`, `payout`).
    System {
        /// The job's name: `funding_expiry`, `auto_release` or `payout`.
        job: String,
    },
    /// The chain: a deposit was observed.
    Chain {
        /// The rail that observed it (`tron`).
        rail: String,
    },
}

impl Actor {
    /// The authority the action was taken under (`api_key:key_...`, `staff:<id>`, ...).
    pub fn authority(&self) -> String {
        match self {
            Actor::Tenant { api_key_id, .. } => format!("api_key:{api_key_id}"),
            Actor::Staff { staff_id } => format!("staff:{staff_id}"),
            Actor::System { job } => format!("system:{job}"),
            Actor::Chain { rail } => format!("chain:{rail}"),
        }
    }

    pub(crate) fn system(job: &str) -> Actor {
        Actor::System { job: job.into() }
    }
}

/// A deal payout that is claimed and not yet settled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayoutClaim {
    /// Where the payout goes: the seller (release) or the buyer (refund).
    pub purpose: PayoutPurpose,
    /// The payout record (and rail payment) id.
    pub payout_id: String,
    /// Staff resolution of a dispute: its note becomes `resolution_note` on settlement.
    pub resolution_note: Option<String>,
    /// When the action that claimed the payout was accepted.
    pub claimed_at: Timestamp,
}

/// A staff resolution awaiting a second staff member's approval
/// ([`EscrowConfig::second_approval_above`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingResolution {
    /// `RELEASE` or `REFUND`.
    pub resolution: String,
    /// The proposer's reasoning; it becomes `resolution_note` once approved and settled.
    pub note: String,
    /// The proposing staff id; the approver must be someone else.
    pub proposed_by: String,
    /// When it was proposed.
    pub proposed_at: Timestamp,
}

/// A staff recovery awaiting a second staff member's approval
/// ([`EscrowConfig::second_approval_above`]): the amount is above the threshold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRecovery {
    /// What is to be returned.
    pub kind: RecoveryKind,
    /// In which token.
    pub token: Token,
    /// The whole balance of that kind and token when it was proposed; an approval
    /// finding another amount is refused (the proposer proposes again).
    pub amount: Micros,
    /// The proposer's reason; recorded with the payout.
    pub note: String,
    /// The proposing staff id; the approver must be someone else.
    pub proposed_by: String,
    /// When it was proposed.
    pub proposed_at: Timestamp,
}

/// A recoverable balance of one kind and token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recoverable {
    /// What the balance came from; each kind is recovered separately.
    pub kind: RecoveryKind,
    /// The token held: the deal's, or another for `UNSUPPORTED_TOKEN`.
    pub token: Token,
    /// Micro-units; never zero (an emptied balance is removed).
    pub amount: Micros,
}

/// A recovery as the deal remembers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoverySummary {
    /// The recovery's payout record (and rail payment) id, `<deal id>:recovery:<n>`.
    pub payout_id: String,
    /// The recovered balance's kind.
    pub kind: RecoveryKind,
    /// The recovered token.
    pub token: Token,
    /// Micro-units sent back to the buyer's linked wallet.
    pub amount: Micros,
    /// `QUEUED` until the payout settles, then `CONFIRMED` or `FAILED`.
    pub status: PayoutStatus,
    /// The transaction hash, once the rail reported one.
    pub tx_hash: Option<String>,
}

/// An escrow deal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deal {
    /// `esc_...`, fixed at creation.
    pub id: EscrowId,
    /// The tenant that created the deal; only it sees and acts on the deal through the
    /// tenant API.
    pub tenant: TenantId,
    /// The public state; a claimed payout is in `payout` (see [`Deal::phase`]).
    pub state: EscrowState,
    /// The claimed, unsettled deal payout (`payout_pending`).
    pub payout: Option<PayoutClaim>,
    /// The deal amount in micro-units: what funds the deal and what a payout sends.
    pub amount: Micros,
    /// The deal's token (TRON USDT); deposits of any other token are `UNSUPPORTED_TOKEN`.
    pub token: Token,
    /// The rail name (`tron`).
    pub rail: String,
    /// Copied from [`EscrowConfig::network`] at creation.
    pub network: String,
    /// Copied from [`EscrowConfig::chain_id`] at creation.
    pub chain_id: u64,
    /// The partner's reference (1-200 characters, trimmed).
    pub reference: String,
    /// The buyer: pays in, receives refunds and recoveries.
    pub buyer: PartyWallet,
    /// The seller: receives the release.
    pub seller: PartyWallet,
    /// Derived from `KeyPurpose::EscrowDeal(id)`; this deal's alone (unique key).
    pub escrow_address: ChainAddress,
    /// End of the funding window: deposits recorded from then on are `LATE`, and a CREATED
    /// deal expires.
    pub funding_expires_at: Timestamp,
    /// The inspection window the request set; `None` means no automatic release.
    pub auto_release_after_secs: Option<u64>,
    /// `funded_at` + the inspection window, set on funding when there is one.
    pub auto_release_at: Option<Timestamp>,
    /// The automatic release was claimed once; it is never retried by itself.
    pub auto_release_attempted: bool,
    /// Confirmed deposits counted toward the amount (held for the deal).
    pub applied: Micros,
    /// Every recorded deposit, per token.
    pub deposited: BTreeMap<Token, Micros>,
    /// Deposits recorded for this deal, of every kind and token.
    pub deposit_count: u64,
    /// Recoverable balances not yet being recovered.
    pub recoverable: Vec<Recoverable>,
    /// Every recovery authorised so far, oldest first.
    pub recoveries: Vec<RecoverySummary>,
    /// Deal payouts claimed so far (the next payment id is `<id>:payout:<n+1>`).
    pub payout_attempts: u32,
    /// Recoveries claimed so far (the next payment id is `<id>:recovery:<n+1>`).
    pub recovery_attempts: u32,
    /// The transaction hash of the confirmed deal payout (RELEASED or REFUNDED).
    pub payout_tx_hash: Option<String>,
    /// Why the last payout failed, kept until a later payout settles.
    pub payout_failure_reason: Option<String>,
    /// When confirmed deposits reached the amount (FUNDED).
    pub funded_at: Option<Timestamp>,
    /// When the release payout was confirmed (RELEASED).
    pub released_at: Option<Timestamp>,
    /// When the refund payout was confirmed (REFUNDED).
    pub refunded_at: Option<Timestamp>,
    /// When the tenant raised the dispute (DISPUTED).
    pub disputed_at: Option<Timestamp>,
    /// The tenant's `reason` for the dispute.
    pub dispute_reason: Option<String>,
    /// The staff note of a dispute resolution, set once its payout is confirmed.
    pub resolution_note: Option<String>,
    /// A staff resolution proposed and awaiting a second staff member (two-person rule);
    /// cleared when the resolution is carried out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_resolution: Option<PendingResolution>,
    /// A two-person recovery proposal awaiting approval; cleared when it is carried
    /// out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_recovery: Option<PendingRecovery>,
    /// When the tenant cancelled the unfunded deal (CANCELLED).
    pub cancelled_at: Option<Timestamp>,
    /// When the funding window closed unpaid (EXPIRED).
    pub expired_at: Option<Timestamp>,
    /// Entries in the permanent history.
    pub history_len: u64,
    /// When the deal was admitted.
    pub created_at: Timestamp,
    /// When the deal record last changed.
    pub updated_at: Timestamp,
}

impl Deal {
    /// Record kind of deals in the store.
    pub const KIND: &'static str = stablecoin_core::ports::kinds::kind::ESCROW;

    /// The store unique key that reserves a deal address (`addr:tron:<address>`, the
    /// one address namespace of every product), so no two deals, and no deal and
    /// another product's record, share one.
    pub fn address_key(address: &ChainAddress) -> String {
        stablecoin_core::kernel::inbound::address_key("tron", &address.0)
    }

    /// The machine's state: the public state plus the claimed payout's purpose.
    pub fn phase(&self) -> Phase {
        Phase {
            state: self.state,
            payout: self.payout.as_ref().map(|p| p.purpose),
        }
    }

    /// Sets the public state, and drops the payout claim when `phase` has none. It never
    /// sets a claim: the caller stores the [`PayoutClaim`] itself.
    pub fn set_phase(&mut self, phase: Phase) {
        self.state = phase.state;
        if phase.payout.is_none() {
            self.payout = None;
        }
    }

    /// The recoverable balance of one kind and token (zero when there is none).
    pub fn recoverable_of(&self, kind: RecoveryKind, token: Token) -> Micros {
        self.recoverable
            .iter()
            .find(|r| r.kind == kind && r.token == token)
            .map(|r| r.amount)
            .unwrap_or(Micros::ZERO)
    }

    /// Adds to a recoverable balance; `None` on overflow.
    pub fn add_recoverable(
        &mut self,
        kind: RecoveryKind,
        token: Token,
        amount: Micros,
    ) -> Option<()> {
        if amount.is_zero() {
            return Some(());
        }
        match self
            .recoverable
            .iter_mut()
            .find(|r| r.kind == kind && r.token == token)
        {
            Some(r) => r.amount = r.amount.checked_add(amount)?,
            None => self.recoverable.push(Recoverable {
                kind,
                token,
                amount,
            }),
        }
        Some(())
    }

    /// Takes a whole recoverable balance out (it is being recovered).
    pub fn take_recoverable(&mut self, kind: RecoveryKind, token: Token) -> Micros {
        let amount = self.recoverable_of(kind, token);
        self.recoverable
            .retain(|r| !(r.kind == kind && r.token == token));
        amount
    }

    /// Recoverable balance in the deal's token, all kinds.
    pub fn recoverable_total(&self) -> Micros {
        self.recoverable
            .iter()
            .filter(|r| r.token == self.token)
            .fold(Micros::ZERO, |a, r| a.checked_add(r.amount).unwrap_or(a))
    }

    /// Every recorded deposit of `token`, in micro-units (zero when none).
    pub fn deposited_of(&self, token: Token) -> Micros {
        self.deposited.get(&token).copied().unwrap_or(Micros::ZERO)
    }

    /// The buyer's or the seller's linked wallet.
    pub fn party(&self, party: Party) -> &PartyWallet {
        match party {
            Party::Buyer => &self.buyer,
            Party::Seller => &self.seller,
        }
    }
}

impl Record for Deal {
    const KIND: &'static str = Deal::KIND;
    fn id(&self) -> String {
        self.id.0.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.state.as_str().to_string())
    }
    /// CREATED: due at the end of the funding window. FUNDED with an inspection window
    /// and no payout claimed: due at `auto_release_at` (once). Otherwise never.
    fn due_at(&self) -> Option<Timestamp> {
        match (self.state, &self.payout) {
            (EscrowState::Created, _) => Some(self.funding_expires_at),
            (EscrowState::Funded, None) if !self.auto_release_attempted => self.auto_release_at,
            _ => None,
        }
    }
    fn unique_keys(&self) -> Vec<String> {
        vec![Deal::address_key(&self.escrow_address)]
    }
}

/// One entry of a deal's permanent history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// `<deal id>:<seq, 8 digits>`.
    pub id: String,
    /// The deal it belongs to.
    pub deal: EscrowId,
    /// The deal's tenant.
    pub tenant: TenantId,
    /// 0-based position in the deal's history.
    pub seq: u64,
    /// Also the outbox (webhook) `event_id`.
    pub event_id: EventId,
    /// Event name (`escrow.funded`).
    pub event: String,
    /// `None` for the creation entry.
    pub from_state: Option<String>,
    /// Whether a payout was claimed before the change.
    pub from_payout_pending: bool,
    /// The wire state after the change (`FUNDED`, ...).
    pub state: String,
    /// Whether a payout is claimed after the change.
    pub payout_pending: bool,
    /// Who made it happen.
    pub actor: Actor,
    /// The authority it happened under ([`Actor::authority`]).
    pub authority: String,
    /// The tenant's unverified `on_behalf_of` assertion, if it gave one.
    pub on_behalf_of: Option<Party>,
    /// The tenant's or staff's reason or note, or a failed payout's error.
    pub reason: Option<String>,
    /// Event-specific facts (the deposit, the payout, ...).
    pub data: Option<serde_json::Value>,
    /// When the change was committed.
    pub at: Timestamp,
}

impl HistoryEntry {
    /// Record kind of history entries in the store.
    pub const KIND: &'static str = stablecoin_core::ports::kinds::kind::ESCROW_EVENT;

    /// The entry id of position `seq` in a deal's history (zero-padded, so ids sort in
    /// order).
    pub fn make_id(deal: &EscrowId, seq: u64) -> String {
        format!("{deal}:{seq:08}")
    }
}

impl Record for HistoryEntry {
    const KIND: &'static str = HistoryEntry::KIND;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.at
    }
}

/// A recorded inbound deposit to a deal address; its id dedupes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepositRecord {
    /// `tron:<tx hash>:<index>`.
    pub id: String,
    /// The deal whose address received it.
    pub deal: EscrowId,
    /// The deal's tenant.
    pub tenant: TenantId,
    /// The inbound transaction.
    pub tx_hash: String,
    /// Position inside the transaction (log index), so one transaction can carry several.
    pub index: u32,
    /// The sender's address (never a payout destination: payouts go to linked wallets).
    pub from: ChainAddress,
    /// The token received; another token than the deal's is `UNSUPPORTED_TOKEN`.
    pub token: Token,
    /// Micro-units received.
    pub amount: Micros,
    /// The block that included the transaction.
    pub block: u64,
    /// How the deposit was counted ([`classify_deposit`](crate::state::classify_deposit)).
    pub kind: DepositKind,
    /// Micro-units counted toward the deal amount.
    pub applied: Micros,
    /// Micro-units that became recoverable at once.
    pub recoverable: Micros,
    /// The recoverable balance it added to (`None` when `recoverable` is zero).
    pub recoverable_kind: Option<RecoveryKind>,
    /// When the scanner recorded it (confirmed at the rail's depth).
    pub recorded_at: Timestamp,
}

impl DepositRecord {
    /// Record kind of deposits in the store.
    pub const KIND: &'static str = stablecoin_core::ports::kinds::kind::ESCROW_DEPOSIT;

    /// The deposit id of log index `index` of transaction `tx_hash`: recording the same
    /// transfer twice is a conflict, not a second deposit.
    pub fn make_id(tx_hash: &str, index: u32) -> String {
        format!("tron:{tx_hash}:{index}")
    }
}

impl Record for DepositRecord {
    const KIND: &'static str = DepositRecord::KIND;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.recorded_at
    }
}

/// What an outbound payment is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "type", content = "kind", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PayoutKind {
    /// The deal amount to the seller or back to the buyer.
    Deal(PayoutPurpose),
    /// A recoverable balance back to the buyer.
    Recovery(RecoveryKind),
}

/// Where an outbound payment stands. `Unknown` is resolved only by asking the rail
/// about the same payment id, never by submitting again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PayoutStatus {
    /// Claimed and waiting to be submitted (also while the rail cannot send).
    Queued,
    /// Being submitted: saved before the submission, so a crash leaves this status, which
    /// the worker resolves as `Unknown`.
    Submitting,
    /// Accepted by the rail; polled until confirmed or failed.
    Submitted,
    /// The submission's outcome is unknown; resolved by asking the rail about the payment
    /// id (wire name `SUBMISSION_UNKNOWN`).
    Unknown,
    /// Confirmed on chain at the rail's depth; the ledger hold is posted.
    Confirmed,
    /// Definitely failed, nothing moved; the ledger hold is voided.
    Failed,
}

impl PayoutStatus {
    /// Wire name (`QUEUED`, ..., `SUBMISSION_UNKNOWN`), also the record's store status.
    pub fn as_str(self) -> &'static str {
        match self {
            PayoutStatus::Queued => "QUEUED",
            PayoutStatus::Submitting => "SUBMITTING",
            PayoutStatus::Submitted => "SUBMITTED",
            PayoutStatus::Unknown => "SUBMISSION_UNKNOWN",
            PayoutStatus::Confirmed => "CONFIRMED",
            PayoutStatus::Failed => "FAILED",
        }
    }

    /// `CONFIRMED` or `FAILED`: the worker never touches the payout again.
    pub fn is_terminal(self) -> bool {
        matches!(self, PayoutStatus::Confirmed | PayoutStatus::Failed)
    }
}

/// One outbound payment from a deal address to a party's linked wallet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayoutRecord {
    /// The rail payment id: `<deal id>:payout:<n>` or `<deal id>:recovery:<n>`.
    pub id: String,
    /// The deal it pays out of.
    pub deal: EscrowId,
    /// The deal's tenant.
    pub tenant: TenantId,
    /// A deal payout (release or refund) or a recovery.
    pub kind: PayoutKind,
    /// Staff resolution of a dispute (a failure returns the deal to DISPUTED).
    pub staff_resolution: bool,
    /// The party paid: the seller on release, the buyer otherwise.
    pub to: Party,
    /// The party's linked wallet, fixed at the deal's creation.
    pub to_wallet: WalletId,
    /// Micro-units sent.
    pub amount: Micros,
    /// The token sent.
    pub token: Token,
    /// Fixed at creation, so every submission is the same payment.
    pub payment: RailPayment,
    /// The pending ledger transfer, posted on confirmation, voided on failure.
    pub hold: LedgerTransfer,
    /// Where the payment stands.
    pub status: PayoutStatus,
    /// The transaction hash, once the rail reported one.
    pub tx_hash: Option<String>,
    /// The block that included the transaction, once confirmed.
    pub block: Option<u64>,
    /// Why it failed (`FAILED` only).
    pub error_reason: Option<String>,
    /// Who claimed it: the tenant, staff, or the automatic release job.
    pub requested_by: Actor,
    /// The tenant's unverified `on_behalf_of` assertion, if it gave one.
    pub on_behalf_of: Option<Party>,
    /// The tenant's reason, the staff resolution note or the recovery note.
    pub note: Option<String>,
    /// When the worker started submitting it; the `unknown_grace_ms` window runs from here.
    pub submitted_at: Option<Timestamp>,
    /// When the worker looks at it next (the store's due time); `None` once settled.
    pub next_check_at: Option<Timestamp>,
    /// When it was claimed.
    pub created_at: Timestamp,
    /// When the record last changed.
    pub updated_at: Timestamp,
    /// When it was confirmed or failed.
    pub settled_at: Option<Timestamp>,
}

impl PayoutRecord {
    /// Record kind of payouts in the store.
    pub const KIND: &'static str = stablecoin_core::ports::kinds::kind::ESCROW_PAYOUT;
}

impl Record for PayoutRecord {
    const KIND: &'static str = PayoutRecord::KIND;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.status.as_str().to_string())
    }
    fn due_at(&self) -> Option<Timestamp> {
        if self.status.is_terminal() {
            None
        } else {
            self.next_check_at
        }
    }
}

/// Ledger accounts of escrow. Per deal and token:
///
/// | account | meaning | may go negative |
/// |---|---|---|
/// | `chain_in:tron:<TOKEN>` | value that arrived from outside on TRON (core's account) | yes |
/// | `escrow:<deal>:held:<TOKEN>` | deposits counted toward the amount | no |
/// | `escrow:<deal>:partial:<TOKEN>` | partial deposits of an escrow that closed unfunded | no |
/// | `escrow:<deal>:excess:<TOKEN>` | money beyond the amount | no |
/// | `escrow:<deal>:late:<TOKEN>` | deposits after the window / to a closed escrow | no |
/// | `escrow:<deal>:unsupported:<TOKEN>` | deposits of a token the deal is not in | no |
/// | `escrow:<deal>:paid_out:<TOKEN>` | paid to the buyer's or seller's linked wallet | no |
///
/// A deposit moves `chain_in -> held` and/or `chain_in -> <bucket>`; expiry and cancel
/// move `held -> partial`; a payout holds `held|<bucket> -> paid_out` (pending), posted
/// on confirmation and voided on failure. So for every deal and token, at all times:
/// `deposited == held + partial + excess + late + unsupported + paid_out` (posted).
pub mod accounts {
    use super::*;
    use stablecoin_core::kernel::accounts as core_accounts;

    /// Core's `chain_in:tron:<TOKEN>`: value that arrived from outside on TRON (may go
    /// negative).
    pub fn chain_in(token: Token) -> LedgerAccount {
        core_accounts::chain_in("tron", token)
    }

    fn deal_account(deal: &EscrowId, what: &str, token: Token) -> LedgerAccount {
        LedgerAccount {
            id: format!("escrow:{deal}:{what}:{token}"),
            allow_negative: false,
        }
    }

    /// `escrow:<deal>:held:<TOKEN>`: deposits counted toward the amount.
    pub fn held(deal: &EscrowId, token: Token) -> LedgerAccount {
        deal_account(deal, "held", token)
    }

    /// `escrow:<deal>:<kind>:<TOKEN>`: the recoverable balance of one kind (`partial`,
    /// `excess`, `late`, `unsupported`).
    pub fn bucket(deal: &EscrowId, kind: RecoveryKind, token: Token) -> LedgerAccount {
        deal_account(deal, kind.slug(), token)
    }

    /// `escrow:<deal>:paid_out:<TOKEN>`: payouts to the parties' linked wallets (posted on
    /// confirmation).
    pub fn paid_out(deal: &EscrowId, token: Token) -> LedgerAccount {
        deal_account(deal, "paid_out", token)
    }
}
