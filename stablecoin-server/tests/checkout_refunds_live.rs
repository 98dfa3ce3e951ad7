//! Refunds of checkout sessions on real chains (issue #50): an over-paid session on
//! Anvil (chain id 137, real ERC-20 transfers, sponsored ERC-4337 operations) and one on
//! the TRON node (real TRC-20 transfers, the sponsor's delegated resources) are refunded
//! to the payer's address partially, then the rest, by the server's worker, from the
//! treasury's address; the payer's on-chain balance is checked after each.
//!
//! Without an anvil binary the EVM test prints SKIPPED and passes, unless
//! `EVM_REQUIRE_ANVIL` is set; the TRON node runs its USDT on Anvil when present and
//! requires it with `TRON_REQUIRE_ANVIL`.

use crate::common::{self, Server, build_shifted, serve, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::{LocalSigner, ShiftedClock};
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};
use stablecoin_rails::evm::EvmAddress;
use stablecoin_rails::evm::testkit::{World, anvil_or_skip, shared_anvil};
use stablecoin_rails::tron::TronAddress;
use stablecoin_server::config::Secret;
use stablecoin_tron_node::{NodeConfig, TronNode, backend_from_env};
use std::sync::Arc;

const EVM_SEED: u8 = 0x71;
const TRON_SEED: u8 = 0x72;
const TRX: u64 = 1_000_000;

