//! The process's own settings: logging, the engine's workers and the demo tenant.

use serde::Deserialize;

/// `[log]`: what the process logs and how.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `tracing` filter directives (`info`, `stablecoin_server=debug,info`).
    pub filter: String,
    /// Human-readable lines or one JSON object per line.
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

/// `log.format`: the shape of log lines on stderr.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// `tracing`'s human-readable lines (the default).
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Engine worker settings (`stablecoin_core::engine::EngineConfig`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct EngineSettings {
    /// Delay between two status polls of a submitted payment, in milliseconds.
    pub poll_interval_ms: i64,
    /// How long a worker holds a claimed record before another may take it, in
    /// milliseconds (positive).
    pub claim_lease_ms: i64,
    /// Margin after a payment's deadline before the rail's "not found" fails it, in
    /// milliseconds (covers clock skew with the chain).
    pub unknown_grace_ms: i64,
    /// Records each worker step handles at most (positive). The default, 256, is where
    /// the simulated rails' settlement cost per transfer flattens out on SQLite: one
    /// tick's commits, rail calls and fsyncs are shared by more transfers (64: ~870 us of
    /// CPU per settled transfer; 256: ~725 us; 512: ~645 us; BENCHMARKS.md, "Sustained").
    /// Larger claims hold more records per lease and make one refused merged commit
    /// fall back to more single commits.
    pub batch_limit: usize,
    /// This node's id: its name in claims and singleton leases, shown by readiness; must
    /// be unique per process (default `<hostname>-<pid>-<8 random hex digits>`).
    pub worker_id: Option<String>,
    /// How long a node holds the lease of a singleton job (the chain scan, the chain
    /// reconciliation, retention) after its last renewal, in milliseconds (300 to
    /// 600000). It is renewed every third of this; when a node dies, another takes its
    /// jobs over within this time.
    pub singleton_lease_ms: i64,
    /// How long API key and tenant reads are reused from memory, in milliseconds (0: off).
    pub read_cache_ms: i64,
    /// How long wallets read by transfers are reused from memory, in milliseconds
    /// (0: off; safe at any length, transfers re-check at commit).
    pub wallet_cache_ms: i64,
    /// How long after its first submission a payment may still land on chain, in
    /// milliseconds: the deadline every rail enforces (EVM `validUntil`, TRON expiry).
    pub payment_validity_ms: i64,
    /// First wait before a withdrawal's failed refund is tried again, in milliseconds;
    /// doubles after each failure.
    pub refund_retry_ms: i64,
    /// Longest wait between two refund attempts, in milliseconds.
    pub refund_retry_max_ms: i64,
}

impl Default for EngineSettings {
    fn default() -> Self {
        EngineSettings {
            poll_interval_ms: 1_000,
            claim_lease_ms: 30_000,
            unknown_grace_ms: 60_000,
            batch_limit: 256,
            worker_id: None,
            singleton_lease_ms: 3_000,
            read_cache_ms: 1_000,
            wallet_cache_ms: 60_000,
            payment_validity_ms: 600_000,
            refund_retry_ms: 30_000,
            refund_retry_max_ms: 3_600_000,
        }
    }
}

/// `[demo]`: the demo tenant of a zero-configuration start.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct DemoConfig {
    /// Create (first start) or reuse a demo tenant and print its keys.
    pub enabled: bool,
    /// The demo tenant's display name, used when it is created (not empty).
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
