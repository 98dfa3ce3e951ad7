//! A credited deposit reorganised out of the chain after its confirmation depth (issue
//! #49), on the server over real HTTP on its own Anvil: the credit is never silently
//! kept, it shows as a SHORTFALL of the wallet's account in readiness, in `/metrics` and
//! in the staff reconciliation report. (Before the depth, a reorganisation means the
//! deposit is never credited at all: `stablecoin-rails`' `evm_reorgs`.)
//!
//! Without an anvil binary the test prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL`
//! is set.

use crate::common;
use crate::common::{serve, test_config};
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_rails::evm::JsonRpc;
use stablecoin_rails::evm::testkit::{Anvil, World, anvil_or_skip};
use stablecoin_server::config::Secret;
use std::sync::Arc;
use std::time::Duration;

const SEED: u8 = 0x6a;
const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";
const A: &str = "+2250700000901";
const CONFIRMATIONS: u64 = 2;

/// Waits for the ledger to credit the wallet account `account` with `micros` (the
/// balance read of the API is the chain's, not the ledger's).
async fn wait_for_credit(s: &common::Server, account: &str, micros: i128) {
    let ledger = s.app.engine().ports().ledger.clone();
    for _ in 0..400 {
        if ledger
            .balance(account)
            .await
            .is_ok_and(|b| b.posted() == micros)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{account} was never credited {micros}");
}

async fn reconciliation(s: &common::Server) -> Value {
    let r = s.ready_details().await;
    r.expect(200);
    r.json()["reconciliation"].clone()
}

#[tokio::test]
async fn a_deposit_reorganised_away_after_its_depth_is_reported_as_a_shortfall() {
    if !anvil_or_skip() {
        return;
    }
    // Its own node: the reorganisation must not touch other tests' blocks.
    let anvil = Anvil::start(137, true);
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&anvil.url, 137, true, signer, |_| {}).await;
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.rails.evm_chains = vec![137];
    let mut chain = common::production::evm_chain(&w, &anvil.url);
    chain.confirmations = CONFIRMATIONS;
    config.rails.evm.insert("137".into(), chain);
    config.run_workers = true;
    config.reconciliation.interval_ms = 100;
    config.admin.token = Some(Secret::new(ADMIN_TOKEN));
    config.metrics_token = Some(Secret::new(common::METRICS_TOKEN));
    let app = stablecoin_server::App::build(config).await.unwrap();
    let s = serve(app).await;
    let t = s.tenant("Acme", "0").await;
    let p = s.provision(&t.live, A).await;
    let address = p["address"].as_str().unwrap().to_string();

    // An outside payer sends 3 USDC; it is credited once two blocks deep.
    w.mint(w.usdc, &address.parse().unwrap(), 3_000_000).await;
    w.node.mine(CONFIRMATIONS + 1).await;
    let account = format!("wallet:{}:USDC", p["wallet_id"].as_str().unwrap());
    wait_for_credit(&s, &account, 3_000_000).await;

    // A reorganisation deeper than the confirmations takes the payment out of the chain
    // (replaced by empty blocks; the node's pool emptied so it is not mined again).
    w.node
        .rpc
        .request("anvil_reorg", json!([CONFIRMATIONS + 2, []]))
        .await
        .expect("anvil_reorg");
    w.node
        .rpc
        .request("anvil_dropAllTransactions", json!([]))
        .await
        .expect("anvil_dropAllTransactions");
    w.node.mine(1).await;
    assert_eq!(
        w.usdc_of(&address.parse().unwrap()).await,
        0,
        "gone from the chain"
    );

    // Not silently kept: reconciliation reports the wallet short of what the ledger owes.
    let mut drift = Value::Null;
    for _ in 0..400 {
        drift = reconciliation(&s).await;
        if drift["status"] == "DRIFT" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(drift["status"], "DRIFT", "{drift}");
    assert_eq!(drift["drifted_accounts"], 1, "{drift}");
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let r = s
        .send(
            Method::GET,
            "/admin/v1/reconciliation",
            None,
            None,
            &[("Authorization", bearer.as_str())],
        )
        .await;
    r.expect(200);
    let line = &r.json()["drifts"][0];
    assert_eq!(line["account"], account.as_str(), "{line}");
    assert_eq!(line["direction"], "SHORTFALL", "{line}");
    assert_eq!(line["drift_micros"], "-3000000");
    assert_eq!(
        line["address"].as_str().unwrap().to_lowercase(),
        address.to_lowercase()
    );
    let metrics = s.metrics_with_token().await;
    metrics.expect(200);
    assert!(
        metrics.text().contains(
            "stablecoin_ledger_drift_micros{rail=\"polygon\",token=\"USDC\",direction=\"SHORTFALL\"} 3000000"
        ),
        "{}",
        metrics.text()
    );
}
