//! Every route over real HTTP: success, errors, tenant isolation, and for each route a bad
//! input that provably writes nothing (the memory store's commit count does not move; the
//! background workers are off in these tests).

use crate::common::*;
use reqwest::Method;
use serde_json::json;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{ChainAddress, KeyPurpose, Rail, RailId};

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

/// Runs `f`, then checks no commit happened.
macro_rules! writes_nothing {
    ($s:expr, $e:expr) => {{
        let before = $s.commits();
        let r = $e;
        assert_eq!(
            $s.commits(),
            before,
            "bad input must write nothing: {}",
            r.text()
        );
        r
    }};
}

#[tokio::test]
async fn provision_outcomes_and_bad_input() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    let p = s.provision(&acme.live, A).await;
    assert_eq!(p["outcome"], "PROVISIONED");
    assert!(p["wallet_id"].as_str().unwrap().starts_with("wal_"));
    assert!(p["address"].as_str().unwrap().starts_with("0x"));
    assert_eq!(p["rail"], "polygon");
    assert_eq!(
        s.provision(&acme.live, A).await["outcome"],
        "ALREADY_EXISTS"
    );
    let lr = s.provision(&beta.live, A).await;
    assert_eq!(lr["outcome"], "LINK_REQUIRED");
    assert_eq!(lr["address"], p["address"]);
    // Formatting is normalised.
    assert_eq!(
        s.provision(&acme.live, "+225 07 00 00 00 01").await["outcome"],
        "ALREADY_EXISTS"
    );

    let r = writes_nothing!(
        s,
        s.post(
            &acme.live,
            "/v1/users/provision",
            r#"{"phone_number":"0700"}"#
        )
        .await
    );
    r.expect_err(400, "INVALID_PHONE");
    assert_eq!(r.param().as_deref(), Some("phone_number"));
    writes_nothing!(s, s.post(&acme.live, "/v1/users/provision", "{}").await)
        .expect_err(400, "MISSING_FIELD");
    writes_nothing!(
        s,
        s.post(
            &acme.live,
            "/v1/users/provision",
            r#"{"phone_number":"+22507"#
        )
        .await
    )
    .expect_err(400, "MALFORMED_JSON");
    writes_nothing!(
        s,
        s.post(&acme.live, "/v1/users/provision", r#"{"phone_number":225}"#)
            .await
    )
    .expect_err(400, "INVALID_TYPE");
    writes_nothing!(s, s.post(&acme.live, "/v1/users/provision", "[]").await)
        .expect_err(400, "MALFORMED_JSON");
    // Oversize body: 413.
    let big = format!(r#"{{"phone_number":"{A}","pad":"{}"}}"#, "x".repeat(70_000));
    writes_nothing!(s, s.post(&acme.live, "/v1/users/provision", &big).await)
        .expect_err(413, "PAYLOAD_TOO_LARGE");
    // Not JSON at all.
    let r = writes_nothing!(
        s,
        s.send(
            Method::POST,
            "/v1/users/provision",
            Some(&acme.live),
            None,
            &[("Content-Type", "application/xml")]
        )
        .await
    );
    r.expect_err(415, "UNSUPPORTED_MEDIA_TYPE");
}

#[tokio::test]
async fn fund_read_back_and_bad_input() {
    let s = start().await;
    let acme = s.tenant("Acme", "100").await;
    let beta = s.tenant("Beta", "100").await;
    s.provision(&acme.live, A).await;
    let body = format!(r#"{{"phone_number":"{A}","token":"USDC","amount":"40"}}"#);
    let r = s.post(&acme.live, "/v1/users/fund", &body).await;
    r.expect(202);
    let op = r.json();
    assert_eq!(op["status"], "QUEUED");
    assert_eq!(op["object"], "funding");
    let id = op["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("fd_"));
    let loc = r.header("location").unwrap();
    assert_eq!(loc, format!("/v1/fundings/{id}"));
    assert_eq!(s.treasury(&acme).await, m("60"), "held at once");
    s.settle().await;
    let read = s.get(&acme.live, &loc).await;
    read.expect(200);
    assert_eq!(read.json()["status"], "SETTLED");
    assert!(read.json()["tx_hash"].as_str().is_some());
    // Another tenant's funding is 404, and so is a funding id read as a transfer.
    s.get(&beta.live, &loc).await.expect_err(404, "NOT_FOUND");
    s.get(&acme.live, &format!("/v1/transfers/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    // Money-in is open: Beta may fund Acme's customer.
    s.post(&beta.live, "/v1/users/fund", &body)
        .await
        .expect(202);

    for (bad, code, param) in [
        (
            r#"{"phone_number":"+2250700000001","token":"USDC","amount":"-1"}"#,
            "INVALID_AMOUNT",
            "amount",
        ),
        (
            r#"{"phone_number":"+2250700000001","token":"USDC","amount":"1.0000001"}"#,
            "INVALID_AMOUNT",
            "amount",
        ),
        (
            r#"{"phone_number":"+2250700000001","token":"USDC","amount":"0"}"#,
            "INVALID_AMOUNT",
            "amount",
        ),
        (
            r#"{"phone_number":"+2250700000001","token":"EURC","amount":"1"}"#,
            "UNKNOWN_TOKEN",
            "token",
        ),
        (
            r#"{"phone_number":"+2250700000001","token":"USDC","amount":"1","memo":"x"}"#,
            "UNKNOWN_FIELD",
            "memo",
        ),
        (
            r#"{"phone_number":"+2250700000001","token":"USDC","amount":1}"#,
            "INVALID_TYPE",
            "amount",
        ),
    ] {
        let r = writes_nothing!(s, s.post(&acme.live, "/v1/users/fund", bad).await);
        r.expect_err(400, code);
        assert_eq!(r.param().as_deref(), Some(param), "{bad}");
    }
    let before = s.treasury(&acme).await;
    writes_nothing!(
        s,
        s.post(
            &acme.live,
            "/v1/users/fund",
            r#"{"phone_number":"+2250700000001","token":"USDC","amount":"1000"}"#
        )
        .await
    )
    .expect_err(422, "INSUFFICIENT_FUNDS");
    writes_nothing!(
        s,
        s.post(
            &acme.live,
            "/v1/users/fund",
            r#"{"phone_number":"+2250700000077","token":"USDC","amount":"1"}"#
        )
        .await
    )
    .expect_err(404, "NOT_FOUND");
    assert_eq!(s.treasury(&acme).await, before);
}

#[tokio::test]
async fn balance_reads_membership_and_bad_query() {
    let s = start().await;
    let acme = s.tenant("Acme", "100").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, A).await;
    s.fund_settled(&acme.live, A, "12.5").await;
    let r = s
        .get(
            &acme.live,
            "/v1/users/balance?phone_number=%2B2250700000001",
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["balance_usdc"], "12.500000");
    assert_eq!(r.json()["balance_usdt"], "0.000000");
    // Reads pass through for test keys.
    s.get(
        &acme.test,
        "/v1/users/balance?phone_number=%2B2250700000001",
    )
    .await
    .expect(200);
    s.get(
        &beta.live,
        "/v1/users/balance?phone_number=%2B2250700000001",
    )
    .await
    .expect_err(403, "NOT_A_MEMBER");
    s.get(&acme.live, "/v1/users/balance")
        .await
        .expect_err(400, "INVALID_QUERY");
    s.get(&acme.live, "/v1/users/balance?phone_number=abc")
        .await
        .expect_err(400, "INVALID_PHONE");
    let r = s
        .get(&acme.live, "/v1/users/balance?phone=%2B2250700000001")
        .await;
    r.expect_err(400, "INVALID_QUERY");
    assert_eq!(r.param().as_deref(), Some("phone"));
    s.get(
        &acme.live,
        "/v1/users/balance?phone_number=%2B2250700000099",
    )
    .await
    .expect_err(404, "NOT_FOUND");
}

#[tokio::test]
async fn withdraw_completes_and_bad_input() {
    let s = start().await;
    let acme = s.tenant("Acme", "100").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, A).await;
    s.fund_settled(&acme.live, A, "50").await;
    let body =
        r#"{"phone_number":"+2250700000001","token":"USDC","amount":"20","payout_currency":"XOF"}"#;
    let r = s.post(&acme.live, "/v1/users/withdraw", body).await;
    r.expect(202);
    assert_eq!(r.json()["status"], "PENDING");
    assert_eq!(r.json()["payout_currency"], "XOF");
    let loc = r.header("location").unwrap();
    assert!(loc.starts_with("/v1/withdrawals/wd_"));
    // The sweep confirms, then the (simulated) payout is delivered.
    let mut w = s.get(&acme.live, &loc).await;
    for _ in 0..10 {
        s.settle().await;
        w = s.get(&acme.live, &loc).await;
        if w.json()["status"] == "COMPLETED" {
            break;
        }
    }
    w.expect(200);
    assert_eq!(w.json()["status"], "COMPLETED");
    assert!(w.json()["payout_reference"].as_str().is_some());
    s.get(&beta.live, &loc).await.expect_err(404, "NOT_FOUND");

    let r = writes_nothing!(
        s,
        s.post(
            &acme.live,
            "/v1/users/withdraw",
            r#"{"phone_number":"+2250700000001","token":"USDC","amount":"1","payout_currency":"ABC"}"#
        )
        .await
    );
    r.expect_err(400, "UNKNOWN_CURRENCY");
    assert_eq!(r.param().as_deref(), Some("payout_currency"));
    writes_nothing!(s, s.post(&beta.live, "/v1/users/withdraw", body).await)
        .expect_err(403, "NOT_A_MEMBER");
    writes_nothing!(s, s.post(&acme.test, "/v1/users/withdraw", body).await)
        .expect_err(403, "SANDBOX_UNSUPPORTED");
}

#[tokio::test]
async fn link_and_phone_change_flows() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, A).await;
    let notifier = s.app.state().notifier.clone();
    let phone_a = Phone::parse(A).unwrap();

    // Link: bad input first, then the real flow.
    writes_nothing!(
        s,
        s.post(
            &beta.live,
            "/v1/users/link/request",
            r#"{"phone_number":"x"}"#
        )
        .await
    )
    .expect_err(400, "INVALID_PHONE");
    let r = s
        .post(
            &beta.live,
            "/v1/users/link/request",
            &json!({"phone_number": A}).to_string(),
        )
        .await;
    r.expect(200);
    assert!(
        r.json()["challenge_id"]
            .as_str()
            .unwrap()
            .starts_with("otp_")
    );
    assert_eq!(r.json()["sent_to"], "+225******0001");
    s.post(
        &acme.live,
        "/v1/users/link/request",
        &json!({"phone_number": A}).to_string(),
    )
    .await
    .expect_err(409, "ALREADY_A_MEMBER");
    let code = notifier.last_code_to(&phone_a).unwrap();
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let r = s
        .post(
            &beta.live,
            "/v1/users/link/confirm",
            &json!({"phone_number": A, "code": wrong}).to_string(),
        )
        .await;
    r.expect_err(422, "CODE_INVALID");
    assert_eq!(r.param().as_deref(), Some("code"));
    writes_nothing!(
        s,
        s.post(
            &beta.live,
            "/v1/users/link/confirm",
            &json!({"phone_number": A}).to_string()
        )
        .await
    )
    .expect_err(400, "MISSING_FIELD");
    let r = s
        .post(
            &beta.live,
            "/v1/users/link/confirm",
            &json!({"phone_number": A, "code": code}).to_string(),
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["outcome"], "LINKED");
    assert_eq!(
        s.provision(&beta.live, A).await["outcome"],
        "ALREADY_EXISTS"
    );

    // Phone change: code to the NEW number.
    let new = "+2250700000099";
    writes_nothing!(
        s,
        s.post(
            &acme.live,
            "/v1/users/phone-change/request",
            &json!({"phone_number": A, "new_phone_number": "99"}).to_string()
        )
        .await
    )
    .expect_err(400, "INVALID_PHONE")
    .param()
    .filter(|p| p == "new_phone_number")
    .expect("param names the new number");
    let outsider = s.tenant("Gamma", "0").await;
    writes_nothing!(
        s,
        s.post(
            &outsider.live,
            "/v1/users/phone-change/request",
            &json!({"phone_number": A, "new_phone_number": new}).to_string()
        )
        .await
    )
    .expect_err(403, "NOT_A_MEMBER");
    let r = s
        .post(
            &acme.live,
            "/v1/users/phone-change/request",
            &json!({"phone_number": A, "new_phone_number": new}).to_string(),
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["sent_to"], "+225******0099");
    let code = notifier
        .last_code_to(&Phone::parse(new).unwrap())
        .expect("code sent to the new number");
    let r = s
        .post(
            &acme.live,
            "/v1/users/phone-change/confirm",
            &json!({"phone_number": A, "code": code}).to_string(),
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["outcome"], "PHONE_CHANGED");
    assert_eq!(r.json()["phone_number"], new);
    s.get(
        &acme.live,
        "/v1/users/balance?phone_number=%2B2250700000099",
    )
    .await
    .expect(200);
    writes_nothing!(
        s,
        s.post(
            &acme.live,
            "/v1/users/phone-change/confirm",
            &json!({"phone_number": new, "code": ""}).to_string()
        )
        .await
    )
    .expect_err(400, "INVALID_PARAMETER");
}

#[tokio::test]
async fn transfers_send_read_list_and_bad_input() {
    let s = start().await;
    let acme = s.tenant("Acme", "100").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    s.fund_settled(&acme.live, A, "60").await;
    let send = |to: &str, q: &str| {
        json!({"from_phone_number": A, "to_phone_number": to, "token": "USDC", "quote_id": q})
            .to_string()
    };
    let r = s
        .post(
            &acme.live,
            "/v1/transfers/send",
            &send(B, "DIRECT_CRYPTO:USDC:10"),
        )
        .await;
    r.expect(202);
    let t = r.json();
    assert_eq!(t["status"], "QUEUED");
    assert_eq!(t["service_fee"], "0.030000");
    assert_eq!(t["recipient_amount"], "9.970000");
    let loc = r.header("location").unwrap();
    assert_eq!(loc, format!("/v1/transfers/{}", t["id"].as_str().unwrap()));
    s.settle().await;
    let read = s.get(&acme.live, &loc).await;
    read.expect(200);
    assert_eq!(read.json()["status"], "SETTLED");
    s.get(&beta.live, &loc).await.expect_err(404, "NOT_FOUND");
    s.get(&acme.live, "/v1/transfers/tr_nope")
        .await
        .expect_err(404, "NOT_FOUND");

    // FX-quoted transfer.
    let q = s
        .post(
            &acme.live,
            "/api/v1/fx/quote",
            r#"{"fiat_amount":3000,"local_currency":"XOF","target_token":"USDC"}"#,
        )
        .await;
    q.expect(200);
    let qid = q.json()["quote_id"].as_str().unwrap().to_string();
    let r = s
        .post(&acme.live, "/v1/transfers/send", &send(B, &qid))
        .await;
    r.expect(202);
    assert_eq!(r.json()["amount"], "5.000000");
    assert_eq!(r.json()["quote_id"], qid.as_str());
    writes_nothing!(
        s,
        s.post(&acme.live, "/v1/transfers/send", &send(B, &qid))
            .await
    )
    .expect_err(409, "QUOTE_ALREADY_USED");
    // Another tenant cannot redeem the quote.
    s.provision(&beta.live, "+2250700000050").await;
    let q2 = s
        .post(
            &acme.live,
            "/api/v1/fx/quote",
            r#"{"fiat_amount":"600","local_currency":"XOF"}"#,
        )
        .await;
    let q2id = q2.json()["quote_id"].as_str().unwrap().to_string();
    writes_nothing!(
        s,
        s.post(
            &beta.live,
            "/v1/transfers/send",
            &json!({"from_phone_number": "+2250700000050", "to_phone_number": B, "token": "USDC", "quote_id": q2id}).to_string()
        )
        .await
    )
    .expect_err(404, "NOT_FOUND");

    // List, filter and paging.
    s.settle().await;
    let l = s.get(&acme.live, "/v1/transfers").await;
    l.expect(200);
    assert_eq!(l.json()["total"], 2, "fundings are not transfers");
    assert_eq!(l.json()["limit"], 20);
    assert_eq!(l.json()["page"], 1);
    assert_eq!(
        l.json()["transfers"][0]["quote_id"],
        qid.as_str(),
        "newest first"
    );
    let l = s.get(&acme.live, "/v1/transfers?limit=1&page=2").await;
    assert_eq!(l.json()["transfers"].as_array().unwrap().len(), 1);
    let l = s.get(&acme.live, "/v1/transfers?status=FAILED").await;
    assert_eq!(l.json()["total"], 0);
    assert_eq!(s.get(&beta.live, "/v1/transfers").await.json()["total"], 0);
    for bad in [
        "/v1/transfers?status=done",
        "/v1/transfers?limit=0",
        "/v1/transfers?limit=101",
        "/v1/transfers?page=x",
        "/v1/transfers?sort=asc",
    ] {
        let r = s.get(&acme.live, bad).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
    }

    // Bad sends write nothing.
    for (body, status, code) in [
        (send(A, "DIRECT_CRYPTO:USDC:1"), 422, "SAME_WALLET"),
        (send(B, "DIRECT_CRYPTO:USDC:abc"), 400, "INVALID_QUOTE_ID"),
        (send(B, "fx_123"), 400, "INVALID_QUOTE_ID"),
        (send(B, "DIRECT_CRYPTO:USDT:1"), 422, "QUOTE_TOKEN_MISMATCH"),
        (send(B, "DIRECT_CRYPTO:USDC:100000"), 422, "INSUFFICIENT_FUNDS"),
        (send("+1", "DIRECT_CRYPTO:USDC:1"), 400, "INVALID_PHONE"),
        (
            json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC", "quote_id": "DIRECT_CRYPTO:USDC:1", "amount": "5"}).to_string(),
            400,
            "UNKNOWN_FIELD",
        ),
    ] {
        writes_nothing!(s, s.post(&acme.live, "/v1/transfers/send", &body).await)
            .expect_err(status, code);
    }
    writes_nothing!(
        s,
        s.post(
            &beta.live,
            "/v1/transfers/send",
            &send(B, "DIRECT_CRYPTO:USDC:1")
        )
        .await
    )
    .expect_err(403, "NOT_A_MEMBER");
    let r = s
        .post(
            &acme.live,
            "/v1/transfers/send",
            &send("+1", "DIRECT_CRYPTO:USDC:1"),
        )
        .await;
    assert_eq!(r.param().as_deref(), Some("to_phone_number"));
}

#[tokio::test]
async fn quotes_and_bad_input() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let r = s
        .post(
            &acme.live,
            "/api/v1/fx/quote",
            r#"{"fiat_amount":6000,"local_currency":"XOF","target_token":"USDC"}"#,
        )
        .await;
    r.expect(200);
    let q = r.json();
    assert_eq!(q["currency_pair"], "XOF_USDC");
    assert_eq!(q["expected_out"], "10.000000");
    assert_eq!(q["fiat_amount"], "6000.00");
    assert_eq!(q["target_token"], "USDC");
    assert!(q["quote_id"].as_str().unwrap().starts_with("fx_"));
    let exp = Timestamp::parse_rfc3339(q["expires_at"].as_str().unwrap()).unwrap();
    let now = s.app.engine().ports().clock.now();
    assert!(
        (exp.millis() - now.millis() - 60_000).abs() < 5_000,
        "60 s lifetime"
    );
    for (body, code, param) in [
        (
            r#"{"fiat_amount":-5,"local_currency":"XOF"}"#,
            "INVALID_PARAMETER",
            "fiat_amount",
        ),
        (
            r#"{"fiat_amount":"1.234","local_currency":"XOF"}"#,
            "INVALID_PARAMETER",
            "fiat_amount",
        ),
        (
            r#"{"fiat_amount":true,"local_currency":"XOF"}"#,
            "INVALID_TYPE",
            "fiat_amount",
        ),
        (
            r#"{"fiat_amount":100,"local_currency":"ABC"}"#,
            "UNKNOWN_CURRENCY",
            "local_currency",
        ),
        (
            r#"{"fiat_amount":100,"local_currency":"XOF","target_token":"DAI"}"#,
            "UNKNOWN_TOKEN",
            "target_token",
        ),
        (
            r#"{"local_currency":"XOF"}"#,
            "MISSING_FIELD",
            "fiat_amount",
        ),
    ] {
        let r = writes_nothing!(s, s.post(&acme.live, "/api/v1/fx/quote", body).await);
        r.expect_err(400, code);
        assert_eq!(r.param().as_deref(), Some(param), "{body}");
    }
}

