//! A stray deposit on a real EVM chain (issue #48 item 3): Anvil (chain id 137) with its
//! deployed ERC-4337 contracts. A real USDC transfer to a test checkout session's
//! address (the sandbox key branch) is found by the scanner, recorded as a stray
//! deposit (never credited), and returned by staff on chain: a sponsored operation
//! signed by the session address's own key, mined.
//!
//! Without an anvil binary the test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL`
//! is set.

use crate::common::{self, build_shifted, serve, test_config};
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::KeyPurpose;
use stablecoin_rails::evm::testkit::{World, anvil_or_skip, shared_anvil};
use stablecoin_rails::evm::{EvmAddress, JsonRpc};
use stablecoin_server::config::Secret;
use std::sync::Arc;
use std::time::Duration;

const SEED: u8 = 0x6e;
const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";

async fn admin(s: &common::Server, method: Method, path: &str, body: Option<&str>) -> Value {
    let auth = format!("Bearer {ADMIN_TOKEN}");
    let r = s
        .send(method, path, None, body, &[("Authorization", &auth)])
        .await;
    r.expect(200);
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_deposit_to_a_test_session_on_anvil_is_recorded_and_returned_on_chain() {
    if !anvil_or_skip() {
        return;
    }
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer, |_| {}).await;
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.admin.token = Some(Secret::new(ADMIN_TOKEN));
    config.rails.evm_chains = vec![137];
    let mut chain = common::production::evm_chain(&w, &url);
    chain.confirmations = 3;
    // Scan from the chain's current head: the shared Anvil carries other tests' blocks.
    chain.scan_start_block = w.node.eth().block_number().await.unwrap();
    config.rails.evm.insert("137".into(), chain);
    let (app, clock) = build_shifted(config).await;
    let s = serve(app).await;
    let t = s.tenant("Anvil Shop", "0").await;

    // A test session's address is the sandbox branch's, on the real rail too.
    let r = s
        .post(
            &t.business_test,
            "/api/v1/checkout/sessions",
            &json!({"amount": "5", "currency": "USDC", "networks": ["polygon"],
                "expires_in_secs": 600, "reference": "sandbox-anvil"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let j = r.json();
    let id = j["session_id"].as_str().unwrap().to_string();
    let addr: EvmAddress = j["payment_options"][0]["address"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        addr,
        w.account(&KeyPurpose::CheckoutSession(format!("test/{id}")))
            .await
    );

    // Real money sent to it anyway: found and recorded at the confirmation depth.
    let tx = w.mint(w.usdc, &addr, 5_000_000).await;
    for _ in 0..5 {
        w.node.mine(1).await;
        let r = s.app.state().checkout.tick().await;
        assert!(r.errors.is_empty(), "{r:?}");
    }
    let list = admin(&s, Method::GET, "/admin/v1/stray-deposits", None).await;
    assert_eq!(list["total"], 1, "{list}");
    let sd = &list["stray_deposits"][0];
    assert_eq!(sd["status"], "held");
    assert_eq!(sd["origin_id"], id.as_str());
    assert_eq!(sd["owed"], "5.000000");
    assert_eq!(
        sd["tx_hash"].as_str().unwrap().to_lowercase(),
        tx.to_lowercase()
    );
    let read = s
        .get(&t.business_test, &format!("/api/v1/checkout/sessions/{id}"))
        .await
        .json();
    assert_eq!(
        read["amount_received"], "0.000000",
        "never credited: {read}"
    );

    // Returned by staff: the sender of a mint is the zero address, so staff name one.
    let dest: EvmAddress = format!("0x{}", "5e".repeat(20)).parse().unwrap();
    let path = format!(
        "/admin/v1/stray-deposits/{}/return",
        sd["id"].as_str().unwrap()
    );
    let v = admin(
        &s,
        Method::POST,
        &path,
        Some(&json!({"reason": "payer used the sandbox page", "to": dest.to_string()}).to_string()),
    )
    .await;
    assert_eq!(v["status"], "returning", "{v}");
    let mut returned = Value::Null;
    for _ in 0..200 {
        s.app.engine().tick().await;
        w.node.mine(1).await;
        clock.advance_ms(3_000);
        let l = admin(
            &s,
            Method::GET,
            "/admin/v1/stray-deposits?status=returned",
            None,
        )
        .await;
        if l["total"] == 1 {
            returned = l["stray_deposits"][0].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(returned["status"], "returned", "never returned");
    assert_eq!(returned["owed"], "0.000000");
    assert_eq!(w.usdc_of(&dest).await, 5_000_000, "at the destination");
    assert_eq!(w.usdc_of(&addr).await, 0, "gone from the sandbox address");
    let receipt = w
        .node
        .rpc
        .request(
            "eth_getTransactionReceipt",
            json!([returned["return"]["tx_hash"].as_str().unwrap()]),
        )
        .await
        .unwrap();
    assert_eq!(receipt["status"], "0x1", "{receipt}");
}
