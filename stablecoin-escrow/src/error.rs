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
//! | `SAME_WALLET` | semantic | buyer and seller are the same wallet |
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
use stablecoin_core::kernel::idempotency::{INVALID_KEY_REASON, IdempotencyError};
use stablecoin_core::kernel::{ErrorClass, ProductError};
use stablecoin_core::ports::{RailError, StoreError};
use thiserror::Error;

use crate::state::TransitionError;

/// Every failure of the escrow API; [`EscrowError::code`] is the stable machine code (see
/// the module table), and the server maps its [`ErrorClass`] to an HTTP status.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EscrowError {
    // ---- bad input ----
    /// `INVALID_AMOUNT`: not a positive whole-token string, or above
    /// [`EscrowConfig::max_amount`](crate::model::EscrowConfig::max_amount).
    #[error("invalid amount {input:?}: {reason}")]
    InvalidAmount {
        /// The amount as the caller sent it.
        input: String,
        /// Why it was refused, for humans.
        reason: String,
    },
    /// `INVALID_PHONE`: a party phone number is not E.164.
    #[error("invalid phone number in {field}: {reason}")]
    InvalidPhone {
        /// The request field that held it (`buyer_phone_number` or `seller_phone_number`).
        field: &'static str,
        /// Why it was refused, for humans.
        reason: String,
    },
    /// `UNKNOWN_TOKEN`: the token is not one the SDK knows.
    #[error("unknown token {token:?}: expected USDT")]
    UnknownToken {
        /// The token as the caller sent it.
        token: String,
    },
    /// `UNSUPPORTED_TOKEN`: a known token that escrow does not move (only TRON USDT does).
    #[error("token {token} is not supported by escrow: only TRON USDT has an adapter")]
    UnsupportedToken {
        /// The refused token's symbol.
        token: String,
    },
    /// `INVALID_PARAMETER`: a field is out of bounds (`on_behalf_of`, windows,
    /// `reference`, `limit`, a cursor, ...).
    #[error("invalid {field}: {reason}")]
    InvalidParameter {
        /// The request field at fault (also [`EscrowError::param`]).
        field: &'static str,
        /// The bound it broke, for humans.
        reason: String,
    },
    /// `MISSING_PARAMETER`: a required field is absent or blank (`reference`, a dispute's
    /// `reason`, `resolution_note`, a recovery's `note`).
    #[error("{field} is required: {reason}")]
    MissingParameter {
        /// The absent request field (also [`EscrowError::param`]).
        field: &'static str,
        /// Why it is required here, for humans.
        reason: String,
    },
    /// `SAME_WALLET`: the buyer and the seller have the same phone number or resolve to
    /// the same wallet.
    #[error("buyer and seller must be different wallets")]
    SameWallet,
    /// `INVALID_IDEMPOTENCY_KEY`: not 1 to 255 printable ASCII characters.
    #[error("invalid idempotency key: {reason}")]
    InvalidIdempotencyKey {
        /// Why the key was refused, for humans.
        reason: String,
    },

    // ---- authority ----
    /// `INVALID_API_KEY`: a key of another kind (a checkout business key) called the
    /// escrow API.
    #[error("this API key cannot call the escrow API")]
    InvalidApiKey,
    /// `NOT_A_MEMBER`: the calling tenant is not a member of a party's wallet.
    #[error("the calling tenant is not a member of the {party} wallet")]
    NotAMember {
        /// Which party's wallet: `buyer` or `seller`.
        party: &'static str,
    },
    /// `SANDBOX_UNSUPPORTED`: a test key called an escrow mutation that has no
    /// simulation.
    #[error("this escrow action is not supported with a sandbox (test) key")]
    SandboxUnsupported,

    // ---- not found ----
    /// `NOT_FOUND`: no such escrow for this tenant (another tenant's escrow is reported
    /// the same way), or no wallet for a party's phone.
    #[error("{kind} {id} not found")]
    NotFound {
        /// What was looked up: `escrow`, `wallet`, ...
        kind: &'static str,
        /// The id looked up (truncated; a phone number is masked).
        id: String,
        /// The request field that named it, when one did.
        field: Option<&'static str>,
    },

    // ---- state ----
    /// `INVALID_STATE`: the action is not permitted from the escrow's current state
    /// (see [`transition`](crate::state::transition)).
    #[error("{action} is not permitted from state {state}")]
    InvalidState {
        /// The escrow's current state, as on the wire (`FUNDED`, ...).
        state: String,
        /// The refused action (`release`, `dispute`, ...).
        action: String,
    },
    /// `PAYOUT_IN_FLIGHT`: a payout is claimed and not yet settled (a repeated release, a
    /// dispute after a release, ...); retry once the payout confirmed or failed.
    #[error("a payout of this escrow is already in flight; {action} is refused")]
    PayoutInFlight {
        /// The refused action (`release`, `dispute`, ...).
        action: String,
    },
    /// `NOTHING_TO_RECOVER`: the escrow holds no recoverable balance of that kind.
    #[error("nothing to recover: no {kind} balance")]
    NothingToRecover {
        /// The recovery kind and token asked for (`LATE USDT`, ...).
        kind: String,
    },
    /// `SECOND_APPROVER_REQUIRED`: the two-person rule applies to this deal and the
    /// staff member who proposed the resolution tried to approve it themselves.
    #[error("this resolution awaits approval by a different staff member than {proposed_by}")]
    SecondApproverRequired {
        /// Who proposed it.
        proposed_by: String,
    },
    /// `RESOLUTION_MISMATCH`: a second staff member asked for another resolution than
    /// the pending proposal; nothing changed (the proposer may replace the proposal).
    #[error("the pending proposal is {proposed}; approve it or ask its proposer to change it")]
    ResolutionMismatch {
        /// The pending proposal's resolution (`RELEASE` or `REFUND`).
        proposed: String,
    },
    /// `APPROVAL_MISMATCH`: a second staff member's recovery approval names another
    /// kind, token or amount than the pending proposal; nothing changed (the proposer
    /// may replace the proposal).
    #[error("the approval's {field} differs from the pending proposal's")]
    ApprovalMismatch {
        /// What differs (`kind`, `token`, `amount`).
        field: &'static str,
    },
    /// `CONFLICT` (retryable): concurrent updates kept colliding; nothing was written.
    #[error("concurrent update of {what}; retry")]
    Conflict {
        /// The record or unique key that collided, for logs.
        what: String,
    },
    /// `IDEMPOTENCY_KEY_REUSED`: the key was already used with another request.
    #[error("idempotency key was already used with other parameters")]
    IdempotencyKeyReused,
    /// `IDEMPOTENCY_KEY_IN_USE` (retryable): the first request with this key is still
    /// running.
    #[error("a request with this idempotency key is still in progress")]
    IdempotencyKeyInUse,

    // ---- dependencies ----
    /// `ESCROW_UNAVAILABLE` (retryable): TRON deposits are disabled, so no new escrow is
    /// admitted.
    #[error("escrow is unavailable: {reason}")]
    EscrowUnavailable {
        /// Why, for humans.
        reason: String,
    },
    /// `RAIL_NOT_READY` (retryable): the TRON rail is not READY, so sponsored payouts are
    /// unavailable.
    #[error("rail {rail} is not ready: {reason}")]
    RailNotReady {
        /// The rail's name (`tron`).
        rail: String,
        /// The rail's readiness reason, for humans.
        reason: String,
    },
    /// `SCREENING_HIT`: sanctions screening lists the payout's destination (the party's
    /// linked wallet); nothing was claimed. The list and entry are in the staff audit
    /// log, never in the message.
    #[error("the payout's destination is blocked by sanctions screening")]
    ScreeningHit {
        /// The list that names the address (audit only).
        list: String,
        /// The list's entry (audit only).
        reference: String,
    },
    /// `POLICY_DENIED`: one of the tenant's spending policies refuses the payout (issue
    /// #51); nothing was claimed. The refusal is audited by the wallet engine.
    #[error("a spending policy refuses the payout: {reason}")]
    PolicyDenied {
        /// `<policy id>:<rule>`, answered as the error's `rule_id`.
        rule_id: String,
        /// Why, for the caller.
        reason: String,
    },
    /// `SCREENING_UNAVAILABLE` (retryable): the screen could not answer and the
    /// deployment fails closed; nothing was claimed.
    #[error("sanctions screening is unavailable; nothing was claimed")]
    ScreeningUnavailable {
        /// Why (operators only).
        reason: String,
    },
    /// `RAIL_ERROR` (retryable): the rail failed; the text is for logs, not for callers.
    #[error("rail error: {0}")]
    Rail(String),
    /// `STORAGE_ERROR` (retryable): the store failed; the text is for logs, not for
    /// callers.
    #[error("storage error: {0}")]
    Storage(String),
    /// `INVALID_CONFIG`: the escrow configuration or its ports are inconsistent (raised by
    /// [`EscrowEngine::new`](crate::engine::EscrowEngine::new)).
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
            SecondApproverRequired { .. } => "SECOND_APPROVER_REQUIRED",
            ResolutionMismatch { .. } => "RESOLUTION_MISMATCH",
            ApprovalMismatch { .. } => "APPROVAL_MISMATCH",
            Conflict { .. } => "CONFLICT",
            IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            IdempotencyKeyInUse => "IDEMPOTENCY_KEY_IN_USE",
            EscrowUnavailable { .. } => "ESCROW_UNAVAILABLE",
            RailNotReady { .. } => "RAIL_NOT_READY",
            ScreeningHit { .. } => "SCREENING_HIT",
            PolicyDenied { .. } => "POLICY_DENIED",
            ScreeningUnavailable { .. } => "SCREENING_UNAVAILABLE",
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
            ResolutionMismatch { .. } => Some("resolution"),
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
                | ScreeningUnavailable { .. }
                | Rail(_)
                | Storage(_)
        )
    }
}

