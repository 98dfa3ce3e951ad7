//! The one error enum of `stablecoin-checkout`, with a stable machine code per variant.
//!
//! Codes are part of the public contract (the server returns them verbatim and maps them
//! to HTTP in one place); a variant may gain fields but its code never changes.
//!
//! | code | class | when |
//! |---|---|---|
//! | `INVALID_AMOUNT` | bad input | amount not a positive decimal with at most 6 places, or above the limit |
//! | `UNKNOWN_TOKEN` | bad input | a token or currency the checkout does not take |
//! | `UNSUPPORTED_NETWORK` | bad input | a network that is not configured, or that carries none of the session's tokens |
//! | `INVALID_PARAMETER` | bad input | a field is out of bounds (lengths, expiry, e-mail, metadata, `limit`, `page`, `status`) |
//! | `MISSING_PARAMETER` | bad input | a required field is absent or blank |
//! | `INVALID_IDEMPOTENCY_KEY` | bad input | not 1-255 printable ASCII characters |
//! | `KEY_KIND_NOT_ALLOWED` | authority | a tenant key on a business route, or the reverse |
//! | `SANDBOX_ONLY` | authority | a live key asked for a simulated payment |
//! | `NOT_FOUND` | not found | no such session for this business and mode (also another business's) |
//! | `INVALID_STATE` | state conflict | the action is not permitted from the session's status |
//! | `CONFLICT` | state conflict (retryable) | concurrent updates kept colliding |
//! | `IDEMPOTENCY_KEY_REUSED` | semantic | same key, other request |
//! | `IDEMPOTENCY_KEY_IN_USE` | state conflict (retryable) | same key, first request still running |
//! | `REFUND_EXCEEDS_REFUNDABLE` | semantic | a refund above what the session can still refund |
//! | `INSUFFICIENT_FUNDS` | semantic | a refund of settled funds the treasury no longer holds; a phone wallet that holds too little on the session's networks |
//! | `AMOUNT_OUT_OF_RANGE` | bad input | a payer's amount outside a payment link's `min_amount`..`max_amount` |
//! | `PAYMENT_LINK_INACTIVE` | gone | the payment link was deactivated |
//! | `PAYMENT_LINK_EXPIRED` | gone | the payment link is past its `expires_at` |
//! | `PAYMENT_LINK_LIMIT_REACHED` | state conflict | the payment link's `max_payments` sessions are paid or open |
//! | `SCREENING_HIT` | authority | a refund's destination is on the configured sanctions screen's list |
//! | `SCREENING_UNAVAILABLE` | unavailable (retryable) | the screen could not answer and the deployment fails closed |
//! | `PHONE_PAYMENT_UNAVAILABLE` | authority | paying from a phone wallet is not offered here (no wallets run beside the checkout, or a test session) |
//! | (the wallets' codes) | as the wallets' | a phone payment's one-time code or phone refused: `INVALID_PHONE`, `CODE_INVALID`, `CODE_EXPIRED`, `CODE_ALREADY_USED`, `TOO_MANY_ATTEMPTS`, `RATE_LIMITED` |
//! | `RAIL_ERROR` / `STORAGE_ERROR` | internal | a dependency failed |

use stablecoin_core::CoreError;
use stablecoin_core::domain::ledger::MAX_AMOUNT_MICROS;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::kernel::idempotency::{INVALID_KEY_REASON, IdempotencyError};
use stablecoin_core::kernel::{ErrorClass, ProductError};
use thiserror::Error;

