//! Rail settings: which chains run, simulated or real, and each real chain's settings.

use super::{ConfigError, Secret};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `rails.mode`: where chains without a real-chain table run.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RailsMode {
    /// The deterministic in-process chains of `stablecoin-rails` (feature `sim`).
    #[default]
    Sim,
}

/// `[rails]`: which chains run, and which of them are real (a `[rails.evm.<id>]`,
/// `[rails.tron_node]` or `[rails.solana_node]` table) rather than simulated.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RailsConfig {
    /// Where chains without a real-chain table run (only `sim` exists).
    pub mode: RailsMode,
    /// EVM chain ids to run (137 Polygon, 8453 Base, 56 BNB Smart Chain).
    pub evm_chains: Vec<u64>,
    /// The chain of `/v1/users/*` wallets; the first of `evm_chains` when absent.
    pub primary_evm_chain: Option<u64>,
    /// Run the TRON rail (`/v1/tron/*`, escrow); simulated unless `tron_node` is set.
    pub tron: bool,
    /// Run the Solana rail (`/v1/solana/*`); simulated unless `solana_node` is set.
    pub solana: bool,
    /// Real EVM chains by chain id (`[rails.evm.137]`); a chain of `evm_chains` without
    /// one is simulated.
    pub evm: BTreeMap<String, EvmChainSettings>,
    /// The real TRON rail; without it (and with `tron`) TRON is simulated.
    pub tron_node: Option<TronNodeSettings>,
    /// The real Solana rail; without it (and with `solana`) Solana is simulated.
    pub solana_node: Option<SolanaNodeSettings>,
}

/// The real Solana rail (a validator's JSON-RPC API, e.g. an RPC provider or an own
/// node): SPL USDC and USDT, the service's `Sponsor` key paying every fee and rent.
/// Reads of deposits and provisioning are at `finalized` commitment, fixed by the rail
/// (spec 1.5), so there is no commitment setting.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SolanaNodeSettings {
    /// The JSON-RPC endpoint; often carries an API key, so never printed.
    pub rpc_url: Secret,
    /// Further endpoints of the same cluster, tried in order after `rpc_url` when it
    /// times out, refuses, answers 5xx/429 or garbles its answer (issue #49; default
    /// none). Secrets like `rpc_url`.
    #[serde(default)]
    pub fallback_rpc_urls: Vec<Secret>,
    /// How long a failed endpoint is tried only after the healthy ones, in milliseconds
    /// (default 30 000).
    #[serde(default = "default_rpc_retry_down_after_ms")]
    pub rpc_retry_down_after_ms: u64,
    /// Where the deposit scanner starts on a fresh database (a slot).
    pub scan_start_slot: u64,
    /// The USDC mint, base58 (default: mainnet USDC).
    #[serde(default = "default_solana_usdc_mint")]
    pub usdc_mint: String,
    /// The USDT mint, base58 (default: mainnet USDT).
    #[serde(default = "default_solana_usdt_mint")]
    pub usdt_mint: String,
    /// The token program of both mints, base58 (default: SPL Token).
    #[serde(default = "default_solana_token_program")]
    pub token_program: String,
    /// Decimals of both mints (default 6); readiness checks them against the mints.
    #[serde(default = "default_solana_decimals")]
    pub decimals: u8,
    /// Receipt monitoring (deposits credited by the scanner). Off (the default, as spec
    /// 1.5's `SOLANA_SCAN_ENABLED`), readiness is DEGRADED.
    #[serde(default)]
    pub scan_enabled: bool,
    /// Sponsored sends. Off (the default), readiness tops out at INBOUND_READY.
    #[serde(default)]
    pub sends_enabled: bool,
    /// Fee-payer lamports below which sends stop (INBOUND_READY; default 0.05 SOL).
    #[serde(default = "default_min_fee_payer_lamports")]
    pub min_fee_payer_lamports_for_sends: u64,
    /// Timeout of one JSON-RPC request, in milliseconds (default 10 000).
    #[serde(default = "default_rpc_timeout_ms")]
    pub timeout_ms: u64,
    /// How long provisioning waits for its transaction to finalize, in milliseconds
    /// (default 60 000).
    #[serde(default = "default_finality_timeout_ms")]
    pub finality_timeout_ms: u64,
    /// Delay between signature-status polls while waiting, in milliseconds (default 500).
    #[serde(default = "default_poll_interval_ms")]
    pub poll_interval_ms: u64,
    /// Signatures per `getSignaturesForAddress` page while scanning (default and most
    /// 1000).
    #[serde(default = "default_scan_page_size")]
    pub scan_page_size: usize,
    /// `[rails.solana_node.fees]`: each send's compute-unit limit and price (its
    /// priority fee, issue #49); every key optional.
    #[serde(default)]
    pub fees: SolanaFeeSettings,
}

