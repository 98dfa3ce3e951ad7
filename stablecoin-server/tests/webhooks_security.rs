//! Webhooks as an attacker would use them, over real HTTP on loopback:
//!
//! - internal URLs (loopback, metadata, private, CGNAT, IPv6 and mapped forms, decimal
//!   and hex IPv4, `localhost`) are refused at registration with a stable code;
//! - a host that resolves publicly at registration and to 127.0.0.1 later is refused
//!   at delivery: the receiver on loopback gets no connection, and no answer names the
//!   address;
//! - the signing secret is shown once: never stored with an idempotent response (a
//!   replayed create or rotate answers without it) and sealed in the database file;
//! - a receiver that hangs delays neither settlement nor another tenant's deliveries.

use crate::common::webhook_receiver::recording_receiver;
use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::ports::Store;
use stablecoin_server::config::StorageConfig;
use stablecoin_server::{App, BuildOptions, Config};
use stablecoin_webhooks::Family;
use stablecoin_webhooks::ssrf::StaticResolver;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

/// Accepts connections and never answers (nor closes); counts them.
async fn hanging_listener() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let a = accepted.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            held.push(sock);
        }
    });
    (addr, accepted)
}

async fn start_with_dns(config: Config, dns: Arc<StaticResolver>) -> Server {
    let options = BuildOptions {
        webhook_resolver: Some(dns),
        ..Default::default()
    };
    serve(App::build_with(config, options).await.unwrap()).await
}

fn create(url: &str) -> String {
    json!({"url": url, "events": ["transfer.settled"]}).to_string()
}