#[tokio::test]
async fn swaps_are_not_found_until_the_engine_has_them() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    s.get(&acme.live, "/v1/swaps/sw_01JD0000000000000000000000")
        .await
        .expect_err(404, "NOT_FOUND");
    s.get(&acme.live, "/v1/swaps/anything")
        .await
        .expect_err(404, "NOT_FOUND");
}

#[tokio::test]
async fn tron_and_solana_sends_gate_on_readiness() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    for (rail, prefix, token) in [
        (RailId::Tron, "/v1/tron", "USDT"),
        (RailId::Solana, "/v1/solana", "USDC"),
    ] {
        let body = json!({"from_phone_number": A, "to_phone_number": B, "token": token,
            "quote_id": format!("DIRECT_CRYPTO:{token}:1")})
        .to_string();
        // READY (sim default): the send runs (here: no sender wallet, 404).
        writes_nothing!(
            s,
            s.post(&acme.live, &format!("{prefix}/transfers/send"), &body)
                .await
        )
        .expect_err(404, "NOT_FOUND");
        // INBOUND_READY: 503 RAIL_NOT_READY (spec 1.4, 1.5, 7).
        let sim = s.app.sim_rail(rail).unwrap();
        sim.set_sponsor_funded(false);
        let ready = s.send(Method::GET, "/health/ready", None, None, &[]).await;
        assert_eq!(ready.json()[rail.name()], "INBOUND_READY");
        let r = writes_nothing!(
            s,
            s.post(&acme.live, &format!("{prefix}/transfers/send"), &body)
                .await
        );
        r.expect_err(503, "RAIL_NOT_READY");
        sim.set_sponsor_funded(true);
        // Sandbox: no simulation for these.
        s.post(&acme.test, &format!("{prefix}/transfers/send"), &body)
            .await
            .expect_err(403, "SANDBOX_UNSUPPORTED");
        // Bad input is 400 whatever the readiness.
        s.post(
            &acme.live,
            &format!("{prefix}/transfers/send"),
            &body.replace(A, "nope"),
        )
        .await
        .expect_err(400, "INVALID_PHONE");
        s.post(
            &acme.live,
            &format!("{prefix}/transfers/send"),
            &body.replace("\"quote_id\"", "\"memo\":1,\"quote_id\""),
        )
        .await
        .expect_err(400, "UNKNOWN_FIELD");
        s.post(
            &acme.test,
            &format!("{prefix}/users/provision"),
            &json!({"phone_number": A}).to_string(),
        )
        .await
        .expect_err(403, "SANDBOX_UNSUPPORTED");
        s.post(
            &acme.live,
            &format!("{prefix}/users/provision"),
            r#"{"phone_number":"1"}"#,
        )
        .await
        .expect_err(400, "INVALID_PHONE");
        s.get(&acme.live, &format!("{prefix}/users/balance"))
            .await
            .expect_err(400, "INVALID_QUERY");
    }
    // TRON is USDT only.
    s.post(
        &acme.live,
        "/v1/tron/transfers/send",
        &json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC", "quote_id": "DIRECT_CRYPTO:USDC:1"}).to_string(),
    )
    .await
    .expect_err(400, "UNKNOWN_TOKEN");
}

