//! The escrow staff routes (`/admin/v1/escrows`, `/admin/v1/audit`) over real HTTP on
//! loopback: staff accounts and the admin token, the cross-tenant attention list, dispute
//! resolution to settlement, recoveries, the two-person rule and the audit log.
//! Deposits are made on the simulated TRON chain; the escrow workers are driven by the
//! test.

use crate::common::*;
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{ChainAddress, RailId};

const BUYER: &str = "+2250700000001";
const SELLER: &str = "+2250700000002";
const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";

async fn staff_send(
    s: &Server,
    method: Method,
    path: &str,
    bearer: &str,
    body: Option<&str>,
) -> Resp {
    let auth = format!("Bearer {bearer}");
    s.send(method, path, None, body, &[("Authorization", &auth)])
        .await
}

async fn staff_get(s: &Server, bearer: &str, path: &str) -> Resp {
    staff_send(s, Method::GET, path, bearer, None).await
}

async fn staff_post(s: &Server, bearer: &str, path: &str, body: &str) -> Resp {
    staff_send(s, Method::POST, path, bearer, Some(body)).await
}

async fn settle(s: &Server) {
    s.settle_escrows().await;
}

async fn pay(s: &Server, escrow: &Value, base_units: u64) {
    let tron = s.app.sim_rail(RailId::Tron).expect("sim TRON");
    tron.mint(
        &ChainAddress(escrow["escrow_address"].as_str().unwrap().into()),
        Token::Usdt,
        Micros(base_units),
    )
    .unwrap();
    settle(s).await;
}

/// The party phones of the tenant named `name` (a wallet is one phone's; each tenant
/// here provisions its own two).
fn phones(name: &str) -> (&'static str, &'static str) {
    if name == "Beta" {
        ("+2250700000003", "+2250700000004")
    } else {
        (BUYER, SELLER)
    }
}

/// A tenant with the two party wallets.
async fn tenant(s: &Server, name: &str) -> (Tenant, &'static str) {
    let t = s.tenant(name, "0").await;
    let (buyer, seller) = phones(name);
    s.provision(&t.live, buyer).await;
    s.provision(&t.live, seller).await;
    (t, name_of(name))
}

fn name_of(name: &str) -> &'static str {
    if name == "Beta" { "Beta" } else { "Acme" }
}

