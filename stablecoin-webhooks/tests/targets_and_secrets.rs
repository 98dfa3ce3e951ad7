//! Where a delivery may go and what it carries, against real listeners on loopback:
//!
//! - a host that resolves publicly at registration and to 127.0.0.1 later (DNS
//!   rebinding) is refused at delivery, whether it changed before the attempt's check or
//!   between that check and the connection: the listener on loopback accepts nothing;
//! - a URL registered while loopback was allowed is refused by a deliverer that does not
//!   allow it (the check before every attempt: an IP literal never reaches a resolver);
//! - attempt errors never carry an address or a port;
//! - secrets are sealed at rest, opened only to sign, plain legacy records still sign and
//!   are sealed at their next write, and `Debug` shows no secret;
//! - an endpoint that opted in gets Standard Webhooks headers beside the spec's header.

use axum::body::Bytes;
use axum::http::HeaderMap;
use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::memory::{ManualClock, MemoryStore, SeededEntropy};
use stablecoin_core::ports::record::{Record, get_record};
use stablecoin_core::ports::{Batch, Clock, Store};
use stablecoin_webhooks::delivery::{CONNECTION_FAILED, SECRET_UNAVAILABLE, outbox_event};
use stablecoin_webhooks::receiver::StandardVerifier;
use stablecoin_webhooks::secret_box::SecretKey;
use stablecoin_webhooks::ssrf::{AllowList, HostResolver, StaticResolver};
use stablecoin_webhooks::{Deliverer, DeliveryConfig, Endpoint, Family, NewEndpoint};
use std::collections::VecDeque;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const START: Timestamp = Timestamp::from_secs(1_795_410_258);
const PUBLIC: &str = "93.184.215.14";

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A listener that counts the connections it accepts and answers nothing.
async fn counting_listener() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = accepted.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            drop(sock);
        }
    });
    (addr, accepted)
}

type Inbox = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

/// An axum receiver answering 200 and keeping every request's headers and body.
async fn receiver() -> (String, Inbox) {
    let inbox: Inbox = Arc::default();
    let i = inbox.clone();
    let app = axum::Router::new().route(
        "/hooks",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let i = i.clone();
            async move {
                i.lock().unwrap().push((headers, body));
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, inbox)
}

/// Answers a host with the next of its scripted answers; the last one repeats.
#[derive(Default)]
struct Scripted(Mutex<VecDeque<IpAddr>>);

impl HostResolver for Scripted {
    fn lookup(
        &self,
        _host: &str,
        port: u16,
    ) -> Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + '_>> {
        let mut q = self.0.lock().unwrap();
        let ip = if q.len() > 1 {
            q.pop_front()
        } else {
            q.front().copied()
        };
        let out = ip
            .map(|ip| vec![SocketAddr::new(ip, port)])
            .ok_or_else(|| std::io::Error::other("no answer"));
        Box::pin(async move { out })
    }
}

struct World {
    store: Arc<MemoryStore>,
    clock: Arc<ManualClock>,
    tenant: TenantId,
    /// Entropy seed of the next worker: workers registering at one manual instant must
    /// not draw the same endpoint ids.
    seeds: AtomicUsize,
}

impl World {
    fn new() -> Self {
        World {
            store: Arc::new(MemoryStore::new()),
            clock: Arc::new(ManualClock::new(START)),
            tenant: TenantId("ten_01M83CMTGWWC1YF2WCE6WEYC10".into()),
            seeds: AtomicUsize::new(1),
        }
    }

    fn worker(
        &self,
        allow: AllowList,
        key: Option<SecretKey>,
        dns: Arc<dyn HostResolver>,
    ) -> Deliverer {
        Deliverer::with_resolver(
            self.store.clone(),
            self.clock.clone(),
            Arc::new(SeededEntropy::new(
                self.seeds.fetch_add(1, Ordering::SeqCst) as u64,
            )),
            DeliveryConfig {
                timeout: Duration::from_millis(500),
                allow_networks: allow,
                secret_key: key,
                ..Default::default()
            },
            dns,
        )
        .unwrap()
    }

