//! The quick start over HTTP with the background workers running: provision -> fund ->
//! transfer -> read, ending SETTLED; and the zero-configuration start whose printed curl
//! line works as printed.

use crate::common::*;
use serde_json::{Value, json};
use stablecoin_server::{App, Config};
use std::time::{Duration, Instant};

async fn until_status(s: &Server, key: &str, location: &str, want: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = s.get(key, location).await;
        r.expect(200);
        let v = r.json();
        if v["status"] == want {
            return v;
        }
        assert_ne!(v["status"], "FAILED", "{v}");
        assert!(
            Instant::now() < deadline,
            "still {} at {location}",
            v["status"]
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_start_sequence_settles_with_the_workers() {
    let mut c = test_config();
    c.run_workers = true;
    let s = start_with(c).await;
    let t = s.tenant("Quickstart", "1000").await;
    let key = t.live.as_str();
    let alice = "+2250700000001";
    let bob = "+2250700000002";

    // 1. provision both customers
    for phone in [alice, bob] {
        let r = s
            .post(
                key,
                "/v1/users/provision",
                &json!({"phone_number": phone}).to_string(),
            )
            .await;
        r.expect(200);
        assert_eq!(r.json()["outcome"], "PROVISIONED");
    }
    // 2. fund alice from the treasury
    let r = s
        .post_idem(
            key,
            "/v1/users/fund",
            &json!({"phone_number": alice, "token": "USDC", "amount": "100"}).to_string(),
            "qs-fund-1",
        )
        .await;
    r.expect(202);
    let funding = until_status(&s, key, &r.header("location").unwrap(), "SETTLED").await;
    assert!(funding["tx_hash"].as_str().is_some());
    // 3. transfer alice -> bob
    let r = s
        .post_idem(
            key,
            "/v1/transfers/send",
            &json!({"from_phone_number": alice, "to_phone_number": bob, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:25"})
            .to_string(),
            "qs-send-1",
        )
        .await;
    r.expect(202);
    assert_eq!(r.json()["status"], "QUEUED");
    // 4. read it back until SETTLED
    let tr = until_status(&s, key, &r.header("location").unwrap(), "SETTLED").await;
    assert_eq!(tr["recipient_amount"], "24.925000");
    assert!(tr["settled_at"].as_str().is_some());
    let b = s
        .get(key, "/v1/users/balance?phone_number=%2B2250700000002")
        .await;
    assert_eq!(b.json()["balance_usdc"], "24.925000");
    let a = s
        .get(key, "/v1/users/balance?phone_number=%2B2250700000001")
        .await;
    assert_eq!(a.json()["balance_usdc"], "75.000000");
    // The workers' progress shows in the metrics.
    let metrics = s
        .send(reqwest::Method::GET, "/metrics", None, None, &[])
        .await
        .text();
    assert!(metrics.contains("stablecoin_operations_accepted_total{kind=\"transfer\"} 1"));
    assert!(metrics.contains("stablecoin_operation_transitions_total{to=\"SETTLED\"}"));
}

/// Pulls (url, key, body) out of the banner's curl line.
fn parse_curl(banner: &str) -> (String, String, String) {
    let line = banner
        .lines()
        .find(|l| l.trim_start().starts_with("curl "))
        .expect("a curl line");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_string();
    let quoted: Vec<&str> = line.split('\'').collect();
    let key = quoted
        .iter()
        .find_map(|q| q.strip_prefix("X-API-Key: "))
        .unwrap()
        .to_string();
    let body = quoted
        .iter()
        .find(|q| q.starts_with('{'))
        .unwrap()
        .to_string();
    (url, key, body)
}

#[tokio::test]
async fn zero_configuration_start_prints_a_working_curl_line() {
    // No file, no environment: only the port is made ephemeral for the test.
    let mut config = Config::load(None, |_| None).unwrap();
    config.listen = "127.0.0.1:0".into();
    config.data_dir = temp_dir("zero-config");
    let app = App::build(config).await.unwrap();
    assert_eq!(
        app.storage_kind(),
        "sqlite",
        "the zero-configuration default"
    );
    let demo = app.demo().expect("demo tenant").clone();
    assert!(demo.created);
    let s = serve(app).await;
    let addr: std::net::SocketAddr = s.base.trim_start_matches("http://").parse().unwrap();
    let banner = s.app.banner(addr);
    assert!(
        !format!("{demo:?}").contains("svc_sk_"),
        "Debug redacts keys"
    );
    let (url, key, body) = parse_curl(&banner);
    assert_eq!(Some(&key), demo.live_key.as_ref());
    assert!(banner.contains(demo.test_key.as_ref().unwrap()));
    let r = s
        .client
        .post(&url)
        .header("X-API-Key", &key)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["outcome"], "PROVISIONED");
    // The demo treasury is credited (USDC and USDT) and the sim chain holds the float.
    let usdc = s
        .app
        .engine()
        .treasury_balance(&demo.tenant, stablecoin_core::domain::money::Token::Usdc)
        .await
        .unwrap();
    assert_eq!(usdc, m("10000"));
    // The test key works too (sandbox).
    let r = s
        .post(
            demo.test_key.as_ref().unwrap(),
            "/v1/users/provision",
            r#"{"phone_number":"+2250700000009"}"#,
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["simulated"], true);
    // With the demo disabled, no tenant is created.
    let mut c = Config::load(None, |k| (k == "STABLECOIN_DEMO").then(|| "false".into())).unwrap();
    c.listen = "127.0.0.1:0".into();
    c.data_dir = temp_dir("no-demo");
    assert!(App::build(c).await.unwrap().demo().is_none());
}

#[tokio::test]
async fn sqlite_default_survives_a_restart() {
    let dir = temp_dir("restart");
    let config = || {
        let mut c = Config::load(None, |_| None).unwrap();
        c.listen = "127.0.0.1:0".into();
        c.data_dir = dir.clone();
        c
    };
    let first = App::build(config()).await.unwrap();
    let demo = first.demo().expect("demo tenant").clone();
    assert!(demo.created);
    let key = demo.live_key.clone().unwrap();
    let s = serve(first).await;
    s.post(
        &key,
        "/v1/users/provision",
        r#"{"phone_number":"+2250700000077"}"#,
    )
    .await
    .expect(200);
    drop(s);
    assert!(dir.join("stablecoin.db").exists());
    assert!(dir.join("master_seed.hex").exists());

    // Same directory: the demo tenant, its key and the customer are still there.
    let second = App::build(config()).await.unwrap();
    let again = second.demo().expect("demo tenant").clone();
    assert!(!again.created, "reused, not recreated");
    assert_eq!(again.tenant, demo.tenant);
    let s = serve(second).await;
    let r = s
        .post(
            &key,
            "/v1/users/provision",
            r#"{"phone_number":"+2250700000077"}"#,
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["outcome"], "ALREADY_EXISTS");
    let _ = std::fs::remove_dir_all(&dir);
}
