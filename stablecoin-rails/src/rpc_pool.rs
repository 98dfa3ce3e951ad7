//! [`RpcPool`]: one HTTP client over several node URLs of one chain (issue #49, RPC
//! failover). Every real rail's node client (EVM and Solana JSON-RPC, TRON's HTTP API)
//! posts through it, so one provider's outage does not stop the rail.
//!
//! - **Which failures move to the next URL**: a refused or reset connection, a timeout,
//!   HTTP 5xx or 429, and an answer that is not JSON. A JSON answer (a result, or the
//!   node's own error object) is the node's word and is returned as it is, whatever URL
//!   gave it.
//! - **Reads** are retried at once on the next URL: asking twice changes nothing.
//! - **Submissions** (a signed transaction or user operation) are retried on the next URL
//!   only when the request certainly never reached the node (the connection was refused).
//!   After a timeout, a 5xx or a garbled answer the node may have taken it: the call then
//!   fails as "outcome unknown" and the rail reconciles by the payment's id (the
//!   transaction hash, user-operation hash or signature it journaled before sending) on
//!   the next URL. Re-posting the same bytes elsewhere would be safe for the money (the
//!   same signed transaction cannot pay twice), but the other node's answer ("already
//!   known", "nonce too low") would read as a rejection of a payment that may land.
//! - **Health** per URL: a failure marks the URL down; while down it is tried after the
//!   healthy ones, and first again in its configured place once `retry_down_after` has
//!   passed (or at once when every URL is down). A success marks it up. [`RpcPool::health`]
//!   is what readiness shows, each URL as `host:port` only.

use serde_json::Value;
use stablecoin_core::ports::RpcEndpointHealth;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a failed URL is tried only after the healthy ones (default 30 s).
pub const DEFAULT_RETRY_DOWN_AFTER: Duration = Duration::from_secs(30);

/// Why one URL gave no usable answer. Never carries the URL (reqwest's error text does).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The connection was refused or could not be made: the request never left.
    Connect,
    /// No answer within the client timeout.
    Timeout,
    /// HTTP 5xx or 429 from the node or a gateway in front of it.
    Status(u16),
    /// An answer that is not JSON (cut short, an HTML error page, garbage).
    Malformed,
    /// Any other transport failure (reset mid-answer, TLS, body read).
    Other,
}

impl Failure {
    /// Whether the node may have received (and acted on) the request.
    pub fn may_have_reached(&self) -> bool {
        !matches!(self, Failure::Connect)
    }

    fn words(&self) -> String {
        match self {
            Failure::Connect => "connection failed".into(),
            Failure::Timeout => "timed out".into(),
            Failure::Status(s) => format!("HTTP {s}"),
            Failure::Malformed => "malformed answer".into(),
            Failure::Other => "transport error".into(),
        }
    }

    fn of(e: &reqwest::Error) -> Failure {
        if e.is_timeout() {
            Failure::Timeout
        } else if e.is_connect() {
            Failure::Connect
        } else if e.is_decode() {
            Failure::Malformed
        } else {
            Failure::Other
        }
    }
}

/// Every URL tried failed (or a submission's outcome is unknown). `reason` names each
/// URL by its position in the list only (`URL #2: timed out`): it may reach a client in
/// an error, where even a host is internal detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolError {
    /// What failed, per URL tried.
    pub reason: String,
    /// Whether any URL may have received the request: for a submission, its outcome is
    /// unknown and must be reconciled by id.
    pub may_have_reached: bool,
}

#[derive(Default)]
struct State {
    failures: u32,
    last_error: Option<String>,
    down_since: Option<Instant>,
}

struct Endpoint {
    url: String,
    label: String,
    state: Mutex<State>,
}

/// Node URLs of one chain in configured order (the first is preferred), one HTTP client.
pub struct RpcPool {
    endpoints: Vec<Endpoint>,
    http: reqwest::Client,
    header: Option<(String, String)>,
    retry_down_after: Duration,
    empty_answer_ok: bool,
}