/// Every failure of the checkout API; [`CheckoutError::code`] is the stable machine code.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CheckoutError {
    /// `INVALID_AMOUNT`.
    #[error("invalid amount: {reason}")]
    InvalidAmount {
        /// Why it was refused, for humans.
        reason: String,
    },
    /// `UNKNOWN_TOKEN`.
    #[error("unknown token or currency {token:?}: expected USDC, USDT or USD")]
    UnknownToken {
        /// The token as the caller sent it (truncated).
        token: String,
    },
    /// `UNSUPPORTED_NETWORK`.
    #[error("network {network:?} is not available for this session")]
    UnsupportedNetwork {
        /// The network as the caller sent it (truncated).
        network: String,
    },
    /// `INVALID_PARAMETER`.
    #[error("invalid {field}: {reason}")]
    InvalidParameter {
        /// The request field at fault.
        field: &'static str,
        /// The bound it broke, for humans.
        reason: String,
    },
    /// `MISSING_PARAMETER`.
    #[error("{field} is required")]
    MissingParameter {
        /// The request field that is absent.
        field: &'static str,
    },
    /// `INVALID_IDEMPOTENCY_KEY`.
    #[error("invalid Idempotency-Key: {reason}")]
    InvalidIdempotencyKey {
        /// Why it was refused.
        reason: String,
    },
    /// `KEY_KIND_NOT_ALLOWED`: checkout sessions take a business key (`live_sk_` /
    /// `test_sk_`); businesses are managed with a tenant key.
    #[error("this call needs a {expected}")]
    WrongKeyKind {
        /// The kind of key the call needs, for humans.
        expected: &'static str,
    },
    /// `SANDBOX_ONLY`: simulated payments exist only for test-mode sessions.
    #[error("only a test key (test_sk_) can simulate a payment")]
    SandboxOnly,
    /// `NOT_FOUND`.
    #[error("{kind} {id} not found")]
    NotFound {
        /// What was looked for (`session`, `business`).
        kind: &'static str,
        /// The id as asked (truncated).
        id: String,
    },
    /// `INVALID_STATE`.
    #[error("not permitted while the session is {status}")]
    InvalidState {
        /// The session's status.
        status: String,
    },
    /// `CONFLICT`.
    #[error("concurrent update of {what}; retry")]
    Conflict {
        /// What kept colliding.
        what: String,
    },
    /// `IDEMPOTENCY_KEY_REUSED`.
    #[error("this Idempotency-Key was used with another request")]
    IdempotencyKeyReused,
    /// `IDEMPOTENCY_KEY_IN_USE`.
    #[error("a request with this Idempotency-Key is still running")]
    IdempotencyKeyInUse,
    /// `REFUND_EXCEEDS_REFUNDABLE`: more than the session can still refund in that token
    /// (what it received, less the refunds not returned).
    #[error("the refund exceeds what is refundable ({refundable})")]
    RefundExceedsRefundable {
        /// What is still refundable, 6 places.
        refundable: String,
    },
    /// `INSUFFICIENT_FUNDS`: the refund takes settled funds the tenant's treasury no
    /// longer holds (paid out or withdrawn since).
    #[error("the treasury holds too little of the settled funds for this refund")]
    InsufficientFunds,
    /// `SCREENING_HIT`: the refund's destination is on the sanctions screen's list;
    /// nothing was reserved (the kernel's rule, `kernel/screening.rs`, audited there).
    #[error("the destination address is refused by sanctions screening")]
    ScreeningHit {
        /// The list that names the address (audit only).
        list: String,
        /// The list's entry (audit only).
        reference: String,
    },
    /// `POLICY_DENIED`: one of the tenant's spending policies refuses the refund
    /// (issue #51); nothing was reserved. Audited by the wallet engine.
    #[error("a spending policy refuses the refund: {reason}")]
    PolicyDenied {
        /// `<policy id>:<rule>`, answered as the error's `rule_id`.
        rule_id: String,
        /// Why, for the caller.
        reason: String,
    },
    /// `SCREENING_UNAVAILABLE` (retryable): the screen could not answer and the
    /// deployment fails closed; nothing was reserved.
    #[error("sanctions screening is unavailable; nothing was reserved")]
    ScreeningUnavailable {
        /// Why (operators only).
        reason: String,
    },
    /// `AMOUNT_OUT_OF_RANGE`: a payer-chosen amount outside the link's bounds.
    #[error("the amount must be between {min} and {max}")]
    AmountOutOfRange {
        /// The least accepted, 6 places.
        min: String,
        /// The most accepted, 6 places.
        max: String,
    },
    /// `PAYMENT_LINK_INACTIVE`: the business deactivated the link.
    #[error("this payment link was deactivated")]
    PaymentLinkInactive,
    /// `PAYMENT_LINK_EXPIRED`: the link is past its `expires_at`.
    #[error("this payment link has expired")]
    PaymentLinkExpired,
    /// `PAYMENT_LINK_LIMIT_REACHED`: as many sessions as `max_payments` are paid or
    /// still open.
    #[error("this payment link takes no more payments ({max_payments} reached)")]
    PaymentLinkLimitReached {
        /// The link's limit.
        max_payments: u32,
    },
    /// `PHONE_PAYMENT_UNAVAILABLE`: this checkout takes no payments from phone wallets
    /// (no wallet engine runs beside it), or the session is a test one (paid only by
    /// simulated deposits).
    #[error("paying from a phone wallet is not available for this session")]
    PhonePaymentUnavailable,
    /// A phone payment refused by the wallets: its phone number or its one-time code
    /// (`INVALID_PHONE`, `CODE_INVALID`, `CODE_EXPIRED`, `CODE_ALREADY_USED`,
    /// `TOO_MANY_ATTEMPTS`, `RATE_LIMITED`), with the wallets' code, class and
    /// `Retry-After`, exactly as the link flow answers them.
    #[error("{0}")]
    Payer(CoreError),
    /// `RAIL_ERROR`.
    #[error("rail: {0}")]
    Rail(String),
    /// `STORAGE_ERROR`.
    #[error("storage: {0}")]
    Storage(String),
}

