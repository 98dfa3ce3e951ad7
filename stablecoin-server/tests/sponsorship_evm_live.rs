//! A sponsorship budget exhausted by real sponsored sends on Anvil refuses the next one
//! (issue #51, "What must be true"): the server on a real EVM chain (EntryPoint v0.8,
//! the service's VerifyingPaymaster, configured as an operator would), over loopback
//! HTTP. The spend the tenant reads is what the paymaster's deposit in the EntryPoint
//! lost to the metered sends, wei for wei; once the budget is spent the next send is 429
//! SPONSORSHIP_BUDGET_EXCEEDED and nothing is held.
//!
//! Without an anvil binary the test prints SKIPPED and passes, unless
//! `EVM_REQUIRE_ANVIL` is set.

use crate::common;
use crate::common::{serve, test_config};
use serde_json::{Value, json};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{KeyPurpose, SubmissionStatus};
use stablecoin_rails::evm::abi::{self, Abi};
use stablecoin_rails::evm::testkit::{World, find_anvil, shared_anvil};
use stablecoin_server::config::Secret;
use std::sync::Arc;

const SEED: u8 = 0x5b;
const ADMIN: &str = "admin-token-0123456789abcdef-0123456789";
const A: &str = "+2250700000751";
const B: &str = "+2250700000752";

/// The paymaster's deposit in the EntryPoint, in wei: what pays every sponsored send.
async fn deposit(w: &World) -> u128 {
    w.node
        .eth()
        .call_uint(
            &w.config.entry_point,
            &abi::call("balanceOf(address)", &[Abi::address(&w.config.paymaster.0)]),
        )
        .await
        .expect("EntryPoint balanceOf")
}

async fn send(s: &common::Server, key: &str, n: u32) -> common::Resp {
    s.post_idem(
        key,
        "/v1/transfers/send",
        &json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:1"})
        .to_string(),
        &format!("anvil-budget-{n}"),
    )
    .await
}

/// Sends 1 USDC from A to B and settles it: the transfer's id.
async fn send_settled(s: &common::Server, key: &str, n: u32) -> String {
    let r = send(s, key, n).await;
    r.expect(202);
    let loc = r.header("location").unwrap();
    s.settle().await;
    let tr = s.get(key, &loc).await;
    assert_eq!(tr.json()["status"], "SETTLED", "{}", tr.text());
    tr.json()["id"].as_str().unwrap().to_string()
}

async fn budget(s: &common::Server, key: &str) -> Value {
    let r = s.get(key, "/v1/sponsorship-budgets").await;
    r.expect(200);
    r.json()["sponsorship_budgets"][0].clone()
}

/// A's USDC balance as the tenant reads it.
async fn balance(s: &common::Server, key: &str) -> String {
    let r = s
        .get(
            key,
            &format!("/v1/users/balance?phone_number=%2B{}", &A[1..]),
        )
        .await;
    r.expect(200);
    r.json()["balance_usdc"].as_str().unwrap().to_string()
}

fn native(v: &Value) -> u128 {
    v.as_str().unwrap().parse().unwrap()
}

async fn set_cap(s: &common::Server, tenant: &str, cap: Option<u128>) {
    let body = json!({"rail": "polygon", "daily": {"native": cap.map(|c| c.to_string())}});
    let auth = format!("Bearer {ADMIN}");
    let r = s
        .send(
            reqwest::Method::POST,
            &format!("/admin/v1/tenants/{tenant}/sponsorship-budgets"),
            None,
            Some(&body.to_string()),
            &[("Authorization", &auth)],
        )
        .await;
    r.expect(200);
}

#[tokio::test]
async fn real_sponsored_sends_exhaust_a_budget_and_the_next_is_refused() {
    if find_anvil().is_none() {
        assert!(
            std::env::var_os("EVM_REQUIRE_ANVIL").is_none(),
            "EVM_REQUIRE_ANVIL is set but no anvil binary was found"
        );
        eprintln!("SKIPPED: no anvil binary");
        return;
    }
    let url = shared_anvil(137).to_string();
    let signer = Arc::new(LocalSigner::from_seed([SEED; 32]));
    let w = World::deploy_for(&url, 137, true, signer.clone(), |_| {}).await;
    let mut config = test_config();
    config.master_seed = Some(Secret::new(format!("{SEED:02x}").repeat(32)));
    config.admin.token = Some(Secret::new(ADMIN));
    config.rails.evm_chains = vec![137];
    config
        .rails
        .evm
        .insert("137".into(), common::production::evm_chain(&w, &url));
    let s = serve(
        stablecoin_server::App::build(config)
            .await
            .expect("app builds"),
    )
    .await;

    let t = s.tenant("Budget on Anvil", "100").await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    w.mint(w.usdc, &treasury, 100_000_000).await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    let f = s.fund_settled(&t.live, A, "20").await;
    assert_eq!(f["status"], "SETTLED", "{f}");

    // Staff turn budgets on for the tenant with no cap yet: sends are metered.
    set_cap(&s, &t.id.0, None).await;
    let start = deposit(&w).await;
    let rail = s.app.engine().evm_rail().unwrap().clone();
    let mut reported = 0u128;
    let mut ids = Vec::new();
    for n in 0..2 {
        ids.push(send_settled(&s, &t.live, n).await);
    }
    for id in &ids {
        match rail.status(id).await.unwrap() {
            SubmissionStatus::Confirmed { cost: Some(c), .. } => reported += c.native,
            other => panic!("{id}: {other:?}"),
        }
    }
    let b = budget(&s, &t.live).await;
    let spent = native(&b["spent_today"]["native"]);
    assert!(spent > 0);
    assert_eq!(spent, reported, "{b}");
    assert_eq!(
        spent,
        start - deposit(&w).await,
        "the spend is the deposit's loss"
    );
    // The month's highest cost so far is the estimate of the next send.
    let estimate = native(&b["estimated_next_cost"]["native"]);
    assert!(estimate > 0 && estimate < spent, "{b}");

    // Room for exactly one more send at the estimate: it goes through, and spends it.
    set_cap(&s, &t.id.0, Some(spent + estimate)).await;
    send_settled(&s, &t.live, 2).await;
    let b = budget(&s, &t.live).await;
    let spent = native(&b["spent_today"]["native"]);
    assert_eq!(spent, start - deposit(&w).await, "{b}");
    assert_eq!(b["payments_metered"], 3);

    // The budget is spent: the next real send is refused before anything is held.
    let before_chain = deposit(&w).await;
    let before = balance(&s, &t.live).await;
    let refused = send(&s, &t.live, 3).await;
    refused.expect_err(429, "SPONSORSHIP_BUDGET_EXCEEDED");
    let detail = &refused.json()["error"]["sponsorship_budget"];
    assert_eq!(detail["rail"], "polygon");
    assert_eq!(detail["period"], "day");
    assert_eq!(native(&detail["spent"]), spent);
    assert_eq!(native(&detail["cap"]), native(&b["daily"]["native"]));
    s.settle().await;
    assert_eq!(balance(&s, &t.live).await, before, "nothing held");
    assert_eq!(deposit(&w).await, before_chain, "nothing sent");
}
