//! The rails a server runs: simulated chains (`stablecoin-rails` `sim`) for every enabled
//! rail, except those configured as real: EVM chains with a `[rails.evm.<chain id>]`
//! table (feature `evm`) run [`EvmRail`](stablecoin_rails::evm::EvmRail) over JSON-RPC,
//! TRON with a `[rails.tron_node]` table (feature `tron`) runs
//! [`TronRail`](stablecoin_rails::tron::TronRail) over java-tron's HTTP API, Solana with
//! a `[rails.solana_node]` table (feature `solana`) runs
//! [`SolanaRail`](stablecoin_rails::solana::SolanaRail) over a validator's JSON-RPC API;
//! all keep their send journal in the server's store.
//!
//! With `[sim] chain_url` every simulated rail is a
//! [`RemoteSimRail`] on the shared chain another process hosts (the `sim-chain` command,
//! [`sim_chain_server`]), so servers sharing one database share one chain.
//!
//! Sends are gated on readiness by the engine (`Engine::require_ready`): a rail that is
//! not READY answers 503 RAIL_NOT_READY before anything is accepted, so a chain whose
//! sponsor runs low stops taking sends before they would start failing on chain.

use crate::config::Config;
use crate::error::StartupError;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    Clock, KeyPurpose, Rail, RailId, RailJournal, Signer, Store, StoreJournal, SwapVenue,
};
use stablecoin_rails::sim::http::{RemoteSimRail, SimChainServer};
use stablecoin_rails::sim::{SimConfig, SimProfile, SimRail};
use std::collections::BTreeMap;
use std::sync::Arc;
#[cfg(any(feature = "evm", feature = "tron", feature = "solana"))]
use std::time::Duration;

/// A real chain, as the start-up banner describes it.
#[derive(Clone, Debug)]
pub struct LiveRail {
    /// Which chain (an EVM chain, TRON or Solana).
    pub rail: RailId,
    /// The key that pays for the chain's fees and needs native coin: on EVM the
    /// paymaster's verifying signer and the bundler, on TRON the activator and resource
    /// delegator, on Solana the fee and rent payer.
    pub sponsor: String,
    /// The service treasury's account: fundings are paid from it.
    pub treasury: String,
    /// The network the node says it serves, as (name, chain id): TRON's from its genesis
    /// block (`mainnet`, `nile`, `shasta`, `private`; `unknown` and 0 if the node could
    /// not be asked at start). `None` on the other rails.
    pub network: Option<(String, u64)>,
}

/// Every rail of a server.
pub struct Rails {
    /// The simulated chains of this process, by rail (test and demo controls: mint,
    /// faults, readiness).
    pub sim: BTreeMap<RailId, Arc<SimRail>>,
    /// The simulated chains on the shared chain of `[sim] chain_url`, by rail (the same
    /// controls, over HTTP).
    pub remote_sim: BTreeMap<RailId, Arc<RemoteSimRail>>,
    /// The real chains.
    pub live: BTreeMap<RailId, (Arc<dyn Rail>, LiveRail)>,
    /// Swap venues built over a real chain (`[swaps] venue = "uniswap_v2"`: the router on
    /// the primary EVM chain).
    pub swap_venues: Vec<Arc<dyn SwapVenue>>,
}

/// The real EVM chains and the venues built over them.
type LiveEvm = (
    BTreeMap<RailId, (Arc<dyn Rail>, LiveRail)>,
    Vec<Arc<dyn SwapVenue>>,
);

impl Rails {
    /// Builds the rails of `config`. Real chains are not contacted here (an RPC outage
    /// must not stop a restart that has payments to reconcile); their readiness is logged
    /// and reported by `/health/ready`.
    pub async fn build(
        config: &Config,
        signer: Arc<dyn Signer>,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
    ) -> Result<Rails, StartupError> {
        let journal: Arc<dyn RailJournal> = Arc::new(StoreJournal::new(store, clock.clone()));
        let (mut live, swap_venues) = build_live(config, signer.clone(), journal.clone()).await?;
        live.extend(build_live_tron(config, signer.clone(), journal.clone()).await?);
        live.extend(build_live_solana(config, signer.clone(), journal).await?);
        let is_live = |id| live.contains_key(&id);
        let (sim, remote_sim) = match &config.sim.chain_url {
            Some(url) => (BTreeMap::new(), build_remote_sim(config, url, is_live)?),
            None => (
                build_sim(config, signer, clock, is_live).await?,
                BTreeMap::new(),
            ),
        };
        Ok(Rails {
            sim,
            remote_sim,
            live,
            swap_venues,
        })
    }

