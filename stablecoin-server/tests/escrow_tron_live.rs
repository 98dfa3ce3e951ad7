//! `/v1/escrows` over HTTP on the real TRON rail (issue #48, item 9): the local TRON node
//! (`[rails.tron_node]`, its USDT on Anvil when an anvil binary is present) serving a
//! testnet's genesis block (Nile's chain id). Admission waits for TRON READY (refused
//! while the sponsor is unfunded and TRON is INBOUND_READY); a deal is created, funded
//! on chain, released to the seller's TRON address; another is disputed and a staff
//! member's resolution refunds the buyer on chain. Every deal is labelled with the
//! node's network, never `mainnet`. And escrow deposits switched off by configuration
//! admit no new escrow.
//!
//! Without an anvil binary the node keeps its native TRC-20 ledger, unless
//! `TRON_REQUIRE_ANVIL` is set, which makes that a failure.

use crate::common::{Server, build_shifted, serve, start_with, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer};
use stablecoin_rails::tron::TronAddress;
use stablecoin_server::config::Secret;
use stablecoin_tron_node::{NodeConfig, TronNode, backend_from_env};

const BUYER: &str = "+2250700000911";
const SELLER: &str = "+2250700000912";
const SEED: u8 = 0x7b;
const TRX: u64 = 1_000_000;
const ADMIN_TOKEN: &str = "admin-token-escrow-tron-live-0123456789";
/// Nile's chain id: the last four bytes of its genesis block id.
const NILE: u64 = 3_448_148_188;

async fn address_of(signer: &LocalSigner, purpose: &KeyPurpose) -> TronAddress {
    let key = signer.public_key(purpose, Curve::Secp256k1).await.unwrap();
    TronAddress::from_public_key(&key.bytes).unwrap()
}

fn create_body(amount: &str, reference: &str) -> String {
    json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
        "amount": amount, "reference": reference})
    .to_string()
}

/// Mines past the confirmation depth and runs the escrow workers, five rounds:
/// deposits confirm, payouts land and confirm.
async fn settle(s: &Server, node: &TronNode) {
    let escrow = s.app.state().escrow.as_ref().expect("escrow engine");
    for _ in 0..5 {
        node.mine(20).await;
        let r = escrow.settle_all(100).await;
        assert!(r.errors.is_empty(), "{:?}", r.errors);
    }
}

async fn read(s: &Server, key: &str, id: &str) -> Value {
    let r = s.get(key, &format!("/v1/escrows/{id}")).await;
    r.expect(200);
    r.json()
}

/// Creates a deal of `whole` USDT (201) and pays it in full on chain; the deal, FUNDED.
async fn funded(s: &Server, node: &TronNode, key: &str, whole: u64, reference: &str) -> Value {
    let r = s
        .post(
            key,
            "/v1/escrows",
            &create_body(&whole.to_string(), reference),
        )
        .await;
    r.expect(201);
    let e = r.json();
    // The node's network (Nile), never mainnet.
    assert_eq!(e["network"], "nile", "{e}");
    assert_eq!(e["chain_id"], NILE, "{e}");
    let address = TronAddress::parse(e["escrow_address"].as_str().unwrap()).unwrap();
    node.mint_usdt(address.as_bytes(), u128::from(whole) * 1_000_000)
        .await;
    settle(s, node).await;
    let id = e["id"].as_str().unwrap();
    let v = read(s, key, id).await;
    assert_eq!(v["state"], "FUNDED", "{v}");
    assert_eq!(v["funded_amount"], (whole * 1_000_000).to_string());
    v
}

