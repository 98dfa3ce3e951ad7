//! The delivery worker against a real receiver on a loopback port that answers 200, 500,
//! 503 with Retry-After, hangs past the timeout, closes the connection, goes away and
//! comes back. The schedule is driven by a manual clock (no sleeps drive it); a worker
//! restart loses nothing; every delivered body verifies with the endpoint's secret.

use serde_json::json;
use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::memory::{ManualClock, MemoryStore, SeededEntropy};
use stablecoin_core::ports::{Batch, Clock, OutboxEvent, Store};
use stablecoin_webhooks::delivery::{DeliveryState, RETRY_SCHEDULE_MS};
use stablecoin_webhooks::ssrf::StaticResolver;
use stablecoin_webhooks::{Deliverer, DeliveryConfig, Family};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const START: Timestamp = Timestamp::from_secs(1_795_410_258);

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Ok,
    Error500,
    Busy503,
    Hang,
    Close,
}

#[derive(Default)]
struct Seen {
    /// (signature header, body) of every request answered 200.
    ok: Vec<(String, String)>,
    requests: usize,
}

struct Receiver {
    addr: SocketAddr,
    mode: Arc<Mutex<Mode>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Receiver {
    async fn start(addr: SocketAddr, mode: Arc<Mutex<Mode>>, seen: Arc<Mutex<Seen>>) -> Self {
        let listener = TcpListener::bind(addr).await.expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let (m, s) = (mode.clone(), seen.clone());
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(handle(sock, m.clone(), s.clone()));
            }
        });
        Receiver {
            addr,
            mode,
            task: Some(task),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hooks", self.addr.port())
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// Stops listening: connections are refused until `start` on the same address.
    fn go_away(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.go_away();
    }
}

async fn handle(mut sock: TcpStream, mode: Arc<Mutex<Mode>>, seen: Arc<Mutex<Seen>>) {
    // Read the head, then Content-Length bytes of body.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let (head_end, len) = loop {
        let Ok(n) = sock.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (i + 4, len);
        }
    };
    while buf.len() < head_end + len {
        let Ok(n) = sock.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let body = String::from_utf8_lossy(&buf[head_end..head_end + len]).to_string();
    let m = *mode.lock().unwrap();
    seen.lock().unwrap().requests += 1;
    let reply: &[u8] = match m {
        Mode::Ok => {
            let sig = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("x-svc-signature")
                        .then(|| v.trim().to_string())
                })
                .unwrap_or_default();
            assert!(head.contains("Svc-CaaS-Webhooks/1.0"), "{head}");
            seen.lock().unwrap().ok.push((sig, body));
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        }
        Mode::Error500 => {
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        }
        Mode::Busy503 => {
            b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 7200\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        }
        Mode::Hang => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            return;
        }
        Mode::Close => return,
    };
    let _ = sock.write_all(reply).await;
    let _ = sock.shutdown().await;
}

struct World {
    store: Arc<MemoryStore>,
    clock: Arc<ManualClock>,
    tenant: TenantId,
}

impl World {
    fn new() -> Self {
        World {
            store: Arc::new(MemoryStore::new()),
            clock: Arc::new(ManualClock::new(START)),
            tenant: TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC10".into()),
        }
    }

    /// A worker whose resolver knows one name, `example.com`, at a public address
    /// (the tests run without DNS).
    fn worker(&self, name: &str) -> Deliverer {
        let dns = StaticResolver::new();
        dns.set("example.com", &["93.184.215.14".parse().unwrap()]);
        Deliverer::with_resolver(
            self.store.clone(),
            self.clock.clone(),
            Arc::new(SeededEntropy::new(3)),
            DeliveryConfig {
                timeout: Duration::from_millis(300),
                lease_ms: 60_000,
                batch_limit: 64,
                concurrency: 4,
                worker_id: name.into(),
                allow_networks: stablecoin_webhooks::ssrf::AllowList::loopback(),
                ..DeliveryConfig::default()
            },
            Arc::new(dns),
        )
        .unwrap()
    }

    async fn emit(&self, tenant: &TenantId, id: &str, event: DomainEvent) {
        self.store
            .commit(Batch {
                outbox: vec![OutboxEvent {
                    id: id.into(),
                    tenant: tenant.0.clone(),
                    event_type: event.name().into(),
                    occurred_at: self.clock.now(),
                    payload: serde_json::to_value(&event).unwrap(),
                }],
                ..Default::default()
            })
            .await
            .unwrap();
    }
}

