//! The server's own defences over real HTTP: per-key rate limits with the IETF headers,
//! the header-read timeout, the metrics token, worker health in readiness, and no node
//! URL (with its API key) in any public answer, and the minimum send per rail.

use crate::common;

use reqwest::Method;
use serde_json::json;
use stablecoin_server::config::{EvmChainSettings, Secret, TokenSettings, Wei};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn reads_past_the_budget_get_429_with_retry_after_and_ratelimit_headers() {
    let mut config = common::test_config();
    config.rate_limits.read = 5;
    config.rate_limits.window_s = 60;
    config.rate_limits.money = 2;
    let s = common::start_with(config).await;
    let t = s.tenant("Acme", "100").await;
    let other = s.tenant("Beta", "0").await;
    let path = "/v1/transfers";
    // The tenant's set-up may have spent some of the key's reads: count down from there.
    let mut previous: Option<u32> = None;
    loop {
        let r = s.get(&t.live, path).await;
        r.expect(200);
        let state = r.header("ratelimit").expect("RateLimit on every answer");
        let left: u32 = state
            .strip_prefix("\"read\";r=")
            .and_then(|rest| rest.split(';').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{state}"));
        assert!(left < 5, "{state}");
        if let Some(p) = previous {
            assert_eq!(left + 1, p, "each read spends one");
        }
        assert_eq!(
            r.header("ratelimit-policy").as_deref(),
            Some("\"read\";q=5;w=60")
        );
        previous = Some(left);
        if left == 0 {
            break;
        }
    }
    let r = s.get(&t.live, path).await;
    r.expect_err(429, "RATE_LIMITED");
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=12).contains(&retry), "one read every 12 s: {retry}");
    assert!(r.header("ratelimit").unwrap().starts_with("\"read\";r=0;"));
    // Budgets are per key, and per class: the same key may still write and move money.
    s.get(&other.live, path).await.expect(200);
    let body = json!({"phone_number": "+2250700000001"}).to_string();
    let r = s.post(&t.live, "/v1/users/provision", &body).await;
    r.expect(200);
    assert!(r.header("ratelimit").unwrap().starts_with("\"write\";"));
    // Money-moving POSTs have their own, smaller budget.
    let fund =
        json!({"phone_number": "+2250700000001", "token": "USDC", "amount": "1"}).to_string();
    for _ in 0..2 {
        s.post(&t.live, "/v1/users/fund", &fund).await.expect(202);
    }
    s.post(&t.live, "/v1/users/fund", &fund)
        .await
        .expect_err(429, "RATE_LIMITED");
}

#[tokio::test]
async fn a_connection_that_sends_no_request_is_closed_after_the_header_timeout() {
    let mut config = common::test_config();
    config.http.header_read_timeout_ms = 300;
    let s = common::start_with(config).await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut idle = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    slow.write_all(b"GET /health/live HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    for conn in [&mut idle, &mut slow] {
        let mut buf = [0u8; 512];
        let closed = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match conn.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await;
        assert!(closed.is_ok(), "the server kept the connection open");
    }
    s.get("", "/health/live").await.expect(200);
}

#[tokio::test]
async fn metrics_can_be_put_behind_a_token() {
    let mut config = common::test_config();
    config.metrics_token = Some(Secret::new("metrics-token-0123456789abcdef-012345"));
    let s = common::start_with(config).await;
    s.send(Method::GET, "/metrics", None, None, &[])
        .await
        .expect_err(401, "METRICS_TOKEN_REQUIRED");
    s.send(
        Method::GET,
        "/metrics",
        None,
        None,
        &[("Authorization", "Bearer wrong-token-0123456789")],
    )
    .await
    .expect_err(401, "METRICS_TOKEN_REQUIRED");
    let r = s
        .send(
            Method::GET,
            "/metrics",
            None,
            None,
            &[(
                "Authorization",
                "Bearer metrics-token-0123456789abcdef-012345",
            )],
        )
        .await;
    r.expect(200);
    assert!(r.text().contains("stablecoin_worker_panics_total 0"));
}

#[tokio::test]
async fn readiness_reports_the_workers() {
    let s = common::start().await;
    let r = s.send(Method::GET, "/health/ready", None, None, &[]).await;
    r.expect(200);
    assert_eq!(
        r.json()["workers"],
        "DISABLED",
        "test servers run no workers"
    );
    let mut config = common::test_config();
    config.run_workers = true;
    let s = common::start_with(config).await;
    let r = s.send(Method::GET, "/health/ready", None, None, &[]).await;
    r.expect(200);
    assert_eq!(r.json()["workers"], "OK");
}

#[tokio::test]
async fn a_node_url_and_its_key_never_reach_a_client() {
    let mut config = common::test_config();
    // A real EVM chain whose node is down, with the provider's key in the URL.
    config.rails.evm.insert(
        "137".into(),
        EvmChainSettings {
            rpc_url: Secret::new("http://127.0.0.1:1/v3/SECRETKEY123"),
            fallback_rpc_urls: Vec::new(),
            rpc_retry_down_after_ms: 30_000,
            entry_point: "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108".into(),
            factory: "0x0000000000000000000000000000000000000f01".into(),
            paymaster: "0x0000000000000000000000000000000000000f02".into(),
            usdc: Some(TokenSettings {
                address: "0x0000000000000000000000000000000000000f03".into(),
                decimals: 6,
            }),
            usdt: None,
            min_paymaster_deposit_wei: Wei(1),
            min_bundler_balance_wei: Wei(1),
            confirmations: 1,
            scan_start_block: 0,
            rpc_timeout_ms: 500,
            max_scan_blocks: None,
            bundler_url: None,
            replace_bundle_after_ms: 60_000,
            bundler_resend_after_ms: 30_000,
            max_fee_per_gas_ceiling_wei: None,
            fees: Default::default(),
        },
    );
    let s = common::start_with(config).await;
    let t = s.tenant("Acme", "0").await;
    let ready = s.send(Method::GET, "/health/ready", None, None, &[]).await;
    assert_ne!(ready.json()["polygon"], "READY", "{}", ready.text());
    let metrics = s.send(Method::GET, "/metrics", None, None, &[]).await;
    let send = s
        .post(
            &t.live,
            "/v1/transfers/send",
            &json!({
                "from_phone_number": "+2250700000001",
                "to_phone_number": "+2250700000002",
                "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:1"
            })
            .to_string(),
        )
        .await;
    send.expect_err(503, "RAIL_NOT_READY");
    let balance = s
        .get(&t.live, "/v1/users/balance?phone_number=%2B2250700000001")
        .await;
    for (what, text) in [
        ("readiness", ready.text()),
        ("metrics", metrics.text()),
        ("send", send.text()),
        ("balance", balance.text()),
    ] {
        assert!(!text.contains("SECRETKEY123"), "{what}: {text}");
        assert!(!text.contains("127.0.0.1:1"), "{what}: {text}");
    }
}

