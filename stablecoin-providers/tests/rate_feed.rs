//! `HttpRateFeed` against the fake feed (a real HTTP server on loopback): fresh rates
//! are quoted with the spread, stale ones and failing feeds are refused with different
//! errors, the cache spares requests, and a feed that hangs is given up on in time.

use stablecoin_core::domain::money::{Currency, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::memory::ManualClock;
use stablecoin_core::ports::{RateError, RateSide, RateSource};
use stablecoin_providers::rate_feed::fake::{FakeRateFeed, FeedFault, now_secs};
use stablecoin_providers::rate_feed::{HttpRateFeed, RateFeedConfig};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

fn xof() -> Currency {
    Currency::parse("XOF").unwrap()
}
fn ngn() -> Currency {
    Currency::parse("NGN").unwrap()
}
fn dec(s: &str) -> rust_decimal::Decimal {
    rust_decimal::Decimal::from_str(s).unwrap()
}

/// A per-pair feed config with the feed's timestamps, a 60 s maximum age, 150 bps.
fn config(fake: &FakeRateFeed) -> RateFeedConfig {
    let mut c = RateFeedConfig::new(fake.pair_url(), "/data/rate");
    c.timestamp_pointer = Some("/data/timestamp".into());
    c.spread_bps = 150;
    c.timeout_ms = 2_000;
    c
}

fn clock_now() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(Timestamp(now_secs() * 1000)))
}

fn assert_no_url(e: &RateError, fake_url: &str) {
    let text = e.to_string();
    assert!(!text.contains("127.0.0.1"), "{text}");
    assert!(!text.contains(fake_url), "{text}");
    assert!(!text.contains("http"), "{text}");
}

#[tokio::test]
async fn a_fresh_rate_is_quoted_with_the_spread_in_the_service_favour() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.set_rate("XOF", "USDC", "600.5", now_secs());
    fake.set_rate("NGN", "USDT", "1550.123456789012345678901", now_secs());
    let mut c = config(&fake);
    c.decimals.insert("NGN".into(), 4);
    let feed = HttpRateFeed::new(c, clock_now()).unwrap();
    // 600.5 × 1.015 = 609.5075: up to 610 XOF (0 decimals) for a quote …
    assert_eq!(feed.rate(xof(), Token::Usdc).await.unwrap(), dec("610"));
    // … and 600.5 × 0.985 = 591.4925: down to 591 for a withdrawal.
    let sell = feed
        .rate_for(xof(), Token::Usdc, RateSide::CustomerSellsToken)
        .await;
    assert_eq!(sell.unwrap(), dec("591"));
    // Every digit of the feed's number is used (no f64): × 1.015 =
    // 1573.375308640847530864084515, up to 4 decimals as configured.
    assert_eq!(
        feed.rate(ngn(), Token::Usdt).await.unwrap(),
        dec("1573.3754")
    );
}

#[tokio::test]
async fn one_url_for_every_pair_with_rfc3339_times() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.set_rate("XOF", "USDT", "655.957", now_secs() - 5);
    let mut c = RateFeedConfig::new(fake.all_url(), "/rates/{currency}_{token}/rate");
    c.timestamp_pointer = Some("/rates/{currency}_{token}/updated_at".into());
    c.decimals.insert("XOF".into(), 2);
    let feed = HttpRateFeed::new(c, clock_now()).unwrap();
    assert_eq!(feed.rate(xof(), Token::Usdt).await.unwrap(), dec("655.96"));
    let e = feed.rate(xof(), Token::Usdc).await.unwrap_err();
    assert!(matches!(e, RateError::Unavailable(_)), "{e}");
}

#[tokio::test]
async fn a_stale_rate_is_refused_as_stale() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.set_rate("XOF", "USDC", "600.5", now_secs() - 600);
    let feed = HttpRateFeed::new(config(&fake), clock_now()).unwrap();
    let e = feed.rate(xof(), Token::Usdc).await.unwrap_err();
    assert!(matches!(e, RateError::Stale(_)), "{e}");
    assert_no_url(&e, &fake.pair_url());
    // Just within the maximum age it is used.
    fake.set_rate("XOF", "USDC", "600.5", now_secs() - 50);
    assert!(feed.rate(xof(), Token::Usdc).await.is_ok());
}

