//! The webhook worker in the simulated world: every tenant has an endpoint subscribed to
//! every wallet-service event, served by a receiver on loopback that the seed takes down
//! and brings back. Once faults stop, every event the outbox holds for a tenant is
//! delivered (at least once), none is dead and none pending.

use super::world::World;
use stablecoin::core::memory::{ManualClock, SeededEntropy};
use stablecoin_webhooks::delivery::{DeliveryState, WALLET_EVENT_TYPES};
use stablecoin_webhooks::ssrf::AllowList;
use stablecoin_webhooks::{Deliverer, DeliveryConfig};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A webhook receiver on loopback: 200 while up, 503 while down.
pub struct Receiver {
    pub url: String,
    pub up: Arc<AtomicBool>,
    /// Requests answered 200.
    pub accepted: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn receiver() -> Receiver {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let up = Arc::new(AtomicBool::new(true));
    let accepted = Arc::new(AtomicU64::new(0));
    let (u, a) = (up.clone(), accepted.clone());
    let task = tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(answer(sock, u.clone(), a.clone()));
        }
    });
    Receiver {
        url,
        up,
        accepted,
        task,
    }
}

/// Reads one request (head, then Content-Length bytes) and answers it.
async fn answer(mut sock: TcpStream, up: Arc<AtomicBool>, accepted: Arc<AtomicU64>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let Ok(n) = sock.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
        let len = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if buf.len() >= i + 4 + len {
            break;
        }
    }
    let reply: &[u8] = if up.load(Ordering::SeqCst) {
        accepted.fetch_add(1, Ordering::SeqCst);
        b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    } else {
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    };
    let _ = sock.write_all(reply).await;
}

pub fn deliverer(
    store: &Arc<super::world::SimStore>,
    clock: &Arc<ManualClock>,
    seed: u64,
    restarts: u64,
) -> Deliverer {
    Deliverer::new(
        store.clone(),
        clock.clone(),
        Arc::new(SeededEntropy::new(seed ^ 0x05EB_00C5 ^ (restarts << 32))),
        DeliveryConfig {
            timeout: Duration::from_secs(5),
            worker_id: format!("webhooks-{seed}-{restarts}"),
            allow_networks: AllowList::loopback(),
            ..DeliveryConfig::default()
        },
    )
    .unwrap()
}

impl World {
    /// Every tenant registers its endpoint, subscribed to every wallet-service event.
    pub async fn register_endpoints(&self) {
        let events: Vec<String> = WALLET_EVENT_TYPES.iter().map(|s| s.to_string()).collect();
        for t in &self.tenants {
            self.webhooks
                .register(t, &self.receiver.url, &events)
                .await
                .unwrap();
        }
    }

    /// One delivery round (fan-out of new outbox events, then the due attempts). A
    /// failed commit (injected) is a failed round: the next one picks up.
    pub async fn deliver(&self) {
        let _ = self.webhooks.round().await;
    }

    /// Rounds until no delivery is pending, the clock moving through the retry
    /// schedule. Returns false if some are still pending after a simulated week.
    pub async fn drain_webhooks(&self) -> bool {
        self.receiver.up.store(true, Ordering::SeqCst);
        for _ in 0..60 {
            for _ in 0..4 {
                self.deliver().await;
            }
            if self.pending_deliveries().await == 0 {
                return true;
            }
            self.clock.advance_ms(3 * 3_600_000);
        }
        false
    }

    async fn pending_deliveries(&self) -> u64 {
        let mut n = 0;
        for t in &self.tenants {
            n += self
                .webhooks
                .list_deliveries(t, Some(DeliveryState::Pending), 1, 0)
                .await
                .unwrap()
                .total;
        }
        n
    }
}

/// After the drain: for every tenant, each outbox event of a subscribed type was
/// delivered, and nothing is dead or pending.
pub async fn after_drain(w: &World) {
    let seed = w.seed;
    assert!(
        w.drain_webhooks().await,
        "seed {seed}: deliveries still pending after a week"
    );
    let mut expected: std::collections::BTreeMap<String, u64> = Default::default();
    for (_, e) in stablecoin::core::ports::Store::outbox_after(&*w.store, 0, usize::MAX)
        .await
        .unwrap()
    {
        if WALLET_EVENT_TYPES.contains(&e.event_type.as_str()) {
            *expected.entry(e.tenant.clone()).or_default() += 1;
        }
    }
    let mut delivered_total = 0;
    for t in &w.tenants {
        let count = |state| async move {
            w.webhooks
                .list_deliveries(t, Some(state), 1, 0)
                .await
                .unwrap()
                .total
        };
        let delivered = count(DeliveryState::Delivered).await;
        assert_eq!(
            count(DeliveryState::Dead).await,
            0,
            "seed {seed}: dead deliveries for {t}"
        );
        assert_eq!(
            delivered,
            expected.get(&t.0).copied().unwrap_or(0),
            "seed {seed}: every event of {t} delivered once as a delivery"
        );
        delivered_total += delivered;
    }
    assert!(
        w.receiver.accepted.load(Ordering::SeqCst) >= delivered_total,
        "seed {seed}: the receiver saw every delivered event"
    );
}
