//! HTTP idempotency: byte-for-byte replay, reuse with another request, in-flight
//! duplicates, and concurrent duplicates that execute once.

use crate::common::*;
use serde_json::json;
use std::sync::Arc;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

#[tokio::test]
async fn replays_the_first_response_byte_for_byte() {
    let s = start().await;
    let t = s.tenant("Acme", "100").await;
    s.provision(&t.live, A).await;
    let body = json!({"phone_number": A, "token": "USDC", "amount": "30"}).to_string();
    let first = s
        .post_idem(&t.live, "/v1/users/fund", &body, "fund-1")
        .await;
    first.expect(202);
    assert_eq!(
        first.header("idempotent-replayed").as_deref(),
        Some("false")
    );
    let commits = s.commits();
    // Same request with other formatting and key order: still the same request.
    let reordered = r#"{ "amount": "30", "token": "USDC", "phone_number": "+2250700000001" }"#;
    for b in [body.as_str(), reordered] {
        let again = s.post_idem(&t.live, "/v1/users/fund", b, "fund-1").await;
        again.expect(202);
        assert_eq!(again.bytes, first.bytes, "byte-equal body");
        assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
        assert_eq!(again.header("location"), first.header("location"));
        assert_eq!(
            again.header("content-type").as_deref(),
            Some("application/json")
        );
    }
    assert_eq!(s.commits(), commits, "a replay writes nothing");
    assert_eq!(s.treasury(&t).await, m("70"), "executed once");
    // The replay survives the operation moving on: it is the first response.
    s.settle().await;
    let again = s
        .post_idem(&t.live, "/v1/users/fund", &body, "fund-1")
        .await;
    assert_eq!(again.bytes, first.bytes);

    // Non-money endpoints too: the replay says PROVISIONED, not ALREADY_EXISTS.
    let pb = json!({"phone_number": B}).to_string();
    let p1 = s
        .post_idem(&t.live, "/v1/users/provision", &pb, "prov-1")
        .await;
    let p2 = s
        .post_idem(&t.live, "/v1/users/provision", &pb, "prov-1")
        .await;
    assert_eq!(p1.json()["outcome"], "PROVISIONED");
    assert_eq!(p2.bytes, p1.bytes);
    assert_eq!(p2.header("idempotent-replayed").as_deref(), Some("true"));
    let p3 = s.post(&t.live, "/v1/users/provision", &pb).await;
    assert_eq!(p3.json()["outcome"], "ALREADY_EXISTS");
}

