//! Wire payloads of the wallet-service family (spec 6.1), rendered from the core's
//! [`DomainEvent`]s exactly as the spec lists their fields, in that order.
//!
//! Formats: amounts are decimal strings with 6 places (`"24.925000"`), timestamps RFC
//! 3339 UTC. Empty fields are omitted, never `null` (rule 5): a `transfer.failed` before
//! broadcast has no `amount_usdc`, `token` or `tx_hash`. `transfer.received` carries
//! `settled_at`; the status events carry `updated_at`. `amount_usdc` is the spec's name for
//! the amount whatever the token (`token` says which one). Golden files in
//! `tests/fixtures/wallet/` pin every payload byte for byte.

use crate::error::{WebhookError, WebhookResult};
use serde::Serialize;
use stablecoin_core::domain::events::DomainEvent;

/// One wallet-service webhook body. Field order is the spec's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum WalletPayload {
    TransferReceived {
        event: &'static str,
        transfer_id: String,
        recipient_wallet: String,
        amount_usdc: String,
        token: &'static str,
        tx_hash: String,
        settled_at: String,
    },
    TransferSettled {
        event: &'static str,
        transfer_id: String,
        status: &'static str,
        amount_usdc: String,
        token: &'static str,
        tx_hash: String,
        updated_at: String,
    },
    TransferFailed {
        event: &'static str,
        transfer_id: String,
        status: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        amount_usdc: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        token: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tx_hash: Option<String>,
        reason: String,
        updated_at: String,
    },
    SwapSettled {
        event: &'static str,
        swap_id: String,
        status: &'static str,
        token_in: &'static str,
        token_out: &'static str,
        amount_in: String,
        tx_hash: String,
        updated_at: String,
    },
    SwapFailed {
        event: &'static str,
        swap_id: String,
        status: &'static str,
        token_in: &'static str,
        token_out: &'static str,
        amount_in: String,
        reason: String,
        updated_at: String,
    },
    UserLinked {
        event: &'static str,
        wallet_address: String,
        new_merchant_id: String,
        linked_at: String,
    },
    UserPhoneChanged {
        event: &'static str,
        wallet_address: String,
        changed_by_merchant_id: String,
        changed_at: String,
    },
}

fn non_empty(s: &Option<String>) -> Option<String> {
    s.as_ref().filter(|v| !v.is_empty()).cloned()
}

impl WalletPayload {
    /// The wire form of a domain event.
    pub fn from_event(e: &DomainEvent) -> WalletPayload {
        let event = e.name();
        match e {
            DomainEvent::TransferReceived {
                transfer_id,
                recipient_wallet,
                amount,
                token,
                tx_hash,
                settled_at,
                ..
            } => WalletPayload::TransferReceived {
                event,
                transfer_id: transfer_id.clone(),
                recipient_wallet: recipient_wallet.clone(),
                amount_usdc: amount.to_decimal_string(),
                token: token.as_str(),
                tx_hash: tx_hash.clone(),
                settled_at: settled_at.to_rfc3339(),
            },
            DomainEvent::TransferSettled {
                transfer_id,
                amount,
                token,
                tx_hash,
                updated_at,
            } => WalletPayload::TransferSettled {
                event,
                transfer_id: transfer_id.clone(),
                status: "SETTLED",
                amount_usdc: amount.to_decimal_string(),
                token: token.as_str(),
                tx_hash: tx_hash.clone(),
                updated_at: updated_at.to_rfc3339(),
            },
            DomainEvent::TransferFailed {
                transfer_id,
                reason,
                amount,
                token,
                tx_hash,
                updated_at,
            } => WalletPayload::TransferFailed {
                event,
                transfer_id: transfer_id.clone(),
                status: "FAILED",
                amount_usdc: amount.map(|a| a.to_decimal_string()),
                token: token.map(|t| t.as_str()),
                tx_hash: non_empty(tx_hash),
                reason: reason.clone(),
                updated_at: updated_at.to_rfc3339(),
            },
            DomainEvent::SwapSettled {
                swap_id,
                token_in,
                token_out,
                amount_in,
                tx_hash,
                updated_at,
            } => WalletPayload::SwapSettled {
                event,
                swap_id: swap_id.clone(),
                status: "SETTLED",
                token_in: token_in.as_str(),
                token_out: token_out.as_str(),
                amount_in: amount_in.to_decimal_string(),
                tx_hash: tx_hash.clone(),
                updated_at: updated_at.to_rfc3339(),
            },
            DomainEvent::SwapFailed {
                swap_id,
                token_in,
                token_out,
                amount_in,
                reason,
                updated_at,
            } => WalletPayload::SwapFailed {
                event,
                swap_id: swap_id.clone(),
                status: "FAILED",
                token_in: token_in.as_str(),
                token_out: token_out.as_str(),
                amount_in: amount_in.to_decimal_string(),
                reason: reason.clone(),
                updated_at: updated_at.to_rfc3339(),
            },
            DomainEvent::UserLinked {
                wallet_address,
                new_merchant_id,
                linked_at,
            } => WalletPayload::UserLinked {
                event,
                wallet_address: wallet_address.clone(),
                new_merchant_id: new_merchant_id.clone(),
                linked_at: linked_at.to_rfc3339(),
            },
            DomainEvent::UserPhoneChanged {
                wallet_address,
                changed_by_merchant_id,
                changed_at,
            } => WalletPayload::UserPhoneChanged {
                event,
                wallet_address: wallet_address.clone(),
                changed_by_merchant_id: changed_by_merchant_id.clone(),
                changed_at: changed_at.to_rfc3339(),
            },
        }
    }

    /// The exact body bytes that are signed and sent (compact JSON).
    pub fn to_body(&self) -> WebhookResult<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| WebhookError::InvalidParameter {
            field: "payload",
            reason: e.to_string(),
        })
    }
}