impl std::fmt::Debug for RpcPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let labels: Vec<&str> = self.endpoints.iter().map(|e| e.label.as_str()).collect();
        f.debug_struct("RpcPool")
            .field("endpoints", &labels)
            .finish()
    }
}

/// `host:port` of `url` (the scheme's port when it names none); `invalid url` when it
/// does not parse. Providers put keys in userinfo, paths and queries: none is kept.
pub fn redact(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port_or_known_default()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => "invalid url".into(),
        },
        Err(_) => "invalid url".into(),
    }
}

impl RpcPool {
    /// A pool of `urls` (at least one), each request giving up after `timeout`.
    pub fn new(urls: Vec<String>, timeout: Duration) -> Result<Self, String> {
        if urls.is_empty() {
            return Err("no RPC URL given".into());
        }
        Ok(Self::of(urls, timeout))
    }

    /// A pool of one URL.
    pub fn single(url: String, timeout: Duration) -> Self {
        Self::of(vec![url], timeout)
    }

    fn of(urls: Vec<String>, timeout: Duration) -> Self {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .unwrap_or_default();
        RpcPool {
            endpoints: urls
                .into_iter()
                .map(|url| Endpoint {
                    label: redact(&url),
                    url: url.trim_end_matches('/').to_string(),
                    state: Mutex::new(State::default()),
                })
                .collect(),
            http,
            header: None,
            retry_down_after: DEFAULT_RETRY_DOWN_AFTER,
            empty_answer_ok: false,
        }
    }

