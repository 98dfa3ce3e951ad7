//! The reference server on the real TRON rail: `[rails.tron_node]` pointing at the local
//! TRON HTTP API node (the `stablecoin-tron-node` crate, the USDT token executed as EVM
//! bytecode on Anvil when an anvil binary is present), on SQLite, over loopback HTTP.
//! The node seals a block on every head read, so the server's workers drive the chain.
//!
//! Without an anvil binary the node keeps its native TRC-20 ledger, unless
//! `TRON_REQUIRE_ANVIL` is set (as `scripts/test` does), which makes that a failure.

use crate::common;

use crate::common::{m, serve, temp_dir, test_config};
use serde_json::json;
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};
use stablecoin_rails::tron::TronAddress;
use stablecoin_server::App;
use stablecoin_server::config::{Secret, StorageConfig, TronNodeSettings};
use stablecoin_tron_node::{NodeConfig, TronNode, backend_from_env};

const SEED: u8 = 0x7e;
const A: &str = "+2250700000801";
const B: &str = "+2250700000802";
const TRX: u64 = 1_000_000;
const BANDWIDTH: i32 = 0;
const ENERGY: i32 = 1;

fn settings(url: &str, usdt: &TronAddress) -> TronNodeSettings {
    common::production::tron_node(url, usdt)
}

async fn address_of(signer: &LocalSigner, purpose: &KeyPurpose) -> TronAddress {
    let key = signer.public_key(purpose, Curve::Secp256k1).await.unwrap();
    TronAddress::from_public_key(&key.bytes).unwrap()
}

#[tokio::test]
async fn the_server_runs_the_real_tron_rail_configured_by_its_operator() {
    let node = TronNode::start(NodeConfig {
        backend: backend_from_env(),
        block_per_head_read: true,
        ..NodeConfig::default()
    })
    .await;
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let signer = LocalSigner::from_seed([SEED; 32]);
    let dir = temp_dir("tron-live");
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.storage = StorageConfig::Sqlite {
        path: Some(dir.join("db.sqlite")),
        max_background: 4,
    };
    config.rails.tron_node = Some(settings(node.url(), &usdt));
    let (app, clock) = common::build_shifted(config.clone()).await;

    // The banner names what the operator must fund: the sponsor's T-address.
    let sponsor = address_of(&signer, &KeyPurpose::Sponsor).await;
    let banner = app.banner("127.0.0.1:8080".parse().unwrap());
    assert!(banner.contains("real tron"), "{banner}");
    assert!(banner.contains(&sponsor.to_base58()), "{banner}");
    assert!(!banner.contains(node.url()), "the API URL is a secret");
    let s = serve(app).await;

    // Unfunded sponsor: reads work, sends are 503 (spec 1.4).
    let ready = s
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await;
    assert_eq!(ready.json()["tron"], "INBOUND_READY", "{}", ready.text());
    let t = s.tenant("Acme", "100").await;
    // A tenant fee on EVM transfers does not apply on TRON (spec 8.4).
    s.flat_tenant_fee(&t, 250_000, "0x00000000000000000000000000000000000000fe")
        .await;
    let provision = |phone: &'static str| s.provision_on(&t.live, "tron", phone);
    let pa = provision(A).await;
    let pb = provision(B).await;
    let addr_a = address_of(
        &signer,
        &KeyPurpose::Wallet(pa["wallet_id"].as_str().unwrap().into()),
    )
    .await;
    assert_eq!(pa["address"], addr_a.to_base58());
    let addr_b = TronAddress::parse(pb["address"].as_str().unwrap()).unwrap();
    assert!(
        node.account(addr_a.as_bytes()).await.is_none(),
        "provisioning is offline: no account, no TRX"
    );
    let send_body = |amount: &str| {
        json!({"from_phone_number": A, "to_phone_number": B, "token": "USDT",
            "quote_id": format!("DIRECT_CRYPTO:USDT:{amount}")})
        .to_string()
    };
    s.post(&t.live, "/v1/tron/transfers/send", &send_body("1"))
        .await
        .expect_err(503, "RAIL_NOT_READY");

    // 25 USDT arrive from outside, with zero TRX: a live read, and the scanner credits
    // them at depth 19.
    node.mint_usdt(addr_a.as_bytes(), 25_000_000).await;
    s.settle().await;
    let balance = |phone: &'static str| {
        let (s, key) = (&s, t.live.clone());
        async move {
            let r = s
                .get(
                    &key,
                    &format!("/v1/tron/users/balance?phone_number=%2B{}", &phone[1..]),
                )
                .await;
            r.expect(200);
            r.json()["balance_usdt"].as_str().unwrap().to_string()
        }
    };
    assert_eq!(balance(A).await, "25.000000");
    assert_eq!(node.trx_balance(addr_a.as_bytes()).await, 0);

    // The operator funds the sponsor: TRX for activations, Stake 2.0 for resources.
    node.create_account(sponsor.as_bytes(), 1_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), ENERGY, 100_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), BANDWIDTH, 10_000 * TRX)
        .await;
    // Readiness of a real rail is cached for 2 s (the send gate and /health/ready alike):
    // the server's clock moves past it.
    clock.advance_ms(2_100);
    let ready = s
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await;
    assert_eq!(ready.json()["tron"], "READY", "{}", ready.text());

    let r = s
        .post(&t.live, "/v1/tron/transfers/send", &send_body("10"))
        .await;
    r.expect(202);
    assert_eq!(r.json()["rail"], "tron");
    assert_eq!(r.json()["tenant_fee"], "0.000000");
    assert_eq!(r.json()["service_fee"], "0.000000");
    let loc = r.header("location").unwrap();
    s.settle().await;
    let done = s.get(&t.live, &loc).await;
    done.expect(200);
    assert_eq!(done.json()["status"], "SETTLED", "{}", done.text());
    let tx = done.json()["tx_hash"].as_str().unwrap().to_string();
    assert_eq!(node.contract_ret(&tx).await.as_deref(), Some("SUCCESS"));
    // Every micro-unit where the ledger says, on chain; the customer still holds no TRX
    // and the sponsor's delegations came back.
    assert_eq!(node.usdt_balance(addr_a.as_bytes()).await, 15_000_000);
    assert_eq!(node.usdt_balance(addr_b.as_bytes()).await, 10_000_000);
    assert_eq!(balance(A).await, "15.000000");
    assert_eq!(balance(B).await, "10.000000");
    let a = node.account(addr_a.as_bytes()).await.expect("activated");
    assert_eq!(a.balance, 0, "the customer holds zero TRX");
    assert_eq!((a.acquired_energy, a.acquired_bandwidth), (0, 0));
    // More than the TRON balance: refused before anything moves.
    s.post(&t.live, "/v1/tron/transfers/send", &send_body("15.000001"))
        .await
        .expect_err(422, "INSUFFICIENT_FUNDS");
    assert_eq!(m("15"), m(&balance(A).await));
}

