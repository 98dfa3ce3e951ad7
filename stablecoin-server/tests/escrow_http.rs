//! `/v1/escrows` over real HTTP on loopback: every route's success, auth failure,
//! another tenant's escrow (404), sandbox behaviour, idempotent replay, and bad input
//! that writes nothing. Deposits are made on the simulated TRON chain; the escrow
//! workers are driven by the test.

use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::{ChainAddress, RailId};

const BUYER: &str = "+2250700000001";
const SELLER: &str = "+2250700000002";

macro_rules! writes_nothing {
    ($s:expr, $e:expr) => {{
        let before = $s.commits();
        let r = $e;
        assert_eq!(
            $s.commits(),
            before,
            "bad input must write nothing: {}",
            r.text()
        );
        r
    }};
}

fn create_body(amount: &str, reference: &str) -> String {
    json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
        "amount": amount, "reference": reference})
    .to_string()
}

/// Pays `amount` base units of USDT to the escrow address, mines past the confirmation
/// depth and runs the escrow workers until idle.
async fn pay_and_settle(s: &Server, escrow: &Value, base_units: u64) {
    let tron = s.app.sim_rail(RailId::Tron).expect("sim TRON");
    if base_units > 0 {
        tron.mint(
            &ChainAddress(escrow["escrow_address"].as_str().unwrap().into()),
            Token::Usdt,
            stablecoin_core::domain::money::Micros(base_units),
        )
        .unwrap();
    }
    settle(s).await;
}

async fn settle(s: &Server) {
    s.settle_escrows().await;
}

async fn setup() -> (Server, Tenant, Tenant) {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, BUYER).await;
    s.provision(&acme.live, SELLER).await;
    (s, acme, beta)
}