    /// One rail, real or simulated.
    pub fn get(&self, id: RailId) -> Option<Arc<dyn Rail>> {
        match self.live.get(&id) {
            Some((r, _)) => Some(r.clone()),
            None => self
                .sim
                .get(&id)
                .map(|r| r.clone() as Arc<dyn Rail>)
                .or_else(|| self.remote_sim.get(&id).map(|r| r.clone() as Arc<dyn Rail>)),
        }
    }

    /// All rails, for the engine.
    pub fn all(&self) -> Vec<Arc<dyn Rail>> {
        self.sim
            .values()
            .map(|r| r.clone() as Arc<dyn Rail>)
            .chain(self.remote_sim.values().map(|r| r.clone() as Arc<dyn Rail>))
            .chain(self.live.values().map(|(r, _)| r.clone()))
            .collect()
    }

    /// Whether a rail is simulated (in this process or on the shared chain).
    pub fn is_simulated(&self, id: RailId) -> bool {
        self.sim.contains_key(&id) || self.remote_sim.contains_key(&id)
    }
}

/// The simulated chains `config` enables: every enabled chain that is not real.
fn sim_profiles(config: &Config, is_live: impl Fn(RailId) -> bool) -> Vec<SimProfile> {
    let mut profiles: Vec<SimProfile> = config
        .rails
        .evm_chains
        .iter()
        .map(|id| SimProfile::Evm(*id))
        .collect();
    if config.rails.tron {
        profiles.push(SimProfile::Tron);
    }
    if config.rails.solana {
        profiles.push(SimProfile::Solana);
    }
    profiles.retain(|p| !is_live(p.rail_id()));
    profiles
}

/// The simulated chains of this process, each with the treasury float minted.
async fn build_sim(
    config: &Config,
    signer: Arc<dyn Signer>,
    clock: Arc<dyn Clock>,
    is_live: impl Fn(RailId) -> bool,
) -> Result<BTreeMap<RailId, Arc<SimRail>>, StartupError> {
    let float = Micros::parse_whole_tokens(&config.sim.treasury_float)
        .map_err(|e| StartupError::Rails(e.to_string()))?;
    let mut rails = BTreeMap::new();
    for p in sim_profiles(config, is_live) {
        // The engine's clock: payment deadlines pass on the simulated chain as on a real
        // one (a payment past its `valid_until` is never included).
        let rail = Arc::new(
            SimRail::new(p, signer.clone(), SimConfig::for_profile(p)).with_clock(clock.clone()),
        );
        // The simulated chain lives in memory: give the service treasury its float again
        // on every start.
        mint_treasury_float(&rail, float).await?;
        rails.insert(p.rail_id(), rail);
    }
    Ok(rails)
}

/// Mints `float` of every token to the treasury and mines it in.
async fn mint_treasury_float(rail: &SimRail, float: Micros) -> Result<(), StartupError> {
    if float.is_zero() {
        return Ok(());
    }
    let treasury = rail
        .address_for(&KeyPurpose::Treasury)
        .await
        .map_err(|e| StartupError::Rails(e.to_string()))?;
    for token in Token::ALL {
        rail.mint(&treasury, token, float)
            .map_err(|e| StartupError::Rails(e.to_string()))?;
    }
    rail.mine(1);
    Ok(())
}

/// The simulated chains as clients of the shared chain at `url`. Contacts nothing (an
/// unreachable chain shows in readiness, as a real node's outage does) and mints
/// nothing: the chain process minted the float once, when it started.
fn build_remote_sim(
    config: &Config,
    url: &str,
    is_live: impl Fn(RailId) -> bool,
) -> Result<BTreeMap<RailId, Arc<RemoteSimRail>>, StartupError> {
    sim_profiles(config, is_live)
        .into_iter()
        .map(|p| {
            let rail = RemoteSimRail::new(url, p)
                .map_err(|e| StartupError::Rails(format!("sim.chain_url: {e}")))?;
            Ok((p.rail_id(), Arc::new(rail)))
        })
        .collect()
}

