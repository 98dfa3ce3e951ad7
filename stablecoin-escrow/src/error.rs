//! The one error enum of `stablecoin-escrow`, with a stable machine code per variant.
//!
//! Codes are part of the public contract (the server returns them verbatim and maps them
//! to HTTP in one place); a variant may gain fields but its code never changes.
//!
//! | code | class | when |
//! |---|---|---|
//! | `INVALID_AMOUNT` | bad input | amount not a positive whole-token string, or above the limit |
//! | `INVALID_PHONE` | bad input | a party phone number is not E.164 |
//! | `UNKNOWN_TOKEN` / `UNSUPPORTED_TOKEN` | bad input | token is not USDC/USDT / escrow moves only TRON USDT |
//! | `INVALID_PARAMETER` | bad input | a field is out of bounds (`on_behalf_of`, windows, `reference`, `limit`, ...) |
//! | `MISSING_PARAMETER` | bad input | a required field is absent (`reason` of a dispute, `resolution_note`, recovery `note`) |
//! | `SAME_WALLET` | bad input | buyer and seller are the same wallet |
//! | `INVALID_IDEMPOTENCY_KEY` | bad input | not 1-255 printable ASCII characters |
//! | `INVALID_API_KEY` | authority | a key of another kind (checkout business key) called the escrow API |
//! | `NOT_A_MEMBER` | authority | the calling tenant is not a member of the buyer's or seller's wallet |
//! | `SANDBOX_UNSUPPORTED` | authority | a test key called an escrow mutation that has no simulation |
//! | `NOT_FOUND` | not found | no such escrow for this tenant (also: another tenant's escrow), or no wallet for a phone |
//! | `INVALID_STATE` | state conflict | the action is not permitted from the escrow's current state |
//! | `PAYOUT_IN_FLIGHT` | state conflict | a payout is claimed and not yet settled (repeat release, dispute after release, ...) |
//! | `NOTHING_TO_RECOVER` | state conflict | no recoverable balance of that kind |
//! | `CONFLICT` | state conflict (retryable) | concurrent updates kept colliding |
//! | `IDEMPOTENCY_KEY_REUSED` | semantic | same key, other request |
//! | `IDEMPOTENCY_KEY_IN_USE` | state conflict (retryable) | same key, first request still running |
//! | `ESCROW_UNAVAILABLE` | unavailable | TRON deposits are disabled: no new escrow is admitted |
//! | `RAIL_NOT_READY` | unavailable | TRON readiness is not READY (sponsored payouts unavailable) |
//! | `RAIL_ERROR` / `STORAGE_ERROR` / `INVALID_CONFIG` | internal | a dependency failed / misconfiguration |

use stablecoin_core::CoreError;
use stablecoin_core::ports::{RailError, StoreError};
use thiserror::Error;

