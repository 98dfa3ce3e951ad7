//! Sponsorship budgets (issue #51 item 4) over real HTTP on loopback, on the simulated
//! chain (whose confirmed payments report what they cost the service, `SimCosts`):
//! staff set a daily budget; sends settle until it is spent; the next send is refused
//! 429 SPONSORSHIP_BUDGET_EXCEEDED with nothing held; the spend the tenant reads is the
//! sum of the costs the rail reported; an idempotent replay counts nothing; the next UTC
//! day lets sends through again; a tenant without budgets is never metered.

use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::ids::WalletId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::sponsorship::{Period, period_end};
use stablecoin_core::ports::SubmissionStatus;
use stablecoin_server::config::Secret;

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
const A: &str = "+2250700000301";
const B: &str = "+2250700000302";

fn config() -> stablecoin_server::Config {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    c
}

async fn admin(s: &Server, method: reqwest::Method, path: &str, body: Option<&str>) -> Resp {
    let auth = format!("Bearer {ADMIN}");
    s.send(method, path, None, body, &[("Authorization", &auth)])
        .await
}

/// A wallet's available USDC on the primary chain.
async fn available(s: &Server, w: &WalletId) -> Micros {
    let e = s.app.engine();
    let rail = e.evm_rail().unwrap().id();
    let acct = e.wallet_account(w, rail, Token::Usdc);
    let b = e.ports().ledger.balance(&acct.id).await.unwrap();
    Micros(u64::try_from(b.available()).unwrap())
}

/// What the rail reported the confirmed payment `id` cost, in native units.
async fn reported_cost(s: &Server, id: &str) -> u128 {
    let rail = s.app.engine().evm_rail().unwrap().clone();
    match rail.status(id).await.unwrap() {
        SubmissionStatus::Confirmed {
            cost: Some(cost), ..
        } => cost.native,
        other => panic!("{id} is not confirmed with a cost: {other:?}"),
    }
}

async fn send(s: &Server, key: &str, idem: &str) -> Resp {
    let body = json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
        "quote_id": "DIRECT_CRYPTO:USDC:1"});
    s.post_idem(key, "/v1/transfers/send", &body.to_string(), idem)
        .await
}

