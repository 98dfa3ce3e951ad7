//! `mode = "production"`: the server refuses to start with any part that only pretends,
//! and names every one at once, so an operator fixes the whole list in one pass.
//!
//! What is refused, and why:
//! - a simulated chain (an enabled EVM chain without its `[rails.evm.<id>]` table, TRON
//!   without `[rails.tron_node]`, Solana, which the server can only simulate today): its
//!   balances are made up, so real and simulated money would mix;
//! - the demo tenant: its treasury credit is backed by no fiat;
//! - memory storage: everything is lost at exit;
//! - the in-memory SMS gateway, the demo FX table and the simulated payout provider:
//!   codes would never reach a phone, quotes would not be market rates, withdrawals
//!   would "pay" nobody (`payouts.kind = "disabled"` turns withdrawals off instead);
//! - a local signer or a `master_seed` in the configuration: in production the API
//!   process holds no key material; keys live in the signing service.

use super::{Config, ConfigError, Mode, StorageConfig};

impl Config {
    /// Every setting `production` mode refuses, each as `"<setting>: <why>"`; empty in
    /// development mode and for a configuration fit for production.
    pub fn production_refusals(&self) -> Vec<String> {
        if self.mode != Mode::Production {
            return Vec::new();
        }
        let mut out = Vec::new();
        let live_evm: Vec<u64> = self
            .rails
            .live_evm()
            .map(|m| m.keys().copied().collect())
            .unwrap_or_default();
        for id in &self.rails.evm_chains {
            if !live_evm.contains(id) {
                out.push(format!(
                    "rails.evm_chains: chain {id} has no [rails.evm.{id}] table, so it would be simulated"
                ));
            }
        }
        if self.rails.tron && self.rails.tron_node.is_none() {
            out.push(
                "rails.tron: no [rails.tron_node] table, so TRON would be simulated (configure it or set rails.tron = false)".into(),
            );
        }
        if self.rails.solana {
            out.push("rails.solana: the server simulates Solana (set rails.solana = false)".into());
        }
        if self.demo.enabled {
            out.push(
                "demo.enabled: the demo tenant's treasury credit is backed by no fiat (set demo.enabled = false)".into(),
            );
        }
        if matches!(self.storage, StorageConfig::Memory) {
            out.push(
                "storage.kind: memory loses everything at exit (use sqlite or postgres)".into(),
            );
        }
        if self.sms.is_in_memory() {
            out.push(format!(
                "sms.kind: {} sends nothing to a phone (configure an SMS gateway)",
                self.sms.kind()
            ));
        }
        if self.rates.is_fixed() {
            out.push(format!(
                "rates.kind: {} is the demo table, not a market rate (configure a rate feed)",
                self.rates.kind()
            ));
        }
        if self.payouts.is_simulated() {
            out.push(format!(
                "payouts.kind: {} pays nobody (configure a provider, or \"disabled\" to turn withdrawals off)",
                self.payouts.kind()
            ));
        }
        if self.signer.is_local() {
            out.push(format!(
                "signer.kind: {} keeps keys in the API process (run the signing service and use \"remote\")",
                self.signer.kind()
            ));
        }
        if self.master_seed.is_some() {
            out.push(
                "master_seed: the API process holds no key material in production (the seed belongs to the signing service)".into(),
            );
        }
        out
    }

    /// `Invalid` listing every production refusal (see [`Config::production_refusals`]).
    pub fn validate_production(&self) -> Result<(), ConfigError> {
        let refusals = self.production_refusals();
        if refusals.is_empty() {
            return Ok(());
        }
        Err(ConfigError::Invalid(format!(
            "mode = \"production\" refuses {} setting(s):\n  - {}",
            refusals.len(),
            refusals.join("\n  - ")
        )))
    }
}
