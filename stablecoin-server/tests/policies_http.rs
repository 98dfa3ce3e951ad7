//! Spending policies and the address book (issue #51) over real HTTP on loopback: a
//! withdrawal over a per-transaction cap refused; the 24 h window counting operations
//! still in flight; a new destination refused until its cooling-off ends (first seen,
//! and through the address book); a request above the approval threshold held until a
//! staff member approves it, then carried out once; and the dry run answering, each
//! time, exactly what the real call then does. The workers do not run here, so every
//! accepted withdrawal stays in flight (its sweep held, not confirmed).

use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::ids::WalletId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::RailId;
use stablecoin_server::config::Secret;

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
const A: &str = "+2250700000201";
const B: &str = "+2250700000202";
const HOUR_MS: i64 = 3_600_000;

fn config() -> stablecoin_server::Config {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    c
}

/// A tenant with A (funded with `usdc`) and B provisioned: its live key and A's wallet.
async fn tenant(s: &Server, usdc: &str) -> (String, WalletId) {
    let t = s.tenant("Policy Fintech", "1000").await;
    let a = s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    let f = s.fund_settled(&t.live, A, usdc).await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    (t.live, WalletId(a["wallet_id"].as_str().unwrap().into()))
}

async fn create_policy(s: &Server, key: &str, body: Value) -> String {
    let r = s.post(key, "/v1/policies", &body.to_string()).await;
    r.expect(201);
    r.json()["id"].as_str().unwrap().to_string()
}

async fn withdraw(s: &Server, key: &str, amount: &str) -> Resp {
    let body = json!({"phone_number": A, "token": "USDC", "amount": amount,
        "payout_currency": "XOF"});
    s.post(key, "/v1/users/withdraw", &body.to_string()).await
}

/// The dry run of the withdrawal of `amount` from A: (decision, rule_id).
async fn dry_withdraw(s: &Server, key: &str, amount: &str) -> (String, Option<String>) {
    let body = json!({"operation": "withdrawal", "phone_number": A, "token": "USDC",
        "amount": amount});
    let r = s
        .post(key, "/v1/policies/evaluate", &body.to_string())
        .await;
    r.expect(200);
    let v = r.json();
    (
        v["decision"].as_str().unwrap().to_string(),
        v["rule_id"].as_str().map(str::to_string),
    )
}

/// The dry run's decision, then the real withdrawal: the real call must answer what the
/// dry run said (202 for ALLOW, 403 POLICY_DENIED / APPROVAL_REQUIRED with the same
/// rule otherwise). Returns the real response.
async fn dry_then_real(s: &Server, key: &str, amount: &str) -> Resp {
    let (decision, rule) = dry_withdraw(s, key, amount).await;
    let r = withdraw(s, key, amount).await;
    match decision.as_str() {
        "ALLOW" => assert_eq!(r.status, 202, "dry run ALLOW, real {}", r.text()),
        "DENY" => {
            r.expect_err(403, "POLICY_DENIED");
            assert_eq!(r.json()["error"]["rule_id"].as_str(), rule.as_deref());
        }
        "APPROVAL_REQUIRED" => {
            r.expect_err(403, "APPROVAL_REQUIRED");
            assert_eq!(r.json()["error"]["rule_id"].as_str(), rule.as_deref());
        }
        other => panic!("unknown decision {other}"),
    }
    r
}

/// What A's wallet may still spend on the primary chain: its ledger balance less the
/// holds of operations in flight.
async fn balance(s: &Server, wallet: &WalletId) -> String {
    let e = s.app.engine();
    let acct = e.wallet_account(wallet, RailId::Evm(137), Token::Usdc);
    let b = e.ports().ledger.balance(&acct.id).await.unwrap();
    Micros(u64::try_from(b.available()).unwrap()).to_decimal_string()
}

async fn admin_post(s: &Server, path: &str) -> Resp {
    let auth = format!("Bearer {ADMIN}");
    s.send(
        reqwest::Method::POST,
        path,
        None,
        Some("{}"),
        &[("Authorization", &auth)],
    )
    .await
}

/// The newest entry of `action` in `audit`.
fn find<'a>(audit: &'a [Value], action: &str) -> &'a Value {
    audit
        .iter()
        .find(|e| e["action"] == action)
        .unwrap_or_else(|| panic!("no {action} in {audit:?}"))
}

