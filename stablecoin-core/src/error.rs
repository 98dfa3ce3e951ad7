//! The one error enum of `stablecoin-core`, with a stable machine code per variant.
//!
//! Codes are part of the public contract (the server returns them verbatim); a variant
//! may gain fields but its code never changes.

use thiserror::Error;

use crate::kernel::error::{ErrorClass, ProductError};

/// Every error the engine returns; the domain's and the record port's own errors
/// (`MoneyError`, `PhoneError`, `RuleError`, `RecordError`) convert into it with `?`.
/// [`CoreError::code`] is the stable code the API shows; the `Display` text is for
/// humans and may change.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CoreError {
    // ---- bad input (400) ----
    /// An amount string or value the API refuses (format, zero, overflow, too small).
    #[error("invalid amount {input:?}: {reason}")]
    InvalidAmount {
        /// The amount as given (at most 64 characters of it).
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A send below the rail's floor ([`crate::domain::limits::MinSend`]): the service
    /// sponsors every send, so dust would cost it more than it moves.
    #[error("amount is below the minimum of {minimum} for a send on {rail}")]
    AmountTooSmall {
        /// The rail's name.
        rail: String,
        /// The smallest amount accepted on it.
        minimum: crate::domain::money::Micros,
    },
    /// A phone number that is not a plausible E.164 number.
    #[error("invalid phone number {input:?}: {reason}")]
    InvalidPhone {
        /// The number as given (truncated).
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A token name other than `USDC` or `USDT`.
    #[error("unknown token {token:?}: expected USDC or USDT")]
    UnknownToken {
        /// The name as given (at most 32 characters of it).
        token: String,
    },
    /// A token this rail does not carry (`Rail::tokens`): same code as an unknown token,
    /// since for that rail it is one. `carried` names what it does carry ("USDT",
    /// "USDC and USDT").
    #[error("{rail} supports only {carried}")]
    TokenNotCarried {
        /// The rail's name (`"tron"`, ...).
        rail: String,
        /// The token asked for.
        token: String,
        /// The tokens the rail carries, in words.
        carried: String,
    },
    /// A fiat currency the FX desk does not quote.
    #[error("unknown or unsupported currency {currency:?}")]
    UnknownCurrency {
        /// The code as given (at most 16 characters of it).
        currency: String,
    },
    /// A `quote_id` that is neither a well-formed `fx_...` id nor a `DIRECT_CRYPTO:` form.
    #[error("invalid quote id {quote_id:?}: {reason}")]
    InvalidQuoteId {
        /// The id as given (at most 64 characters of it).
        quote_id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Any other request field the API refuses.
    #[error("invalid {field}: {reason}")]
    InvalidParameter {
        /// The request field at fault (also returned by [`CoreError::param`]).
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
    /// An `Idempotency-Key` that is not 1 to 255 printable ASCII characters.
    #[error("invalid idempotency key: {reason}")]
    InvalidIdempotencyKey {
        /// What is wrong with it.
        reason: String,
    },

    // ---- authentication / authority ----
    /// No API key, a malformed one, or one no tenant was issued.
    #[error("API key is missing, malformed or unknown")]
    InvalidApiKey,
    /// A revoked API key.
    #[error("API key has been revoked")]
    ApiKeyRevoked,
    /// Money-out (transfer, withdrawal, phone change, balance read) on a wallet the calling
    /// tenant is not a member of: it needs the customer's consent first.
    #[error("the calling tenant is not a member of this wallet")]
    NotAMember,
    /// A mutation that has no sandbox simulation, called with a test key; `what` names
    /// it ("a withdrawal", "tron provisioning").
    #[error("{what} has no sandbox simulation: use a live key (svc_sk_live_...)")]
    SandboxUnsupported {
        /// The mutation refused.
        what: String,
    },
    /// A web-console session asked for more than the key it signed in with may give (a
    /// key of another mode, or revoking a key it did not issue); or a key was used
    /// outside its role (an approver key on any route but the approvals, a tenant key on
    /// the approvals).
    #[error("out of this key's scope: {reason}")]
    KeyOutOfScope {
        /// What was refused and why.
        reason: String,
    },
    /// A tenant fee above the ceiling a tenant may set for itself: service staff set it
    /// (`stablecoin-server pricing set`).
    #[error("fee above the self-service ceiling: {reason}")]
    FeeAboveCeiling {
        /// The fee asked and the ceiling.
        reason: String,
    },

    // ---- not found (404) ----
    /// No such record, or one of another tenant (never told apart, so ids of other
    /// tenants cannot be probed).
    #[error("{kind} {id} not found")]
    NotFound {
        /// The kind of thing looked up (`"wallet"`, `"quote"`, ...).
        kind: &'static str,
        /// The id or key looked up.
        id: String,
    },

    // ---- state (409 / 410 / 422) ----
    /// The FX quote's 60 seconds have passed, or a top-up quote's lifetime did before
    /// staff confirmed it: ask for a new quote.
    #[error("quote {quote_id} has expired")]
    QuoteExpired {
        /// `fx_...`, or `tu_...` for a top-up quote.
        quote_id: String,
    },
    /// A confirmation of a top-up that was already confirmed (the treasury was credited
    /// once; a replay changes nothing).
    #[error("top-up {id} was already confirmed (fiat reference {fiat_reference:?})")]
    AlreadyConfirmed {
        /// `tu_...`.
        id: String,
        /// The reference it was confirmed with.
        fiat_reference: String,
    },
    /// A fiat reference that already confirmed another top-up: one receipt funds one
    /// top-up.
    #[error("fiat reference {fiat_reference:?} already confirmed another top-up")]
    FiatReferenceUsed {
        /// The reference given (at most 200 characters).
        fiat_reference: String,
    },
    /// Two-person rule: the proposer of a staff credit above the single-approval cap
    /// tried to approve it; a different staff identity must (the admin token is one
    /// identity).
    #[error("{proposed_by} proposed this; a different staff member must approve it")]
    SecondApproverRequired {
        /// Who proposed it (`stf_...` or `admin-token`).
        proposed_by: String,
    },
    /// Two-person rule: a second approval that does not repeat the proposal (`field`
    /// differs: a top-up's fiat reference, a credit's token or amount). Nothing changed.
    #[error("the approval's {field} differs from the pending proposal's")]
    ApprovalMismatch {
        /// The field that differs.
        field: &'static str,
    },
    /// The FX quote was redeemed by an earlier transfer (that transfer happened: do not
    /// pay again).
    #[error("quote {quote_id} has already been used")]
    QuoteAlreadyUsed {
        /// `fx_...`.
        quote_id: String,
    },
    /// The transfer's token differs from the one the quote was priced in.
    #[error("quote token {quote_token} does not match the requested token {token}")]
    QuoteTokenMismatch {
        /// The quote's token.
        quote_token: String,
        /// The token requested.
        token: String,
    },
    /// The one-time code's challenge has expired or was replaced by a newer request.
    #[error("the one-time code has expired")]
    CodeExpired,
    /// A wrong one-time code; the subject is locked out when no attempt is left.
    #[error("the one-time code is wrong ({attempts_left} attempts left)")]
    CodeInvalid {
        /// Wrong codes the subject may still try before the lockout.
        attempts_left: u32,
    },
    /// The subject (this tenant, wallet and purpose) tried too many wrong codes and is
    /// locked out; every code, right or wrong, is refused until `retry_after_ms` passes.
    #[error("too many wrong codes: try again in {} s", retry_after_secs(*retry_after_ms))]
    TooManyAttempts {
        /// Milliseconds until the lockout ends.
        retry_after_ms: i64,
    },
    /// The one-time code was already confirmed.
    #[error("the one-time code has already been used")]
    CodeAlreadyUsed,
    /// A link request by a tenant that is already a member of the wallet.
    #[error("the tenant is already a member of this wallet")]
    AlreadyAMember,
    /// A phone change to a number that already keys a wallet.
    #[error("phone number {phone} already has a wallet")]
    PhoneInUse {
        /// The number, masked (`+225*****0001`).
        phone: String,
    },
    /// The debited balance cannot cover the amount (pending debits counted).
    #[error("insufficient funds: available {available}, needed {needed}")]
    InsufficientFunds {
        /// What the account could still be debited, 6 decimals (negative for an
        /// overdrawn account).
        available: String,
        /// The amount of the refused move, 6 decimals.
        needed: String,
    },
    /// A transfer whose sender and recipient are the same wallet.
    #[error("sender and recipient must differ")]
    SameWallet,
    /// An idempotency key already answered a request with other parameters.
    #[error("idempotency key was already used with other parameters")]
    IdempotencyKeyReused,
    /// Another request with this idempotency key is being committed; retry to get its
    /// result.
    #[error("a request with this idempotency key is still in progress")]
    IdempotencyKeyInUse,
    /// An event an operation's state machine does not accept in its current state.
    #[error("invalid transition of {machine} from {from} on {event}")]
    InvalidTransition {
        /// The state machine (the operation kind, `"transfer"`, ...).
        machine: &'static str,
        /// The current state.
        from: String,
        /// The event refused.
        event: String,
    },
    /// `record`: the kind of the record that changed first (`Record::KIND`; a store
    /// version conflict), or `None` (a unique key taken meanwhile). Callers that retry
    /// on one kind of race match on it, never on the text of `what`.
    #[error("concurrent update of {what}; retry")]
    Conflict {
        /// The record (`<kind> <id>`) or unique key raced on, for humans.
        what: String,
        /// The kind of the record raced on; see above.
        record: Option<String>,
    },

    // ---- limits (429) ----
    /// A limit on `what` is reached (one-time codes per wallet, phone or tenant, ...);
    /// the same request succeeds after `retry_after_ms`.
    #[error("too many {what}: try again in {} s", retry_after_secs(*retry_after_ms))]
    RateLimited {
        /// What is limited, for humans.
        what: String,
        /// Milliseconds until the window ends.
        retry_after_ms: i64,
    },

    // ---- dependencies (503 / 500) ----
    /// The rail is not configured, or cannot take this request now (not READY).
    #[error("rail {rail} is not ready: {reason}")]
    RailNotReady {
        /// The rail's name (`"polygon"`, `"evm"` when no EVM rail is configured, ...).
        rail: String,
        /// Why, for operators.
        reason: String,
    },
    /// This deployment pays out no withdrawals (`EngineConfig::withdrawals_enabled` is
    /// off: no payout provider is configured). Not retryable: it lasts until an operator
    /// configures one.
    #[error("withdrawals to mobile money are not available on this deployment")]
    WithdrawalsUnavailable,
    /// No swap venue serves this rail (no DEX router and no treasury venue configured).
    /// Not retryable: it lasts until an operator configures one.
    #[error("swaps are not available on rail {rail}")]
    SwapsUnavailable {
        /// The rail's name.
        rail: String,
    },
    /// Sanctions screening lists an address this payment would pay (issue #51). Nothing
    /// was held; the decision, with the list and its entry, is in the staff audit log
    /// (action `screening.hit`). The message names neither list nor entry: the caller
    /// learns that it was refused, not what a compliance team knows.
    #[error("a destination of this payment is blocked by sanctions screening")]
    ScreeningHit {
        /// The list that names the address (audit only).
        list: String,
        /// The list's entry (audit only).
        reference: String,
    },
    /// Sanctions screening could not answer and the deployment fails closed
    /// (production's default): nothing was held. Retryable: the screen may answer later.
    #[error("sanctions screening is unavailable; nothing was held")]
    ScreeningUnavailable {
        /// Why (operators only; never in a response).
        reason: String,
    },
    /// A spending policy refuses this request (issue #51): `rule_id` names the policy and
    /// its rule (`pol_...:max_per_transaction`). Nothing was held; the decision is in the
    /// staff audit log (`policy.deny`). Not retryable as is (a window may free up later).
    #[error("refused by spending policy rule {rule_id}: {reason}")]
    PolicyDenied {
        /// `<policy id>:<rule>`.
        rule_id: String,
        /// Why, for the caller.
        reason: String,
    },
    /// The tenant's sponsorship budget on `rail` (issue #51 item 4) is spent for the
    /// `period` (UTC `day` or `month`): its `resource` (`native`, `energy`, `bandwidth`)
    /// has reached `cap`, or the next payment's estimated cost would pass it. Nothing was
    /// held. Retryable after `retry_after_ms`, when the period starts over.
    #[error(
        "the sponsorship budget on {rail} is spent for this {period}: {resource} {spent} of {cap}; nothing was held"
    )]
    SponsorshipBudgetExceeded {
        /// The rail's name (`polygon`, `tron`, ...).
        rail: String,
        /// `day` or `month` (UTC calendar).
        period: &'static str,
        /// `native`, `energy` or `bandwidth`.
        resource: &'static str,
        /// The cap, in the resource's unit, as a decimal integer string.
        cap: String,
        /// What the period consumed so far, same unit.
        spent: String,
        /// Until the period ends.
        retry_after_ms: i64,
    },
    /// The amount is above a spending policy's approval threshold: the request waits, as
    /// `approval_id`, for a second approver (staff); nothing was held yet. Approving it
    /// carries it out once.
    #[error(
        "above the approval threshold of {rule_id}: waiting for a second approver as {approval_id}"
    )]
    ApprovalRequired {
        /// `apr_...`: the pending request.
        approval_id: String,
        /// `<policy id>:approval_threshold`.
        rule_id: String,
    },
    /// The swap venue cannot fill this trade now (liquidity, a pair it does not trade).
    #[error("the swap venue cannot fill this swap: {reason}")]
    InsufficientLiquidity {
        /// What the venue said.
        reason: String,
    },
    /// A rail call failed; retryable.
    #[error("rail error: {0}")]
    Rail(String),
    /// The store failed, or a stored record could not be decoded; retryable.
    #[error("storage error: {0}")]
    Storage(String),
    /// The signer could not derive a key or sign.
    #[error("signer error: {0}")]
    Signer(String),
    /// No FX rate could be had; retryable.
    #[error("rate source error: {0}")]
    RateSource(String),
    /// The rate source answered, but with a rate older than its maximum age, which is
    /// never quoted; retryable (once the feed updates).
    #[error("rate stale: {0}")]
    RateStale(String),
    /// The SMS could not be sent; retryable.
    #[error("notifier error: {0}")]
    Notifier(String),
    /// A use case this build does not implement.
    #[error("{what} is not implemented yet")]
    NotImplemented {
        /// The use case.
        what: &'static str,
    },
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
            AmountTooSmall { .. } => "AMOUNT_TOO_SMALL",
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
            KeyOutOfScope { .. } => "KEY_OUT_OF_SCOPE",
            FeeAboveCeiling { .. } => "FEE_ABOVE_CEILING",
            NotFound { .. } => "NOT_FOUND",
            QuoteExpired { .. } => "QUOTE_EXPIRED",
            QuoteAlreadyUsed { .. } => "QUOTE_ALREADY_USED",
            AlreadyConfirmed { .. } => "ALREADY_CONFIRMED",
            FiatReferenceUsed { .. } => "FIAT_REFERENCE_USED",
            SecondApproverRequired { .. } => "SECOND_APPROVER_REQUIRED",
            ApprovalMismatch { .. } => "APPROVAL_MISMATCH",
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
            WithdrawalsUnavailable => "WITHDRAWALS_UNAVAILABLE",
            SwapsUnavailable { .. } => "SWAPS_UNAVAILABLE",
            ScreeningHit { .. } => "SCREENING_HIT",
            ScreeningUnavailable { .. } => "SCREENING_UNAVAILABLE",
            PolicyDenied { .. } => "POLICY_DENIED",
            ApprovalRequired { .. } => "APPROVAL_REQUIRED",
            SponsorshipBudgetExceeded { .. } => "SPONSORSHIP_BUDGET_EXCEEDED",
            InsufficientLiquidity { .. } => "INSUFFICIENT_LIQUIDITY",
            Rail(_) => "RAIL_ERROR",
            Storage(_) => "STORAGE_ERROR",
            Signer(_) => "SIGNER_ERROR",
            RateSource(_) => "RATE_SOURCE_ERROR",
            RateStale(_) => "RATE_STALE",
            Notifier(_) => "NOTIFIER_ERROR",
            NotImplemented { .. } => "NOT_IMPLEMENTED",
        }
    }

    /// The request field at fault, where one is.
    pub fn param(&self) -> Option<&'static str> {
        use CoreError::*;
        match self {
            InvalidAmount { .. } | AmountTooSmall { .. } => Some("amount"),
            InvalidPhone { .. } => Some("phone_number"),
            UnknownToken { .. } | TokenNotCarried { .. } => Some("token"),
            UnknownCurrency { .. } => Some("local_currency"),
            InvalidQuoteId { .. } | QuoteTokenMismatch { .. } => Some("quote_id"),
            FiatReferenceUsed { .. } => Some("fiat_reference"),
            ApprovalMismatch { field } => Some(field),
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
            | CoreError::RateLimited { retry_after_ms, .. }
            | CoreError::SponsorshipBudgetExceeded { retry_after_ms, .. } => Some(*retry_after_ms),
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
                | SponsorshipBudgetExceeded { .. }
                | IdempotencyKeyInUse
                | RailNotReady { .. }
                | Rail(_)
                | Storage(_)
                | RateSource(_)
                | RateStale(_)
                | Notifier(_)
                | ScreeningUnavailable { .. }
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

/// The class of every variant decides its HTTP status in the server (one table for all
/// products); the match has no catch-all, so a new variant must choose its class here.
impl ProductError for CoreError {
    fn code(&self) -> &'static str {
        CoreError::code(self)
    }

    fn class(&self) -> ErrorClass {
        use CoreError::*;
        match self {
            InvalidAmount { .. }
            | AmountTooSmall { .. }
            | InvalidPhone { .. }
            | UnknownToken { .. }
            | TokenNotCarried { .. }
            | UnknownCurrency { .. }
            | InvalidQuoteId { .. }
            | InvalidParameter { .. }
            | InvalidPricing { .. }
            | InvalidIdempotencyKey { .. } => ErrorClass::BadInput,
            InvalidApiKey | ApiKeyRevoked => ErrorClass::Unauthorized,
            NotAMember
            | SandboxUnsupported { .. }
            | KeyOutOfScope { .. }
            | FeeAboveCeiling { .. }
            | ScreeningHit { .. }
            | PolicyDenied { .. }
            | ApprovalRequired { .. } => ErrorClass::Forbidden,
            NotFound { .. } => ErrorClass::NotFound,
            QuoteExpired { .. } | CodeExpired => ErrorClass::Gone,
            QuoteAlreadyUsed { .. }
            | AlreadyConfirmed { .. }
            | FiatReferenceUsed { .. }
            | SecondApproverRequired { .. }
            | ApprovalMismatch { .. }
            | CodeAlreadyUsed
            | AlreadyAMember
            | PhoneInUse { .. }
            | IdempotencyKeyInUse
            | InvalidTransition { .. }
            | Conflict { .. } => ErrorClass::Conflict,
            QuoteTokenMismatch { .. }
            | CodeInvalid { .. }
            | InsufficientFunds { .. }
            | SameWallet
            | InsufficientLiquidity { .. }
            | IdempotencyKeyReused => ErrorClass::Unprocessable,
            TooManyAttempts { .. } | RateLimited { .. } | SponsorshipBudgetExceeded { .. } => {
                ErrorClass::RateLimited
            }
            RailNotReady { .. }
            | RateSource(_)
            | RateStale(_)
            | WithdrawalsUnavailable
            | SwapsUnavailable { .. }
            | ScreeningUnavailable { .. } => ErrorClass::Unavailable,
            Rail(_) | Notifier(_) => ErrorClass::Upstream,
            Storage(_) | Signer(_) => ErrorClass::Internal,
            NotImplemented { .. } => ErrorClass::NotImplemented,
        }
    }

    fn param(&self) -> Option<&str> {
        CoreError::param(self)
    }

    /// Not the class default: a lost race, a limit and a busy idempotency key pass by
    /// themselves, and a deployment without withdrawals or swaps stays so.
    fn is_retryable(&self) -> bool {
        CoreError::is_retryable(self)
    }

    fn retry_after_ms(&self) -> Option<i64> {
        CoreError::retry_after_ms(self)
    }

    fn rule_id(&self) -> Option<&str> {
        match self {
            CoreError::PolicyDenied { rule_id, .. }
            | CoreError::ApprovalRequired { rule_id, .. } => Some(rule_id),
            _ => None,
        }
    }

    fn approval_id(&self) -> Option<&str> {
        match self {
            CoreError::ApprovalRequired { approval_id, .. } => Some(approval_id),
            _ => None,
        }
    }

    fn sponsorship_budget(&self) -> Option<crate::kernel::BudgetRefs> {
        match self {
            CoreError::SponsorshipBudgetExceeded {
                rail,
                period,
                resource,
                cap,
                spent,
                ..
            } => Some(crate::kernel::BudgetRefs {
                rail: rail.clone(),
                period,
                resource,
                cap: cap.clone(),
                spent: spent.clone(),
            }),
            _ => None,
        }
    }

    fn public_message(&self) -> Option<&'static str> {
        use CoreError::*;
        Some(match self {
            Storage(_) | Signer(_) => {
                "internal error; the request may be retried with the same Idempotency-Key"
            }
            Rail(_) => "the blockchain rail failed; the request may be retried",
            Notifier(_) => "the SMS gateway failed; the request may be retried",
            RateSource(_) => "no FX rate is available right now; retry later",
            RateStale(_) => {
                "the FX rate feed has not updated this rate recently enough; retry later"
            }
            _ => return None,
        })
    }
}

