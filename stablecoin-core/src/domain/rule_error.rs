//! Why a domain rule refuses: the one error type of the rule modules (consent, fees, FX,
//! limits, one-time codes, state machines, top-ups).
//!
//! The domain is the leaf layer (docs/architecture.md §2): it names no outer layer, so
//! its rules cannot return `CoreError`. `CoreError` wraps each variant here as its
//! variant of the same name, with the same fields, so the API shows the same code,
//! message, field and status as when the rules returned `CoreError` themselves.
//!
//! One enum for every rule module rather than one per module: the rules share most of
//! their refusals (an invalid amount from fees and FX, an invalid parameter from FX and
//! top-ups, an expired quote from FX and top-ups, a rate limit from limits and one-time
//! codes, an invalid transition from both state machines), so per-module enums would
//! repeat those variants and their mappings, and the crate keeps to few error types.
//! Money and phone parsing keep their own (`MoneyError`, `PhoneError`): parsing is used
//! far beyond the rules (the server, adapters), whose callers need only those variants.

use crate::domain::money::Micros;
use crate::domain::time::retry_after_secs;
use thiserror::Error;

/// A refusal by a domain rule. Each variant's text, fields and [`RuleError::code`] are
/// those of the `CoreError` variant of the same name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RuleError {
    /// An amount the rule refuses (zero, or one that does not cover a fee or converts
    /// to nothing or too much).
    #[error("invalid amount {input:?}: {reason}")]
    InvalidAmount {
        /// The amount, as a string.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A send below the rail's floor (`limits::MinSend`).
    #[error("amount is below the minimum of {minimum} for a send on {rail}")]
    AmountTooSmall {
        /// The rail's name.
        rail: String,
        /// The smallest amount accepted on it.
        minimum: Micros,
    },
    /// A `quote_id` that is neither a well-formed `fx_...` id nor a `DIRECT_CRYPTO:` form.
    #[error("invalid quote id {quote_id:?}: {reason}")]
    InvalidQuoteId {
        /// The id as given (at most 64 characters of it).
        quote_id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A request field the rule refuses.
    #[error("invalid {field}: {reason}")]
    InvalidParameter {
        /// The request field at fault.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A tenant pricing that breaks the pricing rules (spec 8).
    #[error("invalid pricing: {reason}")]
    InvalidPricing {
        /// Which rule it breaks.
        reason: String,
    },
    /// Money-out on a wallet the tenant is not a member of.
    #[error("the calling tenant is not a member of this wallet")]
    NotAMember,
    /// An FX quote past its lifetime, or a top-up past its own.
    #[error("quote {quote_id} has expired")]
    QuoteExpired {
        /// `fx_...`, or `tu_...` for a top-up.
        quote_id: String,
    },
    /// A confirmation of a top-up already confirmed.
    #[error("top-up {id} was already confirmed (fiat reference {fiat_reference:?})")]
    AlreadyConfirmed {
        /// `tu_...`.
        id: String,
        /// The reference it was confirmed with.
        fiat_reference: String,
    },
    /// Two-person rule: the proposer approving their own proposal.
    #[error("{proposed_by} proposed this; a different staff member must approve it")]
    SecondApproverRequired {
        /// Who proposed it.
        proposed_by: String,
    },
    /// Two-person rule: an approval that does not repeat the proposal.
    #[error("the approval's {field} differs from the pending proposal's")]
    ApprovalMismatch {
        /// The field that differs.
        field: &'static str,
    },
    /// An FX quote an earlier transfer redeemed.
    #[error("quote {quote_id} has already been used")]
    QuoteAlreadyUsed {
        /// `fx_...`.
        quote_id: String,
    },
    /// A transfer in another token than the quote's.
    #[error("quote token {quote_token} does not match the requested token {token}")]
    QuoteTokenMismatch {
        /// The quote's token.
        quote_token: String,
        /// The token requested.
        token: String,
    },
    /// A one-time code's challenge expired or replaced.
    #[error("the one-time code has expired")]
    CodeExpired,
    /// A wrong one-time code.
    #[error("the one-time code is wrong ({attempts_left} attempts left)")]
    CodeInvalid {
        /// Wrong codes the subject may still try before the lockout.
        attempts_left: u32,
    },
    /// A subject locked out after too many wrong codes.
    #[error("too many wrong codes: try again in {} s", retry_after_secs(*retry_after_ms))]
    TooManyAttempts {
        /// Milliseconds until the lockout ends.
        retry_after_ms: i64,
    },
    /// A one-time code already confirmed.
    #[error("the one-time code has already been used")]
    CodeAlreadyUsed,
    /// An event a state machine does not accept in its current state.
    #[error("invalid transition of {machine} from {from} on {event}")]
    InvalidTransition {
        /// The state machine (`"transfer"`, `"topup"`, ...).
        machine: &'static str,
        /// The current state.
        from: String,
        /// The event refused.
        event: String,
    },
    /// A limit on `what` is reached; the same request succeeds after `retry_after_ms`.
    #[error("too many {what}: try again in {} s", retry_after_secs(*retry_after_ms))]
    RateLimited {
        /// What is limited, for humans.
        what: String,
        /// Milliseconds until the window ends.
        retry_after_ms: i64,
    },
}

impl RuleError {
    /// The stable machine code, the one `CoreError` shows for it (`INVALID_PRICING`, ...).
    pub fn code(&self) -> &'static str {
        use RuleError::*;
        match self {
            InvalidAmount { .. } => "INVALID_AMOUNT",
            AmountTooSmall { .. } => "AMOUNT_TOO_SMALL",
            InvalidQuoteId { .. } => "INVALID_QUOTE_ID",
            InvalidParameter { .. } => "INVALID_PARAMETER",
            InvalidPricing { .. } => "INVALID_PRICING",
            NotAMember => "NOT_A_MEMBER",
            QuoteExpired { .. } => "QUOTE_EXPIRED",
            AlreadyConfirmed { .. } => "ALREADY_CONFIRMED",
            SecondApproverRequired { .. } => "SECOND_APPROVER_REQUIRED",
            ApprovalMismatch { .. } => "APPROVAL_MISMATCH",
            QuoteAlreadyUsed { .. } => "QUOTE_ALREADY_USED",
            QuoteTokenMismatch { .. } => "QUOTE_TOKEN_MISMATCH",
            CodeExpired => "CODE_EXPIRED",
            CodeInvalid { .. } => "CODE_INVALID",
            TooManyAttempts { .. } => "TOO_MANY_ATTEMPTS",
            CodeAlreadyUsed => "CODE_ALREADY_USED",
            InvalidTransition { .. } => "INVALID_STATE",
            RateLimited { .. } => "RATE_LIMITED",
        }
    }
    /// The request field at fault, where one is: the one `CoreError::param` shows.
    pub fn param(&self) -> Option<&'static str> {
        use RuleError::*;
        match self {
            InvalidAmount { .. } | AmountTooSmall { .. } => Some("amount"),
            InvalidQuoteId { .. } | QuoteTokenMismatch { .. } => Some("quote_id"),
            ApprovalMismatch { field } | InvalidParameter { field, .. } => Some(field),
            CodeInvalid { .. } | CodeExpired | CodeAlreadyUsed | TooManyAttempts { .. } => {
                Some("code")
            }
            _ => None,
        }
    }

    /// How long to wait before the same request can succeed (a limit or a lockout): the
    /// one `CoreError::retry_after_ms` shows.
    pub fn retry_after_ms(&self) -> Option<i64> {
        match self {
            RuleError::TooManyAttempts { retry_after_ms }
            | RuleError::RateLimited { retry_after_ms, .. } => Some(*retry_after_ms),
            _ => None,
        }
    }
}
