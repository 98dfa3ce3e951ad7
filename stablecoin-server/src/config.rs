//! Server configuration: built-in defaults, then an optional TOML file, then
//! `STABLECOIN_*` environment variables (later wins). Every setting has a default, so no
//! configuration at all is a valid configuration.
//!
//! | TOML key | environment variable | default |
//! |---|---|---|
//! | `listen` | `STABLECOIN_LISTEN` | `127.0.0.1:8080` |
//! | `data_dir` | `STABLECOIN_DATA_DIR` | `stablecoin-data` |
//! | `master_seed` (64 hex) | `STABLECOIN_MASTER_SEED` | see [`crate::app`] (seed file or ephemeral) |
//! | `body_limit_bytes` | `STABLECOIN_BODY_LIMIT_BYTES` | `65536` |
//! | `worker_interval_ms` | `STABLECOIN_WORKER_INTERVAL_MS` | `250` |
//! | `run_workers` | `STABLECOIN_RUN_WORKERS` | `true` (false: API only, e.g. extra API nodes) |
//! | `worker_nice` (0-19) | `STABLECOIN_WORKER_NICE` | `10` (Linux: the workers' CPU priority below the API's; 0: equal) |
//! | `storage.kind` (`memory`/`sqlite`/`postgres`) | `STABLECOIN_STORAGE` | `sqlite` |
//! | `storage.path` (sqlite) | `STABLECOIN_SQLITE_PATH` | `<data_dir>/stablecoin.db` |
//! | `storage.max_background` (sqlite) | `STABLECOIN_SQLITE_MAX_BACKGROUND` | `4` (worker commits the writer adds to a group with API commits in it: lower favours API latency under a settlement backlog, higher settlement progress while the API is busy) |
//! | `storage.url` (postgres) | `STABLECOIN_POSTGRES_URL` | none (required) |
//! | `storage.connect_timeout_secs` (postgres) | `STABLECOIN_POSTGRES_CONNECT_TIMEOUT_SECS` | `30` |
//! | `log.filter` | `STABLECOIN_LOG` | `info` |
//! | `log.format` (`text`/`json`) | `STABLECOIN_LOG_FORMAT` | `text` |
//! | `engine.poll_interval_ms` | `STABLECOIN_ENGINE_POLL_INTERVAL_MS` | `1000` |
//! | `engine.claim_lease_ms` | `STABLECOIN_ENGINE_CLAIM_LEASE_MS` | `30000` |
//! | `engine.unknown_grace_ms` | `STABLECOIN_ENGINE_UNKNOWN_GRACE_MS` | `60000` |
//! | `engine.batch_limit` | `STABLECOIN_ENGINE_BATCH_LIMIT` | `64` |
//! | `engine.worker_id` | `STABLECOIN_ENGINE_WORKER_ID` | `server-<pid>` |
//! | `engine.read_cache_ms` | `STABLECOIN_ENGINE_READ_CACHE_MS` | `1000` (API key and tenant reads reused this long; a key revoked by another process, e.g. the CLI, stops working within it; 0: off) |
//! | `engine.wallet_cache_ms` | `STABLECOIN_ENGINE_WALLET_CACHE_MS` | `60000` (wallets read by transfers reused this long; every transfer re-checks them at commit, so a change made anywhere is never missed; 0: off) |
//! | `rails.mode` (`sim`) | `STABLECOIN_RAILS_MODE` | `sim` |
//! | `rails.evm_chains` | `STABLECOIN_RAILS_EVM_CHAINS` (`137,8453`) | `[137]` |
//! | `rails.primary_evm_chain` | `STABLECOIN_RAILS_PRIMARY_EVM_CHAIN` | first of `evm_chains` |
//! | `rails.tron` | `STABLECOIN_RAILS_TRON` | `true` |
//! | `rails.solana` | `STABLECOIN_RAILS_SOLANA` | `true` |
//! | `rails.evm.<chain id>` (a table) | file only | none: every chain simulated |
//! | `rails.tron_node` (a table) | file only | none: TRON simulated |
//! | `sim.treasury_float` | `STABLECOIN_SIM_TREASURY_FLOAT` | `1000000` (USDC and USDT) |
//! | `demo.enabled` | `STABLECOIN_DEMO` | `true` |
//! | `demo.tenant_name` | `STABLECOIN_DEMO_TENANT_NAME` | `Demo Fintech` |
//! | `demo.treasury_credit` | `STABLECOIN_DEMO_TREASURY_CREDIT` | `10000` (USDC and USDT) |
//! | `webhooks_allow_loopback_http` | `STABLECOIN_WEBHOOKS_ALLOW_LOOPBACK_HTTP` | `false` (https only) |
//!
//! A chain of `rails.evm_chains` runs on the simulated chain unless it has a
//! `[rails.evm.<chain id>]` table, which makes it a real chain (feature `evm`, on by
//! default) with every setting required (nothing about a real chain is guessed):
//!
//! ```toml
//! [rails]
//! evm_chains = [137]
//!
//! [rails.evm.137]
//! rpc_url = "https://polygon.example/rpc"      # a secret: never logged
//! entry_point = "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108"
//! factory = "0x..."                             # SimpleAccountFactory v0.8
//! paymaster = "0x..."                           # VerifyingPaymaster, signer = sponsor key
//! usdc = { address = "0x...", decimals = 6 }    # 18 on BNB Smart Chain
//! usdt = { address = "0x...", decimals = 6 }    # optional when usdc is set, and back
//! min_paymaster_deposit_wei = "100000000000000000"
//! min_bundler_balance_wei = "100000000000000000"
//! confirmations = 128
//! scan_start_block = 64000000
//! # optional: rpc_timeout_ms = 10000, max_scan_blocks = 2000
//! ```
//!
//! Likewise `rails.tron = true` runs the simulated TRON chain unless a `[rails.tron_node]`
//! table makes it the real TRON rail (feature `tron`, on by default) over java-tron's
//! HTTP API:
//!
//! ```toml
//! [rails.tron_node]
//! api_url = "https://api.trongrid.io"          # a secret: never logged
//! scan_start_block = 70000000
//! # optional: api_key (sent as TRON-PRO-API-KEY, a secret),
//! # usdt_contract = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t" (mainnet USDT, the default),
//! # usdc_contract (read and sent back only: TRON wallets hold USDT), confirmations = 19,
//! # energy_per_transfer = 65000, bandwidth_per_transfer = 500,
//! # activation_reserve_sun = 2000000, fee_limit_sun = 100000000, timeout_ms = 10000,
//! # max_scan_blocks = 100
//! ```
//!
//! The start-up banner prints each real chain's sponsor address (the paymaster's signer
//! and the bundler, which needs native coin) and the treasury account (which needs the
//! tokens that fundings pay out).
//!
//! The config file is named by `--config` or `STABLECOIN_CONFIG`. Unknown keys in the
//! file are errors (a typo must not silently fall back to a default). Secrets (the
//! master seed, the PostgreSQL URL) never appear in `Debug` output or logs.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {error}")]
    Read { path: String, error: String },
    #[error("invalid config file {path}: {error}")]
    Parse { path: String, error: String },
    #[error("invalid environment variable {var}: {error}")]
    Env { var: &'static str, error: String },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// A secret string: deserialized like a string, never printed.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Socket address to listen on.
    pub listen: String,
    /// Where durable data lives: the SQLite file and the generated master seed.
    pub data_dir: PathBuf,
    /// 32-byte master seed, hex. All customer and service keys derive from it.
    pub master_seed: Option<Secret>,
    /// Largest accepted request body.
    pub body_limit_bytes: usize,
    /// Pause between two worker ticks.
    pub worker_interval_ms: u64,
    /// Run the engine workers (submit, confirm, reconcile, scan) in this process. Several
    /// API nodes on one database may leave this on (claims keep workers apart) or run
    /// workers on some nodes only.
    pub run_workers: bool,
    /// The workers' nice value (Linux; ignored elsewhere), 0-19: they run on a thread of
    /// their own at this lower CPU priority, so a settlement backlog takes the CPU the
    /// API leaves idle instead of the API's latency. 0 runs them at the API's priority.
    pub worker_nice: i32,
    pub storage: StorageConfig,
    pub log: LogConfig,
    pub engine: EngineSettings,
    pub rails: RailsConfig,
    pub sim: SimSettings,
    pub demo: DemoConfig,
    /// Accept `http://` webhook URLs on loopback hosts (local development and tests).
    /// Off by default: elsewhere webhook URLs must be `https://`.
    pub webhooks_allow_loopback_http: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:8080".into(),
            data_dir: PathBuf::from("stablecoin-data"),
            master_seed: None,
            body_limit_bytes: 64 * 1024,
            worker_interval_ms: 250,
            run_workers: true,
            worker_nice: 10,
            storage: StorageConfig::default(),
            log: LogConfig::default(),
            engine: EngineSettings::default(),
            rails: RailsConfig::default(),
            sim: SimSettings::default(),
            demo: DemoConfig::default(),
            webhooks_allow_loopback_http: false,
        }
    }
}