/// `[rails.solana_node.fees]`: a send asks `compute_units_base` +
/// `compute_units_per_transfer` per transfer + `compute_units_per_account_created` per
/// token account it opens + `compute_units_per_memo` and `compute_units_per_memo_byte`
/// per byte of its payment-id memo, and pays the `fee_percentile`-th percentile of
/// `getRecentPrioritizationFees` for the accounts it writes, held within
/// `[price_floor_micro_lamports, price_ceiling_micro_lamports]` per unit (the floor when
/// the node cannot say). A send signed again after its transaction expired unseen pays
/// at least `retry_price_increase_percent` more. The priority fee is
/// `ceil(limit x price / 10^6)` lamports, paid by the sponsor on top of 5 000 per
/// signature.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SolanaFeeSettings {
    /// Lowest compute-unit price, micro-lamports (default 1 000).
    pub price_floor_micro_lamports: u64,
    /// Highest compute-unit price, micro-lamports (default 5 000 000).
    pub price_ceiling_micro_lamports: u64,
    /// Which percentile of the recent slots' fees (default 75; 0 to 100).
    pub fee_percentile: u8,
    /// Percent a re-signed send pays above its expired one, at least (default 50).
    pub retry_price_increase_percent: u32,
    /// Compute units of every send (default 5 000).
    pub compute_units_base: u32,
    /// Compute units per transfer (default 10 000; positive).
    pub compute_units_per_transfer: u32,
    /// Compute units per token account a send opens (default 40 000).
    pub compute_units_per_account_created: u32,
    /// Compute units of the payment-id memo every send carries (default 5 000).
    pub compute_units_per_memo: u32,
    /// Compute units per byte of that memo (default 100).
    pub compute_units_per_memo_byte: u32,
}

impl Default for SolanaFeeSettings {
    fn default() -> Self {
        SolanaFeeSettings {
            price_floor_micro_lamports: 1_000,
            price_ceiling_micro_lamports: 5_000_000,
            fee_percentile: 75,
            retry_price_increase_percent: 50,
            compute_units_base: 5_000,
            compute_units_per_transfer: 10_000,
            compute_units_per_account_created: 40_000,
            compute_units_per_memo: 5_000,
            compute_units_per_memo_byte: 100,
        }
    }
}

impl SolanaNodeSettings {
    /// The settings with every default and `rpc_url`, `scan_start_slot` as given.
    pub fn new(rpc_url: Secret, scan_start_slot: u64) -> Self {
        SolanaNodeSettings {
            rpc_url,
            fallback_rpc_urls: Vec::new(),
            rpc_retry_down_after_ms: default_rpc_retry_down_after_ms(),
            scan_start_slot,
            usdc_mint: default_solana_usdc_mint(),
            usdt_mint: default_solana_usdt_mint(),
            token_program: default_solana_token_program(),
            decimals: default_solana_decimals(),
            scan_enabled: false,
            sends_enabled: false,
            min_fee_payer_lamports_for_sends: default_min_fee_payer_lamports(),
            timeout_ms: default_rpc_timeout_ms(),
            finality_timeout_ms: default_finality_timeout_ms(),
            poll_interval_ms: default_poll_interval_ms(),
            scan_page_size: default_scan_page_size(),
            fees: SolanaFeeSettings::default(),
        }
    }
}

/// Mainnet USDC (`stablecoin_rails::solana::codec::MAINNET_USDC_MINT`).
fn default_solana_usdc_mint() -> String {
    "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v".into()
}
/// Mainnet USDT (`stablecoin_rails::solana::codec::MAINNET_USDT_MINT`).
fn default_solana_usdt_mint() -> String {
    "Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB".into()
}
/// SPL Token (`stablecoin_rails::solana::codec::TOKEN_PROGRAM_ID`).
fn default_solana_token_program() -> String {
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA".into()
}
fn default_solana_decimals() -> u8 {
    6
}
fn default_min_fee_payer_lamports() -> u64 {
    50_000_000
}
fn default_finality_timeout_ms() -> u64 {
    60_000
}
fn default_poll_interval_ms() -> u64 {
    500
}
fn default_scan_page_size() -> usize {
    1000
}

