//! FX rates (`RateSource`) from an HTTP rate feed.
//!
//! [`HttpRateFeed`] GETs the rate of a pair from a configured URL, reads it (and
//! optionally the feed's timestamp of it) out of the JSON answer by JSON pointer, keeps
//! it for at most `max_age_ms`, and quotes it with a spread in basis points and rounded
//! to the currency's decimals, both in the service's favour ([`quoted_rate`]).
//!
//! - The age of a rate is measured from the feed's timestamp when a
//!   `timestamp_pointer` is configured, else from when it was fetched. A rate older
//!   than `max_age_ms` is never used: the cached one is fetched again, and a fetched
//!   one that is already too old is refused as [`RateError::Stale`] (RATE_STALE).
//! - A feed that cannot be reached, times out, refuses the credentials, rate-limits,
//!   fails, or answers without a usable rate is [`RateError::Unavailable`]
//!   (RATE_SOURCE_ERROR). Neither error carries the feed's URL.
//! - `{currency}` and `{token}` in the URL and in the pointers are replaced by the
//!   pair's codes (`XOF`, `USDC`), so one URL per pair and one URL for every pair
//!   (`/rates/{currency}_{token}/rate`) are both configurable.

mod json;
mod pricing;

#[cfg(feature = "testkit")]
pub mod fake;

pub use pricing::{BPS_PER_UNIT, MAX_DECIMALS, quoted_rate};

use crate::error::ProviderError;
use async_trait::async_trait;
use rust_decimal::Decimal;
use stablecoin_core::domain::money::{Currency, Token};
use stablecoin_core::domain::redact;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{Clock, RateError, RateSide, RateSource};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The default sanity band: 1,000 bps (10%) between two consecutive accepted rates of a
/// pair, at most `max_age_ms` apart. A real market move that large within a minute is
/// rare enough that stopping quotes (until an operator looks, widens the band or
/// restarts) is cheaper than quoting a feed's typo or a compromised feed's price.
pub const DEFAULT_MAX_MOVE_BPS: u32 = 1_000;

/// The largest answer read from the feed; a longer one is refused as malformed.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// Everything [`HttpRateFeed`] needs to know about a feed. `Debug` hides the
/// credential and any URL (a feed's API key is often in its URL).
#[derive(Clone, PartialEq, Eq)]
pub struct RateFeedConfig {
    /// The URL GET for a pair's rate (`http` or `https`); `{currency}` and `{token}` are
    /// replaced by the pair's codes.
    pub url: String,
    /// The header the credential is sent in (`Authorization`, `X-Api-Key`), if any.
    pub auth_header: Option<String>,
    /// The credential sent in `auth_header` (the whole value: `Bearer …` where the feed
    /// wants one). A secret.
    pub auth_value: Option<String>,
    /// JSON pointer (RFC 6901) to the rate in the answer, local currency per token, a
    /// JSON number or a string holding one (`/data/rate`); placeholders as in `url`.
    pub rate_pointer: String,
    /// JSON pointer to the feed's time of the rate (Unix seconds or an RFC 3339 string),
    /// if the feed gives one; the rate's age is measured from it.
    pub timestamp_pointer: Option<String>,
    /// A rate older than this is never used (milliseconds).
    pub max_age_ms: u64,
    /// The spread in basis points (150 = 1.5%), applied in the service's favour.
    pub spread_bps: u32,
    /// The sanity band: a fetched rate further than this (basis points) from the last
    /// one accepted for the pair is refused as [`RateError::Stale`] and logged, and the
    /// last accepted one stays the reference. `None`: no band. The first rate after
    /// start has no reference and is taken as it is.
    pub max_move_bps: Option<u32>,
    /// The longest one request to the feed may take (milliseconds).
    pub timeout_ms: u64,
    /// Decimals a quoted rate is rounded to, per ISO 4217 code; a currency not listed
    /// is rounded to its ISO minor-unit exponent (XOF 0, NGN 2).
    pub decimals: BTreeMap<String, u32>,
}

impl fmt::Debug for RateFeedConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateFeedConfig")
            .field("url", &redact::urls(&self.url))
            .field("auth_header", &self.auth_header)
            .field(
                "auth_value",
                &self.auth_value.as_ref().map(|_| "<redacted>"),
            )
            .field("rate_pointer", &self.rate_pointer)
            .field("timestamp_pointer", &self.timestamp_pointer)
            .field("max_age_ms", &self.max_age_ms)
            .field("spread_bps", &self.spread_bps)
            .field("max_move_bps", &self.max_move_bps)
            .field("timeout_ms", &self.timeout_ms)
            .field("decimals", &self.decimals)
            .finish()
    }
}

