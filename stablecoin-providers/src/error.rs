//! The crate's one error type, with stable codes.

use thiserror::Error;

/// Why an adapter could not be built or a provider's callback was refused. Sending
/// errors are the ports' own (`NotifyError`); this is for what the host handles.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The adapter's settings are unusable (an empty credential, a bad base URL).
    #[error("provider configuration: {0}")]
    Config(String),
    /// A callback body is not the provider's documented shape (a field missing).
    #[error("malformed provider callback: {0}")]
    BadCallback(String),
    /// A callback's signature is missing or does not verify.
    #[error("provider callback signature does not verify")]
    BadSignature,
    /// The database a provider's results are kept in failed (the host answers 5xx so
    /// the provider retries, and the status query does not depend on it).
    #[error("provider results storage: {0}")]
    Storage(String),
    /// A settlement report (a statement file staff upload for payout reconciliation) is
    /// not the provider's format: the line at fault and what is wrong with it.
    #[error("settlement report line {line}: {reason}")]
    BadReport {
        /// 1-based line of the file (0: the file as a whole).
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

impl ProviderError {
    /// The stable machine code (`PROVIDER_CONFIG`, `BAD_CALLBACK`, `BAD_SIGNATURE`,
    /// `PROVIDER_STORAGE`, `BAD_REPORT`).
    pub fn code(&self) -> &'static str {
        match self {
            ProviderError::Config(_) => "PROVIDER_CONFIG",
            ProviderError::BadCallback(_) => "BAD_CALLBACK",
            ProviderError::BadSignature => "BAD_SIGNATURE",
            ProviderError::Storage(_) => "PROVIDER_STORAGE",
            ProviderError::BadReport { .. } => "BAD_REPORT",
        }
    }
}