/// The policy entries of the staff audit log, newest first.
async fn policy_audit(s: &Server) -> Vec<Value> {
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
        .filter(|e| e["action"].as_str().unwrap().starts_with("policy."))
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_withdrawal_over_the_per_transaction_cap_is_refused_and_audited() {
    let s = start_with(config()).await;
    let (key, a) = tenant(&s, "50").await;
    let id = create_policy(&s, &key, json!({"max_per_transaction": "10"})).await;
    let r = dry_then_real(&s, &key, "10.000001").await;
    assert_eq!(
        r.json()["error"]["rule_id"],
        format!("{id}:max_per_transaction")
    );
    assert_eq!(balance(&s, &a).await, "50.000000", "nothing held");
    // Entries of one millisecond may come in either order: found by action.
    let audit = policy_audit(&s).await;
    let deny = find(&audit, "policy.deny");
    assert!(
        deny["note"]
            .as_str()
            .unwrap()
            .contains(&format!("{id}:max_per_transaction")),
        "{audit:?}"
    );
    find(&audit, "policy.evaluate"); // the dry run is audited too
    // At the cap: accepted, and the decision audited with the operation.
    let ok = dry_then_real(&s, &key, "10").await;
    assert_eq!(balance(&s, &a).await, "40.000000");
    let audit = policy_audit(&s).await;
    assert_eq!(find(&audit, "policy.allow")["target"], ok.json()["id"]);
    // Deleted, the policy governs nothing.
    s.send(
        reqwest::Method::DELETE,
        &format!("/v1/policies/{id}"),
        Some(&key),
        None,
        &[],
    )
    .await
    .expect(200);
    withdraw(&s, &key, "20").await.expect(202);
}

#[tokio::test]
async fn the_24h_window_counts_withdrawals_still_in_flight() {
    let (s, clock) = start_shifted(config()).await;
    let (key, a) = tenant(&s, "100").await;
    let id = create_policy(
        &s,
        &key,
        json!({"windows": [{"window": "24h", "max_amount": "30", "max_count": 5}]}),
    )
    .await;
    let first = dry_then_real(&s, &key, "20").await;
    let wd = first.json()["id"].as_str().unwrap().to_string();
    let read = s.get(&key, &format!("/v1/withdrawals/{wd}")).await;
    read.expect(200);
    assert_ne!(read.json()["status"], "COMPLETED", "still in flight");
    // 20 in flight + 15 > 30: refused, though the first has not moved on chain yet.
    let r = dry_then_real(&s, &key, "15").await;
    assert_eq!(
        r.json()["error"]["rule_id"],
        format!("{id}:window_24h_amount")
    );
    dry_then_real(&s, &key, "10").await.expect(202);
    assert_eq!(balance(&s, &a).await, "70.000000");
    // 23 hours on, both still count.
    clock.advance_ms(23 * HOUR_MS);
    let r = dry_then_real(&s, &key, "1").await;
    assert_eq!(
        r.json()["error"]["rule_id"],
        format!("{id}:window_24h_amount")
    );
    // Past 25 hours they have left the window.
    clock.advance_ms(2 * HOUR_MS);
    dry_then_real(&s, &key, "30").await.expect(202);
}

#[tokio::test]
async fn a_new_destination_is_refused_until_its_cooling_off_ends() {
    let (s, clock) = start_shifted(config()).await;
    let (key, a) = tenant(&s, "100").await;
    let id = create_policy(&s, &key, json!({"cooling_off_hours": 24})).await;
    // The dry run records no sighting: asking twice does not start the clock.
    assert_eq!(
        dry_withdraw(&s, &key, "5").await,
        ("DENY".into(), Some(format!("{id}:cooling_off")))
    );
    clock.advance_ms(30 * HOUR_MS);
    // The first real request is the first sighting: refused, the clock starts.
    let r = dry_then_real(&s, &key, "5").await;
    assert_eq!(r.json()["error"]["rule_id"], format!("{id}:cooling_off"));
    clock.advance_ms(23 * HOUR_MS);
    dry_then_real(&s, &key, "5")
        .await
        .expect_err(403, "POLICY_DENIED");
    clock.advance_ms(HOUR_MS);
    dry_then_real(&s, &key, "5").await.expect(202);
    assert_eq!(balance(&s, &a).await, "95.000000");
}

#[tokio::test]
async fn an_address_book_entry_is_usable_only_after_its_cooling_off() {
    let (s, clock) = start_shifted(config()).await;
    let (key, _) = tenant(&s, "100").await;
    let id = create_policy(&s, &key, json!({"require_address_book": true})).await;
    let r = dry_then_real(&s, &key, "5").await;
    assert_eq!(r.json()["error"]["rule_id"], format!("{id}:address_book"));
    let added = s
        .post(
            &key,
            "/v1/address-book",
            &json!({"value": A, "label": "Own mobile money"}).to_string(),
        )
        .await;
    added.expect(201);
    assert_eq!(added.json()["kind"], "mobile_money");
    let list = s.get(&key, "/v1/address-book").await;
    list.expect(200);
    assert_eq!(list.json()["total"], 1);
    // Added, but cooling off: still refused.
    let r = dry_then_real(&s, &key, "5").await;
    assert_eq!(r.json()["error"]["rule_id"], format!("{id}:address_book"));
    clock.advance_ms(24 * HOUR_MS);
    dry_then_real(&s, &key, "5").await.expect(202);
    // The same destination twice is refused.
    s.post(
        &key,
        "/v1/address-book",
        &json!({"value": A, "label": "again"}).to_string(),
    )
    .await
    .expect_err(400, "INVALID_PARAMETER");
}

/// Removing an entry is idempotent (a retried DELETE, or one after an idempotent replay
/// of the create answered the same entry, is not a 404): it answers the removed entry and
/// audits one removal; the list no longer has it, and the destination may be added again.
#[tokio::test]
async fn removing_an_address_book_entry_twice_answers_it_both_times() {
    use reqwest::Method;
    let s = start_with(config()).await;
    let (key, _) = tenant(&s, "100").await;
    let body = json!({"value": A, "label": "Own mobile money"}).to_string();
    let added = s.post_idem(&key, "/v1/address-book", &body, "adb-1").await;
    added.expect(201);
    let id = added.json()["id"].as_str().unwrap().to_string();
    let path = format!("/v1/address-book/{id}");
    for _ in 0..2 {
        let r = s.send(Method::DELETE, &path, Some(&key), None, &[]).await;
        r.expect(200);
        assert_eq!(r.json()["id"], id.as_str());
    }
    // The replayed create answers the first entry, whose removal is still not a 404.
    let replay = s.post_idem(&key, "/v1/address-book", &body, "adb-1").await;
    assert_eq!(replay.json()["id"], id.as_str());
    s.send(Method::DELETE, &path, Some(&key), None, &[])
        .await
        .expect(200);
    let list = s.get(&key, "/v1/address-book").await;
    assert_eq!(list.json()["total"], 0);
    let auth = format!("Bearer {ADMIN}");
    let audit = s
        .send(
            Method::GET,
            "/admin/v1/audit",
            None,
            None,
            &[("Authorization", &auth)],
        )
        .await;
    audit.expect(200);
    let removals = audit.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "address_book.remove")
        .count();
    assert_eq!(removals, 1, "one removal audited");
    s.post(&key, "/v1/address-book", &body).await.expect(201);
    // Another tenant's entry stays a 404.
    let other = s.tenant("Other Fintech", "0").await.live;
    s.send(Method::DELETE, &path, Some(&other), None, &[])
        .await
        .expect_err(404, "NOT_FOUND");
}