/// The class of every variant decides its HTTP status in the server, the same table as
/// the core's; the match has no catch-all, so a new variant must choose its class here.
impl ProductError for EscrowError {
    fn code(&self) -> &'static str {
        EscrowError::code(self)
    }

    fn class(&self) -> ErrorClass {
        use EscrowError::*;
        match self {
            InvalidAmount { .. }
            | InvalidPhone { .. }
            | UnknownToken { .. }
            | UnsupportedToken { .. }
            | InvalidParameter { .. }
            | MissingParameter { .. }
            | InvalidIdempotencyKey { .. } => ErrorClass::BadInput,
            InvalidApiKey => ErrorClass::Unauthorized,
            NotAMember { .. } | SandboxUnsupported | ScreeningHit { .. } | PolicyDenied { .. } => {
                ErrorClass::Forbidden
            }
            NotFound { .. } => ErrorClass::NotFound,
            InvalidState { .. }
            | PayoutInFlight { .. }
            | NothingToRecover { .. }
            | SecondApproverRequired { .. }
            | ResolutionMismatch { .. }
            | ApprovalMismatch { .. }
            | Conflict { .. }
            | IdempotencyKeyInUse => ErrorClass::Conflict,
            SameWallet | IdempotencyKeyReused => ErrorClass::Unprocessable,
            EscrowUnavailable { .. } | RailNotReady { .. } | ScreeningUnavailable { .. } => {
                ErrorClass::Unavailable
            }
            Rail(_) => ErrorClass::Upstream,
            Storage(_) | InvalidConfig(_) => ErrorClass::Internal,
        }
    }

    fn param(&self) -> Option<&str> {
        EscrowError::param(self)
    }

    fn rule_id(&self) -> Option<&str> {
        match self {
            EscrowError::PolicyDenied { rule_id, .. } => Some(rule_id),
            _ => None,
        }
    }

    /// Not the class default: a lost race, a busy idempotency key and a failed store pass
    /// by themselves.
    fn is_retryable(&self) -> bool {
        EscrowError::is_retryable(self)
    }

    fn public_message(&self) -> Option<&'static str> {
        use EscrowError::*;
        match self {
            Storage(_) | InvalidConfig(_) => Some("internal error; the request may be retried"),
            Rail(_) => Some("the blockchain rail failed; the request may be retried"),
            _ => None,
        }
    }
}