    async fn settled(&self, id: &str) {
        let e = DomainEvent::TransferSettled {
            transfer_id: format!("tr_{id}"),
            amount: Micros(25_000_000),
            token: Token::Usdc,
            tx_hash: "0x9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".into(),
            updated_at: self.clock.now(),
        };
        self.store
            .commit(Batch {
                outbox: vec![outbox_event(id, &self.tenant, self.clock.now(), &e).unwrap()],
                ..Default::default()
            })
            .await
            .unwrap();
    }

    async fn stored_endpoint(&self, id: &str) -> Endpoint {
        get_record::<Endpoint>(&*self.store, id)
            .await
            .unwrap()
            .unwrap()
            .record
    }
}

fn settled_only() -> Vec<String> {
    vec!["transfer.settled".into()]
}

/// Every attempt error of a delivery, after one round.
async fn attempt_errors(
    w: &World,
    worker: &Deliverer,
    endpoint: &Endpoint,
    evt: &str,
) -> Vec<String> {
    let d = worker
        .delivery(&w.tenant, &format!("whd_{evt}_{}", endpoint.id))
        .await
        .unwrap();
    d.attempts.iter().filter_map(|a| a.error.clone()).collect()
}

#[tokio::test]
async fn a_name_that_turns_internal_after_registration_is_refused_at_delivery() {
    let (addr, accepted) = counting_listener().await;
    let url = format!("https://hooks.example.com:{}/hooks", addr.port());

    // Case 1: the name is internal again by the check before the attempt.
    let w = World::new();
    let dns = Arc::new(StaticResolver::new());
    dns.set("hooks.example.com", &[ip(PUBLIC)]);
    let worker = w.worker(AllowList::default(), None, dns.clone());
    let e = worker
        .register(&w.tenant, &url, &settled_only())
        .await
        .unwrap();
    dns.set("hooks.example.com", &[ip("127.0.0.1")]);
    w.settled("evt_1").await;
    let r = worker.round().await.unwrap();
    assert_eq!((r.fanned_out, r.retried, r.delivered), (1, 1, 0));
    assert_eq!(
        attempt_errors(&w, &worker, &e, "evt_1").await,
        [CONNECTION_FAILED]
    );

    // Case 2: public at registration AND at the check before the attempt, internal
    // when the client resolves to connect: the vetting resolver refuses it.
    let w = World::new();
    let dns = Arc::new(Scripted::default());
    dns.0
        .lock()
        .unwrap()
        .extend([ip(PUBLIC), ip(PUBLIC), ip("127.0.0.1")]);
    let worker = w.worker(AllowList::default(), None, dns.clone());
    let e = worker
        .register(&w.tenant, &url, &settled_only())
        .await
        .unwrap();
    w.settled("evt_2").await;
    worker.round().await.unwrap();
    assert_eq!(
        dns.0.lock().unwrap().len(),
        1,
        "all three answers were used"
    );
    assert_eq!(
        attempt_errors(&w, &worker, &e, "evt_2").await,
        [CONNECTION_FAILED]
    );

    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "the receiver on loopback got no connection"
    );
}