/// Where records and the ledger live. `open_storage` in [`crate::storage`] turns this into
/// a `Store` + `Ledger`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum StorageConfig {
    /// In-process memory: nothing survives a restart.
    Memory,
    /// Embedded SQLite file (default path `<data_dir>/stablecoin.db`): the default.
    Sqlite {
        #[serde(default)]
        path: Option<PathBuf>,
        /// Background (worker) commits the SQLite writer adds to a group that carries API
        /// commits (>= 1): lower keeps API latency down under a settlement backlog,
        /// higher lets settlement progress faster while the API is busy.
        #[serde(default = "default_sqlite_max_background")]
        max_background: usize,
    },
    /// PostgreSQL by URL.
    Postgres {
        url: Secret,
        /// How long to wait for a connection (at start and later) before failing.
        #[serde(default = "default_pg_connect_timeout_secs")]
        connect_timeout_secs: u64,
    },
}

fn default_pg_connect_timeout_secs() -> u64 {
    30
}

fn default_sqlite_max_background() -> usize {
    stablecoin_store::DEFAULT_MAX_BACKGROUND
}

impl Default for StorageConfig {
    /// Embedded SQLite under `data_dir`: durable with zero configuration.
    fn default() -> Self {
        StorageConfig::Sqlite {
            path: None,
            max_background: default_sqlite_max_background(),
        }
    }
}

