//! A JSON-RPC 2.0 server over a [`LiteSvmRpc`] (axum, loopback), answering the methods
//! the Solana rail calls with the validator's JSON shapes, so
//! [`JsonRpcClient`](crate::solana::JsonRpcClient) and the rail are exercised end to end
//! over HTTP. Transport faults of the kit (node down, injected drop or lost response)
//! answer HTTP 502 with a non-JSON body, as a broken upstream connection would.

use super::LiteSvmRpc;
use crate::solana::rpc::RpcError;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;

/// A running server; stops when dropped.
#[derive(Debug)]
pub struct RpcServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl RpcServer {
    /// Binds `127.0.0.1:0` and serves `rpc` until dropped.
    pub async fn start(rpc: Arc<LiteSvmRpc>) -> std::io::Result<RpcServer> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let app = Router::new().route("/", post(handle)).with_state(rpc);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(RpcServer { addr, task })
    }

    /// The loopback address and port the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn error_object(id: Value, code: i64, message: String, data: Option<Value>) -> Value {
    let mut err = json!({"code": code, "message": message});
    if let Some(d) = data {
        err["data"] = d;
    }
    json!({"jsonrpc": "2.0", "error": err, "id": id})
}

/// One answer, or `None` when the kit reports a transport fault (node down, injected
/// drop or lost response): the HTTP exchange then fails as a real one would.
fn answer(rpc: &LiteSvmRpc, req: &Value) -> Option<Value> {
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let Some(method) = req.get("method").and_then(Value::as_str) else {
        return Some(error_object(id, -32600, "Invalid request".into(), None));
    };
    let params = req.get("params").cloned().unwrap_or(json!([]));
    Some(match rpc.handle_json(method, &params) {
        Ok(result) => json!({"jsonrpc": "2.0", "result": result, "id": id}),
        Err(RpcError::Server {
            code,
            message,
            data,
        }) => error_object(id, code, message, data),
        Err(RpcError::Transport { .. }) => return None,
        Err(e) => error_object(id, -32603, format!("Internal error: {e}"), None),
    })
}

async fn handle(State(rpc): State<Arc<LiteSvmRpc>>, body: String) -> Response {
    let parsed: Value = match serde_json::from_str(&body) {
        Ok(v) => v,
        Err(_) => {
            let e = error_object(Value::Null, -32700, "Parse error".into(), None);
            return axum::Json(e).into_response();
        }
    };
    let out = match &parsed {
        Value::Array(batch) => batch
            .iter()
            .map(|r| answer(&rpc, r))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array),
        single => answer(&rpc, single),
    };
    match out {
        Some(v) => axum::Json(v).into_response(),
        // What a client sees when the connection breaks behind a proxy.
        None => (StatusCode::BAD_GATEWAY, "upstream connection lost").into_response(),
    }
}
