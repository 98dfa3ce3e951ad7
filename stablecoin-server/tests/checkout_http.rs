//! The checkout gateway over real HTTP on loopback: businesses and their keys, sessions
//! per business and mode, every list filter and paging edge, idempotent create, a
//! session paid on the simulated chain with its payments webhooks signed and in order,
//! and the deposit intake's receiver rules.

use crate::common::webhook_receiver::recording_receiver;
use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::{ChainAddress, RailId};
use stablecoin_webhooks::Family;

/// The deposit intake's shared secret (at least 32 characters: start-up refuses less).
const INTAKE_SECRET: &str = "whsec_intake-0123456789abcdef-0123456789";

fn session_body(amount: &str) -> String {
    json!({"amount": amount, "currency": "USDC", "reference": "order-1",
        "description": "Two coffees", "customer_name": "Ada", "customer_email": "ada@example.com",
        "networks": ["polygon"], "expires_in_secs": 600, "metadata": {"cart": "c-1"}})
    .to_string()
}

async fn business(s: &Server, tenant_key: &str, name: &str) -> (String, String) {
    let r = s
        .post(
            tenant_key,
            "/v1/businesses",
            &json!({"name": name}).to_string(),
        )
        .await;
    r.expect(201);
    let j = r.json();
    let live = j["live_key"].as_str().unwrap().to_string();
    let test = j["test_key"].as_str().unwrap().to_string();
    assert!(live.starts_with("live_sk_") && test.starts_with("test_sk_"));
    (live, test)
}

