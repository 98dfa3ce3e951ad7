//! Sandbox mode (spec 1): test keys never move money. Supported mutations answer
//! simulated responses that store nothing and cannot be read back; the rest answer
//! SANDBOX_UNSUPPORTED; reads pass through.

use crate::common::*;
use serde_json::json;
use stablecoin_core::domain::phone::Phone;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

#[tokio::test]
async fn supported_mutations_are_simulated_and_store_nothing() {
    let s = start().await;
    let t = s.tenant("Acme", "100").await;
    let commits = s.commits();
    let treasury = s.treasury(&t).await;

    // Provision.
    let p = s.provision(&t.test, A).await;
    assert_eq!(p["simulated"], true);
    assert_eq!(p["outcome"], "PROVISIONED");
    assert!(p["wallet_id"].as_str().unwrap().starts_with("wal_sim_"));
    assert!(p["address"].as_str().unwrap().starts_with("0x"));
    assert!(
        !s.app
            .engine()
            .wallet_exists(&Phone::parse(A).unwrap())
            .await
    );

    // Fund: 202, no Location (nothing to read), treasury untouched.
    let r = s
        .post(
            &t.test,
            "/v1/users/fund",
            &json!({"phone_number": A, "token": "USDC", "amount": "10"}).to_string(),
        )
        .await;
    r.expect(202);
    assert!(r.header("location").is_none());
    let fd = r.json();
    assert_eq!(fd["simulated"], true);
    assert_eq!(fd["status"], "QUEUED");
    let fid = fd["id"].as_str().unwrap();
    assert!(fid.starts_with("fd_sim_"));
    s.get(&t.test, &format!("/v1/fundings/{fid}"))
        .await
        .expect_err(404, "NOT_FOUND");
    s.get(&t.live, &format!("/v1/fundings/{fid}"))
        .await
        .expect_err(404, "NOT_FOUND");

    // Transfer with DIRECT_CRYPTO: priced like live.
    let send = |q: &str| {
        json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC", "quote_id": q})
            .to_string()
    };
    let r = s
        .post(
            &t.test,
            "/v1/transfers/send",
            &send("DIRECT_CRYPTO:USDC:10"),
        )
        .await;
    r.expect(202);
    let tr = r.json();
    assert_eq!(tr["simulated"], true);
    assert_eq!(tr["service_fee"], "0.030000");
    assert_eq!(tr["recipient_amount"], "9.970000");
    let tid = tr["id"].as_str().unwrap();
    assert!(tid.starts_with("tr_sim_"));
    s.get(&t.test, &format!("/v1/transfers/{tid}"))
        .await
        .expect_err(404, "NOT_FOUND");

    // Quote, then a sandbox send redeems it once.
    let q = s
        .post(
            &t.test,
            "/api/v1/fx/quote",
            r#"{"fiat_amount":6000,"local_currency":"XOF"}"#,
        )
        .await;
    q.expect(200);
    assert_eq!(q.json()["simulated"], true);
    assert_eq!(q.json()["expected_out"], "10.000000");
    let qid = q.json()["quote_id"].as_str().unwrap().to_string();
    assert!(qid.starts_with("fx_sim_"));
    let r = s.post(&t.test, "/v1/transfers/send", &send(&qid)).await;
    r.expect(202);
    assert_eq!(r.json()["amount"], "10.000000");
    s.post(&t.test, "/v1/transfers/send", &send(&qid))
        .await
        .expect_err(409, "QUOTE_ALREADY_USED");

    // Link and phone-change requests: simulated, no SMS.
    let r = s
        .post(
            &t.test,
            "/v1/users/link/request",
            &json!({"phone_number": A}).to_string(),
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["simulated"], true);
    assert!(
        r.json()["challenge_id"]
            .as_str()
            .unwrap()
            .starts_with("otp_sim_")
    );
    let r = s
        .post(
            &t.test,
            "/v1/users/phone-change/request",
            &json!({"phone_number": A, "new_phone_number": B}).to_string(),
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["sent_to"], "+225******0002");
    assert!(
        s.app.state().notifier.sent().is_empty(),
        "no SMS in sandbox"
    );

    assert_eq!(s.commits(), commits, "the sandbox wrote nothing");
    assert_eq!(s.treasury(&t).await, treasury);
    // The live view never saw any of it.
    assert_eq!(s.provision(&t.live, A).await["outcome"], "PROVISIONED");
    assert_eq!(s.get(&t.live, "/v1/transfers").await.json()["total"], 0);
}

