//! Retention of webhook records (`Deliverer::purge_expired`), against real receivers on
//! loopback and a manual clock: delivered and dead deliveries and old events are
//! purged; a delivery still pending is kept whatever its age, and still delivered after
//! its event record is gone.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::memory::{ManualClock, MemoryStore, SeededEntropy};
use stablecoin_core::ports::{Batch, Clock, Store};
use stablecoin_webhooks::delivery::{
    DeliveryState, MAX_RETRY_SPAN_MS, WebhookPurgeReport, WebhookRetention, outbox_event,
};
use stablecoin_webhooks::{Deliverer, DeliveryConfig, Family};
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

const START: Timestamp = Timestamp::from_secs(1_795_410_258);
const HOUR: i64 = 3_600_000;

/// A receiver answering `status` to every request; a 503 carries `Retry-After: 86400`.
struct Receiver {
    url: String,
    status: Arc<AtomicU16>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(State(status): State<Arc<AtomicU16>>) -> (StatusCode, HeaderMap) {
    let status = StatusCode::from_u16(status.load(Ordering::SeqCst)).unwrap();
    let mut headers = HeaderMap::new();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        headers.insert("retry-after", HeaderValue::from_static("86400"));
    }
    (status, headers)
}

async fn receiver(status: u16) -> Receiver {
    let status = Arc::new(AtomicU16::new(status));
    let app = Router::new()
        .route("/hooks", axum::routing::post(answer))
        .with_state(status.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Receiver { url, status, task }
}

struct World {
    store: Arc<MemoryStore>,
    clock: Arc<ManualClock>,
    worker: Deliverer,
    tenant: TenantId,
}

impl World {
    fn new() -> World {
        let store = Arc::new(MemoryStore::new());
        let clock = Arc::new(ManualClock::new(START));
        let config = DeliveryConfig {
            timeout: Duration::from_secs(2),
            allow_networks: stablecoin_webhooks::ssrf::AllowList::loopback(),
            ..Default::default()
        };
        let entropy = Arc::new(SeededEntropy::new(7));
        let worker = Deliverer::new(store.clone(), clock.clone(), entropy, config).unwrap();
        World {
            store,
            clock,
            worker,
            tenant: TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC10".into()),
        }
    }

    async fn subscribe(&self, rx: &Receiver, event: &str) -> String {
        let events = [event.to_string()];
        let ep = self
            .worker
            .register_for(Family::Wallet, &self.tenant, &rx.url, &events);
        ep.await.unwrap().id.0
    }

    async fn emit(&self, id: &str, event: DomainEvent) {
        let event = outbox_event(id, &self.tenant, self.clock.now(), &event).unwrap();
        let batch = Batch {
            outbox: vec![event],
            ..Default::default()
        };
        self.store.commit(batch).await.unwrap();
    }

    async fn settled(&self, id: &str) {
        let event = DomainEvent::TransferSettled {
            transfer_id: format!("tr_{id}"),
            amount: Micros(25_000_000),
            token: Token::Usdc,
            tx_hash: "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
            updated_at: self.clock.now(),
        };
        self.emit(id, event).await;
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

    /// The state of the delivery of `event` to `endpoint`, if it is still stored.
    async fn state(&self, endpoint: &str, event: &str) -> Option<DeliveryState> {
        let page = self.worker.list_deliveries(&self.tenant, None, 100, 0);
        let page = page.await.unwrap();
        page.items
            .iter()
            .find(|d| d.endpoint.0 == endpoint && d.event_id == event)
            .map(|d| d.state)
    }

    async fn event_exists(&self, id: &str) -> bool {
        match self.worker.event(&self.tenant, id).await {
            Ok(_) => true,
            Err(e) if e.code() == "NOT_FOUND" => false,
            Err(e) => panic!("event {id}: {e}"),
        }
    }
}

#[tokio::test]
async fn finished_deliveries_and_old_events_are_purged_and_pending_ones_kept() {
    let w = World::new();
    let (ok, failing, slow) = (
        receiver(200).await,
        receiver(500).await,
        receiver(503).await,
    );
    let a = w.subscribe(&ok, "transfer.settled").await;
    let b = w.subscribe(&failing, "transfer.settled").await;
    let c = w.subscribe(&slow, "user.linked").await;

    // Day 0: e1 is delivered to A and fails at B; e2 fails at C, which asks (Retry-After)
    // for a day between attempts.
    w.settled("evt_1").await;
    let linked = DomainEvent::UserLinked {
        wallet_address: "0x00000000000000000000000000000000000000aa".into(),
        new_merchant_id: "ten_other".into(),
        linked_at: START,
    };
    w.emit("evt_2", linked).await;
    w.drain().await;
    assert_eq!(w.state(&a, "evt_1").await, Some(DeliveryState::Delivered));
    // B's retries run out (8 attempts over about a day and a half): it is DEAD. C has
    // been retried a few times a day apart and is still PENDING.
    for _ in 0..20 {
        if w.state(&b, "evt_1").await == Some(DeliveryState::Dead) {
            break;
        }
        w.clock.advance_ms(11 * HOUR);
        w.drain().await;
    }
    assert_eq!(w.state(&b, "evt_1").await, Some(DeliveryState::Dead));
    assert_eq!(w.state(&c, "evt_2").await, Some(DeliveryState::Pending));

    // Later, e3 is delivered to A and B.
    failing.status.store(200, Ordering::SeqCst);
    w.settled("evt_3").await;
    w.drain().await;
    assert_eq!(w.state(&b, "evt_3").await, Some(DeliveryState::Delivered));

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
            deliveries: 2
        }
    );
    assert_eq!(
        w.state(&a, "evt_1").await,
        None,
        "a delivered one is purged"
    );
    assert_eq!(w.state(&b, "evt_1").await, None, "a dead one is purged");
    assert_eq!(
        w.state(&c, "evt_2").await,
        Some(DeliveryState::Pending),
        "a pending delivery is kept, however old"
    );
    assert!(!w.event_exists("evt_1").await && !w.event_exists("evt_2").await);
    assert!(w.event_exists("evt_3").await, "a newer event is kept");
    assert_eq!(w.state(&a, "evt_3").await, Some(DeliveryState::Delivered));

    // The pending delivery does not need its event record: C recovers and gets it.
    slow.status.store(200, Ordering::SeqCst);
    w.drain().await;
    assert_eq!(w.state(&c, "evt_2").await, Some(DeliveryState::Delivered));
    // Now final, the day-0 delivery goes at the next purge; then nothing is left.
    let report = w.worker.purge_expired(&retention).await.unwrap();
    assert_eq!((report.events, report.deliveries), (0, 1));
    assert_eq!(w.state(&c, "evt_2").await, None);
    assert_eq!(
        w.worker.purge_expired(&retention).await.unwrap(),
        WebhookPurgeReport::default()
    );
}
