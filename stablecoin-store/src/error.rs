//! The error enum of `stablecoin-store`'s own API (opening, connecting, migrating).
//!
//! Everything the `Store` and `Ledger` traits return stays `StoreError` / `LedgerError`
//! from `stablecoin-core`; this enum only covers what happens before a store exists.

use stablecoin_core::ports::store::StoreError;
use thiserror::Error;

/// Why a store could not be opened, connected to or migrated; [`Error::code`] is the
/// stable machine code.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot work (zero readers, an empty URL, ...).
    #[error("invalid store configuration: {reason}")]
    Config {
        /// What is wrong and with which setting, for the operator (URLs redacted).
        reason: String,
    },
    /// The database could not be opened or reached.
    #[error("database: {0}")]
    Database(String),
    /// Applying the shipped migrations failed.
    #[error("migration failed: {0}")]
    Migrate(String),
}

impl Error {
    /// The stable machine code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Config { .. } => "STORE_CONFIG_INVALID",
            Error::Database(_) => "STORAGE_ERROR",
            Error::Migrate(_) => "STORE_MIGRATION_FAILED",
        }
    }

    /// True when the same call may succeed later without any change by the caller.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Database(_))
    }
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Database(e.to_string())
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        Error::Migrate(e.to_string())
    }
}

impl From<Error> for StoreError {
    fn from(e: Error) -> Self {
        StoreError::Backend(e.to_string())
    }
}