#[tokio::test]
async fn create_fund_release_read_and_history() {
    let (s, acme, beta) = setup().await;
    let r = s
        .post(&acme.live, "/v1/escrows", &create_body("150", "order-1"))
        .await;
    r.expect(201);
    let e = r.json();
    let id = e["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("esc_"));
    assert_eq!(r.header("location").unwrap(), format!("/v1/escrows/{id}"));
    assert_eq!(e["state"], "CREATED");
    assert_eq!(e["amount"], "150000000", "responses carry base units");
    assert_eq!(e["token"], "USDT");
    assert_eq!(e["rail"], "tron");
    // The TRON chain here is simulated: never "mainnet" (issue #27).
    assert_eq!(e["network"], "simulated");
    assert_eq!(e["chain_id"], 0);
    assert!(e["escrow_address"].as_str().unwrap().starts_with('T'));

    // Another tenant never sees it; no key is 401.
    s.get(&beta.live, &format!("/v1/escrows/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    s.send(Method::GET, &format!("/v1/escrows/{id}"), None, None, &[])
        .await
        .expect_err(401, "MISSING_API_KEY");
    let r = s
        .post(&beta.live, &format!("/v1/escrows/{id}/release"), "{}")
        .await;
    r.expect_err(404, "NOT_FOUND");

    // Release before funding is a state conflict.
    s.post(&acme.live, &format!("/v1/escrows/{id}/release"), "{}")
        .await
        .expect_err(409, "INVALID_STATE");

    pay_and_settle(&s, &e, 150_000_000).await;
    let r = s.get(&acme.live, &format!("/v1/escrows/{id}")).await;
    r.expect(200);
    assert_eq!(r.json()["state"], "FUNDED");
    assert_eq!(r.json()["funded_amount"], "150000000");

    let r = s
        .post(
            &acme.live,
            &format!("/v1/escrows/{id}/release"),
            r#"{"on_behalf_of":"BUYER"}"#,
        )
        .await;
    r.expect(202);
    assert_eq!(r.json()["state"], "FUNDED");
    assert_eq!(r.json()["payout_pending"], true);
    // A repeated release while the payout is in flight, and a dispute after it: 409.
    s.post(&acme.live, &format!("/v1/escrows/{id}/release"), "{}")
        .await
        .expect_err(409, "PAYOUT_IN_FLIGHT");
    s.post(
        &acme.live,
        &format!("/v1/escrows/{id}/dispute"),
        r#"{"reason":"late"}"#,
    )
    .await
    .expect_err(409, "PAYOUT_IN_FLIGHT");

    settle(&s).await;
    let v = s.get(&acme.live, &format!("/v1/escrows/{id}")).await.json();
    assert_eq!(v["state"], "RELEASED", "{v}");
    assert_eq!(v["payout_pending"], false);
    assert!(v["payout_tx_hash"].as_str().is_some());
    assert!(v["released_at"].as_str().is_some());

    let h = s
        .get(&acme.live, &format!("/v1/escrows/{id}/events?limit=50"))
        .await;
    h.expect(200);
    let events: Vec<String> = h.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert!(events.len() >= 4, "{events:?}");
    assert!(events.iter().any(|e| e == "escrow.created"), "{events:?}");
    assert!(events.iter().any(|e| e == "escrow.released"), "{events:?}");
    s.get(&beta.live, &format!("/v1/escrows/{id}/events"))
        .await
        .expect_err(404, "NOT_FOUND");

    // The list is per tenant and filters by state.
    let l = s.get(&acme.live, "/v1/escrows?state=RELEASED").await;
    l.expect(200);
    assert_eq!(l.json()["total"], 1);
    assert_eq!(l.json()["escrows"][0]["id"], id.as_str());
    assert_eq!(s.get(&beta.live, "/v1/escrows").await.json()["total"], 0);
    s.get(&acme.live, "/v1/escrows?state=NOPE")
        .await
        .expect_err(400, "INVALID_PARAMETER");
}

#[tokio::test]
async fn refund_dispute_and_cancel() {
    let (s, acme, _) = setup().await;
    // refund
    let e = s
        .post(&acme.live, "/v1/escrows", &create_body("10", "r-1"))
        .await
        .json();
    let id = e["id"].as_str().unwrap();
    pay_and_settle(&s, &e, 10_000_000).await;
    s.post(&acme.live, &format!("/v1/escrows/{id}/refund"), "{}")
        .await
        .expect(202);
    settle(&s).await;
    let v = s.get(&acme.live, &format!("/v1/escrows/{id}")).await.json();
    assert_eq!(v["state"], "REFUNDED", "{v}");

    // dispute: reason required, nothing written without it
    let e = s
        .post(&acme.live, "/v1/escrows", &create_body("10", "d-1"))
        .await
        .json();
    let id = e["id"].as_str().unwrap();
    pay_and_settle(&s, &e, 10_000_000).await;
    let r = writes_nothing!(
        s,
        s.post(&acme.live, &format!("/v1/escrows/{id}/dispute"), "{}")
            .await
    );
    r.expect_err(400, "MISSING_PARAMETER");
    let r = s
        .post(
            &acme.live,
            &format!("/v1/escrows/{id}/dispute"),
            r#"{"reason":"item not as described","on_behalf_of":"BUYER"}"#,
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["state"], "DISPUTED");
    assert_eq!(r.json()["dispute_reason"], "item not as described");
    // Only staff resolve a dispute: the tenant cannot release or refund it.
    s.post(&acme.live, &format!("/v1/escrows/{id}/release"), "{}")
        .await
        .expect_err(409, "INVALID_STATE");

    // cancel: CREATED only
    let e = s
        .post(&acme.live, "/v1/escrows", &create_body("10", "c-1"))
        .await
        .json();
    let id = e["id"].as_str().unwrap();
    let r = s
        .post(&acme.live, &format!("/v1/escrows/{id}/cancel"), "{}")
        .await;
    r.expect(200);
    assert_eq!(r.json()["state"], "CANCELLED");
    s.post(&acme.live, &format!("/v1/escrows/{id}/cancel"), "{}")
        .await
        .expect_err(409, "INVALID_STATE");
}

#[tokio::test]
async fn sandbox_simulates_create_and_refuses_actions() {
    let (s, acme, _) = setup().await;
    // One write only: the sandbox address's reservation, so the scanner owns it and a
    // real deposit to it is a stray deposit (issue #48; `stray_deposits.rs`). No deal.
    let before = s.commits();
    let r = s
        .post(&acme.test, "/v1/escrows", &create_body("25", "sb-1"))
        .await;
    r.expect(201);
    assert_eq!(s.commits(), before + 1, "{}", r.text());
    let v = r.json();
    assert_eq!(v["simulated"], true);
    let id = v["id"].as_str().unwrap();
    let reserved = s
        .app
        .engine()
        .ports()
        .store
        .get_by_unique(&stablecoin_core::kernel::inbound::address_key(
            "tron",
            v["escrow_address"].as_str().unwrap(),
        ))
        .await
        .unwrap()
        .expect("reserved");
    assert_eq!(reserved.kind, "sandbox_address");
    // A simulated escrow is never stored: not fetchable with either key.
    s.get(&acme.test, &format!("/v1/escrows/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    s.get(&acme.live, &format!("/v1/escrows/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    // Reads pass through; mutations of a stored escrow are refused.
    let live = s
        .post(&acme.live, "/v1/escrows", &create_body("25", "sb-2"))
        .await
        .json();
    let live_id = live["id"].as_str().unwrap();
    s.get(&acme.test, &format!("/v1/escrows/{live_id}"))
        .await
        .expect(200);
    let r = writes_nothing!(
        s,
        s.post(&acme.test, &format!("/v1/escrows/{live_id}/cancel"), "{}")
            .await
    );
    r.expect_err(403, "SANDBOX_UNSUPPORTED");
}

#[tokio::test]
async fn create_replays_by_idempotency_key() {
    let (s, acme, _) = setup().await;
    let body = create_body("40", "idem-1");
    let first = s
        .post_idem(&acme.live, "/v1/escrows", &body, "esc-key-1")
        .await;
    first.expect(201);
    let again = writes_nothing!(
        s,
        s.post_idem(&acme.live, "/v1/escrows", &body, "esc-key-1")
            .await
    );
    again.expect(201);
    assert_eq!(first.bytes, again.bytes, "byte-for-byte replay");
    assert_eq!(s.get(&acme.live, "/v1/escrows").await.json()["total"], 1);
    let other = create_body("41", "idem-1");
    s.post_idem(&acme.live, "/v1/escrows", &other, "esc-key-1")
        .await
        .expect_err(422, "IDEMPOTENCY_KEY_REUSED");
}

#[tokio::test]
async fn bad_input_is_a_clear_4xx_and_writes_nothing() {
    let (s, acme, _) = setup().await;
    let unlinked = "+2250700000009";
    let other = s.tenant("Other", "0").await;
    s.provision(&other.live, unlinked).await;
    let cases: Vec<(String, u16, &str)> = vec![
        (create_body("1.5", "x"), 400, "INVALID_AMOUNT"),
        (create_body("0", "x"), 400, "INVALID_AMOUNT"),
        (
            json!({"buyer_phone_number": BUYER, "seller_phone_number": "+2250700000055",
                "amount": "5", "reference": "x"})
            .to_string(),
            404,
            "NOT_FOUND",
        ),
        (
            json!({"buyer_phone_number": unlinked, "seller_phone_number": SELLER,
                "amount": "5", "reference": "x"})
            .to_string(),
            403,
            "NOT_A_MEMBER",
        ),
        (
            json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
                "amount": "5", "reference": "x", "token": "USDC"})
            .to_string(),
            400,
            "UNSUPPORTED_TOKEN",
        ),
        (
            json!({"buyer_phone_number": "0700", "seller_phone_number": SELLER,
                "amount": "5", "reference": "x"})
            .to_string(),
            400,
            "INVALID_PHONE",
        ),
        (r#"{"amount": "5"}"#.to_string(), 400, "MISSING_FIELD"),
        ("not json".to_string(), 400, "MALFORMED_JSON"),
    ];
    for (body, status, code) in cases {
        let r = writes_nothing!(s, s.post(&acme.live, "/v1/escrows", &body).await);
        r.expect_err(status, code);
    }
    let e = s
        .post(&acme.live, "/v1/escrows", &create_body("5", "ok"))
        .await
        .json();
    let id = e["id"].as_str().unwrap();
    let r = writes_nothing!(
        s,
        s.post(
            &acme.live,
            &format!("/v1/escrows/{id}/cancel"),
            r#"{"on_behalf_of":"NOBODY"}"#
        )
        .await
    );
    r.expect_err(400, "INVALID_PARAMETER");
    assert_eq!(s.get(&acme.live, "/v1/escrows").await.json()["total"], 1);
}