/// `Result` of this crate.
pub type CheckoutResult<T> = Result<T, CheckoutError>;

impl CheckoutError {
    /// The stable machine code.
    pub fn code(&self) -> &'static str {
        use CheckoutError::*;
        match self {
            InvalidAmount { .. } => "INVALID_AMOUNT",
            UnknownToken { .. } => "UNKNOWN_TOKEN",
            UnsupportedNetwork { .. } => "UNSUPPORTED_NETWORK",
            InvalidParameter { .. } => "INVALID_PARAMETER",
            MissingParameter { .. } => "MISSING_PARAMETER",
            InvalidIdempotencyKey { .. } => "INVALID_IDEMPOTENCY_KEY",
            WrongKeyKind { .. } => "KEY_KIND_NOT_ALLOWED",
            SandboxOnly => "SANDBOX_ONLY",
            NotFound { .. } => "NOT_FOUND",
            InvalidState { .. } => "INVALID_STATE",
            Conflict { .. } => "CONFLICT",
            IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            IdempotencyKeyInUse => "IDEMPOTENCY_KEY_IN_USE",
            RefundExceedsRefundable { .. } => "REFUND_EXCEEDS_REFUNDABLE",
            InsufficientFunds => "INSUFFICIENT_FUNDS",
            ScreeningHit { .. } => "SCREENING_HIT",
            PolicyDenied { .. } => "POLICY_DENIED",
            ScreeningUnavailable { .. } => "SCREENING_UNAVAILABLE",
            AmountOutOfRange { .. } => "AMOUNT_OUT_OF_RANGE",
            PaymentLinkInactive => "PAYMENT_LINK_INACTIVE",
            PaymentLinkExpired => "PAYMENT_LINK_EXPIRED",
            PaymentLinkLimitReached { .. } => "PAYMENT_LINK_LIMIT_REACHED",
            PhonePaymentUnavailable => "PHONE_PAYMENT_UNAVAILABLE",
            Payer(e) => e.code(),
            Rail(_) => "RAIL_ERROR",
            Storage(_) => "STORAGE_ERROR",
        }
    }

    /// The request field at fault, when there is one.
    pub fn param(&self) -> Option<&'static str> {
        use CheckoutError::*;
        match self {
            InvalidAmount { .. } | RefundExceedsRefundable { .. } | AmountOutOfRange { .. } => {
                Some("amount")
            }
            UnknownToken { .. } => Some("currency"),
            UnsupportedNetwork { .. } => Some("networks"),
            Payer(e) => e.param(),
            InvalidParameter { field, .. } | MissingParameter { field } => Some(field),
            _ => None,
        }
    }
}

