//! The API shape of an operation, built by `Operation::view`.

use serde::{Deserialize, Serialize};

/// The API shape of an operation (API-CONVENTIONS: id, status, timestamps; absent
/// fields are omitted, never null).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperationView {
    /// The operation id (`tr_...`).
    pub id: String,
    /// The kind: `"funding"`, `"transfer"`, `"swap"` or `"withdrawal"`.
    pub object: String,
    /// Wire name of the status (`"SUBMITTED"`).
    pub status: String,
    /// Why it failed (or why a refunded withdrawal's payout was not delivered).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error_reason: Option<String>,
    /// Rail name (`"polygon"`, `"base"`, `"tron"`, `"solana"`, ...).
    pub rail: String,
    /// Token symbol (`"USDC"`).
    pub token: String,
    /// What the sender is debited, in tokens with six decimals (`"12.500000"`).
    pub amount: String,
    /// Transfers: what the recipient receives, after fees.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub recipient_amount: Option<String>,
    /// Transfers: the service's fee.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub service_fee: Option<String>,
    /// Transfers: the tenant's fee.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tenant_fee: Option<String>,
    /// Transfers: true when the tenant's fee was waived (it did not fit the amount).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tenant_fee_waived: Option<bool>,
    /// The sender's phone (E.164), when a wallet sends.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub from_phone_number: Option<String>,
    /// The recipient's phone (E.164), when a wallet receives.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub to_phone_number: Option<String>,
    /// The `fx_...` quote a transfer consumed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub quote_id: Option<String>,
    /// The on-chain transaction, once the rail reports one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tx_hash: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339, last change.
    pub updated_at: String,
    /// RFC 3339, when it settled (or a withdrawal completed).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub settled_at: Option<String>,
    /// Withdrawals: the fiat currency paid out (`"XOF"`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payout_currency: Option<String>,
    /// Withdrawals: the fiat amount paid out, in that currency's major unit.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payout_amount: Option<String>,
    /// Withdrawals: the provider's evidence of delivery, once COMPLETED.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payout_reference: Option<String>,
    /// Withdrawals: the refund's transaction, once REFUNDED.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub refund_tx_hash: Option<String>,
    /// Solana transfers, once confirmed: whether the service paid the rent of the
    /// recipient's new token account (spec 1.5).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub created_recipient_ata: Option<bool>,
    /// Swaps: the swap's id under the `swap.*` webhooks' name (`swap_id`); the same value
    /// as `id`, which stays (spec 6.1: the read carries the webhooks' status fields).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub swap_id: Option<String>,
    /// Swaps, once FAILED: why, under the `swap.failed` webhook's name (`reason`); the
    /// same value as `error_reason`, which stays.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// Swaps: the token given (the same as `token`, named as in the swap webhooks).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token_in: Option<String>,
    /// Swaps: the token received.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub token_out: Option<String>,
    /// Swaps: what is given, exactly (the same as `amount`, named as in the webhooks).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub amount_in: Option<String>,
    /// Swaps: what the venue quoted for `amount_in` when the swap was accepted.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub quoted_amount_out: Option<String>,
    /// Swaps: the least `token_out` accepted (the quote less the slippage allowed).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub min_amount_out: Option<String>,
    /// Swaps: what the wallet received, read from the chain once SETTLED (the
    /// `swap.settled` webhook does not carry it, spec 6.1).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub amount_out: Option<String>,
    /// Swaps: the venue that executed it (`uniswap_v2`, `treasury`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub venue: Option<String>,
}

/// The result of a send: the operation as accepted.
pub type SendView = OperationView;