#[tokio::test]
async fn quotes_do_not_cross_modes() {
    let s = start().await;
    let t = s.tenant("Acme", "100").await;
    s.provision(&t.live, A).await;
    s.fund_settled(&t.live, A, "50").await;
    let send = |q: &str| {
        json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC", "quote_id": q})
            .to_string()
    };
    let live_q = s
        .post(
            &t.live,
            "/api/v1/fx/quote",
            r#"{"fiat_amount":600,"local_currency":"XOF"}"#,
        )
        .await
        .json()["quote_id"]
        .as_str()
        .unwrap()
        .to_string();
    let sim_q = s
        .post(
            &t.test,
            "/api/v1/fx/quote",
            r#"{"fiat_amount":600,"local_currency":"XOF"}"#,
        )
        .await
        .json()["quote_id"]
        .as_str()
        .unwrap()
        .to_string();
    s.post(&t.test, "/v1/transfers/send", &send(&live_q))
        .await
        .expect_err(404, "NOT_FOUND");
    s.post(&t.live, "/v1/transfers/send", &send(&sim_q))
        .await
        .expect_err(400, "INVALID_QUOTE_ID");
    // The live quote is still usable live.
    s.post(&t.live, "/v1/transfers/send", &send(&live_q))
        .await
        .expect(202);
    // Another tenant's sandbox quote is not found.
    let other = s.tenant("Other", "0").await;
    let sim_q2 = s
        .post(
            &t.test,
            "/api/v1/fx/quote",
            r#"{"fiat_amount":600,"local_currency":"XOF"}"#,
        )
        .await
        .json()["quote_id"]
        .as_str()
        .unwrap()
        .to_string();
    s.post(&other.test, "/v1/transfers/send", &send(&sim_q2))
        .await
        .expect_err(404, "NOT_FOUND");
}

#[tokio::test]
async fn unsupported_mutations_are_refused_and_reads_pass_through() {
    let s = start().await;
    let t = s.tenant("Acme", "100").await;
    s.provision(&t.live, A).await;
    s.fund_settled(&t.live, A, "20").await;
    let commits = s.commits();
    for (path, body) in [
        (
            "/v1/users/withdraw",
            json!({"phone_number": A, "token": "USDC", "amount": "1", "payout_currency": "XOF"}),
        ),
        (
            "/v1/users/link/confirm",
            json!({"phone_number": A, "code": "123456"}),
        ),
        (
            "/v1/users/phone-change/confirm",
            json!({"phone_number": A, "code": "123456"}),
        ),
        ("/v1/tron/users/provision", json!({"phone_number": A})),
        ("/v1/solana/users/provision", json!({"phone_number": A})),
        (
            "/v1/tron/transfers/send",
            json!({"from_phone_number": A, "to_phone_number": B, "token": "USDT", "quote_id": "DIRECT_CRYPTO:USDT:1"}),
        ),
        (
            "/v1/solana/transfers/send",
            json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC", "quote_id": "DIRECT_CRYPTO:USDC:1"}),
        ),
    ] {
        s.post(&t.test, path, &body.to_string())
            .await
            .expect_err(403, "SANDBOX_UNSUPPORTED");
    }
    // Bad input is still reported as such.
    s.post(
        &t.test,
        "/v1/users/fund",
        &json!({"phone_number": A, "token": "USDC", "amount": "x"}).to_string(),
    )
    .await
    .expect_err(400, "INVALID_AMOUNT");
    s.post(
        &t.test,
        "/v1/transfers/send",
        &json!({"from_phone_number": A, "to_phone_number": A, "token": "USDC", "quote_id": "DIRECT_CRYPTO:USDC:1"}).to_string(),
    )
    .await
    .expect_err(422, "SAME_WALLET");
    assert_eq!(s.commits(), commits);
    // Reads: the normal handlers, the real data.
    let b = s
        .get(&t.test, "/v1/users/balance?phone_number=%2B2250700000001")
        .await;
    b.expect(200);
    assert_eq!(b.json()["balance_usdc"], "20.000000");
    let fundings = s
        .app
        .engine()
        .list_operations(
            &t.id,
            stablecoin_core::domain::state::OpKind::Funding,
            None,
            10,
            0,
        )
        .await
        .unwrap();
    let fid = fundings.0[0].id.0.clone();
    s.get(&t.test, &format!("/v1/fundings/{fid}"))
        .await
        .expect(200);
}

#[tokio::test]
async fn sandbox_requests_are_not_replayed_but_never_run_twice_at_once() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    let body = json!({"phone_number": A}).to_string();
    let a = s
        .post_idem(&t.test, "/v1/users/provision", &body, "k1")
        .await;
    let b = s
        .post_idem(&t.test, "/v1/users/provision", &body, "k1")
        .await;
    a.expect(200);
    b.expect(200);
    assert!(b.header("idempotent-replayed").is_none(), "nothing stored");
    assert_ne!(a.json()["wallet_id"], b.json()["wallet_id"]);
    let _held = s.app.state().inflight.try_acquire(&t.id.0, "k2").unwrap();
    s.post_idem(&t.test, "/v1/users/provision", &body, "k2")
        .await
        .expect_err(409, "IDEMPOTENCY_KEY_IN_USE");
}
