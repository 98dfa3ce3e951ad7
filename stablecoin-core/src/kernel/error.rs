//! What kind of failure a product error is, independent of the product.
//!
//! Each product (wallets, escrow, checkout) keeps its own error enum with its own stable
//! codes, and implements [`ProductError`] on it. A transport maps the [`ErrorClass`]
//! once (the server: one class → one HTTP status) instead of one table per product, so
//! a new product's errors answer like the others' without a new table, and a new variant
//! must choose its class where it is written: the products' `class` matches have no
//! catch-all arm.

/// The kind of a failure, as a caller must react to it. One class is one HTTP status in
/// the server; the comments name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The request is malformed or a field is out of bounds: fix it (400).
    BadInput,
    /// No credential, or one nobody issued or one revoked (401).
    Unauthorized,
    /// A valid credential without the authority for this call (403).
    Forbidden,
    /// No such thing for this caller; another tenant's things are reported the same (404).
    NotFound,
    /// The thing's state forbids the call, or a concurrent call won (409).
    Conflict,
    /// The thing existed and has expired (a quote, a one-time code) (410).
    Gone,
    /// Well-formed, but the request cannot be carried out as asked (funds, a reused
    /// idempotency key) (422).
    Unprocessable,
    /// A limit is reached; the same call succeeds later (429).
    RateLimited,
    /// A dependency or a feature is not available now, or not on this deployment (503).
    Unavailable,
    /// A dependency answered with a failure: the chain, the SMS gateway (502).
    Upstream,
    /// A fault of this service (its store, its signer, its configuration) (500).
    Internal,
    /// A use case this build does not provide yet (501). Not in KERNEL.md's first list:
    /// core's `NOT_IMPLEMENTED` answers 501 today, which no other class says.
    NotImplemented,
}

/// The sponsorship budget that refused a payment (issue #51 item 4), for the error body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BudgetRefs {
    /// The rail's name.
    pub rail: String,
    /// `day` or `month` (UTC calendar).
    pub period: &'static str,
    /// `native`, `energy` or `bandwidth`.
    pub resource: &'static str,
    /// The cap, a decimal integer in the resource's unit.
    pub cap: String,
    /// Consumed in the period so far, same unit.
    pub spent: String,
}

/// An error a product returns to its callers: a stable code, a class, the request field
/// at fault. Implemented by every product's one error enum; a transport needs nothing
/// else to answer it.
pub trait ProductError: std::error::Error + Send + Sync + 'static {
    /// The stable SCREAMING_SNAKE_CASE code; part of the public contract.
    fn code(&self) -> &'static str;

    /// What kind of failure this is, which decides how a transport answers it.
    fn class(&self) -> ErrorClass;

    /// The request field at fault, when exactly one is.
    fn param(&self) -> Option<&str> {
        None
    }

    /// True when the same call may succeed later without any change by the caller.
    fn is_retryable(&self) -> bool {
        matches!(self.class(), ErrorClass::Unavailable | ErrorClass::Upstream)
    }

    /// Milliseconds until the same call can succeed (limits and lockouts), for a
    /// `Retry-After`.
    fn retry_after_ms(&self) -> Option<i64> {
        None
    }

    /// The policy rule that refused or held the request (`pol_...:max_per_transaction`),
    /// answered as the error's `rule_id`.
    fn rule_id(&self) -> Option<&str> {
        None
    }

    /// The pending request a second approver must agree to (`apr_...`), answered as the
    /// error's `approval_id`.
    fn approval_id(&self) -> Option<&str> {
        None
    }

    /// SPONSORSHIP_BUDGET_EXCEEDED: which budget refused, answered as the error's
    /// `sponsorship_budget`.
    fn sponsorship_budget(&self) -> Option<BudgetRefs> {
        None
    }

    /// The words a caller is shown instead of the `Display` text, for an error whose text
    /// carries internals (a dependency's answer, a node URL, a database message); `None`
    /// when the text is written for the caller. The product knows which of its texts
    /// carry internals and what failed (the chain, the SMS gateway), so it says so here.
    fn public_message(&self) -> Option<&'static str> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{ErrorClass, ProductError};

    #[derive(Debug, thiserror::Error)]
    #[error("test")]
    struct Classed(ErrorClass);

    impl ProductError for Classed {
        fn code(&self) -> &'static str {
            "TEST"
        }
        fn class(&self) -> ErrorClass {
            self.0
        }
    }

    #[test]
    fn by_default_only_dependency_failures_are_retryable() {
        assert!(Classed(ErrorClass::Unavailable).is_retryable());
        assert!(Classed(ErrorClass::Upstream).is_retryable());
        assert!(!Classed(ErrorClass::Internal).is_retryable());
        assert!(!Classed(ErrorClass::BadInput).is_retryable());
        assert_eq!(Classed(ErrorClass::Conflict).param(), None);
    }
}
