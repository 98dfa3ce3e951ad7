//! A fake rate feed for tests: an HTTP server on 127.0.0.1, started by the test and
//! stopped when dropped.
//!
//! It serves the shapes a typical feed does:
//!
//! - `GET /v1/rates/{currency}/{token}` → `{"data":{"pair":"XOF_USDC","rate":600.5,
//!   "timestamp":1700000000}}`, the rate as a raw JSON number (with every digit it was
//!   given) and the timestamp in Unix seconds; 404 for a pair it has no rate for;
//! - `GET /v1/rates` → `{"rates":{"XOF_USDC":{"rate":"600.5","updated_at":
//!   "2023-11-14T22:13:20Z"}}}`, every pair at once, rates as strings and times in
//!   RFC 3339.
//!
//! And it fails the ways feeds do: 401 on a missing or wrong key (when one is
//! required), and on demand 429, 500, an answer that never comes, or malformed JSON
//! ([`FeedFault`]). It counts the requests it receives.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How the fake answers every request until told otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FeedFault {
    /// Answers normally.
    #[default]
    None,
    /// `429 Too Many Requests` with `Retry-After: 1`.
    RateLimited,
    /// `500 Internal Server Error`.
    ServerError,
    /// Never answers (the connection stays open for an hour).
    Hang,
    /// `200` with a body that is not JSON.
    Malformed,
}

/// One pair's rate as the fake serves it.
#[derive(Clone, Debug)]
struct PairRate {
    /// The rate's JSON text (a number literal, every digit kept).
    raw: String,
    /// The feed's time of the rate, Unix seconds.
    at_secs: i64,
}

#[derive(Default)]
struct Inner {
    rates: Mutex<BTreeMap<String, PairRate>>,
    fault: Mutex<FeedFault>,
    key: Mutex<Option<(String, String)>>,
    requests: AtomicU64,
}

/// The running fake feed; stops when dropped.
pub struct FakeRateFeed {
    addr: SocketAddr,
    inner: Arc<Inner>,
    task: tokio::task::AbortHandle,
}

impl Drop for FakeRateFeed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Now, in Unix seconds.
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl FakeRateFeed {
    /// Starts the fake on a free port of 127.0.0.1, with no rates, no key and no fault.
    pub async fn start() -> std::io::Result<Self> {
        let inner = Arc::new(Inner::default());
        let app = Router::new()
            .route("/v1/rates", get(all_rates))
            .route("/v1/rates/{currency}/{token}", get(one_rate))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        })
        .abort_handle();
        Ok(FakeRateFeed { addr, inner, task })
    }

    /// The per-pair URL template (`{currency}`, `{token}` placeholders); the rate is at
    /// `/data/rate`, its time at `/data/timestamp`.
    pub fn pair_url(&self) -> String {
        format!("http://{}/v1/rates/{{currency}}/{{token}}", self.addr)
    }

    /// The URL of every pair at once; a pair's rate is at
    /// `/rates/{currency}_{token}/rate`, its time at `/rates/{currency}_{token}/updated_at`.
    pub fn all_url(&self) -> String {
        format!("http://{}/v1/rates", self.addr)
    }

    /// Serves `rate` (a JSON number literal such as `"600.5"`) for the pair, as of
    /// `at_secs` (Unix seconds).
    pub fn set_rate(&self, currency: &str, token: &str, rate: &str, at_secs: i64) {
        if let Ok(mut m) = self.inner.rates.lock() {
            m.insert(
                format!("{currency}_{token}"),
                PairRate {
                    raw: rate.to_string(),
                    at_secs,
                },
            );
        }
    }

    /// Answers 401 to any request without `header: value`.
    pub fn require_key(&self, header: &str, value: &str) {
        if let Ok(mut k) = self.inner.key.lock() {
            *k = Some((header.to_ascii_lowercase(), value.to_string()));
        }
    }

    /// Makes every following answer fail as `fault` ([`FeedFault::None`] to recover).
    pub fn set_fault(&self, fault: FeedFault) {
        if let Ok(mut f) = self.inner.fault.lock() {
            *f = fault;
        }
    }

    /// How many requests the fake has received.
    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::SeqCst)
    }
}

/// The checks every request goes through: count, key, fault. `Some` is the answer.
async fn gate(inner: &Inner, headers: &HeaderMap) -> Option<Response> {
    inner.requests.fetch_add(1, Ordering::SeqCst);
    let key = inner.key.lock().ok().and_then(|k| k.clone());
    if let Some((name, value)) = key
        && headers.get(name.as_str()).and_then(|v| v.to_str().ok()) != Some(value.as_str())
    {
        return Some(
            (
                StatusCode::UNAUTHORIZED,
                [("content-type", "application/json")],
                r#"{"error":{"code":"invalid_api_key","message":"Invalid API key"}}"#,
            )
                .into_response(),
        );
    }
    let fault = inner.fault.lock().map(|f| *f).unwrap_or_default();
    match fault {
        FeedFault::None => None,
        FeedFault::RateLimited => Some(
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "1")],
                r#"{"error":{"code":"rate_limited"}}"#,
            )
                .into_response(),
        ),
        FeedFault::ServerError => Some(
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "upstream exchange unavailable",
            )
                .into_response(),
        ),
        FeedFault::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Some(StatusCode::GATEWAY_TIMEOUT.into_response())
        }
        FeedFault::Malformed => Some(
            (
                StatusCode::OK,
                [("content-type", "application/json")],
                r#"{"data":{"rate":600.5,"#,
            )
                .into_response(),
        ),
    }
}

fn json(body: String) -> Response {
    (StatusCode::OK, [("content-type", "application/json")], body).into_response()
}

async fn one_rate(
    State(inner): State<Arc<Inner>>,
    Path((currency, token)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(r) = gate(&inner, &headers).await {
        return r;
    }
    let pair = format!("{currency}_{token}");
    let rate = inner.rates.lock().ok().and_then(|m| m.get(&pair).cloned());
    match rate {
        Some(r) => json(format!(
            r#"{{"data":{{"pair":"{pair}","rate":{},"timestamp":{}}}}}"#,
            r.raw, r.at_secs
        )),
        None => (
            StatusCode::NOT_FOUND,
            r#"{"error":{"code":"unknown_pair"}}"#,
        )
            .into_response(),
    }
}

async fn all_rates(State(inner): State<Arc<Inner>>, headers: HeaderMap) -> Response {
    if let Some(r) = gate(&inner, &headers).await {
        return r;
    }
    let rates = inner.rates.lock().map(|m| m.clone()).unwrap_or_default();
    let entries: Vec<String> = rates
        .iter()
        .map(|(pair, r)| {
            let at = stablecoin_core::domain::time::Timestamp(r.at_secs.saturating_mul(1000));
            format!(
                r#""{pair}":{{"rate":"{}","updated_at":"{}"}}"#,
                r.raw,
                at.to_rfc3339()
            )
        })
        .collect();
    json(format!(r#"{{"rates":{{{}}}}}"#, entries.join(",")))
}
