//! Sanctions screening (issue #51) over real HTTP on loopback: a send or a withdrawal
//! whose destination a screen lists is refused (403 SCREENING_HIT) before anything is
//! held, and audited; a screen that cannot answer refuses when the deployment fails
//! closed (production's mode) and lets through, audited, when it fails open. The screens
//! are the real adapters: the OFAC list over a file in OFAC's format (the committed
//! sample, with the addresses each test lists), and Chainalysis's API through its fake,
//! a separate HTTP server.

use crate::common::*;
use serde_json::Value;
use stablecoin_core::ports::{KeyPurpose, RailId};
use stablecoin_providers::testkit::{Behaviour, FakeChainalysis};
use stablecoin_server::config::{FailModeSetting, ScreeningKind, ScreeningSettings, Secret};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
const A: &str = "+2250700000101";
const B: &str = "+2250700000102";
const C: &str = "+2250700000103";
/// Listed under entry 90001 of the committed sample (ETH and USDT).
const SAMPLE_LISTED: &str = "0x5A1E5a1E0000000000000000000000000000bEEf";

fn sample_xml() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../stablecoin-providers/testdata/ofac/sdn_sample.xml");
    std::fs::read_to_string(p).unwrap()
}

/// The sample list with `extra` addresses added to entry 90001 (as `Digital Currency
/// Address - USDC`), written to `path` with a modification time `age_s` seconds on, as
/// a new download would be.
pub(crate) fn write_list(path: &Path, extra: &[&str], age_s: u64) {
    let ids: String = extra
        .iter()
        .enumerate()
        .map(|(i, a)| {
            format!(
                "<id><uid>{}</uid><idType>Digital Currency Address - USDC</idType><idNumber>{a}</idNumber></id>\n      ",
                290_100 + i
            )
        })
        .collect();
    let xml = sample_xml().replacen(
        "<id>\n        <uid>190001</uid>",
        &format!("{ids}<id>\n        <uid>190001</uid>"),
        1,
    );
    assert!(
        extra.is_empty() || xml.contains(extra[0]),
        "the sample's layout changed"
    );
    std::fs::write(path, xml).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(age_s))
        .unwrap();
}

pub(crate) fn list_path(tag: &str) -> PathBuf {
    let dir = temp_dir(&format!("screening-{tag}"));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("sdn.xml")
}

fn config(screening: ScreeningSettings) -> stablecoin_server::Config {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    c.screening = screening;
    c
}

pub(crate) fn ofac(path: &Path) -> ScreeningSettings {
    ScreeningSettings {
        kind: ScreeningKind::OfacList,
        path: Some(path.to_path_buf()),
        fail_mode: Some(FailModeSetting::Closed),
        ..Default::default()
    }
}