#[tokio::test]
async fn a_withdrawal_above_the_threshold_waits_for_a_second_approver() {
    let s = start_with(config()).await;
    let (key, a) = tenant(&s, "100").await;
    let id = create_policy(&s, &key, json!({"approval_threshold": "10"})).await;
    dry_then_real(&s, &key, "10").await.expect(202);
    let held = dry_then_real(&s, &key, "25").await;
    let err = held.json()["error"].clone();
    assert_eq!(err["rule_id"], format!("{id}:approval_threshold"));
    let approval = err["approval_id"].as_str().unwrap().to_string();
    assert!(approval.starts_with("apr_"), "{err}");
    assert_eq!(balance(&s, &a).await, "90.000000", "nothing held yet");
    let read = s
        .get(&key, &format!("/v1/policies/approvals/{approval}"))
        .await;
    read.expect(200);
    assert_eq!(read.json()["status"], "PENDING");
    assert_eq!(read.json()["amount"], "25.000000");
    // The second person: staff approve, and the withdrawal is carried out, once.
    let ok = admin_post(
        &s,
        &format!("/admin/v1/policy-approvals/{approval}/approve"),
    )
    .await;
    ok.expect(200);
    let v = ok.json();
    assert_eq!(v["status"], "APPROVED");
    assert_eq!(v["approved_by"], "admin-token");
    let wd = v["operation_id"].as_str().unwrap().to_string();
    assert!(wd.starts_with("wd_"), "{v}");
    s.get(&key, &format!("/v1/withdrawals/{wd}"))
        .await
        .expect(200);
    assert_eq!(balance(&s, &a).await, "65.000000");
    admin_post(
        &s,
        &format!("/admin/v1/policy-approvals/{approval}/approve"),
    )
    .await
    .expect_err(409, "INVALID_STATE");
    assert_eq!(balance(&s, &a).await, "65.000000", "carried out once");
    let audit = policy_audit(&s).await;
    assert_eq!(find(&audit, "policy.allow")["target"], wd.as_str());
    let approve = find(&audit, "policy.approve");
    assert_eq!(approve["staff_id"], "admin-token");
    assert_eq!(approve["target"], approval.as_str());
    // Another tenant cannot read it.
    let other = s.tenant("Other", "1").await;
    s.get(&other.live, &format!("/v1/policies/approvals/{approval}"))
        .await
        .expect_err(404, "NOT_FOUND");
}