/// The real TRON rail (java-tron's HTTP API, e.g. TronGrid or an own full node).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TronNodeSettings {
    /// The HTTP API root (`/wallet/*` below it); may carry credentials, so never printed.
    pub api_url: Secret,
    /// Further API roots of the same network, tried in order after `api_url` when it
    /// times out, refuses, answers 5xx/429 or garbles its answer (issue #49; default
    /// none). `api_key` goes to every root. Secrets like `api_url`.
    #[serde(default)]
    pub fallback_api_urls: Vec<Secret>,
    /// How long a failed root is tried only after the healthy ones, in milliseconds
    /// (default 30 000).
    #[serde(default = "default_rpc_retry_down_after_ms")]
    pub rpc_retry_down_after_ms: u64,
    /// Sent as `TRON-PRO-API-KEY` (TronGrid).
    #[serde(default)]
    pub api_key: Option<Secret>,
    /// Where the deposit scanners start on a fresh database.
    pub scan_start_block: u64,
    /// The USDT TRC-20 contract, base58 `T...` (default: mainnet USDT).
    #[serde(default = "default_usdt_contract")]
    pub usdt_contract: String,
    /// A USDC TRC-20 contract: read, and sent back when received by mistake (TRON wallets
    /// hold USDT only).
    #[serde(default)]
    pub usdc_contract: Option<String>,
    /// Blocks, the transaction's own included, before a payment or deposit is final
    /// (default 19, TRON's finality).
    #[serde(default = "default_tron_confirmations")]
    pub confirmations: u64,
    /// Energy the sponsor delegates for one TRC-20 transfer (default 65 000; 0: none).
    #[serde(default = "default_energy_per_transfer")]
    pub energy_per_transfer: u64,
    /// Bandwidth, in bytes, the sponsor delegates for one transfer (default 500; 0: none).
    #[serde(default = "default_bandwidth_per_transfer")]
    pub bandwidth_per_transfer: u64,
    /// Sun (1 TRX = 10^6 sun) the sponsor must hold to activate a new account
    /// (default 2 TRX).
    #[serde(default = "default_activation_reserve_sun")]
    pub activation_reserve_sun: u64,
    /// `fee_limit` of a customer's TRC-20 transfer, in sun (default 100 TRX); positive.
    #[serde(default = "default_fee_limit_sun")]
    pub fee_limit_sun: i64,
    /// Timeout of one HTTP API request, in milliseconds (default 10 000).
    #[serde(default = "default_rpc_timeout_ms")]
    pub timeout_ms: u64,
    /// Blocks read per deposit scan at most (default 100).
    #[serde(default = "default_tron_max_scan_blocks")]
    pub max_scan_blocks: u64,
    /// Times a transfer that ran out of Energy (the Energy lent for it consumed by
    /// another transaction of the account first) is re-sponsored and sent again under the
    /// same payment, once the failure is final (default 1; 0: the payment fails and its
    /// money is returned at the first `OUT_OF_ENERGY`).
    #[serde(default = "default_out_of_energy_retries")]
    pub out_of_energy_retries: u32,
}

