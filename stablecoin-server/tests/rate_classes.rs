//! The routes the router marks as moving money (`stablecoin_server::route_kind`) are
//! exactly the money routes: every write operation of the OpenAPI document is sent once
//! and its `RateLimit-Policy` names the budget it spent. A money route that lost its mark
//! would spend the `write` budget (and, for the idempotency middleware, which reads the
//! same mark, get an HTTP record instead of the engine's), and this test fails.

use crate::common::*;
use reqwest::Method;
use serde_json::Value;
use std::collections::BTreeSet;

/// The money routes: the engine operations that move money (fund, send on every chain,
/// withdraw, swap) and the escrow payouts. Before issue #45 this was a list of path
/// strings in `rate_limit.rs`; it now lives on the route registrations, and stays here as
/// the expected answer.
const MONEY_ROUTES: &[&str] = &[
    "POST /v1/escrows/{id}/refund",
    "POST /v1/escrows/{id}/release",
    "POST /v1/solana/transfers/send",
    "POST /v1/swaps",
    "POST /v1/transfers/send",
    "POST /v1/tron/transfers/send",
    "POST /v1/tron/users/withdraw",
    "POST /v1/users/fund",
    "POST /v1/users/withdraw",
];

/// Every (method, path template) of the document other than reads.
fn writes(doc: &Value) -> Vec<(Method, String)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (name, method) in [
            ("post", Method::POST),
            ("put", Method::PUT),
            ("patch", Method::PATCH),
            ("delete", Method::DELETE),
        ] {
            if item.get(name).is_some() {
                out.push((method, path.clone()));
            }
        }
    }
    out
}

/// The budget a request spent, from its `RateLimit-Policy` (`"money";q=…`); `None` when
/// it was not rate limited (refused before, e.g. by the key check).
fn budget(r: &Resp) -> Option<String> {
    let policy = r.header("ratelimit-policy")?;
    Some(policy.split('"').nth(1)?.to_string())
}

#[tokio::test]
async fn exactly_the_money_routes_spend_the_money_rate_budget() {
    let mut config = test_config();
    config.rate_limits.window_s = 60;
    config.rate_limits.money = 1_000;
    config.rate_limits.write = 1_000;
    let s = start_with(config).await;
    let t = s.tenant("Acme", "0").await;
    let doc = s
        .send(Method::GET, "/openapi.json", None, None, &[])
        .await
        .json();
    let mut money = BTreeSet::new();
    let mut limited = 0;
    for (method, template) in writes(&doc) {
        let path = template
            .replace("{id}", "x_1")
            .replace("{session_id}", "cs_x");
        // A tenant route, or else a business (checkout) one; the staff routes have no
        // rate limit. An empty object is enough: the budget is spent before the body
        // is read, and no such body moves anything.
        let mut spent = None;
        for key in [&t.live, &t.business_live] {
            let r = s
                .send(method.clone(), &path, Some(key), Some("{}"), &[])
                .await;
            spent = budget(&r);
            if spent.is_some() {
                break;
            }
        }
        let Some(spent) = spent else { continue };
        limited += 1;
        match spent.as_str() {
            "money" => {
                money.insert(format!("{method} {template}"));
            }
            "write" => {}
            other => panic!("{method} {template} spent the {other} budget"),
        }
    }
    let expected: BTreeSet<String> = MONEY_ROUTES.iter().map(|r| r.to_string()).collect();
    assert_eq!(money, expected);
    assert!(
        limited > MONEY_ROUTES.len() + 20,
        "{limited} rate-limited writes"
    );
}