impl From<crate::domain::money::MoneyError> for CoreError {
    /// Each refusal of money parsing is the `CoreError` variant of the same name, so the
    /// API shows the same code, message and field as before money had its own error.
    fn from(e: crate::domain::money::MoneyError) -> Self {
        use crate::domain::money::MoneyError;
        match e {
            MoneyError::InvalidAmount { input, reason } => {
                CoreError::InvalidAmount { input, reason }
            }
            MoneyError::UnknownToken { token } => CoreError::UnknownToken { token },
            MoneyError::UnknownCurrency { currency } => CoreError::UnknownCurrency { currency },
        }
    }
}

impl From<crate::domain::phone::PhoneError> for CoreError {
    /// A refused phone number is `InvalidPhone`, with the same code, message and field.
    fn from(e: crate::domain::phone::PhoneError) -> Self {
        CoreError::InvalidPhone {
            input: e.input,
            reason: e.reason,
        }
    }
}

impl From<crate::domain::RuleError> for CoreError {
    /// Each refusal of a domain rule is the `CoreError` variant of the same name with the
    /// same fields, so the API shows the same code, message, field and status as when
    /// the rules returned `CoreError` themselves. The match has no catch-all: a new rule
    /// refusal chooses its variant here.
    fn from(e: crate::domain::RuleError) -> Self {
        use crate::domain::RuleError as R;
        match e {
            R::InvalidAmount { input, reason } => CoreError::InvalidAmount { input, reason },
            R::AmountTooSmall { rail, minimum } => CoreError::AmountTooSmall { rail, minimum },
            R::InvalidQuoteId { quote_id, reason } => {
                CoreError::InvalidQuoteId { quote_id, reason }
            }
            R::InvalidParameter { field, reason } => CoreError::InvalidParameter { field, reason },
            R::InvalidPricing { reason } => CoreError::InvalidPricing { reason },
            R::NotAMember => CoreError::NotAMember,
            R::QuoteExpired { quote_id } => CoreError::QuoteExpired { quote_id },
            R::AlreadyConfirmed { id, fiat_reference } => {
                CoreError::AlreadyConfirmed { id, fiat_reference }
            }
            R::SecondApproverRequired { proposed_by } => {
                CoreError::SecondApproverRequired { proposed_by }
            }
            R::ApprovalMismatch { field } => CoreError::ApprovalMismatch { field },
            R::QuoteAlreadyUsed { quote_id } => CoreError::QuoteAlreadyUsed { quote_id },
            R::QuoteTokenMismatch { quote_token, token } => {
                CoreError::QuoteTokenMismatch { quote_token, token }
            }
            R::CodeExpired => CoreError::CodeExpired,
            R::CodeInvalid { attempts_left } => CoreError::CodeInvalid { attempts_left },
            R::TooManyAttempts { retry_after_ms } => CoreError::TooManyAttempts { retry_after_ms },
            R::CodeAlreadyUsed => CoreError::CodeAlreadyUsed,
            R::InvalidTransition {
                machine,
                from,
                event,
            } => CoreError::InvalidTransition {
                machine,
                from,
                event,
            },
            R::RateLimited {
                what,
                retry_after_ms,
            } => CoreError::RateLimited {
                what,
                retry_after_ms,
            },
        }
    }
}