#[tokio::test]
async fn escrow_runs_over_http_on_the_tron_node_once_tron_is_ready_and_names_the_nodes_network() {
    let mut genesis = [0u8; 32];
    genesis[28..].copy_from_slice(&(NILE as u32).to_be_bytes());
    let node = TronNode::start(NodeConfig {
        backend: backend_from_env(),
        block_per_head_read: true,
        genesis_block_id: Some(genesis),
        ..NodeConfig::default()
    })
    .await;
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let signer = LocalSigner::from_seed([SEED; 32]);
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.admin.token = Some(Secret::new(ADMIN_TOKEN));
    config.rails.tron_node = Some(crate::common::production::tron_node(node.url(), &usdt));
    let (app, clock) = build_shifted(config).await;
    let s = serve(app).await;
    let t = s.tenant("Acme", "0").await;
    let buyer = s.provision(&t.live, BUYER).await;
    let seller = s.provision(&t.live, SELLER).await;
    let wallet_address = |p: &Value| {
        let purpose = KeyPurpose::Wallet(p["wallet_id"].as_str().unwrap().into());
        let signer = &signer;
        async move { address_of(signer, &purpose).await }
    };
    let buyer_tron = wallet_address(&buyer).await;
    let seller_tron = wallet_address(&seller).await;

    // The sponsor is unfunded: TRON is INBOUND_READY and no escrow is admitted.
    let ready = s
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await;
    assert_eq!(ready.json()["tron"], "INBOUND_READY", "{}", ready.text());
    s.post(&t.live, "/v1/escrows", &create_body("150", "order-0"))
        .await
        .expect_err(503, "RAIL_NOT_READY");
    assert_eq!(
        s.get(&t.live, "/v1/escrows").await.json()["total"],
        0,
        "nothing created"
    );

    // The operator funds the sponsor; past the readiness cache TRON is READY.
    let sponsor = address_of(&signer, &KeyPurpose::Sponsor).await;
    node.create_account(sponsor.as_bytes(), 1_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), 1, 100_000 * TRX).await;
    node.freeze(sponsor.as_bytes(), 0, 10_000 * TRX).await;
    clock.advance_ms(2_100);
    let ready = s
        .send(reqwest::Method::GET, "/health/ready", None, None, &[])
        .await;
    assert_eq!(ready.json()["tron"], "READY", "{}", ready.text());

    // Create, fund on chain, release: the seller's TRON address receives the deal.
    let e = funded(&s, &node, &t.live, 150, "order-1").await;
    let id = e["id"].as_str().unwrap();
    let escrow_address = TronAddress::parse(e["escrow_address"].as_str().unwrap()).unwrap();
    let r = s
        .post(
            &t.live,
            &format!("/v1/escrows/{id}/release"),
            r#"{"on_behalf_of":"BUYER"}"#,
        )
        .await;
    r.expect(202);
    settle(&s, &node).await;
    let v = read(&s, &t.live, id).await;
    assert_eq!(v["state"], "RELEASED", "{v}");
    let tx = v["payout_tx_hash"].as_str().expect("paid on chain");
    assert_eq!(node.contract_ret(tx).await.as_deref(), Some("SUCCESS"));
    assert_eq!(node.usdt_balance(seller_tron.as_bytes()).await, 150_000_000);
    assert_eq!(node.usdt_balance(escrow_address.as_bytes()).await, 0);

    // Another deal is disputed; staff resolve it with a refund to the buyer.
    let e = funded(&s, &node, &t.live, 40, "order-2").await;
    let id = e["id"].as_str().unwrap();
    s.post(
        &t.live,
        &format!("/v1/escrows/{id}/dispute"),
        r#"{"reason":"never delivered","on_behalf_of":"BUYER"}"#,
    )
    .await
    .expect(200);
    assert_eq!(read(&s, &t.live, id).await["state"], "DISPUTED");
    let staff = s.app.engine().create_staff("Ada").await.unwrap();
    let auth = format!("Bearer {}", staff.secret.as_str());
    let r = s
        .send(
            reqwest::Method::POST,
            &format!("/admin/v1/escrows/{id}/resolve"),
            None,
            Some(
                &json!({"resolution": "REFUND", "resolution_note": "carrier lost the parcel"})
                    .to_string(),
            ),
            &[("Authorization", &auth)],
        )
        .await;
    // 40 USDT is under the two-person threshold: carried out at once.
    r.expect(200);
    settle(&s, &node).await;
    let v = read(&s, &t.live, id).await;
    assert_eq!(v["state"], "REFUNDED", "{v}");
    let tx = v["payout_tx_hash"].as_str().expect("paid on chain");
    assert_eq!(node.contract_ret(tx).await.as_deref(), Some("SUCCESS"));
    assert_eq!(node.usdt_balance(buyer_tron.as_bytes()).await, 40_000_000);
    assert_eq!(node.usdt_balance(seller_tron.as_bytes()).await, 150_000_000);
}

#[tokio::test]
async fn escrow_deposits_switched_off_by_configuration_admit_no_new_escrow() {
    let mut config = test_config();
    config.escrow.deposits_enabled = false;
    let s = start_with(config).await;
    let t = s.tenant("Acme", "0").await;
    s.provision(&t.live, BUYER).await;
    s.provision(&t.live, SELLER).await;
    let before = s.commits();
    let r = s
        .post(&t.live, "/v1/escrows", &create_body("10", "order-1"))
        .await;
    r.expect_err(503, "ESCROW_UNAVAILABLE");
    assert!(r.text().contains("disabled"), "{}", r.text());
    assert_eq!(s.commits(), before, "nothing written");
    // The variable operators set.
    let env = |name: &str| (name == "STABLECOIN_ESCROW_DEPOSITS_ENABLED").then(|| "false".into());
    let loaded = stablecoin_server::Config::load(None, env).expect("loads");
    assert!(!loaded.escrow.deposits_enabled);
    let default = stablecoin_server::Config::load(None, |_| None).expect("loads");
    assert!(default.escrow.deposits_enabled, "on by default");
}