async fn send(s: &Server, key: &str, amount: &str) -> String {
    let r = s
        .post(
            key,
            "/v1/transfers/send",
            &json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
                "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")})
            .to_string(),
        )
        .await;
    r.expect(202);
    r.json()["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn internal_urls_are_refused_at_registration() {
    let s = start().await; // no allow-list: public addresses only
    let acme = s.tenant("Acme", "0").await;
    let internal = [
        "https://127.0.0.1/hooks",
        "https://127.0.0.1:8443/hooks",
        "http://127.0.0.1:9/hooks",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.1/hooks",
        "https://172.16.0.1/hooks",
        "https://192.168.1.1/hooks",
        "https://100.64.0.1/hooks",
        "https://localhost/hooks",
        "https://LOCALHOST./hooks",
        "https://[::1]/hooks",
        "https://[::ffff:127.0.0.1]/hooks",
        "https://[::ffff:169.254.169.254]/hooks",
        // IPv4-translated (RFC 2765), local-use NAT64 (RFC 8215) and 6to4 spellings of
        // private and metadata addresses.
        "https://[::ffff:0:127.0.0.1]/hooks",
        "https://[::ffff:0:169.254.169.254]/hooks",
        "https://[64:ff9b:1::a00:1]/hooks",
        "https://[64:ff9b:1::a9fe:a9fe]/hooks",
        "https://[2002:a00:1::1]/hooks",
        "https://[fd00::1]/hooks",
        "https://[fe80::1]/hooks",
        "https://0.0.0.0/hooks",
        "https://2130706433/hooks",
        "https://0x7f000001/hooks",
        "https://0177.0.0.1/hooks",
        "https://127.1/hooks",
        "https://224.0.0.1/hooks",
    ];
    for url in internal {
        let before = s.commits();
        let r = s
            .post(&acme.live, "/v1/webhook-endpoints", &create(url))
            .await;
        r.expect_err(400, "INVALID_WEBHOOK_URL");
        assert_eq!(r.param().as_deref(), Some("url"), "{url}");
        assert_eq!(s.commits(), before, "{url}: nothing written");
        let message = r.json()["error"]["message"].as_str().unwrap().to_string();
        // The tenant's own URL is echoed; no resolved address is added to it.
        let echo = message.replace(&format!("{url:?}"), "");
        for leak in ["127.0.0.1", "::1", "169.254"] {
            assert!(!echo.contains(leak), "{url}: {message}");
        }
    }
    assert_eq!(
        s.get(&acme.live, "/v1/webhook-endpoints").await.json()["total"],
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostname_that_resolves_internally_at_delivery_is_refused() {
    let dns = Arc::new(StaticResolver::new());
    dns.set("hooks.example.com", &["93.184.215.14".parse().unwrap()]);
    dns.set("intranet.example.com", &["10.1.2.3".parse().unwrap()]);
    let s = start_with_dns(test_config(), dns.clone()).await;
    let acme = s.tenant("Acme", "1000").await;
    // A name that is internal already is refused at registration, for the same reason
    // as one that does not resolve at all (nothing to learn about the network).
    let internal = s
        .post(
            &acme.live,
            "/v1/webhook-endpoints",
            &create("https://intranet.example.com/hooks"),
        )
        .await;
    internal.expect_err(400, "INVALID_WEBHOOK_URL");
    let unknown = s
        .post(
            &acme.live,
            "/v1/webhook-endpoints",
            &create("https://nowhere.example.com/hooks"),
        )
        .await;
    unknown.expect_err(400, "INVALID_WEBHOOK_URL");
    let reason = |r: &Resp| {
        let m = r.json()["error"]["message"].as_str().unwrap().to_string();
        m[m.rfind(':').unwrap()..].to_string()
    };
    assert_eq!(reason(&internal), reason(&unknown));

    // Public at registration, 127.0.0.1 (where a listener waits) at delivery.
    let (addr, accepted) = hanging_listener().await;
    let url = format!("https://hooks.example.com:{}/hooks", addr.port());
    let r = s
        .post(&acme.live, "/v1/webhook-endpoints", &create(&url))
        .await;
    r.expect(201);
    dns.set("hooks.example.com", &["127.0.0.1".parse().unwrap()]);
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    s.fund_settled(&acme.live, A, "100").await;
    send(&s, &acme.live, "5").await;
    s.settle().await;
    let round = s.app.state().webhooks.round().await.unwrap();
    assert_eq!((round.delivered, round.retried), (0, 1));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "the receiver got nothing"
    );

    // What the tenant reads says "connection failed", and names no address.
    let events = s
        .get(&acme.live, "/v1/webhook-events?type=transfer.settled")
        .await;
    let id = events.json()["webhook_events"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let event = s.get(&acme.live, &format!("/v1/webhook-events/{id}")).await;
    let attempt = &event.json()["deliveries"][0]["attempts"][0];
    assert_eq!(attempt["error"], "connection failed", "{}", event.text());
    assert!(attempt.get("status").is_none());
    let deliveries = s.get(&acme.live, "/v1/webhook-deliveries").await.text();
    for text in [event.text(), deliveries] {
        assert!(!text.contains("127.0.0.1"), "{text}");
        assert!(!text.contains(&addr.port().to_string()), "{text}");
    }
}

/// `Idempotent-Replayed`, the id and the secret of a response.
fn shown(r: &Resp) -> (Option<String>, String, Option<String>) {
    let v = r.json();
    (
        r.header("idempotent-replayed"),
        v["id"].as_str().unwrap().to_string(),
        v["secret"].as_str().map(str::to_string),
    )
}

#[tokio::test]
async fn a_replayed_create_or_rotate_does_not_show_the_secret() {
    let mut c = test_config();
    c.webhooks.allow_networks = "127.0.0.1/32".into();
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "0").await;
    let (url, _) = recording_receiver().await;
    let body = create(&url);

    let first = s
        .post_idem(&acme.live, "/v1/webhook-endpoints", &body, "create-1")
        .await;
    first.expect(201);
    let (replayed, id, secret) = shown(&first);
    let secret = secret.expect("shown once");
    assert_eq!(replayed.as_deref(), Some("false"));
    let again = s
        .post_idem(&acme.live, "/v1/webhook-endpoints", &body, "create-1")
        .await;
    again.expect(201);
    assert_eq!(shown(&again), (Some("true".into()), id.clone(), None));
    assert!(!again.text().contains(&secret[6..]), "{}", again.text());
    assert_eq!(again.json()["url"], url.as_str());
    // The stored response itself holds no secret.
    let stored = s
        .memory()
        .idempotency(&acme.id.0, "http\u{1f}create-1")
        .await
        .unwrap()
        .expect("the replay is stored");
    assert!(!stored.response.to_string().contains(&secret[6..]));
    assert_eq!(
        s.get(&acme.live, "/v1/webhook-endpoints").await.json()["total"],
        1,
        "one endpoint"
    );

    let path = format!("/v1/webhook-endpoints/{id}/rotate-secret");
    let rotated = s.post_idem(&acme.live, &path, "{}", "rotate-1").await;
    rotated.expect(200);
    let new_secret = shown(&rotated).2.expect("the new secret, once");
    assert_ne!(new_secret, secret);
    let again = s.post_idem(&acme.live, &path, "{}", "rotate-1").await;
    again.expect(200);
    assert_eq!(shown(&again), (Some("true".into()), id.clone(), None));
    assert!(!again.text().contains(&new_secret[6..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_secret_is_absent_from_the_database_file() {
    let dir = temp_dir("webhook-secret");
    let mut c = test_config();
    c.data_dir = dir.clone();
    c.storage = StorageConfig::Sqlite {
        path: Some(dir.join("stablecoin.db")),
        max_background: 4,
    };
    c.webhooks.allow_networks = "127.0.0.1/32".into();
    let s = start_with(c).await;
    let acme = s.tenant("Acme", "1000").await;
    let (url, got) = recording_receiver().await;
    let r = s
        .post_idem(&acme.live, "/v1/webhook-endpoints", &create(&url), "c-1")
        .await;
    r.expect(201);
    let secret = r.json()["secret"].as_str().unwrap().to_string();
    let id = r.json()["id"].as_str().unwrap().to_string();
    let rotated = s
        .post_idem(
            &acme.live,
            &format!("/v1/webhook-endpoints/{id}/rotate-secret"),
            "{}",
            "r-1",
        )
        .await;
    rotated.expect(200);
    let current = rotated.json()["secret"].as_str().unwrap().to_string();

    // Whatever SQLite has written so far: the database and its write-ahead log.
    let mut files = 0;
    for name in ["stablecoin.db", "stablecoin.db-wal", "stablecoin.db-shm"] {
        let Ok(bytes) = std::fs::read(dir.join(name)) else {
            continue;
        };
        files += 1;
        for s in [&secret, &current] {
            let hex = &s[6..];
            for needle in [s.as_bytes(), hex.as_bytes()] {
                assert!(
                    !bytes.windows(needle.len()).any(|w| w == needle),
                    "{name} holds a secret"
                );
            }
        }
    }
    assert!(files >= 2, "the database and its WAL were read");

    // The sealed secret still signs.
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    s.fund_settled(&acme.live, A, "100").await;
    send(&s, &acme.live, "5").await;
    s.settle().await;
    assert_eq!(s.app.state().webhooks.round().await.unwrap().delivered, 1);
    let (headers, body) = got.lock().unwrap()[0].clone();
    let sig = headers.get("x-svc-signature").unwrap().to_str().unwrap();
    assert_eq!(Family::Wallet.verify(&current, &body, Some(sig)), Ok(()));
    std::fs::remove_dir_all(&dir).ok();
}

/// Funds a wallet over HTTP and waits until the workers settle it.
async fn fund(s: &Server, key: &str, phone: &str, amount: &str) {
    let r = s
        .post(
            key,
            "/v1/users/fund",
            &json!({"phone_number": phone, "token": "USDC", "amount": amount}).to_string(),
        )
        .await;
    r.expect(202);
    let location = r.header("location").unwrap();
    until_settled(s, key, &location, Duration::from_secs(20)).await;
}

/// Waits for the operation at `location` to settle; `within` guards against a hang, it
/// is no speed claim.
async fn until_settled(s: &Server, key: &str, location: &str, within: Duration) {
    let started = Instant::now();
    loop {
        let v = s.get(key, location).await.json();
        if v["status"] == "SETTLED" {
            return;
        }
        assert_ne!(v["status"], "FAILED", "{v}");
        assert!(
            started.elapsed() < within,
            "{location} still {} after {within:?}",
            v["status"]
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Of the tenant's webhook deliveries: how many have an ended attempt, and how many there
/// are.
async fn delivery_attempts(s: &Server, key: &str) -> (usize, usize) {
    let d = s.get(key, "/v1/webhook-deliveries").await.json();
    let all = d["webhook_deliveries"].as_array().unwrap();
    let ended = all
        .iter()
        .filter(|d| d["attempts"].as_array().is_some_and(|a| !a.is_empty()))
        .count();
    (ended, all.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_hangs_delays_neither_settlement_nor_other_tenants() {
    // Long enough that no hanging attempt ends before the checks below: they are
    // orderings (nothing ended yet), not stopwatches.
    let timeout = Duration::from_secs(20);
    let mut c = test_config();
    c.run_workers = true;
    c.webhooks.allow_networks = "127.0.0.1/32".into();
    c.webhooks.timeout_ms = timeout.as_millis() as u64;
    let s = start_with(c).await;
    let slow = s.tenant("Slow", "1000").await;
    let other = s.tenant("Other", "1000").await;
    let (addr, accepted) = hanging_listener().await;
    let hang = format!("http://127.0.0.1:{}/hooks", addr.port());
    s.post(&slow.live, "/v1/webhook-endpoints", &create(&hang))
        .await
        .expect(201);
    let (url, got) = recording_receiver().await;
    s.post(&other.live, "/v1/webhook-endpoints", &create(&url))
        .await
        .expect(201);
    s.provision(&slow.live, A).await;
    s.provision(&slow.live, B).await;
    fund(&s, &slow.live, A, "100").await;

    // The slow tenant's transfers keep settling, one after another, while each of their
    // transfer.settled deliveries hangs until the timeout: every transfer settles before
    // any attempt has ended. (With delivery in the engines' loop, transfer i settled
    // only after transfer i-1's attempt timed out.)
    let guard = Duration::from_secs(60);
    for i in 1..=5 {
        let id = send(&s, &slow.live, &i.to_string()).await;
        until_settled(&s, &slow.live, &format!("/v1/transfers/{id}"), guard).await;
        let (ended, _) = delivery_attempts(&s, &slow.live).await;
        assert_eq!(
            ended, 0,
            "transfer {i} settled after a hanging attempt ended"
        );
    }
    assert!(
        accepted.load(Ordering::SeqCst) >= 1,
        "the deliveries were attempted"
    );

    // Another tenant's delivery arrives meanwhile, long before the hanging ones end.
    let (c, d) = ("+2250700000003", "+2250700000004");
    s.provision(&other.live, c).await;
    s.provision(&other.live, d).await;
    fund(&s, &other.live, c, "10").await;
    let r = s
        .post(
            &other.live,
            "/v1/transfers/send",
            &json!({"from_phone_number": c, "to_phone_number": d, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:2"})
            .to_string(),
        )
        .await;
    r.expect(202);
    let tr = r.json()["id"].as_str().unwrap().to_string();
    until_settled(&s, &other.live, &format!("/v1/transfers/{tr}"), guard).await;
    let settled = Instant::now();
    loop {
        let delivered = got.lock().unwrap().iter().any(|(_, body)| {
            let v: Value = serde_json::from_slice(body).unwrap();
            v["transfer_id"] == tr.as_str()
        });
        if delivered {
            break;
        }
        assert!(
            settled.elapsed() < guard,
            "the other tenant's delivery never came"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // ... while every one of the slow tenant's attempts still hangs.
    let (ended, total) = delivery_attempts(&s, &slow.live).await;
    assert_eq!(
        ended, 0,
        "the other tenant's delivery waited on the hanging receiver ({ended} of {total} ended)"
    );

    // The hanging deliveries end in "timeout", then are retried later.
    let deadline = Instant::now() + timeout + Duration::from_secs(3);
    loop {
        let d = s.get(&slow.live, "/v1/webhook-deliveries").await.json();
        let timed_out = d["webhook_deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["attempts"][0]["error"] == "timeout")
            .count();
        if timed_out >= 1 {
            break;
        }
        assert!(Instant::now() < deadline, "no attempt timed out: {d}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