#[tokio::test]
async fn same_key_with_another_request_is_422() {
    let s = start().await;
    let t = s.tenant("Acme", "100").await;
    s.provision(&t.live, A).await;
    let body =
        |amount: &str| json!({"phone_number": A, "token": "USDC", "amount": amount}).to_string();
    s.post_idem(&t.live, "/v1/users/fund", &body("10"), "k")
        .await
        .expect(202);
    let commits = s.commits();
    s.post_idem(&t.live, "/v1/users/fund", &body("11"), "k")
        .await
        .expect_err(422, "IDEMPOTENCY_KEY_REUSED");
    s.post_idem(
        &t.live,
        "/v1/users/provision",
        &json!({"phone_number": A}).to_string(),
        "k",
    )
    .await
    .expect_err(422, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(s.commits(), commits);
    assert_eq!(s.treasury(&t).await, m("90"));
    // Keys are per tenant: another tenant's "k" is its own.
    let u = s.tenant("Beta", "100").await;
    s.post_idem(&u.live, "/v1/users/fund", &body("11"), "k")
        .await
        .expect(202);
}

#[tokio::test]
async fn errors_are_not_stored_and_keys_are_validated() {
    let s = start().await;
    let t = s.tenant("Acme", "10").await;
    s.provision(&t.live, A).await;
    let body = json!({"phone_number": A, "token": "USDC", "amount": "50"}).to_string();
    s.post_idem(&t.live, "/v1/users/fund", &body, "retry-me")
        .await
        .expect_err(422, "INSUFFICIENT_FUNDS");
    s.app
        .engine()
        .credit_treasury(
            &t.id,
            stablecoin_core::domain::money::Token::Usdc,
            m("100"),
            "top-up",
        )
        .await
        .unwrap();
    let r = s
        .post_idem(&t.live, "/v1/users/fund", &body, "retry-me")
        .await;
    r.expect(202);
    assert_eq!(r.header("idempotent-replayed").as_deref(), Some("false"));

    let commits = s.commits();
    let long = "x".repeat(256);
    for key in [long.as_str(), "caf\u{e9}"] {
        let r = s
            .send(
                reqwest::Method::POST,
                "/v1/users/fund",
                Some(&t.live),
                Some(&body),
                &[("Idempotency-Key", key)],
            )
            .await;
        r.expect_err(400, "INVALID_IDEMPOTENCY_KEY");
    }
    assert_eq!(s.commits(), commits);
}

#[tokio::test]
async fn a_key_in_flight_is_409() {
    let s = start().await;
    let t = s.tenant("Acme", "100").await;
    s.provision(&t.live, A).await;
    let body = json!({"phone_number": A, "token": "USDC", "amount": "5"}).to_string();
    let guard = s.app.state().inflight.try_acquire(&t.id.0, "busy").unwrap();
    let commits = s.commits();
    s.post_idem(&t.live, "/v1/users/fund", &body, "busy")
        .await
        .expect_err(409, "IDEMPOTENCY_KEY_IN_USE");
    assert_eq!(s.commits(), commits);
    drop(guard);
    s.post_idem(&t.live, "/v1/users/fund", &body, "busy")
        .await
        .expect(202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_duplicates_execute_once() {
    let s = Arc::new(start().await);
    let t = s.tenant("Acme", "100").await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    s.fund_settled(&t.live, A, "50").await;
    let body = json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
        "quote_id": "DIRECT_CRYPTO:USDC:20"})
    .to_string();
    let mut tasks = Vec::new();
    for _ in 0..24 {
        let s = s.clone();
        let key = t.live.clone();
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            s.post_idem(&key, "/v1/transfers/send", &body, "dup").await
        }));
    }
    let mut ok = Vec::new();
    let mut busy = 0;
    for task in tasks {
        let r = task.await.unwrap();
        match r.status {
            202 => ok.push(r.bytes),
            409 => {
                assert_eq!(r.code(), "IDEMPOTENCY_KEY_IN_USE");
                busy += 1;
            }
            other => panic!("unexpected {other}: {}", r.text()),
        }
    }
    assert!(!ok.is_empty());
    assert!(
        ok.iter().all(|b| *b == ok[0]),
        "every 202 is the same response"
    );
    assert_eq!(ok.len() + busy, 24);
    let list = s.get(&t.live, "/v1/transfers").await.json();
    assert_eq!(list["total"], 1, "executed once");
    s.settle().await;
    let b = s
        .get(&t.live, "/v1/users/balance?phone_number=%2B2250700000001")
        .await;
    assert_eq!(b.json()["balance_usdc"], "30.000000", "debited once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_duplicates_across_the_http_layer_still_move_money_once() {
    // Two requests that the HTTP layer cannot see as duplicates (as on two nodes: no
    // shared in-flight set, no HTTP record yet) still carry the same key down to the
    // engine, whose record commits with the operation.
    let s = Arc::new(start().await);
    let t = s.tenant("Acme", "100").await;
    s.provision(&t.live, A).await;
    let req = stablecoin_core::engine::FundRequest {
        phone_number: stablecoin_core::domain::phone::Phone::parse(A).unwrap(),
        token: stablecoin_core::domain::money::Token::Usdc,
        amount: m("10"),
    };
    let e1 = s.app.engine().clone();
    let e2 = s.app.engine().clone();
    let (r1, r2) = tokio::join!(
        {
            let (id, req) = (t.id.clone(), req.clone());
            async move { e1.fund(&id, &req, Some("node-dup")).await }
        },
        {
            let (id, req) = (t.id.clone(), req.clone());
            async move { e2.fund(&id, &req, Some("node-dup")).await }
        }
    );
    assert_eq!(r1.unwrap().id, r2.unwrap().id);
    assert_eq!(s.treasury(&t).await, m("90"));
}