fn settled(id: &str) -> DomainEvent {
    DomainEvent::TransferSettled {
        transfer_id: id.into(),
        amount: Micros(25_000_000),
        token: Token::Usdc,
        tx_hash: "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
        updated_at: START,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_mode_then_delivered_once_after_a_worker_restart() {
    let w = World::new();
    let mode = Arc::new(Mutex::new(Mode::Error500));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let mut rx = Receiver::start("127.0.0.1:0".parse().unwrap(), mode, seen.clone()).await;
    let worker = w.worker("w1");
    let endpoint = worker
        .register(&w.tenant, &rx.url(), &["transfer.settled".into()])
        .await
        .unwrap();
    assert!(endpoint.secret.starts_with("svcwh_"));
    // Another tenant's endpoint and an unsubscribed type never receive this event.
    let other = TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC11".into());
    worker
        .register(&other, &rx.url(), &["transfer.settled".into()])
        .await
        .unwrap();

    w.emit(&w.tenant, "evt_1", settled("tr_1")).await;
    w.emit(
        &w.tenant,
        "evt_2",
        DomainEvent::UserLinked {
            wallet_address: "0xabc".into(),
            new_merchant_id: "ten_x".into(),
            linked_at: START,
        },
    )
    .await;
    let delivery_id = format!("whd_evt_1_{}", endpoint.id);

    // 1: 500 -> retry in 5 s (+ up to 10 % jitter).
    let r = worker.round().await.unwrap();
    assert_eq!((r.fanned_out, r.retried, r.delivered), (1, 1, 0));
    let d = worker.delivery(&w.tenant, &delivery_id).await.unwrap();
    assert_eq!(d.attempts[0].status, Some(500));
    let due = d.next_attempt_at.unwrap().millis() - w.clock.now().millis();
    assert!((5_000..=5_500).contains(&due), "{due}");
    // Not due yet: nothing happens.
    w.clock.advance_ms(4_000);
    assert_eq!(worker.round().await.unwrap().retried, 0);
    assert_eq!(seen.lock().unwrap().requests, 1);

    // 2: hangs past the timeout.
    rx.set(Mode::Hang);
    w.clock.advance_ms(2_000);
    assert_eq!(worker.round().await.unwrap().retried, 1);
    let d = worker.delivery(&w.tenant, &delivery_id).await.unwrap();
    assert_eq!(d.attempts[1].status, None);
    assert_eq!(d.attempts[1].error.as_deref(), Some("timeout"));

    // 3: closes the connection without answering.
    rx.set(Mode::Close);
    w.clock.advance_ms(RETRY_SCHEDULE_MS[1] * 11 / 10 + 1);
    assert_eq!(worker.round().await.unwrap().retried, 1);
    let d = worker.delivery(&w.tenant, &delivery_id).await.unwrap();
    assert!(d.attempts[2].status.is_none() && d.attempts[2].error.is_some());

    // 4: 503 with Retry-After: 2 h, longer than the 30 min step: honoured.
    rx.set(Mode::Busy503);
    w.clock.advance_ms(RETRY_SCHEDULE_MS[2] * 11 / 10 + 1);
    assert_eq!(worker.round().await.unwrap().retried, 1);
    let d = worker.delivery(&w.tenant, &delivery_id).await.unwrap();
    assert_eq!(d.attempts[3].status, Some(503));
    let due = d.next_attempt_at.unwrap().millis() - w.clock.now().millis();
    assert!(due >= 7_200_000, "{due}");

    // 5: the receiver goes away (connection refused).
    let addr = rx.addr;
    rx.go_away();
    tokio::task::yield_now().await;
    w.clock.advance_ms(due + 1);
    assert_eq!(worker.round().await.unwrap().retried, 1);
    let d = worker.delivery(&w.tenant, &delivery_id).await.unwrap();
    assert_eq!(d.attempts.len(), 5);
    assert!(d.attempts[4].status.is_none());

    // The worker process "restarts": a new worker on the same store picks up where the
    // old one left; the receiver comes back on the same port and answers 200.
    drop(worker);
    let mode = Arc::new(Mutex::new(Mode::Ok));
    let _rx = Receiver::start(addr, mode, seen.clone()).await;
    let worker = w.worker("w2");
    w.clock.advance_ms(RETRY_SCHEDULE_MS[4] * 11 / 10 + 1);
    let r = worker.round().await.unwrap();
    assert_eq!((r.fanned_out, r.delivered), (0, 1), "{r:?}");
    let d = worker.delivery(&w.tenant, &delivery_id).await.unwrap();
    assert_eq!(d.state, DeliveryState::Delivered);
    assert_eq!(d.attempts.len(), 6);
    assert_eq!(d.attempts[5].status, Some(200));

    // Exactly one 200 delivery; its signature verifies over the exact bytes received.
    let ok = seen.lock().unwrap().ok.clone();
    assert_eq!(ok.len(), 1);
    let (sig, body) = &ok[0];
    assert_eq!(
        Family::Wallet.verify(&endpoint.secret, body.as_bytes(), Some(sig)),
        Ok(())
    );
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        v,
        json!({"event": "transfer.settled", "transfer_id": "tr_1", "status": "SETTLED",
            "amount_usdc": "25.000000", "token": "USDC",
            "tx_hash": "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "updated_at": "2026-11-23T05:04:18Z"})
    );
    // Nothing more is due, nothing is sent again.
    w.clock.advance_ms(48 * 3_600_000);
    let r = worker.round().await.unwrap();
    assert_eq!((r.delivered, r.retried, r.dead), (0, 0, 0));
    assert_eq!(seen.lock().unwrap().ok.len(), 1);
    // The other tenant cannot read this tenant's delivery.
    assert!(worker.delivery(&other, &delivery_id).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_recovers_gets_eight_attempts_then_dead() {
    let w = World::new();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let rx = Receiver::start(
        "127.0.0.1:0".parse().unwrap(),
        Arc::new(Mutex::new(Mode::Error500)),
        seen.clone(),
    )
    .await;
    let worker = w.worker("w1");
    let e = worker
        .register(&w.tenant, &rx.url(), &["transfer.settled".into()])
        .await
        .unwrap();
    w.emit(&w.tenant, "evt_9", settled("tr_9")).await;
    let mut dead = 0;
    for _ in 0..20 {
        dead += worker.round().await.unwrap().dead;
        w.clock.advance_ms(11 * 3_600_000);
    }
    assert_eq!(dead, 1);
    let d = worker
        .delivery(&w.tenant, &format!("whd_evt_9_{}", e.id))
        .await
        .unwrap();
    assert_eq!(d.state, DeliveryState::Dead);
    assert_eq!(d.attempts.len(), RETRY_SCHEDULE_MS.len() + 1);
    assert_eq!(seen.lock().unwrap().requests, 8);
}

#[tokio::test]
async fn two_workers_fan_out_and_deliver_each_event_once() {
    let w = World::new();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let rx = Receiver::start(
        "127.0.0.1:0".parse().unwrap(),
        Arc::new(Mutex::new(Mode::Ok)),
        seen.clone(),
    )
    .await;
    let a = w.worker("a");
    let b = w.worker("b");
    a.register(&w.tenant, &rx.url(), &["transfer.settled".into()])
        .await
        .unwrap();
    for i in 0..30 {
        w.emit(&w.tenant, &format!("evt_{i}"), settled(&format!("tr_{i}")))
            .await;
    }
    let (ra, rb) = tokio::join!(a.round(), b.round());
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(ra.fanned_out + rb.fanned_out, 30);
    // Whatever is left (a worker may have claimed before the other fanned out).
    let rest = a.round().await.unwrap().delivered + b.round().await.unwrap().delivered;
    assert_eq!(ra.delivered + rb.delivered + rest, 30);
    assert_eq!(seen.lock().unwrap().ok.len(), 30, "each event exactly once");
}

#[tokio::test]
async fn registration_refuses_bad_urls_and_unknown_types() {
    let w = World::new();
    let worker = w.worker("w1");
    for url in ["http://example.com/hooks", "ftp://x", "not a url"] {
        let e = worker
            .register(&w.tenant, url, &["transfer.settled".into()])
            .await
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_WEBHOOK_URL", "{url}");
    }
    let e = worker
        .register(
            &w.tenant,
            "https://example.com/h",
            &["transfer.sent".into()],
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_EVENT_TYPE");
    let e = worker
        .register(&w.tenant, "https://example.com/h", &[])
        .await
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_PARAMETER");
    assert_eq!(w.store.commit_count(), 0, "nothing written");
    let ok = worker
        .register(
            &w.tenant,
            "https://example.com/h",
            &["escrow.funded".into()],
        )
        .await
        .unwrap();
    let rotated = worker
        .rotate_secret(&w.tenant, ok.id.as_str())
        .await
        .unwrap();
    assert_ne!(rotated.secret, ok.secret);
}