/// `/v1/tron/users/*` and `/v1/solana/users/*`: the phone's one wallet (same consent
/// rules and outcomes as `/v1/users/provision`) gets a durable address on the rail, and
/// its balances there are read live (TRON: USDT; Solana: USDC and USDT, spec 4.5).
async fn parallel_rail_wallets_provision_and_read_live_balances(rail: RailId, token: Token) {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    let chain = s.app.sim_rail(rail).unwrap().clone();
    let prefix = format!("/v1/{}", rail.name());
    let field = format!("balance_{}", token.as_str().to_ascii_lowercase());
    let provision = |key: String, phone: &'static str| {
        let s = &s;
        let path = format!("{prefix}/users/provision");
        async move {
            let r = s
                .post(&key, &path, &json!({"phone_number": phone}).to_string())
                .await;
            r.expect(200);
            r.json()
        }
    };
    let p = provision(acme.live.clone(), A).await;
    assert_eq!(p["outcome"], "PROVISIONED");
    assert_eq!(p["rail"], rail.name());
    let wallet_id = p["wallet_id"].as_str().unwrap().to_string();
    let expected = chain
        .address_for(&KeyPurpose::Wallet(wallet_id.clone()))
        .await
        .unwrap();
    assert_eq!(p["address"], expected.0.as_str());
    // Solana: both token accounts exist before the response (spec 4.3). (The simulated
    // TRON chain has no token accounts: always true there.)
    for t in Token::ALL {
        assert!(
            chain.token_account_exists(&expected, t),
            "{t} of {expected:?}"
        );
    }
    // Durable: asked again, and through the EVM route, it is the same wallet and address.
    let again = provision(acme.live.clone(), A).await;
    assert_eq!(again["outcome"], "ALREADY_EXISTS");
    assert_eq!(again["address"], p["address"]);
    let evm = s.provision(&acme.live, A).await;
    assert_eq!(evm["wallet_id"], wallet_id.as_str());
    assert_ne!(evm["address"], p["address"]);
    // Another tenant meets the same consent rule as on /v1/users/provision.
    let other = provision(beta.live.clone(), A).await;
    assert_eq!(other["outcome"], "LINK_REQUIRED");
    assert_eq!(other["wallet_id"], wallet_id.as_str());

    // No native coin, tokens received: the balance is a live read.
    let balance = |key: String, phone: &'static str| {
        let s = &s;
        let path = format!("{prefix}/users/balance?phone_number=%2B{}", &phone[1..]);
        async move { s.get(&key, &path).await }
    };
    let r = balance(acme.live.clone(), A).await;
    r.expect(200);
    assert_eq!(r.json()[&field], "0.000000");
    chain.mint(&expected, token, m("25")).unwrap();
    chain.mine(1);
    let r = balance(acme.live.clone(), A).await;
    r.expect(200);
    assert_eq!(r.json()[&field], "25.000000");
    assert_eq!(r.json()["address"], p["address"]);
    assert_eq!(r.json()["rail"], rail.name());
    if rail == RailId::Solana {
        // Both SPL tokens are read (spec 4.5), each from its own account.
        assert_eq!(r.json()["balance_usdt"], "0.000000");
    } else {
        assert!(r.json().get("balance_usdc").is_none(), "{}", r.text());
    }

    // Not a member: 403; a wallet with no address on the rail yet: 404.
    balance(beta.live.clone(), A)
        .await
        .expect_err(403, "NOT_A_MEMBER");
    s.provision(&acme.live, B).await;
    balance(acme.live.clone(), B)
        .await
        .expect_err(404, "NOT_FOUND");
}

