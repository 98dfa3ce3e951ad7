//! Test support, never for production (features `evm-test`, `solana-test`): a loopback
//! HTTP proxy in front of a node (Anvil, the Solana JSON-RPC server) that fails, hangs,
//! garbles or swallows answers on demand, for the RPC failover tests (issue #49).
//!
//! It listens on `127.0.0.1:0` only and stops when dropped (a hung request is released
//! then too). [`FaultProxy::start`] forwards every request to the upstream URL as is
//! (a JSON-RPC endpoint: whatever path the client used, and test URLs carry a fake key
//! in their path to check it never shows); [`FaultProxy::start_api`] keeps the request's
//! path below the upstream root (TRON's `/wallet/*`).

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// What the proxy does with each request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forwards and answers what the node answered.
    Forward,
    /// Answers HTTP 503 without forwarding.
    Unavailable,
    /// Never answers (until the proxy is dropped): past any client timeout.
    Hang,
    /// Answers HTTP 200 with a cut-short JSON body, without forwarding.
    Malformed,
    /// Forwards requests of this JSON-RPC method, then answers HTTP 502 instead of the
    /// node's answer: the node acted, the client never hears of it. Other methods are
    /// forwarded normally.
    SwallowAnswerOf(String),
    /// Solana: the next `n` `sendTransaction` requests are not forwarded but answered
    /// with the transaction's own signature, as a node that accepts a transaction and
    /// then loses it on the way to the leader (dropped under congestion); later ones,
    /// and every other method, are forwarded.
    #[cfg(feature = "solana")]
    DropSolanaSends(u32),
}

struct Shared {
    upstream: String,
    keep_path: bool,
    fault: Mutex<Fault>,
    methods: Mutex<Vec<String>>,
    http: reqwest::Client,
    stop: watch::Receiver<bool>,
}

/// A running proxy; stops when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// Binds `127.0.0.1:0` and proxies to the JSON-RPC endpoint `upstream` with `fault`.
    pub async fn start(upstream: &str, fault: Fault) -> std::io::Result<FaultProxy> {
        Self::spawn(upstream, fault, false).await
    }

    /// Binds `127.0.0.1:0` and proxies each request to the same path below the HTTP API
    /// root `upstream` (TRON's `/wallet/*`), with `fault` (for
    /// [`Fault::SwallowAnswerOf`], name the path, e.g. `/wallet/broadcasthex`).
    pub async fn start_api(upstream: &str, fault: Fault) -> std::io::Result<FaultProxy> {
        Self::spawn(upstream, fault, true).await
    }

    async fn spawn(upstream: &str, fault: Fault, keep_path: bool) -> std::io::Result<FaultProxy> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (stop, stop_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            keep_path,
            fault: Mutex::new(fault),
            methods: Mutex::new(Vec::new()),
            http: reqwest::Client::new(),
            stop: stop_rx,
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FaultProxy {
            addr,
            shared,
            stop,
            task,
        })
    }

    /// A URL of the proxy as a provider would hand it out: credentials, a key in the path
    /// and in the query (none may show in readiness).
    /// For [`FaultProxy::start_api`], the root with credentials only (the API's paths go
    /// below it).
    pub fn url(&self) -> String {
        if self.shared.keep_path {
            return format!("http://user:pass-secret@{}", self.addr);
        }
        format!(
            "http://user:pass-secret@{}/v3/path-secret?api-key=query-secret",
            self.addr
        )
    }

    /// `127.0.0.1:PORT`: how readiness names this proxy's URL.
    pub fn host_port(&self) -> String {
        self.addr.to_string()
    }

    /// Changes what the proxy does from the next request on.
    pub fn set(&self, fault: Fault) {
        *self.shared.fault.lock().unwrap_or_else(|p| p.into_inner()) = fault;
    }

    /// The JSON-RPC method of every request the proxy received, in order (for
    /// [`FaultProxy::start_api`], its path; `?` for a body that is not a JSON-RPC
    /// request).
    pub fn methods(&self) -> Vec<String> {
        self.shared
            .methods
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        self.task.abort();
    }
}

async fn handle(State(s): State<Arc<Shared>>, uri: Uri, body: Bytes) -> Response {
    let method = if s.keep_path {
        uri.path().to_string()
    } else {
        serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| "?".into())
    };
    s.methods
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(method.clone());
    let fault = {
        let mut f = s.fault.lock().unwrap_or_else(|p| p.into_inner());
        #[cfg(feature = "solana")]
        if let Fault::DropSolanaSends(n) = &mut *f
            && method == "sendTransaction"
            && *n > 0
        {
            *n -= 1;
            return dropped_solana_send(&body);
        }
        f.clone()
    };
    match fault {
        Fault::Unavailable => {
            (StatusCode::SERVICE_UNAVAILABLE, "upstream unavailable").into_response()
        }
        Fault::Malformed => (
            StatusCode::OK,
            [("content-type", "application/json")],
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":",
        )
            .into_response(),
        Fault::Hang => {
            let mut stop = s.stop.clone();
            // Released when the proxy is dropped; a minute bounds it otherwise.
            let _ = tokio::time::timeout(Duration::from_secs(60), stop.wait_for(|v| *v)).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        Fault::Forward => forward(&s, &uri, body).await,
        #[cfg(feature = "solana")]
        Fault::DropSolanaSends(_) => forward(&s, &uri, body).await,
        Fault::SwallowAnswerOf(m) => {
            let answer = forward(&s, &uri, body).await;
            if m == method {
                drop(answer);
                (StatusCode::BAD_GATEWAY, "upstream connection lost").into_response()
            } else {
                answer
            }
        }
    }
}

/// The answer of a node that accepted a Solana transaction (its first signature, read
/// from the base64 wire bytes of the request) and then dropped it.
#[cfg(feature = "solana")]
fn dropped_solana_send(body: &[u8]) -> Response {
    use base64::Engine as _;
    let req: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let wire = req["params"][0]
        .as_str()
        .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
        .unwrap_or_default();
    // One compact-u16 byte counts the signatures (fewer than 128), then 64 bytes each.
    let Some(sig) = wire
        .get(1..65)
        .and_then(|b| solana_signature::Signature::try_from(b).ok())
    else {
        return (StatusCode::BAD_REQUEST, "not a transaction").into_response();
    };
    let answer = serde_json::json!({"jsonrpc": "2.0", "result": sig.to_string(), "id": req["id"]});
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        answer.to_string(),
    )
        .into_response()
}

async fn forward(s: &Shared, uri: &Uri, body: Bytes) -> Response {
    let url = if s.keep_path {
        format!("{}{}", s.upstream, uri.path())
    } else {
        s.upstream.clone()
    };
    let sent = s
        .http
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await;
    let Ok(resp) = sent else {
        return (StatusCode::BAD_GATEWAY, "upstream unreachable").into_response();
    };
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    match resp.bytes().await {
        Ok(b) => (status, [("content-type", "application/json")], b).into_response(),
        Err(_) => (StatusCode::BAD_GATEWAY, "upstream answer lost").into_response(),
    }
}
