//! Inbound sanctions screening (issue #51) for the two products other than wallets, over
//! real HTTP on loopback on the simulated chains: a payment from a listed sender to a
//! live escrow deal's address, or to a live checkout session's, is held in quarantine.
//! The deal is not funded and the session not paid, the tenant gets `deposit.quarantined`
//! through its webhook, and nothing else happens until staff decide. A release funds the
//! deal, or pays the session, exactly once. A return sends the tokens on chain (to the
//! sender once compliance delists it, or to where staff name) and leaves the deal or
//! session unpaid.
//!
//! Escrow uses the in-memory screen (a TRON sender ending in `9999` is listed); checkout
//! uses the OFAC list adapter over a file in OFAC's format, whose entry compliance
//! removes before the return.

use crate::common::webhook_receiver::recording_receiver;
use crate::common::*;
use crate::quarantine_http::{ADMIN, audit_actions, config, quarantined, staff};
use crate::screening_http::{list_path, ofac, write_list};
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_core::domain::money::Token;
use stablecoin_core::memory::ShiftedClock;
use stablecoin_core::ports::{ChainAddress, Rail, RailId};
use stablecoin_server::config::{FailModeSetting, Secret};

const BUYER: &str = "+2250700000401";
const SELLER: &str = "+2250700000402";
/// A valid TRON address (base58check, prefix 0x41) ending in `9999`: the memory screen
/// lists it.
const LISTED_TRON: &str = "TA4Y62o6YC2Zsck9rZVGTvqTAS7rex9999";
/// The EVM sender the checkout test's OFAC list names (then stops naming).
const LISTED_EVM: &str = "0x7e57000000000000000000000000000000005a1e";

/// `from` (an outside address) pays `amount` of `token` to `to` on `rail`: the faucet
/// funds it first, in the block before. Returns the payment's transaction hash.
fn pay(
    s: &Server,
    rail: RailId,
    token: Token,
    from: &str,
    to: &ChainAddress,
    amount: &str,
) -> String {
    let chain = s.app.sim_rail(rail).unwrap();
    let from = ChainAddress(from.into());
    chain.mint(&from, token, m(amount)).unwrap();
    chain.mine(1);
    chain
        .external_transfer(&from, to, token, m(amount))
        .unwrap()
}

/// Runs the return worker, mines and moves the clock past each poll pause.
async fn run_returns(s: &Server, clock: &ShiftedClock, rail: RailId) {
    let chain = s.app.sim_rail(rail).unwrap();
    for _ in 0..6 {
        let (_, errors) = s.app.engine().advance_stray_returns().await;
        assert!(errors.is_empty(), "{errors:?}");
        chain.mine(20);
        clock.advance_ms(3_000);
    }
}

/// The one quarantined deposit in `status`: its view.
async fn only(s: &Server, status: &str) -> Value {
    let list = quarantined(s, &format!("?status={status}")).await;
    assert_eq!(list["total"], 1, "{list}");
    list["quarantined_deposits"][0].clone()
}

async fn get_quarantined(s: &Server, id: &str) -> Value {
    let r = staff(
        s,
        ADMIN,
        Method::GET,
        &format!("/admin/v1/quarantined-deposits/{id}"),
        None,
    )
    .await;
    r.expect(200);
    r.json()
}

/// The webhook bodies received so far, after one delivery round.
async fn delivered(s: &Server, got: &crate::common::webhook_receiver::Received) -> Vec<Value> {
    s.app.state().webhooks.round().await.unwrap();
    got.lock()
        .unwrap()
        .iter()
        .map(|(_, b)| serde_json::from_slice::<Value>(b).unwrap())
        .collect()
}

async fn create_deal(s: &Server, key: &str, reference: &str) -> (String, ChainAddress) {
    let r = s
        .post(
            key,
            "/v1/escrows",
            &json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
                "amount": "20", "reference": reference})
            .to_string(),
        )
        .await;
    r.expect(201);
    let e = r.json();
    (
        e["id"].as_str().unwrap().to_string(),
        ChainAddress(e["escrow_address"].as_str().unwrap().into()),
    )
}

