//! A switch of payout provider while a withdrawal's payout is in flight (issue #44):
//! the provider that took it is recorded on its payout leg, and no other provider (not
//! `disabled`, not the simulated one, not another account) ever completes or refunds
//! it. It stays in flight until that provider answers or a named staff member resolves
//! it, audited. Over real HTTP on loopback, with the M-Pesa fake as its own server and
//! the server restarted on the same SQLite database.

use crate::common::{self, Server};
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_providers::testkit::FakeMpesa;
use stablecoin_server::App;
use stablecoin_server::config::{Config, PayoutSettings, Secret, StorageConfig};
use std::path::Path;
use std::time::Duration;

const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";
const PHONE: &str = "+254708374149";

fn config(dir: &Path, payouts: PayoutSettings) -> Config {
    let mut c = common::test_config();
    c.data_dir = dir.to_path_buf();
    c.storage = StorageConfig::Sqlite {
        path: None,
        max_background: 4,
    };
    c.admin.token = Some(Secret::new(ADMIN_TOKEN));
    c.payouts = payouts;
    c
}

fn mpesa(fake: &FakeMpesa, base: &str) -> PayoutSettings {
    PayoutSettings::Mpesa {
        base_url: fake.base_url().into(),
        consumer_key: "ck".into(),
        consumer_secret: Secret::new("cs"),
        initiator_name: "testapi".into(),
        security_credential: Secret::new("ENC=="),
        shortcode: "600000".into(),
        command_id: "BusinessPayment".into(),
        callback_base_url: base.into(),
        callback_secret: Secret::new("callback-secret-0123456789abcdef-0123"),
        timeout_ms: 500,
        result_wait_ms: 1_000,
    }
}

async fn read(s: &Server, key: &str, id: &str) -> Value {
    let r = s.get(key, &format!("/v1/withdrawals/{id}")).await;
    r.expect(200);
    r.json()
}

async fn staff_post(s: &Server, bearer: &str, path: &str, body: &Value) -> common::Resp {
    let auth = format!("Bearer {bearer}");
    let body = body.to_string();
    s.send(
        Method::POST,
        path,
        None,
        Some(&body),
        &[("Authorization", &auth)],
    )
    .await
}