#[tokio::test]
async fn a_send_above_the_threshold_with_an_idempotency_key_is_held_once_then_sent() {
    let s = start_with(config()).await;
    let (key, a) = tenant(&s, "100").await;
    create_policy(
        &s,
        &key,
        json!({"approval_threshold": "10", "rail": "polygon"}),
    )
    .await;
    let body = json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
        "quote_id": "DIRECT_CRYPTO:USDC:20"})
    .to_string();
    let dry = s
        .post(
            &key,
            "/v1/policies/evaluate",
            &json!({"operation": "send", "from_phone_number": A, "to_phone_number": B,
                "token": "USDC", "amount": "20"})
            .to_string(),
        )
        .await;
    dry.expect(200);
    assert_eq!(dry.json()["decision"], "APPROVAL_REQUIRED");
    let first = s
        .post_idem(&key, "/v1/transfers/send", &body, "send-held-1")
        .await;
    first.expect_err(403, "APPROVAL_REQUIRED");
    let again = s
        .post_idem(&key, "/v1/transfers/send", &body, "send-held-1")
        .await;
    again.expect_err(403, "APPROVAL_REQUIRED");
    let approval = first.json()["error"]["approval_id"].clone();
    assert_eq!(
        again.json()["error"]["approval_id"],
        approval,
        "one held request"
    );
    let ok = admin_post(
        &s,
        &format!(
            "/admin/v1/policy-approvals/{}/approve",
            approval.as_str().unwrap()
        ),
    )
    .await;
    ok.expect(200);
    assert!(
        ok.json()["operation_id"]
            .as_str()
            .unwrap()
            .starts_with("tr_")
    );
    assert_eq!(balance(&s, &a).await, "80.000000");
}

#[tokio::test]
async fn policies_are_validated_and_scoped_to_their_tenant() {
    let s = start_with(config()).await;
    let (key, _) = tenant(&s, "10").await;
    for (body, param) in [
        (json!({"max_per_transaction": "0"}), "max_per_transaction"),
        (
            json!({"windows": [{"window": "1h", "max_count": 1}]}),
            "windows",
        ),
        (json!({"windows": [{"window": "24h"}]}), "windows"),
        (json!({"cooling_off_hours": 721}), "cooling_off_hours"),
        (json!({"deny_list": ["not an address"]}), "deny_list"),
        (json!({"rail": "mars"}), "rail"),
    ] {
        let r = s.post(&key, "/v1/policies", &body.to_string()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert_eq!(r.param().as_deref(), Some(param), "{body}: {}", r.text());
    }
    let id = create_policy(&s, &key, json!({"deny_list": [A], "token": "USDC"})).await;
    let got = s.get(&key, &format!("/v1/policies/{id}")).await;
    got.expect(200);
    assert_eq!(got.json()["deny_list"], json!([A]));
    let other = s.tenant("Other", "1").await;
    s.get(&other.live, &format!("/v1/policies/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    let r = dry_then_real(&s, &key, "1").await;
    assert_eq!(r.json()["error"]["rule_id"], format!("{id}:deny_list"));
}

#[tokio::test]
async fn concurrent_withdrawals_never_take_a_window_past_its_limit() {
    let s = start_with(config()).await;
    let (key, a) = tenant(&s, "100").await;
    create_policy(
        &s,
        &key,
        json!({"windows": [{"window": "24h", "max_amount": "30"}]}),
    )
    .await;
    let results = futures_util::future::join_all((0..6).map(|_| withdraw(&s, &key, "10"))).await;
    let accepted = results.iter().filter(|r| r.status == 202).count();
    for r in &results {
        assert!(
            r.status == 202 || r.code() == "POLICY_DENIED" || r.code() == "CONFLICT",
            "{}",
            r.text()
        );
    }
    assert!(accepted <= 3, "{accepted} accepted past a 30 window");
    let held = 100_000_000 - accepted as u64 * 10_000_000;
    assert_eq!(balance(&s, &a).await, Micros(held).to_decimal_string());
    // Filled one at a time from there, the window takes exactly three in all.
    let mut total = accepted;
    loop {
        let r = withdraw(&s, &key, "10").await;
        if r.status != 202 {
            r.expect_err(403, "POLICY_DENIED");
            break;
        }
        total += 1;
        assert!(total <= 3, "a fourth withdrawal of 10 admitted");
    }
    assert_eq!(total, 3);
}
