//! `/v1/webhook-endpoints` over real HTTP on loopback, and a delivery end to end: a
//! transfer settles, the server's webhook worker POSTs `transfer.settled` to a receiver
//! on another loopback port, signed with the secret the registration returned once.

use crate::common::webhook_receiver::{Received, recording_receiver};
use crate::common::*;
use axum::body::Bytes;
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_webhooks::Family;
use std::sync::Arc;

/// A receiver on loopback; `signed` reads what it got as (X-Svc-Signature, body).
async fn receiver() -> (String, Received) {
    recording_receiver().await
}

fn signed(got: &Received) -> Vec<(String, Bytes)> {
    got.lock()
        .unwrap()
        .iter()
        .map(|(headers, body)| {
            let sig = headers
                .get("x-svc-signature")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            (sig, body.clone())
        })
        .collect()
}

macro_rules! writes_nothing {
    ($s:expr, $e:expr) => {{
        let before = $s.commits();
        let r = $e;
        assert_eq!($s.commits(), before, "must write nothing: {}", r.text());
        r
    }};
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_read_list_delete_and_receive_a_signed_event() {
    let mut c = test_config();
    c.webhooks_allow_loopback_http = true;
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "1000").await;
    let beta = s.tenant("Beta", "0").await;
    let (url, got) = receiver().await;

    let r = s
        .post(
            &acme.live,
            "/v1/webhook-endpoints",
            &json!({"url": url, "events": ["transfer.settled", "transfer.received"]}).to_string(),
        )
        .await;
    r.expect(201);
    let created = r.json();
    let id = created["id"].as_str().unwrap().to_string();
    let secret = created["secret"].as_str().unwrap().to_string();
    assert!(id.starts_with("whe_") && secret.starts_with("svcwh_"));

    // Reads never show the secret; another tenant gets 404; no key is 401.
    let one = s
        .get(&acme.live, &format!("/v1/webhook-endpoints/{id}"))
        .await;
    one.expect(200);
    assert!(one.json().get("secret").is_none());
    assert_eq!(one.json()["enabled"], true);
    s.get(&beta.live, &format!("/v1/webhook-endpoints/{id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    s.send(Method::GET, "/v1/webhook-endpoints", None, None, &[])
        .await
        .expect_err(401, "MISSING_API_KEY");
    let list = s.get(&acme.live, "/v1/webhook-endpoints").await;
    list.expect(200);
    assert_eq!(list.json()["total"], 1);
    assert!(list.json()["webhook_endpoints"][0].get("secret").is_none());
    assert_eq!(
        s.get(&beta.live, "/v1/webhook-endpoints").await.json()["total"],
        0
    );

    // A transfer settles; the worker delivers transfer.settled, signed.
    let a = "+2250700000001";
    let b = "+2250700000002";
    s.provision(&acme.live, a).await;
    s.provision(&acme.live, b).await;
    s.fund_settled(&acme.live, a, "100").await;
    let r = s
        .post(
            &acme.live,
            "/v1/transfers/send",
            &json!({"from_phone_number": a, "to_phone_number": b, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:25"})
            .to_string(),
        )
        .await;
    r.expect(202);
    let tr = r.json()["id"].as_str().unwrap().to_string();
    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();
    let received = signed(&got);
    let settled: Vec<Value> = received
        .iter()
        .map(|(sig, body)| {
            assert_eq!(Family::Wallet.verify(&secret, body, Some(sig)), Ok(()));
            serde_json::from_slice(body).unwrap()
        })
        .filter(|v: &Value| v["event"] == "transfer.settled" && v["transfer_id"] == tr.as_str())
        .collect();
    assert_eq!(settled.len(), 1, "{received:?}");
    assert_eq!(settled[0]["status"], "SETTLED");
    assert_eq!(settled[0]["amount_usdc"], "25.000000");

    // Delete disables: later events are not sent.
    let before = got.lock().unwrap().len();
    let d = s
        .send(
            Method::DELETE,
            &format!("/v1/webhook-endpoints/{id}"),
            Some(&acme.live),
            None,
            &[],
        )
        .await;
    d.expect(200);
    assert_eq!(d.json()["enabled"], false);
    s.post(
        &acme.live,
        "/v1/transfers/send",
        &json!({"from_phone_number": a, "to_phone_number": b, "token": "USDC",
            "quote_id": "DIRECT_CRYPTO:USDC:5"})
        .to_string(),
    )
    .await
    .expect(202);
    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();
    assert_eq!(got.lock().unwrap().len(), before);
}

#[tokio::test]
async fn bad_input_and_sandbox_write_nothing() {
    let s = start().await; // loopback http not allowed
    let acme = s.tenant("Acme", "0").await;
    for (body, status, code) in [
        (
            json!({"url": "http://127.0.0.1:9/hooks", "events": ["transfer.settled"]}),
            400,
            "INVALID_WEBHOOK_URL",
        ),
        (
            json!({"url": "https://example.com/h", "events": ["transfer.sent"]}),
            400,
            "UNKNOWN_EVENT_TYPE",
        ),
        (
            json!({"url": "https://example.com/h", "events": []}),
            400,
            "INVALID_PARAMETER",
        ),
        (
            json!({"url": "https://example.com/h"}),
            400,
            "MISSING_FIELD",
        ),
    ] {
        let r = writes_nothing!(
            s,
            s.post(&acme.live, "/v1/webhook-endpoints", &body.to_string())
                .await
        );
        r.expect_err(status, code);
    }
    let r = writes_nothing!(
        s,
        s.post(
            &acme.test,
            "/v1/webhook-endpoints",
            &json!({"url": "https://example.com/h", "events": ["transfer.settled"]}).to_string()
        )
        .await
    );
    r.expect_err(403, "SANDBOX_UNSUPPORTED");
    s.get(&acme.test, "/v1/webhook-endpoints").await.expect(200);
    s.get(&acme.live, "/v1/webhook-endpoints/whe_nope")
        .await
        .expect_err(404, "NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_deliveries_replay_and_rotation_over_http() {
    let mut c = test_config();
    c.webhooks_allow_loopback_http = true;
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "1000").await;
    let beta = s.tenant("Beta", "0").await;
    let (url, got) = receiver().await;
    let r = s
        .post(
            &acme.live,
            "/v1/webhook-endpoints",
            &json!({"url": url, "events": ["transfer.settled"]}).to_string(),
        )
        .await;
    r.expect(201);
    let id = r.json()["id"].as_str().unwrap().to_string();
    let secret = r.json()["secret"].as_str().unwrap().to_string();
    assert_eq!(r.json()["family"], "wallet");

    let (a, b) = ("+2250700000001", "+2250700000002");
    s.provision(&acme.live, a).await;
    s.provision(&acme.live, b).await;
    s.fund_settled(&acme.live, a, "100").await;
    s.post(
        &acme.live,
        "/v1/transfers/send",
        &json!({"from_phone_number": a, "to_phone_number": b, "token": "USDC",
            "quote_id": "DIRECT_CRYPTO:USDC:25"})
        .to_string(),
    )
    .await
    .expect(202);
    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();
    assert_eq!(got.lock().unwrap().len(), 1);

    // The event, as delivered, with its delivery and attempt.
    let list = s
        .get(&acme.live, "/v1/webhook-events?type=transfer.settled")
        .await;
    list.expect(200);
    assert_eq!(list.json()["total"], 1, "{}", list.text());
    let event = list.json()["webhook_events"][0].clone();
    let event_id = event["id"].as_str().unwrap().to_string();
    assert_eq!(event["type"], "transfer.settled");
    let delivered: Value = serde_json::from_slice(&got.lock().unwrap()[0].1).unwrap();
    assert_eq!(
        event["payload"], delivered,
        "the payload exactly as delivered"
    );
    let one = s
        .get(&acme.live, &format!("/v1/webhook-events/{event_id}"))
        .await;
    one.expect(200);
    let deliveries = one.json()["deliveries"].clone();
    assert_eq!(deliveries.as_array().unwrap().len(), 1);
    assert_eq!(deliveries[0]["state"], "DELIVERED");
    assert_eq!(deliveries[0]["endpoint_id"], id.as_str());
    assert_eq!(deliveries[0]["attempts"][0]["status"], 200);
    assert!(deliveries[0]["attempts"][0]["latency_ms"].is_u64());

    // Tenant scoping: Beta sees none of it and cannot replay it.
    assert_eq!(
        s.get(&beta.live, "/v1/webhook-events").await.json()["total"],
        0
    );
    assert_eq!(
        s.get(&beta.live, "/v1/webhook-deliveries").await.json()["total"],
        0
    );
    s.get(&beta.live, &format!("/v1/webhook-events/{event_id}"))
        .await
        .expect_err(404, "NOT_FOUND");
    writes_nothing!(
        s,
        s.post(
            &beta.live,
            &format!("/v1/webhook-events/{event_id}/replay"),
            "{}"
        )
        .await
    )
    .expect_err(404, "NOT_FOUND");

    // Rotate, then replay: the same bytes, signed with the new secret only.
    let r = s
        .post(
            &acme.live,
            &format!("/v1/webhook-endpoints/{id}/rotate-secret"),
            "{}",
        )
        .await;
    r.expect(200);
    let rotated = r.json()["secret"].as_str().unwrap().to_string();
    assert_ne!(rotated, secret);
    assert!(
        s.get(&acme.live, &format!("/v1/webhook-endpoints/{id}"))
            .await
            .json()
            .get("secret")
            .is_none()
    );
    let r = s
        .post(
            &acme.live,
            &format!("/v1/webhook-events/{event_id}/replay"),
            "{}",
        )
        .await;
    r.expect(202);
    assert_eq!(r.json()["replayed"], 1);
    assert_eq!(r.json()["deliveries"][0]["state"], "PENDING");
    s.app.state().webhooks.round().await.unwrap();
    let received = signed(&got);
    assert_eq!(received.len(), 2);
    assert_eq!(
        received[0].1, received[1].1,
        "a replay sends the same bytes"
    );
    let (sig, body) = &received[1];
    assert_eq!(Family::Wallet.verify(&rotated, body, Some(sig)), Ok(()));
    assert!(Family::Wallet.verify(&secret, body, Some(sig)).is_err());

    let d = s
        .get(&acme.live, "/v1/webhook-deliveries?state=DELIVERED")
        .await;
    d.expect(200);
    assert_eq!(d.json()["total"], 2);
    assert_eq!(
        s.get(&acme.live, "/v1/webhook-deliveries?state=DEAD")
            .await
            .json()["total"],
        0
    );
    let r = s
        .post(
            &acme.live,
            "/v1/webhook-events/replay-failed",
            &json!({"from": "2020-01-01T00:00:00Z", "to": "2100-01-01T00:00:00Z"}).to_string(),
        )
        .await;
    r.expect(202);
    assert_eq!(r.json()["replayed"], 0, "nothing failed");

    // Enable after a disable.
    s.send(
        Method::DELETE,
        &format!("/v1/webhook-endpoints/{id}"),
        Some(&acme.live),
        None,
        &[],
    )
    .await
    .expect(200);
    let r = s
        .post(
            &acme.live,
            &format!("/v1/webhook-endpoints/{id}/enable"),
            "{}",
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["enabled"], true);
    assert!(r.json().get("disabled_reason").is_none());
}

/// A server whose webhook resolver knows `example.com` at a public address (the tests run
/// without DNS; registration resolves the host).
async fn start_resolving_example_com() -> Server {
    let dns = stablecoin_webhooks::ssrf::StaticResolver::new();
    dns.set("example.com", &["93.184.215.14".parse().unwrap()]);
    let options = stablecoin_server::BuildOptions {
        webhook_resolver: Some(Arc::new(dns)),
        ..Default::default()
    };
    let app = stablecoin_server::App::build_with(test_config(), options)
        .await
        .unwrap();
    serve(app).await
}

#[tokio::test]
async fn payments_endpoints_and_bad_management_input() {
    let s = start_resolving_example_com().await;
    let acme = s.tenant("Acme", "0").await;
    let r = s
        .post(
            &acme.live,
            "/v1/webhook-endpoints",
            &json!({"family": "payments", "url": "https://example.com/h",
                "events": ["wallet.deposit.confirmed", "payment.confirmed"]})
            .to_string(),
        )
        .await;
    r.expect(201);
    assert_eq!(r.json()["family"], "payments");
    assert!(r.json()["secret"].as_str().unwrap().starts_with("whsec_"));
    for (path, body, code, param) in [
        (
            "/v1/webhook-endpoints",
            json!({"family": "carrier-pigeon", "url": "https://example.com/h", "events": ["payment.confirmed"]}),
            "INVALID_PARAMETER",
            "family",
        ),
        (
            "/v1/webhook-endpoints",
            json!({"family": "payments", "url": "https://example.com/h", "events": ["transfer.settled"]}),
            "UNKNOWN_EVENT_TYPE",
            "events",
        ),
        (
            "/v1/webhook-events/replay-failed",
            json!({"from": "yesterday", "to": "2100-01-01T00:00:00Z"}),
            "INVALID_PARAMETER",
            "from",
        ),
        (
            "/v1/webhook-events/replay-failed",
            json!({"from": "2100-01-01T00:00:00Z", "to": "2020-01-01T00:00:00Z"}),
            "INVALID_PARAMETER",
            "to",
        ),
    ] {
        let r = writes_nothing!(s, s.post(&acme.live, path, &body.to_string()).await);
        r.expect_err(400, code);
        assert_eq!(r.json()["error"]["param"], param, "{}", r.text());
    }
    for q in [
        "/v1/webhook-deliveries?state=LOST",
        "/v1/webhook-events?limit=0",
        "/v1/webhook-events?colour=red",
    ] {
        let r = s.get(&acme.live, q).await;
        assert_eq!(r.status, 400, "{q}: {}", r.text());
    }
    s.get(&acme.live, "/v1/webhook-events/evt_nope")
        .await
        .expect_err(404, "NOT_FOUND");
    writes_nothing!(
        s,
        s.post(&acme.test, "/v1/webhook-events/evt_nope/replay", "{}")
            .await
    )
    .expect_err(403, "SANDBOX_UNSUPPORTED");
}
