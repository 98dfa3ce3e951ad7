//! The chain reconciliation job of a running server (`[reconciliation]`), over real
//! HTTP on loopback: in balance while money moves through the API; money moved on chain
//! behind the service's back shows in readiness, in `/metrics` and in the staff report
//! with the account, the address and the amount.

use crate::common;

use reqwest::Method;
use serde_json::Value;
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::RailId;
use std::time::Duration;

const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";

/// The reconciliation summary of `/health/ready` (a detail: with the metrics token).
async fn readiness(s: &common::Server) -> Value {
    let r = s.ready_details().await;
    r.expect(200);
    r.json()["reconciliation"].clone()
}

/// `GET /admin/v1/reconciliation` with the admin token: 200.
async fn staff_report(s: &common::Server) -> common::Resp {
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
    r
}

/// Waits (up to 10 s) for readiness to report `status` after `after` (a pass that
/// finished before it does not count).
async fn wait_for(s: &common::Server, status: &str, after: Option<&str>) -> Value {
    for _ in 0..200 {
        let r = readiness(s).await;
        let newer = after.is_none_or(|t| r["checked_at"].as_str().is_some_and(|c| c > t));
        if r["status"] == status && newer {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "reconciliation never reported {status}: {}",
        readiness(s).await
    );
}

#[tokio::test]
async fn money_moved_behind_the_ledger_is_reported_to_operators_and_staff() {
    let mut config = common::test_config();
    config.run_workers = true;
    config.reconciliation.interval_ms = 100;
    config.admin.token = Some(stablecoin_server::config::Secret::new(ADMIN_TOKEN));
    config.metrics_token = Some(stablecoin_server::config::Secret::new(
        common::METRICS_TOKEN,
    ));
    let s = common::start_with(config).await;
    let t = s.tenant("Acme", "100").await;
    let p = s.provision(&t.live, "+2250700000001").await;
    s.fund_settled(&t.live, "+2250700000001", "10").await;
    let clean = wait_for(&s, "IN_BALANCE", None).await;
    assert!(clean["accounts_checked"].as_u64().unwrap() >= 2, "{clean}");
    assert_eq!(clean["drifted_accounts"], 0);

    // A leaked key: 2.5 USDC leave the wallet's address on chain, unknown to the ledger.
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap().clone();
    let address = stablecoin_core::ports::ChainAddress(p["address"].as_str().unwrap().into());
    chain
        .external_transfer(
            &address,
            &chain.faucet_address(),
            Token::Usdc,
            common::m("2.5"),
        )
        .unwrap();
    chain.mine(1);
    let since = clean["checked_at"].as_str().unwrap().to_string();
    let drift = wait_for(&s, "DRIFT", Some(&since)).await;
    assert_eq!(drift["drifted_accounts"], 1, "{drift}");

    // The staff report names the account, the address and the amounts.
    let r = staff_report(&s).await;
    let report = r.json();
    assert_eq!(report["summary"]["status"], "DRIFT");
    let line = &report["drifts"][0];
    assert_eq!(
        line["account"],
        format!("wallet:{}:USDC", p["wallet_id"].as_str().unwrap())
    );
    assert_eq!(line["rail"], "polygon");
    assert_eq!(line["address"], p["address"]);
    assert_eq!(line["direction"], "SHORTFALL");
    assert_eq!(line["drift_micros"], "-2500000");
    assert_eq!(line["ledger_posted_micros"], "10000000");
    assert_eq!(line["chain_micros"], "7500000");
    // Staff only: an API key is not the admin token.
    s.get(&t.live, "/admin/v1/reconciliation")
        .await
        .expect_err(403, "KEY_KIND_NOT_ALLOWED");

    let metrics = s.metrics_with_token().await;
    metrics.expect(200);
    let text = metrics.text();
    assert!(
        text.contains(
            "stablecoin_ledger_drift_micros{rail=\"polygon\",token=\"USDC\",direction=\"SHORTFALL\"} 2500000"
        ),
        "{text}"
    );
    assert!(
        text.contains("stablecoin_ledger_drift_accounts 1"),
        "{text}"
    );
}

#[tokio::test]
async fn without_workers_readiness_says_disabled_and_staff_can_still_ask() {
    let mut config = common::test_config();
    config.admin.token = Some(stablecoin_server::config::Secret::new(ADMIN_TOKEN));
    config.metrics_token = Some(stablecoin_server::config::Secret::new(
        common::METRICS_TOKEN,
    ));
    let s = common::start_with(config).await;
    assert_eq!(readiness(&s).await["status"], "DISABLED");
    let r = staff_report(&s).await;
    assert_eq!(r.json()["summary"]["status"], "IN_BALANCE", "{}", r.text());
    assert!(r.json()["drifts"].as_array().unwrap().is_empty());
}
