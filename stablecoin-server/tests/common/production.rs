//! Production mode for the real-chain tests: a real SMS gateway and rate feed (their
//! fakes, separate HTTP servers on loopback), no demo tenant, no simulated chain,
//! payouts disabled. With `use_remote_signer` this is a configuration production mode
//! accepts.

use stablecoin_providers::rate_feed::fake::{FakeRateFeed, now_secs};
use stablecoin_providers::testkit::FakeAfricasTalking;
use stablecoin_rails::evm::testkit::World;
use stablecoin_server::Config;
use stablecoin_server::config::{
    EvmChainSettings, Mode, PayoutSettings, RatesSettings, Secret, SmsSettings, TokenSettings,
    TronNodeSettings, Wei,
};

/// The outside services a production server talks to in these tests.
pub struct Providers {
    /// The SMS gateway (codes are read from what it received).
    pub sms: FakeAfricasTalking,
    /// The FX rate feed: XOF per USDC at 600.
    pub feed: FakeRateFeed,
}

/// `[rails.evm.<id>]` for the contracts `w` deployed on the node at `url`.
pub fn evm_chain(w: &World, url: &str) -> EvmChainSettings {
    EvmChainSettings {
        rpc_url: Secret::new(url),
        fallback_rpc_urls: Vec::new(),
        rpc_retry_down_after_ms: 30_000,
        entry_point: w.config.entry_point.to_string(),
        factory: w.config.factory.to_string(),
        paymaster: w.config.paymaster.to_string(),
        usdc: Some(TokenSettings {
            address: w.usdc.to_string(),
            decimals: 6,
        }),
        usdt: Some(TokenSettings {
            address: w.usdt.to_string(),
            decimals: 6,
        }),
        min_paymaster_deposit_wei: Wei(10u128.pow(17)),
        min_bundler_balance_wei: Wei(10u128.pow(17)),
        confirmations: 1,
        scan_start_block: 0,
        rpc_timeout_ms: 10_000,
        max_scan_blocks: None,
        bundler_url: None,
        replace_bundle_after_ms: 60_000,
        bundler_resend_after_ms: 30_000,
        max_fee_per_gas_ceiling_wei: None,
        fees: Default::default(),
    }
}

/// `[rails.tron_node]` for the local TRON node at `url` whose USDT is `usdt`: 19
/// confirmations, as on mainnet.
pub fn tron_node(url: &str, usdt: &stablecoin_rails::tron::TronAddress) -> TronNodeSettings {
    TronNodeSettings {
        api_url: Secret::new(url),
        fallback_api_urls: Vec::new(),
        rpc_retry_down_after_ms: 30_000,
        api_key: None,
        scan_start_block: 0,
        usdt_contract: usdt.to_base58(),
        usdc_contract: None,
        confirmations: 19,
        energy_per_transfer: 65_000,
        bandwidth_per_transfer: 500,
        activation_reserve_sun: 2_000_000,
        fee_limit_sun: 100_000_000,
        timeout_ms: 10_000,
        max_scan_blocks: 100,
        out_of_energy_retries: 1,
    }
}

/// Turns `config` (with its chains and signer already set) into production mode over
/// fake providers, and checks that production mode refuses nothing in it.
pub async fn production(config: &mut Config) -> Providers {
    let sms = FakeAfricasTalking::start("prod", "at-key").await.unwrap();
    let feed = FakeRateFeed::start().await.unwrap();
    feed.set_rate("XOF", "USDC", "600", now_secs());
    config.mode = Mode::Production;
    config.metrics_token = Some(stablecoin_server::config::Secret::new(super::METRICS_TOKEN));
    // Solana stays on only where the test configured the real rail.
    if config.rails.solana_node.is_none() {
        config.rails.solana = false;
    }
    config.payouts = PayoutSettings::Disabled;
    config.sms = SmsSettings::AfricasTalking {
        base_url: sms.base_url().into(),
        username: "prod".into(),
        api_key: Secret::new("at-key"),
        from: None,
        timeout_ms: 5_000,
    };
    config.rates = RatesSettings::Http {
        url: Secret::new(feed.pair_url()),
        auth_header: None,
        auth_value: None,
        rate_pointer: "/data/rate".into(),
        timestamp_pointer: Some("/data/timestamp".into()),
        max_age_ms: 60_000,
        spread_bps: 100,
        max_move_bps: 1_000,
        timeout_ms: 5_000,
        decimals: Default::default(),
    };
    // The treasury venue's conversion float, which production makes the operator state.
    config.swaps.float = Some("1000".into());
    // These tests screen nothing unless they configure a screen: said so explicitly, as
    // production requires (issue #51).
    if config.screening.kind == stablecoin_server::config::ScreeningKind::None {
        config.screening.acknowledge_unscreened = true;
    }
    assert_eq!(config.production_refusals(), Vec::<String>::new());
    Providers { sms, feed }
}

/// Whether an anvil binary exists for production mode's real EVM chain. Without one the
/// caller skips (prints SKIPPED), unless one of `require` (e.g. `EVM_REQUIRE_ANVIL`) is
/// set, which fails the test instead.
pub fn anvil_or_skip(require: &[&str]) -> bool {
    if stablecoin_rails::evm::testkit::find_anvil().is_some() {
        return true;
    }
    assert!(
        require.iter().all(|v| std::env::var_os(v).is_none()),
        "{require:?}: set, but no anvil binary was found"
    );
    eprintln!("SKIPPED: no anvil binary (production mode needs a real EVM chain too)");
    false
}

/// Makes chain 137 of `config` real: the ERC-4337 contracts deployed on the shared Anvil
/// with the sponsor key of `seed` (the signing service's), and its `[rails.evm.137]`.
pub async fn real_polygon(config: &mut Config, seed: [u8; 32]) {
    use stablecoin_rails::evm::testkit::shared_anvil;
    let anvil = shared_anvil(137).to_string();
    let world = World::deploy_for(
        &anvil,
        137,
        true,
        std::sync::Arc::new(stablecoin_core::memory::LocalSigner::from_seed(seed)),
        |_| {},
    )
    .await;
    config.rails.evm_chains = vec![137];
    config
        .rails
        .evm
        .insert("137".into(), evm_chain(&world, &anvil));
}
