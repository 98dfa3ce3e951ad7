//! Validation of a loaded configuration: every bound and cross-setting rule, so a bad
//! configuration stops the server at start with the reason.

use super::{Config, ConfigError, StorageConfig, parse_seed};

impl Config {
    /// Checks every bound and cross-setting rule; `Invalid` names the first one broken.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |s: String| Err(ConfigError::Invalid(s));
        self.listen_addr()?;
        if self.body_limit_bytes < 1024 || self.body_limit_bytes > 16 * 1024 * 1024 {
            return bad("body_limit_bytes must be between 1024 and 16777216".into());
        }
        if self.worker_interval_ms == 0 || self.worker_interval_ms > 600_000 {
            return bad("worker_interval_ms must be between 1 and 600000".into());
        }
        if !(0..=19).contains(&self.worker_nice) {
            return bad("worker_nice must be between 0 and 19".into());
        }
        if let StorageConfig::Sqlite { max_background, .. } = &self.storage
            && !(1..=1024).contains(max_background)
        {
            return bad("storage.max_background must be between 1 and 1024".into());
        }
        if self.engine.poll_interval_ms < 0
            || self.engine.claim_lease_ms <= 0
            || self.engine.unknown_grace_ms < 0
            || self.engine.read_cache_ms < 0
            || self.engine.wallet_cache_ms < 0
            || self.engine.batch_limit == 0
        {
            return bad(
                "engine: intervals must not be negative, claim_lease_ms and batch_limit positive"
                    .into(),
            );
        }
        if !(300..=600_000).contains(&self.engine.singleton_lease_ms) {
            return bad("engine.singleton_lease_ms must be between 300 and 600000".into());
        }
        self.http
            .serve_limits()
            .validate()
            .map_err(|e| ConfigError::Invalid(format!("http: {e}")))?;
        self.rate_limits
            .limits()
            .validate()
            .map_err(ConfigError::Invalid)?;
        self.otp.policy().validate().map_err(ConfigError::Invalid)?;
        self.rates.validate().map_err(ConfigError::Invalid)?;
        self.sms.validate().map_err(ConfigError::Invalid)?;
        self.payouts.validate().map_err(ConfigError::Invalid)?;
        self.swaps.validate().map_err(ConfigError::Invalid)?;
        self.screening.validate().map_err(ConfigError::Invalid)?;
        self.notices.validate().map_err(ConfigError::Invalid)?;
        self.limits.min_send().map_err(ConfigError::Invalid)?;
        self.limits
            .rent_quota()
            .validate()
            .map_err(ConfigError::Invalid)?;
        // A deadline shorter than a block or two would fail payments that are fine; the
        // refund back-off must be able to grow.
        if self.engine.payment_validity_ms < 60_000
            || self.engine.refund_retry_ms <= 0
            || self.engine.refund_retry_max_ms < self.engine.refund_retry_ms
        {
            return bad(
                "engine: payment_validity_ms must be at least 60000, refund_retry_ms positive and \
                 refund_retry_max_ms at least refund_retry_ms"
                    .into(),
            );
        }
        if self
            .metrics_token
            .as_ref()
            .is_some_and(|t| t.expose().trim().len() < 32)
        {
            return bad("metrics_token must be at least 32 characters".into());
        }
        if let Some(problem) = self.checkout.problem() {
            return bad(problem);
        }
        if let Some(problem) = self.admin.problem() {
            return bad(problem);
        }
        if let Some(problem) = self.consoles.problem() {
            return bad(problem);
        }
        if self.rails.evm_chains.is_empty() {
            return bad("rails.evm_chains must name at least one EVM chain (e.g. [137])".into());
        }
        if let Some(p) = self.rails.primary_evm_chain
            && !self.rails.evm_chains.contains(&p)
        {
            return bad(format!(
                "rails.primary_evm_chain {p} is not in rails.evm_chains"
            ));
        }
        for (id, chain) in self.rails.live_evm()? {
            if !self.rails.evm_chains.contains(&id) {
                return bad(format!(
                    "rails.evm.{id} is configured but chain {id} is not in rails.evm_chains"
                ));
            }
            if chain.usdc.is_none() && chain.usdt.is_none() {
                return bad(format!(
                    "rails.evm.{id}: configure usdc or usdt (address and decimals)"
                ));
            }
            if chain.replace_bundle_after_ms == 0 {
                return Err(ConfigError::Invalid(format!(
                    "rails.evm.{id}: replace_bundle_after_ms must be at least 1"
                )));
            }
            if chain.confirmations == 0 || chain.rpc_timeout_ms == 0 {
                return bad(format!(
                    "rails.evm.{id}: confirmations and rpc_timeout_ms must be at least 1"
                ));
            }
        }
        if let Some(t) = &self.rails.tron_node {
            if !self.rails.tron {
                return bad("rails.tron_node is configured but rails.tron is false".into());
            }
            if t.confirmations == 0 || t.timeout_ms == 0 || t.max_scan_blocks == 0 {
                return bad(
                    "rails.tron_node: confirmations, timeout_ms and max_scan_blocks must be at least 1"
                        .into(),
                );
            }
            if t.fee_limit_sun <= 0 {
                return bad("rails.tron_node: fee_limit_sun must be positive".into());
            }
        }
        if let Some(s) = &self.rails.solana_node {
            if !self.rails.solana {
                return bad("rails.solana_node is configured but rails.solana is false".into());
            }
            if s.timeout_ms == 0 || s.finality_timeout_ms == 0 {
                return bad(
                    "rails.solana_node: timeout_ms and finality_timeout_ms must be at least 1"
                        .into(),
                );
            }
            if !(1..=1000).contains(&s.scan_page_size) {
                return bad("rails.solana_node: scan_page_size must be between 1 and 1000".into());
            }
            if !(6..=18).contains(&s.decimals) {
                return bad("rails.solana_node: decimals must be between 6 and 18".into());
            }
            // The mints and the token program parse (each bad one named), so
            // `check-config` catches them before a start does.
            #[cfg(feature = "solana")]
            crate::rails::solana_config(s)
                .map_err(|e| ConfigError::Invalid(format!("rails.solana_node: {e}")))?;
        }
        if let Some(seed) = &self.master_seed {
            parse_seed(seed.expose()).map_err(ConfigError::Invalid)?;
        }
        self.signer.validate().map_err(ConfigError::Invalid)?;
        if !self.signer.is_local() && self.master_seed.is_some() {
            return bad(
                "master_seed must not be set with signer.kind = \"remote\": the signing \
                 service holds the seed, this process none"
                    .into(),
            );
        }
        for (name, v) in [
            ("sim.treasury_float", &self.sim.treasury_float),
            ("demo.treasury_credit", &self.demo.treasury_credit),
        ] {
            stablecoin_core::domain::money::Micros::parse_whole_tokens(v)
                .map_err(|e| ConfigError::Invalid(format!("{name}: {e}")))?;
        }
        if let Some(url) = &self.sim.chain_url {
            super::rails::check_chain_url(url).map_err(ConfigError::Invalid)?;
        }
        if self.demo.enabled && self.demo.tenant_name.trim().is_empty() {
            return bad("demo.tenant_name must not be empty".into());
        }
        self.validate_webhooks()?;
        self.validate_production()?;
        self.validate_retention()?;
        self.validate_reconciliation()?;
        Ok(())
    }
}
