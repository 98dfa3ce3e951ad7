//! Inbound sanctions screening (issue #51) over real HTTP on loopback, on the simulated
//! chains: a deposit from a listed sender is credited to a quarantine account, not to
//! the wallet, and the tenant is told; staff release it (two-person rule above the cap)
//! and the wallet is credited; another is returned (a return to the listed sender is
//! itself refused, so staff name the destination). A screen that cannot answer
//! quarantines when the deployment fails closed and credits, audited, when it fails
//! open.
//!
//! The screen is the in-memory adapter (`[screening] kind = "memory"`): a sender ending
//! in `9999` is listed, one ending in `8888` makes the screen unavailable.

use crate::common::webhook_receiver::recording_receiver;
use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::ShiftedClock;
use stablecoin_core::ports::{ChainAddress, Rail, RailId};
use stablecoin_server::config::{FailModeSetting, ScreeningKind, ScreeningSettings, Secret};

pub(crate) const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
pub(crate) const A: &str = "+2250700000301";
const B: &str = "+2250700000302";
/// Listed by the memory screen (ends in 9999).
pub(crate) const LISTED: &str = "0x1111111111111111111111111111111111119999";
/// Makes the memory screen unavailable (ends in 8888).
const OUTAGE: &str = "0x2222222222222222222222222222222222228888";

pub(crate) fn config(fail_mode: FailModeSetting) -> stablecoin_server::Config {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    // Releases and returns above 30 tokens need a second staff identity.
    c.admin.topup_single_approval_max = "30".into();
    c.webhooks_allow_loopback_http = true;
    c.screening = ScreeningSettings {
        kind: ScreeningKind::Memory,
        fail_mode: Some(fail_mode),
        ..Default::default()
    };
    c
}

pub(crate) async fn staff(
    s: &Server,
    bearer: &str,
    method: Method,
    path: &str,
    body: Option<&str>,
) -> Resp {
    let auth = format!("Bearer {bearer}");
    s.send(method, path, None, body, &[("Authorization", &auth)])
        .await
}

pub(crate) async fn quarantined(s: &Server, query: &str) -> Value {
    let r = staff(
        s,
        ADMIN,
        Method::GET,
        &format!("/admin/v1/quarantined-deposits{query}"),
        None,
    )
    .await;
    r.expect(200);
    r.json()
}

/// What the ledger credits wallet `wid` in USDC on the primary EVM chain (the balance
/// route reads the chain, where quarantined tokens sit too).
pub(crate) async fn credited(s: &Server, wid: &str) -> String {
    let id = stablecoin_core::engine::accounts::wallet(
        &stablecoin_core::domain::ids::WalletId(wid.into()),
        Token::Usdc,
    )
    .id;
    match s.app.engine().ports().ledger.balance(&id).await {
        Ok(b) => Micros::new(u64::try_from(b.posted()).unwrap()).to_decimal_string(),
        // Never credited: no account yet.
        Err(stablecoin_core::ports::LedgerError::UnknownAccount { .. }) => "0.000000".into(),
        Err(e) => panic!("{e}"),
    }
}

async fn send(s: &Server, key: &str, to: &str, amount: &str) -> Resp {
    s.post(
        key,
        "/v1/transfers/send",
        &json!({"from_phone_number": A, "to_phone_number": to, "token": "USDC",
            "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")})
        .to_string(),
    )
    .await
}

/// `from` (an outside address) pays `amount` USDC to `to` on the simulated Polygon: the
/// faucet funds it first. Then the chain is mined past the depth and scanned.
pub(crate) async fn deposit(s: &Server, from: &str, to: &ChainAddress, amount: &str) -> String {
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    let from = ChainAddress(from.into());
    polygon.mint(&from, Token::Usdc, m(amount)).unwrap();
    polygon.mine(1);
    let tx = polygon
        .external_transfer(&from, to, Token::Usdc, m(amount))
        .unwrap();
    scan(s).await;
    tx
}