    /// Sends header `name: value` with every request (TRON's `TRON-PRO-API-KEY`).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.header = Some((name.into(), value.into()));
        self
    }

    /// An empty 2xx body is an answer (`null`), not a garbled one: java-tron answers some
    /// calls with nothing. A JSON-RPC answer is never empty.
    pub fn allow_empty_answer(mut self) -> Self {
        self.empty_answer_ok = true;
        self
    }

    /// How long a failed URL waits behind the healthy ones (default 30 s).
    pub fn with_retry_down_after(mut self, d: Duration) -> Self {
        self.retry_down_after = d;
        self
    }

    /// The first URL (the preferred one).
    pub fn first_url(&self) -> &str {
        &self.endpoints[0].url
    }

    /// Each URL's health, in configured order, redacted.
    pub fn health(&self) -> Vec<RpcEndpointHealth> {
        self.endpoints
            .iter()
            .map(|e| {
                let s = e.state.lock().unwrap_or_else(|p| p.into_inner());
                RpcEndpointHealth {
                    endpoint: e.label.clone(),
                    healthy: s.down_since.is_none(),
                    consecutive_failures: s.failures,
                    last_error: s.last_error.clone(),
                }
            })
            .collect()
    }

    /// Indices to try: URLs up (or down for longer than `retry_down_after`) in configured
    /// order, then the others, longest down first.
    fn order(&self) -> Vec<usize> {
        let now = Instant::now();
        let mut up = Vec::new();
        let mut down = Vec::new();
        for (i, e) in self.endpoints.iter().enumerate() {
            let s = e.state.lock().unwrap_or_else(|p| p.into_inner());
            match s.down_since {
                Some(t) if now.duration_since(t) < self.retry_down_after => down.push((t, i)),
                _ => up.push(i),
            }
        }
        down.sort();
        up.extend(down.into_iter().map(|(_, i)| i));
        up
    }

    fn mark(&self, i: usize, failure: Option<&Failure>) {
        let mut s = self.endpoints[i]
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match failure {
            None => {
                s.failures = 0;
                s.down_since = None;
            }
            Some(f) => {
                s.failures = s.failures.saturating_add(1);
                s.last_error = Some(f.words());
                s.down_since = Some(Instant::now());
            }
        }
    }

    async fn post_one(&self, i: usize, path: &str, body: &Value) -> Result<(u16, Value), Failure> {
        let mut req = self
            .http
            .post(format!("{}{path}", self.endpoints[i].url))
            .json(body);
        if let Some((k, v)) = &self.header {
            req = req.header(k.as_str(), v.as_str());
        }
        let resp = req.send().await.map_err(|e| Failure::of(&e))?;
        let status = resp.status().as_u16();
        if status >= 500 || status == 429 {
            return Err(Failure::Status(status));
        }
        let bytes = resp.bytes().await.map_err(|e| Failure::of(&e))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return if self.empty_answer_ok {
                Ok((status, Value::Null))
            } else {
                Err(Failure::Malformed)
            };
        }
        match serde_json::from_slice(&bytes) {
            Ok(v) => Ok((status, v)),
            // A 4xx in words (a gateway's "unauthorized"): the answer, not a garbled one.
            Err(_) if status >= 300 => Ok((
                status,
                Value::String(String::from_utf8_lossy(&bytes).chars().take(300).collect()),
            )),
            Err(_) => Err(Failure::Malformed),
        }
    }

    /// Posts `body` as JSON to `path` below a URL and returns the HTTP status and the JSON
    /// answer (a non-JSON 3xx/4xx body as a JSON string; an empty body as `null` when
    /// [`RpcPool::allow_empty_answer`]), moving to the next URL as the module documents.
    /// `submission`: the request sends something (a transaction), so it is not re-posted
    /// once it may have reached a node.
    pub async fn post(
        &self,
        path: &str,
        body: &Value,
        submission: bool,
    ) -> Result<(u16, Value), PoolError> {
        let mut tried = Vec::new();
        let mut reached = false;
        for i in self.order() {
            match self.post_one(i, path, body).await {
                Ok(v) => {
                    self.mark(i, None);
                    return Ok(v);
                }
                Err(f) => {
                    self.mark(i, Some(&f));
                    // By position, not host: this text can reach a client (a
                    // RAIL_NOT_READY reason); readiness details name the hosts.
                    tried.push(format!("URL #{}: {}", i + 1, f.words()));
                    reached |= f.may_have_reached();
                    if submission && f.may_have_reached() {
                        break;
                    }
                }
            }
        }
        Err(PoolError {
            reason: tried.join("; "),
            may_have_reached: reached,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_keeps_host_and_port_only() {
        assert_eq!(
            redact("https://user:key@polygon.example/v3/SECRET?api-key=x"),
            "polygon.example:443"
        );
        assert_eq!(redact("http://127.0.0.1:8545/"), "127.0.0.1:8545");
        assert_eq!(redact("not a url"), "invalid url");
    }

    fn closed_port() -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        format!("http://k:secret@127.0.0.1:{port}/key")
    }

    #[tokio::test]
    async fn a_refused_submission_moves_on_and_the_reason_names_positions_not_hosts() {
        let pool =
            RpcPool::new(vec![closed_port(), closed_port()], Duration::from_secs(2)).unwrap();
        let e = pool
            .post("", &serde_json::json!({}), true)
            .await
            .unwrap_err();
        assert_eq!(
            e.reason, "URL #1: connection failed; URL #2: connection failed",
            "never sent, so tried on both"
        );
        assert!(!e.may_have_reached);
        assert!(pool.health().iter().all(|h| !h.healthy));
    }

    #[test]
    fn a_down_url_is_tried_after_the_healthy_ones_until_its_wait_passes() {
        let pool = RpcPool::new(
            vec![
                "http://a:1".into(),
                "http://b:2".into(),
                "http://c:3".into(),
            ],
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(pool.order(), vec![0, 1, 2]);
        pool.mark(0, Some(&Failure::Timeout));
        assert_eq!(pool.order(), vec![1, 2, 0]);
        let h = pool.health();
        assert!(!h[0].healthy && h[1].healthy);
        assert_eq!(h[0].consecutive_failures, 1);
        assert_eq!(h[0].last_error.as_deref(), Some("timed out"));
        pool.mark(0, None);
        assert_eq!(pool.order(), vec![0, 1, 2]);
        let pool = pool.with_retry_down_after(Duration::ZERO);
        pool.mark(1, Some(&Failure::Status(503)));
        assert_eq!(pool.order(), vec![0, 1, 2], "its wait has passed");
    }
}