async fn create(s: &Server, t: &(Tenant, &'static str), amount: &str) -> Value {
    let (buyer, seller) = phones(t.1);
    let body = json!({"buyer_phone_number": buyer, "seller_phone_number": seller,
        "amount": amount, "reference": "order-1"})
    .to_string();
    let r = s.post(&t.0.live, "/v1/escrows", &body).await;
    r.expect(201);
    r.json()
}

/// A funded, then DISPUTED deal of `t`.
async fn disputed(s: &Server, t: &(Tenant, &'static str), whole: u64) -> String {
    let e = create(s, t, &whole.to_string()).await;
    pay(s, &e, whole * 1_000_000).await;
    let id = e["id"].as_str().unwrap().to_string();
    s.post(
        &t.0.live,
        &format!("/v1/escrows/{id}/dispute"),
        r#"{"reason":"goods damaged","on_behalf_of":"BUYER"}"#,
    )
    .await
    .expect(200);
    id
}

fn config(second_approval_above: Option<&str>) -> stablecoin_server::Config {
    let mut c = test_config();
    c.admin.token = Some(stablecoin_server::config::Secret::new(ADMIN_TOKEN));
    c.admin.second_approval_above = second_approval_above.map(str::to_string);
    c
}

fn resolve_body(resolution: &str, note: &str) -> String {
    json!({"resolution": resolution, "resolution_note": note}).to_string()
}

#[tokio::test]
async fn staff_resolve_a_dispute_of_any_tenant_and_the_audit_log_says_who_and_why() {
    let s = start_with(config(None)).await;
    let acme = tenant(&s, "Acme").await;
    let beta = tenant(&s, "Beta").await;
    let ada = s.app.engine().create_staff("Ada").await.unwrap();
    let staff = ada.secret.as_str();
    let id = disputed(&s, &acme, 60).await;
    let other = disputed(&s, &beta, 10).await;
    // A quiet funded deal is not listed.
    let quiet = create(&s, &acme, "5").await;
    pay(&s, &quiet, 5_000_000).await;

    // The attention list: both tenants' disputes, newest first, with their tenants.
    let r = staff_get(&s, staff, "/admin/v1/escrows").await;
    r.expect(200);
    let l = r.json();
    assert_eq!(
        (l["limit"].as_u64(), l["page"].as_u64(), l["total"].as_u64()),
        (Some(20), Some(1), Some(2))
    );
    let rows = l["escrows"].as_array().unwrap();
    assert_eq!(rows[0]["escrow"]["id"], other);
    assert_eq!(rows[0]["tenant_id"], beta.0.id.0);
    assert_eq!(rows[1]["escrow"]["id"], id.as_str());
    assert_eq!(rows[1]["tenant_id"], acme.0.id.0);
    assert_eq!(rows[1]["escrow"]["state"], "DISPUTED");
    assert_eq!(rows[1]["needs_attention"], true);
    staff_get(&s, staff, "/admin/v1/escrows?limit=0")
        .await
        .expect_err(400, "INVALID_PARAMETER");
    staff_get(&s, staff, "/admin/v1/escrows?colour=red")
        .await
        .expect_err(400, "INVALID_QUERY");

    // Credentials: an API key is 403, nothing or a wrong secret 401.
    s.get(&acme.0.live, "/admin/v1/escrows")
        .await
        .expect_err(403, "KEY_KIND_NOT_ALLOWED");
    s.send(Method::GET, "/admin/v1/escrows", None, None, &[])
        .await
        .expect_err(401, "ADMIN_TOKEN_REQUIRED");
    let unknown = format!("stf_sk_{}", "a".repeat(32));
    staff_get(&s, &unknown, "/admin/v1/escrows")
        .await
        .expect_err(401, "ADMIN_TOKEN_REQUIRED");
    staff_get(&s, "not-the-token", "/admin/v1/audit")
        .await
        .expect_err(401, "ADMIN_TOKEN_REQUIRED");

    // The deal in full.
    let r = staff_get(&s, staff, &format!("/admin/v1/escrows/{id}")).await;
    r.expect(200);
    let d = r.json();
    assert_eq!(d["tenant_id"], acme.0.id.0);
    assert_eq!(d["escrow"]["dispute_reason"], "goods damaged");
    assert_eq!(d["accounting"][0]["token"], "USDT");
    assert_eq!(d["accounting"][0]["held"], "60000000");
    assert_eq!(d["payouts"].as_array().unwrap().len(), 0);
    staff_get(&s, staff, "/admin/v1/escrows/esc_nope")
        .await
        .expect_err(404, "NOT_FOUND");
    let r = staff_get(
        &s,
        staff,
        &format!("/admin/v1/escrows/{id}/events?limit=100"),
    )
    .await;
    r.expect(200);
    assert!(r.json()["total"].as_u64().unwrap() >= 3);

    // Resolving needs a note and a known resolution; nothing is written without them.
    let path = format!("/admin/v1/escrows/{id}/resolve");
    let before = s.commits();
    staff_post(&s, staff, &path, &resolve_body("RELEASE", " "))
        .await
        .expect_err(400, "MISSING_PARAMETER");
    staff_post(&s, staff, &path, r#"{"resolution":"RELEASE"}"#)
        .await
        .expect(400);
    staff_post(&s, staff, &path, &resolve_body("SPLIT", "half each"))
        .await
        .expect_err(400, "INVALID_PARAMETER");
    assert_eq!(s.commits(), before, "refused resolutions write nothing");
    // A tenant key cannot resolve.
    s.post(&acme.0.live, &path, &resolve_body("RELEASE", "mine"))
        .await
        .expect_err(403, "KEY_KIND_NOT_ALLOWED");

    let r = staff_post(
        &s,
        staff,
        &path,
        &resolve_body("RELEASE", "carrier proof of delivery checked"),
    )
    .await;
    r.expect(200);
    let out = r.json();
    assert_eq!(out["awaiting_approval"], false);
    assert_eq!(out["escrow"]["payout_pending"], true);
    staff_post(&s, staff, &path, &resolve_body("RELEASE", "again"))
        .await
        .expect_err(409, "PAYOUT_IN_FLIGHT");
    settle(&s).await;
    let r = s.get(&acme.0.live, &format!("/v1/escrows/{id}")).await;
    r.expect(200);
    assert_eq!(r.json()["state"], "RELEASED");
    assert_eq!(
        r.json()["resolution_note"],
        "carrier proof of delivery checked"
    );
    // The history names the staff account.
    let r = staff_get(
        &s,
        staff,
        &format!("/admin/v1/escrows/{id}/events?limit=100"),
    )
    .await;
    let events = r.json()["events"].as_array().unwrap().clone();
    let p = events
        .iter()
        .find(|e| e["event"] == "escrow.payout_pending")
        .unwrap();
    assert_eq!(p["authority"], format!("staff:{}", ada.account.id));

    // The admin token still works, as `admin-token`.
    let r = staff_post(
        &s,
        ADMIN_TOKEN,
        &format!("/admin/v1/escrows/{other}/resolve"),
        &resolve_body("REFUND", "seller unreachable"),
    )
    .await;
    r.expect(200);
    settle(&s).await;
    let r = s.get(&beta.0.live, &format!("/v1/escrows/{other}")).await;
    assert_eq!(r.json()["state"], "REFUNDED");
    let r = staff_get(&s, staff, "/admin/v1/escrows").await;
    assert_eq!(r.json()["total"], 0, "nothing needs staff any more");

    // The audit log: who, what, to what, why; newest first.
    let r = staff_get(&s, staff, "/admin/v1/audit").await;
    r.expect(200);
    let a = r.json();
    let all = a["entries"].as_array().unwrap();
    // The refused credentials above are audited as failed sign-ins, each credential's
    // first success as a sign-in (issue #44); the rest are the staff actions.
    let signins = all
        .iter()
        .filter(|e| e["action"] == "signin.admin_api" && e["staff_id"] == "unknown")
        .count();
    assert_eq!(signins, 2, "{a}");
    let entries: Vec<&Value> = all
        .iter()
        .filter(|e| e["action"] != "signin.admin_api")
        .collect();
    let got: Vec<(String, String, String)> = entries
        .iter()
        .map(|e| {
            (
                e["staff_id"].as_str().unwrap().to_string(),
                e["action"].as_str().unwrap().to_string(),
                e["target"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "admin-token".to_string(),
                "escrow.resolve".to_string(),
                other.clone()
            ),
            (
                ada.account.id.clone(),
                "escrow.resolve".to_string(),
                id.clone()
            ),
            (
                "cli".to_string(),
                "staff.create".to_string(),
                ada.account.id.clone()
            ),
        ]
    );
    assert_eq!(
        entries[1]["note"],
        "RELEASE: carrier proof of delivery checked"
    );

    // A disabled account is refused at once.
    s.app.engine().disable_staff(&ada.account.id).await.unwrap();
    staff_get(&s, staff, "/admin/v1/escrows")
        .await
        .expect_err(401, "STAFF_ACCOUNT_DISABLED");
}

#[tokio::test]
async fn staff_recover_an_excess_deposit() {
    let s = start_with(config(None)).await;
    let acme = tenant(&s, "Acme").await;
    let staff = s.app.engine().create_staff("Bo").await.unwrap().secret;
    let e = create(&s, &acme, "10").await;
    pay(&s, &e, 12_000_000).await;
    let id = e["id"].as_str().unwrap();
    let r = staff_get(&s, &staff, "/admin/v1/escrows").await;
    assert_eq!(r.json()["escrows"][0]["escrow"]["id"], id);
    let path = format!("/admin/v1/escrows/{id}/recoveries");
    staff_post(&s, &staff, &path, r#"{"kind":"EXCESS","note":" "}"#)
        .await
        .expect_err(400, "MISSING_PARAMETER");
    staff_post(&s, &staff, &path, r#"{"kind":"LATE","note":"x"}"#)
        .await
        .expect_err(409, "NOTHING_TO_RECOVER");
    let r = staff_post(
        &s,
        &staff,
        &path,
        r#"{"kind":"EXCESS","note":"buyer overpaid"}"#,
    )
    .await;
    r.expect(202);
    assert_eq!(r.json()["purpose"], "RECOVERY");
    assert_eq!(r.json()["amount"], "2000000");
    settle(&s).await;
    let r = staff_get(&s, &staff, &format!("/admin/v1/escrows/{id}")).await;
    assert_eq!(r.json()["payouts"][0]["status"], "CONFIRMED");
    assert_eq!(r.json()["accounting"][0]["excess"], "0");
    assert_eq!(r.json()["needs_attention"], false);
    let r = staff_get(&s, &staff, "/admin/v1/audit?limit=1").await;
    assert_eq!(r.json()["entries"][0]["action"], "escrow.recovery");
    // The account's creation, its first sign-in on /admin/v1 (issue #44), the recovery.
    assert_eq!(r.json()["total"], 3);
}

#[tokio::test]
async fn two_person_rule_above_the_configured_amount() {
    let s = start_with(config(Some("100.00"))).await;
    let acme = tenant(&s, "Acme").await;
    let a = s.app.engine().create_staff("Ada").await.unwrap();
    let b = s.app.engine().create_staff("Bo").await.unwrap();
    let id = disputed(&s, &acme, 150).await;
    let path = format!("/admin/v1/escrows/{id}/resolve");

    let r = staff_post(
        &s,
        &a.secret,
        &path,
        &resolve_body("REFUND", "seller did not ship"),
    )
    .await;
    r.expect(202);
    assert_eq!(r.json()["awaiting_approval"], true);
    assert_eq!(r.json()["proposed_by"], a.account.id.as_str());
    assert_eq!(r.json()["escrow"]["payout_pending"], false);
    let r = staff_get(&s, &b.secret, &format!("/admin/v1/escrows/{id}")).await;
    assert_eq!(
        r.json()["pending_resolution"]["proposed_by"],
        a.account.id.as_str()
    );
    // The proposer cannot approve; the other staff member cannot flip it.
    staff_post(&s, &a.secret, &path, &resolve_body("REFUND", "approve"))
        .await
        .expect_err(409, "SECOND_APPROVER_REQUIRED");
    staff_post(&s, &b.secret, &path, &resolve_body("RELEASE", "no"))
        .await
        .expect_err(409, "RESOLUTION_MISMATCH");
    // A different staff member approves: carried out with the proposer's note.
    let r = staff_post(&s, &b.secret, &path, &resolve_body("REFUND", "agreed")).await;
    r.expect(200);
    assert_eq!(r.json()["awaiting_approval"], false);
    assert_eq!(r.json()["proposed_by"], a.account.id.as_str());
    settle(&s).await;
    let r = s.get(&acme.0.live, &format!("/v1/escrows/{id}")).await;
    assert_eq!(r.json()["state"], "REFUNDED");
    assert_eq!(r.json()["resolution_note"], "seller did not ship");

    let r = staff_get(&s, ADMIN_TOKEN, "/admin/v1/audit").await;
    // Staff actions only (sign-ins are audited too, issue #44).
    let entries: Vec<Value> = r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] != "signin.admin_api")
        .cloned()
        .collect();
    assert_eq!(entries[0]["staff_id"], b.account.id.as_str());
    assert_eq!(entries[0]["action"], "escrow.resolve");
    assert_eq!(entries[1]["staff_id"], a.account.id.as_str());
    assert_eq!(entries[1]["action"], "escrow.resolve.proposed");
}

#[tokio::test]
async fn without_an_admin_token_only_staff_secrets_open_the_staff_routes() {
    let s = start().await;
    s.send(Method::GET, "/admin/v1/escrows", None, None, &[])
        .await
        .expect_err(404, "ADMIN_DISABLED");
    staff_get(&s, "whatever-token-0123456789abcdef0123", "/admin/v1/audit")
        .await
        .expect_err(404, "ADMIN_DISABLED");
    let staff = s.app.engine().create_staff("Ada").await.unwrap().secret;
    staff_get(&s, &staff, "/admin/v1/escrows").await.expect(200);
    staff_get(&s, &staff, "/admin/v1/audit").await.expect(200);
}

#[tokio::test]
async fn a_top_up_confirmed_with_a_staff_secret_records_the_staff_id() {
    let s = start_with(config(None)).await;
    let t = s.tenant("Acme", "0").await;
    let ada = s.app.engine().create_staff("Ada").await.unwrap();
    let r = s
        .post(
            &t.live,
            "/v1/treasury/topups",
            r#"{"currency_code":"XOF","fiat_amount":6000,"token":"USDC"}"#,
        )
        .await;
    r.expect(201);
    let id = r.json()["id"].as_str().unwrap().to_string();
    let r = staff_post(
        &s,
        &ada.secret,
        &format!("/admin/v1/topups/{id}/confirm"),
        r#"{"fiat_reference":"BANK-1"}"#,
    )
    .await;
    r.expect(200);
    assert_eq!(r.json()["confirmed_by"], ada.account.id.as_str());
}

/// The audit log's (staff id, action, target) rows, newest first.
async fn audit_rows(s: &Server) -> Vec<(String, String, String)> {
    let r = staff_get(s, ADMIN_TOKEN, "/admin/v1/audit?limit=100").await;
    r.expect(200);
    r.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["staff_id"].as_str().unwrap().to_string(),
                e["action"].as_str().unwrap().to_string(),
                e["target"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Issue #44: escrow resolutions and recoveries follow the two-person rule (the admin
/// token is one identity and never approves its own proposal) and each decision's audit
/// entry is written in the decision's own commit.
#[tokio::test]
async fn escrow_decisions_audit_in_their_own_commit_and_the_admin_token_never_approves_itself() {
    let s = start_with(config(Some("100.00"))).await;
    let acme = tenant(&s, "Acme").await;
    let ada = s.app.engine().create_staff("Ada").await.unwrap();
    let bo = s.app.engine().create_staff("Bo").await.unwrap();

    // A resolution above the threshold, proposed with the admin token (signed in once
    // first, with each credential: its first use from a source is audited on its own).
    let big = disputed(&s, &acme, 150).await;
    let path = format!("/admin/v1/escrows/{big}/resolve");
    for credential in [ADMIN_TOKEN, ada.secret.as_str(), bo.secret.as_str()] {
        staff_get(&s, credential, "/admin/v1/audit")
            .await
            .expect(200);
    }
    let before = s.commits();
    staff_post(
        &s,
        ADMIN_TOKEN,
        &path,
        &resolve_body("REFUND", "not shipped"),
    )
    .await
    .expect(202);
    assert_eq!(
        s.commits(),
        before + 1,
        "the proposal and its audit entry: one commit"
    );
    staff_post(&s, ADMIN_TOKEN, &path, &resolve_body("REFUND", "approve"))
        .await
        .expect_err(409, "SECOND_APPROVER_REQUIRED");
    assert_eq!(s.commits(), before + 1, "a refusal writes nothing");
    let before = s.commits();
    staff_post(&s, &ada.secret, &path, &resolve_body("REFUND", "agreed"))
        .await
        .expect(200);
    assert_eq!(
        s.commits(),
        before + 1,
        "the resolution and its audit entry: one commit"
    );

    // A recovery above the threshold: 10 USDT deal paid 210, 200 USDT of excess.
    let e = create(&s, &acme, "10").await;
    pay(&s, &e, 210_000_000).await;
    let id = e["id"].as_str().unwrap().to_string();
    let path = format!("/admin/v1/escrows/{id}/recoveries");
    let excess = r#"{"kind":"EXCESS","note":"buyer overpaid"}"#;
    let before = s.commits();
    let r = staff_post(&s, &bo.secret, &path, excess).await;
    r.expect(200);
    let p = &r.json()["pending_recovery"];
    assert_eq!(
        (
            p["kind"].as_str(),
            p["amount"].as_str(),
            p["proposed_by"].as_str()
        ),
        (
            Some("EXCESS"),
            Some("200000000"),
            Some(bo.account.id.as_str())
        )
    );
    assert_eq!(s.commits(), before + 1);
    staff_post(&s, &bo.secret, &path, excess)
        .await
        .expect_err(409, "SECOND_APPROVER_REQUIRED");
    staff_post(&s, &ada.secret, &path, r#"{"kind":"LATE","note":"x"}"#)
        .await
        .expect_err(409, "NOTHING_TO_RECOVER");
    let before = s.commits();
    let r = staff_post(
        &s,
        ADMIN_TOKEN,
        &path,
        r#"{"kind":"EXCESS","note":"checked"}"#,
    )
    .await;
    r.expect(202);
    assert_eq!(r.json()["amount"], "200000000");
    assert_eq!(
        r.json()["note"],
        "buyer overpaid",
        "the proposer's reason is paid out"
    );
    assert_eq!(
        s.commits(),
        before + 1,
        "the payout and its audit entry: one commit"
    );
    settle(&s).await;
    let r = staff_get(&s, &ada.secret, &format!("/admin/v1/escrows/{id}")).await;
    assert_eq!(r.json()["payouts"][0]["status"], "CONFIRMED");
    assert!(r.json().get("pending_recovery").is_none());

    // Under the threshold, one staff member decides, audited in the same commit.
    let small = disputed(&s, &acme, 20).await;
    let before = s.commits();
    staff_post(
        &s,
        ADMIN_TOKEN,
        &format!("/admin/v1/escrows/{small}/resolve"),
        &resolve_body("RELEASE", "delivered"),
    )
    .await
    .expect(200);
    assert_eq!(s.commits(), before + 1);

    let mut got = audit_rows(&s).await;
    got.retain(|r| r.1.starts_with("escrow."));
    got.sort();
    let row =
        |who: &str, what: &str, esc: &str| (who.to_string(), what.to_string(), esc.to_string());
    let mut want = vec![
        row("admin-token", "escrow.resolve.proposed", &big),
        row(&ada.account.id, "escrow.resolve", &big),
        row(&bo.account.id, "escrow.recovery.proposed", &id),
        row("admin-token", "escrow.recovery", &id),
        row("admin-token", "escrow.resolve", &small),
    ];
    want.sort();
    assert_eq!(got, want);
}
