//! The HTTP listener: what a connection may cost the server before it is dropped.
//!
//! `axum::serve` accepts every connection and waits on each for as long as the client
//! likes, so a few hundred sockets that send a header byte a minute (slowloris) hold the
//! server's file descriptors and tasks forever. This accept loop bounds that:
//!
//! - **Header-read timeout**: a connection that has not sent a complete request head
//!   within `header_read_timeout_ms` of connecting (or, kept alive, of its last
//!   response) is closed.
//! - **Request timeout**: a request whose handler has not answered within
//!   `request_timeout_ms` gets `408 REQUEST_TIMEOUT`. A money-moving request cut short
//!   this way either committed or did not, never half (every engine decision is one
//!   batch); replaying it with the same `Idempotency-Key` tells which.
//! - **Connection cap**: at most `max_connections` connections are served at once; past
//!   that the loop stops accepting, and new connections wait in the kernel's backlog
//!   until one closes.
//!
//! Shutdown is graceful: the loop stops accepting and in-flight requests finish (at most
//! `shutdown_grace_ms`).

use crate::error::ApiError;
use axum::Router;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Connection limits. Every field has a default ([`ServeLimits::default`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    /// Time a client has to send a complete request head.
    pub header_read_timeout_ms: u64,
    /// Time a request's handler has to answer.
    pub request_timeout_ms: u64,
    /// Connections served at once.
    pub max_connections: usize,
    /// Time in-flight requests get to finish at shutdown.
    pub shutdown_grace_ms: u64,
}

impl Default for ServeLimits {
    fn default() -> Self {
        ServeLimits {
            header_read_timeout_ms: 10_000,
            request_timeout_ms: 30_000,
            max_connections: 10_000,
            shutdown_grace_ms: 30_000,
        }
    }
}

impl ServeLimits {
    /// Refuses a zero header timeout, request timeout or connection limit (a zero
    /// `shutdown_grace_ms` is allowed: no grace).
    pub fn validate(&self) -> Result<(), String> {
        if self.header_read_timeout_ms == 0
            || self.request_timeout_ms == 0
            || self.max_connections == 0
        {
            return Err(
                "header_read_timeout_ms, request_timeout_ms and max_connections must be positive"
                    .into(),
            );
        }
        Ok(())
    }
}

/// Answers `408 REQUEST_TIMEOUT` when the handler takes longer than `timeout`.
async fn time_limit(timeout: Duration, req: Request, next: Next) -> Response {
    match tokio::time::timeout(timeout, next.run(req)).await {
        Ok(res) => res,
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "REQUEST_TIMEOUT",
            format!(
                "the request did not complete within {} s; replay it with the same Idempotency-Key to learn its outcome",
                timeout.as_secs_f64()
            ),
        )
        .into_response(),
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let timeout = Duration::from_millis(limits.request_timeout_ms);
    let router = router
        .layer(axum::middleware::from_fn(move |req, next| {
            time_limit(timeout, req, next)
        }))
        // The time limit's own answer gets the headers every response carries too.
        .layer(axum::middleware::map_response(
            crate::api::security_headers::apply,
        ));
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(limits.header_read_timeout_ms));
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_millis(limits.header_read_timeout_ms)));
    let builder = Arc::new(builder);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of descriptors or a connection reset before accept: not fatal.
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        // Each request knows its connection's peer (`ConnectInfo`): the sign-in
        // throttle keys on it (`crate::pages::client`).
        let service = TowerToHyperService::new(tower::util::MapRequest::new(
            router.clone(),
            move |mut req: axum::http::Request<hyper::body::Incoming>| {
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                req
            },
        ));
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let header_timeout = Duration::from_millis(limits.header_read_timeout_ms);
        tokio::spawn(async move {
            // hyper's header timeout starts once the protocol is known, i.e. after the
            // first bytes: a connection that sends nothing at all is bounded here.
            let mut first = [0u8; 1];
            match tokio::time::timeout(header_timeout, stream.peek(&mut first)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return drop(permit),
            }
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            // Errors are the client's doing (a reset, a timeout, a malformed head).
            let _ = watcher.watch(conn.into_owned()).await;
            drop(permit);
        });
    }
    drop(listener);
    let grace = Duration::from_millis(limits.shutdown_grace_ms);
    if tokio::time::timeout(grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("shutdown: connections still open after the grace period were dropped");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn start(
        limits: ServeLimits,
    ) -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let router = Router::new().route("/", get(|| async { "ok" })).route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                "late"
            }),
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, router, limits, async {
            let _ = rx.await;
        }));
        (addr, tx)
    }

    /// Reads until the peer closes or `within` passes; true when it closed.
    async fn closed_within(s: &mut tokio::net::TcpStream, within: Duration) -> bool {
        let mut buf = [0u8; 1024];
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, s.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return true,
                Ok(Ok(_)) => continue,
                Err(_) => return false,
            }
        }
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_after_the_header_timeout() {
        let limits = ServeLimits {
            header_read_timeout_ms: 300,
            ..ServeLimits::default()
        };
        let (addr, _stop) = start(limits).await;
        let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
        assert!(closed_within(&mut idle, Duration::from_secs(5)).await);
        // A half-sent head is closed too (slowloris).
        let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
            .await
            .unwrap();
        assert!(closed_within(&mut slow, Duration::from_secs(5)).await);
        // A prompt client is served.
        let mut ok = tokio::net::TcpStream::connect(addr).await.unwrap();
        ok.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        ok.read_to_string(&mut out).await.unwrap();
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    }

    #[tokio::test]
    async fn a_slow_handler_answers_408_with_the_error_body() {
        let limits = ServeLimits {
            request_timeout_ms: 200,
            ..ServeLimits::default()
        };
        let (addr, _stop) = start(limits).await;
        let res = reqwest::get(format!("http://{addr}/slow")).await.unwrap();
        assert_eq!(res.status(), 408);
        let body: serde_json::Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], "REQUEST_TIMEOUT");
    }

    #[tokio::test]
    async fn connections_past_the_cap_wait_for_a_free_slot() {
        let limits = ServeLimits {
            max_connections: 1,
            ..ServeLimits::default()
        };
        let (addr, _stop) = start(limits).await;
        let held = tokio::net::TcpStream::connect(addr).await.unwrap();
        // The second connection is in the backlog, not served, while the first is open.
        let mut second = tokio::net::TcpStream::connect(addr).await.unwrap();
        second
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 64];
        let early = tokio::time::timeout(Duration::from_millis(300), second.read(&mut buf)).await;
        assert!(early.is_err(), "served past the cap");
        drop(held);
        let mut out = String::new();
        tokio::time::timeout(Duration::from_secs(15), second.read_to_string(&mut out))
            .await
            .expect("served once a slot is free")
            .unwrap();
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    }
}