/// A keyed money request is one commit: the engine's idempotency record goes in the
/// operation's own batch and no HTTP record follows it. The key belongs to the first
/// request that used it, whichever route: a money route after another route, or the
/// other way round, is `IDEMPOTENCY_KEY_REUSED`.
#[tokio::test]
async fn a_keyed_money_request_is_one_commit_and_a_key_has_one_owner() {
    let s = start().await;
    let t = s.tenant("Acme", "100").await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    let fund = json!({"phone_number": A, "token": "USDC", "amount": "30"}).to_string();
    let before = s.commits();
    let first = s.post_idem(&t.live, "/v1/users/fund", &fund, "one-1").await;
    first.expect(202);
    assert_eq!(
        s.commits(),
        before + 1,
        "the operation and its key in one commit"
    );
    let send = json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
                      "quote_id": "DIRECT_CRYPTO:USDC:1"})
    .to_string();
    s.settle().await;
    let before = s.commits();
    let sent = s
        .post_idem(&t.live, "/v1/transfers/send", &send, "one-2")
        .await;
    sent.expect(202);
    assert_eq!(s.commits(), before + 1, "a keyed send is one commit");
    let again = s
        .post_idem(&t.live, "/v1/transfers/send", &send, "one-2")
        .await;
    assert_eq!(again.bytes, sent.bytes);
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(again.header("location"), sent.header("location"));
    assert_eq!(s.commits(), before + 1, "a replay writes nothing");
    // Another route's key on a money route, and a money route's key elsewhere.
    s.post_idem(
        &t.live,
        "/v1/users/provision",
        &json!({"phone_number": "+2250700000009"}).to_string(),
        "one-3",
    )
    .await
    .expect(200);
    s.post_idem(&t.live, "/v1/users/fund", &fund, "one-3")
        .await
        .expect_err(422, "IDEMPOTENCY_KEY_REUSED");
    s.post_idem(
        &t.live,
        "/v1/users/provision",
        &json!({"phone_number": A}).to_string(),
        "one-1",
    )
    .await
    .expect_err(422, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(s.treasury(&t).await, m("70"), "funded once");
}

/// Escrow creation is marked as a route whose engine records the key itself
/// (`RouteKind::EngineRecorded`): a key with the escrow engine's record but no HTTP one
/// (the HTTP record lost, e.g. by a crash between the two commits) is the escrow
/// engine's to answer, and it replays the escrow. Unmarked, the HTTP layer would take
/// the engine's record for another route's and answer `IDEMPOTENCY_KEY_REUSED`.
#[tokio::test]
async fn an_escrow_whose_http_record_is_missing_is_replayed_by_its_engine() {
    let s = start().await;
    let t = s.tenant("Acme", "0").await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    let body = json!({"buyer_phone_number": A, "seller_phone_number": B,
        "amount": "40", "reference": "lost-1"})
    .to_string();
    // The escrow engine alone, as if the HTTP record after it had not been written.
    let auth = s.app.engine().authenticate(&t.live).await.unwrap();
    let escrows = s.app.state().escrow.clone().expect("escrow engine");
    let created = escrows
        .create(
            &auth,
            &serde_json::from_str(&body).unwrap(),
            Some("esc-lost"),
        )
        .await
        .unwrap();
    let r = s.post_idem(&t.live, "/v1/escrows", &body, "esc-lost").await;
    r.expect(201);
    assert_eq!(r.json()["id"], created.id.as_str());
    assert_eq!(s.get(&t.live, "/v1/escrows").await.json()["total"], 1);
}
