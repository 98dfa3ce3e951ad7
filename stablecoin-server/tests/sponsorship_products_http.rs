//! Sponsorship budgets meter the products that settle their own payments, over real HTTP
//! on loopback: an escrow payout on the simulated TRON chain and a checkout sweep on the
//! simulated Polygon each add what their rail reported they cost (`SimCosts`) to the
//! tenant's budget on that rail, once, in the commit that records them (issue #51 item 4).

use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{ChainAddress, RailId};
use stablecoin_server::config::Secret;

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
const BUYER: &str = "+2250700000401";
const SELLER: &str = "+2250700000402";

/// A server whose clock the test moves (sweeps poll their payment 2 s apart).
async fn start_with_admin() -> (
    Server,
    std::sync::Arc<stablecoin_core::memory::ShiftedClock>,
) {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    start_shifted(c).await
}

/// Staff give `tenant` a large daily budget on `rail` (so it is metered, never refused).
async fn budget(s: &Server, tenant: &str, rail: &str) {
    let path = format!("/admin/v1/tenants/{tenant}/sponsorship-budgets");
    let body = json!({"rail": rail, "daily": {"native": "1000000000000000000000"}});
    let auth = format!("Bearer {ADMIN}");
    let r = s
        .send(
            reqwest::Method::POST,
            &path,
            None,
            Some(&body.to_string()),
            &[("Authorization", &auth)],
        )
        .await;
    r.expect(200);
}

/// The tenant's budget line for `rail`.
async fn line(s: &Server, key: &str, rail: &str) -> Value {
    let r = s.get(key, "/v1/sponsorship-budgets").await;
    r.expect(200);
    r.json()["sponsorship_budgets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["rail"] == rail)
        .cloned()
        .unwrap_or_else(|| panic!("no {rail} budget: {}", r.text()))
}

#[tokio::test]
async fn an_escrow_payout_is_metered_in_the_tenants_tron_budget_once() {
    let (s, _clock) = start_with_admin().await;
    let t = s.tenant("Escrow Budget", "0").await;
    s.provision(&t.live, BUYER).await;
    s.provision(&t.live, SELLER).await;
    budget(&s, &t.id.0, "tron").await;

    let r = s
        .post(
            &t.live,
            "/v1/escrows",
            &json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
                "amount": "40", "reference": "budget-deal"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let deal = r.json();
    let id = deal["id"].as_str().unwrap().to_string();
    let tron = s.app.sim_rail(RailId::Tron).expect("sim TRON");
    tron.mint(
        &ChainAddress(deal["escrow_address"].as_str().unwrap().into()),
        Token::Usdt,
        Micros(40_000_000),
    )
    .unwrap();
    s.settle_escrows().await;
    // Funding came from outside: the service paid nothing yet.
    assert_eq!(line(&s, &t.live, "tron").await["payments_metered"], 0);

    s.post(
        &t.live,
        &format!("/v1/escrows/{id}/release"),
        r#"{"on_behalf_of":"BUYER"}"#,
    )
    .await
    .expect(202);
    s.settle_escrows().await;
    let v = s.get(&t.live, &format!("/v1/escrows/{id}")).await.json();
    assert_eq!(v["state"], "RELEASED", "{v}");
    // More rounds poll nothing new: the payout was metered once.
    s.settle_escrows().await;

    let per_payout = tron.costs().of(false);
    let b = line(&s, &t.live, "tron").await;
    assert_eq!(b["payments_metered"], 1, "{b}");
    assert_eq!(b["spent_today"]["native"], per_payout.native.to_string());
    assert_eq!(b["spent_today"]["energy"], per_payout.energy.to_string());
}

#[tokio::test]
async fn a_checkout_sweep_is_metered_in_the_tenants_polygon_budget() {
    let (s, clock) = start_with_admin().await;
    let t = s.tenant("Checkout Budget", "0").await;
    budget(&s, &t.id.0, "polygon").await;

    let r = s
        .post(
            &t.business_live,
            "/api/v1/checkout/sessions",
            &json!({"amount": "25", "currency": "USDC", "reference": "budget-session",
                "networks": ["polygon"], "expires_in_secs": 3600})
            .to_string(),
        )
        .await;
    r.expect(201);
    let j = r.json();
    let session = j["session_id"].as_str().unwrap().to_string();
    let address = ChainAddress(j["payment_options"][0]["address"].as_str().unwrap().into());
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap();
    chain
        .mint(&address, Token::Usdc, Micros(25_000_000))
        .unwrap();
    // Deposit past the depth, then the sweep to the treasury submitted and confirmed.
    let mut swept = 0;
    for _ in 0..40 {
        chain.mine(2);
        clock.advance_ms(3_000);
        let r = s.app.state().checkout.tick().await;
        assert!(r.errors.is_empty(), "{r:?}");
        swept += r.swept;
        if swept > 0 {
            break;
        }
    }
    assert!(swept > 0, "the session's sweep settles");
    let v = s
        .get(
            &t.business_live,
            &format!("/api/v1/checkout/sessions/{session}"),
        )
        .await
        .json();
    assert_eq!(v["status"], "paid", "{v}");

    let per_sweep = chain.costs().of(false).native;
    let b = line(&s, &t.live, "polygon").await;
    let metered = b["payments_metered"].as_u64().unwrap();
    assert!(metered >= 1, "the sweep to the treasury is metered: {b}");
    assert_eq!(
        b["spent_today"]["native"],
        (per_sweep * u128::from(metered)).to_string()
    );
}
