//! The tenant's approver key (issue #51, the two-person rule's tenant side) over real
//! HTTP on loopback: staff issue it; it opens nothing a tenant key opens (so it never
//! makes the request it approves) and a tenant key does not approve; it lists the
//! tenant's held requests and approves one, which is carried out once and audited as by
//! the key; of concurrent approvals exactly one wins; another tenant's approver sees
//! nothing of it. The workers do not run here: an accepted withdrawal stays in flight.

use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::ids::WalletId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::RailId;
use stablecoin_server::config::Secret;

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
const A: &str = "+2250700000501";

fn config() -> stablecoin_server::Config {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    c
}

async fn admin(s: &Server, method: reqwest::Method, path: &str) -> Resp {
    let auth = format!("Bearer {ADMIN}");
    let body = (method == reqwest::Method::POST).then_some("{}");
    s.send(method, path, None, body, &[("Authorization", &auth)])
        .await
}

/// Staff issue `tenant` an approver key: its secret and id.
async fn approver_key(s: &Server, tenant: &str) -> (String, String) {
    let r = admin(
        s,
        reqwest::Method::POST,
        &format!("/admin/v1/tenants/{tenant}/approver-keys"),
    )
    .await;
    r.expect(201);
    assert_eq!(
        r.headers.get("cache-control").unwrap(),
        "no-store",
        "the secret is not cached"
    );
    let v = r.json();
    (
        v["api_key"].as_str().unwrap().to_string(),
        v["key_id"].as_str().unwrap().to_string(),
    )
}

async fn withdraw(s: &Server, key: &str, amount: &str) -> Resp {
    let body = json!({"phone_number": A, "token": "USDC", "amount": amount,
        "payout_currency": "XOF"});
    s.post(key, "/v1/users/withdraw", &body.to_string()).await
}

async fn available(s: &Server, wallet: &WalletId) -> String {
    let e = s.app.engine();
    let acct = e.wallet_account(wallet, RailId::Evm(137), Token::Usdc);
    let b = e.ports().ledger.balance(&acct.id).await.unwrap();
    Micros(u64::try_from(b.available()).unwrap()).to_decimal_string()
}

/// A funded tenant with an approval threshold of 10: (tenant id, its live key, A's wallet).
async fn tenant(s: &Server, name: &str) -> (String, String, WalletId) {
    let t = s.tenant(name, "1000").await;
    let w = s.provision(&t.live, A).await;
    s.fund_settled(&t.live, A, "100").await;
    s.post(
        &t.live,
        "/v1/policies",
        &json!({"approval_threshold": "10"}).to_string(),
    )
    .await
    .expect(201);
    (
        t.id.0.clone(),
        t.live,
        WalletId(w["wallet_id"].as_str().unwrap().into()),
    )
}