fn default_out_of_energy_retries() -> u32 {
    1
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
            solana_node: None,
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
    /// Further endpoints of the same chain, tried in order after `rpc_url` when it times
    /// out, refuses, answers 5xx/429 or garbles its answer (issue #49; default none).
    /// Secrets like `rpc_url`. Not for `bundler_url`, which stays one URL.
    #[serde(default)]
    pub fallback_rpc_urls: Vec<Secret>,
    /// How long a failed endpoint is tried only after the healthy ones, in milliseconds
    /// (default 30 000).
    #[serde(default = "default_rpc_retry_down_after_ms")]
    pub rpc_retry_down_after_ms: u64,
    /// The ERC-4337 EntryPoint v0.8 contract, `0x` hex.
    pub entry_point: String,
    /// SimpleAccountFactory v0.8.
    pub factory: String,
    /// The verifying paymaster whose signer is the service's sponsor key.
    pub paymaster: String,
    /// The USDC contract on this chain; at least one of `usdc` and `usdt` is required.
    pub usdc: Option<TokenSettings>,
    /// The USDT contract on this chain.
    pub usdt: Option<TokenSettings>,
    /// Sends stop being offered (readiness INBOUND_READY) below this paymaster deposit.
    pub min_paymaster_deposit_wei: Wei,
    /// Likewise below this native balance of the bundler (sponsor) account.
    pub min_bundler_balance_wei: Wei,
    /// Blocks, the transaction's own included, before a payment or deposit is final.
    pub confirmations: u64,
    /// Where the deposit scanner starts on a fresh database.
    pub scan_start_block: u64,
    /// Timeout of one JSON-RPC request, in milliseconds (default 10 000).
    #[serde(default = "default_rpc_timeout_ms")]
    pub rpc_timeout_ms: u64,
    /// Blocks read per scan at most (default 2000; some providers cap `eth_getLogs`).
    #[serde(default)]
    pub max_scan_blocks: Option<u64>,
    /// An external ERC-4337 bundler's JSON-RPC endpoint (`eth_sendUserOperation`; may
    /// carry an API key, so never printed). Absent: the service bundles itself, its
    /// sponsor key sending `handleOps`.
    #[serde(default)]
    pub bundler_url: Option<Secret>,
    /// The service's own bundles (no `bundler_url`): one the chain has not mined this
    /// many milliseconds after its send is re-sent at its nonce with fees raised by at
    /// least 12.5% and to what the node asks (default 60 000).
    #[serde(default = "default_replace_bundle_after_ms")]
    pub replace_bundle_after_ms: u64,
    /// An external bundler (`bundler_url`) that no longer knows an operation it accepted
    /// (a restart or an eviction emptied its mempool) and that is in no block and still
    /// valid gets the same signed operation again (same hash and nonce: it executes once
    /// at most), at most once per this many milliseconds (default 30 000; 0: never, the
    /// payment then fails at its deadline with its money returned).
    #[serde(default = "default_bundler_resend_after_ms")]
    pub bundler_resend_after_ms: u64,
    /// The highest `max_fee_per_gas` a re-sent bundle may get; past it the bundle is
    /// cancelled (a 21,000-gas transfer to itself at its nonce) and its payments fail
    /// with their money returned once their deadline passes. Default: 10x the bundle's
    /// first fee cap.
    #[serde(default)]
    pub max_fee_per_gas_ceiling_wei: Option<Wei>,
    /// `[rails.evm.<id>.fees]`: how user operations' fees follow the chain
    /// (`eth_feeHistory`) and their limits (issue #49); every key optional.
    #[serde(default)]
    pub fees: EvmFeeSettings,
}

/// `[rails.evm.<id>.fees]`: a user operation's priority fee is the median of the last
/// `history_blocks` non-empty blocks' `reward_percentile`-th percentile tips, its max fee
/// twice the next block's base fee plus that tip, each held within its floor and
/// ceiling; a payment whose gas could cost more than `max_gas_cost_per_payment_wei` is
/// refused (`RAIL_REJECTED`-class failure with both amounts in the reason), unsent.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct EvmFeeSettings {
    /// Recent blocks read (default 10; 1 to 1024).
    pub history_blocks: u64,
    /// Which percentile of each block's tips (default 50).
    pub reward_percentile: u8,
    /// Lowest priority fee, wei per gas (default none; Polygon PoS needs 25-30 gwei).
    pub priority_floor_wei: Option<Wei>,
    /// Highest priority fee, wei per gas (default none).
    pub priority_ceiling_wei: Option<Wei>,
    /// Lowest max fee, wei per gas (default none).
    pub max_fee_floor_wei: Option<Wei>,
    /// Highest max fee, wei per gas (default none): what the paymaster pays per gas at
    /// most. Below the chain's base fee an external bundler holds or refuses the
    /// operation; the self-bundler still includes it, its own account paying the rest.
    pub max_fee_ceiling_wei: Option<Wei>,
    /// The most one payment's gas may cost (its gas limits at its max fee), wei
    /// (default none).
    pub max_gas_cost_per_payment_wei: Option<Wei>,
}

impl Default for EvmFeeSettings {
    fn default() -> Self {
        EvmFeeSettings {
            history_blocks: 10,
            reward_percentile: 50,
            priority_floor_wei: None,
            priority_ceiling_wei: None,
            max_fee_floor_wei: None,
            max_fee_ceiling_wei: None,
            max_gas_cost_per_payment_wei: None,
        }
    }
}

fn default_rpc_timeout_ms() -> u64 {
    10_000
}