#[tokio::test]
async fn businesses_and_modes_see_only_their_own_sessions_with_every_list_edge() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let (shop_live, shop_test) = business(&s, &acme.live, "Shop").await;
    let (cafe_live, _) = business(&s, &acme.live, "Cafe").await;
    // A replayed creation answers the business without its keys (shown once).
    let body = json!({"name": "Kiosk"}).to_string();
    let first = s
        .post_idem(&acme.live, "/v1/businesses", &body, "biz-1")
        .await;
    first.expect(201);
    assert!(first.json()["live_key"].is_string());
    let again = s
        .post_idem(&acme.live, "/v1/businesses", &body, "biz-1")
        .await;
    again.expect(201);
    assert_eq!(again.header("idempotent-replayed").as_deref(), Some("true"));
    assert_eq!(again.json()["business"], first.json()["business"]);
    assert!(again.json().get("live_key").is_none() && !again.text().contains("_sk_"));
    let list = s.get(&acme.live, "/v1/businesses").await;
    list.expect(200);
    assert_eq!(list.json()["businesses"].as_array().unwrap().len(), 3);
    assert!(!list.text().contains("live_sk_"), "keys are shown once");

    let mut ids = Vec::new();
    for i in 0..3 {
        let r = s
            .post(
                &shop_live,
                "/api/v1/checkout/sessions",
                &session_body(&format!("{}", 10 + i)),
            )
            .await;
        r.expect(201);
        let j = r.json();
        assert_eq!(j["status"], "pending");
        assert!(
            r.header("location")
                .unwrap()
                .ends_with(j["session_id"].as_str().unwrap())
        );
        ids.push(j["session_id"].as_str().unwrap().to_string());
    }
    let t = s
        .post(&shop_test, "/api/v1/checkout/sessions", &session_body("5"))
        .await;
    t.expect(201);
    assert_eq!(t.json()["mode"], "test");
    let test_id = t.json()["session_id"].as_str().unwrap().to_string();

    // Each business and mode sees only its own.
    let shop = s.get(&shop_live, "/api/v1/checkout/list").await;
    shop.expect(200);
    let j = shop.json();
    assert_eq!(
        (j["limit"].as_u64(), j["page"].as_u64(), j["total"].as_u64()),
        (Some(20), Some(1), Some(3))
    );
    assert_eq!(
        j["payments"][0]["session_id"],
        ids[2].as_str(),
        "newest first"
    );
    let item = j["payments"][0].as_object().unwrap();
    let mut keys: Vec<_> = item.keys().cloned().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "amount",
            "currency",
            "customer_email",
            "customer_name",
            "description",
            "id",
            "network",
            "payment_method",
            "reference",
            "session_id",
            "status"
        ]
    );
    assert!(item["id"].is_i64() && item["amount"].is_number());
    assert_eq!(
        s.get(&cafe_live, "/api/v1/checkout/list").await.json()["total"],
        0
    );
    s.get(&cafe_live, &format!("/api/v1/checkout/sessions/{}", ids[0]))
        .await
        .expect_err(404, "NOT_FOUND");
    let test_list = s.get(&shop_test, "/api/v1/checkout/list").await.json();
    assert_eq!(test_list["total"], 1);
    assert_eq!(test_list["payments"][0]["session_id"], test_id.as_str());
    s.get(&shop_live, &format!("/api/v1/checkout/sessions/{test_id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    s.get(&shop_test, &format!("/api/v1/checkout/sessions/{}", ids[0]))
        .await
        .expect_err(404, "NOT_FOUND");
    // Another tenant's business too.
    let beta = s.tenant("Beta", "0").await;
    assert_eq!(
        s.get(&beta.business_live, "/api/v1/checkout/list")
            .await
            .json()["total"],
        0
    );

    // Every filter value and paging edge.
    s.post(
        &shop_live,
        &format!("/api/v1/checkout/sessions/{}/cancel", ids[0]),
        "{}",
    )
    .await
    .expect(200);
    for (status, n) in [("pending", 2), ("paid", 0), ("expired", 0), ("failed", 1)] {
        let r = s
            .get(
                &shop_live,
                &format!("/api/v1/checkout/list?status={status}"),
            )
            .await;
        r.expect(200);
        assert_eq!(r.json()["total"], n, "{status}");
        assert!(
            r.json()["payments"]
                .as_array()
                .unwrap()
                .iter()
                .all(|p| p["status"] == status)
        );
    }
    let last = s
        .get(&shop_live, "/api/v1/checkout/list?limit=2&page=2")
        .await
        .json();
    assert_eq!(
        (
            last["total"].as_u64(),
            last["payments"].as_array().unwrap().len()
        ),
        (Some(3), 1)
    );
    let empty = s
        .get(&shop_live, "/api/v1/checkout/list?limit=2&page=3")
        .await
        .json();
    assert_eq!(empty["payments"], json!([]));
    assert_eq!(empty["total"], 3);
    assert_eq!(
        s.get(&shop_live, "/api/v1/checkout/list?limit=100")
            .await
            .json()["limit"],
        100
    );
    for bad in [
        "limit=0",
        "limit=101",
        "page=0",
        "limit=x",
        "status=PAID",
        "status=refunded",
    ] {
        let r = s
            .get(&shop_live, &format!("/api/v1/checkout/list?{bad}"))
            .await;
        r.expect_err(400, "INVALID_PARAMETER");
    }
    s.get(&shop_live, "/api/v1/checkout/list?state=paid")
        .await
        .expect_err(400, "INVALID_QUERY");
    s.get(&acme.live, "/api/v1/checkout/list")
        .await
        .expect_err(403, "KEY_KIND_NOT_ALLOWED");
    s.post(
        &shop_live,
        "/v1/businesses",
        &json!({"name": "x"}).to_string(),
    )
    .await
    .expect_err(403, "KEY_KIND_NOT_ALLOWED");
}

#[tokio::test]
async fn create_is_idempotent_and_bad_input_is_a_clear_400_that_writes_nothing() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let key = &acme.business_live;
    let a = s
        .post_idem(key, "/api/v1/checkout/sessions", &session_body("7"), "k-1")
        .await;
    a.expect(201);
    let b = s
        .post_idem(key, "/api/v1/checkout/sessions", &session_body("7"), "k-1")
        .await;
    b.expect(201);
    assert_eq!(a.json(), b.json());
    s.post_idem(key, "/api/v1/checkout/sessions", &session_body("8"), "k-1")
        .await
        .expect_err(422, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(s.get(key, "/api/v1/checkout/list").await.json()["total"], 1);
    for (body, code) in [
        (json!({"amount": "0", "currency": "USDC"}), "INVALID_AMOUNT"),
        (
            json!({"amount": "1.0000001", "currency": "USDC"}),
            "INVALID_AMOUNT",
        ),
        (json!({"amount": "1", "currency": "EUR"}), "UNKNOWN_TOKEN"),
        (
            json!({"amount": "1", "currency": "USDC", "tokens": ["USDT"]}),
            "INVALID_PARAMETER",
        ),
        (
            json!({"amount": "1", "currency": "USDC", "networks": ["mars"]}),
            "UNSUPPORTED_NETWORK",
        ),
        (
            json!({"amount": "1", "currency": "USDC", "expires_in_secs": 5}),
            "INVALID_PARAMETER",
        ),
        (
            json!({"amount": "1", "currency": "USDC", "customer_email": "nope"}),
            "INVALID_PARAMETER",
        ),
        (
            json!({"amount": "1", "currency": "USDC", "metadata": {"k": 1}}),
            "INVALID_PARAMETER",
        ),
        (
            json!({"amount": "1", "currency": "USDC", "colour": "red"}),
            "UNKNOWN_FIELD",
        ),
    ] {
        let before = s.commits();
        let r = s
            .post(key, "/api/v1/checkout/sessions", &body.to_string())
            .await;
        r.expect_err(400, code);
        assert_eq!(s.commits(), before, "{body} wrote something");
    }
    s.post(
        key,
        "/api/v1/checkout/sessions/cs_nope/simulate-payment",
        "{}",
    )
    .await
    .expect_err(403, "SANDBOX_ONLY");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_paid_on_chain_sends_signed_payments_webhooks_in_order() {
    let mut c = test_config();
    c.webhooks_allow_loopback_http = true;
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "0").await;
    let (url, got) = recording_receiver().await;
    let r = s
        .post(
            &acme.live,
            "/v1/webhook-endpoints",
            &json!({"family": "payments", "url": url, "events": ["payment.confirmed",
                "wallet.deposit.detected", "wallet.deposit.confirmed"]})
            .to_string(),
        )
        .await;
    r.expect(201);
    let secret = r.json()["secret"].as_str().unwrap().to_string();
    let created = s
        .post(
            &acme.business_live,
            "/api/v1/checkout/sessions",
            &session_body("25"),
        )
        .await;
    created.expect(201);
    let session = created.json();
    let id = session["session_id"].as_str().unwrap().to_string();
    let address = ChainAddress(
        session["payment_options"][0]["address"]
            .as_str()
            .unwrap()
            .into(),
    );
    let before = s.treasury(&acme).await;
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap();
    let tx = chain.mint(&address, Token::Usdc, m("25")).unwrap();
    chain.mine(1);
    s.app.state().checkout.tick().await;
    let read = s
        .get(
            &acme.business_live,
            &format!("/api/v1/checkout/sessions/{id}"),
        )
        .await
        .json();
    assert_eq!(
        (read["status"].as_str(), read["amount_pending"].as_str()),
        (Some("pending"), Some("25.000000"))
    );
    for _ in 0..4 {
        chain.mine(1);
        s.app.state().checkout.tick().await;
    }
    let read = s
        .get(
            &acme.business_live,
            &format!("/api/v1/checkout/sessions/{id}"),
        )
        .await
        .json();
    assert_eq!(read["status"], "paid");
    assert_eq!(read["tx_hash"], tx.as_str());
    let after = s.treasury(&acme).await;
    assert_eq!(
        after.get() - before.get(),
        25_000_000,
        "credited to the business's treasury"
    );
    let listed = s
        .get(&acme.business_live, "/api/v1/checkout/list?status=paid")
        .await
        .json();
    assert_eq!(listed["payments"][0]["network"], "polygon");
    assert!(listed["payments"][0]["paid_at"].is_string());

    s.app.state().webhooks.round().await.unwrap();
    let received = got.lock().unwrap().clone();
    let mut names = Vec::new();
    for (headers, body) in &received {
        let sig = headers["x-webhook-signature"].to_str().unwrap();
        Family::Payments.verify(&secret, body, Some(sig)).unwrap();
        assert_eq!(sig, hex_hmac(&secret, body));
        let event = headers["x-webhook-event"].to_str().unwrap().to_string();
        assert!(headers.get("x-webhook-id").is_some());
        let v: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(v["event"], event.as_str());
        names.push(event);
    }
    // Committed in this order (the outbox sequence); delivered, each signed, by a
    // concurrent dispatcher that does not promise arrival order.
    let order = [
        "wallet.deposit.detected",
        "wallet.deposit.confirmed",
        "payment.confirmed",
    ];
    let outbox: Vec<String> = s
        .app
        .engine()
        .ports()
        .store
        .outbox_after(0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, e)| e.event_type)
        .filter(|n| order.contains(&n.as_str()))
        .collect();
    assert_eq!(outbox, order);
    let mut sorted = names.clone();
    sorted.sort_by_key(|n| order.iter().position(|o| o == n));
    assert_eq!(sorted, order);
    let body_of = |name: &str| -> Value {
        let i = names.iter().position(|n| n == name).unwrap();
        serde_json::from_slice(&received[i].1).unwrap()
    };
    let paid = body_of("payment.confirmed");
    assert_eq!(paid["session_id"], id.as_str());
    assert_eq!(paid["amount"], "25.000000");
    assert_eq!(paid["status"], "paid");
    assert_eq!(paid["network"], "polygon");
    assert_eq!(paid["metadata"], json!({"cart": "c-1"}));
    let confirmed = body_of("wallet.deposit.confirmed");
    assert_eq!(confirmed["data"]["safe_to_credit"], true);
    assert!(confirmed["data"]["deposit_id"].is_u64());
}