/// The shared chain of the `sim-chain` command: one [`SimRail`] per simulated chain
/// `config` enables (a chain with a real-chain table is not simulated), keyed by
/// `signer` (the servers' keys, from the same master seed), on the system clock, each
/// with the treasury float minted once, here.
pub async fn sim_chain_server(
    config: &Config,
    signer: Arc<dyn Signer>,
    clock: Arc<dyn Clock>,
) -> Result<SimChainServer, StartupError> {
    let live: Vec<RailId> = config
        .rails
        .live_evm()?
        .keys()
        .map(|id| RailId::Evm(*id))
        .chain(config.rails.tron_node.as_ref().map(|_| RailId::Tron))
        .chain(config.rails.solana_node.as_ref().map(|_| RailId::Solana))
        .collect();
    let rails = build_sim(config, signer, clock, |id| live.contains(&id)).await?;
    Ok(SimChainServer::new(rails.into_values()))
}

#[cfg(not(feature = "evm"))]
async fn build_live(
    config: &Config,
    _signer: Arc<dyn Signer>,
    _journal: Arc<dyn RailJournal>,
) -> Result<LiveEvm, StartupError> {
    if !config.rails.evm.is_empty() {
        return Err(StartupError::Rails(
            "rails.evm: this server was built without the `evm` feature".into(),
        ));
    }
    Ok((BTreeMap::new(), Vec::new()))
}

#[cfg(feature = "evm")]
async fn build_live(
    config: &Config,
    signer: Arc<dyn Signer>,
    journal: Arc<dyn RailJournal>,
) -> Result<LiveEvm, StartupError> {
    use stablecoin_rails::evm::{
        Bundler, Ceiling, EvmAddress, EvmRail, HttpJsonRpc, Replacement, RpcBundler, SelfBundler,
        UniswapV2Venue,
    };
    let mut out = BTreeMap::new();
    let mut venues: Vec<Arc<dyn SwapVenue>> = Vec::new();
    for (chain_id, settings) in config.rails.live_evm()? {
        let evm_config = evm_config(chain_id, settings)
            .map_err(|e| StartupError::Rails(format!("rails.evm.{chain_id}: {e}")))?;
        let urls = crate::config::node_urls(
            &format!("rails.evm.{chain_id}"),
            &settings.rpc_url,
            &settings.fallback_rpc_urls,
        )
        .map_err(StartupError::Rails)?;
        let rpc = Arc::new(
            HttpJsonRpc::with_urls(urls, Duration::from_millis(settings.rpc_timeout_ms))
                .map_err(|e| StartupError::Rails(format!("rails.evm.{chain_id}: {e}")))?
                .with_retry_down_after(Duration::from_millis(settings.rpc_retry_down_after_ms)),
        );
        let self_bundler = SelfBundler::new(
            rpc.clone(),
            signer.clone(),
            KeyPurpose::Sponsor,
            evm_config.entry_point,
            chain_id,
        )
        .with_replacement(Replacement {
            after: Duration::from_millis(settings.replace_bundle_after_ms),
            ceiling: settings
                .max_fee_per_gas_ceiling_wei
                .map_or(Replacement::default().ceiling, |w| Ceiling::Wei(w.0)),
            // Kept until final, so a reorganisation that drops one re-sends it.
            final_depth: evm_config.confirmations,
            ..Replacement::default()
        });
        // The sponsor key signs every sponsorship whoever bundles.
        let sponsor = self_bundler
            .address()
            .await
            .map_err(|e| StartupError::Rails(format!("rails.evm.{chain_id}: sponsor key: {e}")))?;
        let bundler: Arc<dyn Bundler> = match &settings.bundler_url {
            Some(url) => Arc::new(
                RpcBundler::http(
                    url.expose(),
                    evm_config.entry_point,
                    Duration::from_millis(settings.rpc_timeout_ms),
                )
                .with_resend_after(
                    (settings.bundler_resend_after_ms > 0)
                        .then(|| Duration::from_millis(settings.bundler_resend_after_ms)),
                ),
            ),
            None => Arc::new(self_bundler),
        };
        let rail = EvmRail::new(evm_config, rpc, signer.clone(), bundler)
            .map_err(|e| StartupError::Rails(format!("rails.evm.{chain_id}: {e}")))?
            .with_journal(journal.clone());
        let treasury = rail
            .account_of(&KeyPurpose::Treasury)
            .await
            .map_err(|e| StartupError::Rails(format!("rails.evm.{chain_id}: {e}")))?;
        let readiness = rail.readiness().await;
        let id = RailId::Evm(chain_id);
        tracing::info!(
            rail = %id.name(),
            status = ?readiness.status,
            reasons = %readiness.reasons.join("; "),
            sponsor = %sponsor,
            treasury = %treasury,
            bundler = if settings.bundler_url.is_some() { "external" } else { "self" },
            "real EVM chain"
        );
        let info = LiveRail {
            rail: id,
            sponsor: sponsor.to_string(),
            treasury: treasury.to_string(),
            network: None,
        };
        let rail = Arc::new(rail);
        if config.swaps.venue == crate::config::SwapVenueKind::UniswapV2
            && config.primary_evm_chain() == Some(chain_id)
        {
            let router: EvmAddress = config
                .swaps
                .uniswap_v2_router
                .as_deref()
                .unwrap_or_default()
                .parse()
                .map_err(|e| StartupError::Rails(format!("swaps.uniswap_v2_router: {e}")))?;
            venues.push(Arc::new(UniswapV2Venue::new(rail.clone(), router)));
        }
        out.insert(id, (rail as Arc<dyn Rail>, info));
    }
    Ok((out, venues))
}

