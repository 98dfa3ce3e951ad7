//! The one error enum of `stablecoin-core`, with a stable machine code per variant.
//!
//! Codes are part of the public contract (the server returns them verbatim); a variant
//! may gain fields but its code never changes.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CoreError {
    // ---- bad input (400) ----
    #[error("invalid amount {input:?}: {reason}")]
    InvalidAmount { input: String, reason: String },
    #[error("invalid phone number {input:?}: {reason}")]
    InvalidPhone { input: String, reason: String },
    #[error("unknown token {token:?}: expected USDC or USDT")]
    UnknownToken { token: String },
    /// A token this rail does not carry (`Rail::tokens`): same code as an unknown token,
    /// since for that rail it is one. `carried` names what it does carry ("USDT",
    /// "USDC and USDT").
    #[error("{rail} supports only {carried}")]
    TokenNotCarried {
        rail: String,
        token: String,
        carried: String,
    },
    #[error("unknown or unsupported currency {currency:?}")]
    UnknownCurrency { currency: String },
    #[error("invalid quote id {quote_id:?}: {reason}")]
    InvalidQuoteId { quote_id: String, reason: String },
    #[error("invalid {field}: {reason}")]
    InvalidParameter { field: &'static str, reason: String },
    #[error("invalid pricing: {reason}")]
    InvalidPricing { reason: String },
    #[error("invalid idempotency key: {reason}")]
    InvalidIdempotencyKey { reason: String },

    // ---- authentication / authority ----
    #[error("API key is missing, malformed or unknown")]
    InvalidApiKey,
    #[error("API key has been revoked")]
    ApiKeyRevoked,
    #[error("the calling tenant is not a member of this wallet")]
    NotAMember,
    /// A mutation that has no sandbox simulation, called with a test key; `what` names
    /// it ("a withdrawal", "tron provisioning").
    #[error("{what} has no sandbox simulation: use a live key (svc_sk_live_...)")]
    SandboxUnsupported { what: String },

    // ---- not found (404) ----
    #[error("{kind} {id} not found")]
    NotFound { kind: &'static str, id: String },

    // ---- state (409 / 410 / 422) ----
    #[error("quote {quote_id} has expired")]
    QuoteExpired { quote_id: String },
    #[error("quote {quote_id} has already been used")]
    QuoteAlreadyUsed { quote_id: String },
    #[error("quote token {quote_token} does not match the requested token {token}")]
    QuoteTokenMismatch { quote_token: String, token: String },
    #[error("the one-time code has expired")]
    CodeExpired,
    #[error("the one-time code is wrong ({attempts_left} attempts left)")]
    CodeInvalid { attempts_left: u32 },
    /// The subject (this tenant, wallet and purpose) tried too many wrong codes and is
    /// locked out; every code, right or wrong, is refused until `retry_after_ms` passes.
    #[error("too many wrong codes: try again in {} s", retry_after_secs(*retry_after_ms))]
    TooManyAttempts { retry_after_ms: i64 },
    #[error("the one-time code has already been used")]
    CodeAlreadyUsed,
    #[error("the tenant is already a member of this wallet")]
    AlreadyAMember,
    #[error("phone number {phone} already has a wallet")]
    PhoneInUse { phone: String },
    #[error("insufficient funds: available {available}, needed {needed}")]
    InsufficientFunds { available: String, needed: String },
    #[error("sender and recipient must differ")]
    SameWallet,
    #[error("idempotency key was already used with other parameters")]
    IdempotencyKeyReused,
    #[error("a request with this idempotency key is still in progress")]
    IdempotencyKeyInUse,
    #[error("invalid transition of {machine} from {from} on {event}")]
    InvalidTransition {
        machine: &'static str,
        from: String,
        event: String,
    },
    /// `record`: the kind of the record that changed first (`Record::KIND`; a store
    /// version conflict), or `None` (a unique key taken meanwhile). Callers that retry
    /// on one kind of race match on it, never on the text of `what`.
    #[error("concurrent update of {what}; retry")]
    Conflict {
        what: String,
        record: Option<String>,
    },

    // ---- limits (429) ----
    /// A limit on `what` is reached (one-time codes per wallet, phone or tenant, ...);
    /// the same request succeeds after `retry_after_ms`.
    #[error("too many {what}: try again in {} s", retry_after_secs(*retry_after_ms))]
    RateLimited { what: String, retry_after_ms: i64 },

    // ---- dependencies (503 / 500) ----
    #[error("rail {rail} is not ready: {reason}")]
    RailNotReady { rail: String, reason: String },
    #[error("rail error: {0}")]
    Rail(String),
    #[error("storage error: {0}")]
    Storage(String),
    #[error("signer error: {0}")]
    Signer(String),
    #[error("rate source error: {0}")]
    RateSource(String),
    #[error("notifier error: {0}")]
    Notifier(String),
    #[error("{what} is not implemented yet")]
    NotImplemented { what: &'static str },
}

impl CoreError {
    /// [`CoreError::SandboxUnsupported`] for the mutation `what`.
    pub fn sandbox_unsupported(what: impl Into<String>) -> Self {
        CoreError::SandboxUnsupported { what: what.into() }
    }

    /// The stable machine code of this error.
    pub fn code(&self) -> &'static str {
        use CoreError::*;
        match self {
            InvalidAmount { .. } => "INVALID_AMOUNT",
            InvalidPhone { .. } => "INVALID_PHONE",
            UnknownToken { .. } | TokenNotCarried { .. } => "UNKNOWN_TOKEN",
            UnknownCurrency { .. } => "UNKNOWN_CURRENCY",
            InvalidQuoteId { .. } => "INVALID_QUOTE_ID",
            InvalidParameter { .. } => "INVALID_PARAMETER",
            InvalidPricing { .. } => "INVALID_PRICING",
            InvalidIdempotencyKey { .. } => "INVALID_IDEMPOTENCY_KEY",
            InvalidApiKey => "INVALID_API_KEY",
            ApiKeyRevoked => "API_KEY_REVOKED",
            NotAMember => "NOT_A_MEMBER",
            SandboxUnsupported { .. } => "SANDBOX_UNSUPPORTED",
            NotFound { .. } => "NOT_FOUND",
            QuoteExpired { .. } => "QUOTE_EXPIRED",
            QuoteAlreadyUsed { .. } => "QUOTE_ALREADY_USED",
            QuoteTokenMismatch { .. } => "QUOTE_TOKEN_MISMATCH",
            CodeExpired => "CODE_EXPIRED",
            CodeInvalid { .. } => "CODE_INVALID",
            TooManyAttempts { .. } => "TOO_MANY_ATTEMPTS",
            RateLimited { .. } => "RATE_LIMITED",
            CodeAlreadyUsed => "CODE_ALREADY_USED",
            AlreadyAMember => "ALREADY_A_MEMBER",
            PhoneInUse { .. } => "PHONE_IN_USE",
            InsufficientFunds { .. } => "INSUFFICIENT_FUNDS",
            SameWallet => "SAME_WALLET",
            IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            IdempotencyKeyInUse => "IDEMPOTENCY_KEY_IN_USE",
            InvalidTransition { .. } => "INVALID_STATE",
            Conflict { .. } => "CONFLICT",
            RailNotReady { .. } => "RAIL_NOT_READY",
            Rail(_) => "RAIL_ERROR",
            Storage(_) => "STORAGE_ERROR",
            Signer(_) => "SIGNER_ERROR",
            RateSource(_) => "RATE_SOURCE_ERROR",
            Notifier(_) => "NOTIFIER_ERROR",
            NotImplemented { .. } => "NOT_IMPLEMENTED",
        }
    }

    /// The request field at fault, where one is.
    pub fn param(&self) -> Option<&'static str> {
        use CoreError::*;
        match self {
            InvalidAmount { .. } => Some("amount"),
            InvalidPhone { .. } => Some("phone_number"),
            UnknownToken { .. } | TokenNotCarried { .. } => Some("token"),
            UnknownCurrency { .. } => Some("local_currency"),
            InvalidQuoteId { .. } | QuoteTokenMismatch { .. } => Some("quote_id"),
            InvalidParameter { field, .. } => Some(field),
            CodeInvalid { .. } | CodeExpired | CodeAlreadyUsed | TooManyAttempts { .. } => {
                Some("code")
            }
            _ => None,
        }
    }

    /// How long the caller should wait before the same request can succeed (limits and
    /// lockouts), for a `Retry-After`.
    pub fn retry_after_ms(&self) -> Option<i64> {
        match self {
            CoreError::TooManyAttempts { retry_after_ms }
            | CoreError::RateLimited { retry_after_ms, .. } => Some(*retry_after_ms),
            _ => None,
        }
    }

    /// True when the same call may succeed later without any change by the caller.
    pub fn is_retryable(&self) -> bool {
        use CoreError::*;
        matches!(
            self,
            Conflict { .. }
                | RateLimited { .. }
                | IdempotencyKeyInUse
                | RailNotReady { .. }
                | Rail(_)
                | Storage(_)
                | RateSource(_)
                | Notifier(_)
        )
    }

    /// True when a commit lost a race on a record of `kind` (`Record::KIND`): another
    /// change to that record landed between the read and the commit. A use case that
    /// can decide again (a send whose wallet moved) or that has a precise answer (a
    /// quote another send consumed) matches here, never on the text of `what`.
    pub fn lost_race_on(&self, kind: &str) -> bool {
        matches!(self, CoreError::Conflict { record: Some(k), .. } if k == kind)
    }
}

pub type CoreResult<T> = Result<T, CoreError>;

/// Whole seconds, rounded up (a wait of 1 ms is "1 s", never "0 s").
pub fn retry_after_secs(ms: i64) -> i64 {
    (ms.max(0) + 999) / 1000
}

#[cfg(test)]
mod tests {
    use super::CoreError;
    use crate::engine::store_err;
    use crate::ports::store::StoreError;

    #[test]
    fn a_lost_race_names_the_record_kind_not_a_text_prefix() {
        let quote = store_err(StoreError::VersionConflict {
            kind: "quote".into(),
            id: "wallet 1".into(),
        });
        assert!(quote.lost_race_on("quote"));
        assert!(
            !quote.lost_race_on("wallet"),
            "the id's text is not the kind"
        );
        assert_eq!(quote.code(), "CONFLICT");
        let key = store_err(StoreError::UniqueViolation {
            key: "wallet:phone:+2250700000001".into(),
        });
        assert!(
            !key.lost_race_on("wallet"),
            "a taken key names no record kind"
        );
        assert!(!CoreError::SameWallet.lost_race_on("wallet"));
    }
}