impl StorageConfig {
    pub fn name(&self) -> &'static str {
        match self {
            StorageConfig::Memory => "memory",
            StorageConfig::Sqlite { .. } => "sqlite",
            StorageConfig::Postgres { .. } => "postgres",
        }
    }

    /// Whether records survive a restart.
    pub fn is_durable(&self) -> bool {
        !matches!(self, StorageConfig::Memory)
    }
}

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

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RailsMode {
    /// The deterministic in-process chains of `stablecoin-rails` (feature `sim`).
    #[default]
    Sim,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RailsConfig {
    pub mode: RailsMode,
    /// EVM chain ids to run (137 Polygon, 8453 Base, 56 BNB Smart Chain).
    pub evm_chains: Vec<u64>,
    /// The chain of `/v1/users/*` wallets; the first of `evm_chains` when absent.
    pub primary_evm_chain: Option<u64>,
    pub tron: bool,
    pub solana: bool,
    /// Real EVM chains by chain id (`[rails.evm.137]`); a chain of `evm_chains` without
    /// one is simulated.
    pub evm: BTreeMap<String, EvmChainSettings>,
    /// The real TRON rail; without it (and with `tron`) TRON is simulated.
    pub tron_node: Option<TronNodeSettings>,
}

/// The real TRON rail (java-tron's HTTP API, e.g. TronGrid or an own full node).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TronNodeSettings {
    /// The HTTP API root (`/wallet/*` below it); may carry credentials, so never printed.
    pub api_url: Secret,
    /// Sent as `TRON-PRO-API-KEY` (TronGrid).
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// Where the deposit scanners start on a fresh database.
    pub scan_start_block: u64,
    #[serde(default = "default_usdt_contract")]
    pub usdt_contract: String,
    #[serde(default)]
    pub usdc_contract: Option<String>,
    #[serde(default = "default_tron_confirmations")]
    pub confirmations: u64,
    #[serde(default = "default_energy_per_transfer")]
    pub energy_per_transfer: u64,
    #[serde(default = "default_bandwidth_per_transfer")]
    pub bandwidth_per_transfer: u64,
    #[serde(default = "default_activation_reserve_sun")]
    pub activation_reserve_sun: u64,
    #[serde(default = "default_fee_limit_sun")]
    pub fee_limit_sun: i64,
    #[serde(default = "default_rpc_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default = "default_tron_max_scan_blocks")]
    pub max_scan_blocks: u64,
}