/// A withdrawal M-Pesa holds (pending) when the operator restarts the server with
/// another provider (the simulated one), then with `payouts.kind = "disabled"`, on the
/// same database: ticks never complete or refund it (the old code's simulated stand-in
/// "delivered" it, and nobody was paid). M-Pesa then
/// pays it; staff, having checked, mark it COMPLETED with M-Pesa's receipt and a
/// reason; the shared admin token may not decide; the audit log names the staff member.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payout_in_flight_survives_a_switch_to_disabled_until_staff_resolve_it() {
    let dir = common::temp_dir("payout-switch");
    let fake = FakeMpesa::start("ck", "cs", "testapi", "ENC==")
        .await
        .unwrap();
    fake.set_hold(true);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut s = common::serve_on(
        App::build(config(&dir, mpesa(&fake, &base)))
            .await
            .expect("app builds"),
        listener,
    )
    .await;
    let t = s.tenant("Acme", "100").await;
    s.provision(&t.live, PHONE).await;
    let f = s.fund_settled(&t.live, PHONE, "50").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    let body = json!({"phone_number": PHONE, "token": "USDC", "amount": "10",
        "payout_currency": "KES"});
    let r = s
        .post(&t.live, "/v1/users/withdraw", &body.to_string())
        .await;
    r.expect(202);
    let id = r.json()["id"].as_str().unwrap().to_string();
    // Swept, then submitted to M-Pesa, which holds it pending.
    let mut w = Value::Null;
    for _ in 0..200 {
        s.app.engine().tick().await;
        w = read(&s, &t.live, &id).await;
        if fake.payments().len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(fake.payments().len(), 1, "M-Pesa took it: {w}");
    s.shutdown().await;
    drop(s);

    // Another provider first: the simulated one (which "delivers" whatever it is asked
    // about) never answers for M-Pesa's payout.
    let mut s = common::serve(
        App::build(config(&dir, PayoutSettings::Simulated))
            .await
            .expect("app builds"),
    )
    .await;
    for _ in 0..10 {
        s.app.engine().tick().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let w = read(&s, &t.live, &id).await;
    assert!(
        ["PAYOUT_SUBMITTING", "PAYOUT_UNKNOWN"].contains(&w["status"].as_str().unwrap()),
        "another provider never settles it: {w}"
    );
    s.shutdown().await;
    drop(s);

    // The operator switches payouts off; same database.
    let s = common::serve(
        App::build(config(&dir, PayoutSettings::Disabled))
            .await
            .expect("app builds"),
    )
    .await;
    for _ in 0..10 {
        s.app.engine().tick().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let w = read(&s, &t.live, &id).await;
    assert!(
        ["PAYOUT_SUBMITTING", "PAYOUT_UNKNOWN"].contains(&w["status"].as_str().unwrap()),
        "still in flight: {w}"
    );
    assert!(w.get("payout_reference").is_none_or(Value::is_null), "{w}");
    assert_eq!(fake.paid_count(&id), 0, "nobody paid yet");
    // New withdrawals are refused, as `disabled` documents.
    s.post(&t.live, "/v1/users/withdraw", &body.to_string())
        .await
        .expect_err(503, "WITHDRAWALS_UNAVAILABLE");

    // M-Pesa pays it after all; staff see it on Daraja's portal and decide.
    fake.complete_held();
    assert_eq!(fake.paid_count(&id), 1);
    let path = format!("/admin/v1/withdrawals/{id}/payout/resolve");
    let decision = json!({"outcome": "completed", "reference": "SIM-PORTAL-1",
        "reason": "Daraja portal shows the payment to 254708374149, receipt SIM-PORTAL-1"});
    // The shared token says nobody in particular: refused.
    staff_post(&s, ADMIN_TOKEN, &path, &decision)
        .await
        .expect_err(400, "INVALID_PARAMETER");
    let ada = s.app.engine().create_staff("ada").await.unwrap();
    // A decision needs its reason, and `completed` its reference.
    staff_post(
        &s,
        &ada.secret,
        &path,
        &json!({"outcome": "completed", "reason": "paid"}),
    )
    .await
    .expect_err(400, "MISSING_PARAMETER");
    staff_post(
        &s,
        &ada.secret,
        &path,
        &json!({"outcome": "refunded", "reason": " "}),
    )
    .await
    .expect_err(400, "INVALID_PARAMETER");
    let r = staff_post(&s, &ada.secret, &path, &decision).await;
    r.expect(200);
    assert_eq!(r.json()["status"], "COMPLETED", "{}", r.text());
    let w = read(&s, &t.live, &id).await;
    assert_eq!(w["status"], "COMPLETED");
    assert_eq!(w["payout_reference"], "SIM-PORTAL-1");
    // Decided once: a second decision is refused.
    staff_post(&s, &ada.secret, &path, &decision)
        .await
        .expect_err(409, "INVALID_STATE");
    // The audit log says who, what, to what and why.
    let auth = format!("Bearer {ADMIN_TOKEN}");
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
    let entries = r.json()["entries"].as_array().unwrap().clone();
    let e = entries
        .iter()
        .find(|e| e["action"] == "withdrawal.payout.complete")
        .unwrap_or_else(|| panic!("audited: {entries:?}"));
    assert_eq!(e["staff_id"], ada.account.id.as_str());
    assert_eq!(e["target"], id.as_str());
    assert!(
        e["note"].as_str().unwrap().contains("Daraja portal shows"),
        "{e}"
    );
    // Nothing else moves it, and nothing was paid twice.
    for _ in 0..3 {
        s.app.engine().tick().await;
    }
    assert_eq!(read(&s, &t.live, &id).await["status"], "COMPLETED");
    assert_eq!(fake.paid_count(&id), 1);
}
