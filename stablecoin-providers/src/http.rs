//! What the adapters share: the HTTP client and base URLs; for the SMS adapters, form
//! bodies and how a transport failure maps to a retryable `NotifyError`.

use crate::ProviderError;
#[cfg(any(feature = "africastalking", feature = "twilio"))]
use stablecoin_core::ports::NotifyError;
use std::time::Duration;

/// A client with a whole-request timeout (a gateway that hangs is a retryable failure,
/// never a stuck worker).
pub(crate) fn client(timeout: Duration) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)))
        .build()
        .map_err(|e| ProviderError::Config(format!("HTTP client: {e}")))
}

/// A base URL without its trailing `/`; refused unless `http(s)://`.
pub(crate) fn base_url(url: &str) -> Result<String, ProviderError> {
    let u = url.trim().trim_end_matches('/');
    if !(u.starts_with("https://") || u.starts_with("http://")) {
        return Err(ProviderError::Config(format!(
            "base URL must start with https:// or http://: {u:?}"
        )));
    }
    Ok(u.to_string())
}

/// A transport failure (no answer): the message may be tried again. The text names
/// the kind of failure, never the request (its body holds the message).
#[cfg(any(feature = "africastalking", feature = "twilio"))]
pub(crate) fn transport(provider: &str, e: &reqwest::Error) -> NotifyError {
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    NotifyError::retryable(format!("{provider}: {what}"))
}

/// An HTTP error status: 429 and 5xx pass with time, 401/403 once an operator fixes the
/// credentials (both retryable, bounded by the outbox's attempts); any other 4xx is a
/// refusal of this message.
#[cfg(any(feature = "africastalking", feature = "twilio"))]
pub(crate) fn status_error(provider: &str, status: u16, detail: &str) -> NotifyError {
    let reason = format!("{provider}: HTTP {status}{detail}");
    if status == 429 || status >= 500 || status == 401 || status == 403 {
        NotifyError::retryable(reason)
    } else {
        NotifyError::permanent(reason)
    }
}

/// The pairs of a form-encoded body, in order.
#[cfg(any(feature = "africastalking", feature = "twilio"))]
pub(crate) fn form_pairs(body: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The first value of `name` in `pairs`.
#[cfg(any(feature = "africastalking", feature = "twilio"))]
pub(crate) fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}
