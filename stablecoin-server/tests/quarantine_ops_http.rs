//! What operators see of inbound quarantine (issue #51) over real HTTP on loopback: the
//! `/metrics` gauges (held count and amount per rail and token, every status), and the
//! chain reconciliation, which counts tokens held in quarantine at a wallet's own address
//! as explained (no EXCESS) and still reports tokens nothing explains.

use crate::common::*;
use crate::quarantine_http::{
    A, ADMIN, LISTED, config, credited, deposit, quarantined, run_returns, scan, staff,
};
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::{ChainAddress, Rail, RailId};
use stablecoin_server::config::{FailModeSetting, Secret};

/// The value of the `/metrics` line that starts with `series` (labels included).
async fn metric(s: &Server, series: &str) -> Option<String> {
    let r = s.metrics_with_token().await;
    r.expect(200);
    let want = format!("{series} ");
    r.text()
        .lines()
        .find(|l| l.starts_with(&want))
        .map(|l| l[want.len()..].to_string())
}

async fn status_count(s: &Server, status: &str) -> Option<String> {
    metric(
        s,
        &format!("stablecoin_quarantined_deposits{{status=\"{status}\"}}"),
    )
    .await
}

const HELD_MICROS: &str = "stablecoin_quarantine_held_micros{rail=\"polygon\",token=\"USDC\"}";
const HELD_COUNT: &str = "stablecoin_quarantine_held_deposits{rail=\"polygon\",token=\"USDC\"}";

/// A fresh reconciliation pass, then the staff report over HTTP.
async fn reconcile(s: &Server) -> Value {
    s.app.engine().reconcile_chains().await;
    let r = staff(s, ADMIN, Method::GET, "/admin/v1/reconciliation", None).await;
    r.expect(200);
    r.json()
}

