//! `POST /api/v1/fx/quote` priced from an HTTP rate feed (the fake feed of
//! stablecoin-providers' testkit, a real HTTP server on loopback): the spread is
//! applied, a stale rate is 503 RATE_STALE, a failing feed 503 RATE_SOURCE_ERROR, and
//! no answer names the feed.

use crate::common::*;
use stablecoin_core::ports::Clock;
use stablecoin_providers::rate_feed::fake::{FakeRateFeed, FeedFault, now_secs};
use stablecoin_server::config::{RatesSettings, Secret};
use std::collections::BTreeMap;

fn feed_config(fake: &FakeRateFeed, max_age_ms: u64) -> stablecoin_server::Config {
    let mut c = test_config();
    c.rates = RatesSettings::Http {
        url: Secret::new(fake.pair_url()),
        auth_header: Some("X-Api-Key".into()),
        auth_value: Some(Secret::new("feed-key")),
        rate_pointer: "/data/rate".into(),
        timestamp_pointer: Some("/data/timestamp".into()),
        max_age_ms,
        spread_bps: 150,
        max_move_bps: 1_000,
        timeout_ms: 2_000,
        decimals: BTreeMap::from([("NGN".to_string(), 4)]),
    };
    c
}

fn quote(currency: &str, token: &str, fiat: &str) -> String {
    format!(r#"{{"fiat_amount":"{fiat}","local_currency":"{currency}","target_token":"{token}"}}"#)
}

/// The answer names neither the feed's address nor its key.
fn leaks_nothing(r: &Resp, fake: &FakeRateFeed) {
    let text = r.text();
    let host = fake.pair_url().split('/').nth(2).unwrap().to_string();
    assert!(!text.contains(&host), "{text}");
    assert!(
        !text.contains("127.0.0.1") && !text.contains("http://"),
        "{text}"
    );
    assert!(!text.contains("feed-key"), "{text}");
}

#[tokio::test]
async fn quotes_are_priced_from_the_feed_with_the_spread_and_refused_when_stale() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.require_key("X-Api-Key", "feed-key");
    fake.set_rate("XOF", "USDC", "600.5", now_secs());
    fake.set_rate("NGN", "USDC", "1550.125", now_secs());
    fake.set_rate("XOF", "USDT", "600.5", now_secs() - 3_600);
    let (s, clock) = start_shifted(feed_config(&fake, 60_000)).await;
    let t = s.tenant("acme", "0").await;

    // 600.5 XOF × 1.015 = 609.5075, rounded up to XOF's 0 decimals: 610.
    let r = s
        .post(&t.live, "/api/v1/fx/quote", &quote("XOF", "USDC", "6100"))
        .await;
    r.expect(200);
    assert_eq!(r.json()["rate"], "610");
    assert_eq!(r.json()["expected_out"], "10.000000");
    // 1550.125 × 1.015 = 1573.376875, rounded up to the configured 4 decimals.
    let r = s
        .post(
            &t.live,
            "/api/v1/fx/quote",
            &quote("NGN", "USDC", "1573.38"),
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["rate"], "1573.3769");
    // The sandbox prices exactly as live.
    let r = s
        .post(&t.test, "/api/v1/fx/quote", &quote("XOF", "USDC", "6100"))
        .await;
    r.expect(200);
    assert_eq!(r.json()["rate"], "610");
    let asked = fake.requests();

    // The feed's USDT rate is an hour old: refused, and the feed is not named.
    let r = s
        .post(&t.live, "/api/v1/fx/quote", &quote("XOF", "USDT", "6100"))
        .await;
    r.expect_err(503, "RATE_STALE");
    leaks_nothing(&r, &fake);

    // Within the maximum age the cached rate is quoted without asking the feed again.
    let r = s
        .post(&t.live, "/api/v1/fx/quote", &quote("XOF", "USDC", "6100"))
        .await;
    r.expect(200);
    assert_eq!(fake.requests(), asked + 1, "only the USDT fetch");

    // The feed keeps answering with the rate it had: once older than max_age_ms it is
    // refused, never quoted from the cache. (The server's clock moves past the maximum
    // age, where it used to be slept through.)
    clock.advance_ms(61_000);
    let r = s
        .post(&t.live, "/api/v1/fx/quote", &quote("XOF", "USDC", "6100"))
        .await;
    r.expect_err(503, "RATE_STALE");
    leaks_nothing(&r, &fake);

    // It updates: quoted again, at the new rate (stamped by the feed's clock, which
    // agrees with the server's).
    fake.set_rate("XOF", "USDC", "610", clock.now().millis() / 1_000);
    let r = s
        .post(&t.live, "/api/v1/fx/quote", &quote("XOF", "USDC", "6100"))
        .await;
    r.expect(200);
    assert_eq!(r.json()["rate"], "620"); // 610 × 1.015 = 619.15, up to 620
}

#[tokio::test]
async fn a_feed_that_is_down_or_refuses_the_key_is_503_rate_source_error() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.require_key("X-Api-Key", "feed-key");
    fake.set_rate("XOF", "USDC", "600.5", now_secs());
    fake.set_rate("XOF", "USDT", "600.5", now_secs());
    let s = start_with(feed_config(&fake, 60_000)).await;
    let t = s.tenant("acme", "0").await;
    for fault in [
        FeedFault::ServerError,
        FeedFault::RateLimited,
        FeedFault::Malformed,
    ] {
        fake.set_fault(fault);
        let r = s
            .post(&t.live, "/api/v1/fx/quote", &quote("XOF", "USDC", "6100"))
            .await;
        r.expect_err(503, "RATE_SOURCE_ERROR");
        leaks_nothing(&r, &fake);
    }
    fake.set_fault(FeedFault::None);
    fake.require_key("X-Api-Key", "rotated-key");
    let r = s
        .post(&t.live, "/api/v1/fx/quote", &quote("XOF", "USDT", "6100"))
        .await;
    r.expect_err(503, "RATE_SOURCE_ERROR");
    leaks_nothing(&r, &fake);
}

/// Issue #44: a rate outside the band around the last accepted one (10% here, the
/// default) is refused as 503 RATE_STALE and never quoted; the last accepted rate stays
/// the reference, so a rate back inside the band is quoted again.
#[tokio::test]
async fn a_rate_outside_the_band_around_the_last_accepted_one_is_refused() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.require_key("X-Api-Key", "feed-key");
    fake.set_rate("XOF", "USDC", "600", now_secs());
    let (s, clock) = start_shifted(feed_config(&fake, 60_000)).await;
    let t = s.tenant("acme", "0").await;
    let body = quote("XOF", "USDC", "6090");
    let ask = || s.post(&t.live, "/api/v1/fx/quote", &body);
    let r = ask().await;
    r.expect(200);
    assert_eq!(r.json()["rate"], "609"); // 600 × 1.015
    // The feed now says 6.00 (a typo, or a feed that was taken over): refused.
    clock.advance_ms(61_000);
    fake.set_rate("XOF", "USDC", "6.00", clock.now().millis() / 1_000);
    let r = ask().await;
    r.expect_err(503, "RATE_STALE");
    leaks_nothing(&r, &fake);
    // 661 is 10.17% above 600: still outside.
    fake.set_rate("XOF", "USDC", "661", clock.now().millis() / 1_000);
    ask().await.expect_err(503, "RATE_STALE");
    // 650 is 8.3% above the last accepted 600: quoted.
    fake.set_rate("XOF", "USDC", "650", clock.now().millis() / 1_000);
    let r = ask().await;
    r.expect(200);
    assert_eq!(r.json()["rate"], "660"); // 650 × 1.015 = 659.75, up to 660
}
