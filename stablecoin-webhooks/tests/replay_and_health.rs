//! Payments-family delivery headers, automatic disabling of an endpoint that fails for
//! days, replay (one event, every failed event in a range) and tenant-scoped inspection,
//! against a real axum receiver on loopback with a manual clock.

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::memory::{ManualClock, MemoryStore, SeededEntropy};
use stablecoin_core::ports::{Batch, Clock, OutboxEvent, Store};
use stablecoin_webhooks::delivery::{
    AUTO_DISABLE_AFTER_MS, DeliveryState, MAX_RETRY_SPAN_MS, WebhookPurgeReport, WebhookRetention,
    outbox_event,
};
use stablecoin_webhooks::payments::Deposit;
use stablecoin_webhooks::receiver::{verify_payments, verify_wallet};
use stablecoin_webhooks::{Deliverer, DeliveryConfig, Family};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const START: Timestamp = Timestamp::from_secs(1_795_410_258);
const HOUR: i64 = 3_600_000;

#[derive(Default)]
struct Inbox {
    /// Status answered to every request from now on.
    status: AtomicU16,
    /// (headers, body) of every request answered 2xx.
    accepted: Mutex<Vec<(HeaderMap, Bytes)>>,
    requests: Mutex<usize>,
}

struct Receiver {
    url: String,
    inbox: Arc<Inbox>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn hook(
    State(inbox): State<Arc<Inbox>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, HeaderMap) {
    *inbox.requests.lock().unwrap() += 1;
    let status = StatusCode::from_u16(inbox.status.load(Ordering::SeqCst)).unwrap();
    if status.is_success() {
        inbox.accepted.lock().unwrap().push((headers, body));
    }
    // A 503 asks for a day between attempts (keeps a delivery pending for days).
    let mut answer = HeaderMap::new();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        answer.insert("retry-after", HeaderValue::from_static("86400"));
    }
    (status, answer)
}