#[tokio::test]
async fn tron_wallets_provision_offline_and_read_usdt_balances() {
    parallel_rail_wallets_provision_and_read_live_balances(RailId::Tron, Token::Usdt).await;
}

#[tokio::test]
async fn solana_wallets_provision_their_atas_and_read_usdc_and_usdt() {
    parallel_rail_wallets_provision_and_read_live_balances(RailId::Solana, Token::Usdc).await;
}

/// `POST /v1/tron/transfers/send`, `POST /v1/solana/transfers/send`: tokens that arrived
/// on the wallet's address on that rail (and only there: EVM balances do not count) move
/// to another phone's address on the rail with no fee at all (spec 8.4: the service fee
/// and the tenant fee are EVM's), even for a tenant that charges a fee on EVM transfers.
async fn parallel_send_moves_the_rails_own_balance_with_no_fee(rail: RailId, token: Token) {
    let s = start().await;
    let acme = s.tenant("Acme", "100").await;
    s.flat_tenant_fee(&acme, 250_000, "0x00000000000000000000000000000000000000fe")
        .await;
    let chain = s.app.sim_rail(rail).unwrap().clone();
    let prefix = format!("/v1/{}", rail.name());
    let t = token.as_str();
    let pa = s
        .post(
            &acme.live,
            &format!("{prefix}/users/provision"),
            &json!({"phone_number": A}).to_string(),
        )
        .await;
    pa.expect(200);
    let a_addr = ChainAddress(pa.json()["address"].as_str().unwrap().to_string());
    // The token funded on the EVM rail is not money on this rail.
    s.app
        .engine()
        .credit_treasury(&acme.id, token, m("50"), "wire")
        .await
        .unwrap();
    s.post(
        &acme.live,
        "/v1/users/fund",
        &json!({"phone_number": A, "token": t, "amount": "50"}).to_string(),
    )
    .await
    .expect(202);
    s.settle().await;
    let evm = s
        .get(
            &acme.live,
            "/v1/users/balance?phone_number=%2B2250700000001",
        )
        .await;
    evm.expect(200);
    assert!(evm.text().contains("50.000000"), "{}", evm.text());
    // B is an EVM-only wallet of the tenant: no address on this rail yet.
    s.provision(&acme.live, B).await;
    let send = |to: &'static str, amount: &str, key: &str| {
        let s = &s;
        let body = json!({"from_phone_number": A, "to_phone_number": to, "token": t,
            "quote_id": format!("DIRECT_CRYPTO:{t}:{amount}")})
        .to_string();
        let key = key.to_string();
        let live = acme.live.clone();
        let path = format!("{prefix}/transfers/send");
        async move {
            s.send(
                Method::POST,
                &path,
                Some(&live),
                Some(&body),
                &[("Idempotency-Key", key.as_str())],
            )
            .await
        }
    };
    writes_nothing!(s, send(B, "10", "k0").await).expect_err(422, "INSUFFICIENT_FUNDS");

    // 25 arrive from outside on the rail's address; the scanner credits them at depth.
    chain.mint(&a_addr, token, m("25")).unwrap();
    s.settle().await;
    let r = send(B, "10", "k1").await;
    r.expect(202);
    let op = r.json();
    assert_eq!(op["rail"], rail.name());
    assert_eq!(op["status"], "QUEUED");
    assert_eq!(op["amount"], "10.000000");
    assert_eq!(op["recipient_amount"], "10.000000");
    assert_eq!(op["service_fee"], "0.000000");
    assert_eq!(op["tenant_fee"], "0.000000");
    assert!(
        op.get("created_recipient_ata").is_none(),
        "unknown until confirmed"
    );
    // Idempotent by key: the same operation again, nothing new.
    let again = send(B, "10", "k1").await;
    again.expect(202);
    assert_eq!(again.json()["id"], op["id"]);
    // More than the balance left on the rail (15): refused, nothing held.
    writes_nothing!(s, send(B, "15.000001", "k2").await).expect_err(422, "INSUFFICIENT_FUNDS");
    s.settle().await;
    let id = op["id"].as_str().unwrap();
    let done = s.get(&acme.live, &format!("/v1/transfers/{id}")).await;
    done.expect(200);
    assert_eq!(done.json()["status"], "SETTLED", "{}", done.text());
    let tx_hash = done.json()["tx_hash"].as_str().unwrap().to_string();
    // B had no address on the rail: it got one with the send, and holds the whole amount.
    let b = s
        .get(
            &acme.live,
            &format!("{prefix}/users/balance?phone_number=%2B2250700000002"),
        )
        .await;
    b.expect(200);
    let field = format!("balance_{}", t.to_ascii_lowercase());
    assert_eq!(b.json()[&field], "10.000000");
    let b_addr = ChainAddress(b.json()["address"].as_str().unwrap().to_string());
    assert_eq!(chain.balance(&b_addr, token).await.unwrap(), m("10"));
    assert_eq!(chain.balance(&a_addr, token).await.unwrap(), m("15"));
    if rail == RailId::Tron {
        assert_eq!(tx_hash.len(), 64, "a TRON txID: {tx_hash}");
        assert!(done.json().get("created_recipient_ata").is_none());
        return;
    }
    // Solana: B never held the mint, so the payment opened its account (rent paid by
    // the service) and says so; the other token's account is not opened by a send.
    assert_eq!(
        done.json()["created_recipient_ata"],
        true,
        "{}",
        done.text()
    );
    assert!(chain.token_account_exists(&b_addr, token));
    let other = if token == Token::Usdc {
        Token::Usdt
    } else {
        Token::Usdc
    };
    assert!(!chain.token_account_exists(&b_addr, other));
    // Provisioning B on Solana now completes its wallet: both accounts exist.
    s.post(
        &acme.live,
        &format!("{prefix}/users/provision"),
        &json!({"phone_number": B}).to_string(),
    )
    .await
    .expect(200);
    assert!(chain.token_account_exists(&b_addr, other));
    // To a recipient that already holds the mint, no account is opened.
    let r = send(B, "5", "k3").await;
    r.expect(202);
    s.settle().await;
    let id = r.json()["id"].as_str().unwrap().to_string();
    let done = s.get(&acme.live, &format!("/v1/transfers/{id}")).await;
    assert_eq!(done.json()["status"], "SETTLED", "{}", done.text());
    assert_eq!(
        done.json()["created_recipient_ata"],
        false,
        "{}",
        done.text()
    );
    assert_eq!(chain.balance(&b_addr, token).await.unwrap(), m("15"));
}