#[tokio::test]
async fn every_attempt_checks_the_url_again_and_errors_name_no_address() {
    let w = World::new();
    let (addr, accepted) = counting_listener().await;
    let url = format!("http://127.0.0.1:{}/hooks", addr.port());
    let dns: Arc<dyn HostResolver> = Arc::new(StaticResolver::new());
    // Registered while loopback was allowed...
    let lax = w.worker(AllowList::loopback(), None, dns.clone());
    let e = lax
        .register(&w.tenant, &url, &settled_only())
        .await
        .unwrap();
    // ...delivered by a deliverer that allows nothing internal: refused, no connection.
    let strict = w.worker(AllowList::default(), None, dns.clone());
    w.settled("evt_1").await;
    strict.round().await.unwrap();
    assert_eq!(
        attempt_errors(&w, &strict, &e, "evt_1").await,
        [CONNECTION_FAILED]
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 0);

    // A closed port, a listener that closes at once, an unresolvable name: all
    // "connection failed", with no address, port or resolver text to tell them apart.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let targets = [
        format!("http://127.0.0.1:{closed}/hooks"),
        url.clone(),
        "https://gone.example.com/hooks".to_string(),
    ];
    let dns = Arc::new(StaticResolver::new());
    dns.set("gone.example.com", &[ip(PUBLIC)]);
    let worker = w.worker(AllowList::loopback(), None, dns.clone());
    let mut endpoints = Vec::new();
    for t in &targets {
        endpoints.push(
            worker
                .register(&w.tenant, t, &settled_only())
                .await
                .unwrap(),
        );
    }
    dns.set("gone.example.com", &[]);
    w.settled("evt_2").await;
    worker.round().await.unwrap();
    for (e, t) in endpoints.iter().zip(&targets) {
        let errors = attempt_errors(&w, &worker, e, "evt_2").await;
        assert_eq!(errors, [CONNECTION_FAILED], "{t}");
    }
    let all = serde_json::to_string(
        &worker
            .list_deliveries(&w.tenant, None, 100, 0)
            .await
            .unwrap()
            .items,
    )
    .unwrap();
    for leak in [
        "127.0.0.1",
        &closed.to_string(),
        &addr.port().to_string(),
        "refused",
        "dns",
        "resolve",
    ] {
        assert!(!all.contains(leak), "{leak} leaked: {all}");
    }
}