fn default_usdt_contract() -> String {
    "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t".into()
}
fn default_tron_confirmations() -> u64 {
    19
}
fn default_energy_per_transfer() -> u64 {
    65_000
}
fn default_bandwidth_per_transfer() -> u64 {
    500
}
fn default_activation_reserve_sun() -> u64 {
    2_000_000
}
fn default_fee_limit_sun() -> i64 {
    100_000_000
}
fn default_tron_max_scan_blocks() -> u64 {
    100
}

impl Default for RailsConfig {
    fn default() -> Self {
        RailsConfig {
            mode: RailsMode::Sim,
            evm_chains: vec![137],
            primary_evm_chain: None,
            tron: true,
            solana: true,
            evm: BTreeMap::new(),
            tron_node: None,
        }
    }
}

impl RailsConfig {
    /// The real chains, by chain id (validated keys).
    pub fn live_evm(&self) -> Result<BTreeMap<u64, &EvmChainSettings>, ConfigError> {
        self.evm
            .iter()
            .map(|(k, v)| {
                k.parse::<u64>().map(|id| (id, v)).map_err(|_| {
                    ConfigError::Invalid(format!(
                        "rails.evm.{k}: the table name must be a chain id such as 137"
                    ))
                })
            })
            .collect()
    }
}

/// One real EVM chain (ERC-4337 v0.8). Every field without a default is required.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EvmChainSettings {
    /// JSON-RPC endpoint; often carries an API key, so never printed.
    pub rpc_url: Secret,
    pub entry_point: String,
    /// SimpleAccountFactory v0.8.
    pub factory: String,
    /// The verifying paymaster whose signer is the service's sponsor key.
    pub paymaster: String,
    pub usdc: Option<TokenSettings>,
    pub usdt: Option<TokenSettings>,
    /// Sends stop being offered (readiness INBOUND_READY) below this paymaster deposit.
    pub min_paymaster_deposit_wei: Wei,
    /// Likewise below this native balance of the bundler (sponsor) account.
    pub min_bundler_balance_wei: Wei,
    /// Blocks, the transaction's own included, before a payment or deposit is final.
    pub confirmations: u64,
    /// Where the deposit scanner starts on a fresh database.
    pub scan_start_block: u64,
    #[serde(default = "default_rpc_timeout_ms")]
    pub rpc_timeout_ms: u64,
    /// Blocks read per scan at most (default 2000; some providers cap `eth_getLogs`).
    #[serde(default)]
    pub max_scan_blocks: Option<u64>,
}

fn default_rpc_timeout_ms() -> u64 {
    10_000
}

/// A token contract and its decimals.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TokenSettings {
    pub address: String,
    pub decimals: u8,
}

/// An amount of wei: a TOML integer, or a decimal string for amounts beyond `i64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wei(pub u128);