#[tokio::test]
async fn a_send_below_the_rails_minimum_is_400_amount_too_small_before_anything_is_read() {
    let s = common::start().await;
    let t = s.tenant("Acme", "100").await;
    let commits = s.commits();
    let body = |amount: &str| {
        json!({"from_phone_number": "+2250700000001", "to_phone_number": "+2250700000002",
               "token": "USDC", "quote_id": format!("DIRECT_CRYPTO:USDC:{amount}")})
        .to_string()
    };
    // The default EVM floor is 0.10; no wallet exists, and the floor answers first.
    let r = s
        .post(&t.live, "/v1/transfers/send", &body("0.099999"))
        .await;
    r.expect_err(400, "AMOUNT_TOO_SMALL");
    assert_eq!(r.param().as_deref(), Some("amount"));
    assert!(r.text().contains("0.1"), "names the minimum: {}", r.text());
    assert_eq!(s.commits(), commits, "nothing written");
    // At the floor the request goes on to the wallets (none here: 404).
    s.post(&t.live, "/v1/transfers/send", &body("0.10"))
        .await
        .expect(404);
}

/// Every answer over HTTP says `nosniff`, and every JSON answer (successes, errors, the
/// API description, the fallback) carries a CSP under which it can do nothing as a
/// page; the pages keep their own policy.
#[tokio::test]
async fn every_response_is_nosniff_and_json_carries_a_deny_all_csp() {
    let s = common::start().await;
    let t = s.tenant("Acme", "0").await;
    let json_csp = "default-src 'none'; frame-ancestors 'none'";
    let json_answers = [
        s.send(Method::GET, "/health/live", None, None, &[]).await,
        s.send(Method::GET, "/openapi.json", None, None, &[]).await,
        s.send(Method::GET, "/v2/nothing", None, None, &[]).await,
        s.send(Method::GET, "/v1/transfers", None, None, &[]).await,
        s.get(&t.live, "/v1/transfers").await,
        s.post(&t.live, "/v1/users/provision", "{not json").await,
    ];
    for r in &json_answers {
        let ct = r.header("content-type").unwrap_or_default();
        assert!(ct.contains("json"), "{} {ct}", r.status);
        assert_eq!(
            r.header("x-content-type-options").as_deref(),
            Some("nosniff"),
            "{ct}"
        );
        assert_eq!(
            r.header("content-security-policy").as_deref(),
            Some(json_csp),
            "{ct}"
        );
    }
    let metrics = s.send(Method::GET, "/metrics", None, None, &[]).await;
    assert_eq!(
        metrics.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );
    let page = s
        .send(Method::GET, "/dashboard/login", None, None, &[])
        .await;
    assert!(
        page.header("content-type")
            .unwrap_or_default()
            .contains("text/html")
    );
    assert_eq!(
        page.header("x-content-type-options").as_deref(),
        Some("nosniff")
    );
    let page_csp = page.header("content-security-policy").unwrap_or_default();
    assert!(!page_csp.is_empty() && page_csp != json_csp, "{page_csp}");
}

/// `/health/ready` tells anyone the statuses, and only the holder of the metrics token
/// the details (each rail's reasons, the reconciliation's counts); a server without a
/// metrics token shows them to nobody.
#[tokio::test]
async fn readiness_details_need_the_metrics_token() {
    let mut config = common::test_config();
    config.metrics_token = Some(Secret::new(common::METRICS_TOKEN));
    let s = common::start_with(config).await;
    let public = s.send(Method::GET, "/health/ready", None, None, &[]).await;
    public.expect(200);
    let j = public.json();
    assert_eq!(j["status"], "ok");
    assert_eq!(j["polygon"], "READY");
    assert!(j.get("rails").is_none(), "{j}");
    assert!(j.get("reconciliation").is_none(), "{j}");
    let wrong = s
        .send(
            Method::GET,
            "/health/ready",
            None,
            None,
            &[(
                "Authorization",
                "Bearer not-the-metrics-token-0123456789abcdef",
            )],
        )
        .await
        .json();
    assert!(wrong.get("rails").is_none(), "{wrong}");
    let details = s.ready_details().await.json();
    assert_eq!(details["rails"]["polygon"]["status"], "READY");
    assert!(details["rails"]["polygon"]["reasons"].is_array());
    assert!(details["reconciliation"]["status"].is_string(), "{details}");

    let open = common::start().await; // no metrics token
    let j = open
        .send(Method::GET, "/health/ready", None, None, &[])
        .await
        .json();
    assert!(
        j.get("rails").is_none() && j.get("reconciliation").is_none(),
        "{j}"
    );
}