#[tokio::test]
async fn secrets_are_sealed_at_rest_and_opened_only_to_sign() {
    let w = World::new();
    let (url, inbox) = receiver().await;
    let key = SecretKey::from_master_seed(&[7; 32]);
    let dns: Arc<dyn HostResolver> = Arc::new(StaticResolver::new());
    let worker = w.worker(AllowList::loopback(), Some(key.clone()), dns.clone());
    let e = worker
        .register(&w.tenant, &url, &settled_only())
        .await
        .unwrap();
    assert!(
        e.secret.starts_with("svcwh_"),
        "returned in the clear, once"
    );
    assert!(!format!("{e:?}").contains(&e.secret), "Debug redacts");
    let stored = w.stored_endpoint(e.id.as_str()).await;
    assert!(SecretKey::is_sealed(&stored.secret), "{}", stored.secret);
    assert!(!stored.secret.contains(&e.secret[6..]));
    let raw = w
        .store
        .get(Endpoint::KIND, e.id.as_str())
        .await
        .unwrap()
        .unwrap();
    assert!(
        !raw.body.text().contains(&e.secret[6..]),
        "not in the record"
    );
    let read = worker.endpoint(&w.tenant, e.id.as_str()).await.unwrap();
    assert_ne!(read.secret, e.secret, "reads return it sealed");

    // Delivered signed with the plain secret.
    w.settled("evt_1").await;
    assert_eq!(worker.round().await.unwrap().delivered, 1);
    let (headers, body) = inbox.lock().unwrap()[0].clone();
    let sig = headers.get("x-svc-signature").unwrap().to_str().unwrap();
    assert_eq!(Family::Wallet.verify(&e.secret, &body, Some(sig)), Ok(()));

    // Another key cannot open it: nothing is sent, the attempt says why.
    let other = w.worker(
        AllowList::loopback(),
        Some(SecretKey::from_master_seed(&[8; 32])),
        dns.clone(),
    );
    worker
        .rotate_secret(&w.tenant, e.id.as_str())
        .await
        .unwrap();
    w.settled("evt_2").await;
    other.round().await.unwrap();
    assert_eq!(
        attempt_errors(&w, &other, &e, "evt_2").await,
        [SECRET_UNAVAILABLE]
    );
    assert_eq!(inbox.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_plain_legacy_secret_still_signs_and_is_sealed_at_its_next_write() {
    let w = World::new();
    let (url, inbox) = receiver().await;
    let dns: Arc<dyn HostResolver> = Arc::new(StaticResolver::new());
    // Written before secrets were sealed: no key.
    let old = w.worker(AllowList::loopback(), None, dns.clone());
    let e = old
        .register(&w.tenant, &url, &settled_only())
        .await
        .unwrap();
    assert_eq!(w.stored_endpoint(e.id.as_str()).await.secret, e.secret);
    // The upgraded deliverer has a key: the plain record still signs.
    let new = w.worker(
        AllowList::loopback(),
        Some(SecretKey::from_master_seed(&[7; 32])),
        dns,
    );
    w.settled("evt_1").await;
    assert_eq!(new.round().await.unwrap().delivered, 1);
    let (headers, body) = inbox.lock().unwrap()[0].clone();
    let sig = headers.get("x-svc-signature").unwrap().to_str().unwrap();
    assert_eq!(Family::Wallet.verify(&e.secret, &body, Some(sig)), Ok(()));
    // Its next write seals it, same secret.
    new.disable(&w.tenant, e.id.as_str()).await.unwrap();
    new.enable(&w.tenant, e.id.as_str()).await.unwrap();
    let stored = w.stored_endpoint(e.id.as_str()).await;
    assert!(SecretKey::is_sealed(&stored.secret));
    w.settled("evt_2").await;
    assert_eq!(new.round().await.unwrap().delivered, 1);
    let (headers, body) = inbox.lock().unwrap()[1].clone();
    let sig = headers.get("x-svc-signature").unwrap().to_str().unwrap();
    assert_eq!(Family::Wallet.verify(&e.secret, &body, Some(sig)), Ok(()));
}

#[tokio::test]
async fn an_endpoint_that_opted_in_gets_standard_webhooks_headers_too() {
    let w = World::new();
    let (url, inbox) = receiver().await;
    let dns: Arc<dyn HostResolver> = Arc::new(StaticResolver::new());
    let worker = w.worker(AllowList::loopback(), Some(SecretKey::new([3; 32])), dns);
    let mut endpoints = Vec::new();
    for (family, events, standard) in [
        (Family::Wallet, settled_only(), true),
        (
            Family::Payments,
            vec!["payment.confirmed".to_string()],
            true,
        ),
        (Family::Wallet, settled_only(), false),
    ] {
        let new = NewEndpoint {
            family,
            url: url.clone(),
            events,
            standard_webhooks: standard,
        };
        endpoints.push(worker.register_endpoint(&w.tenant, &new).await.unwrap());
    }
    assert!(endpoints[0].standard_webhooks && !endpoints[2].standard_webhooks);
    w.settled("evt_1").await;
    assert_eq!(worker.round().await.unwrap().delivered, 2);
    let got = inbox.lock().unwrap().clone();
    let verifier = |secret: &str| StandardVerifier::new(secret, w.clock.clone());
    let mut standard = 0;
    for (headers, body) in &got {
        let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
        // The spec's own header is there, exactly as the spec defines it, for both.
        let e = endpoints
            .iter()
            .find(|e| {
                Family::Wallet
                    .verify(&e.secret, body, h("x-svc-signature"))
                    .is_ok()
            })
            .expect("the spec signature verifies with one endpoint's secret");
        match h("webhook-signature") {
            Some(_) => {
                assert!(e.standard_webhooks);
                assert_eq!(verifier(&e.secret).verify_headers(body, h), Ok(()));
                assert_eq!(
                    h("webhook-id"),
                    Some(format!("whd_evt_1_{}", e.id).as_str())
                );
                assert_eq!(
                    h("webhook-timestamp"),
                    Some(START.millis().div_euclid(1000).to_string().as_str())
                );
                standard += 1;
            }
            None => assert!(!e.standard_webhooks && h("webhook-id").is_none()),
        }
    }
    assert_eq!(standard, 1);
    // Replayed five minutes and one second later, the same headers are refused.
    let (headers, body) = got
        .iter()
        .find(|(h, _)| h.contains_key("webhook-id"))
        .unwrap();
    w.clock.advance_ms(301_000);
    let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    let late = verifier(&endpoints[0].secret).verify_headers(body, h);
    assert_eq!(late.unwrap_err().code(), "SIGNATURE_TIMESTAMP_STALE");
}