/// Opens a live 25-unit session of `currency` on `network`; its id and address.
async fn open(s: &Server, key: &str, currency: &str, network: &str) -> (String, String) {
    let r = s
        .post(
            key,
            "/api/v1/checkout/sessions",
            &json!({"amount": "25", "currency": currency, "networks": [network],
                "expires_in_secs": 3600, "reference": "order-live"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let j = r.json();
    (
        j["session_id"].as_str().unwrap().to_string(),
        j["payment_options"][0]["address"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

async fn read(s: &Server, key: &str, path: &str) -> Value {
    let r = s.get(key, path).await;
    r.expect(200);
    r.json()
}

/// Drives the checkout worker (and `mine`) until `done` holds, at most 300 rounds.
async fn drive<F, Fut, M, MF>(s: &Server, clock: &ShiftedClock, mine: M, what: &str, done: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
    M: Fn() -> MF,
    MF: std::future::Future<Output = ()>,
{
    for _ in 0..300 {
        if done().await {
            return;
        }
        mine().await;
        clock.advance_ms(3_000);
        let r = s.app.state().checkout.tick().await;
        assert!(r.errors.is_empty(), "{what}: {r:?}");
    }
    panic!("{what}: never happened");
}

/// Refunds `body` of session `id` and drives it to completion; the refund.
async fn refund_and_land<M, MF>(
    s: &Server,
    clock: &ShiftedClock,
    key: &str,
    id: &str,
    body: Value,
    mine: M,
) -> Value
where
    M: Fn() -> MF,
    MF: std::future::Future<Output = ()>,
{
    let r = s
        .post(
            key,
            &format!("/api/v1/checkout/sessions/{id}/refunds"),
            &body.to_string(),
        )
        .await;
    r.expect(201);
    let rf = r.json()["refund_id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/checkout/refunds/{rf}");
    drive(s, clock, &mine, "refund completed", || async {
        let v = read(s, key, &path).await;
        assert_ne!(v["status"], "failed", "{v}");
        v["status"] == "completed"
    })
    .await;
    read(s, key, &path).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overpaid_session_on_anvil_is_refunded_on_chain_partially_then_the_rest() {
    if !anvil_or_skip() {
        return;
    }
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([EVM_SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer, |_| {}).await;
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{EVM_SEED:02x}").repeat(32)));
    config.rails.evm_chains = vec![137];
    let mut chain = common::production::evm_chain(&w, &url);
    chain.confirmations = 3;
    // Scan from the chain's current head: the shared Anvil carries other tests' blocks.
    chain.scan_start_block = w.node.eth().block_number().await.unwrap();
    config.rails.evm.insert("137".into(), chain);
    let (app, clock) = build_shifted(config).await;
    let s = serve(app).await;
    let t = s.tenant("Anvil Shop", "0").await;
    let key = t.business_live.clone();
    let mine = || async { w.node.mine(1).await };

    let (id, address) = open(&s, &key, "USDC", "polygon").await;
    let session_addr: EvmAddress = address.parse().unwrap();
    w.mint(w.usdc, &session_addr, 30_000_000).await;
    let session_path = format!("/api/v1/checkout/sessions/{id}");
    drive(&s, &clock, mine, "paid and swept", || async {
        read(&s, &key, &session_path).await["status"] == "paid"
            && w.usdc_of(&session_addr).await == 0
    })
    .await;

    let payer: EvmAddress = format!("0x{}", "a7".repeat(20)).parse().unwrap();
    let first = refund_and_land(
        &s,
        &clock,
        &key,
        &id,
        json!({"amount": "3", "network": "polygon", "address": payer.to_string()}),
        mine,
    )
    .await;
    assert!(
        first["tx_hash"]
            .as_str()
            .is_some_and(|h| h.starts_with("0x"))
    );
    assert_eq!(w.usdc_of(&payer).await, 3_000_000, "the part, on chain");
    let rest = refund_and_land(
        &s,
        &clock,
        &key,
        &id,
        json!({"network": "polygon", "address": payer.to_string()}),
        mine,
    )
    .await;
    assert_eq!(rest["amount"], "27.000000");
    assert_eq!(rest["from_settled"], "25.000000");
    assert_eq!(w.usdc_of(&payer).await, 30_000_000, "all it received, back");
    let list = read(&s, &key, &format!("{session_path}/refunds")).await;
    assert_eq!(list["refundable"], json!([]));
    s.post(
        &key,
        &format!("{session_path}/refunds"),
        &json!({"amount": "1", "network": "polygon", "address": payer.to_string()}).to_string(),
    )
    .await
    .expect_err(422, "REFUND_EXCEEDS_REFUNDABLE");
}

async fn tron_address(signer: &LocalSigner, purpose: &KeyPurpose) -> TronAddress {
    let key = signer.public_key(purpose, Curve::Secp256k1).await.unwrap();
    TronAddress::from_public_key(&key.bytes).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overpaid_session_on_the_tron_node_is_refunded_on_chain_partially_then_the_rest() {
    let node = TronNode::start(NodeConfig {
        backend: backend_from_env(),
        block_per_head_read: true,
        ..NodeConfig::default()
    })
    .await;
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let signer = LocalSigner::from_seed([TRON_SEED; 32]);
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{TRON_SEED:02x}").repeat(32)));
    config.rails.tron_node = Some(common::production::tron_node(node.url(), &usdt));
    // The operator funds the sponsor: TRX for activations, Stake 2.0 for resources.
    let sponsor = tron_address(&signer, &KeyPurpose::Sponsor).await;
    node.create_account(sponsor.as_bytes(), 1_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), 1, 100_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), 0, 10_000 * TRX).await;
    let (app, clock) = build_shifted(config).await;
    let s = serve(app).await;
    let t = s.tenant("Tron Shop", "0").await;
    let key = t.business_live.clone();
    let mine = || async {};

    let (id, address) = open(&s, &key, "USDT", "tron").await;
    let session_addr = TronAddress::parse(&address).unwrap();
    node.mint_usdt(session_addr.as_bytes(), 30_000_000).await;
    let session_path = format!("/api/v1/checkout/sessions/{id}");
    drive(&s, &clock, mine, "paid and swept", || async {
        read(&s, &key, &session_path).await["status"] == "paid"
            && node.usdt_balance(session_addr.as_bytes()).await == 0
    })
    .await;

    // The payer: an address of another key, nobody's in the service.
    let payer = tron_address(&LocalSigner::from_seed([0x99; 32]), &KeyPurpose::Treasury).await;
    let first = refund_and_land(
        &s,
        &clock,
        &key,
        &id,
        json!({"amount": "3", "token": "USDT", "network": "tron",
            "address": payer.to_base58()}),
        mine,
    )
    .await;
    assert!(first["tx_hash"].as_str().is_some_and(|h| !h.is_empty()));
    assert_eq!(node.usdt_balance(payer.as_bytes()).await, 3_000_000);
    let rest = refund_and_land(
        &s,
        &clock,
        &key,
        &id,
        json!({"network": "tron", "address": payer.to_base58()}),
        mine,
    )
    .await;
    assert_eq!(rest["amount"], "27.000000");
    assert_eq!(node.usdt_balance(payer.as_bytes()).await, 30_000_000);
    assert_eq!(
        read(&s, &key, &format!("{session_path}/refunds")).await["refundable"],
        json!([])
    );
}