async fn budgets(s: &Server, key: &str) -> Vec<Value> {
    let r = s.get(key, "/v1/sponsorship-budgets").await;
    r.expect(200);
    r.json()["sponsorship_budgets"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_spent_budget_refuses_the_next_send_until_the_next_utc_day() {
    let (s, clock) = start_shifted(config()).await;
    let t = s.tenant("Budget Fintech", "1000").await;
    let a = s.provision(&t.live, A).await;
    let wa = WalletId(a["wallet_id"].as_str().unwrap().into());
    s.provision(&t.live, B).await;
    let f = s.fund_settled(&t.live, A, "50").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    let rail = s.app.engine().evm_rail().unwrap().id().name();
    // Nothing is metered before staff set a budget (the funding above was not).
    assert!(budgets(&s, &t.live).await.is_empty());

    // The cost of one send on the simulated chain, as its rail reports it, caps the day
    // at three sends.
    let per_send = s
        .app
        .sim_rail(s.app.engine().evm_rail().unwrap().id())
        .unwrap()
        .costs()
        .native_per_payment;
    assert!(per_send > 0);
    let cap = 3 * per_send;
    let path = format!("/admin/v1/tenants/{}/sponsorship-budgets", t.id.0);
    let body = json!({"rail": rail, "daily": {"native": cap.to_string()}});
    let r = admin(&s, reqwest::Method::POST, &path, Some(&body.to_string())).await;
    r.expect(200);
    assert_eq!(r.json()["daily"]["native"], cap.to_string());
    assert_eq!(r.json()["spent_today"]["native"], "0");
    // A tenant key cannot set its own budget.
    let mine = s
        .send(
            reqwest::Method::POST,
            &path,
            Some(&t.live),
            Some(&body.to_string()),
            &[],
        )
        .await;
    assert!(mine.status == 401 || mine.status == 403, "{}", mine.text());

    let mut sent = Vec::new();
    for i in 0..3 {
        let r = send(&s, &t.live, &format!("budget-send-{i}")).await;
        r.expect(202);
        sent.push(r.json()["id"].as_str().unwrap().to_string());
        s.settle().await;
    }
    // A replay of a settled send answers it again and meters nothing more; settling
    // again (a confirmation polled twice) meters nothing either.
    let replay = send(&s, &t.live, "budget-send-0").await;
    replay.expect(202);
    assert_eq!(
        replay.header("idempotent-replayed").as_deref(),
        Some("true")
    );
    s.settle().await;

    let mut reported = 0u128;
    for id in &sent {
        let op = s.get(&t.live, &format!("/v1/transfers/{id}")).await;
        assert_eq!(op.json()["status"], "SETTLED", "{}", op.text());
        reported += reported_cost(&s, id).await;
    }
    let b = budgets(&s, &t.live).await;
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!(b[0]["rail"], rail.as_str());
    assert_eq!(b[0]["spent_today"]["native"], reported.to_string());
    assert_eq!(b[0]["spent_this_month"]["native"], reported.to_string());
    assert_eq!(b[0]["payments_metered"], 3);

    // The fourth is refused before anything is held: the balance does not move.
    let before = available(&s, &wa).await;
    let refused = send(&s, &t.live, "budget-send-3").await;
    refused.expect_err(429, "SPONSORSHIP_BUDGET_EXCEEDED");
    let detail = &refused.json()["error"]["sponsorship_budget"];
    assert_eq!(detail["rail"], rail.as_str());
    assert_eq!(detail["period"], "day");
    assert_eq!(detail["resource"], "native");
    assert_eq!(detail["cap"], cap.to_string());
    assert_eq!(detail["spent"], reported.to_string());
    let retry: i64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=86_400).contains(&retry), "{retry}");
    assert_eq!(available(&s, &wa).await, before);
    s.settle().await;
    assert_eq!(available(&s, &wa).await, before);
    // `/metrics` exports the spend and the cap of the tenant's rail.
    let metrics = s
        .send(reqwest::Method::GET, "/metrics", None, None, &[])
        .await;
    metrics.expect(200);
    let labels = format!(
        "{{tenant=\"{}\",rail=\"{rail}\",period=\"day\",resource=\"native\"}}",
        t.id.0
    );
    let text = metrics.text();
    assert!(
        text.contains(&format!(
            "stablecoin_sponsorship_spent{labels} {reported}\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("stablecoin_sponsorship_cap{labels} {cap}\n")),
        "{text}"
    );
    // Staff read the same budget.
    let staff = admin(&s, reqwest::Method::GET, &path, None).await;
    staff.expect(200);
    assert_eq!(
        staff.json()["sponsorship_budgets"][0]["spent_today"]["native"],
        reported.to_string()
    );
    // The change is in the staff audit log.
    let audit = admin(&s, reqwest::Method::GET, "/admin/v1/audit", None).await;
    audit.expect(200);
    assert!(
        audit.json()["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "sponsorship_budget.set" && e["staff_id"] == "admin-token"),
        "{}",
        audit.text()
    );

    // The next UTC day starts the daily spend over: the same send goes through.
    let now = s.app.engine().ports().clock.now();
    clock.advance_ms(period_end(Period::Day, now).millis() - now.millis() + 1_000);
    let r = send(&s, &t.live, "budget-send-4").await;
    r.expect(202);
    s.settle().await;
    let b = budgets(&s, &t.live).await;
    assert_eq!(b[0]["payments_metered"], 4);
    let mut today = vec![r.json()["id"].as_str().unwrap().to_string()];
    // Two sends in flight together settle in one worker round: both are metered (one
    // budget update for the two), neither is lost.
    for i in 5..7 {
        let r = send(&s, &t.live, &format!("budget-send-{i}")).await;
        r.expect(202);
        today.push(r.json()["id"].as_str().unwrap().to_string());
    }
    s.settle().await;
    let mut reported = 0u128;
    for id in &today {
        reported += reported_cost(&s, id).await;
    }
    let b = budgets(&s, &t.live).await;
    assert_eq!(b[0]["payments_metered"], 6);
    assert_eq!(b[0]["spent_today"]["native"], reported.to_string());
    send(&s, &t.live, "budget-send-7")
        .await
        .expect_err(429, "SPONSORSHIP_BUDGET_EXCEEDED");
}

#[tokio::test]
async fn staff_refuse_bad_budgets_and_other_tenants_are_not_metered() {
    let s = start_with(config()).await;
    let t = s.tenant("Unbudgeted", "1000").await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    s.fund_settled(&t.live, A, "5").await;
    s.send_usdc(&t.live, A, B, "1").await;
    s.settle().await;
    // No budget: nothing metered, nothing stored.
    assert!(budgets(&s, &t.live).await.is_empty());

    let rail = s.app.engine().evm_rail().unwrap().id().name();
    let path = format!("/admin/v1/tenants/{}/sponsorship-budgets", t.id.0);
    let post = |b: Value| {
        let s = &s;
        let path = path.clone();
        async move { admin(s, reqwest::Method::POST, &path, Some(&b.to_string())).await }
    };
    post(json!({"rail": "dogecoin"}))
        .await
        .expect_err(400, "INVALID_PARAMETER");
    let r = post(json!({"rail": rail, "daily": {"energy": "-1"}})).await;
    r.expect_err(400, "INVALID_PARAMETER");
    assert_eq!(r.param().as_deref(), Some("daily.energy"));
    post(json!({"rail": rail, "weekly": {}}))
        .await
        .expect_err(400, "UNKNOWN_FIELD");
    let unknown = admin(
        &s,
        reqwest::Method::POST,
        "/admin/v1/tenants/ten_nobody/sponsorship-budgets",
        Some(&json!({"rail": rail}).to_string()),
    )
    .await;
    unknown.expect_err(404, "NOT_FOUND");
    // Without the admin token: 401.
    let anon = s
        .send(
            reqwest::Method::POST,
            &path,
            None,
            Some(&json!({"rail": rail}).to_string()),
            &[],
        )
        .await;
    assert_eq!(anon.status, 401, "{}", anon.text());
}