/// The result of every fallible escrow call.
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

impl From<stablecoin_core::domain::money::MoneyError> for EscrowError {
    /// Through `CoreError`, so a refused amount or token reads as it did before money
    /// had its own error type.
    fn from(e: stablecoin_core::domain::money::MoneyError) -> Self {
        CoreError::from(e).into()
    }
}

impl From<stablecoin_core::ports::record::RecordError> for EscrowError {
    /// Through `CoreError`, so a record that cannot be encoded, decoded or read keeps
    /// the `STORAGE_ERROR` text it had when the record port returned `CoreError`.
    fn from(e: stablecoin_core::ports::record::RecordError) -> Self {
        CoreError::from(e).into()
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
            CoreError::ScreeningHit { list, reference } => {
                EscrowError::ScreeningHit { list, reference }
            }
            CoreError::ScreeningUnavailable { reason } => {
                EscrowError::ScreeningUnavailable { reason }
            }
            CoreError::PolicyDenied { rule_id, reason } => {
                EscrowError::PolicyDenied { rule_id, reason }
            }
            other => EscrowError::Storage(other.to_string()),
        }
    }
}

/// The kernel's idempotent path, answered with escrow's codes.
impl From<IdempotencyError> for EscrowError {
    fn from(e: IdempotencyError) -> Self {
        match e {
            IdempotencyError::InvalidKey => EscrowError::InvalidIdempotencyKey {
                reason: INVALID_KEY_REASON.into(),
            },
            IdempotencyError::Reused => EscrowError::IdempotencyKeyReused,
            IdempotencyError::InUse => EscrowError::IdempotencyKeyInUse,
            IdempotencyError::Encode(why) => EscrowError::Storage(why),
            IdempotencyError::Store(e) => store_err(e),
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