impl RateFeedConfig {
    /// A feed at `url` with the rate at `rate_pointer`, no credential and no timestamp,
    /// a 60 s maximum age, no spread, a 10% band ([`DEFAULT_MAX_MOVE_BPS`]), a 5 s
    /// timeout and ISO decimals.
    pub fn new(url: impl Into<String>, rate_pointer: impl Into<String>) -> Self {
        RateFeedConfig {
            url: url.into(),
            auth_header: None,
            auth_value: None,
            rate_pointer: rate_pointer.into(),
            timestamp_pointer: None,
            max_age_ms: 60_000,
            spread_bps: 0,
            max_move_bps: Some(DEFAULT_MAX_MOVE_BPS),
            timeout_ms: 5_000,
            decimals: BTreeMap::new(),
        }
    }

    /// Every problem with the settings, named (never with the secret or the URL).
    pub fn validate(&self) -> Result<(), ProviderError> {
        let bad = |why: String| Err(ProviderError::Config(why));
        let lower = self.url.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            return bad("rate feed url must start with http:// or https://".into());
        }
        for (name, p) in [
            ("rate_pointer", Some(&self.rate_pointer)),
            ("timestamp_pointer", self.timestamp_pointer.as_ref()),
        ] {
            if let Some(p) = p
                && !p.starts_with('/')
            {
                return bad(format!(
                    "{name} must be a JSON pointer starting with '/', got {p:?}"
                ));
            }
        }
        match (&self.auth_header, &self.auth_value) {
            (None, None) => {}
            (Some(h), Some(v)) => {
                if reqwest::header::HeaderName::from_bytes(h.as_bytes()).is_err() {
                    return bad(format!("auth_header {h:?} is not a valid header name"));
                }
                if v.is_empty() || reqwest::header::HeaderValue::from_str(v).is_err() {
                    return bad("auth_value is empty or not a valid header value".into());
                }
            }
            _ => return bad("auth_header and auth_value are set together or not at all".into()),
        }
        if self.max_age_ms == 0 {
            return bad("max_age_ms must be greater than 0".into());
        }
        if self.timeout_ms == 0 {
            return bad("timeout_ms must be greater than 0".into());
        }
        if self.max_move_bps == Some(0) {
            return bad("max_move_bps must be greater than 0 (or absent: no band)".into());
        }
        if self.spread_bps >= BPS_PER_UNIT {
            return bad(format!(
                "spread_bps must be below {BPS_PER_UNIT}, got {}",
                self.spread_bps
            ));
        }
        for (code, d) in &self.decimals {
            if Currency::parse(code).is_err() {
                return bad(format!("decimals: {code:?} is not a supported currency"));
            }
            if *d > MAX_DECIMALS {
                return bad(format!(
                    "decimals.{code} must be at most {MAX_DECIMALS}, got {d}"
                ));
            }
        }
        Ok(())
    }
}

/// How far `new` is from `last`, in basis points of `last` (`None` if `last` is not
/// positive, which a fetched rate never is).
fn moved_bps(last: Decimal, new: Decimal) -> Option<Decimal> {
    if last <= Decimal::ZERO {
        return None;
    }
    ((new - last).abs() / last).checked_mul(Decimal::from(BPS_PER_UNIT))
}

/// A rate kept from the feed: its mid value and the instant its age counts from.
#[derive(Clone, Copy, Debug)]
struct Cached {
    mid: Decimal,
    as_of: Timestamp,
}