/// Provisions A, B and C on the primary EVM chain, funds A with 50 USDC: the tenant's
/// live key and each one's address.
async fn wallets(s: &Server) -> (Tenant, [String; 3]) {
    let t = s.tenant("Screened Fintech", "1000").await;
    let mut addrs = Vec::new();
    for p in [A, B, C] {
        addrs.push(
            s.provision(&t.live, p).await["address"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let f = s.fund_settled(&t.live, A, "50").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    (t, [addrs[0].clone(), addrs[1].clone(), addrs[2].clone()])
}

async fn send(s: &Server, key: &str, from: &str, to: &str, amount: &str) -> Resp {
    s.post(
        key,
        "/v1/transfers/send",
        &serde_json::json!({"from_phone_number": from, "to_phone_number": to,
            "token": "USDC", "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")})
        .to_string(),
    )
    .await
}

async fn balance(s: &Server, key: &str, phone: &str) -> String {
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

/// The screening entries of the staff audit log, newest first.
async fn screening_audit(s: &Server) -> Vec<Value> {
    let auth = format!("Bearer {ADMIN}");
    let r = s
        .send(
            reqwest::Method::GET,
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

#[tokio::test]
async fn a_send_to_an_address_on_the_ofac_list_is_refused_held_nothing_and_is_audited() {
    let path = list_path("send");
    write_list(&path, &[], 1);
    let s = start_with(config(ofac(&path))).await;
    let (t, [_, b_addr, _]) = wallets(&s).await;
    let key = t.live.clone();

    // Clear on the list as published: the send is accepted.
    send(&s, &key, A, B, "5").await.expect(202);
    s.settle().await;
    let before = balance(&s, &key, A).await;
    assert_eq!(before, "45.000000");

    // A new list names B's address: the next send to B is refused, nothing is held.
    write_list(&path, &[&b_addr], 10);
    let r = send(&s, &key, A, B, "5").await;
    r.expect_err(403, "SCREENING_HIT");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        !msg.contains("OFAC") && !msg.contains("90001"),
        "no tip-off: {msg}"
    );
    assert_eq!(balance(&s, &key, A).await, before, "nothing held");
    let audit = screening_audit(&s).await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    assert_eq!(audit[0]["action"], "screening.hit");
    assert_eq!(audit[0]["staff_id"], "screening");
    assert_eq!(audit[0]["target"], format!("polygon:{b_addr}"));
    let note = audit[0]["note"].as_str().unwrap();
    assert!(
        note.contains("send tr_") && note.contains("OFAC SDN of 11/26/2026"),
        "{note}"
    );
    assert!(note.contains("uid 90001"), "{note}");

    // A send to C is still clear.
    send(&s, &key, A, C, "5").await.expect(202);

    // The tenant's fee address is a destination too: a listed one refuses every send.
    s.app
        .engine()
        .set_pricing(
            &t.id,
            stablecoin_core::domain::fees::TenantPricing::from_parts(
                "FLAT",
                None,
                None,
                Some(10_000),
            )
            .unwrap(),
            Some(stablecoin_core::ports::ChainAddress(
                SAMPLE_LISTED.to_lowercase(),
            )),
        )
        .await
        .unwrap();
    send(&s, &key, A, C, "5")
        .await
        .expect_err(403, "SCREENING_HIT");
    let audit = screening_audit(&s).await;
    assert_eq!(
        audit[0]["target"],
        format!("polygon:{}", SAMPLE_LISTED.to_lowercase())
    );
}

#[tokio::test]
async fn a_withdrawal_whose_sweep_destination_is_listed_is_refused() {
    let path = list_path("withdraw");
    write_list(&path, &[], 1);
    let s = start_with(config(ofac(&path))).await;
    let (t, _) = wallets(&s).await;
    let key = t.live.clone();
    let treasury = s
        .app
        .engine()
        .rail(RailId::Evm(137))
        .unwrap()
        .address_for(&KeyPurpose::Treasury)
        .await
        .unwrap();
    write_list(&path, &[&treasury.0], 10);
    let body =
        r#"{"phone_number":"+2250700000101","token":"USDC","amount":"20","payout_currency":"XOF"}"#;
    s.post(&key, "/v1/users/withdraw", body)
        .await
        .expect_err(403, "SCREENING_HIT");
    assert_eq!(balance(&s, &key, A).await, "50.000000", "nothing held");
    let audit = screening_audit(&s).await;
    assert_eq!(audit[0]["action"], "screening.hit");
    assert_eq!(audit[0]["target"], format!("polygon:{}", treasury.0));
    assert!(
        audit[0]["note"]
            .as_str()
            .unwrap()
            .contains("withdrawal wd_"),
        "{audit:?}"
    );
    // Delisted: the same withdrawal goes through.
    write_list(&path, &[], 20);
    s.post(&key, "/v1/users/withdraw", body).await.expect(202);
}

#[tokio::test]
async fn chainalysis_hits_clears_and_outages_fail_closed() {
    let fake = FakeChainalysis::start("ca-key").await.unwrap();
    let s = start_with(config(ScreeningSettings {
        kind: ScreeningKind::Chainalysis,
        base_url: fake.base_url().to_string(),
        api_key: Some(Secret::new("ca-key")),
        timeout_ms: 300,
        fail_mode: Some(FailModeSetting::Closed),
        ..Default::default()
    }))
    .await;
    let (t, [_, b_addr, _]) = wallets(&s).await;
    let key = t.live.clone();
    fake.sanction(&b_addr, "SANCTIONS: OFAC SDN Sample Person 2026-11-26");

    // A hit.
    send(&s, &key, A, B, "5")
        .await
        .expect_err(403, "SCREENING_HIT");
    let audit = screening_audit(&s).await;
    assert_eq!(audit[0]["action"], "screening.hit");
    let note = audit[0]["note"].as_str().unwrap();
    assert!(
        note.contains("chainalysis:sanctions") && note.contains("Sample Person"),
        "{note}"
    );

    // Clear.
    send(&s, &key, A, C, "5").await.expect(202);
    s.settle().await;
    let before = balance(&s, &key, A).await;
    assert_eq!(before, "45.000000");

    // The vendor hangs past the timeout, then rate-limits, then fails: each refused
    // (fail closed, as in production), nothing held, each audited.
    for (b, why) in [
        (Behaviour::Hang, "timed out"),
        (Behaviour::Status(429), "429"),
        (Behaviour::Status(500), "500"),
    ] {
        fake.set_behaviour(b);
        let r = send(&s, &key, A, C, "5").await;
        r.expect_err(503, "SCREENING_UNAVAILABLE");
        assert!(
            !r.text().contains(fake.base_url()),
            "no vendor detail: {}",
            r.text()
        );
        let audit = screening_audit(&s).await;
        assert_eq!(audit[0]["action"], "screening.unavailable");
        assert!(
            audit[0]["note"].as_str().unwrap().contains(why),
            "{audit:?}"
        );
    }
    assert_eq!(balance(&s, &key, A).await, before, "nothing held");

    fake.set_behaviour(Behaviour::Normal);
    send(&s, &key, A, C, "5").await.expect(202);
}

#[tokio::test]
async fn the_memory_screen_answers_its_documented_test_hits_and_development_fails_open() {
    // Development's default fail mode is open.
    let s = start_with(config(ScreeningSettings {
        kind: ScreeningKind::Memory,
        ..Default::default()
    }))
    .await;
    let (t, _) = wallets(&s).await;
    let key = t.live.clone();
    let fee_to = |suffix: &str| {
        stablecoin_core::ports::ChainAddress(format!("0x{}{suffix}", "ab".repeat(18)))
    };
    let pricing = || {
        stablecoin_core::domain::fees::TenantPricing::from_parts("FLAT", None, None, Some(10_000))
            .unwrap()
    };
    // An address ending in 8888: the test outage, let through (open) and audited.
    s.app
        .engine()
        .set_pricing(&t.id, pricing(), Some(fee_to("8888")))
        .await
        .unwrap();
    send(&s, &key, A, B, "5").await.expect(202);
    let audit = screening_audit(&s).await;
    assert_eq!(audit[0]["action"], "screening.skipped", "{audit:?}");
    // An address ending in 9999: the test hit.
    s.app
        .engine()
        .set_pricing(&t.id, pricing(), Some(fee_to("9999")))
        .await
        .unwrap();
    send(&s, &key, A, B, "5")
        .await
        .expect_err(403, "SCREENING_HIT");
    let audit = screening_audit(&s).await;
    assert_eq!(audit[0]["action"], "screening.hit");
    assert!(
        audit[0]["note"].as_str().unwrap().contains("list TEST"),
        "{audit:?}"
    );
}

#[tokio::test]
async fn an_escrow_release_to_a_listed_seller_is_refused_and_the_deal_stays_funded() {
    let path = list_path("escrow");
    write_list(&path, &[], 1);
    let s = start_with(config(ofac(&path))).await;
    let t = s.tenant("Escrow Fintech", "0").await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    let r = s
        .post(
            &t.live,
            "/v1/escrows",
            &serde_json::json!({"buyer_phone_number": A, "seller_phone_number": B,
                "amount": "20", "reference": "order-screened"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let e = r.json();
    let id = e["id"].as_str().unwrap().to_string();
    let seller = e["seller_address"].as_str().unwrap().to_string();
    let tron = s.app.sim_rail(RailId::Tron).expect("sim TRON");
    tron.mint(
        &stablecoin_core::ports::ChainAddress(e["escrow_address"].as_str().unwrap().into()),
        stablecoin_core::domain::money::Token::Usdt,
        stablecoin_core::domain::money::Micros(20_000_000),
    )
    .unwrap();
    s.settle_escrows().await;
    let r = s.get(&t.live, &format!("/v1/escrows/{id}")).await;
    assert_eq!(r.json()["state"], "FUNDED", "{}", r.text());

    write_list(&path, &[&seller], 10);
    s.post(&t.live, &format!("/v1/escrows/{id}/release"), "{}")
        .await
        .expect_err(403, "SCREENING_HIT");
    let r = s.get(&t.live, &format!("/v1/escrows/{id}")).await;
    assert_eq!(r.json()["state"], "FUNDED", "nothing claimed: {}", r.text());
    let audit = screening_audit(&s).await;
    assert_eq!(audit[0]["action"], "screening.hit");
    assert_eq!(audit[0]["target"], format!("tron:{seller}"));
    assert!(
        audit[0]["note"]
            .as_str()
            .unwrap()
            .contains(&format!("escrow.payout {id}"))
    );
}

#[tokio::test]
async fn a_stray_deposit_is_not_returned_to_a_listed_sender() {
    let path = list_path("stray");
    write_list(&path, &[], 1);
    let s = start_with(config(ofac(&path))).await;
    let t = s.tenant("Stray Fintech", "0").await;
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    // A real deposit to a test checkout session is a stray deposit, owed to its sender.
    let r = s
        .post(
            &t.business_test,
            "/api/v1/checkout/sessions",
            &serde_json::json!({"amount": "25", "currency": "USDC", "reference": "order-1",
                "networks": ["polygon"], "expires_in_secs": 600})
            .to_string(),
        )
        .await;
    r.expect(201);
    let addr = stablecoin_core::ports::ChainAddress(
        r.json()["payment_options"][0]["address"]
            .as_str()
            .unwrap()
            .into(),
    );
    polygon
        .mint(&addr, stablecoin_core::domain::money::Token::Usdc, m("7"))
        .unwrap();
    for _ in 0..5 {
        polygon.mine(1);
        let r = s.app.state().checkout.tick().await;
        assert!(r.errors.is_empty(), "{r:?}");
    }
    let auth = format!("Bearer {ADMIN}");
    let list = s
        .send(
            reqwest::Method::GET,
            "/admin/v1/stray-deposits",
            None,
            None,
            &[("Authorization", &auth)],
        )
        .await
        .json();
    let sd = list["stray_deposits"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let sender = polygon.faucet_address().0;

    // The sender is listed: the return to it is refused and audited; it stays held.
    write_list(&path, &[&sender], 10);
    let body = r#"{"reason":"sender asked for it back"}"#;
    let ret = format!("/admin/v1/stray-deposits/{sd}/return");
    s.send(
        reqwest::Method::POST,
        &ret,
        None,
        Some(body),
        &[("Authorization", &auth)],
    )
    .await
    .expect_err(403, "SCREENING_HIT");
    let list = s
        .send(
            reqwest::Method::GET,
            "/admin/v1/stray-deposits",
            None,
            None,
            &[("Authorization", &auth)],
        )
        .await
        .json();
    assert_eq!(list["stray_deposits"][0]["status"], "held", "{list}");
    let audit = screening_audit(&s).await;
    assert_eq!(audit[0]["action"], "screening.hit");
    assert_eq!(audit[0]["target"], format!("polygon:{sender}"));
    assert!(
        audit[0]["note"]
            .as_str()
            .unwrap()
            .contains(&format!("stray.return {sd}"))
    );
}

/// A checkout refund's destination is screened like any send out of custody (issues #50
/// and #51): to a listed address it is refused, audited and reserves nothing, and the
/// same refund to a clear address goes through; a payer's claim is screened the same way
/// (the one destination check, `CheckoutEngine::check_refund_destination`).
#[tokio::test]
async fn a_checkout_refund_to_a_listed_address_is_refused_and_reserves_nothing() {
    use crate::checkout_refunds::{PAYER, Shop};
    let mut c = config(ScreeningSettings {
        kind: ScreeningKind::Memory,
        fail_mode: Some(FailModeSetting::Closed),
        ..Default::default()
    });
    c.run_workers = false;
    let shop = Shop::with(c).await;
    let (id, _) = shop.paid_session("30").await;
    let owed = shop.ledger(&shop.refundable_account()).await;
    let listed = format!("0x{}9999", "ab".repeat(18));
    let r = shop
        .refund(
            &id,
            serde_json::json!({"amount": "3", "network": "polygon", "address": listed}),
            "rf-listed",
        )
        .await;
    r.expect_err(403, "SCREENING_HIT");
    assert!(
        !r.text().contains("9999"),
        "the answer names no list entry: {}",
        r.text()
    );
    let audit = screening_audit(&shop.s).await;
    assert_eq!(audit[0]["action"], "screening.hit", "{audit:?}");
    assert_eq!(
        shop.ledger(&shop.refundable_account()).await,
        owed,
        "nothing reserved"
    );
    assert_eq!(shop.refunds(&id).await["refunds"], serde_json::json!([]));

    // An outage (the memory screen's 8888), failing closed: 503, nothing reserved.
    let outage = format!("0x{}8888", "ab".repeat(18));
    let r = shop
        .refund(
            &id,
            serde_json::json!({"amount": "3", "network": "polygon", "address": outage}),
            "rf-outage",
        )
        .await;
    r.expect_err(503, "SCREENING_UNAVAILABLE");
    assert_eq!(shop.refunds(&id).await["refunds"], serde_json::json!([]));

    let r = shop
        .refund(
            &id,
            serde_json::json!({"amount": "3", "network": "polygon", "address": PAYER}),
            "rf-clear",
        )
        .await;
    r.expect(201);
    assert_eq!(
        shop.refunds(&id).await["refunds"].as_array().unwrap().len(),
        1
    );
}