impl<'de> Deserialize<'de> for Wei {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Int(v) => Ok(Wei(v.into())),
            Raw::Str(s) => s.trim().parse::<u128>().map(Wei).map_err(|_| {
                serde::de::Error::custom(format!("expected a whole number of wei, got {s:?}"))
            }),
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SimSettings {
    /// Whole tokens of USDC and of USDT minted to the service treasury on every simulated
    /// chain at start (the simulated chains live in memory).
    pub treasury_float: String,
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            treasury_float: "1000000".into(),
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

#[derive(Clone, Copy)]
enum EnvKind {
    Str,
    Int,
    Bool,
    IntList,
}

/// Every environment variable and the TOML key it sets.
const ENV: &[(&str, &[&str], EnvKind)] = &[
    ("STABLECOIN_LISTEN", &["listen"], EnvKind::Str),
    ("STABLECOIN_DATA_DIR", &["data_dir"], EnvKind::Str),
    ("STABLECOIN_MASTER_SEED", &["master_seed"], EnvKind::Str),
    (
        "STABLECOIN_BODY_LIMIT_BYTES",
        &["body_limit_bytes"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_WORKER_INTERVAL_MS",
        &["worker_interval_ms"],
        EnvKind::Int,
    ),
    ("STABLECOIN_RUN_WORKERS", &["run_workers"], EnvKind::Bool),
    ("STABLECOIN_WORKER_NICE", &["worker_nice"], EnvKind::Int),
    ("STABLECOIN_STORAGE", &["storage", "kind"], EnvKind::Str),
    ("STABLECOIN_SQLITE_PATH", &["storage", "path"], EnvKind::Str),
    (
        "STABLECOIN_SQLITE_MAX_BACKGROUND",
        &["storage", "max_background"],
        EnvKind::Int,
    ),
    ("STABLECOIN_POSTGRES_URL", &["storage", "url"], EnvKind::Str),
    (
        "STABLECOIN_POSTGRES_CONNECT_TIMEOUT_SECS",
        &["storage", "connect_timeout_secs"],
        EnvKind::Int,
    ),
    ("STABLECOIN_LOG", &["log", "filter"], EnvKind::Str),
    ("STABLECOIN_LOG_FORMAT", &["log", "format"], EnvKind::Str),
    (
        "STABLECOIN_ENGINE_POLL_INTERVAL_MS",
        &["engine", "poll_interval_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_CLAIM_LEASE_MS",
        &["engine", "claim_lease_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_UNKNOWN_GRACE_MS",
        &["engine", "unknown_grace_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_READ_CACHE_MS",
        &["engine", "read_cache_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_WALLET_CACHE_MS",
        &["engine", "wallet_cache_ms"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_BATCH_LIMIT",
        &["engine", "batch_limit"],
        EnvKind::Int,
    ),
    (
        "STABLECOIN_ENGINE_WORKER_ID",
        &["engine", "worker_id"],
        EnvKind::Str,
    ),
    ("STABLECOIN_RAILS_MODE", &["rails", "mode"], EnvKind::Str),
    (
        "STABLECOIN_RAILS_EVM_CHAINS",
        &["rails", "evm_chains"],
        EnvKind::IntList,
    ),
    (
        "STABLECOIN_RAILS_PRIMARY_EVM_CHAIN",
        &["rails", "primary_evm_chain"],
        EnvKind::Int,
    ),
    ("STABLECOIN_RAILS_TRON", &["rails", "tron"], EnvKind::Bool),
    (
        "STABLECOIN_RAILS_SOLANA",
        &["rails", "solana"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_SIM_TREASURY_FLOAT",
        &["sim", "treasury_float"],
        EnvKind::Str,
    ),
    ("STABLECOIN_DEMO", &["demo", "enabled"], EnvKind::Bool),
    (
        "STABLECOIN_WEBHOOKS_ALLOW_LOOPBACK_HTTP",
        &["webhooks_allow_loopback_http"],
        EnvKind::Bool,
    ),
    (
        "STABLECOIN_DEMO_TENANT_NAME",
        &["demo", "tenant_name"],
        EnvKind::Str,
    ),
    (
        "STABLECOIN_DEMO_TREASURY_CREDIT",
        &["demo", "treasury_credit"],
        EnvKind::Str,
    ),
];

/// The environment variables the server reads (besides `STABLECOIN_CONFIG`).
pub fn env_var_names() -> impl Iterator<Item = &'static str> {
    ENV.iter().map(|(name, _, _)| *name)
}

fn env_value(var: &'static str, raw: &str, kind: EnvKind) -> Result<toml::Value, ConfigError> {
    let err = |e: &str| ConfigError::Env {
        var,
        error: e.to_string(),
    };
    let int = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| err(&format!("expected an integer, got {s:?}")))
    };
    Ok(match kind {
        EnvKind::Str => toml::Value::String(raw.to_string()),
        EnvKind::Int => toml::Value::Integer(int(raw)?),
        EnvKind::Bool => match raw.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => toml::Value::Boolean(true),
            "0" | "false" | "no" | "off" => toml::Value::Boolean(false),
            other => return Err(err(&format!("expected true or false, got {other:?}"))),
        },
        EnvKind::IntList => toml::Value::Array(
            raw.split(',')
                .filter(|s| !s.trim().is_empty())
                .map(|s| int(s).map(toml::Value::Integer))
                .collect::<Result<_, _>>()?,
        ),
    })
}

impl Config {
    /// Loads defaults, then `file` (if any), then the environment as read by `env`.
    pub fn load(
        file: Option<&Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let (mut table, origin) = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
                    path: path.display().to_string(),
                    error: e.to_string(),
                })?;
                let table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Parse {
                    path: path.display().to_string(),
                    error: e.to_string(),
                })?;
                (table, path.display().to_string())
            }
            None => (toml::Table::new(), "(defaults)".to_string()),
        };
        let mut from_env = false;
        for (var, path, kind) in ENV {
            let Some(raw) = env(var) else { continue };
            from_env = true;
            let value = env_value(var, &raw, *kind)?;
            let mut t = &mut table;
            for key in &path[..path.len() - 1] {
                let entry = t
                    .entry(key.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                t = match entry {
                    toml::Value::Table(inner) => inner,
                    _ => {
                        return Err(ConfigError::Invalid(format!(
                            "{var}: `{key}` is not a table in the config file"
                        )));
                    }
                };
            }
            t.insert(path[path.len() - 1].to_string(), value);
        }
        let origin = if from_env {
            format!("{origin} + environment")
        } else {
            origin
        };
        let config: Config =
            Config::deserialize(toml::Value::Table(table)).map_err(|e| ConfigError::Parse {
                path: origin,
                error: e.to_string(),
            })?;
        config.validate()?;
        Ok(config)
    }

    /// Loads from the process environment.
    pub fn from_env(file: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load(file, |k| std::env::var(k).ok())
    }

    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.listen.parse().map_err(|_| {
            ConfigError::Invalid(format!(
                "listen {:?} is not a socket address such as 127.0.0.1:8080",
                self.listen
            ))
        })
    }