impl From<crate::ports::record::RecordError> for CoreError {
    /// A record that could not be encoded, decoded or read is `Storage` with the record
    /// error's text (`decode wallet w1: ...`, or the store's own), as before the record
    /// port had its own error. A store failure met on a read stays `Storage` too (not
    /// `store_err`'s finer mapping): a read has no race to report.
    fn from(e: crate::ports::record::RecordError) -> Self {
        CoreError::Storage(e.to_string())
    }
}

impl From<crate::ports::services::RateError> for CoreError {
    /// A stale rate is RATE_STALE; every other failure of the source RATE_SOURCE_ERROR.
    fn from(e: crate::ports::services::RateError) -> Self {
        use crate::ports::services::RateError;
        match e {
            RateError::Unavailable(why) => CoreError::RateSource(why),
            RateError::Stale(why) => CoreError::RateStale(why),
        }
    }
}

/// The result of every engine call (the domain's rules return their own errors, which
/// convert into `CoreError`).
pub type CoreResult<T> = Result<T, CoreError>;

/// Whole seconds, rounded up; defined beside the domain's time so the rules' own error
/// texts use it too, and kept at this path for the server.
pub use crate::domain::time::retry_after_secs;

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

    #[test]
    fn a_stale_rate_and_a_failed_source_have_different_codes() {
        use crate::ports::services::RateError;
        let stale = CoreError::from(RateError::Stale("XOF_USDC is 900 s old".into()));
        let down = CoreError::from(RateError::Unavailable("timeout".into()));
        assert_eq!(stale.code(), "RATE_STALE");
        assert_eq!(down.code(), "RATE_SOURCE_ERROR");
        assert!(stale.is_retryable() && down.is_retryable());
    }
}

#[cfg(test)]
mod wrap_tests;
