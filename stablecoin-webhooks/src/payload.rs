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
    /// `transfer.received`, to each member of the receiving wallet
    /// ([`DomainEvent::TransferReceived`]).
    TransferReceived {
        /// The event name, first field of every body.
        event: &'static str,
        /// The transfer's id (`tr_...`), or `dep_<rail>_<tx hash>_<index>`
        /// for an external deposit.
        transfer_id: String,
        /// The receiving wallet's on-chain address (not its `wal_` id).
        recipient_wallet: String,
        /// Amount received, fees deducted: decimal string, 6 places, whatever the token.
        amount_usdc: String,
        /// `USDC` or `USDT`.
        token: &'static str,
        /// The on-chain transaction hash.
        tx_hash: String,
        /// When the transfer was seen confirmed (RFC 3339 UTC).
        settled_at: String,
    },
    /// `transfer.settled`, to the sending tenant ([`DomainEvent::TransferSettled`]).
    TransferSettled {
        /// The event name, first field of every body.
        event: &'static str,
        /// The transfer's id (`tr_...`).
        transfer_id: String,
        /// Always `SETTLED`.
        status: &'static str,
        /// Amount sent, fees included: decimal string, 6 places, whatever the token.
        amount_usdc: String,
        /// `USDC` or `USDT`.
        token: &'static str,
        /// The on-chain transaction hash.
        tx_hash: String,
        /// When the status was recorded (RFC 3339 UTC).
        updated_at: String,
    },
    /// `transfer.failed`, to the sending tenant ([`DomainEvent::TransferFailed`]).
    TransferFailed {
        /// The event name, first field of every body.
        event: &'static str,
        /// The transfer's id (`tr_...`).
        transfer_id: String,
        /// Always `FAILED`.
        status: &'static str,
        /// Amount sent, fees included (decimal string, 6 places); absent before broadcast.
        #[serde(skip_serializing_if = "Option::is_none")]
        amount_usdc: Option<String>,
        /// `USDC` or `USDT`; absent before broadcast.
        #[serde(skip_serializing_if = "Option::is_none")]
        token: Option<&'static str>,
        /// The failed transaction's hash; absent when none was broadcast.
        #[serde(skip_serializing_if = "Option::is_none")]
        tx_hash: Option<String>,
        /// Why it failed, for the tenant's operators.
        reason: String,
        /// When the status was recorded (RFC 3339 UTC).
        updated_at: String,
    },
    /// `swap.settled` ([`DomainEvent::SwapSettled`]); `amount_out` is not reported yet.
    SwapSettled {
        /// The event name, first field of every body.
        event: &'static str,
        /// The swap's id (`sw_...`).
        swap_id: String,
        /// Always `SETTLED`.
        status: &'static str,
        /// Token given (`USDC` or `USDT`).
        token_in: &'static str,
        /// Token received (`USDC` or `USDT`).
        token_out: &'static str,
        /// Amount of `token_in` given: decimal string, 6 places.
        amount_in: String,
        /// The on-chain transaction hash.
        tx_hash: String,
        /// When the status was recorded (RFC 3339 UTC).
        updated_at: String,
    },
    /// `swap.failed` ([`DomainEvent::SwapFailed`]).
    SwapFailed {
        /// The event name, first field of every body.
        event: &'static str,
        /// The swap's id (`sw_...`).
        swap_id: String,
        /// Always `FAILED`.
        status: &'static str,
        /// Token given (`USDC` or `USDT`).
        token_in: &'static str,
        /// Token received (`USDC` or `USDT`).
        token_out: &'static str,
        /// Amount of `token_in` requested: decimal string, 6 places.
        amount_in: String,
        /// Why it failed, for the tenant's operators.
        reason: String,
        /// When the status was recorded (RFC 3339 UTC).
        updated_at: String,
    },
    /// `user.linked`, to the wallet's existing members ([`DomainEvent::UserLinked`]).
    UserLinked {
        /// The event name, first field of every body.
        event: &'static str,
        /// The wallet's address on the primary EVM rail (never its phone).
        wallet_address: String,
        /// The tenant (`ten_...`) that joined.
        new_merchant_id: String,
        /// When the link code was confirmed (RFC 3339 UTC).
        linked_at: String,
    },
    /// `user.phone_changed`, to every member ([`DomainEvent::UserPhoneChanged`]).
    UserPhoneChanged {
        /// The event name, first field of every body.
        event: &'static str,
        /// The wallet's address on the primary EVM rail (never its phone).
        wallet_address: String,
        /// The tenant (`ten_...`) that changed the phone.
        changed_by_merchant_id: String,
        /// When the change code was confirmed (RFC 3339 UTC).
        changed_at: String,
    },
    /// `treasury.topup.credited`, to the tenant whose treasury a staff-confirmed top-up
    /// credited ([`DomainEvent::TreasuryTopupCredited`]). Not in spec 6.1's table (top-ups
    /// are spec 1 item 3's "credits the tenant's stablecoin balance after confirming
    /// receipt"); it follows the family's conventions.
    TreasuryTopupCredited {
        /// The event name, first field of every body.
        event: &'static str,
        /// The top-up's id (`tu_...`).
        topup_id: String,
        /// Always `CREDITED`.
        status: &'static str,
        /// Tokens credited to the treasury: decimal string, 6 places.
        token_amount: String,
        /// `USDC` or `USDT`.
        token: &'static str,
        /// The fiat received: decimal string, 2 places.
        fiat_amount: String,
        /// ISO 4217 code of the fiat.
        currency_code: String,
        /// The fiat receipt's reference staff confirmed.
        fiat_reference: String,
        /// When the credit was recorded (RFC 3339 UTC).
        credited_at: String,
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
            DomainEvent::TreasuryTopupCredited {
                topup_id,
                amount,
                token,
                fiat_amount,
                currency_code,
                fiat_reference,
                credited_at,
            } => WalletPayload::TreasuryTopupCredited {
                event,
                topup_id: topup_id.clone(),
                status: "CREDITED",
                token_amount: amount.to_decimal_string(),
                token: token.as_str(),
                fiat_amount: fiat_amount.clone(),
                currency_code: currency_code.clone(),
                fiat_reference: fiat_reference.clone(),
                credited_at: credited_at.to_rfc3339(),
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