    /// The primary EVM chain of `/v1/users/*`.
    pub fn primary_evm_chain(&self) -> Option<u64> {
        self.rails
            .primary_evm_chain
            .or_else(|| self.rails.evm_chains.first().copied())
    }

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
        if let Some(seed) = &self.master_seed {
            parse_seed(seed.expose()).map_err(ConfigError::Invalid)?;
        }
        for (name, v) in [
            ("sim.treasury_float", &self.sim.treasury_float),
            ("demo.treasury_credit", &self.demo.treasury_credit),
        ] {
            stablecoin_core::domain::money::Micros::parse_whole_tokens(v)
                .map_err(|e| ConfigError::Invalid(format!("{name}: {e}")))?;
        }
        if self.demo.enabled && self.demo.tenant_name.trim().is_empty() {
            return bad("demo.tenant_name must not be empty".into());
        }
        Ok(())
    }
}

/// Parses a 64-hex-character master seed.
pub fn parse_seed(s: &str) -> Result<[u8; 32], String> {
    let s = s.trim();
    if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("master_seed must be 64 hexadecimal characters (32 bytes)".into());
    }
    let mut out = [0u8; 32];
    for (i, chunk) in s.as_bytes().chunks(2).enumerate() {
        let hex = std::str::from_utf8(chunk).map_err(|e| e.to_string())?;
        out[i] = u8::from_str_radix(hex, 16).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn no_configuration_is_valid() {
        let c = Config::load(None, env(&[])).unwrap();
        assert_eq!(c.listen, "127.0.0.1:8080");
        assert_eq!(
            c.storage,
            StorageConfig::Sqlite {
                path: None,
                max_background: 4
            }
        );
        assert_eq!(c.primary_evm_chain(), Some(137));
        assert!(c.demo.enabled);
    }

    #[test]
    fn file_then_env() {
        let dir = std::env::temp_dir().join(format!("scfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(
            &path,
            "listen = \"127.0.0.1:9000\"\n[storage]\nkind = \"sqlite\"\npath = \"/tmp/x.db\"\n[rails]\nevm_chains = [137, 8453]\n",
        )
        .unwrap();
        let c = Config::load(Some(&path), env(&[])).unwrap();
        assert_eq!(c.listen, "127.0.0.1:9000");
        assert_eq!(
            c.storage,
            StorageConfig::Sqlite {
                path: Some("/tmp/x.db".into()),
                max_background: 4
            }
        );
        let c = Config::load(
            Some(&path),
            env(&[
                ("STABLECOIN_LISTEN", "0.0.0.0:1"),
                ("STABLECOIN_RAILS_EVM_CHAINS", "56"),
                ("STABLECOIN_DEMO", "false"),
                ("STABLECOIN_SQLITE_MAX_BACKGROUND", "16"),
            ]),
        )
        .unwrap();
        assert_eq!(
            c.storage,
            StorageConfig::Sqlite {
                path: Some("/tmp/x.db".into()),
                max_background: 16
            }
        );
        for bad in ["0", "1025"] {
            let e = Config::load(
                Some(&path),
                env(&[("STABLECOIN_SQLITE_MAX_BACKGROUND", bad)]),
            );
            assert!(e.is_err(), "max_background {bad} must be refused");
        }
        assert_eq!(c.listen, "0.0.0.0:1");
        assert_eq!(c.rails.evm_chains, vec![56]);
        assert!(!c.demo.enabled);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn typos_and_bad_values_are_errors() {
        let dir = std::env::temp_dir().join(format!("scfg2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(&path, "lisen = \"127.0.0.1:9000\"\n").unwrap();
        assert!(Config::load(Some(&path), env(&[])).is_err());
        std::fs::remove_dir_all(&dir).ok();
        assert!(Config::load(None, env(&[("STABLECOIN_DEMO", "maybe")])).is_err());
        assert!(Config::load(None, env(&[("STABLECOIN_LISTEN", "nowhere")])).is_err());
        assert!(Config::load(None, env(&[("STABLECOIN_MASTER_SEED", "abc")])).is_err());
        assert!(Config::load(None, env(&[("STABLECOIN_STORAGE", "mongo")])).is_err());
        for nice in ["-1", "20"] {
            assert!(Config::load(None, env(&[("STABLECOIN_WORKER_NICE", nice)])).is_err());
        }
        let c = Config::load(None, env(&[("STABLECOIN_WORKER_NICE", "19")])).unwrap();
        assert_eq!(c.worker_nice, 19);
        let pg = Config::load(
            None,
            env(&[
                ("STABLECOIN_STORAGE", "postgres"),
                ("STABLECOIN_POSTGRES_URL", "postgres://u:secretpw@h/db"),
            ]),
        )
        .unwrap();
        assert!(!format!("{pg:?}").contains("secretpw"), "secrets redacted");
    }

    const CHAIN: &str = r#"
[rails]
evm_chains = [137, 56]
[rails.evm.56]
rpc_url = "https://user:apikey@bsc.example/rpc"
entry_point = "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108"
factory = "0x0000000000000000000000000000000000000f01"
paymaster = "0x0000000000000000000000000000000000000f02"
usdc = { address = "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d", decimals = 18 }
min_paymaster_deposit_wei = "100000000000000000000"
min_bundler_balance_wei = 100000000000000000
confirmations = 12
scan_start_block = 40000000
"#;

    fn load_text(tag: &str, text: &str) -> Result<Config, ConfigError> {
        let dir = std::env::temp_dir().join(format!("scfg-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(&path, text).unwrap();
        let c = Config::load(Some(&path), env(&[]));
        std::fs::remove_dir_all(&dir).ok();
        c
    }

    const TRON: &str = r#"
[rails.tron_node]
api_url = "https://api.trongrid.io"
api_key = "tg-secret-key"
scan_start_block = 70000000
usdc_contract = "TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8"
"#;

    #[test]
    fn the_real_tron_rail_takes_defaults_except_where_it_starts_scanning() {
        let c = load_text("tron", TRON).unwrap();
        let t = c.rails.tron_node.as_ref().unwrap();
        assert_eq!(t.scan_start_block, 70_000_000);
        assert_eq!(t.usdt_contract, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t");
        assert_eq!((t.confirmations, t.energy_per_transfer), (19, 65_000));
        assert!(!format!("{c:?}").contains("tg-secret-key"), "redacted");
        let e = load_text(
            "tron-missing",
            &TRON.replace("scan_start_block = 70000000\n", ""),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("scan_start_block"), "{e}");
        let e = load_text("tron-off", &format!("[rails]\ntron = false\n{TRON}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("rails.tron is false"), "{e}");
        let e = load_text("tron-zero", &format!("{TRON}confirmations = 0\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("confirmations"), "{e}");
        let e = load_text("tron-typo", &format!("{TRON}energy = 1\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("energy"), "{e}");
    }

    #[test]
    fn a_real_evm_chain_is_configured_in_full() {
        let c = load_text("evm", CHAIN).unwrap();
        let live = c.rails.live_evm().unwrap();
        let bsc = live[&56];
        assert_eq!(bsc.usdc.as_ref().unwrap().decimals, 18);
        assert_eq!(bsc.min_paymaster_deposit_wei, Wei(10u128.pow(20)));
        assert_eq!(bsc.min_bundler_balance_wei, Wei(10u128.pow(17)));
        assert_eq!(bsc.rpc_timeout_ms, 10_000);
        assert!(!live.contains_key(&137), "137 stays simulated");
        assert!(
            !format!("{c:?}").contains("apikey"),
            "the RPC URL is redacted"
        );
    }

    #[test]
    fn an_incomplete_or_stray_evm_chain_is_refused_with_the_reason() {
        let missing = CHAIN.replace("scan_start_block = 40000000\n", "");
        let e = load_text("evm-missing", &missing).unwrap_err().to_string();
        assert!(e.contains("scan_start_block"), "{e}");
        let stray = CHAIN.replace("evm_chains = [137, 56]", "evm_chains = [137]");
        let e = load_text("evm-stray", &stray).unwrap_err().to_string();
        assert!(e.contains("not in rails.evm_chains"), "{e}");
        let bad_key = CHAIN.replace("[rails.evm.56]", "[rails.evm.bsc]");
        let e = load_text("evm-key", &bad_key).unwrap_err().to_string();
        assert!(e.contains("chain id"), "{e}");
        let no_token = CHAIN.replace(
            "usdc = { address = \"0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d\", decimals = 18 }\n",
            "",
        );
        let e = load_text("evm-token", &no_token).unwrap_err().to_string();
        assert!(e.contains("usdc or usdt"), "{e}");
        let typo = CHAIN.replace("confirmations", "confirmation");
        assert!(load_text("evm-typo", &typo).is_err());
    }

    #[test]
    fn seeds_parse() {
        let s = "00".repeat(31) + "ff";
        assert_eq!(parse_seed(&s).unwrap()[31], 255);
        assert!(parse_seed("zz").is_err());
    }
}
