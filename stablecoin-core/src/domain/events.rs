//! Domain events: what happened, as the engines record it in the outbox.
//!
//! These are business facts with typed fields (micro-units, timestamps). The webhooks
//! crate renders each into its family's exact wire payload (spec section 6); core and
//! escrow never depend on it.

use crate::domain::money::{Micros, Token};
use crate::domain::time::Timestamp;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event")]
pub enum DomainEvent {
    /// A wallet of the tenant received funds (P2P, cross-tenant or external deposit).
    #[serde(rename = "transfer.received")]
    TransferReceived {
        transfer_id: String,
        recipient_wallet: String,
        amount: Micros,
        token: Token,
        tx_hash: String,
        rail: String,
        settled_at: Timestamp,
    },
    /// An outbound transfer the tenant initiated was confirmed on chain.
    #[serde(rename = "transfer.settled")]
    TransferSettled {
        transfer_id: String,
        amount: Micros,
        token: Token,
        tx_hash: String,
        updated_at: Timestamp,
    },
    /// An outbound transfer failed. Amount, token and tx_hash are absent when the
    /// failure came before broadcast (spec 6.1 rule 5: missing means unknown).
    #[serde(rename = "transfer.failed")]
    TransferFailed {
        transfer_id: String,
        reason: String,
        amount: Option<Micros>,
        token: Option<Token>,
        tx_hash: Option<String>,
        updated_at: Timestamp,
    },
    #[serde(rename = "swap.settled")]
    SwapSettled {
        swap_id: String,
        token_in: Token,
        token_out: Token,
        amount_in: Micros,
        tx_hash: String,
        updated_at: Timestamp,
    },
    #[serde(rename = "swap.failed")]
    SwapFailed {
        swap_id: String,
        token_in: Token,
        token_out: Token,
        amount_in: Micros,
        reason: String,
        updated_at: Timestamp,
    },
    /// A new tenant gained operating rights; sent to the existing members.
    #[serde(rename = "user.linked")]
    UserLinked {
        wallet_address: String,
        new_merchant_id: String,
        linked_at: Timestamp,
    },
    /// A wallet's phone was re-keyed; sent to every member.
    #[serde(rename = "user.phone_changed")]
    UserPhoneChanged {
        wallet_address: String,
        changed_by_merchant_id: String,
        changed_at: Timestamp,
    },
}

impl DomainEvent {
    pub fn name(&self) -> &'static str {
        match self {
            DomainEvent::TransferReceived { .. } => "transfer.received",
            DomainEvent::TransferSettled { .. } => "transfer.settled",
            DomainEvent::TransferFailed { .. } => "transfer.failed",
            DomainEvent::SwapSettled { .. } => "swap.settled",
            DomainEvent::SwapFailed { .. } => "swap.failed",
            DomainEvent::UserLinked { .. } => "user.linked",
            DomainEvent::UserPhoneChanged { .. } => "user.phone_changed",
        }
    }
}
