//! Stored records of the escrow engine, its configuration, actors and ledger accounts.
//!
//! | record kind | id | what it is |
//! |---|---|---|
//! | `escrow` | `esc_...` | a deal ([`Deal`]); unique key `escrow_addr:tron:<address>` |
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
    pub max_funding_window_secs: u64,
    /// Bounds of a requested inspection window `auto_release_after_secs` (1 h .. 90 days).
    /// Absent in the request means no automatic release, ever.
    pub min_auto_release_after_secs: u64,
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
        }
    }
}

/// A party of a deal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Party {
    Buyer,
    Seller,
}

impl Party {
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
    pub wallet: WalletId,
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
        tenant: TenantId,
        api_key_id: ApiKeyId,
    },
    /// Service staff, through the admin API.
    Staff { staff_id: String },
    /// A background job of the service (`funding_expiry`, `auto_release`, `payout`).
    System { job: String },
    /// The chain: a deposit was observed.
    Chain { rail: String },
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
    pub purpose: PayoutPurpose,
    /// The payout record (and rail payment) id.
    pub payout_id: String,
    /// Staff resolution of a dispute: its note becomes `resolution_note` on settlement.
    pub resolution_note: Option<String>,
    pub claimed_at: Timestamp,
}

/// A recoverable balance of one kind and token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recoverable {
    pub kind: RecoveryKind,
    pub token: Token,
    pub amount: Micros,
}

/// A recovery as the deal remembers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoverySummary {
    pub payout_id: String,
    pub kind: RecoveryKind,
    pub token: Token,
    pub amount: Micros,
    pub status: PayoutStatus,
    pub tx_hash: Option<String>,
}

/// An escrow deal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deal {
    pub id: EscrowId,
    pub tenant: TenantId,
    pub state: EscrowState,
    /// The claimed, unsettled deal payout (`payout_pending`).
    pub payout: Option<PayoutClaim>,
    pub amount: Micros,
    pub token: Token,
    pub rail: String,
    pub network: String,
    pub chain_id: u64,
    pub reference: String,
    pub buyer: PartyWallet,
    pub seller: PartyWallet,
    /// Derived from `KeyPurpose::EscrowDeal(id)`; this deal's alone (unique key).
    pub escrow_address: ChainAddress,
    pub funding_expires_at: Timestamp,
    pub auto_release_after_secs: Option<u64>,
    pub auto_release_at: Option<Timestamp>,
    /// The automatic release was claimed once; it is never retried by itself.
    pub auto_release_attempted: bool,
    /// Confirmed deposits counted toward the amount (held for the deal).
    pub applied: Micros,
    /// Every recorded deposit, per token.
    pub deposited: BTreeMap<Token, Micros>,
    pub deposit_count: u64,
    /// Recoverable balances not yet being recovered.
    pub recoverable: Vec<Recoverable>,
    pub recoveries: Vec<RecoverySummary>,
    /// Deal payouts claimed so far (the next payment id is `<id>:payout:<n+1>`).
    pub payout_attempts: u32,
    pub recovery_attempts: u32,
    pub payout_tx_hash: Option<String>,
    /// Why the last payout failed, kept until a later payout settles.
    pub payout_failure_reason: Option<String>,
    pub funded_at: Option<Timestamp>,
    pub released_at: Option<Timestamp>,
    pub refunded_at: Option<Timestamp>,
    pub disputed_at: Option<Timestamp>,
    pub dispute_reason: Option<String>,
    pub resolution_note: Option<String>,
    pub cancelled_at: Option<Timestamp>,
    pub expired_at: Option<Timestamp>,
    /// Entries in the permanent history.
    pub history_len: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Deal {
    pub const KIND: &'static str = "escrow";

    pub fn address_key(address: &ChainAddress) -> String {
        // TRON base58 addresses are case-sensitive: the key keeps the exact text.
        format!("escrow_addr:tron:{}", address.0)
    }

    pub fn phase(&self) -> Phase {
        Phase {
            state: self.state,
            payout: self.payout.as_ref().map(|p| p.purpose),
        }
    }

    pub fn set_phase(&mut self, phase: Phase) {
        self.state = phase.state;
        if phase.payout.is_none() {
            self.payout = None;
        }
    }

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

    pub fn deposited_of(&self, token: Token) -> Micros {
        self.deposited.get(&token).copied().unwrap_or(Micros::ZERO)
    }

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
    pub deal: EscrowId,
    pub tenant: TenantId,
    /// 0-based position in the deal's history.
    pub seq: u64,
    /// Also the outbox (webhook) `event_id`.
    pub event_id: EventId,
    /// Event name (`escrow.funded`).
    pub event: String,
    /// `None` for the creation entry.
    pub from_state: Option<String>,
    pub from_payout_pending: bool,
    pub state: String,
    pub payout_pending: bool,
    pub actor: Actor,
    pub authority: String,
    pub on_behalf_of: Option<Party>,
    pub reason: Option<String>,
    /// Event-specific facts (the deposit, the payout, ...).
    pub data: Option<serde_json::Value>,
    pub at: Timestamp,
}

