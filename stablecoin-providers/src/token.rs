//! What the payout adapters share: a cached OAuth access token, the token answer's
//! shape, and how a transport failure maps to `PayoutError::Unknown`.

use serde::Deserialize;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{Clock, PayoutError, SystemClock};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// An access token and when to stop using it (on the cache's clock).
struct Cached {
    token: String,
    until: Timestamp,
}

/// One access token shared by every call, fetched once and used until shortly before
/// it expires. The lock is held while fetching, so concurrent calls wait for one fetch
/// instead of each asking for a token. `Debug` never shows the token.
pub(crate) struct TokenCache {
    slot: tokio::sync::Mutex<Option<Cached>>,
    fetches: AtomicUsize,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache")
            .field("token", &"<redacted>")
            .field("fetches", &self.fetches.load(Ordering::Relaxed))
            .finish()
    }
}

impl TokenCache {
    pub(crate) fn new() -> Self {
        TokenCache {
            slot: tokio::sync::Mutex::new(None),
            fetches: AtomicUsize::new(0),
            clock: Arc::new(SystemClock),
        }
    }

    /// Measures the token's lifetime on `clock` (a test moves it forward instead of
    /// sleeping until the token is due for renewal).
    pub(crate) fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = clock;
    }

    /// The cached token, or a new one from `fetch` (the token and its lifetime) when
    /// there is none or it is about to expire.
    pub(crate) async fn get<F, Fut>(&self, fetch: F) -> Result<String, PayoutError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(String, Duration), PayoutError>>,
    {
        let mut slot = self.slot.lock().await;
        if let Some(c) = slot.as_ref()
            && self.clock.now() < c.until
        {
            return Ok(c.token.clone());
        }
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let (token, lifetime) = fetch().await?;
        *slot = Some(Cached {
            token: token.clone(),
            until: self
                .clock
                .now()
                .plus_millis(i64::try_from(usable_for(lifetime).as_millis()).unwrap_or(i64::MAX)),
        });
        Ok(token)
    }

    /// Drops `token` (refused by the provider) so the next `get` fetches a new one. A
    /// token another call has already replaced is left alone.
    pub(crate) async fn invalidate(&self, token: &str) {
        let mut slot = self.slot.lock().await;
        if slot.as_ref().is_some_and(|c| c.token == token) {
            *slot = None;
        }
    }
}

/// How long a token living `lifetime` is used: until a fifth of its life (at most a
/// minute) before it expires, so a call never starts with a token about to lapse.
fn usable_for(lifetime: Duration) -> Duration {
    lifetime.saturating_sub((lifetime / 5).min(Duration::from_secs(60)))
}

/// `{access_token, expires_in}`: both providers' token answer. `expires_in` is seconds,
/// a string in Daraja's answers and a number in MTN's; both are read.
#[derive(Deserialize)]
pub(crate) struct TokenAnswer {
    pub(crate) access_token: String,
    #[serde(default)]
    expires_in: Option<serde_json::Value>,
}

/// Reads a provider's OAuth token answer: any other status than 2xx, or a body that is
/// not a token, is `Unknown` (the payout is not decided by a token failure).
pub(crate) async fn read_token_answer(
    provider: &str,
    res: reqwest::Response,
) -> Result<(String, Duration), PayoutError> {
    if !res.status().is_success() {
        return Err(PayoutError::Unknown(format!(
            "{provider}: token refused: HTTP {}",
            res.status().as_u16()
        )));
    }
    let answer: TokenAnswer = res
        .json()
        .await
        .map_err(|_| PayoutError::Unknown(format!("{provider}: unreadable token answer")))?;
    Ok(answer.into_parts())
}

impl TokenAnswer {
    /// The token and its lifetime (an hour when the answer does not say).
    pub(crate) fn into_parts(self) -> (String, Duration) {
        let secs = match &self.expires_in {
            Some(serde_json::Value::String(s)) => s.trim().parse::<u64>().ok(),
            Some(serde_json::Value::Number(n)) => n.as_u64(),
            _ => None,
        };
        (
            self.access_token,
            Duration::from_secs(secs.unwrap_or(3_600)),
        )
    }
}

/// A transport failure (no answer, or a cut-off one): the request may or may not have
/// been processed. The text names the kind of failure, never the request.
pub(crate) fn transport(provider: &str, e: &reqwest::Error) -> PayoutError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    PayoutError::Unknown(format!("{provider}: {what}"))
}

/// At most `n` characters of a provider's text, for an error message.
pub(crate) fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_used_until_shortly_before_it_expires() {
        assert_eq!(
            usable_for(Duration::from_secs(3_599)),
            Duration::from_secs(3_539)
        );
        assert_eq!(usable_for(Duration::from_secs(10)), Duration::from_secs(8));
        assert_eq!(usable_for(Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn expires_in_is_read_as_a_string_or_a_number() {
        let a: TokenAnswer =
            serde_json::from_str(r#"{"access_token":"t","expires_in":"3599"}"#).unwrap();
        assert_eq!(a.into_parts().1, Duration::from_secs(3_599));
        let b: TokenAnswer = serde_json::from_str(
            r#"{"access_token":"t","token_type":"access_token","expires_in":60}"#,
        )
        .unwrap();
        assert_eq!(b.into_parts().1, Duration::from_secs(60));
        let c: TokenAnswer = serde_json::from_str(r#"{"access_token":"t"}"#).unwrap();
        assert_eq!(c.into_parts().1, Duration::from_secs(3_600));
    }
}
