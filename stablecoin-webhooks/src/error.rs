//! The one error enum of `stablecoin-webhooks`, with a stable machine code per variant.
//!
//! Codes are part of the public contract (the server returns them verbatim); a variant
//! may gain fields but its code never changes.

use stablecoin_core::CoreError;
use stablecoin_core::ports::StoreError;
use thiserror::Error;

/// Every failure of this crate, sending and receiving side; [`WebhookError::code`] is
/// its stable code, and the comments below give the HTTP status the server maps it to.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum WebhookError {
    // ---- bad input (400) ----
    /// The endpoint URL is not acceptable (not https, not loopback in test mode, ...).
    #[error("invalid webhook url {url:?}: {reason}")]
    InvalidUrl {
        /// The URL as given (cut to 200 characters).
        url: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// A subscribed event type is not a known name of the endpoint's family.
    #[error("unknown event type {event_type:?} for the {family} webhook family")]
    UnknownEventType {
        /// The refused name (cut to 100 characters).
        event_type: String,
        /// The endpoint's family (`wallet-service` or `payments`).
        family: &'static str,
    },
    /// A request field breaks a rule other than the URL's (no or too many event types,
    /// an empty time range, an unserializable payments event).
    #[error("invalid {field}: {reason}")]
    InvalidParameter {
        /// The offending field, as the API names it.
        field: &'static str,
        /// Which rule it breaks.
        reason: String,
    },

    // ---- receiver kit ----
    /// No signature header on a received webhook.
    #[error("the {header} header is missing")]
    SignatureMissing {
        /// The header the family signs with.
        header: &'static str,
    },
    /// The signature header is not of the form the family uses.
    #[error("the {header} header is malformed: {reason}")]
    SignatureMalformed {
        /// The family's signature header.
        header: &'static str,
        /// What is wrong (`expected sha256=<hex>`, or a secret of the wrong form).
        reason: &'static str,
    },
    /// The signature does not match the body under this secret.
    #[error("the webhook signature does not match the body")]
    SignatureMismatch,
    /// A Standard Webhooks timestamp further from the receiver's clock than its
    /// tolerance: a stale (possibly replayed) or post-dated delivery.
    #[error(
        "the webhook timestamp is more than {tolerance_s} s from now: a stale or replayed delivery"
    )]
    StaleTimestamp {
        /// The tolerance applied, seconds either way.
        tolerance_s: i64,
    },
    /// A received body is not a JSON object (a partial event is fine; garbage is not).
    #[error("invalid webhook body: {reason}")]
    InvalidBody {
        /// Why it was refused (not JSON, not an object).
        reason: String,
    },
    /// The receiver's deposit ledger failed.
    #[error("deposit ledger: {0}")]
    DepositLedger(String),

    // ---- not found (404) ----
    /// No such endpoint, event or delivery (for the caller's tenant).
    #[error("{kind} {id} not found")]
    NotFound {
        /// What was looked up (`webhook endpoint`, `webhook event`, `webhook delivery`).
        kind: &'static str,
        /// The id asked for (cut to 120 characters).
        id: String,
    },

    // ---- sending side ----
    /// An outbox event whose payload cannot be rendered to its wire form.
    #[error("event {event_id} ({event_type}) cannot be rendered: {reason}")]
    InvalidEventPayload {
        /// The outbox event's id.
        event_id: String,
        /// Its type (`transfer.settled`, ...).
        event_type: String,
        /// Why the payload does not render.
        reason: String,
    },
    /// Concurrent update of a record; retry.
    #[error("concurrent update of {what}; retry")]
    Conflict {
        /// The record that changed under the caller (`<kind> <id>`).
        what: String,
    },
    /// The HTTP client could not be built.
    #[error("http transport: {0}")]
    Transport(String),
    /// The store failed (or an engine call failed for a reason other than a conflict);
    /// retryable.
    #[error("storage error: {0}")]
    Storage(String),
}

impl WebhookError {
    /// The stable machine code of this error.
    pub fn code(&self) -> &'static str {
        use WebhookError::*;
        match self {
            InvalidUrl { .. } => "INVALID_WEBHOOK_URL",
            UnknownEventType { .. } => "UNKNOWN_EVENT_TYPE",
            InvalidParameter { .. } => "INVALID_PARAMETER",
            SignatureMissing { .. } => "SIGNATURE_MISSING",
            SignatureMalformed { .. } => "SIGNATURE_MALFORMED",
            SignatureMismatch => "SIGNATURE_MISMATCH",
            StaleTimestamp { .. } => "SIGNATURE_TIMESTAMP_STALE",
            InvalidBody { .. } => "INVALID_WEBHOOK_BODY",
            DepositLedger(_) => "DEPOSIT_LEDGER_ERROR",
            NotFound { .. } => "NOT_FOUND",
            InvalidEventPayload { .. } => "INVALID_EVENT_PAYLOAD",
            Conflict { .. } => "CONFLICT",
            Transport(_) => "TRANSPORT_ERROR",
            Storage(_) => "STORAGE_ERROR",
        }
    }

    /// True when the same call may succeed later without any change by the caller.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            WebhookError::Conflict { .. }
                | WebhookError::Storage(_)
                | WebhookError::DepositLedger(_)
                | WebhookError::Transport(_)
        )
    }

    /// True for the signature failures (a receiver answers them with 401).
    pub fn is_signature_error(&self) -> bool {
        matches!(
            self,
            WebhookError::SignatureMissing { .. }
                | WebhookError::SignatureMalformed { .. }
                | WebhookError::SignatureMismatch
                | WebhookError::StaleTimestamp { .. }
        )
    }
}

impl From<StoreError> for WebhookError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::VersionConflict { kind, id } => WebhookError::Conflict {
                what: format!("{kind} {id}"),
            },
            other => WebhookError::Storage(other.to_string()),
        }
    }
}

impl From<CoreError> for WebhookError {
    fn from(e: CoreError) -> Self {
        match e {
            CoreError::Conflict { what, .. } => WebhookError::Conflict { what },
            other => WebhookError::Storage(other.to_string()),
        }
    }
}

impl From<stablecoin_core::ports::record::RecordError> for WebhookError {
    /// Through `CoreError`, so a record that cannot be encoded, decoded or read keeps
    /// the `STORAGE_ERROR` text it had when the record port returned `CoreError`.
    fn from(e: stablecoin_core::ports::record::RecordError) -> Self {
        CoreError::from(e).into()
    }
}

/// Result alias of this crate.
pub type WebhookResult<T> = Result<T, WebhookError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        assert_eq!(WebhookError::SignatureMismatch.code(), "SIGNATURE_MISMATCH");
        assert_eq!(
            WebhookError::NotFound {
                kind: "webhook endpoint",
                id: "whe_x".into()
            }
            .code(),
            "NOT_FOUND"
        );
        let conflict: WebhookError = StoreError::VersionConflict {
            kind: "k".into(),
            id: "i".into(),
        }
        .into();
        assert_eq!(conflict.code(), "CONFLICT");
        assert!(conflict.is_retryable());
        assert!(WebhookError::SignatureMismatch.is_signature_error());
    }
}
