//! The dispatcher (`Deliverer::run`) against receivers that hang: accept the connection
//! and never answer. One tenant's hanging endpoints hold at most their caps of the
//! budget, and another tenant's deliveries arrive meanwhile, long before the hanging
//! attempts time out.

use axum::body::Bytes;
use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::{MemoryStore, SeededEntropy, SystemClock};
use stablecoin_core::ports::{Batch, Clock, Store};
use stablecoin_webhooks::delivery::{TIMEOUT, outbox_event};
use stablecoin_webhooks::ssrf::AllowList;
use stablecoin_webhooks::{Deliverer, DeliveryConfig, DeliveryState, WebhookError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Accepts connections and never answers; counts how many are open at once.
struct Hang {
    url: String,
    open: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

async fn hanging_receiver() -> Hang {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let open = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (o, m) = (open.clone(), most.clone());
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let now = o.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            let o = o.clone();
            tokio::spawn(async move {
                // Read until the client gives up (its timeout closes the connection).
                let mut buf = [0u8; 4096];
                while let Ok(n) = tokio::io::AsyncReadExt::read(&mut sock, &mut buf).await {
                    if n == 0 {
                        break;
                    }
                }
                o.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Hang { url, open, most }
}

async fn ok_receiver() -> (String, Arc<Mutex<Vec<Bytes>>>) {
    let got: Arc<Mutex<Vec<Bytes>>> = Arc::default();
    let g = got.clone();
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move |body: Bytes| {
            let g = g.clone();
            async move {
                g.lock().unwrap().push(body);
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

async fn settled(store: &MemoryStore, tenant: &TenantId, id: &str) {
    let now = SystemClock.now();
    let e = DomainEvent::TransferSettled {
        transfer_id: format!("tr_{id}"),
        amount: Micros(1_000_000),
        token: Token::Usdc,
        tx_hash: "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
        updated_at: now,
    };
    store
        .commit(Batch {
            outbox: vec![outbox_event(id, tenant, now, &e).unwrap()],
            ..Default::default()
        })
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_receivers_hold_their_caps_and_another_tenant_still_gets_its_deliveries() {
    let store = Arc::new(MemoryStore::new());
    let timeout = Duration::from_secs(4);
    let worker = Deliverer::new(
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(SeededEntropy::new(4)),
        DeliveryConfig {
            timeout,
            concurrency: 4,
            endpoint_concurrency: 2,
            tenant_concurrency: 3,
            poll_interval: Duration::from_millis(20),
            allow_networks: AllowList::loopback(),
            ..Default::default()
        },
    )
    .unwrap();
    let slow = TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC10".into());
    let other = TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC11".into());
    let events = vec!["transfer.settled".to_string()];
    // The slow tenant: three endpoints that hang, whose caps (3 x 2) exceed the budget.
    let mut hangs = Vec::new();
    for _ in 0..3 {
        let h = hanging_receiver().await;
        worker.register(&slow, &h.url, &events).await.unwrap();
        hangs.push(h);
    }
    let (url, got) = ok_receiver().await;
    worker.register(&other, &url, &events).await.unwrap();
    // Its backlog comes first in the due order.
    for i in 0..8 {
        settled(&store, &slow, &format!("evt_slow_{i}")).await;
    }
    for i in 0..3 {
        settled(&store, &other, &format!("evt_other_{i}")).await;
    }

    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let errors: Arc<Mutex<Vec<WebhookError>>> = Arc::default();
    let (w, errs) = (worker.clone(), errors.clone());
    let run = tokio::spawn(async move {
        w.run(
            async {
                let _ = stop_rx.await;
            },
            move |r| {
                if let Err(e) = r {
                    errs.lock().unwrap().push(e);
                }
            },
        )
        .await
    });

    // The other tenant's three deliveries arrive before any hanging attempt ends: when
    // they are in, no attempt to the hanging receivers has a result yet (an ordering, not
    // a stopwatch; the outer timeout only guards against a hang).
    tokio::time::timeout(timeout * 10, async {
        while got.lock().unwrap().len() < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the other tenant's deliveries never arrived");
    let slow_so_far = worker.list_deliveries(&slow, None, 100, 0).await.unwrap();
    let ended: usize = slow_so_far.items.iter().map(|d| d.attempts.len()).sum();
    assert_eq!(ended, 0, "the other tenant waited on the hanging receivers");
    // Meanwhile the hanging endpoints hold their caps: 2 each, 3 for the tenant.
    let open: usize = hangs.iter().map(|h| h.open.load(Ordering::SeqCst)).sum();
    assert!((1..=3).contains(&open), "{open} open");
    // After the timeout, attempts to them have ended with "timeout".
    tokio::time::sleep(timeout + Duration::from_millis(700)).await;
    let _ = stop_tx.send(());
    run.await.unwrap();
    for h in &hangs {
        assert!(h.most.load(Ordering::SeqCst) <= 2, "the per-endpoint cap");
    }
    let most_at_once: usize = hangs.iter().map(|h| h.most.load(Ordering::SeqCst)).sum();
    assert!(most_at_once >= 2, "the hanging endpoints were tried");
    let page = worker
        .list_deliveries(&slow, Some(DeliveryState::Pending), 100, 0)
        .await
        .unwrap();
    let timed_out = page
        .items
        .iter()
        .filter(|d| {
            d.attempts
                .iter()
                .any(|a| a.error.as_deref() == Some(TIMEOUT))
        })
        .count();
    assert!(timed_out >= 2, "{timed_out} timed out");
    assert!(
        errors.lock().unwrap().is_empty(),
        "{:?}",
        errors.lock().unwrap()
    );
    let delivered = worker
        .list_deliveries(&other, Some(DeliveryState::Delivered), 100, 0)
        .await
        .unwrap();
    assert_eq!(delivered.total, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_hanging_endpoint_never_holds_more_than_its_cap() {
    let store = Arc::new(MemoryStore::new());
    let worker = Deliverer::new(
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(SeededEntropy::new(5)),
        DeliveryConfig {
            timeout: Duration::from_secs(5),
            concurrency: 8,
            endpoint_concurrency: 2,
            tenant_concurrency: 8,
            poll_interval: Duration::from_millis(20),
            allow_networks: AllowList::loopback(),
            ..Default::default()
        },
    )
    .unwrap();
    let tenant = TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC10".into());
    let h = hanging_receiver().await;
    let e = worker
        .register(&tenant, &h.url, &["transfer.settled".to_string()])
        .await
        .unwrap();
    for i in 0..6 {
        settled(&store, &tenant, &format!("evt_{i}")).await;
    }
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let w = worker.clone();
    let run = tokio::spawn(async move {
        w.run(
            async {
                let _ = stop_rx.await;
            },
            |_| {},
        )
        .await
    });
    let deadline = Instant::now() + Duration::from_secs(3);
    while h.open.load(Ordering::SeqCst) < 2 {
        assert!(Instant::now() < deadline, "the attempts never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Long enough for the deferred ones to come due and be deferred again.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(h.open.load(Ordering::SeqCst), 2, "two attempts hang");
    let _ = stop_tx.send(());
    run.await.unwrap();
    assert_eq!(h.most.load(Ordering::SeqCst), 2, "never more than the cap");
    // The four others were deferred: no attempt counted, due later than created, one
    // slot after another. (The two in flight were abandoned at the stop: their claims
    // lapse and they are attempted again.)
    let page = worker.list_deliveries(&tenant, None, 100, 0).await.unwrap();
    assert!(
        page.items
            .iter()
            .all(|d| d.endpoint == e.id && d.attempts.is_empty())
    );
    let mut slots: Vec<i64> = page
        .items
        .iter()
        .map(|d| d.next_attempt_at.unwrap().millis() - d.created_at.millis())
        .filter(|later| *later > 0)
        .collect();
    slots.sort();
    assert_eq!(slots.len(), 4, "{slots:?}");
    assert!(slots.windows(2).all(|w| w[1] > w[0]), "spread: {slots:?}");
}