/// A deal's state and funded amount (base units).
async fn deal_state(s: &Server, key: &str, id: &str) -> (String, String) {
    let r = s.get(key, &format!("/v1/escrows/{id}")).await;
    r.expect(200);
    let v = r.json();
    (
        v["state"].as_str().unwrap().to_string(),
        v["funded_amount"].as_str().unwrap().to_string(),
    )
}

/// How many of a deal's history entries are `event`.
async fn deal_events(s: &Server, key: &str, id: &str, event: &str) -> usize {
    let r = s
        .get(key, &format!("/v1/escrows/{id}/events?limit=100"))
        .await;
    r.expect(200);
    r.json()["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == event)
        .count()
}

#[tokio::test]
async fn a_listed_payment_to_an_escrow_deal_funds_nothing_until_released_and_returns_off_chain_unfunded()
 {
    let (s, clock) = start_shifted(config(FailModeSetting::Closed)).await;
    let t = s.tenant("Acme", "0").await;
    let (hook, got) = recording_receiver().await;
    s.post(
        &t.live,
        "/v1/webhook-endpoints",
        &json!({"family": "wallet", "url": hook,
            "events": ["deposit.quarantined", "escrow.deposit_recorded", "escrow.funded"]})
        .to_string(),
    )
    .await
    .expect(201);
    s.provision(&t.live, BUYER).await;
    s.provision(&t.live, SELLER).await;
    let tron = s.app.sim_rail(RailId::Tron).unwrap();

    // The buyer pays the whole deal from a listed address: the deal is not funded.
    let (deal, addr) = create_deal(&s, &t.live, "order-q1").await;
    let tx = pay(&s, RailId::Tron, Token::Usdt, LISTED_TRON, &addr, "20");
    s.settle_escrows().await;
    s.settle_escrows().await;
    assert_eq!(
        deal_state(&s, &t.live, &deal).await,
        ("CREATED".to_string(), "0".to_string()),
        "a quarantined payment funds nothing"
    );
    assert_eq!(
        deal_events(&s, &t.live, &deal, "escrow.deposit_recorded").await,
        0
    );
    let q = only(&s, "held").await;
    assert_eq!(q["origin"], "escrow_deal", "{q}");
    assert_eq!(q["origin_id"], deal.as_str());
    assert_eq!(q["tenant_id"], t.id.to_string().as_str());
    assert_eq!(q["network"], "tron");
    assert_eq!(q["address"], addr.0.as_str());
    assert_eq!(q["token"], "USDT");
    assert_eq!(q["amount"], "20.000000");
    assert_eq!(q["owed"], "20.000000", "held in the quarantine account");
    assert_eq!(q["from"], LISTED_TRON);
    assert_eq!(q["tx_hash"], tx.as_str());
    assert_eq!(q["quarantine"]["cause"], "hit");
    assert_eq!(q["quarantine"]["product"], "escrow");
    let id = q["id"].as_str().unwrap().to_string();
    let audit = audit_actions(&s).await;
    assert!(
        audit.contains(&(
            "screening.quarantine".to_string(),
            "screening".to_string(),
            format!("tron:{LISTED_TRON}")
        )),
        "{audit:?}"
    );

    // The tenant hears of it through its webhook; escrow says nothing of a deposit.
    let events = delivered(&s, &got).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "deposit.quarantined");
    assert_eq!(events[0]["status"], "held");
    assert_eq!(events[0]["origin"], "escrow_deal");
    assert_eq!(events[0]["origin_id"], deal.as_str());
    assert_eq!(events[0]["amount"], "20.000000");
    assert!(events[0].get("list").is_none(), "{}", events[0]);

    // Staff release it (up to the cap: one identity decides): the deal is funded, once.
    let path = format!("/admin/v1/quarantined-deposits/{id}/release");
    let body = r#"{"reason":"name match only, cleared by compliance case 7"}"#;
    let r = staff(&s, ADMIN, Method::POST, &path, Some(body)).await;
    r.expect(200);
    assert_eq!(r.json()["status"], "releasing", "{}", r.text());
    s.settle_escrows().await;
    assert_eq!(
        deal_state(&s, &t.live, &deal).await,
        ("FUNDED".to_string(), "20000000".to_string())
    );
    let v = get_quarantined(&s, &id).await;
    assert_eq!(v["status"], "released", "{v}");
    assert_eq!(v["owed"], "0.000000", "the quarantine account closed");
    staff(&s, ADMIN, Method::POST, &path, Some(body))
        .await
        .expect(200);
    s.settle_escrows().await;
    assert_eq!(
        deal_events(&s, &t.live, &deal, "escrow.deposit_recorded").await,
        1
    );
    assert_eq!(deal_events(&s, &t.live, &deal, "escrow.funded").await, 1);
    let events = delivered(&s, &got).await;
    let names: Vec<(String, String)> = events
        .iter()
        .map(|e| {
            (
                e["event"].as_str().unwrap().to_string(),
                e["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let count = |n: &str, st: &str| names.iter().filter(|x| x.0 == n && x.1 == st).count();
    assert_eq!(count("deposit.quarantined", "held"), 1, "{names:?}");
    assert_eq!(count("deposit.quarantined", "released"), 1, "{names:?}");
    assert_eq!(
        names.iter().filter(|x| x.0 == "escrow.funded").count(),
        1,
        "{names:?}"
    );
    assert_eq!(
        names
            .iter()
            .filter(|x| x.0 == "escrow.deposit_recorded")
            .count(),
        1,
        "{names:?}"
    );

    // A second deal paid from the same listed address: returned, and left unfunded.
    let (deal2, addr2) = create_deal(&s, &t.live, "order-q2").await;
    pay(&s, RailId::Tron, Token::Usdt, LISTED_TRON, &addr2, "20");
    s.settle_escrows().await;
    let q2 = only(&s, "held").await;
    assert_eq!(q2["origin_id"], deal2.as_str(), "{q2}");
    let id2 = q2["id"].as_str().unwrap().to_string();
    let ret = format!("/admin/v1/quarantined-deposits/{id2}/return");
    // Back to the listed sender is paying it: refused.
    staff(&s, ADMIN, Method::POST, &ret, Some(r#"{"reason":"back"}"#))
        .await
        .expect_err(403, "SCREENING_HIT");
    // Where compliance directs it (here an outside address: the chain's faucet).
    let dest = tron.faucet_address();
    let before = tron.balance(&dest, Token::Usdt).await.unwrap();
    let r = staff(
        &s,
        ADMIN,
        Method::POST,
        &ret,
        Some(&json!({"reason": "to the blocked-funds account", "to": dest.0}).to_string()),
    )
    .await;
    r.expect(200);
    assert_eq!(r.json()["status"], "returning", "{}", r.text());
    run_returns(&s, &clock, RailId::Tron).await;
    s.settle_escrows().await;
    let v = get_quarantined(&s, &id2).await;
    assert_eq!(v["status"], "returned", "{v}");
    assert_eq!(v["owed"], "0.000000");
    let after = tron.balance(&dest, Token::Usdt).await.unwrap();
    assert_eq!(
        after.get() - before.get(),
        m("20").get(),
        "paid out on chain"
    );
    assert_eq!(tron.balance(&addr2, Token::Usdt).await.unwrap(), m("0"));
    assert_eq!(
        deal_state(&s, &t.live, &deal2).await,
        ("CREATED".to_string(), "0".to_string()),
        "a returned payment never funds the deal"
    );
    assert_eq!(
        deal_events(&s, &t.live, &deal2, "escrow.deposit_recorded").await,
        0
    );
}

/// A live session of 25 USDC on the simulated Polygon: its id and address.
async fn session(s: &Server, key: &str, reference: &str) -> (String, ChainAddress) {
    let r = s
        .post(
            key,
            "/api/v1/checkout/sessions",
            &json!({"amount": "25", "currency": "USDC", "reference": reference,
                "networks": ["polygon"], "expires_in_secs": 3600})
            .to_string(),
        )
        .await;
    r.expect(201);
    let j = r.json();
    (
        j["session_id"].as_str().unwrap().to_string(),
        ChainAddress(j["payment_options"][0]["address"].as_str().unwrap().into()),
    )
}

async fn read_session(s: &Server, key: &str, id: &str) -> Value {
    let r = s.get(key, &format!("/api/v1/checkout/sessions/{id}")).await;
    r.expect(200);
    r.json()
}

/// Mines and runs the checkout scanner until the transfers are past the depth.
async fn scan_checkout(s: &Server) {
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap();
    for _ in 0..5 {
        chain.mine(1);
        let r = s.app.state().checkout.tick().await;
        assert!(r.errors.is_empty(), "{r:?}");
    }
}

#[tokio::test]
async fn a_listed_payment_to_a_checkout_session_pays_nothing_until_released_and_a_return_reaches_the_sender()
 {
    let path = list_path("quarantine-checkout");
    write_list(&path, &[LISTED_EVM], 1);
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    c.admin.topup_single_approval_max = "30".into();
    c.webhooks_allow_loopback_http = true;
    c.screening = ofac(&path);
    let (s, clock) = start_shifted(c).await;
    let t = s.tenant("Shop", "0").await;
    let (hook, got) = recording_receiver().await;
    s.post(
        &t.live,
        "/v1/webhook-endpoints",
        &json!({"family": "wallet", "url": hook, "events": ["deposit.quarantined"]}).to_string(),
    )
    .await
    .expect(201);
    let (pay_hook, paid) = recording_receiver().await;
    s.post(
        &t.live,
        "/v1/webhook-endpoints",
        &json!({"family": "payments", "url": pay_hook, "events": ["payment.confirmed"]})
            .to_string(),
    )
    .await
    .expect(201);
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    let base = s.treasury(&t).await.get();

    // The customer pays from a listed address: the session is not paid.
    let (cs, addr) = session(&s, &t.business_live, "order-q1").await;
    let tx = pay(&s, RailId::Evm(137), Token::Usdc, LISTED_EVM, &addr, "25");
    scan_checkout(&s).await;
    scan_checkout(&s).await;
    let v = read_session(&s, &t.business_live, &cs).await;
    assert_eq!(v["status"], "pending", "{v}");
    assert_eq!(v["amount_received"], "0.000000", "{v}");
    assert_eq!(v["amount_pending"], "0.000000", "{v}");
    assert_eq!(s.treasury(&t).await.get(), base, "nothing credited");
    let q = only(&s, "held").await;
    assert_eq!(q["origin"], "checkout_session", "{q}");
    assert_eq!(q["origin_id"], cs.as_str());
    assert_eq!(q["network"], "polygon");
    assert_eq!(q["token"], "USDC");
    assert_eq!(q["amount"], "25.000000");
    assert_eq!(q["owed"], "25.000000");
    assert_eq!(q["from"], LISTED_EVM);
    assert_eq!(q["tx_hash"], tx.as_str());
    assert_eq!(q["quarantine"]["cause"], "hit");
    assert_eq!(q["quarantine"]["screen"], "ofac-list");
    assert_eq!(q["quarantine"]["product"], "checkout");
    let id = q["id"].as_str().unwrap().to_string();
    let events = delivered(&s, &got).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["event"], "deposit.quarantined");
    assert_eq!(events[0]["status"], "held");
    assert_eq!(events[0]["origin"], "checkout_session");
    assert_eq!(events[0]["origin_id"], cs.as_str());
    s.app.state().webhooks.round().await.unwrap();
    assert!(paid.lock().unwrap().is_empty(), "no payment.confirmed");

    // Staff release it: the session is paid, once.
    let rel = format!("/admin/v1/quarantined-deposits/{id}/release");
    let body = r#"{"reason":"licensed by the regulator, case 9"}"#;
    let r = staff(&s, ADMIN, Method::POST, &rel, Some(body)).await;
    r.expect(200);
    assert_eq!(r.json()["status"], "releasing", "{}", r.text());
    scan_checkout(&s).await;
    let v = read_session(&s, &t.business_live, &cs).await;
    assert_eq!(v["status"], "paid", "{v}");
    assert_eq!(v["amount_received"], "25.000000", "{v}");
    assert_eq!(v["tx_hash"], tx.as_str());
    assert_eq!(get_quarantined(&s, &id).await["status"], "released");
    staff(&s, ADMIN, Method::POST, &rel, Some(body))
        .await
        .expect(200);
    scan_checkout(&s).await;
    assert_eq!(
        s.treasury(&t).await.get() - base,
        m("25").get(),
        "credited once"
    );
    s.app.state().webhooks.round().await.unwrap();
    let confirmations: Vec<Value> = paid
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| serde_json::from_slice::<Value>(b).unwrap())
        .collect();
    assert_eq!(confirmations.len(), 1, "{confirmations:?}");
    assert_eq!(confirmations[0]["session_id"], cs.as_str());
    let statuses: Vec<Value> = delivered(&s, &got)
        .await
        .iter()
        .map(|e| e["status"].clone())
        .collect();
    assert_eq!(statuses, [json!("held"), json!("released")]);

    // A second session paid from the same address: held; compliance then delists the
    // sender and the business does not want the payment: returned to the sender.
    let (cs2, addr2) = session(&s, &t.business_live, "order-q2").await;
    pay(&s, RailId::Evm(137), Token::Usdc, LISTED_EVM, &addr2, "25");
    scan_checkout(&s).await;
    let q2 = only(&s, "held").await;
    assert_eq!(q2["origin_id"], cs2.as_str(), "{q2}");
    let id2 = q2["id"].as_str().unwrap().to_string();
    let ret = format!("/admin/v1/quarantined-deposits/{id2}/return");
    staff(&s, ADMIN, Method::POST, &ret, Some(r#"{"reason":"back"}"#))
        .await
        .expect_err(403, "SCREENING_HIT");
    write_list(&path, &[], 20);
    let r = staff(
        &s,
        ADMIN,
        Method::POST,
        &ret,
        Some(r#"{"reason":"delisted; the shop refuses the order"}"#),
    )
    .await;
    r.expect(200);
    assert_eq!(r.json()["status"], "returning", "{}", r.text());
    assert_eq!(r.json()["return"]["to"], LISTED_EVM, "{}", r.text());
    run_returns(&s, &clock, RailId::Evm(137)).await;
    scan_checkout(&s).await;
    let v = get_quarantined(&s, &id2).await;
    assert_eq!(v["status"], "returned", "{v}");
    assert_eq!(v["owed"], "0.000000");
    let sender = ChainAddress(LISTED_EVM.into());
    assert_eq!(
        polygon.balance(&sender, Token::Usdc).await.unwrap(),
        m("25"),
        "the sender has its money back"
    );
    assert_eq!(polygon.balance(&addr2, Token::Usdc).await.unwrap(), m("0"));
    let v = read_session(&s, &t.business_live, &cs2).await;
    assert_eq!(v["status"], "pending", "{v}");
    assert_eq!(v["amount_received"], "0.000000", "{v}");
    assert_eq!(
        s.treasury(&t).await.get() - base,
        m("25").get(),
        "the returned payment never reached the treasury"
    );
}