/// The class of every variant decides its HTTP status in the server, the same table as
/// the core's; the match has no catch-all, so a new variant must choose its class here.
impl ProductError for CheckoutError {
    fn code(&self) -> &'static str {
        CheckoutError::code(self)
    }

    fn class(&self) -> ErrorClass {
        use CheckoutError::*;
        match self {
            InvalidAmount { .. }
            | UnknownToken { .. }
            | UnsupportedNetwork { .. }
            | InvalidParameter { .. }
            | MissingParameter { .. }
            | InvalidIdempotencyKey { .. }
            | AmountOutOfRange { .. } => ErrorClass::BadInput,
            PaymentLinkInactive | PaymentLinkExpired => ErrorClass::Gone,
            WrongKeyKind { .. }
            | SandboxOnly
            | ScreeningHit { .. }
            | PolicyDenied { .. }
            | PhonePaymentUnavailable => ErrorClass::Forbidden,
            ScreeningUnavailable { .. } => ErrorClass::Unavailable,
            Payer(e) => ProductError::class(e),
            NotFound { .. } => ErrorClass::NotFound,
            InvalidState { .. }
            | Conflict { .. }
            | IdempotencyKeyInUse
            | PaymentLinkLimitReached { .. } => ErrorClass::Conflict,
            IdempotencyKeyReused | RefundExceedsRefundable { .. } | InsufficientFunds => {
                ErrorClass::Unprocessable
            }
            Rail(_) => ErrorClass::Upstream,
            Storage(_) => ErrorClass::Internal,
        }
    }

    fn param(&self) -> Option<&str> {
        CheckoutError::param(self)
    }

    fn rule_id(&self) -> Option<&str> {
        match self {
            CheckoutError::PolicyDenied { rule_id, .. } => Some(rule_id),
            _ => None,
        }
    }

    fn retry_after_ms(&self) -> Option<i64> {
        match self {
            CheckoutError::Payer(e) => ProductError::retry_after_ms(e),
            _ => None,
        }
    }

    /// Not the class default: as the module table says, a lost race and a busy
    /// idempotency key pass by themselves, as do a failed rail or store.
    fn is_retryable(&self) -> bool {
        use CheckoutError::*;
        matches!(
            self,
            Conflict { .. }
                | IdempotencyKeyInUse
                | ScreeningUnavailable { .. }
                | Rail(_)
                | Storage(_)
        ) || matches!(self, Payer(e) if e.is_retryable())
    }

    fn public_message(&self) -> Option<&'static str> {
        use CheckoutError::*;
        match self {
            Storage(_) => Some("internal error; the request may be retried"),
            Rail(_) => Some("the blockchain rail failed; the request may be retried"),
            _ => None,
        }
    }
}

/// A core error met inside a checkout call.
impl From<stablecoin_core::ports::record::RecordError> for CheckoutError {
    /// Through `CoreError`, so a record that cannot be encoded, decoded or read keeps
    /// the `STORAGE_ERROR` text it had when the record port returned `CoreError`.
    fn from(e: stablecoin_core::ports::record::RecordError) -> Self {
        CoreError::from(e).into()
    }
}

impl From<CoreError> for CheckoutError {
    fn from(e: CoreError) -> Self {
        match e {
            CoreError::Conflict { what, .. } => CheckoutError::Conflict { what },
            CoreError::InvalidIdempotencyKey { reason } => {
                CheckoutError::InvalidIdempotencyKey { reason }
            }
            CoreError::IdempotencyKeyReused => CheckoutError::IdempotencyKeyReused,
            CoreError::IdempotencyKeyInUse => CheckoutError::IdempotencyKeyInUse,
            CoreError::Rail(r) => CheckoutError::Rail(r),
            CoreError::UnknownToken { token } => CheckoutError::UnknownToken { token },
            CoreError::ScreeningHit { list, reference } => {
                CheckoutError::ScreeningHit { list, reference }
            }
            CoreError::ScreeningUnavailable { reason } => {
                CheckoutError::ScreeningUnavailable { reason }
            }
            CoreError::PolicyDenied { rule_id, reason } => {
                CheckoutError::PolicyDenied { rule_id, reason }
            }
            other => CheckoutError::Storage(other.to_string()),
        }
    }
}