#[tokio::test]
async fn quarantine_shows_in_metrics_and_reconciles_as_held_not_excess() {
    let mut c = config(FailModeSetting::Closed);
    c.metrics_token = Some(Secret::new(METRICS_TOKEN));
    let (s, clock) = start_shifted(c).await;
    let t = s.tenant("Acme", "0").await;
    let p = s.provision(&t.live, A).await;
    let addr = ChainAddress(p["address"].as_str().unwrap().into());
    let wid = p["wallet_id"].as_str().unwrap().to_string();
    for status in [
        "held",
        "proposed",
        "releasing",
        "released",
        "returning",
        "returned",
    ] {
        assert_eq!(
            status_count(&s, status).await.as_deref(),
            Some("0"),
            "{status}"
        );
    }
    assert_eq!(metric(&s, HELD_MICROS).await, None, "nothing held yet");

    deposit(&s, "0x3333333333333333333333333333333333330001", &addr, "5").await;
    deposit(&s, LISTED, &addr, "20").await;
    assert_eq!(credited(&s, &wid).await, "5.000000");
    let id = quarantined(&s, "").await["quarantined_deposits"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Held: counted and summed per rail and token.
    assert_eq!(status_count(&s, "held").await.as_deref(), Some("1"));
    assert_eq!(metric(&s, HELD_COUNT).await.as_deref(), Some("1"));
    assert_eq!(metric(&s, HELD_MICROS).await.as_deref(), Some("20000000"));

    // The 20 quarantined tokens at the wallet's address are explained: in balance.
    let report = reconcile(&s).await;
    assert_eq!(report["summary"]["status"], "IN_BALANCE", "{report}");
    assert_eq!(report["drifts"], json!([]), "{report}");

    // Tokens nothing explains (a deposit the scanner has not recorded yet) are still an
    // EXCESS, and the line says what quarantine explained.
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    polygon.mint(&addr, Token::Usdc, m("2")).unwrap();
    polygon.mine(1);
    let report = reconcile(&s).await;
    assert_eq!(report["summary"]["status"], "DRIFT", "{report}");
    let line = &report["drifts"][0];
    assert_eq!(line["account"], format!("wallet:{wid}:USDC"));
    assert_eq!(line["direction"], "EXCESS");
    assert_eq!(line["drift_micros"], "2000000");
    assert_eq!(line["ledger_posted_micros"], "5000000");
    assert_eq!(line["quarantined_micros"], "20000000");
    assert_eq!(line["chain_micros"], "27000000");
    scan(&s).await;
    assert_eq!(credited(&s, &wid).await, "7.000000");
    assert_eq!(reconcile(&s).await["summary"]["status"], "IN_BALANCE");

    // Released (decided, not yet credited): still explained; then credited: in balance,
    // nothing held, one released.
    let r = staff(
        &s,
        ADMIN,
        Method::POST,
        &format!("/admin/v1/quarantined-deposits/{id}/release"),
        Some(r#"{"reason":"cleared"}"#),
    )
    .await;
    r.expect(200);
    assert_eq!(r.json()["status"], "releasing");
    assert_eq!(status_count(&s, "releasing").await.as_deref(), Some("1"));
    assert_eq!(metric(&s, HELD_MICROS).await.as_deref(), Some("20000000"));
    assert_eq!(reconcile(&s).await["summary"]["status"], "IN_BALANCE");
    scan(&s).await;
    assert_eq!(credited(&s, &wid).await, "27.000000");
    assert_eq!(status_count(&s, "released").await.as_deref(), Some("1"));
    assert_eq!(status_count(&s, "held").await.as_deref(), Some("0"));
    assert_eq!(metric(&s, HELD_MICROS).await, None, "nothing held");
    assert_eq!(reconcile(&s).await["summary"]["status"], "IN_BALANCE");

    // Another, returned where compliance directs: in balance while held, returning and
    // returned.
    deposit(&s, LISTED, &addr, "3").await;
    assert_eq!(metric(&s, HELD_MICROS).await.as_deref(), Some("3000000"));
    assert_eq!(reconcile(&s).await["summary"]["status"], "IN_BALANCE");
    let id2 = quarantined(&s, "?status=held").await["quarantined_deposits"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let dest = format!("0x{}", "4e".repeat(20));
    staff(
        &s,
        ADMIN,
        Method::POST,
        &format!("/admin/v1/quarantined-deposits/{id2}/return"),
        Some(&json!({"reason": "to the blocked-funds account", "to": dest}).to_string()),
    )
    .await
    .expect(200);
    assert_eq!(status_count(&s, "returning").await.as_deref(), Some("1"));
    assert_eq!(reconcile(&s).await["summary"]["status"], "IN_BALANCE");
    // Sent and landed on chain, not yet seen confirmed: the quarantine account still
    // holds it while the address no longer does. Leaving, not a SHORTFALL.
    let (_, errors) = s.app.engine().advance_stray_returns().await;
    assert!(errors.is_empty(), "{errors:?}");
    polygon.mine(20);
    assert_eq!(polygon.balance(&addr, Token::Usdc).await.unwrap(), m("27"));
    let v = staff(
        &s,
        ADMIN,
        Method::GET,
        &format!("/admin/v1/quarantined-deposits/{id2}"),
        None,
    )
    .await
    .json();
    assert_eq!(v["status"], "returning", "{v}");
    assert_eq!(v["owed"], "3.000000", "{v}");
    let report = reconcile(&s).await;
    assert_eq!(report["summary"]["status"], "IN_BALANCE", "{report}");
    run_returns(&s, &clock).await;
    assert_eq!(status_count(&s, "returned").await.as_deref(), Some("1"));
    assert_eq!(metric(&s, HELD_MICROS).await, None);
    assert_eq!(
        polygon
            .balance(&ChainAddress(dest), Token::Usdc)
            .await
            .unwrap(),
        m("3")
    );
    let report = reconcile(&s).await;
    assert_eq!(report["summary"]["status"], "IN_BALANCE", "{report}");
}
