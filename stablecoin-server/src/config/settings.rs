//! The process's own settings: logging, the engine's workers and the demo tenant.

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `tracing` filter directives (`info`, `stablecoin_server=debug,info`).
    pub filter: String,
    pub format: LogFormat,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            filter: "info".into(),
            format: LogFormat::Text,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Engine worker settings (`stablecoin_core::engine::EngineConfig`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct EngineSettings {
    pub poll_interval_ms: i64,
    pub claim_lease_ms: i64,
    pub unknown_grace_ms: i64,
    pub batch_limit: usize,
    pub worker_id: Option<String>,
    pub read_cache_ms: i64,
    pub wallet_cache_ms: i64,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            poll_interval_ms: 1_000,
            claim_lease_ms: 30_000,
            unknown_grace_ms: 60_000,
            batch_limit: 64,
            worker_id: None,
            read_cache_ms: 1_000,
            wallet_cache_ms: 60_000,
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct DemoConfig {
    /// Create (first start) or reuse a demo tenant and print its keys.
    pub enabled: bool,
    pub tenant_name: String,
    /// Whole tokens of USDC and of USDT credited to the demo tenant's treasury.
    pub treasury_credit: String,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            enabled: true,
            tenant_name: "Demo Fintech".into(),
            treasury_credit: "10000".into(),
        }
    }
}