#[tokio::test]
async fn the_cache_serves_within_max_age_and_never_past_it() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.set_rate("XOF", "USDC", "600", now_secs());
    let clock = clock_now();
    let feed = HttpRateFeed::new(config(&fake), clock.clone()).unwrap();
    assert!(feed.rate(xof(), Token::Usdc).await.is_ok());
    clock.advance_ms(30_000);
    // Within the maximum age, the feed is not asked again, even when it is down.
    fake.set_fault(FeedFault::ServerError);
    assert_eq!(feed.rate(xof(), Token::Usdc).await.unwrap(), dec("609"));
    assert_eq!(fake.requests(), 1);
    // Past it, the cached rate is not used: the feed is down, so nothing is quoted.
    clock.advance_ms(31_000);
    let e = feed.rate(xof(), Token::Usdc).await.unwrap_err();
    assert!(matches!(e, RateError::Unavailable(_)), "{e}");
    assert_eq!(fake.requests(), 2);
    // The feed is back but has not updated the rate: its own time makes it stale.
    fake.set_fault(FeedFault::None);
    let e = feed.rate(xof(), Token::Usdc).await.unwrap_err();
    assert!(matches!(e, RateError::Stale(_)), "{e}");
}

#[tokio::test]
async fn without_feed_timestamps_age_counts_from_the_fetch() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.set_rate("XOF", "USDC", "600", 0); // the feed's time is ignored
    let clock = clock_now();
    let mut c = config(&fake);
    c.timestamp_pointer = None;
    c.max_age_ms = 10_000;
    let feed = HttpRateFeed::new(c, clock.clone()).unwrap();
    assert!(feed.rate(xof(), Token::Usdc).await.is_ok());
    clock.advance_ms(10_000);
    assert!(feed.rate(xof(), Token::Usdc).await.is_ok());
    assert_eq!(fake.requests(), 1);
    clock.advance_ms(1);
    fake.set_rate("XOF", "USDC", "650", 0);
    assert_eq!(feed.rate(xof(), Token::Usdc).await.unwrap(), dec("660"));
    assert_eq!(fake.requests(), 2);
}

#[tokio::test]
async fn a_feed_that_is_down_is_refused_as_unavailable_without_its_url() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.set_rate("XOF", "USDC", "600", now_secs());
    let feed = HttpRateFeed::new(config(&fake), clock_now()).unwrap();
    for (fault, says) in [
        (FeedFault::ServerError, "500"),
        (FeedFault::RateLimited, "429"),
        (FeedFault::Malformed, "not JSON"),
    ] {
        fake.set_fault(fault);
        let e = feed.rate(xof(), Token::Usdc).await.unwrap_err();
        assert!(matches!(e, RateError::Unavailable(_)), "{fault:?}: {e}");
        assert!(e.to_string().contains(says), "{fault:?}: {e}");
        assert_no_url(&e, &fake.pair_url());
    }
    let url = fake.pair_url();
    drop(fake);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let e = feed.rate(xof(), Token::Usdc).await.unwrap_err();
    assert!(matches!(e, RateError::Unavailable(_)), "{e}");
    assert_no_url(&e, &url);
}

#[tokio::test]
async fn the_credential_is_sent_and_a_wrong_one_is_refused() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.set_rate("XOF", "USDC", "600", now_secs());
    fake.require_key("X-Api-Key", "right-key");
    let mut c = config(&fake);
    c.auth_header = Some("X-Api-Key".into());
    c.auth_value = Some("wrong-key".into());
    let wrong = HttpRateFeed::new(c.clone(), clock_now()).unwrap();
    let e = wrong.rate(xof(), Token::Usdc).await.unwrap_err();
    assert!(e.to_string().contains("credentials"), "{e}");
    assert!(!e.to_string().contains("wrong-key"), "{e}");
    c.auth_value = Some("right-key".into());
    let right = HttpRateFeed::new(c, clock_now()).unwrap();
    assert!(right.rate(xof(), Token::Usdc).await.is_ok());
    assert!(!format!("{right:?}").contains("right-key"));
}

