//! [`ChainalysisScreen`]: Chainalysis's free sanctions screening API as a
//! [`Screening`] adapter.
//!
//! The API (public documentation; PROVIDERS.md): `GET {base}/api/v1/address/{address}`
//! with the key in `X-API-Key` (base `https://public.chainalysis.com`) answers 200
//! `{"identifications": [{"category", "name", "description", "url"}]}`: an empty array
//! when the address is not sanctioned, one identification per designation when it is
//! (`category` is `sanctions`, `name` names the designation). It screens addresses of any
//! chain by their text alone.
//!
//! Every failure is [`ScreeningVerdict::Unavailable`], never clear: a refused key
//! (401/403), a rate limit (429), a server error (5xx), any other status, an answer that
//! is not that JSON, a connection failure and the timeout (the whole request is bounded,
//! so a hung vendor cannot hold a send). The reason names the failure, never the key.

use crate::ProviderError;
use async_trait::async_trait;
use serde::Deserialize;
use stablecoin_core::domain::chain::{ChainAddress, RailId};
use stablecoin_core::ports::screening::{Screening, ScreeningVerdict};
use std::time::Duration;

/// Chainalysis's public API host.
pub const CHAINALYSIS_BASE_URL: &str = "https://public.chainalysis.com";

/// The list name hits carry: `chainalysis:<category>` (`chainalysis:sanctions`).
pub const CHAINALYSIS_LIST_PREFIX: &str = "chainalysis";

/// The adapter's settings.
#[derive(Clone)]
pub struct ChainalysisConfig {
    /// `https://public.chainalysis.com` (or a fake's URL in tests).
    pub base_url: String,
    /// The API key (free, from Chainalysis's sign-up form).
    pub api_key: String,
    /// Bound on one whole request.
    pub timeout: Duration,
}

impl std::fmt::Debug for ChainalysisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainalysisConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The HTTP screen.
pub struct ChainalysisScreen {
    client: reqwest::Client,
    base_url: String,
    api_key: String,
}

#[derive(Deserialize)]
struct Answer {
    identifications: Vec<Identification>,
}

#[derive(Deserialize)]
struct Identification {
    #[serde(default)]
    category: String,
    #[serde(default)]
    name: String,
}

impl ChainalysisScreen {
    /// An adapter; PROVIDER_CONFIG for an empty key or a base URL that is not http(s).
    pub fn new(config: ChainalysisConfig) -> Result<Self, ProviderError> {
        if config.api_key.trim().is_empty() {
            return Err(ProviderError::Config(
                "chainalysis: api_key is empty".into(),
            ));
        }
        Ok(ChainalysisScreen {
            client: crate::http::client(config.timeout)?,
            base_url: crate::http::base_url(&config.base_url)?,
            api_key: config.api_key,
        })
    }
}

fn unavailable(reason: impl Into<String>) -> ScreeningVerdict {
    ScreeningVerdict::Unavailable {
        reason: format!("chainalysis: {}", reason.into()),
    }
}

#[async_trait]
impl Screening for ChainalysisScreen {
    fn name(&self) -> &str {
        "chainalysis"
    }

    async fn screen(&self, _rail: RailId, address: &ChainAddress) -> ScreeningVerdict {
        let a = address.0.trim();
        // An address is base58, hex or bech32: anything else cannot be a path segment
        // safely, and is no address.
        if a.is_empty() || !a.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return unavailable("not an address it can look up");
        }
        let url = format!("{}/api/v1/address/{a}", self.base_url);
        let res = self
            .client
            .get(url)
            .header("X-API-Key", &self.api_key)
            .header("Accept", "application/json")
            .send()
            .await;
        let res = match res {
            Ok(r) => r,
            Err(e) if e.is_timeout() => return unavailable("timed out"),
            Err(e) if e.is_connect() => return unavailable("connection failed"),
            Err(_) => return unavailable("request failed"),
        };
        let status = res.status().as_u16();
        match status {
            200 => {}
            401 | 403 => return unavailable(format!("HTTP {status}: the API key was refused")),
            429 => return unavailable("HTTP 429: rate limited"),
            s => return unavailable(format!("HTTP {s}")),
        }
        let answer: Answer = match res.json().await {
            Ok(a) => a,
            Err(e) if e.is_timeout() => return unavailable("timed out"),
            Err(_) => return unavailable("answer is not the documented JSON"),
        };
        match answer.identifications.first() {
            None => ScreeningVerdict::Clear,
            Some(i) => ScreeningVerdict::Hit {
                list: format!(
                    "{CHAINALYSIS_LIST_PREFIX}:{}",
                    if i.category.trim().is_empty() {
                        "sanctions"
                    } else {
                        i.category.trim()
                    }
                ),
                reference: if i.name.trim().is_empty() {
                    "unnamed identification".into()
                } else {
                    i.name.trim().chars().take(300).collect()
                },
            },
        }
    }
}