#[cfg(not(feature = "tron"))]
async fn build_live_tron(
    config: &Config,
    _signer: Arc<dyn Signer>,
    _journal: Arc<dyn RailJournal>,
) -> Result<BTreeMap<RailId, (Arc<dyn Rail>, LiveRail)>, StartupError> {
    if config.rails.tron_node.is_some() {
        return Err(StartupError::Rails(
            "rails.tron_node: this server was built without the `tron` feature".into(),
        ));
    }
    Ok(BTreeMap::new())
}

#[cfg(feature = "tron")]
async fn build_live_tron(
    config: &Config,
    signer: Arc<dyn Signer>,
    journal: Arc<dyn RailJournal>,
) -> Result<BTreeMap<RailId, (Arc<dyn Rail>, LiveRail)>, StartupError> {
    use stablecoin_rails::tron::{HttpTronApi, TronRail};
    let mut out = BTreeMap::new();
    let Some(settings) = &config.rails.tron_node else {
        return Ok(out);
    };
    let fail = |e: String| StartupError::Rails(format!("rails.tron_node: {e}"));
    let tron_config = tron_config(settings).map_err(fail)?;
    let urls = crate::config::node_urls(
        "rails.tron_node",
        &settings.api_url,
        &settings.fallback_api_urls,
    )
    .map_err(StartupError::Rails)?;
    let mut api = HttpTronApi::with_urls(urls, Duration::from_millis(settings.timeout_ms))
        .map_err(|e| fail(e.to_string()))?
        .with_retry_down_after(Duration::from_millis(settings.rpc_retry_down_after_ms));
    if let Some(key) = &settings.api_key {
        api = api.with_api_key(key.expose());
    }
    // What the node serves names the deals' network (a testnet is never "mainnet").
    let network = match api.network().await {
        Ok(n) => (n.name.to_string(), n.chain_id),
        Err(e) => {
            tracing::warn!(rail = "tron", error = %e, "the TRON node's network could not be read: escrow views say \"unknown\"");
            ("unknown".to_string(), 0)
        }
    };
    let rail = TronRail::new(Arc::new(api), signer, tron_config)
        .await
        .map_err(|e| fail(e.to_string()))?
        .with_journal(journal);
    let treasury = rail
        .address_for(&KeyPurpose::Treasury)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let sponsor = rail.sponsor_address().to_base58();
    let readiness = rail.readiness().await;
    tracing::info!(
        rail = "tron",
        status = ?readiness.status,
        reasons = %readiness.reasons.join("; "),
        sponsor = %sponsor,
        treasury = %treasury,
        "real TRON rail"
    );
    tracing::info!(rail = "tron", network = %network.0, chain_id = network.1, "TRON network");
    let info = LiveRail {
        rail: RailId::Tron,
        sponsor,
        treasury: treasury.0,
        network: Some(network),
    };
    out.insert(RailId::Tron, (Arc::new(rail) as Arc<dyn Rail>, info));
    Ok(out)
}