#[tokio::test]
async fn the_intake_follows_the_receiver_rules() {
    let mut c = test_config();
    c.checkout.intake_secret = Some(INTAKE_SECRET.into());
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "0").await;
    let created = s
        .post(
            &acme.business_live,
            "/api/v1/checkout/sessions",
            &session_body("10"),
        )
        .await;
    let session = created.json();
    let id = session["session_id"].as_str().unwrap().to_string();
    let address = session["payment_options"][0]["address"]
        .as_str()
        .unwrap()
        .to_string();
    let base = s.treasury(&acme).await.get();
    let post = |body: Value, sign: bool| {
        let body = body.to_string();
        let sig = hex_hmac(INTAKE_SECRET, body.as_bytes());
        let s = &s;
        async move {
            let h: Vec<(&str, &str)> = if sign {
                vec![("x-webhook-signature", sig.as_str())]
            } else {
                Vec::new()
            };
            s.send(
                reqwest::Method::POST,
                "/v1/scanner/deposit-events",
                None,
                Some(&body),
                &h,
            )
            .await
        }
    };
    let detected = json!({"event": "wallet.deposit.detected", "data": {
        "customer_id": "c-1", "deposit_id": 991, "address": address, "network": "polygon",
        "currency": "USDC", "amount": "10.000000", "tx_hash": "pending_1_0xabc",
        "hash_pending": true, "confirmations": 0, "status": "detected"}});
    post(detected.clone(), false)
        .await
        .expect_err(403, "INVALID_SIGNATURE");
    let r = post(detected.clone(), true).await;
    r.expect(200);
    assert_eq!(
        r.json(),
        json!({"status": "success", "message": "recorded_pending"})
    );
    let r = post(detected, true).await;
    assert_eq!(r.json()["message"], "already_recorded");
    // Not safe to credit: nothing credited.
    let unsafe_ = json!({"event": "wallet.deposit.confirmed", "data": {"customer_id": "c-1",
        "deposit_id": 991, "confirmations": 2, "status": "confirmed", "safe_to_credit": false}});
    assert_eq!(
        post(unsafe_, true).await.json()["message"],
        "not_safe_to_credit"
    );
    assert_eq!(s.treasury(&acme).await.get(), base);
    let confirmed = json!({"event": "wallet.deposit.confirmed", "data": {"customer_id": "c-1",
        "deposit_id": 991, "confirmations": 12, "status": "confirmed", "safe_to_credit": true}});
    assert_eq!(
        post(confirmed.clone(), true).await.json()["message"],
        "credited"
    );
    let r = post(confirmed, true).await;
    r.expect(200);
    assert_eq!(
        r.json(),
        json!({"status": "success", "message": "already_recorded"})
    );
    assert_eq!(
        s.treasury(&acme).await.get() - base,
        10_000_000,
        "credited once"
    );
    let resolved = json!({"event": "wallet.deposit.hash_resolved", "data": {"customer_id": "c-1",
        "deposit_id": 991, "tx_hash": "0xfeed"}});
    assert_eq!(
        post(resolved.clone(), true).await.json()["message"],
        "hash_backfilled"
    );
    assert_eq!(
        post(resolved, true).await.json()["message"],
        "already_recorded"
    );
    let read = s
        .get(
            &acme.business_live,
            &format!("/api/v1/checkout/sessions/{id}"),
        )
        .await
        .json();
    assert_eq!(read["status"], "paid");
    assert_eq!(read["deposits"][0]["tx_hash"], "0xfeed");
    // Partial events are never a 400; only a body that is not JSON is.
    for partial in [
        json!({}),
        json!({"event": "wallet.deposit.confirmed"}),
        json!({"event": "wallet.deposit.detected", "data": {"deposit_id": "x"}}),
        json!({"event": "wallet.deposit.detected", "data": {"deposit_id": 5, "address": "0xnobody"}}),
        json!({"event": "wallet.deposit.detected", "data": {"deposit_id": 6, "address": address,
            "network": "polygon", "amount": "10.000000"}}),
    ] {
        let r = post(partial.clone(), true).await;
        r.expect(200);
        assert_eq!(r.json()["message"], "ignored", "{partial}");
    }
    let sig = hex_hmac(INTAKE_SECRET, b"[1]");
    let r = s
        .send(
            reqwest::Method::POST,
            "/v1/scanner/deposit-events",
            None,
            Some("[1]"),
            &[("x-webhook-signature", &sig)],
        )
        .await;
    r.expect(400);
}