async fn receiver(status: u16) -> Receiver {
    let inbox = Arc::new(Inbox::default());
    inbox.status.store(status, Ordering::SeqCst);
    let app = Router::new()
        .route("/hooks", axum::routing::post(hook))
        .with_state(inbox.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Receiver { url, inbox, task }
}

impl Receiver {
    fn set(&self, status: u16) {
        self.inbox.status.store(status, Ordering::SeqCst);
    }
    fn accepted(&self) -> Vec<(HeaderMap, Bytes)> {
        self.inbox.accepted.lock().unwrap().clone()
    }
    fn requests(&self) -> usize {
        *self.inbox.requests.lock().unwrap()
    }
}

struct World {
    store: Arc<MemoryStore>,
    clock: Arc<ManualClock>,
    worker: Deliverer,
    tenant: TenantId,
}

fn world() -> World {
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(ManualClock::new(START));
    let worker = Deliverer::new(
        store.clone(),
        clock.clone(),
        Arc::new(SeededEntropy::new(5)),
        DeliveryConfig {
            timeout: Duration::from_secs(2),
            allow_networks: stablecoin_webhooks::ssrf::AllowList::loopback(),
            ..Default::default()
        },
    )
    .unwrap();
    World {
        store,
        clock,
        worker,
        tenant: TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC10".into()),
    }
}

impl World {
    async fn emit(&self, event: OutboxEvent) {
        self.store
            .commit(Batch {
                outbox: vec![event],
                ..Default::default()
            })
            .await
            .unwrap();
    }

    async fn settled(&self, tenant: &TenantId, id: &str) {
        let e = DomainEvent::TransferSettled {
            transfer_id: format!("tr_{id}"),
            amount: Micros(25_000_000),
            token: Token::Usdc,
            tx_hash: "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
            updated_at: self.clock.now(),
        };
        self.emit(outbox_event(id, tenant, self.clock.now(), &e).unwrap())
            .await;
    }

    /// Rounds until nothing more is due now.
    async fn drain(&self) {
        for _ in 0..50 {
            let r = self.worker.round().await.unwrap();
            if r.fanned_out == 0 && r.delivered == 0 && r.retried == 0 && r.dead == 0 {
                return;
            }
        }
        panic!("the worker never went idle");
    }
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

fn deposit() -> Deposit {
    Deposit {
        customer_id: "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b".into(),
        deposit_id: 42,
        address: "0xe5379f28ac0404106d4cdb204a987f9429f2b566".into(),
        network: "polygon".into(),
        currency: "USDC".into(),
        amount: Micros(10_500_000),
        tx_hash: None,
        confirmations: 1,
        detected_at: START,
        detected_by: "scanner-polygon-1".into(),
    }
}

#[tokio::test]
async fn payments_deliveries_carry_their_headers_and_reach_subscribers_only() {
    let w = world();
    let rx = receiver(200).await;
    let other = receiver(200).await;
    let ep = w
        .worker
        .register_for(
            Family::Payments,
            &w.tenant,
            &rx.url,
            &["wallet.deposit.confirmed".into()],
        )
        .await
        .unwrap();
    assert!(ep.secret.starts_with("whsec_"), "{}", ep.secret);
    w.worker
        .register_for(
            Family::Payments,
            &w.tenant,
            &other.url,
            &["wallet.deposit.detected".into()],
        )
        .await
        .unwrap();
    // A wallet-family name is refused on a payments endpoint.
    let e = w
        .worker
        .register_for(
            Family::Payments,
            &w.tenant,
            &rx.url,
            &["transfer.settled".into()],
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_EVENT_TYPE");

    let payload = deposit().confirmed(12, true, START);
    let expected = payload.to_body().unwrap();
    w.emit(payload.to_outbox("evt_dep_1", &w.tenant.0, START).unwrap())
        .await;
    w.drain().await;

    let got = rx.accepted();
    assert_eq!(got.len(), 1);
    let (h, body) = &got[0];
    assert_eq!(body.as_ref(), &expected[..], "the exact payload bytes");
    verify_payments(
        &ep.secret,
        body,
        h.get("x-webhook-signature").and_then(|v| v.to_str().ok()),
    )
    .unwrap();
    assert_eq!(header(h, "x-webhook-event"), "wallet.deposit.confirmed");
    assert_eq!(
        header(h, "x-webhook-id"),
        format!("whd_evt_dep_1_{}", ep.id)
    );
    assert_eq!(header(h, "content-type"), "application/json");
    assert!(h.get("x-svc-signature").is_none());
    assert_eq!(other.requests(), 0, "not subscribed to confirmed");

    // Rotation: the new secret verifies what is sent next; the old one does not.
    let rotated = w
        .worker
        .rotate_secret(&w.tenant, ep.id.as_str())
        .await
        .unwrap();
    let payload = deposit().hash_resolved("0xabc");
    w.emit(payload.to_outbox("evt_dep_2", &w.tenant.0, START).unwrap())
        .await;
    w.drain().await;
    assert_eq!(rx.accepted().len(), 1, "not subscribed to hash_resolved");
    w.worker.replay_event(&w.tenant, "evt_dep_1").await.unwrap();
    w.drain().await;
    let got = rx.accepted();
    let (h, body) = &got[1];
    let sig = h.get("x-webhook-signature").and_then(|v| v.to_str().ok());
    verify_payments(&rotated.secret, body, sig).unwrap();
    assert!(verify_payments(&ep.secret, body, sig).is_err());
    // A replayed payments delivery is a new delivery: a new X-Webhook-ID.
    assert_ne!(header(h, "x-webhook-id"), header(&got[0].0, "x-webhook-id"));
}

#[tokio::test]
async fn an_endpoint_failing_for_days_is_disabled_says_why_and_recovers_by_replay() {
    let w = world();
    let rx = receiver(500).await;
    let ep = w
        .worker
        .register(&w.tenant, &rx.url, &["transfer.settled".into()])
        .await
        .unwrap();
    // One event every 12 hours; the receiver answers 500 throughout.
    let mut disabled_at = None;
    for i in 0..14 {
        w.settled(&w.tenant, &format!("evt_{i}")).await;
        for _ in 0..12 {
            let r = w.worker.round().await.unwrap();
            if !r.auto_disabled.is_empty() {
                assert_eq!(r.auto_disabled, vec![ep.id.clone()]);
                assert!(disabled_at.is_none(), "disabled once");
                disabled_at = Some(w.clock.now());
            }
            w.clock.advance_ms(HOUR);
        }
    }
    let disabled_at = disabled_at.expect("auto-disabled");
    let failing_for = disabled_at.millis() - START.millis();
    assert!(
        (AUTO_DISABLE_AFTER_MS..AUTO_DISABLE_AFTER_MS + 12 * HOUR).contains(&failing_for),
        "disabled after {failing_for} ms of failures"
    );
    let e = w.worker.endpoint(&w.tenant, ep.id.as_str()).await.unwrap();
    assert!(!e.enabled);
    let reason = e.disabled_reason.unwrap();
    assert!(reason.contains("automatically"), "{reason}");
    assert_eq!(rx.inbox.accepted.lock().unwrap().len(), 0);

    // While disabled, new events are recorded for inspection but not sent.
    let before = rx.requests();
    w.settled(&w.tenant, "evt_while_disabled").await;
    w.drain().await;
    assert_eq!(rx.requests(), before);
    let detail = w
        .worker
        .event(&w.tenant, "evt_while_disabled")
        .await
        .unwrap();
    assert!(detail.deliveries.is_empty());

    // Let every pending delivery run out, then fix the receiver, enable, replay.
    for _ in 0..40 {
        w.clock.advance_ms(HOUR);
        w.drain().await;
    }
    rx.set(200);
    let e = w.worker.enable(&w.tenant, ep.id.as_str()).await.unwrap();
    assert!(e.enabled && e.disabled_reason.is_none() && e.failing_since.is_none());
    let dead = w
        .worker
        .list_deliveries(&w.tenant, Some(DeliveryState::Dead), 100, 0)
        .await
        .unwrap();
    assert!(dead.total > 0);
    let replayed = w
        .worker
        .replay_failed(&w.tenant, START, w.clock.now())
        .await
        .unwrap();
    assert_eq!(replayed.len() as u64, dead.total);
    w.drain().await;
    assert_eq!(rx.accepted().len(), replayed.len());
    // Replaying the same range again sends nothing more.
    assert!(
        w.worker
            .replay_failed(&w.tenant, START, w.clock.now())
            .await
            .unwrap()
            .is_empty()
    );
    // Every accepted body verifies with the endpoint's secret and no event came twice.
    let mut ids = Vec::new();
    for (h, body) in rx.accepted() {
        verify_wallet(
            &ep.secret,
            &body,
            h.get("x-svc-signature").and_then(|v| v.to_str().ok()),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        ids.push(v["transfer_id"].as_str().unwrap().to_string());
    }
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n);
    // A range that is empty or reversed is refused.
    let e = w
        .worker
        .replay_failed(&w.tenant, w.clock.now(), START)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_PARAMETER");
}

#[tokio::test]
async fn replay_keeps_the_escrow_event_id_and_never_crosses_tenants() {
    let w = world();
    let other = TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC11".into());
    let rx = receiver(200).await;
    let ep = w
        .worker
        .register(&w.tenant, &rx.url, &["escrow.funded".into()])
        .await
        .unwrap();
    let payload = serde_json::json!({
        "event_id": "evt_esc_01",
        "event": "escrow.funded",
        "escrow_id": "esc_01",
        "amount": "100.000000",
        "occurred_at": "2026-11-23T05:04:18Z"
    });
    w.emit(OutboxEvent {
        id: "evt_esc_01".into(),
        tenant: w.tenant.0.clone(),
        event_type: "escrow.funded".into(),
        occurred_at: START,
        payload: payload.clone(),
    })
    .await;
    w.settled(&other, "evt_other_1").await;
    w.drain().await;

    // The other tenant sees nothing of ours and cannot replay it.
    let theirs = w.worker.list_events(&other, None, 50, 0).await.unwrap();
    assert_eq!(theirs.total, 1);
    assert!(theirs.items.iter().all(|e| e.tenant == other));
    for e in [
        w.worker.event(&other, "evt_esc_01").await.unwrap_err(),
        w.worker
            .replay_event(&other, "evt_esc_01")
            .await
            .unwrap_err(),
    ] {
        assert_eq!(e.code(), "NOT_FOUND");
    }
    assert!(
        w.worker
            .replay_event(&w.tenant, "evt_other_1")
            .await
            .is_err()
    );

    let created = w
        .worker
        .replay_event(&w.tenant, "evt_esc_01")
        .await
        .unwrap();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].state, DeliveryState::Pending);
    w.drain().await;
    let got = rx.accepted();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].1, got[1].1, "a replay sends the same bytes");
    let v: serde_json::Value = serde_json::from_slice(&got[1].1).unwrap();
    assert_eq!(v["event_id"], "evt_esc_01");
    for (h, body) in &got {
        verify_wallet(
            &ep.secret,
            body,
            h.get("x-svc-signature").and_then(|v| v.to_str().ok()),
        )
        .unwrap();
    }

    // Inspection: the event with both deliveries and each attempt's status and latency.
    let detail = w.worker.event(&w.tenant, "evt_esc_01").await.unwrap();
    assert_eq!(detail.event.replays, 1);
    assert_eq!(detail.deliveries.len(), 2);
    for d in &detail.deliveries {
        assert_eq!(d.state, DeliveryState::Delivered);
        assert_eq!(d.attempts.len(), 1);
        assert_eq!(d.attempts[0].status, Some(200));
        assert!(d.attempts[0].error.is_none());
    }
    let ours = w.worker.list_events(&w.tenant, None, 50, 0).await.unwrap();
    assert_eq!(ours.total, 1);
    let by_type = w
        .worker
        .list_events(&w.tenant, Some("transfer.settled"), 50, 0)
        .await
        .unwrap();
    assert_eq!(by_type.total, 0);
}

