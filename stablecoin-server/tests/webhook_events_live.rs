//! `transfer.received` at the real-chain boundary: the server on Anvil (chain id 137,
//! EntryPoint v0.8, the factory, the verifying paymaster and a 6-decimal USDC), a
//! receiver over loopback HTTP per tenant. A P2P transfer and an outside ERC-20 receipt
//! reach every member tenant of the receiving wallet, each with the spec's field set and
//! the real transaction hash (spec 6.1 rule 3); a transfer to an unaffiliated phone
//! reaches none. `webhook_events_http.rs` covers the other events on the simulated chain.
//!
//! Without an anvil binary the test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL`
//! is set.

use crate::common;
use crate::common::webhook_receiver::{Received, recording_receiver};
use crate::common::{serve, test_config};
use serde_json::{Value, json};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::KeyPurpose;
use stablecoin_rails::evm::JsonRpc;
use stablecoin_rails::evm::testkit::{World, anvil_or_skip, shared_anvil};
use stablecoin_server::config::Secret;
use std::sync::Arc;

const SEED: u8 = 0x5f;
const A: &str = "+2250700000801";
const B: &str = "+2250700000802";
/// Never provisioned.
const C: &str = "+2250700000803";

fn received(got: &Received) -> Vec<Value> {
    got.lock()
        .unwrap()
        .iter()
        .map(|(_, b)| serde_json::from_slice::<Value>(b).unwrap())
        .filter(|v| v["event"] == "transfer.received")
        .collect()
}

#[track_caller]
fn assert_spec_fields(v: &Value) {
    let mut got: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
    got.sort_unstable();
    assert_eq!(
        got,
        [
            "amount_usdc",
            "event",
            "recipient_wallet",
            "settled_at",
            "token",
            "transfer_id",
            "tx_hash"
        ],
        "{v}"
    );
}

/// The transaction `hash` is mined on the chain, with status 1.
async fn mined(w: &World, hash: &str) {
    let receipt = w
        .node
        .rpc
        .request("eth_getTransactionReceipt", json!([hash]))
        .await
        .unwrap();
    assert_eq!(receipt["status"], "0x1", "{hash}: {receipt}");
}

#[tokio::test]
async fn transfer_received_reaches_every_member_on_a_real_evm_chain() {
    if !anvil_or_skip() {
        return;
    }
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer.clone(), |_| {}).await;
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.rails.evm_chains = vec![137];
    config
        .rails
        .evm
        .insert("137".into(), common::production::evm_chain(&w, &url));
    config.webhooks_allow_loopback_http = true;
    let app = stablecoin_server::App::build(config).await.unwrap();
    let s = serve(app).await;
    let acme = s.tenant("Acme", "100").await;
    let beta = s.tenant("Beta", "0").await;
    let mut receivers = Vec::new();
    for t in [&acme, &beta] {
        let (hook, got) = recording_receiver().await;
        s.post(
            &t.live,
            "/v1/webhook-endpoints",
            &json!({"url": hook, "events": ["transfer.received"]}).to_string(),
        )
        .await
        .expect(201);
        receivers.push(got);
    }
    let treasury = w.account(&KeyPurpose::Treasury).await;
    w.mint(w.usdc, &treasury, 100_000_000).await;

    // A is Acme's; B is Beta's, and Acme joins it with the customer's code.
    s.provision(&acme.live, A).await;
    let pb = s.provision(&beta.live, B).await;
    let addr_b = pb["address"].as_str().unwrap().to_string();
    s.post(
        &acme.live,
        "/v1/users/link/request",
        &json!({"phone_number": B}).to_string(),
    )
    .await
    .expect(200);
    let code = s
        .app
        .state()
        .notifier
        .last_code_to(&Phone::parse(B).unwrap())
        .unwrap();
    s.post(
        &acme.live,
        "/v1/users/link/confirm",
        &json!({"phone_number": B, "code": code}).to_string(),
    )
    .await
    .expect(200);
    let f = s.fund_settled(&acme.live, A, "20").await;
    assert_eq!(f["status"], "SETTLED", "{f}");

    // P2P A -> B, mined on Anvil: both members of B are told, with the bundle's hash.
    let r = s.send_usdc(&acme.live, A, B, "10").await;
    let tr = r["id"].as_str().unwrap().to_string();
    s.settle().await;
    let read = s
        .get(&acme.live, &format!("/v1/transfers/{tr}"))
        .await
        .json();
    assert_eq!(read["status"], "SETTLED", "{read}");
    let p2p_hash = read["tx_hash"].as_str().unwrap().to_string();
    mined(&w, &p2p_hash).await;

    // An outside ERC-20 receipt into B, found by the scanner.
    let mint_hash = w.mint(w.usdc, &addr_b.parse().unwrap(), 3_000_000).await;
    s.settle().await;

    // A transfer to a phone no tenant serves: nobody gets transfer.received for it.
    let to_c = s.send_usdc(&acme.live, A, C, "2").await;
    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();

    for got in &receivers {
        let rx = received(got);
        assert_eq!(rx.len(), 2, "P2P and deposit, nothing for C: {rx:?}");
        for v in &rx {
            assert_spec_fields(v);
            assert_eq!(
                v["recipient_wallet"].as_str().unwrap().to_lowercase(),
                addr_b.to_lowercase()
            );
            assert_ne!(v["transfer_id"], to_c["id"]);
        }
        let p2p = rx.iter().find(|v| v["transfer_id"] == tr.as_str()).unwrap();
        assert_eq!(p2p["tx_hash"], p2p_hash.as_str());
        assert_eq!(p2p["amount_usdc"], r["recipient_amount"]);
        let dep = rx.iter().find(|v| v["transfer_id"] != tr.as_str()).unwrap();
        assert_eq!(
            dep["tx_hash"].as_str().unwrap().to_lowercase(),
            mint_hash.to_lowercase()
        );
        assert!(
            dep["transfer_id"]
                .as_str()
                .unwrap()
                .starts_with("dep_polygon_"),
            "{dep}"
        );
        assert_eq!(dep["amount_usdc"], "3.000000");
        assert_eq!(dep["token"], "USDC");
    }
}