/// FX rates from an HTTP feed (see the module documentation).
pub struct HttpRateFeed {
    config: RateFeedConfig,
    client: reqwest::Client,
    clock: Arc<dyn Clock>,
    cache: Mutex<HashMap<(&'static str, Token), Cached>>,
}

impl fmt::Debug for HttpRateFeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpRateFeed")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl HttpRateFeed {
    /// A feed adapter with `config` (validated), measuring ages on `clock`.
    pub fn new(config: RateFeedConfig, clock: Arc<dyn Clock>) -> Result<Self, ProviderError> {
        config.validate()?;
        let client = reqwest::Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            // A redirect could carry the credential to another host: not followed.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ProviderError::Config(format!("http client: {}", e.without_url())))?;
        Ok(HttpRateFeed {
            config,
            client,
            clock,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The settings this adapter runs with.
    pub fn config(&self) -> &RateFeedConfig {
        &self.config
    }

    /// The decimals a rate of `currency` is quoted with.
    pub fn decimals_of(&self, currency: Currency) -> u32 {
        self.config
            .decimals
            .get(currency.code)
            .copied()
            .unwrap_or(currency.exponent)
    }

    /// The feed's rate of the pair, from the cache while it is younger than
    /// `max_age_ms`, else fetched.
    pub async fn mid_rate(&self, currency: Currency, token: Token) -> Result<Decimal, RateError> {
        let key = (currency.code, token);
        let now = self.clock.now();
        let last = self.cache.lock().ok().and_then(|m| m.get(&key).copied());
        if let Some(c) = last
            && self.fresh(c.as_of, now)
        {
            return Ok(c.mid);
        }
        let fetched = self.fetch(currency, token).await?;
        if let (Some(band), Some(last)) = (self.config.max_move_bps, last)
            && let Some(moved) = moved_bps(last.mid, fetched.mid)
            && moved > Decimal::from(band)
        {
            tracing::warn!(
                pair = %format!("{}_{}", currency.code, token),
                last = %last.mid,
                fetched = %fetched.mid,
                moved_bps = %moved.round_dp(0),
                band_bps = band,
                "rate feed: a rate outside the band around the last accepted one was refused"
            );
            return Err(RateError::Stale(format!(
                "the feed's {}_{} rate {} moved {} bps from the last accepted {}, beyond the {band} bps band",
                currency.code,
                token,
                fetched.mid,
                moved.round_dp(0),
                last.mid
            )));
        }
        let now = self.clock.now();
        if !self.fresh(fetched.as_of, now) {
            return Err(RateError::Stale(format!(
                "the feed's {}_{} rate is {} s old (maximum age {} s)",
                currency.code,
                token,
                (now.0 - fetched.as_of.0) / 1000,
                self.config.max_age_ms / 1000
            )));
        }
        if let Ok(mut m) = self.cache.lock() {
            m.insert(key, fetched);
        }
        Ok(fetched.mid)
    }

    /// True while a rate as of `as_of` may be used at `now` (a feed clock slightly
    /// ahead of ours counts as age 0).
    fn fresh(&self, as_of: Timestamp, now: Timestamp) -> bool {
        let age = now.0.saturating_sub(as_of.0).max(0);
        u64::try_from(age).is_ok_and(|a| a <= self.config.max_age_ms)
    }

    /// One GET of the pair's rate.
    async fn fetch(&self, currency: Currency, token: Token) -> Result<Cached, RateError> {
        let fill = |s: &str| {
            s.replace("{currency}", currency.code)
                .replace("{token}", token.as_str())
        };
        let down = |why: String| {
            RateError::Unavailable(format!("rate feed, {}_{}: {why}", currency.code, token))
        };
        let mut req = self
            .client
            .get(fill(&self.config.url))
            .header("accept", "application/json");
        if let (Some(h), Some(v)) = (&self.config.auth_header, &self.config.auth_value) {
            req = req.header(h.as_str(), v.as_str());
        }
        let fetched_at = self.clock.now();
        let resp = req.send().await.map_err(|e| {
            down(if e.is_timeout() {
                format!("no answer within {} ms", self.config.timeout_ms)
            } else if e.is_connect() {
                "unreachable".into()
            } else {
                e.without_url().to_string()
            })
        })?;
        let status = resp.status();
        if !status.is_success() {
            return Err(down(match status.as_u16() {
                401 | 403 => format!("the feed refused the credentials ({status})"),
                429 => "the feed is rate-limiting this service (429)".into(),
                _ => format!("the feed answered {status}"),
            }));
        }
        let body = resp.bytes().await.map_err(|e| {
            down(if e.is_timeout() {
                format!("no answer within {} ms", self.config.timeout_ms)
            } else {
                e.without_url().to_string()
            })
        })?;
        if body.len() > MAX_ANSWER_BYTES {
            return Err(down(format!(
                "the answer is longer than {MAX_ANSWER_BYTES} bytes"
            )));
        }
        let body =
            std::str::from_utf8(&body).map_err(|_| down("the answer is not UTF-8".into()))?;
        let mid = json::raw_at(body, &fill(&self.config.rate_pointer))
            .and_then(json::decimal)
            .map_err(down)?;
        if mid <= Decimal::ZERO {
            return Err(down(format!("the rate {mid} is not positive")));
        }
        let as_of = match &self.config.timestamp_pointer {
            None => fetched_at,
            Some(p) => json::raw_at(body, &fill(p))
                .and_then(json::timestamp)
                .map_err(down)?,
        };
        Ok(Cached { mid, as_of })
    }
}

#[async_trait]
impl RateSource for HttpRateFeed {
    async fn rate(&self, currency: Currency, token: Token) -> Result<Decimal, RateError> {
        self.rate_for(currency, token, RateSide::CustomerBuysToken)
            .await
    }

    async fn rate_for(
        &self,
        currency: Currency,
        token: Token,
        side: RateSide,
    ) -> Result<Decimal, RateError> {
        let mid = self.mid_rate(currency, token).await?;
        quoted_rate(
            mid,
            self.config.spread_bps,
            self.decimals_of(currency),
            side,
        )
        .ok_or_else(|| {
            RateError::Unavailable(format!(
                "the feed's {}_{} rate {mid} cannot be quoted with a {} bps spread",
                currency.code, token, self.config.spread_bps
            ))
        })
    }
}