pub(crate) async fn scan(s: &Server) {
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    for _ in 0..4 {
        polygon.mine(5);
        s.settle().await;
    }
}

/// Runs the return worker, mines and moves the clock past each poll pause.
pub(crate) async fn run_returns(s: &Server, clock: &ShiftedClock) {
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    for _ in 0..6 {
        let (_, errors) = s.app.engine().advance_stray_returns().await;
        assert!(errors.is_empty(), "{errors:?}");
        polygon.mine(20);
        clock.advance_ms(3_000);
    }
}

pub(crate) async fn audit_actions(s: &Server) -> Vec<(String, String, String)> {
    let r = staff(s, ADMIN, Method::GET, "/admin/v1/audit", None).await;
    r.expect(200);
    r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_string(),
                e["staff_id"].as_str().unwrap().to_string(),
                e["target"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_deposit_from_a_listed_sender_is_quarantined_released_by_staff_and_another_returned() {
    let (s, clock) = start_shifted(config(FailModeSetting::Closed)).await;
    let t = s.tenant("Acme", "0").await;
    let (hook, got) = recording_receiver().await;
    s.post(
        &t.live,
        "/v1/webhook-endpoints",
        &json!({"family": "wallet", "url": hook, "events": ["deposit.quarantined"]}).to_string(),
    )
    .await
    .expect(201);
    let p = s.provision(&t.live, A).await;
    let addr = ChainAddress(p["address"].as_str().unwrap().into());
    let wid = p["wallet_id"].as_str().unwrap().to_string();
    s.provision(&t.live, B).await;

    // A clear sender is credited as ever.
    deposit(&s, "0x3333333333333333333333333333333333330001", &addr, "5").await;
    assert_eq!(credited(&s, &wid).await, "5.000000");
    assert_eq!(quarantined(&s, "").await["total"], 0);

    // A listed sender: quarantined, not credited; scanned again, recorded once.
    let tx = deposit(&s, LISTED, &addr, "40").await;
    scan(&s).await;
    assert_eq!(credited(&s, &wid).await, "5.000000", "not credited");
    // Not spendable: the wallet holds the tokens on chain, the ledger does not.
    send(&s, &t.live, B, "40")
        .await
        .expect_err(422, "INSUFFICIENT_FUNDS");
    let list = quarantined(&s, "").await;
    assert_eq!(list["total"], 1, "{list}");
    let q = &list["quarantined_deposits"][0];
    assert_eq!(q["status"], "held", "{q}");
    assert_eq!(q["origin"], "wallet");
    assert!(q["origin_id"].as_str().unwrap().starts_with("wal_"), "{q}");
    assert_eq!(q["tenant_id"], t.id.to_string().as_str());
    assert_eq!(q["network"], "polygon");
    assert_eq!(q["address"], addr.0.as_str());
    assert_eq!(q["amount"], "40.000000");
    assert_eq!(q["owed"], "40.000000", "held in the quarantine account");
    assert_eq!(q["from"], LISTED);
    assert_eq!(q["tx_hash"], tx.as_str());
    assert_eq!(q["quarantine"]["cause"], "hit");
    assert_eq!(q["quarantine"]["list"], "TEST");
    assert_eq!(q["quarantine"]["product"], "wallet");
    let id = q["id"].as_str().unwrap().to_string();
    // Not a stray deposit: that list stays empty.
    let strays = staff(&s, ADMIN, Method::GET, "/admin/v1/stray-deposits", None).await;
    assert_eq!(strays.json()["total"], 0);
    // Audited by the screen (found by action: entries of one millisecond are ordered by
    // id, so the admin sign-in of the read above may come first).
    let audit = audit_actions(&s).await;
    assert!(
        audit.contains(&(
            "screening.quarantine".to_string(),
            "screening".to_string(),
            format!("polygon:{LISTED}")
        )),
        "{audit:?}"
    );

    // The tenant is told, without the list or its entry.
    s.app.state().webhooks.round().await.unwrap();
    let received = got.lock().unwrap().clone();
    assert_eq!(received.len(), 1, "one event");
    let e: Value = serde_json::from_slice(&received[0].1).unwrap();
    assert_eq!(e["event"], "deposit.quarantined");
    assert_eq!(e["quarantine_id"], id.as_str());
    assert_eq!(e["status"], "held");
    assert_eq!(e["cause"], "hit");
    assert_eq!(e["amount"], "40.000000");
    assert_eq!(e["origin_id"], q["origin_id"]);
    assert!(
        e.get("list").is_none() && e.get("reference").is_none(),
        "{e}"
    );

    // The staff console says so on its first page.
    let mut console = crate::common::console::Console::new(&s.base);
    let csrf = console.csrf("/console/login").await;
    let r = console
        .post(
            "/console/login",
            &[("csrf", &csrf), ("staff_secret", ADMIN)],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
    let page = console.get("/console").await;
    assert!(
        page.body.contains("1 quarantined deposit(s)"),
        "{}",
        page.body
    );

    // Release, above the cap: proposed, then decided by a second identity.
    let path = format!("/admin/v1/quarantined-deposits/{id}/release");
    let body = r#"{"reason":"false positive, cleared by compliance case 42"}"#;
    staff(&s, ADMIN, Method::POST, &path, Some(r#"{"reason":" "}"#))
        .await
        .expect_err(400, "INVALID_PARAMETER");
    let r = staff(&s, ADMIN, Method::POST, &path, Some(body)).await;
    r.expect(200);
    assert_eq!(r.json()["status"], "proposed", "{}", r.text());
    assert_eq!(
        r.json()["quarantine"]["release"]["proposed_by"],
        "admin-token"
    );
    scan(&s).await;
    assert_eq!(
        credited(&s, &wid).await,
        "5.000000",
        "nothing while proposed"
    );
    staff(&s, ADMIN, Method::POST, &path, Some(body))
        .await
        .expect_err(409, "SECOND_APPROVER_REQUIRED");
    // A return cannot cut across a pending release.
    staff(
        &s,
        ADMIN,
        Method::POST,
        &format!("/admin/v1/quarantined-deposits/{id}/return"),
        Some(r#"{"reason":"x"}"#),
    )
    .await
    .expect_err(409, "INVALID_STATE");
    let ada = s.app.engine().create_staff("Ada").await.unwrap();
    let r = staff(&s, &ada.secret, Method::POST, &path, Some(body)).await;
    r.expect(200);
    assert_eq!(r.json()["status"], "releasing", "{}", r.text());
    assert_eq!(
        r.json()["quarantine"]["release"]["approved_by"],
        ada.account.id.as_str()
    );
    scan(&s).await;
    assert_eq!(credited(&s, &wid).await, "45.000000", "credited on release");
    let v = staff(
        &s,
        ADMIN,
        Method::GET,
        &format!("/admin/v1/quarantined-deposits/{id}"),
        None,
    )
    .await
    .json();
    assert_eq!(v["status"], "released", "{v}");
    assert_eq!(v["owed"], "0.000000", "the quarantine account closed");
    assert!(v["quarantine"]["release"]["released_at"].is_string(), "{v}");
    // Repeating the release credits nothing more.
    staff(&s, &ada.secret, Method::POST, &path, Some(body))
        .await
        .expect(200);
    scan(&s).await;
    assert_eq!(credited(&s, &wid).await, "45.000000");
    let audit = audit_actions(&s).await;
    assert!(
        audit.contains(&(
            "quarantine.release".to_string(),
            ada.account.id.clone(),
            id.clone()
        )),
        "{audit:?}"
    );
    assert!(
        audit.contains(&(
            "quarantine.release.proposed".to_string(),
            "admin-token".to_string(),
            id.clone()
        )),
        "{audit:?}"
    );
    s.app.state().webhooks.round().await.unwrap();
    let statuses: Vec<Value> = got
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| serde_json::from_slice::<Value>(b).unwrap()["status"].clone())
        .collect();
    assert_eq!(statuses, [json!("held"), json!("released")]);

    // Another deposit from the same sender: quarantined, then returned.
    deposit(&s, LISTED, &addr, "7").await;
    let held = quarantined(&s, "?status=held").await;
    assert_eq!(held["total"], 1, "{held}");
    let id2 = held["quarantined_deposits"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ret = format!("/admin/v1/quarantined-deposits/{id2}/return");
    // Back to the listed sender is paying it: refused, audited.
    staff(
        &s,
        ADMIN,
        Method::POST,
        &ret,
        Some(r#"{"reason":"send it back"}"#),
    )
    .await
    .expect_err(403, "SCREENING_HIT");
    // Staff name where compliance directs it.
    let dest = format!("0x{}", "4d".repeat(20));
    let r = staff(
        &s,
        ADMIN,
        Method::POST,
        &ret,
        Some(&json!({"reason": "to the blocked-funds account", "to": dest}).to_string()),
    )
    .await;
    r.expect(200);
    assert_eq!(r.json()["status"], "returning", "{}", r.text());
    // A release cannot follow a return.
    staff(
        &s,
        &ada.secret,
        Method::POST,
        &format!("/admin/v1/quarantined-deposits/{id2}/release"),
        Some(body),
    )
    .await
    .expect_err(409, "INVALID_STATE");
    run_returns(&s, &clock).await;
    let v = quarantined(&s, "?status=returned").await;
    assert_eq!(v["total"], 1, "{v}");
    assert_eq!(v["quarantined_deposits"][0]["owed"], "0.000000");
    let polygon = s.app.sim_rail(RailId::Evm(137)).unwrap();
    assert_eq!(
        polygon
            .balance(&ChainAddress(dest), Token::Usdc)
            .await
            .unwrap(),
        m("7")
    );
    assert_eq!(credited(&s, &wid).await, "45.000000", "never credited");
    // The wallet's address holds exactly what the ledger credits it, and it spends it.
    assert_eq!(polygon.balance(&addr, Token::Usdc).await.unwrap(), m("45"));
    send(&s, &t.live, B, "40").await.expect(202);
}

#[tokio::test]
async fn an_unanswered_screen_quarantines_when_closed_and_credits_audited_when_open() {
    for (mode, open) in [
        (FailModeSetting::Closed, false),
        (FailModeSetting::Open, true),
    ] {
        let s = start_with(config(mode)).await;
        let t = s.tenant("Acme", "0").await;
        let p = s.provision(&t.live, A).await;
        let addr = ChainAddress(p["address"].as_str().unwrap().into());
        let wid = p["wallet_id"].as_str().unwrap().to_string();
        deposit(&s, OUTAGE, &addr, "3").await;
        let list = quarantined(&s, "").await;
        let audit: Vec<String> = audit_actions(&s)
            .await
            .into_iter()
            .map(|a| a.0)
            .filter(|a| a.starts_with("screening."))
            .collect();
        if open {
            assert_eq!(credited(&s, &wid).await, "3.000000");
            assert_eq!(list["total"], 0, "{list}");
            assert_eq!(audit, ["screening.skipped"]);
        } else {
            assert_eq!(credited(&s, &wid).await, "0.000000");
            assert_eq!(list["total"], 1, "{list}");
            let q = &list["quarantined_deposits"][0]["quarantine"];
            assert_eq!(q["cause"], "unavailable", "{q}");
            assert!(q["reason"].as_str().unwrap().contains("test outage"), "{q}");
            assert_eq!(audit, ["screening.quarantine"]);
        }
    }
}