/// `a + b` of one of a session's amounts, or INVALID_AMOUNT naming `what` when the sum
/// passes [`MAX_AMOUNT_MICROS`], the largest amount or account sum a ledger holds.
///
/// Why checked: a session's amounts are sums of deposits a scanner reports, and a sum
/// past the bound must be refused, never wrapped (which would lose or mint money
/// silently), saturated (the same, more slowly) or left to panic or to the ledger (a
/// 500, with the report retried for ever).
pub fn checked_sum(a: Micros, b: Micros, what: &str) -> CheckoutResult<Micros> {
    a.checked_add(b)
        .filter(|sum| sum.get() <= MAX_AMOUNT_MICROS)
        .ok_or_else(|| CheckoutError::InvalidAmount {
            reason: format!("{what} would exceed {MAX_AMOUNT_MICROS} micro-units"),
        })
}

/// The kernel's idempotent path, answered with checkout's codes.
impl From<IdempotencyError> for CheckoutError {
    fn from(e: IdempotencyError) -> Self {
        match e {
            IdempotencyError::InvalidKey => CheckoutError::InvalidIdempotencyKey {
                reason: INVALID_KEY_REASON.into(),
            },
            IdempotencyError::Reused => CheckoutError::IdempotencyKeyReused,
            IdempotencyError::InUse => CheckoutError::IdempotencyKeyInUse,
            IdempotencyError::Encode(why) => CheckoutError::Storage(why),
            IdempotencyError::Store(e) => store_err(e),
        }
    }
}

pub(crate) fn store_err(e: stablecoin_core::ports::StoreError) -> CheckoutError {
    match e {
        stablecoin_core::ports::StoreError::VersionConflict { kind, id, .. } => {
            CheckoutError::Conflict {
                what: format!("{kind} {id}"),
            }
        }
        stablecoin_core::ports::StoreError::UniqueViolation { key } => {
            CheckoutError::Conflict { what: key }
        }
        // The one non-negative account a checkout commit may find short: the tenant's
        // treasury, when a refund takes settled funds paid out since.
        stablecoin_core::ports::StoreError::Ledger(
            stablecoin_core::ports::LedgerError::InsufficientFunds { .. },
        ) => CheckoutError::InsufficientFunds,
        other => CheckoutError::Storage(other.to_string()),
    }
}

pub(crate) fn rail_err(e: stablecoin_core::ports::RailError) -> CheckoutError {
    CheckoutError::Rail(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct() {
        let all = [
            CheckoutError::InvalidAmount { reason: "".into() },
            CheckoutError::UnknownToken { token: "".into() },
            CheckoutError::UnsupportedNetwork { network: "".into() },
            CheckoutError::InvalidParameter {
                field: "x",
                reason: "".into(),
            },
            CheckoutError::MissingParameter { field: "x" },
            CheckoutError::InvalidIdempotencyKey { reason: "".into() },
            CheckoutError::WrongKeyKind { expected: "" },
            CheckoutError::SandboxOnly,
            CheckoutError::NotFound {
                kind: "session",
                id: "".into(),
            },
            CheckoutError::InvalidState { status: "".into() },
            CheckoutError::Conflict { what: "".into() },
            CheckoutError::IdempotencyKeyReused,
            CheckoutError::IdempotencyKeyInUse,
            CheckoutError::RefundExceedsRefundable {
                refundable: "".into(),
            },
            CheckoutError::InsufficientFunds,
            CheckoutError::ScreeningHit {
                list: "".into(),
                reference: "".into(),
            },
            CheckoutError::ScreeningUnavailable { reason: "".into() },
            CheckoutError::PolicyDenied {
                rule_id: "".into(),
                reason: "".into(),
            },
            CheckoutError::AmountOutOfRange {
                min: "".into(),
                max: "".into(),
            },
            CheckoutError::PaymentLinkInactive,
            CheckoutError::PaymentLinkExpired,
            CheckoutError::PaymentLinkLimitReached { max_payments: 1 },
            CheckoutError::Rail("".into()),
            CheckoutError::Storage("".into()),
        ];
        let mut codes: Vec<_> = all.iter().map(|e| e.code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
    }
}