impl HistoryEntry {
    pub const KIND: &'static str = "escrow_event";

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
    pub deal: EscrowId,
    pub tenant: TenantId,
    pub tx_hash: String,
    pub index: u32,
    pub from: ChainAddress,
    pub token: Token,
    pub amount: Micros,
    pub block: u64,
    pub kind: DepositKind,
    pub applied: Micros,
    pub recoverable: Micros,
    pub recoverable_kind: Option<RecoveryKind>,
    pub recorded_at: Timestamp,
}

impl DepositRecord {
    pub const KIND: &'static str = "escrow_deposit";

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
    Queued,
    Submitting,
    Submitted,
    Unknown,
    Confirmed,
    Failed,
}

impl PayoutStatus {
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

    pub fn is_terminal(self) -> bool {
        matches!(self, PayoutStatus::Confirmed | PayoutStatus::Failed)
    }
}

/// One outbound payment from a deal address to a party's linked wallet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayoutRecord {
    /// The rail payment id: `<deal id>:payout:<n>` or `<deal id>:recovery:<n>`.
    pub id: String,
    pub deal: EscrowId,
    pub tenant: TenantId,
    pub kind: PayoutKind,
    /// Staff resolution of a dispute (a failure returns the deal to DISPUTED).
    pub staff_resolution: bool,
    pub to: Party,
    pub to_wallet: WalletId,
    pub amount: Micros,
    pub token: Token,
    /// Fixed at creation, so every submission is the same payment.
    pub payment: RailPayment,
    /// The pending ledger transfer, posted on confirmation, voided on failure.
    pub hold: LedgerTransfer,
    pub status: PayoutStatus,
    pub tx_hash: Option<String>,
    pub block: Option<u64>,
    pub error_reason: Option<String>,
    pub requested_by: Actor,
    pub on_behalf_of: Option<Party>,
    pub note: Option<String>,
    pub submitted_at: Option<Timestamp>,
    pub next_check_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub settled_at: Option<Timestamp>,
}

impl PayoutRecord {
    pub const KIND: &'static str = "escrow_payout";
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

/// Persisted position of the deposit scanner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ScanCursor {
    pub rail: String,
    pub cursor: String,
    pub created_at: Timestamp,
}

impl Record for ScanCursor {
    const KIND: &'static str = "escrow_scan_cursor";
    fn id(&self) -> String {
        self.rail.clone()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
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
    use stablecoin_core::engine::accounts as core_accounts;

    pub fn chain_in(token: Token) -> LedgerAccount {
        core_accounts::chain_in("tron", token)
    }

    fn deal_account(deal: &EscrowId, what: &str, token: Token) -> LedgerAccount {
        LedgerAccount {
            id: format!("escrow:{deal}:{what}:{token}"),
            allow_negative: false,
        }
    }

    pub fn held(deal: &EscrowId, token: Token) -> LedgerAccount {
        deal_account(deal, "held", token)
    }

    pub fn bucket(deal: &EscrowId, kind: RecoveryKind, token: Token) -> LedgerAccount {
        deal_account(deal, kind.slug(), token)
    }

    pub fn paid_out(deal: &EscrowId, token: Token) -> LedgerAccount {
        deal_account(deal, "paid_out", token)
    }
}