fn default_rpc_retry_down_after_ms() -> u64 {
    30_000
}

/// `primary` then `fallbacks`, in order, as the rail's client takes them; a URL given
/// twice is refused (it would only double the wait on an outage). `what` names the
/// table in the error, which never shows a URL.
pub fn node_urls(
    what: &str,
    primary: &Secret,
    fallbacks: &[Secret],
) -> Result<Vec<String>, String> {
    let mut urls = vec![primary.expose().trim().to_string()];
    for (i, f) in fallbacks.iter().enumerate() {
        let u = f.expose().trim().to_string();
        if urls.contains(&u) {
            return Err(format!(
                "{what}: fallback URL #{} repeats an earlier URL",
                i + 1
            ));
        }
        urls.push(u);
    }
    Ok(urls)
}

fn default_replace_bundle_after_ms() -> u64 {
    60_000
}

fn default_bundler_resend_after_ms() -> u64 {
    30_000
}

/// A token contract and its decimals.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TokenSettings {
    /// The ERC-20 contract, `0x` hex.
    pub address: String,
    /// The token's decimals (6 on most chains, 18 on BNB Smart Chain); amounts are
    /// scaled from micro-units with it.
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

/// `[sim]`: settings of the simulated chains.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct SimSettings {
    /// Whole tokens of USDC and of USDT minted to the service treasury on every simulated
    /// chain at start (the simulated chains live in memory). With `chain_url`, the chain
    /// process mints it once, when it starts, and the servers mint nothing.
    pub treasury_float: String,
    /// The shared simulated chain (`stablecoin-server sim-chain`), `http://127.0.0.1:<port>`:
    /// every simulated rail of this server runs on it instead of in this process. Why:
    /// servers sharing one PostgreSQL database must share one chain, or one submits a
    /// payment that another polls for on a chain that never saw it. `None`: in-process
    /// chains (refused with PostgreSQL storage, see
    /// [`Config::shared_chain_refusal`](super::Config::shared_chain_refusal)).
    pub chain_url: Option<String>,
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            treasury_float: "1000000".into(),
            chain_url: None,
        }
    }
}

/// Checks a `sim.chain_url`: plain HTTP to 127.0.0.1 with a port, nothing else (the chain
/// listens there only; it has no authentication).
pub(super) fn check_chain_url(url: &str) -> Result<(), String> {
    let bad = || {
        format!(
            "sim.chain_url {url:?}: expected http://127.0.0.1:<port> (the shared simulated chain listens on 127.0.0.1 only)"
        )
    };
    let port = url
        .strip_prefix("http://127.0.0.1:")
        .map(|rest| rest.strip_suffix('/').unwrap_or(rest))
        .ok_or_else(bad)?;
    match port.parse::<u16>() {
        Ok(p) if p > 0 && !port.starts_with('+') => Ok(()),
        _ => Err(bad()),
    }
}

impl super::Config {
    /// The enabled chains that would run on a simulated chain of this process: every
    /// enabled chain without a real-chain table, unless `sim.chain_url` points them all
    /// at the shared chain.
    pub fn per_process_sim_chains(&self) -> Vec<String> {
        if self.sim.chain_url.is_some() {
            return Vec::new();
        }
        self.enabled_chains()
            .into_iter()
            .filter(|(_, real)| !real)
            .map(|(chain, _)| chain.name())
            .collect()
    }

    /// Why `serve` must not start: storage shared by several processes (PostgreSQL)
    /// with a chain that lives in this process only. Each process would then have a
    /// chain of its own, and a payment one submits would never be found by another's
    /// workers. `None` when the storage is per-process or no chain is per-process.
    pub fn shared_chain_refusal(&self) -> Option<String> {
        let chains = self.per_process_sim_chains();
        if !matches!(self.storage, super::StorageConfig::Postgres { .. }) || chains.is_empty() {
            return None;
        }
        Some(format!(
            "storage.kind = \"postgres\" is shared by several server processes, but the simulated \
             chain(s) {} would run inside this process only: a payment one process submits \
             would never be seen by another's workers. Run one shared chain \
             (`stablecoin-server --config <file> sim-chain --listen 127.0.0.1:9650`) and set \
             [sim] chain_url = \"http://127.0.0.1:9650\" (STABLECOIN_SIM_CHAIN_URL) on every \
             server, or configure those chains as real ones",
            chains.join(", ")
        ))
    }
}