/// A withdrawal held for approval: its approval id.
async fn held(s: &Server, key: &str, amount: &str) -> String {
    let r = withdraw(s, key, amount).await;
    r.expect_err(403, "APPROVAL_REQUIRED");
    r.json()["error"]["approval_id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn approve(s: &Server, key: &str, id: &str) -> Resp {
    s.post(key, &format!("/v1/policy-approvals/{id}/approve"), "{}")
        .await
}

async fn audit(s: &Server) -> Vec<Value> {
    let r = admin(s, reqwest::Method::GET, "/admin/v1/audit").await;
    r.expect(200);
    r.json()["entries"].as_array().unwrap().clone()
}

#[tokio::test]
async fn an_approver_key_approves_a_held_withdrawal_once_and_opens_nothing_else() {
    let s = start_with(config()).await;
    let (tenant_id, key, wallet) = tenant(&s, "Two Person Fintech").await;
    let (approver, approver_id) = approver_key(&s, &tenant_id).await;
    let id = held(&s, &key, "25").await;

    // The approver key opens no tenant route: it cannot make or change a request.
    withdraw(&s, &approver, "25")
        .await
        .expect_err(403, "KEY_OUT_OF_SCOPE");
    s.get(&approver, "/v1/policies")
        .await
        .expect_err(403, "KEY_OUT_OF_SCOPE");
    s.post(
        &approver,
        "/v1/policies",
        &json!({"max_per_transaction": "1"}).to_string(),
    )
    .await
    .expect_err(403, "KEY_OUT_OF_SCOPE");
    // Nor the dashboard.
    let mut c = crate::common::console::Console::new(&s.base);
    let page = c.get("/dashboard/login").await;
    let r = c
        .post(
            "/dashboard/login",
            &[("csrf", &page.csrf()), ("api_key", &approver)],
        )
        .await;
    assert_ne!(r.status, 303, "an approver key opens no dashboard session");
    // A tenant key (the requester's kind) does not approve, nor list.
    approve(&s, &key, &id)
        .await
        .expect_err(403, "KEY_OUT_OF_SCOPE");
    s.get(&key, "/v1/policy-approvals")
        .await
        .expect_err(403, "KEY_OUT_OF_SCOPE");
    assert_eq!(available(&s, &wallet).await, "100.000000", "nothing held");

    // The approver lists the pending request...
    let list = s.get(&approver, "/v1/policy-approvals").await;
    list.expect(200);
    let v = list.json();
    assert_eq!(v["total"], 1);
    assert_eq!(v["approvals"][0]["id"], id.as_str());
    assert_eq!(v["approvals"][0]["status"], "PENDING");
    assert_eq!(v["approvals"][0]["amount"], "25.000000");
    s.get(&approver, "/v1/policy-approvals?status=DONE")
        .await
        .expect_err(400, "INVALID_PARAMETER");

    // ... and approves it: carried out now, once, audited as by the key.
    let ok = approve(&s, &approver, &id).await;
    ok.expect(200);
    let a = ok.json();
    assert_eq!(a["status"], "APPROVED");
    assert_eq!(a["approved_by"], format!("key:{approver_id}"));
    let wd = a["operation_id"].as_str().unwrap().to_string();
    assert!(wd.starts_with("wd_"), "{a}");
    s.get(&key, &format!("/v1/withdrawals/{wd}"))
        .await
        .expect(200);
    assert_eq!(available(&s, &wallet).await, "75.000000");
    approve(&s, &approver, &id)
        .await
        .expect_err(409, "INVALID_STATE");
    assert_eq!(
        available(&s, &wallet).await,
        "75.000000",
        "carried out once"
    );
    let entries = audit(&s).await;
    let approvals: Vec<&Value> = entries
        .iter()
        .filter(|e| e["action"] == "policy.approve" && e["target"] == id.as_str())
        .collect();
    assert_eq!(approvals.len(), 1, "{entries:?}");
    assert_eq!(approvals[0]["staff_id"], format!("key:{approver_id}"));
    assert!(
        entries
            .iter()
            .any(|e| e["action"] == "approver_key.issue" && e["target"] == approver_id.as_str()),
        "the issue is audited"
    );
    let pending = s.get(&approver, "/v1/policy-approvals").await.json();
    assert_eq!(pending["total"], 0);
    let done = s
        .get(&approver, "/v1/policy-approvals?status=APPROVED")
        .await
        .json();
    assert_eq!(done["approvals"][0]["operation_id"], wd.as_str());

    // Another tenant's approver sees none of it.
    let other_tenant = s.tenant("Other Fintech", "0").await;
    let (other, _) = approver_key(&s, &other_tenant.id.0).await;
    let id2 = held(&s, &key, "30").await;
    approve(&s, &other, &id2).await.expect_err(404, "NOT_FOUND");
    assert_eq!(
        s.get(&other, "/v1/policy-approvals").await.json()["total"],
        0
    );
    // Revoked, the key approves nothing.
    s.app
        .engine()
        .revoke_api_key(
            &stablecoin_core::domain::ids::TenantId(tenant_id),
            &stablecoin_core::domain::ids::ApiKeyId(approver_id),
        )
        .await
        .unwrap();
    approve(&s, &approver, &id2)
        .await
        .expect_err(401, "API_KEY_REVOKED");
    assert_eq!(available(&s, &wallet).await, "75.000000");
}

#[tokio::test]
async fn of_concurrent_approvals_exactly_one_carries_the_request_out() {
    let s = start_with(config()).await;
    let (tenant_id, key, wallet) = tenant(&s, "Race Fintech").await;
    let (approver, _) = approver_key(&s, &tenant_id).await;
    let (approver2, _) = approver_key(&s, &tenant_id).await;
    let id = held(&s, &key, "40").await;
    let tries = (0..6).map(|i| {
        let k = if i % 2 == 0 { &approver } else { &approver2 };
        approve(&s, k, &id)
    });
    let results = futures_util::future::join_all(tries).await;
    let won = results.iter().filter(|r| r.status == 200).count();
    for r in &results {
        assert!(
            r.status == 200 || (r.status == 409 && r.code() == "INVALID_STATE"),
            "{}",
            r.text()
        );
    }
    assert_eq!(won, 1, "one approval wins");
    assert_eq!(
        available(&s, &wallet).await,
        "60.000000",
        "carried out once"
    );
    let approvals = audit(&s)
        .await
        .iter()
        .filter(|e| e["action"] == "policy.approve")
        .count();
    assert_eq!(approvals, 1, "one approval audited");
}