#[cfg(not(feature = "solana"))]
async fn build_live_solana(
    config: &Config,
    _signer: Arc<dyn Signer>,
    _journal: Arc<dyn RailJournal>,
) -> Result<BTreeMap<RailId, (Arc<dyn Rail>, LiveRail)>, StartupError> {
    if config.rails.solana_node.is_some() {
        return Err(StartupError::Rails(
            "rails.solana_node: this server was built without the `solana` feature".into(),
        ));
    }
    Ok(BTreeMap::new())
}

#[cfg(feature = "solana")]
async fn build_live_solana(
    config: &Config,
    signer: Arc<dyn Signer>,
    journal: Arc<dyn RailJournal>,
) -> Result<BTreeMap<RailId, (Arc<dyn Rail>, LiveRail)>, StartupError> {
    use stablecoin_rails::solana::{JsonRpcClient, SolanaRail};
    let mut out = BTreeMap::new();
    let Some(settings) = &config.rails.solana_node else {
        return Ok(out);
    };
    let fail = |e: String| StartupError::Rails(format!("rails.solana_node: {e}"));
    let solana_config = solana_config(settings).map_err(fail)?;
    let urls = crate::config::node_urls(
        "rails.solana_node",
        &settings.rpc_url,
        &settings.fallback_rpc_urls,
    )
    .map_err(StartupError::Rails)?;
    let rpc = JsonRpcClient::with_urls(urls, Duration::from_millis(settings.timeout_ms))
        .map_err(|e| fail(e.to_string()))?
        .with_retry_down_after(Duration::from_millis(settings.rpc_retry_down_after_ms));
    let rail = SolanaRail::new(Arc::new(rpc), signer, solana_config).with_journal(journal);
    // Both keys derive offline (no node contact): the fee payer and the treasury wallet.
    let fee_payer = rail
        .fee_payer()
        .await
        .map_err(|e| fail(format!("fee payer key: {e}")))?;
    let treasury = rail
        .address_for(&KeyPurpose::Treasury)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let readiness = rail.readiness().await;
    tracing::info!(
        rail = "solana",
        status = ?readiness.status,
        reasons = %readiness.reasons.join("; "),
        fee_payer = %fee_payer,
        treasury = %treasury,
        "real Solana rail"
    );
    let info = LiveRail {
        rail: RailId::Solana,
        sponsor: fee_payer.to_string(),
        treasury: treasury.0,
        network: None,
    };
    out.insert(RailId::Solana, (Arc::new(rail) as Arc<dyn Rail>, info));
    Ok(out)
}

