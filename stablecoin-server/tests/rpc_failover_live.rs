//! RPC failover through the server's configuration (issue #49): `[rails.evm.137]` and
//! `[rails.solana_node]` each with a `rpc_url` that fails (a loopback proxy answering
//! 503 in front of Anvil; one hanging past `timeout_ms` in front of the Solana JSON-RPC
//! server) and a healthy `fallback_rpc_urls` entry. Both rails are READY through the
//! fallback, and `/health/ready` names the failing URL by `host:port` only, with why.

use crate::common;

use crate::common::{serve, temp_dir, test_config};
use serde_json::Value;
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};
use stablecoin_rails::evm::testkit::{World, anvil_or_skip, shared_anvil};
use stablecoin_rails::fault_proxy::{Fault, FaultProxy};
use stablecoin_rails::solana::codec::{self, MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::testkit::LiteSvmRpc;
use stablecoin_rails::solana::testkit::server::RpcServer;
use stablecoin_server::config::{Secret, SolanaNodeSettings, StorageConfig};
use std::sync::Arc;

const SEED: u8 = 0x4f;

fn endpoints(details: &Value, rail: &str) -> Vec<(String, bool, Value)> {
    details["rails"][rail]["rpc_endpoints"]
        .as_array()
        .unwrap_or_else(|| panic!("no rpc_endpoints for {rail}: {details}"))
        .iter()
        .map(|e| {
            (
                e["endpoint"].as_str().unwrap().to_string(),
                e["healthy"].as_bool().unwrap(),
                e["last_error"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn readiness_shows_a_failing_rpc_url_redacted_while_the_rail_serves_through_the_next() {
    if !anvil_or_skip() {
        return;
    }
    let anvil = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&anvil, 137, true, signer.clone(), |_| {}).await;
    let evm_proxy = FaultProxy::start(&anvil, Fault::Unavailable).await.unwrap();

    let kit = Arc::new(LiteSvmRpc::new());
    kit.create_mint(&MAINNET_USDC_MINT, 6);
    kit.create_mint(&MAINNET_USDT_MINT, 6);
    let node = RpcServer::start(kit.clone()).await.unwrap();
    let sol_proxy = FaultProxy::start(&node.url(), Fault::Hang).await.unwrap();
    let sponsor = signer
        .public_key(&KeyPurpose::Sponsor, Curve::Ed25519)
        .await
        .unwrap();
    kit.airdrop(
        &codec::address_from_public_key(&sponsor.bytes).unwrap(),
        1_000_000_000,
    );

    let dir = temp_dir("rpc-failover");
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.metrics_token = Some(Secret::new(common::METRICS_TOKEN));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    let mut evm = common::production::evm_chain(&w, &evm_proxy.url());
    evm.fallback_rpc_urls = vec![Secret::new(anvil.clone())];
    config.rails.evm.insert("137".into(), evm);
    let mut sol = SolanaNodeSettings::new(Secret::new(sol_proxy.url()), 0);
    sol.fallback_rpc_urls = vec![Secret::new(node.url())];
    sol.sends_enabled = true;
    sol.scan_enabled = true;
    sol.timeout_ms = 500;
    config.rails.solana = true;
    config.rails.solana_node = Some(sol);
    let s = serve(
        stablecoin_server::App::build(config)
            .await
            .expect("app builds"),
    )
    .await;

    let ready = s.ready_details().await;
    let text = ready.text();
    let j = ready.json();
    assert_eq!(j["polygon"], "READY", "{text}");
    assert_eq!(j["solana"], "READY", "{text}");
    assert_eq!(
        endpoints(&j, "polygon"),
        vec![
            (evm_proxy.host_port(), false, Value::from("HTTP 503")),
            (
                anvil
                    .trim_start_matches("http://")
                    .trim_end_matches('/')
                    .to_string(),
                true,
                Value::Null
            ),
        ]
    );
    let sol = endpoints(&j, "solana");
    assert_eq!(
        sol[0],
        (sol_proxy.host_port(), false, Value::from("timed out"))
    );
    assert!(sol[1].1, "{text}");
    for secret in ["pass-secret", "path-secret", "query-secret", "user:", "/v3"] {
        assert!(!text.contains(secret), "{secret} shows in {text}");
    }
    // A simulated chain has no URLs.
    assert_eq!(
        j["rails"]["tron"]["rpc_endpoints"],
        Value::Array(vec![]),
        "{text}"
    );
}
