//! Spending policies over swaps (issue #51: "every send, withdrawal sweep, swap, escrow
//! payout and refund" is governed), over real HTTP on loopback, on the simulated chain
//! through the treasury venue: a swap over a per-transaction cap refused before anything
//! is held, naming the rule, as the dry run said; one at the cap accepted and counted in
//! the policy's window; one above the approval threshold held, then carried out once by
//! the tenant's approver key.

use crate::common::*;
use serde_json::json;
use stablecoin_core::domain::ids::WalletId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::RailId;
use stablecoin_server::config::Secret;

const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
const A: &str = "+2250700000601";

fn swap(amount: &str) -> String {
    json!({"phone_number": A, "token_in": "USDC", "token_out": "USDT",
        "amount_in": amount, "max_slippage_bps": 50})
    .to_string()
}

async fn dry_swap(s: &Server, key: &str, amount: &str) -> serde_json::Value {
    let r = s
        .post(
            key,
            "/v1/policies/evaluate",
            &json!({"operation": "swap", "phone_number": A, "token": "USDC",
                "amount": amount})
            .to_string(),
        )
        .await;
    r.expect(200);
    r.json()
}

async fn usdc(s: &Server, wallet: &WalletId) -> String {
    let e = s.app.engine();
    let acct = e.wallet_account(wallet, RailId::Evm(137), Token::Usdc);
    let b = e.ports().ledger.balance(&acct.id).await.unwrap();
    Micros(u64::try_from(b.available()).unwrap()).to_decimal_string()
}