/// Issue #44: a session's sums are checked. A deposit, or deposits whose total, passes
/// 2^63 - 1 micro-units (the most a ledger account holds) is refused (400
/// INVALID_AMOUNT) and changes nothing, where the old code added them unchecked (a
/// panic in a debug build, a wrap in a release one) or failed in the ledger (500).
#[tokio::test]
async fn the_intake_refuses_a_deposit_whose_sums_would_overflow() {
    let mut c = test_config();
    c.checkout.intake_secret = Some(INTAKE_SECRET.into());
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "0").await;
    let session = s
        .post(
            &acme.business_live,
            "/api/v1/checkout/sessions",
            &session_body("10"),
        )
        .await
        .json();
    let id = session["session_id"].as_str().unwrap().to_string();
    let address = session["payment_options"][0]["address"]
        .as_str()
        .unwrap()
        .to_string();
    let post = |body: Value| {
        let body = body.to_string();
        let sig = hex_hmac(INTAKE_SECRET, body.as_bytes());
        let s = &s;
        async move {
            s.send(
                reqwest::Method::POST,
                "/v1/scanner/deposit-events",
                None,
                Some(&body),
                &[("x-webhook-signature", sig.as_str())],
            )
            .await
        }
    };
    let detected = |deposit_id: u64, amount: &str| {
        json!({"event": "wallet.deposit.detected", "data": {"customer_id": "c-1",
            "deposit_id": deposit_id, "address": address, "network": "polygon",
            "currency": "USDC", "amount": amount, "tx_hash": format!("0x{deposit_id:x}"),
            "confirmations": 0, "status": "detected"}})
    };
    let confirmed = |deposit_id: u64| {
        json!({"event": "wallet.deposit.confirmed", "data": {"customer_id": "c-1",
            "deposit_id": deposit_id, "confirmations": 12, "status": "confirmed",
            "safe_to_credit": true}})
    };
    // One past the largest amount a ledger holds; then the largest, and one more
    // micro-unit while it is still pending.
    post(detected(9, "9223372036854.775808"))
        .await
        .expect_err(400, "INVALID_AMOUNT");
    let max = "9223372036854.775807";
    assert_eq!(
        post(detected(1, max)).await.json()["message"],
        "recorded_pending"
    );
    post(detected(2, "0.000001"))
        .await
        .expect_err(400, "INVALID_AMOUNT");
    // Credited, it fills the session and leaves the rest refundable; one more micro-unit
    // confirmed on top of it would take `received` past the bound.
    let r = post(confirmed(1)).await;
    assert_eq!(r.json()["message"], "credited", "{}", r.text());
    assert_eq!(
        post(detected(3, "0.000001")).await.json()["message"],
        "recorded_pending"
    );
    let before = s
        .get(
            &acme.business_live,
            &format!("/api/v1/checkout/sessions/{id}"),
        )
        .await
        .json();
    post(confirmed(3)).await.expect_err(400, "INVALID_AMOUNT");
    let after = s
        .get(
            &acme.business_live,
            &format!("/api/v1/checkout/sessions/{id}"),
        )
        .await
        .json();
    assert_eq!(after["status"], "paid");
    assert_eq!(after["amount_received"], before["amount_received"]);
    assert_eq!(
        after["deposits"], before["deposits"],
        "nothing half written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wallet_deposits_and_transfers_feed_the_payments_family_with_the_customer_id() {
    let mut c = test_config();
    c.webhooks_allow_loopback_http = true;
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "100").await;
    let (url, got) = recording_receiver().await;
    let r = s
        .post(
            &acme.live,
            "/v1/webhook-endpoints",
            &json!({"family": "payments", "url": url, "events": ["wallet.deposit.detected",
                "wallet.deposit.confirmed", "wallet.transfer.confirmed"]})
            .to_string(),
        )
        .await;
    r.expect(201);
    let secret = r.json()["secret"].as_str().unwrap().to_string();
    let (a, b) = ("+2250700000031", "+2250700000032");
    let pa = s
        .post(
            &acme.live,
            "/v1/users/provision",
            &json!({"phone_number": a, "customer_id": "cus-A"}).to_string(),
        )
        .await;
    pa.expect(200);
    let pb = s.provision(&acme.live, b).await;
    let addr_a = pa.json()["address"].as_str().unwrap().to_string();
    let addr_b = pb["address"].as_str().unwrap().to_string();
    // A bad customer id is a 400 that writes nothing.
    let before = s.commits();
    s.post(
        &acme.live,
        "/v1/users/provision",
        &json!({"phone_number": a, "customer_id": ""}).to_string(),
    )
    .await
    .expect_err(400, "INVALID_PARAMETER");
    assert_eq!(s.commits(), before);

    // An outside deposit into A: detected, then confirmed.
    let chain = s.app.sim_rail(RailId::Evm(137)).unwrap();
    let tx = chain
        .mint(&ChainAddress(addr_a.clone()), Token::Usdc, m("7.5"))
        .unwrap();
    chain.mine(1);
    s.settle().await;
    for _ in 0..4 {
        chain.mine(1);
        s.settle().await;
    }
    // A send from A to B, settled.
    let r = s
        .post(
            &acme.live,
            "/v1/transfers/send",
            &json!({"from_phone_number": a, "to_phone_number": b, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:5"})
            .to_string(),
        )
        .await;
    r.expect(202);
    for _ in 0..6 {
        s.settle().await;
        chain.mine(1);
    }
    s.settle().await;
    let tr = s
        .get(&acme.live, r.header("location").unwrap().as_str())
        .await
        .json();
    assert_eq!(tr["status"], "SETTLED", "{tr}");

    s.app.state().webhooks.round().await.unwrap();
    let received = got.lock().unwrap().clone();
    let mut by_name: std::collections::BTreeMap<String, Value> = Default::default();
    for (headers, body) in &received {
        let sig = headers["x-webhook-signature"].to_str().unwrap();
        Family::Payments.verify(&secret, body, Some(sig)).unwrap();
        let v: Value = serde_json::from_slice(body).unwrap();
        by_name.insert(v["event"].as_str().unwrap().to_string(), v);
    }
    let detected = &by_name["wallet.deposit.detected"]["data"];
    let confirmed = &by_name["wallet.deposit.confirmed"]["data"];
    assert_eq!(detected["customer_id"], "cus-A");
    assert_eq!(detected["status"], "detected");
    assert_eq!(detected["amount"], "7.500000");
    assert_eq!(detected["tx_hash"], tx.as_str());
    assert!(detected["deposit_id"].is_u64());
    assert_eq!(detected["deposit_id"], confirmed["deposit_id"]);
    assert_eq!(confirmed["safe_to_credit"], true);
    assert_eq!(confirmed["customer_id"], "cus-A");
    let transfer = &by_name["wallet.transfer.confirmed"]["data"];
    assert_eq!(transfer["customer_id"], "cus-A");
    assert_eq!(transfer["status"], "confirmed");
    assert_eq!(transfer["amount"], "5.000000");
    assert_eq!(transfer["gas_fee"], "0.000000");
    assert_eq!(
        transfer["from_address"].as_str().unwrap().to_lowercase(),
        addr_a.to_lowercase()
    );
    assert_eq!(
        transfer["to_address"].as_str().unwrap().to_lowercase(),
        addr_b.to_lowercase()
    );
    assert_eq!(transfer["tx_hash"], tr["tx_hash"]);
    assert!(transfer["block_number"].is_u64(), "{transfer}");
}
