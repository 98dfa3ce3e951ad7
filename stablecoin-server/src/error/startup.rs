//! Why the server could not start. Here, with the other errors, rather than in
//! [`crate::app`]: the modules that build parts of the server (custody, rails, payouts,
//! SMS, swaps) return it, and importing it from `app`, which imports them all, tied
//! them into one import cycle with it.

use crate::storage::StorageError;
use stablecoin_core::CoreError;

/// Why the server could not start; `main` prints it and exits non-zero.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The configuration is invalid (file, environment or their combination).
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The storage backend could not be opened or migrated.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The master seed is malformed, or its file could not be read, created or is not
    /// private (mode 0600).
    #[error("master seed: {0}")]
    Seed(String),
    /// The remote signer (`signer.kind = "remote"`) could not be set up or did not give
    /// the keys this process needs at start.
    #[error("signer: {0}")]
    Signer(String),
    /// An engine call at start-up failed (creating or reusing the demo tenant).
    #[error("start-up: {0}")]
    Engine(#[from] CoreError),
    /// A rail, the escrow engine or the webhook deliverer could not be built from the
    /// configuration.
    #[error("rails: {0}")]
    Rails(String),
}

impl From<stablecoin_core::ports::record::RecordError> for StartupError {
    /// A start-up record (the demo tenant's marker) that cannot be read or written is an
    /// engine failure, `start-up: storage error: ...`, as when the record port returned
    /// `CoreError`.
    fn from(e: stablecoin_core::ports::record::RecordError) -> Self {
        StartupError::Engine(e.into())
    }
}