#[tokio::test]
async fn a_swap_over_a_cap_is_refused_before_any_hold_and_one_above_the_threshold_waits_for_approval()
 {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(ADMIN));
    let s = start_with(c).await;
    let t = s.tenant("Swap Policy Fintech", "1000").await;
    let w = s.provision(&t.live, A).await;
    let wallet = WalletId(w["wallet_id"].as_str().unwrap().into());
    s.fund_settled(&t.live, A, "100").await;
    let r = s
        .post(
            &t.live,
            "/v1/policies",
            &json!({"max_per_transaction": "20", "approval_threshold": "10",
                "windows": [{"window": "24h", "max_count": 2}], "token": "USDC"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let id = r.json()["id"].as_str().unwrap().to_string();

    // Over the cap: the dry run and the real call agree; nothing held, nothing written
    // but the refusal's audit entry.
    let dry = dry_swap(&s, &t.live, "25").await;
    assert_eq!(dry["decision"], "DENY");
    assert_eq!(dry["rule_id"], format!("{id}:max_per_transaction"));
    let r = s.post(&t.live, "/v1/swaps", &swap("25")).await;
    r.expect_err(403, "POLICY_DENIED");
    assert_eq!(
        r.json()["error"]["rule_id"],
        format!("{id}:max_per_transaction")
    );
    assert_eq!(usdc(&s, &wallet).await, "100.000000", "nothing held");
    assert_eq!(
        s.get(&t.live, "/v1/swaps").await.json()["total"],
        0,
        "no swap recorded"
    );

    // At the threshold: allowed and counted.
    assert_eq!(dry_swap(&s, &t.live, "10").await["decision"], "ALLOW");
    s.post(&t.live, "/v1/swaps", &swap("10")).await.expect(202);
    assert_eq!(usdc(&s, &wallet).await, "90.000000");

    // Above it: held for a second approver, nothing held meanwhile.
    assert_eq!(
        dry_swap(&s, &t.live, "15").await["decision"],
        "APPROVAL_REQUIRED"
    );
    let r = s.post(&t.live, "/v1/swaps", &swap("15")).await;
    r.expect_err(403, "APPROVAL_REQUIRED");
    let approval = r.json()["error"]["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(usdc(&s, &wallet).await, "90.000000");
    let auth = format!("Bearer {ADMIN}");
    let issued = s
        .send(
            reqwest::Method::POST,
            &format!("/admin/v1/tenants/{}/approver-keys", t.id.0),
            None,
            Some("{}"),
            &[("Authorization", &auth)],
        )
        .await;
    issued.expect(201);
    let approver = issued.json()["api_key"].as_str().unwrap().to_string();
    let listed = s.get(&approver, "/v1/policy-approvals").await.json();
    assert_eq!(listed["approvals"][0]["operation"], "swap");
    let ok = s
        .post(
            &approver,
            &format!("/v1/policy-approvals/{approval}/approve"),
            "{}",
        )
        .await;
    ok.expect(200);
    let sw = ok.json()["operation_id"].as_str().unwrap().to_string();
    assert!(sw.starts_with("sw_"), "{}", ok.text());
    s.get(&t.live, &format!("/v1/swaps/{sw}")).await.expect(200);
    assert_eq!(usdc(&s, &wallet).await, "75.000000", "carried out once");

    // The window counted both: a third swap is refused by it.
    let r = s.post(&t.live, "/v1/swaps", &swap("1")).await;
    r.expect_err(403, "POLICY_DENIED");
    assert_eq!(
        r.json()["error"]["rule_id"],
        format!("{id}:window_24h_count")
    );
    assert_eq!(usdc(&s, &wallet).await, "75.000000");
}

/// Two servers sharing nothing but a fresh PostgreSQL schema and one simulated chain,
/// with the admin token, or `None` (SKIPPED) without a database.
async fn two_pg_servers(test: &str) -> Option<(Server, Server)> {
    use crate::common::shared::{fresh_schema, pg_url, shared_chain};
    use stablecoin_server::config::StorageConfig;
    let url = pg_url(test)?;
    let mut base = test_config();
    base.rate_limits.enabled = false;
    base.admin.token = Some(Secret::new(ADMIN));
    base.storage = StorageConfig::Postgres {
        url: Secret::new(fresh_schema(&url).await),
        connect_timeout_secs: 30,
    };
    base.sim.chain_url = Some(shared_chain(&base).await);
    let node = |worker: &str| {
        let mut c = base.clone();
        c.engine.worker_id = Some(worker.into());
        c
    };
    let build =
        |c| async move { serve(stablecoin_server::App::build(c).await.expect("app builds")).await };
    Some((build(node("node-1")).await, build(node("node-2")).await))
}

/// On PostgreSQL across two nodes (no in-process guard sees the other's requests): of
/// concurrent approvals of one held swap exactly one carries it out, and concurrent
/// swaps never take a policy's 24 h count window past its limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_two_nodes_approve_a_held_swap_once_and_never_pass_a_window() {
    let Some((s1, s2)) = two_pg_servers("policies_products_http::two_nodes").await else {
        return;
    };
    let t = s1.tenant("Two Node Fintech", "1000").await;
    let w = s1.provision(&t.live, A).await;
    let wallet = WalletId(w["wallet_id"].as_str().unwrap().into());
    s1.fund_settled(&t.live, A, "100").await;
    s1.post(
        &t.live,
        "/v1/policies",
        &json!({"approval_threshold": "30",
            "windows": [{"window": "24h", "max_count": 3}]})
        .to_string(),
    )
    .await
    .expect(201);
    let r = s2.post(&t.live, "/v1/swaps", &swap("40")).await;
    r.expect_err(403, "APPROVAL_REQUIRED");
    let approval = r.json()["error"]["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    let auth = format!("Bearer {ADMIN}");
    let issued = s1
        .send(
            reqwest::Method::POST,
            &format!("/admin/v1/tenants/{}/approver-keys", t.id.0),
            None,
            Some("{}"),
            &[("Authorization", &auth)],
        )
        .await;
    issued.expect(201);
    let approver = issued.json()["api_key"].as_str().unwrap().to_string();
    let path = format!("/v1/policy-approvals/{approval}/approve");
    let results = futures_util::future::join_all((0..6).map(|i| {
        let s = if i % 2 == 0 { &s1 } else { &s2 };
        s.post(&approver, &path, "{}")
    }))
    .await;
    for r in &results {
        assert!(
            r.status == 200 || (r.status == 409 && r.code() == "INVALID_STATE"),
            "{}",
            r.text()
        );
    }
    assert_eq!(results.iter().filter(|r| r.status == 200).count(), 1);
    assert_eq!(usdc(&s1, &wallet).await, "60.000000", "carried out once");

    // One of three counted: concurrent swaps on both nodes admit at most two more.
    let five = swap("5");
    let results = futures_util::future::join_all((0..8).map(|i| {
        let s = if i % 2 == 0 { &s1 } else { &s2 };
        s.post(&t.live, "/v1/swaps", &five)
    }))
    .await;
    let mut admitted = results.iter().filter(|r| r.status == 202).count();
    for r in &results {
        assert!(
            r.status == 202 || r.code() == "POLICY_DENIED" || r.code() == "CONFLICT",
            "{}",
            r.text()
        );
    }
    assert!(admitted <= 2, "{admitted} admitted past the window");
    loop {
        let r = s2.post(&t.live, "/v1/swaps", &swap("5")).await;
        if r.status != 202 {
            r.expect_err(403, "POLICY_DENIED");
            break;
        }
        admitted += 1;
        assert!(admitted <= 2, "a fourth swap admitted");
    }
    assert_eq!(admitted, 2);
    assert_eq!(usdc(&s1, &wallet).await, "50.000000");
}

const BUYER: &str = "+2250700000611";
const SELLER: &str = "+2250700000612";

/// An escrow payout is governed by the tenant's policies (without a wallet scope): a
/// release over the cap is refused before anything is claimed, the deal stays FUNDED,
/// the refusal names the rule; under the cap (the policy changed) it is released.
#[tokio::test]
async fn an_escrow_release_over_a_cap_is_refused_and_nothing_is_claimed() {
    let s = start().await;
    let t = s.tenant("Escrow Policy Fintech", "0").await;
    s.provision(&t.live, BUYER).await;
    s.provision(&t.live, SELLER).await;
    let r = s
        .post(
            &t.live,
            "/v1/policies",
            &json!({"max_per_transaction": "100"}).to_string(),
        )
        .await;
    r.expect(201);
    let pol = r.json()["id"].as_str().unwrap().to_string();
    let r = s
        .post(
            &t.live,
            "/v1/escrows",
            &json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
                "amount": "150", "reference": "order-policy"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let e = r.json();
    let id = e["id"].as_str().unwrap().to_string();
    let tron = s.app.sim_rail(RailId::Tron).expect("sim TRON");
    tron.mint(
        &stablecoin_core::ports::ChainAddress(e["escrow_address"].as_str().unwrap().into()),
        Token::Usdt,
        Micros(150_000_000),
    )
    .unwrap();
    s.settle_escrows().await;
    let path = format!("/v1/escrows/{id}");
    assert_eq!(s.get(&t.live, &path).await.json()["state"], "FUNDED");

    let before = s.commits();
    let r = s.post(&t.live, &format!("{path}/release"), "{}").await;
    r.expect_err(403, "POLICY_DENIED");
    assert_eq!(
        r.json()["error"]["rule_id"],
        format!("{pol}:max_per_transaction")
    );
    assert_eq!(
        s.commits(),
        before + 1,
        "only the refusal's audit entry (with the destination's first sighting)"
    );
    let deal = s.get(&t.live, &path).await.json();
    assert_eq!(deal["state"], "FUNDED", "nothing claimed: {deal}");
    assert_eq!(deal["payout_pending"], false, "nothing claimed: {deal}");
    // A refund to the buyer is a payout too.
    s.post(&t.live, &format!("{path}/refund"), "{}")
        .await
        .expect_err(403, "POLICY_DENIED");

    // The cap raised: released.
    s.post(
        &t.live,
        &format!("/v1/policies/{pol}"),
        &json!({"max_per_transaction": "150"}).to_string(),
    )
    .await
    .expect(200);
    s.post(&t.live, &format!("{path}/release"), "{}")
        .await
        .expect(202);
    s.settle_escrows().await;
    assert_eq!(s.get(&t.live, &path).await.json()["state"], "RELEASED");
}

/// A live checkout refund is governed by the tenant's policies: over the cap it is
/// refused before anything is reserved (no refund recorded, the refundable balance
/// untouched), naming the rule; at the cap it is reserved.
#[tokio::test]
async fn a_checkout_refund_over_a_cap_is_refused_and_nothing_is_reserved() {
    use crate::checkout_refunds::{PAYER, Shop};
    let shop = Shop::open().await;
    let (id, _) = shop.paid_session("30").await;
    let r = shop
        .s
        .post(
            &shop.t.live,
            "/v1/policies",
            &json!({"max_per_transaction": "2", "token": "USDC"}).to_string(),
        )
        .await;
    r.expect(201);
    let pol = r.json()["id"].as_str().unwrap().to_string();
    let refundable = shop.ledger(&shop.refundable_account()).await;
    let body = json!({"amount": "3", "token": "USDC", "network": "polygon",
        "address": PAYER, "reason": "cold coffee"});
    let r = shop.refund(&id, body, "rf-over").await;
    r.expect_err(403, "POLICY_DENIED");
    assert_eq!(
        r.json()["error"]["rule_id"],
        format!("{pol}:max_per_transaction")
    );
    assert_eq!(shop.refunds(&id).await["refunds"], json!([]));
    assert_eq!(
        shop.ledger(&shop.refundable_account()).await,
        refundable,
        "nothing reserved"
    );
    let r = shop
        .refund(
            &id,
            json!({"amount": "2", "token": "USDC", "network": "polygon",
                "address": PAYER}),
            "rf-at-cap",
        )
        .await;
    r.expect(201);
    assert_eq!(
        shop.refunds(&id).await["refunds"].as_array().unwrap().len(),
        1
    );
}
