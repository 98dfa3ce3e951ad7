//! Sanctions screening of the outbound paths that sends and withdrawals did not cover
//! (issue #51) over real HTTP on loopback: a swap screens where the wallet's tokens go
//! (the venue: here the treasury), and escrow's automatic release screens the seller's
//! wallet, spending its one attempt on a hit so a listed seller's deal waits for a
//! person instead of being retried and audited every round.
//!
//! The screen is the in-memory adapter with the tested address added to its list,
//! installed on the server's kernel (as `[screening]` would install an OFAC list).

use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::kernel::{ScreeningFailMode, ScreeningGate};
use stablecoin_core::memory::MemoryScreening;
use stablecoin_core::ports::{ChainAddress, KeyPurpose, RailId};
use std::sync::Arc;

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
const A: &str = "+2250700000201";
const BUYER: &str = "+2250700000202";
const SELLER: &str = "+2250700000203";

fn config() -> stablecoin_server::Config {
    let mut c = test_config();
    c.admin.token = Some(stablecoin_server::config::Secret::new(ADMIN));
    c
}

/// Installs a closed gate over an in-memory screen that lists `listed`.
fn screen_listing(s: &Server, listed: &str) {
    let screen = Arc::new(MemoryScreening::new());
    screen.list(listed);
    s.app.engine().kernel().set_screening(Some(ScreeningGate {
        screen,
        fail_mode: ScreeningFailMode::Closed,
    }));
}

async fn screening_audit(s: &Server) -> Vec<Value> {
    let auth = format!("Bearer {ADMIN}");
    let r = s
        .send(
            Method::GET,
            "/admin/v1/audit",
            None,
            None,
            &[("Authorization", &auth)],
        )
        .await;
    r.expect(200);
    r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"].as_str().unwrap_or("").starts_with("screening."))
        .cloned()
        .collect()
}

async fn usdc(s: &Server, key: &str, phone: &str) -> String {
    let r = s
        .get(
            key,
            &format!(
                "/v1/users/balance?phone_number={}",
                phone.replace('+', "%2B")
            ),
        )
        .await;
    r.expect(200);
    r.json()["balance_usdc"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_swap_whose_venue_is_listed_is_refused_held_nothing_and_is_audited() {
    let s = start_with(config()).await;
    let t = s.tenant("Acme", "1000").await;
    s.provision(&t.live, A).await;
    s.fund_settled(&t.live, A, "100").await;
    let treasury = s
        .app
        .engine()
        .rail(RailId::Evm(137))
        .unwrap()
        .address_for(&KeyPurpose::Treasury)
        .await
        .unwrap();
    screen_listing(&s, &treasury.0);
    let body = json!({"phone_number": A, "token_in": "USDC", "token_out": "USDT",
        "amount_in": "40", "max_slippage_bps": 50})
    .to_string();
    let r = s.post(&t.live, "/v1/swaps", &body).await;
    r.expect_err(403, "SCREENING_HIT");
    let swaps = s.get(&t.live, "/v1/swaps").await.json();
    assert_eq!(
        swaps["swaps"].as_array().unwrap().len(),
        0,
        "no swap: {swaps}"
    );
    assert_eq!(usdc(&s, &t.live, A).await, "100.000000");
    let audit = screening_audit(&s).await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["action"], "screening.hit");
    assert_eq!(audit[0]["target"], format!("polygon:{}", treasury.0));
    assert!(
        audit[0]["note"].as_str().unwrap().contains("swap sw_"),
        "{audit:?}"
    );
    // Another screen that lists nothing: the same swap is accepted.
    screen_listing(&s, "0x0000000000000000000000000000000000000001");
    s.post(&t.live, "/v1/swaps", &body).await.expect(202);
    s.settle().await;
    assert_eq!(usdc(&s, &t.live, A).await, "60.000000", "swapped");
}

#[tokio::test]
async fn the_automatic_release_to_a_listed_seller_is_refused_once_and_the_deal_waits() {
    let (s, clock) = start_shifted(config()).await;
    let t = s.tenant("Acme", "0").await;
    s.provision(&t.live, BUYER).await;
    s.provision(&t.live, SELLER).await;
    let r = s
        .post(
            &t.live,
            "/v1/escrows",
            &json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
                "amount": "25", "reference": "auto-1", "auto_release_after_secs": 3600})
            .to_string(),
        )
        .await;
    r.expect(201);
    let e = r.json();
    let id = e["id"].as_str().unwrap().to_string();
    let seller = e["seller_address"].as_str().unwrap().to_string();
    let tron = s.app.sim_rail(RailId::Tron).unwrap();
    tron.mint(
        &ChainAddress(e["escrow_address"].as_str().unwrap().into()),
        Token::Usdt,
        Micros(25_000_000),
    )
    .unwrap();
    s.settle_escrows().await;
    let read = s.get(&t.live, &format!("/v1/escrows/{id}")).await.json();
    assert_eq!(read["state"], "FUNDED", "{read}");

    screen_listing(&s, &seller);
    clock.advance_ms(3_601_000);
    let submits = tron.submit_count();
    // Several rounds: the hit is met, audited and the attempt spent once.
    s.settle_escrows().await;
    s.settle_escrows().await;
    assert_eq!(tron.submit_count(), submits, "nothing paid to the seller");
    let read = s.get(&t.live, &format!("/v1/escrows/{id}")).await.json();
    assert_eq!(read["state"], "FUNDED", "{read}");
    assert_eq!(read["payout_pending"], false, "{read}");
    let audit = screening_audit(&s).await;
    assert_eq!(audit.len(), 1, "audited once, not every round: {audit:?}");
    assert_eq!(audit[0]["action"], "screening.hit");
    assert_eq!(audit[0]["target"], format!("tron:{seller}"));
    assert!(
        audit[0]["note"]
            .as_str()
            .unwrap()
            .contains(&format!("escrow.payout {id}")),
        "{audit:?}"
    );
    // A person decides: the tenant refunds the buyer (whose wallet is clear).
    s.post(&t.live, &format!("/v1/escrows/{id}/refund"), "{}")
        .await
        .expect(202);
}
