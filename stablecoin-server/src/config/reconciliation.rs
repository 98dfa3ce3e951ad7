//! `[reconciliation]`: how often the ledger is compared with the chains
//! ([`crate::chain_reconciliation`], [`stablecoin_core::engine::Engine::reconcile_chains`]).

use super::{Config, ConfigError};
use serde::Deserialize;

/// `[reconciliation]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct ReconciliationSettings {
    /// Run the comparison (with the workers: `run_workers`).
    pub enabled: bool,
    /// Pause between two passes, in ms (the first runs at start). A pass reads one
    /// balance per wallet, rail and token, so on a real chain with many wallets it is
    /// minutes, not seconds.
    pub interval_ms: u64,
}

impl Default for ReconciliationSettings {
    /// On, every 5 minutes.
    fn default() -> Self {
        ReconciliationSettings {
            enabled: true,
            interval_ms: 300_000,
        }
    }
}

impl Config {
    pub(super) fn validate_reconciliation(&self) -> Result<(), ConfigError> {
        if !(100..=86_400_000).contains(&self.reconciliation.interval_ms) {
            return Err(ConfigError::Invalid(
                "reconciliation.interval_ms must be between 100 and 86400000".into(),
            ));
        }
        Ok(())
    }
}