/// The Solana rail's settings: mints and token program parsed (a bad one is refused by
/// its setting's name), the fee payer the `Sponsor` key.
#[cfg(feature = "solana")]
pub fn solana_config(
    s: &crate::config::SolanaNodeSettings,
) -> Result<stablecoin_rails::solana::SolanaConfig, String> {
    use stablecoin_rails::solana::{SolanaConfig, codec};
    let key = |name: &str, v: &str| {
        codec::parse_address(v.trim()).map_err(|e| format!("{name} {v:?}: {e}"))
    };
    let c = SolanaConfig {
        usdc_mint: key("usdc_mint", &s.usdc_mint)?,
        usdt_mint: key("usdt_mint", &s.usdt_mint)?,
        token_program: key("token_program", &s.token_program)?,
        decimals: s.decimals,
        fee_payer: KeyPurpose::Sponsor,
        scan_enabled: s.scan_enabled,
        sends_enabled: s.sends_enabled,
        min_fee_payer_lamports_for_sends: s.min_fee_payer_lamports_for_sends,
        finality_timeout_ms: s.finality_timeout_ms,
        poll_interval_ms: s.poll_interval_ms,
        scan_start_slot: s.scan_start_slot,
        scan_page_size: s.scan_page_size,
        fees: stablecoin_rails::solana::SolanaFeePolicy {
            price_floor_micro_lamports: s.fees.price_floor_micro_lamports,
            price_ceiling_micro_lamports: s.fees.price_ceiling_micro_lamports,
            fee_percentile: s.fees.fee_percentile,
            retry_price_increase_percent: s.fees.retry_price_increase_percent,
            compute_units_base: s.fees.compute_units_base,
            compute_units_per_transfer: s.fees.compute_units_per_transfer,
            compute_units_per_account_created: s.fees.compute_units_per_account_created,
            compute_units_per_memo: s.fees.compute_units_per_memo,
            compute_units_per_memo_byte: s.fees.compute_units_per_memo_byte,
        },
    };
    c.fees.validate()?;
    if c.usdc_mint == c.usdt_mint {
        return Err("usdc_mint and usdt_mint must differ".into());
    }
    for (name, mint) in [("usdc_mint", c.usdc_mint), ("usdt_mint", c.usdt_mint)] {
        if mint == codec::NATIVE_MINT || mint == codec::SYSTEM_PROGRAM_ID {
            return Err(format!(
                "{name} {mint} is native SOL, not a stablecoin mint"
            ));
        }
    }
    Ok(c)
}

/// The TRON rail's settings: contracts parsed (a bad `T...` is refused with its reason).
#[cfg(feature = "tron")]
pub fn tron_config(
    s: &crate::config::TronNodeSettings,
) -> Result<stablecoin_rails::tron::TronConfig, String> {
    use stablecoin_rails::tron::{TronAddress, TronConfig};
    let addr = |name: &str, v: &str| {
        TronAddress::parse(v.trim()).map_err(|e| format!("{name} {v:?}: {}: {e}", e.code()))
    };
    let mut c = TronConfig::new(addr("usdt_contract", &s.usdt_contract)?);
    c.usdc_contract = s
        .usdc_contract
        .as_deref()
        .map(|v| addr("usdc_contract", v))
        .transpose()?;
    c.confirmations = s.confirmations;
    c.energy_per_transfer = s.energy_per_transfer;
    c.bandwidth_per_transfer = s.bandwidth_per_transfer;
    c.activation_reserve_sun = s.activation_reserve_sun;
    c.fee_limit_sun = s.fee_limit_sun;
    c.scan_start_block = s.scan_start_block;
    c.max_scan_blocks = s.max_scan_blocks;
    c.out_of_energy_retries = s.out_of_energy_retries;
    Ok(c)
}

/// The rail profile of one configured chain: every address parsed, nothing defaulted
/// that the operator must decide.
#[cfg(feature = "evm")]
pub fn evm_config(
    chain_id: u64,
    s: &crate::config::EvmChainSettings,
) -> Result<stablecoin_rails::evm::EvmConfig, String> {
    use stablecoin_rails::evm::{EvmAddress, EvmConfig, EvmToken};
    let addr = |name: &str, v: &str| -> Result<EvmAddress, String> {
        v.trim()
            .parse::<EvmAddress>()
            .map_err(|e| format!("{name} {v:?}: {e}"))
    };
    let token = |name: &str, t: &Option<crate::config::TokenSettings>| {
        t.as_ref()
            .map(|t| {
                Ok::<_, String>(EvmToken {
                    address: addr(name, &t.address)?,
                    decimals: t.decimals,
                })
            })
            .transpose()
    };
    let mut c = EvmConfig::new(
        chain_id,
        addr("entry_point", &s.entry_point)?,
        addr("factory", &s.factory)?,
        addr("paymaster", &s.paymaster)?,
    );
    c.usdc = token("usdc.address", &s.usdc)?;
    c.usdt = token("usdt.address", &s.usdt)?;
    c.min_paymaster_deposit_wei = s.min_paymaster_deposit_wei.0;
    c.min_bundler_balance_wei = s.min_bundler_balance_wei.0;
    c.confirmations = s.confirmations;
    c.scan_start_block = s.scan_start_block;
    if let Some(m) = s.max_scan_blocks {
        c.max_scan_blocks = m.max(1);
    }
    let f = &s.fees;
    c.fees = stablecoin_rails::evm::FeePolicy {
        history_blocks: f.history_blocks,
        reward_percentile: f.reward_percentile,
        priority_floor_wei: f.priority_floor_wei.map_or(0, |w| w.0),
        priority_ceiling_wei: f.priority_ceiling_wei.map(|w| w.0),
        max_fee_floor_wei: f.max_fee_floor_wei.map_or(0, |w| w.0),
        max_fee_ceiling_wei: f.max_fee_ceiling_wei.map(|w| w.0),
        max_gas_cost_per_payment_wei: f.max_gas_cost_per_payment_wei.map(|w| w.0),
    };
    c.validate()?;
    Ok(c)
}