#[tokio::test]
async fn tron_send_moves_tron_usdt_with_no_fee() {
    parallel_send_moves_the_rails_own_balance_with_no_fee(RailId::Tron, Token::Usdt).await;
}

#[tokio::test]
async fn solana_send_moves_spl_tokens_with_no_fee_and_reports_opened_accounts() {
    parallel_send_moves_the_rails_own_balance_with_no_fee(RailId::Solana, Token::Usdc).await;
}

#[tokio::test]
async fn tron_send_is_503_when_tron_is_not_configured() {
    let mut c = test_config();
    c.rails.tron = false;
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "0").await;
    let ready = s.send(Method::GET, "/health/ready", None, None, &[]).await;
    assert_eq!(ready.json()["tron"], "DISABLED");
    s.post(
        &acme.live,
        "/v1/tron/transfers/send",
        &json!({"from_phone_number": A, "to_phone_number": B, "token": "USDT", "quote_id": "DIRECT_CRYPTO:USDT:1"}).to_string(),
    )
    .await
    .expect_err(503, "RAIL_NOT_READY");
}

#[tokio::test]
async fn health_metrics_and_routing_errors() {
    let mut c = test_config();
    c.metrics_token = Some(stablecoin_server::config::Secret::new(METRICS_TOKEN));
    let s = start_with(c).await;
    let live = s.send(Method::GET, "/health/live", None, None, &[]).await;
    live.expect(200);
    assert_eq!(live.json()["status"], "ok");
    let ready = s.send(Method::GET, "/health/ready", None, None, &[]).await;
    ready.expect(200);
    let j = ready.json();
    assert_eq!(j["status"], "ok");
    for f in ["polygon", "tron", "solana"] {
        assert_eq!(j[f], "READY", "{f}");
    }
    assert_eq!(j["base"], "DISABLED");
    assert_eq!(j["bsc"], "DISABLED");
    // DEGRADED with reasons when monitoring is off (spec 1.5).
    s.app
        .sim_rail(RailId::Solana)
        .unwrap()
        .set_monitoring(false);
    let j = s.ready_details().await.json();
    assert_eq!(j["solana"], "DEGRADED");
    assert!(
        !j["rails"]["solana"]["reasons"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let metrics = s.metrics_with_token().await;
    metrics.expect(200);
    assert!(
        metrics
            .header("content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    let text = metrics.text();
    assert!(
        text.contains(
            "http_requests_total{method=\"GET\",route=\"/health/ready\",status=\"200\"} 2"
        )
    );
    assert!(text.contains(
        "http_request_duration_seconds_bucket{method=\"GET\",route=\"/health/live\",le=\"+Inf\"} 1"
    ));
    assert!(text.contains("stablecoin_rail_ready{rail=\"solana\",status=\"DEGRADED\"} 1"));

    let r = s.send(Method::GET, "/v2/nothing", None, None, &[]).await;
    r.expect_err(404, "ROUTE_NOT_FOUND");
    let r = s
        .send(Method::DELETE, "/health/live", None, None, &[])
        .await;
    r.expect_err(405, "METHOD_NOT_ALLOWED");
    assert!(r.header("x-request-id").unwrap().starts_with("req_"));
}

/// The nice values of this process's threads named like the workers' thread (Linux
/// shows the first 15 bytes of a thread's name).
#[cfg(target_os = "linux")]
fn worker_thread_nices() -> Vec<i64> {
    let mut nices = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() != "stablecoin-work" {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        // Fields after the parenthesized name: state is field 3, nice field 19.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        if let Some(n) = rest.split_whitespace().nth(16) {
            nices.push(n.parse().unwrap());
        }
    }
    nices
}

#[tokio::test]
async fn graceful_shutdown_finishes_and_stops() {
    let mut c = test_config();
    c.run_workers = true;
    c.worker_nice = 7;
    let mut s = start_with(c).await;
    let acme = s.tenant("Acme", "10").await;
    s.provision(&acme.live, A).await;
    // The workers run on threads of their own (the one that owns their runtime, and
    // the runtime's two), every one at the configured lower priority.
    #[cfg(target_os = "linux")]
    {
        let nices = worker_thread_nices();
        assert!(nices.len() >= 3, "{nices:?}");
        assert!(nices.iter().all(|n| *n == 7), "{nices:?}");
    }
    s.shutdown().await;
    let err = reqwest::get(format!("{}/health/live", s.base)).await;
    assert!(err.is_err(), "no longer listening");
    // ... and serve returned only after those threads finished their last round and
    // exited: none is left the moment it returns (no waiting here, which would pass
    // even if shutdown returned early).
    #[cfg(target_os = "linux")]
    assert_eq!(
        worker_thread_nices(),
        Vec::<i64>::new(),
        "worker threads outlived serve"
    );
}
