//! The crate's one error enum, with stable codes.

use thiserror::Error;

/// Why an adapter of this crate could not be built.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// A setting of an adapter is missing or wrong; the text names it. Never carries a
    /// secret.
    #[error("invalid provider configuration: {0}")]
    InvalidConfig(String),
}

impl ProviderError {
    /// The stable machine code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            ProviderError::InvalidConfig(_) => "INVALID_CONFIG",
        }
    }
}
