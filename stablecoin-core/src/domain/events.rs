//! Domain events: what happened, as the engines record it in the outbox.
//!
//! These are business facts with typed fields (micro-units, timestamps). The webhooks
//! crate renders each into its family's exact wire payload (spec section 6); core and
//! escrow never depend on it.

use crate::domain::money::{Micros, Token};
use crate::domain::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The webhook event told to the tenant whose sandbox address received real money (an
/// addition to the spec's wallet-family events; built by `kernel::stray`). Here, in the
/// domain, so that the webhook crate names it without depending on the kernel.
pub const STRAY_DEPOSIT_EVENT: &str = "sandbox.stray_deposit";

/// The webhook event told to the tenant whose address received a deposit from a source
/// the sanctions screen flagged (issue #51): held in quarantine, not credited, until
/// staff release or return it; sent again with each of those decisions' outcomes (an
/// addition to the spec's wallet-family events; built by `kernel::quarantine`).
pub const DEPOSIT_QUARANTINED_EVENT: &str = "deposit.quarantined";

/// One business fact for one tenant, as the engines write it to the outbox in the same
/// commit as the change it reports; its serde tag `event` is the webhook event name
/// ([`DomainEvent::name`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event")]
pub enum DomainEvent {
    /// A wallet of the tenant received funds (P2P, cross-tenant or external deposit).
    #[serde(rename = "transfer.received")]
    TransferReceived {
        /// The transfer's operation id (`tr_...`), or `dep_<rail>_<tx hash>_<log index>`
        /// for an external deposit (the same on every rescan).
        transfer_id: String,
        /// The receiving wallet's address on `rail` (not its `wal_` id).
        recipient_wallet: String,
        /// What the recipient got, fees already deducted.
        amount: Micros,
        /// Token received.
        token: Token,
        /// The on-chain transaction hash, as the rail reports it.
        tx_hash: String,
        /// The rail it arrived on (`"polygon"`, `"tron"`, ...).
        rail: String,
        /// When the engine saw it confirmed.
        settled_at: Timestamp,
    },
    /// An outbound transfer the tenant initiated was confirmed on chain.
    #[serde(rename = "transfer.settled")]
    TransferSettled {
        /// The operation id (`tr_...`).
        transfer_id: String,
        /// The amount sent, fees included.
        amount: Micros,
        /// Token sent.
        token: Token,
        /// The on-chain transaction hash.
        tx_hash: String,
        /// When the engine saw it confirmed.
        updated_at: Timestamp,
    },
    /// An outbound transfer failed. Amount, token and tx_hash are absent when the
    /// failure came before broadcast (spec 6.1 rule 5: missing means unknown).
    #[serde(rename = "transfer.failed")]
    TransferFailed {
        /// The operation id (`tr_...`).
        transfer_id: String,
        /// Why it failed, for the tenant's operators.
        reason: String,
        /// The amount sent, fees included; `None` before broadcast.
        amount: Option<Micros>,
        /// Token sent; `None` before broadcast.
        token: Option<Token>,
        /// The hash of the failed transaction; `None` when none was broadcast.
        tx_hash: Option<String>,
        /// When the engine recorded the failure.
        updated_at: Timestamp,
    },
    /// A swap the tenant requested was confirmed on chain (`amount_out` is not reported
    /// yet: reconcile with `tx_hash`).
    #[serde(rename = "swap.settled")]
    SwapSettled {
        /// The operation id (`sw_...`).
        swap_id: String,
        /// Token given.
        token_in: Token,
        /// Token received.
        token_out: Token,
        /// Amount of `token_in` given.
        amount_in: Micros,
        /// The on-chain transaction hash.
        tx_hash: String,
        /// When the engine saw it confirmed.
        updated_at: Timestamp,
    },
    /// A swap the tenant requested failed.
    #[serde(rename = "swap.failed")]
    SwapFailed {
        /// The operation id (`sw_...`).
        swap_id: String,
        /// Token to give.
        token_in: Token,
        /// Token to receive.
        token_out: Token,
        /// Amount of `token_in` requested.
        amount_in: Micros,
        /// Why it failed, for the tenant's operators.
        reason: String,
        /// When the engine recorded the failure.
        updated_at: Timestamp,
    },
    /// A new tenant gained operating rights; sent to the existing members.
    #[serde(rename = "user.linked")]
    UserLinked {
        /// The wallet's address on the primary EVM rail (never its phone).
        wallet_address: String,
        /// The tenant id (`ten_...`) that joined.
        new_merchant_id: String,
        /// When the code was confirmed.
        linked_at: Timestamp,
    },
    /// A wallet's phone was re-keyed; sent to every member.
    #[serde(rename = "user.phone_changed")]
    UserPhoneChanged {
        /// The wallet's address on the primary EVM rail; unchanged by the re-keying.
        wallet_address: String,
        /// The tenant id (`ten_...`) that made the change.
        changed_by_merchant_id: String,
        /// When the code was confirmed.
        changed_at: Timestamp,
    },
    /// Staff confirmed a top-up's fiat and the tenant's treasury was credited (once).
    #[serde(rename = "treasury.topup.credited")]
    TreasuryTopupCredited {
        /// The top-up (`tu_...`).
        topup_id: String,
        /// Tokens credited to the treasury.
        amount: Micros,
        /// Token credited.
        token: Token,
        /// The fiat received, two decimals (`"600000.00"`).
        fiat_amount: String,
        /// ISO 4217 code of the fiat.
        currency_code: String,
        /// The fiat receipt's reference.
        fiat_reference: String,
        /// When the confirmation was recorded.
        credited_at: Timestamp,
    },
}

impl DomainEvent {
    /// The event name of the wire payload (`transfer.received`, ...), equal to the serde
    /// tag.
    pub fn name(&self) -> &'static str {
        match self {
            DomainEvent::TransferReceived { .. } => "transfer.received",
            DomainEvent::TransferSettled { .. } => "transfer.settled",
            DomainEvent::TransferFailed { .. } => "transfer.failed",
            DomainEvent::SwapSettled { .. } => "swap.settled",
            DomainEvent::SwapFailed { .. } => "swap.failed",
            DomainEvent::UserLinked { .. } => "user.linked",
            DomainEvent::UserPhoneChanged { .. } => "user.phone_changed",
            DomainEvent::TreasuryTopupCredited { .. } => "treasury.topup.credited",
        }
    }
}