#[tokio::test]
async fn a_feed_that_hangs_is_given_up_on_after_the_timeout() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.set_rate("XOF", "USDC", "600", now_secs());
    fake.set_fault(FeedFault::Hang);
    let mut c = config(&fake);
    c.timeout_ms = 300;
    let feed = HttpRateFeed::new(c, clock_now()).unwrap();
    // A hang guard, not a stopwatch: the call must end on its own (the fake never
    // answers), and say it gave up at the configured timeout.
    let e = tokio::time::timeout(Duration::from_secs(30), feed.rate(xof(), Token::Usdc))
        .await
        .expect("the client gave up on the hanging feed")
        .unwrap_err();
    assert!(matches!(e, RateError::Unavailable(_)), "{e}");
    assert!(e.to_string().contains("no answer within 300 ms"), "{e}");
}

#[test]
fn bad_settings_are_refused_by_name() {
    let ok = RateFeedConfig::new("https://feed.example/{currency}", "/rate");
    assert!(ok.validate().is_ok());
    type Change = Box<dyn Fn(&mut RateFeedConfig)>;
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|c| c.url = "ftp://x".into()), "url"),
        (Box::new(|c| c.rate_pointer = "rate".into()), "rate_pointer"),
        (
            Box::new(|c| c.timestamp_pointer = Some("ts".into())),
            "timestamp_pointer",
        ),
        (Box::new(|c| c.max_age_ms = 0), "max_age_ms"),
        (Box::new(|c| c.timeout_ms = 0), "timeout_ms"),
        (Box::new(|c| c.spread_bps = 10_000), "spread_bps"),
        (
            Box::new(|c| c.auth_header = Some("X-Key".into())),
            "auth_value",
        ),
        (
            Box::new(|c| {
                c.decimals.insert("XOF".into(), 19);
            }),
            "decimals.XOF",
        ),
        (
            Box::new(|c| {
                c.decimals.insert("ZZZ".into(), 2);
            }),
            "ZZZ",
        ),
    ];
    for (change, named) in cases {
        let mut c = ok.clone();
        change(&mut c);
        let e = c.validate().unwrap_err();
        assert_eq!(e.code(), "PROVIDER_CONFIG");
        assert!(e.to_string().contains(named), "{named}: {e}");
    }
    let mut secret = ok.clone();
    secret.url = "https://feed.example/v1?apikey=SECRET1".into();
    secret.auth_header = Some("Authorization".into());
    secret.auth_value = Some("Bearer SECRET2".into());
    let shown = format!("{secret:?}");
    assert!(
        !shown.contains("SECRET1") && !shown.contains("SECRET2"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_rate_outside_the_band_is_refused_and_the_last_accepted_stays_the_reference() {
    let fake = FakeRateFeed::start().await.unwrap();
    fake.set_rate("XOF", "USDC", "600", now_secs());
    let clock = clock_now();
    let mut c = config(&fake);
    c.timestamp_pointer = None;
    c.max_move_bps = Some(500);
    let feed = HttpRateFeed::new(c, clock.clone()).unwrap();
    assert_eq!(feed.mid_rate(xof(), Token::Usdc).await.unwrap(), dec("600"));
    for (rate, accepted) in [("631", false), ("569", false), ("630", true), ("600", true)] {
        clock.advance_ms(61_000);
        fake.set_rate("XOF", "USDC", rate, 0);
        let r = feed.mid_rate(xof(), Token::Usdc).await;
        match r {
            Ok(mid) => {
                assert!(accepted, "{rate} was quoted");
                assert_eq!(mid, dec(rate));
            }
            Err(e) => {
                assert!(!accepted, "{rate}: {e}");
                assert!(matches!(e, RateError::Stale(_)), "{e}");
                assert_no_url(&e, &fake.pair_url());
            }
        }
    }
    // 569 is 5.17% below 600; after 630 was accepted, 600 is 4.8% below it.
    let mut off = config(&fake);
    off.max_move_bps = Some(0);
    assert!(
        HttpRateFeed::new(off, clock).is_err(),
        "a zero band is refused"
    );
}