/// Key custody out of the API process on the real TRON rail: activation, delegations
/// and the TRC-20 transfer are signed by the signing service (`signer.kind =
/// "remote"`) over loopback HTTP, and the data directory holds no seed. The server runs
/// in production mode: its EVM chain is real too (Anvil), SMS and FX go to their
/// providers' fakes, payouts are disabled.
#[tokio::test]
async fn a_production_server_with_the_remote_signer_settles_on_the_real_tron_rail_and_holds_no_seed()
 {
    use stablecoin_signer::service::{SignerService, spawn_on_loopback};
    if !common::production::anvil_or_skip(&["EVM_REQUIRE_ANVIL", "TRON_REQUIRE_ANVIL"]) {
        return;
    }
    const REMOTE_SEED: [u8; 32] = [0x8e; 32];
    const TOKEN: &str = "the-signer-token-of-the-tron-live-test";
    let node = TronNode::start(NodeConfig {
        backend: backend_from_env(),
        block_per_head_read: true,
        ..NodeConfig::default()
    })
    .await;
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let service = spawn_on_loopback(SignerService::new(REMOTE_SEED, TOKEN).unwrap())
        .await
        .unwrap();
    // What the operator computes from the seed to fund the sponsor (outside the server).
    let operator = LocalSigner::from_seed(REMOTE_SEED);
    let sponsor = address_of(&operator, &KeyPurpose::Sponsor).await;
    node.create_account(sponsor.as_bytes(), 1_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), ENERGY, 100_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), BANDWIDTH, 10_000 * TRX)
        .await;

    let dir = temp_dir("tron-remote-signer");
    let mut config = test_config();
    common::use_remote_signer(&mut config, &service.url, TOKEN, &dir);
    config.rails.tron_node = Some(settings(node.url(), &usdt));
    common::production::real_polygon(&mut config, REMOTE_SEED).await;
    let _providers = common::production::production(&mut config).await;
    let s = serve(App::build(config).await.expect("app builds")).await;
    // The details (`rails`) need the metrics token.
    let ready = s.ready_details().await;
    assert_eq!(ready.json()["tron"], "READY", "{}", ready.text());
    assert_eq!(ready.json()["polygon"], "READY", "{}", ready.text());
    assert_eq!(ready.json()["mode"], "production");
    assert_eq!(ready.json()["rails"]["tron"]["simulated"], false);

    let t = s.tenant("Acme", "100").await;
    let mut addresses = Vec::new();
    for phone in [A, B] {
        let r = s
            .post(
                &t.live,
                "/v1/tron/users/provision",
                &json!({"phone_number": phone}).to_string(),
            )
            .await;
        r.expect(200);
        addresses.push(TronAddress::parse(r.json()["address"].as_str().unwrap()).unwrap());
    }
    let (addr_a, addr_b) = (&addresses[0], &addresses[1]);
    node.mint_usdt(addr_a.as_bytes(), 25_000_000).await;
    s.settle().await;

    let r = s
        .post(
            &t.live,
            "/v1/tron/transfers/send",
            &json!({"from_phone_number": A, "to_phone_number": B, "token": "USDT",
                "quote_id": "DIRECT_CRYPTO:USDT:10"})
            .to_string(),
        )
        .await;
    r.expect(202);
    let loc = r.header("location").unwrap();
    s.settle().await;
    let done = s.get(&t.live, &loc).await;
    done.expect(200);
    assert_eq!(done.json()["status"], "SETTLED", "{}", done.text());
    let tx = done.json()["tx_hash"].as_str().unwrap().to_string();
    assert_eq!(node.contract_ret(&tx).await.as_deref(), Some("SUCCESS"));
    assert_eq!(node.usdt_balance(addr_a.as_bytes()).await, 15_000_000);
    assert_eq!(node.usdt_balance(addr_b.as_bytes()).await, 10_000_000);

    common::assert_database_and_no_seed(&dir);
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}
