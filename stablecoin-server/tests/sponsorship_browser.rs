//! The dashboard's sponsorship-budget table (issue #51 item 4) in headless Chromium
//! against a real server on loopback: staff set a daily budget, a send settles on the
//! simulated chain, and the tenant's overview shows the rail's spend against the cap,
//! the same figures `GET /v1/sponsorship-budgets` answers. Skips without Chromium
//! unless REQUIRE_CHROMIUM=1.

use crate::common::browser::Browser;
use crate::common::*;
use serde_json::json;
use stablecoin_server::config::Secret;

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
const A: &str = "+2250700000311";
const B: &str = "+2250700000312";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_overview_shows_spend_against_the_budget_in_chromium() {
    let Some(mut b) = Browser::launch("sponsorship_browser").await else {
        return;
    };
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    let s = start_with(c).await;
    let base = s.base.clone();
    let acme = s.tenant("Acme", "1000").await;
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    s.fund_settled(&acme.live, A, "20").await;
    let rail = s.app.engine().evm_rail().unwrap().id().name();
    let auth = format!("Bearer {ADMIN}");
    let set = s
        .send(
            reqwest::Method::POST,
            &format!("/admin/v1/tenants/{}/sponsorship-budgets", acme.id.0),
            None,
            Some(&json!({"rail": rail, "daily": {"native": "900000000000000"}}).to_string()),
            &[("Authorization", &auth)],
        )
        .await;
    set.expect(200);
    s.send_usdc(&acme.live, A, B, "1").await;
    s.settle().await;
    let api = s.get(&acme.live, "/v1/sponsorship-budgets").await;
    api.expect(200);
    let spent = api.json()["sponsorship_budgets"][0]["spent_today"]["native"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(spent, "0");

    b.navigate(&format!("{base}/dashboard")).await;
    b.fill("#api_key", &acme.live).await;
    b.click_and_load("form button[type=submit]").await;
    let html = b.html().await;
    assert!(html.contains("Sponsorship budgets"), "{html}");
    let row = b
        .eval(
            "[...document.querySelectorAll('table')]\
             .filter(t => t.caption && t.caption.textContent.startsWith('Sponsored cost'))\
             .map(t => [...t.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent)))[0]",
        )
        .await;
    assert_eq!(
        row,
        json!([[
            rail,
            "native",
            format!("{spent} / 900000000000000"),
            format!("{spent} (no cap)"),
            "1"
        ]]),
        "{html}"
    );
    b.shot("sponsorship").await;
}