#[cfg(all(test, feature = "evm"))]
mod tests {
    use super::*;
    use crate::config::{EvmChainSettings, Secret, TokenSettings, Wei};

    fn settings() -> EvmChainSettings {
        EvmChainSettings {
            rpc_url: Secret::new("http://127.0.0.1:1"),
            fallback_rpc_urls: Vec::new(),
            rpc_retry_down_after_ms: 30_000,
            entry_point: "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108".into(),
            factory: "0x0000000000000000000000000000000000000f01".into(),
            paymaster: "0x0000000000000000000000000000000000000f02".into(),
            usdc: None,
            usdt: Some(TokenSettings {
                address: "0x0000000000000000000000000000000000000f03".into(),
                decimals: 6,
            }),
            min_paymaster_deposit_wei: Wei(1),
            min_bundler_balance_wei: Wei(2),
            confirmations: 3,
            scan_start_block: 4,
            rpc_timeout_ms: 5,
            max_scan_blocks: Some(0),
            bundler_url: None,
            replace_bundle_after_ms: 60_000,
            bundler_resend_after_ms: 30_000,
            max_fee_per_gas_ceiling_wei: None,
            fees: Default::default(),
        }
    }

    #[cfg(feature = "tron")]
    #[test]
    fn a_tron_profile_parses_its_contracts_and_refuses_a_bad_one() {
        let mut t: crate::config::TronNodeSettings = toml::from_str(
            "api_url = \"http://127.0.0.1:1\"\nscan_start_block = 5\nconfirmations = 20\n",
        )
        .unwrap();
        let c = tron_config(&t).unwrap();
        assert_eq!(
            c.usdt_contract.to_base58(),
            "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
        );
        assert_eq!((c.confirmations, c.scan_start_block), (20, 5));
        assert_eq!(c.usdc_contract, None);
        t.usdc_contract = Some("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u".into());
        let e = tron_config(&t).unwrap_err();
        assert!(e.contains("usdc_contract") && e.contains("CHECKSUM"), "{e}");
    }

    #[test]
    fn a_chain_profile_takes_every_setting() {
        let c = evm_config(8453, &settings()).unwrap();
        assert_eq!(c.chain_id, 8453);
        assert!(c.usdc.is_none());
        assert_eq!(c.usdt.unwrap().decimals, 6);
        assert_eq!(
            (c.min_paymaster_deposit_wei, c.min_bundler_balance_wei),
            (1, 2)
        );
        assert_eq!((c.confirmations, c.scan_start_block), (3, 4));
        assert_eq!(c.max_scan_blocks, 1, "at least one block per scan");
        assert_eq!(c.fees, stablecoin_rails::evm::FeePolicy::default());
    }