use crate::state::TransitionError;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EscrowError {
    // ---- bad input ----
    #[error("invalid amount {input:?}: {reason}")]
    InvalidAmount { input: String, reason: String },
    #[error("invalid phone number in {field}: {reason}")]
    InvalidPhone { field: &'static str, reason: String },
    #[error("unknown token {token:?}: expected USDT")]
    UnknownToken { token: String },
    #[error("token {token} is not supported by escrow: only TRON USDT has an adapter")]
    UnsupportedToken { token: String },
    #[error("invalid {field}: {reason}")]
    InvalidParameter { field: &'static str, reason: String },
    #[error("{field} is required: {reason}")]
    MissingParameter { field: &'static str, reason: String },
    #[error("buyer and seller must be different wallets")]
    SameWallet,
    #[error("invalid idempotency key: {reason}")]
    InvalidIdempotencyKey { reason: String },

    // ---- authority ----
    #[error("this API key cannot call the escrow API")]
    InvalidApiKey,
    #[error("the calling tenant is not a member of the {party} wallet")]
    NotAMember { party: &'static str },
    #[error("this escrow action is not supported with a sandbox (test) key")]
    SandboxUnsupported,

    // ---- not found ----
    #[error("{kind} {id} not found")]
    NotFound {
        kind: &'static str,
        id: String,
        /// The request field that named it, when one did.
        field: Option<&'static str>,
    },

    // ---- state ----
    #[error("{action} is not permitted from state {state}")]
    InvalidState { state: String, action: String },
    #[error("a payout of this escrow is already in flight; {action} is refused")]
    PayoutInFlight { action: String },
    #[error("nothing to recover: no {kind} balance")]
    NothingToRecover { kind: String },
    #[error("concurrent update of {what}; retry")]
    Conflict { what: String },
    #[error("idempotency key was already used with other parameters")]
    IdempotencyKeyReused,
    #[error("a request with this idempotency key is still in progress")]
    IdempotencyKeyInUse,

    // ---- dependencies ----
    #[error("escrow is unavailable: {reason}")]
    EscrowUnavailable { reason: String },
    #[error("rail {rail} is not ready: {reason}")]
    RailNotReady { rail: String, reason: String },
    #[error("rail error: {0}")]
    Rail(String),
    #[error("storage error: {0}")]
    Storage(String),
    #[error("invalid escrow configuration: {0}")]
    InvalidConfig(String),
}

impl EscrowError {
    /// The stable machine code of this error.
    pub fn code(&self) -> &'static str {
        use EscrowError::*;
        match self {
            InvalidAmount { .. } => "INVALID_AMOUNT",
            InvalidPhone { .. } => "INVALID_PHONE",
            UnknownToken { .. } => "UNKNOWN_TOKEN",
            UnsupportedToken { .. } => "UNSUPPORTED_TOKEN",
            InvalidParameter { .. } => "INVALID_PARAMETER",
            MissingParameter { .. } => "MISSING_PARAMETER",
            SameWallet => "SAME_WALLET",
            InvalidIdempotencyKey { .. } => "INVALID_IDEMPOTENCY_KEY",
            InvalidApiKey => "INVALID_API_KEY",
            NotAMember { .. } => "NOT_A_MEMBER",
            SandboxUnsupported => "SANDBOX_UNSUPPORTED",
            NotFound { .. } => "NOT_FOUND",
            InvalidState { .. } => "INVALID_STATE",
            PayoutInFlight { .. } => "PAYOUT_IN_FLIGHT",
            NothingToRecover { .. } => "NOTHING_TO_RECOVER",
            Conflict { .. } => "CONFLICT",
            IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            IdempotencyKeyInUse => "IDEMPOTENCY_KEY_IN_USE",
            EscrowUnavailable { .. } => "ESCROW_UNAVAILABLE",
            RailNotReady { .. } => "RAIL_NOT_READY",
            Rail(_) => "RAIL_ERROR",
            Storage(_) => "STORAGE_ERROR",
            InvalidConfig(_) => "INVALID_CONFIG",
        }
    }

    /// The request field at fault, where one is.
    pub fn param(&self) -> Option<&'static str> {
        use EscrowError::*;
        match self {
            InvalidAmount { .. } => Some("amount"),
            InvalidPhone { field, .. }
            | InvalidParameter { field, .. }
            | MissingParameter { field, .. } => Some(field),
            UnknownToken { .. } | UnsupportedToken { .. } => Some("token"),
            NotFound { field, .. } => *field,
            _ => None,
        }
    }

    /// True when the same call may succeed later without any change by the caller.
    pub fn is_retryable(&self) -> bool {
        use EscrowError::*;
        matches!(
            self,
            Conflict { .. }
                | IdempotencyKeyInUse
                | EscrowUnavailable { .. }
                | RailNotReady { .. }
                | Rail(_)
                | Storage(_)
        )
    }
}

pub type EscrowResult<T> = Result<T, EscrowError>;

impl From<TransitionError> for EscrowError {
    fn from(e: TransitionError) -> Self {
        match e {
            TransitionError::InvalidState { from, action } => EscrowError::InvalidState {
                state: from.state.as_str().to_string(),
                action: action.as_str().to_string(),
            },
            TransitionError::PayoutInFlight { action, .. } => EscrowError::PayoutInFlight {
                action: action.as_str().to_string(),
            },
        }
    }
}

impl From<CoreError> for EscrowError {
    fn from(e: CoreError) -> Self {
        match e {
            CoreError::InvalidAmount { input, reason } => {
                EscrowError::InvalidAmount { input, reason }
            }
            CoreError::UnknownToken { token } => EscrowError::UnknownToken { token },
            CoreError::InvalidParameter { field, reason } => {
                EscrowError::InvalidParameter { field, reason }
            }
            CoreError::InvalidIdempotencyKey { reason } => {
                EscrowError::InvalidIdempotencyKey { reason }
            }
            CoreError::NotFound { kind, id } => EscrowError::NotFound {
                kind,
                id,
                field: None,
            },
            CoreError::Conflict { what, .. } => EscrowError::Conflict { what },
            CoreError::RailNotReady { rail, reason } => EscrowError::RailNotReady { rail, reason },
            CoreError::Rail(r) => EscrowError::Rail(r),
            other => EscrowError::Storage(other.to_string()),
        }
    }
}

/// Maps a failed commit: version and unique-key conflicts become `CONFLICT` (the caller
/// decides again), anything else is a storage error. Nothing of the batch was written.
pub(crate) fn store_err(e: StoreError) -> EscrowError {
    match e {
        StoreError::VersionConflict { kind, id } => EscrowError::Conflict {
            what: format!("{kind} {id}"),
        },
        StoreError::UniqueViolation { key } => EscrowError::Conflict { what: key },
        StoreError::IdempotencyExists { .. } => EscrowError::IdempotencyKeyInUse,
        other => EscrowError::Storage(other.to_string()),
    }
}

pub(crate) fn rail_err(e: RailError) -> EscrowError {
    match e {
        RailError::Unavailable { reason } => EscrowError::RailNotReady {
            rail: "tron".into(),
            reason,
        },
        other => EscrowError::Rail(other.to_string()),
    }
}
