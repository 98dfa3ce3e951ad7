//! The receiver kit's axum route over real HTTP on loopback, fed with bodies signed the
//! way our delivery worker signs them: 401 on a bad, truncated, rotated-out or missing
//! signature; dedupe on `deposit_id` (never `tx_hash`); credit only on `confirmed` with
//! `safe_to_credit`; `hash_resolved` backfills; a re-delivery answers 200
//! `already_recorded`; a partial event is never a 400.

use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_webhooks::Family;
use stablecoin_webhooks::payments::Deposit;
use stablecoin_webhooks::receiver::axum_kit::deposit_router;
use stablecoin_webhooks::receiver::{DepositHandler, MemoryDepositBook};
use stablecoin_webhooks::signature::PAYMENTS_SIGNATURE_HEADER;
use std::sync::Arc;

const SECRET: &str = "whsec_receiver_test_secret_0123456789abcdef";
const HASH: &str = "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

struct Receiver {
    url: String,
    handler: Arc<DepositHandler<MemoryDepositBook>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn receiver() -> Receiver {
    let handler = Arc::new(DepositHandler::new(SECRET, MemoryDepositBook::new()));
    let app = deposit_router("/hooks/deposits", handler.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Receiver {
        url: format!("http://{addr}/hooks/deposits"),
        handler,
        task,
    }
}

/// POSTs `body` with `signature` (None: no header); returns status and JSON body.
async fn post(url: &str, body: &[u8], signature: Option<String>) -> (u16, serde_json::Value) {
    let mut req = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .body(body.to_vec());
    if let Some(s) = signature {
        req = req.header(PAYMENTS_SIGNATURE_HEADER, s);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(serde_json::Value::Null))
}

fn signed(body: &[u8]) -> Option<String> {
    Some(Family::Payments.sign(SECRET, body))
}

fn deposit(id: u64) -> Deposit {
    Deposit {
        customer_id: "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b".into(),
        deposit_id: id,
        address: "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8".into(),
        network: "tron".into(),
        currency: "USDT".into(),
        amount: Micros(10_500_000),
        tx_hash: None,
        confirmations: 1,
        detected_at: Timestamp::from_secs(1_795_410_258),
        detected_by: "scanner-tron-1".into(),
    }
}

fn message(v: &serde_json::Value) -> &str {
    v["message"].as_str().unwrap_or("")
}

#[tokio::test]
async fn a_deposit_is_recorded_credited_once_and_backfilled() {
    let r = receiver().await;
    let d = deposit(42);
    let detected = d.detected().to_body().unwrap();
    let confirmed = d
        .confirmed(20, true, Timestamp::from_secs(1_795_410_300))
        .to_body()
        .unwrap();
    let resolved = d.hash_resolved(HASH).to_body().unwrap();

    let (s, v) = post(&r.url, &detected, signed(&detected)).await;
    assert_eq!((s, message(&v)), (200, "recorded_pending"));
    assert!(
        !r.handler.book().get(42).unwrap().credited,
        "detected never credits"
    );
    let (s, v) = post(&r.url, &detected, signed(&detected)).await;
    assert_eq!(
        (s, v["status"].as_str(), message(&v)),
        (200, Some("success"), "already_recorded")
    );

    let (s, v) = post(&r.url, &confirmed, signed(&confirmed)).await;
    assert_eq!((s, message(&v)), (200, "credited"));
    let (s, v) = post(&r.url, &confirmed, signed(&confirmed)).await;
    assert_eq!((s, message(&v)), (200, "already_recorded"));
    assert_eq!(r.handler.book().credited_count(), 1);

    let (s, v) = post(&r.url, &resolved, signed(&resolved)).await;
    assert_eq!((s, message(&v)), (200, "hash_backfilled"));
    let entry = r.handler.book().get(42).unwrap();
    assert_eq!(entry.tx_hash.as_deref(), Some(HASH));
    assert_eq!(
        entry.amount.as_deref(),
        Some("10.500000"),
        "backfill leaves the amount"
    );
    let (s, v) = post(&r.url, &resolved, signed(&resolved)).await;
    assert_eq!((s, message(&v)), (200, "already_recorded"));
}

#[tokio::test]
async fn dedupe_is_on_deposit_id_never_on_tx_hash() {
    let r = receiver().await;
    // Two deposits to one address in the same second share the placeholder hash.
    let (a, b) = (deposit(7), deposit(8));
    for d in [&a, &b] {
        let body = d
            .confirmed(20, true, Timestamp::from_secs(1_795_410_300))
            .to_body()
            .unwrap();
        let (s, v) = post(&r.url, &body, signed(&body)).await;
        assert_eq!((s, message(&v)), (200, "credited"));
    }
    assert_eq!(r.handler.book().credited_count(), 2);
}

#[tokio::test]
async fn not_safe_to_credit_records_without_crediting() {
    let r = receiver().await;
    let body = deposit(9)
        .confirmed(3, false, Timestamp::from_secs(1_795_410_300))
        .to_body()
        .unwrap();
    let (s, v) = post(&r.url, &body, signed(&body)).await;
    assert_eq!((s, message(&v)), (200, "not_safe_to_credit"));
    assert_eq!(r.handler.book().credited_count(), 0);
    // The later safe confirmation credits.
    let body = deposit(9)
        .confirmed(20, true, Timestamp::from_secs(1_795_410_400))
        .to_body()
        .unwrap();
    let (s, v) = post(&r.url, &body, signed(&body)).await;
    assert_eq!((s, message(&v)), (200, "credited"));
}

#[tokio::test]
async fn partial_events_are_acknowledged_never_400() {
    let r = receiver().await;
    for body in [
        &br#"{"event":"wallet.deposit.confirmed","data":{"customer_id":"c1"}}"#[..],
        br#"{"event":"wallet.deposit.detected","data":{"customer_id":"c1","deposit_id":"not-a-number","amount":10.5}}"#,
        br#"{"event":"wallet.deposit.hash_resolved","data":{"customer_id":"c1","deposit_id":5}}"#,
        br#"{"event":"wallet.transfer.confirmed","data":{"customer_id":"c1"}}"#,
        br#"{"event":"something.new","data":{}}"#,
        br#"{}"#,
    ] {
        let (s, v) = post(&r.url, body, signed(body)).await;
        assert_eq!(s, 200, "{}: {v}", String::from_utf8_lossy(body));
        assert_eq!(v["status"], "success");
    }
    assert_eq!(r.handler.book().credited_count(), 0);
}

#[tokio::test]
async fn bad_signatures_are_401_and_change_nothing() {
    let r = receiver().await;
    let body = deposit(11)
        .confirmed(20, true, Timestamp::from_secs(1_795_410_300))
        .to_body()
        .unwrap();
    let good = Family::Payments.sign(SECRET, &body);
    let mut changed = body.clone();
    changed[body.len() / 2] ^= 0x01;
    let cases: Vec<(&[u8], Option<String>)> = vec![
        (&changed, Some(good.clone())),
        (&body, Some(Family::Payments.sign("whsec_another", &body))),
        (&body, Some(good[..good.len() - 2].to_string())),
        (&body, Some(format!("sha256={good}"))),
        (&body, None),
    ];
    for (b, sig) in cases {
        let (s, v) = post(&r.url, b, sig.clone()).await;
        assert_eq!(s, 401, "{sig:?}: {v}");
    }
    assert_eq!(r.handler.book().credited_count(), 0);
    // Not JSON at all, signed: 400 (it is not an event, partial or otherwise).
    let (s, _) = post(&r.url, b"not json", signed(b"not json")).await;
    assert_eq!(s, 400);
    let (s, _) = post(&r.url, &body, Some(good)).await;
    assert_eq!(s, 200);
}