/// The state of the delivery of `event` to `endpoint`, if it is still stored.
async fn state(w: &World, endpoint: &str, event: &str) -> Option<DeliveryState> {
    let page = w.worker.list_deliveries(&w.tenant, None, 100, 0);
    let page = page.await.unwrap();
    page.items
        .iter()
        .find(|d| d.endpoint.0 == endpoint && d.event_id == event)
        .map(|d| d.state)
}

async fn event_exists(w: &World, id: &str) -> bool {
    match w.worker.event(&w.tenant, id).await {
        Ok(_) => true,
        Err(e) if e.code() == "NOT_FOUND" => false,
        Err(e) => panic!("event {id}: {e}"),
    }
}

/// Retention (`Deliverer::purge_expired`): delivered and dead deliveries and old events
/// are purged; a delivery still pending is kept whatever its age, and still delivered
/// after its event record is gone.
#[tokio::test]
async fn finished_deliveries_and_old_events_are_purged_and_pending_ones_kept() {
    let w = world();
    let (ok, failing, slow) = (
        receiver(200).await,
        receiver(500).await,
        receiver(503).await,
    );
    let mut ids = Vec::new();
    for (rx, event) in [
        (&ok, "transfer.settled"),
        (&failing, "transfer.settled"),
        (&slow, "user.linked"),
    ] {
        let events = [event.to_string()];
        let ep = w
            .worker
            .register_for(Family::Wallet, &w.tenant, &rx.url, &events);
        ids.push(ep.await.unwrap().id.0);
    }
    let (a, b, c) = (&ids[0], &ids[1], &ids[2]);

    // Day 0: evt_1 is delivered to A and fails at B; evt_2 fails at C, which asks
    // (Retry-After) for a day between attempts.
    w.settled(&w.tenant, "evt_1").await;
    let linked = DomainEvent::UserLinked {
        wallet_address: "0x00000000000000000000000000000000000000aa".into(),
        new_merchant_id: "ten_other".into(),
        linked_at: START,
    };
    w.emit(outbox_event("evt_2", &w.tenant, START, &linked).unwrap())
        .await;
    w.drain().await;
    assert_eq!(state(&w, a, "evt_1").await, Some(DeliveryState::Delivered));
    // B's retries run out (8 attempts over about a day and a half): it is DEAD. C has
    // been retried a few times a day apart and is still PENDING.
    for _ in 0..20 {
        if state(&w, b, "evt_1").await == Some(DeliveryState::Dead) {
            break;
        }
        w.clock.advance_ms(11 * HOUR);
        w.drain().await;
    }
    assert_eq!(state(&w, b, "evt_1").await, Some(DeliveryState::Dead));
    assert_eq!(state(&w, c, "evt_2").await, Some(DeliveryState::Pending));

    // Later, evt_3 is delivered to A and B.
    failing.set(200);
    w.settled(&w.tenant, "evt_3").await;
    w.drain().await;
    assert_eq!(state(&w, b, "evt_3").await, Some(DeliveryState::Delivered));

    // The purge runs when day 0 is one window and an hour in the past.
    w.clock.set(START.plus_millis(MAX_RETRY_SPAN_MS + HOUR));
    let retention = WebhookRetention::new(MAX_RETRY_SPAN_MS)
        .unwrap()
        .with_batch_limit(1);
    let report = w.worker.purge_expired(&retention).await.unwrap();
    assert_eq!(
        report,
        WebhookPurgeReport {
            events: 2,
            deliveries: 2,
            outbox: 3,
        }
    );
    assert!(
        w.store.outbox_after(0, 10).await.unwrap().is_empty(),
        "the three fanned-out events left the outbox (their records hold them)"
    );
    assert_eq!(
        state(&w, a, "evt_1").await,
        None,
        "a delivered one is purged"
    );
    assert_eq!(state(&w, b, "evt_1").await, None, "a dead one is purged");
    assert_eq!(
        state(&w, c, "evt_2").await,
        Some(DeliveryState::Pending),
        "a pending delivery is kept, however old"
    );
    assert!(!event_exists(&w, "evt_1").await && !event_exists(&w, "evt_2").await);
    assert!(event_exists(&w, "evt_3").await, "a newer event is kept");
    assert_eq!(state(&w, a, "evt_3").await, Some(DeliveryState::Delivered));

    // The pending delivery does not need its event record: C recovers and gets it.
    slow.set(200);
    w.drain().await;
    assert_eq!(state(&w, c, "evt_2").await, Some(DeliveryState::Delivered));
    // Now final, the day-0 delivery goes at the next purge; then nothing is left.
    let report = w.worker.purge_expired(&retention).await.unwrap();
    assert_eq!((report.events, report.deliveries), (0, 1));
    assert_eq!(state(&w, c, "evt_2").await, None);
    assert_eq!(
        w.worker.purge_expired(&retention).await.unwrap(),
        WebhookPurgeReport::default()
    );
    // Fan-out goes on after its outbox was purged: a new event is delivered.
    w.settled(&w.tenant, "evt_4").await;
    w.drain().await;
    assert_eq!(state(&w, a, "evt_4").await, Some(DeliveryState::Delivered));
}