    #[test]
    fn fee_settings_reach_the_chain_profile_and_inconsistent_ones_are_refused() {
        let mut s = settings();
        s.fees = toml::from_str(
            "priority_floor_wei = 30000000000\nmax_fee_ceiling_wei = \"500000000000\"\n\
             max_gas_cost_per_payment_wei = 1000000000000000\nhistory_blocks = 20\n",
        )
        .unwrap();
        let f = evm_config(137, &s).unwrap().fees;
        assert_eq!(
            (
                f.priority_floor_wei,
                f.max_fee_ceiling_wei,
                f.history_blocks
            ),
            (30_000_000_000, Some(500_000_000_000), 20)
        );
        assert_eq!(f.max_gas_cost_per_payment_wei, Some(1_000_000_000_000_000));
        assert_eq!((f.reward_percentile, f.priority_ceiling_wei), (50, None));
        s.fees.priority_ceiling_wei = Some(Wei(1));
        let e = evm_config(137, &s).unwrap_err();
        assert!(e.contains("priority_ceiling_wei"), "{e}");
        s.fees = toml::from_str("reward_percentile = 101").unwrap();
        assert!(
            evm_config(137, &s)
                .unwrap_err()
                .contains("reward_percentile")
        );
        assert!(toml::from_str::<crate::config::EvmFeeSettings>("tip = 1").is_err());
    }

    #[test]
    fn bad_addresses_and_decimals_name_the_setting() {
        let mut s = settings();
        s.paymaster = "0x1234".into();
        assert!(evm_config(137, &s).unwrap_err().contains("paymaster"));
        let mut s = settings();
        s.entry_point = "0x4337084d9E255Ff0702461CF8895CE9E3b5Ff108".into();
        let e = evm_config(137, &s).unwrap_err();
        assert!(e.contains("entry_point"), "a bad EIP-55 checksum: {e}");
        let mut s = settings();
        s.usdt.as_mut().unwrap().decimals = 2;
        assert!(evm_config(137, &s).unwrap_err().contains("decimals"));
    }
}

#[cfg(all(test, feature = "solana"))]
mod solana_tests {
    use super::*;
    use crate::config::{Secret, SolanaNodeSettings};
    use stablecoin_rails::solana::SolanaConfig;

    #[test]
    fn the_default_solana_profile_is_mainnet_with_the_operators_switches() {
        let mut s = SolanaNodeSettings::new(Secret::new("http://127.0.0.1:1"), 42);
        assert_eq!(
            solana_config(&s).unwrap(),
            SolanaConfig {
                scan_start_slot: 42,
                ..SolanaConfig::mainnet()
            },
            "the defaults are the rail's mainnet mints, program, decimals and thresholds"
        );
        s.scan_enabled = true;
        s.sends_enabled = true;
        s.poll_interval_ms = 7;
        s.scan_page_size = 9;
        let c = solana_config(&s).unwrap();
        assert!(c.scan_enabled && c.sends_enabled);
        assert_eq!((c.poll_interval_ms, c.scan_page_size), (7, 9));
        assert_eq!(c.fee_payer, KeyPurpose::Sponsor);
    }

    #[test]
    fn solana_fee_settings_reach_the_rail_and_inconsistent_ones_are_refused() {
        let mut s = SolanaNodeSettings::new(Secret::new("http://127.0.0.1:1"), 1);
        assert_eq!(
            solana_config(&s).unwrap().fees,
            stablecoin_rails::solana::SolanaFeePolicy::default(),
            "the server's defaults are the rail's"
        );
        s.fees = toml::from_str(
            "price_floor_micro_lamports = 20000
price_ceiling_micro_lamports = 900000
             fee_percentile = 90
compute_units_per_transfer = 7000
compute_units_per_memo = 800
compute_units_per_memo_byte = 3
",
        )
        .unwrap();
        let f = solana_config(&s).unwrap().fees;
        assert_eq!(
            (
                f.price_floor_micro_lamports,
                f.price_ceiling_micro_lamports,
                f.fee_percentile,
                f.compute_units_per_transfer
            ),
            (20_000, 900_000, 90, 7_000)
        );
        assert_eq!(f.compute_units_per_account_created, 40_000);
        assert_eq!(
            (f.compute_units_per_memo, f.compute_units_per_memo_byte),
            (800, 3)
        );
        assert_eq!(f.memo_compute_units(10), 830);
        s.fees.price_ceiling_micro_lamports = 10;
        let e = solana_config(&s).unwrap_err();
        assert!(e.contains("price_ceiling_micro_lamports"), "{e}");
        s.fees = toml::from_str("fee_percentile = 101").unwrap();
        assert!(solana_config(&s).unwrap_err().contains("fee_percentile"));
        assert!(toml::from_str::<crate::config::SolanaFeeSettings>("tip = 1").is_err());
    }
}
