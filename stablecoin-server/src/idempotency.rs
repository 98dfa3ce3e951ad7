//! HTTP idempotency (API-CONVENTIONS "Idempotency").
//!
//! Every POST may carry `Idempotency-Key` (1-255 printable ASCII). For a tenant and key:
//!
//! 1. While a request with the key runs in this process, another one gets
//!    `409 IDEMPOTENCY_KEY_IN_USE` (an in-process in-flight set).
//! 2. The first successful (2xx) response (status, `Location` and the exact body bytes) is
//!    stored through the `Store` as an `IdempotencyRecord` under the tenant, keyed
//!    `"http\u{1f}" + key` (the separator cannot occur in a client key, so it never meets
//!    an engine's own record for the same key: the escrow and checkout engines keep
//!    theirs beside it). Later requests with the same key and the same request (method,
//!    path, JSON body compared after canonicalisation) get it replayed byte for byte with
//!    `Idempotent-Replayed: true`; with another request, `422 IDEMPOTENCY_KEY_REUSED`.
//!    A key belongs to the first request that used it, whichever route: a key with no
//!    HTTP record but a record of a money route (point 4) is also `422`, and so is a
//!    money route's key that another route recorded.
//! 3. Errors are not stored: a failed request changed nothing (engine batches are atomic),
//!    so retrying it with the same key runs it again.
//! 4. The money endpoints (the routes marked [`RouteKind::Money`] where they are
//!    registered, see [`crate::route_kind`]: fund, send on every chain, withdraw, swap)
//!    keep no HTTP record: they pass the key to the engine, whose
//!    idempotency record is committed in the SAME batch as the operation, and that record
//!    alone answers duplicates. One commit per keyed request (not a second one for the
//!    HTTP record after it), and one request fingerprint: the engine's, over the
//!    operation's scope (kind and chain) and its typed request. So `"amount": "10"` and
//!    `"amount": "10.00"` are the same request, and a key used on two money routes is
//!    `IDEMPOTENCY_KEY_REUSED`. A replay is the handler's answer built from the first
//!    result (same status, `Location` and body) with `Idempotent-Replayed: true`
//!    ([`stablecoin_core::kernel::idempotency::observe_replay`]). It is also what makes duplicates
//!    safe across processes: on several nodes sharing one database the in-flight set does
//!    not see the other node, but the second commit fails on the engine's record and
//!    replays the first result, so money moves once.
//! 5. Sandbox (test-key) requests store nothing (spec 1: no sandbox store), so they are
//!    protected against concurrent duplicates but not replayed.
//! 6. A response that carries a secret (webhook endpoint create and rotate) is never
//!    stored: its handler puts a [`ReplayBody`] on it, the same answer without the
//!    secret, and that is what is stored and replayed (same status, `Idempotent-Replayed:
//!    true`). A client that lost the first answer gets the endpoint, not its secret, and
//!    rotates it; the secret stays shown once.
//!
//! The key check, the request fingerprint (with method and path as its operation) and
//! the comparison with a stored record are the kernel's
//! (`stablecoin_core::kernel::idempotency`), the same code the products' own records
//! use. What stays here is HTTP's: the in-flight set (point 1), the record of response
//! bytes committed after the handler (only this layer has them; the products record
//! their typed result in their own batch), the route kinds that decide which record
//! answers, sandbox and secret-bearing responses.
//!
//! Records live until the retention job purges them (`[retention] idempotency_hours`,
//! at least 24 hours, 72 by default), on every store.

use crate::auth::Caller;
use crate::error::ApiError;
use crate::extract::body_error;
use crate::route_kind::RouteKind;
use crate::state::AppState;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use stablecoin_core::kernel::idempotency::{
    Recorded, observe_replay, recorded, validate_idempotency_key,
};
use stablecoin_core::ports::{Batch, IdempotencyRecord, StoreError};

/// The response header saying whether a keyed response was replayed (`true`) or just
/// produced (`false`).
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// Set by a handler on a response whose body carries a secret: the body an idempotent
/// replay answers instead (the same answer without the secret). The response's own body
/// is then never stored.
#[derive(Clone, Debug)]
pub struct ReplayBody(pub axum::body::Bytes);

pub use crate::in_flight::{HEADER, InFlight, InFlightGuard};

/// The answer when a record already holds the key: `422 IDEMPOTENCY_KEY_REUSED` (another
/// route's record), or the storage error; `None` when none does.
fn refusal(found: Result<Option<IdempotencyRecord>, StoreError>) -> Option<Response> {
    match found {
        Ok(None) => None,
        Ok(Some(_)) => {
            Some(ApiError::from(stablecoin_core::CoreError::IdempotencyKeyReused).into_response())
        }
        Err(e) => {
            Some(ApiError::from(stablecoin_core::CoreError::Storage(e.to_string())).into_response())
        }
    }
}

fn store_key(key: &str) -> String {
    format!("http\u{1f}{key}")
}

/// Hash of what identifies a request: method, path and the body (canonical JSON when it
/// parses, so formatting and key order do not matter; raw bytes otherwise). The
/// kernel's fingerprint, with method and path as the operation.
fn fingerprint(method: &Method, path: &str, body: &[u8]) -> String {
    let canonical = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| serde_json::to_vec(&v).ok())
        .unwrap_or_else(|| body.to_vec());
    let operation = format!("{}\n{path}", method.as_str());
    stablecoin_core::kernel::idempotency::fingerprint(&operation, &canonical)
}

/// The stored response (status, body, `Location`) answered again.
fn replay(response: &serde_json::Value) -> Option<Response> {
    let status = StatusCode::from_u16(response.get("status")?.as_u64()? as u16).ok()?;
    let body = response.get("body")?.as_str()?.to_string();
    let mut res = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .header(REPLAYED_HEADER, "true");
    if let Some(loc) = response.get("location").and_then(|l| l.as_str()) {
        res = res.header(header::LOCATION, loc);
    }
    res.body(Body::from(body)).ok()
}

/// The middleware; route it inside the auth middleware (it needs the caller).
pub async fn idempotency(State(app): State<AppState>, req: Request, next: Next) -> Response {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let Some(raw) = req.headers().get(HEADER) else {
        return next.run(req).await;
    };
    let invalid = || {
        ApiError::bad_request(
            "INVALID_IDEMPOTENCY_KEY",
            "Idempotency-Key must be 1 to 255 printable ASCII characters",
        )
        .with_param("Idempotency-Key")
        .into_response()
    };
    let Ok(key) = raw.to_str().map(str::to_string) else {
        return invalid();
    };
    if validate_idempotency_key(&key).is_err() {
        return invalid();
    }
    let Some(caller) = req.extensions().get::<Caller>().cloned() else {
        return next.run(req).await;
    };
    // The router's mark on the route (set before this middleware runs).
    let kind = RouteKind::of(&req);
    let tenant = caller.tenant().0.clone();
    let (parts, body) = req.into_parts();
    let bytes = match to_bytes(body, app.config.body_limit_bytes).await {
        Ok(b) => b,
        Err(_) => return body_error(StatusCode::PAYLOAD_TOO_LARGE).into_response(),
    };
    let Some(_guard) = app.inflight.try_acquire(&tenant, &key) else {
        return ApiError::from(stablecoin_core::CoreError::IdempotencyKeyInUse).into_response();
    };
    let sandbox = caller.is_sandbox();
    if !sandbox && kind == Some(RouteKind::Money) {
        // The engine records the key in the operation's own commit (point 4). Another
        // route's record of the key (a read, not a commit) makes it someone else's.
        let found = app
            .storage
            .store
            .idempotency(&tenant, &store_key(&key))
            .await;
        if let Some(refused) = refusal(found) {
            return refused;
        }
        let req = Request::from_parts(parts, Body::from(bytes));
        let (res, replayed) = observe_replay(next.run(req)).await;
        let (mut rparts, rbody) = res.into_parts();
        if rparts.status.is_success() {
            if replayed {
                app.metrics.replay();
            }
            rparts.headers.insert(
                REPLAYED_HEADER,
                HeaderValue::from_static(if replayed { "true" } else { "false" }),
            );
        }
        return Response::from_parts(rparts, rbody);
    }
    // The money routes never need it: the engine's fingerprint is theirs.
    let print = fingerprint(&parts.method, parts.uri.path(), &bytes);
    let store = &app.storage.store;
    if !sandbox {
        // The kernel's comparison: the same request's record, another request's, or none.
        match recorded::<serde_json::Value>(&**store, &tenant, &store_key(&key), &print).await {
            Ok(Recorded::Same(response)) => {
                if let Some(res) = replay(&response) {
                    app.metrics.replay();
                    return res;
                }
                return ApiError::internal("stored idempotent response is unreadable")
                    .into_response();
            }
            Ok(Recorded::Other) => {
                return ApiError::from(stablecoin_core::CoreError::IdempotencyKeyReused)
                    .into_response();
            }
            // A money route's (the engine's record under the bare key)? Not asked on a
            // route whose own engine records the bare key ([`RouteKind::EngineRecorded`]:
            // escrow creation): that engine decides (it replays its record when the HTTP
            // one was lost).
            Ok(Recorded::Nothing) if kind == Some(RouteKind::EngineRecorded) => {}
            Ok(Recorded::Nothing) => {
                if let Some(refused) = refusal(store.idempotency(&tenant, &key).await) {
                    return refused;
                }
            }
            Err(e) => {
                return ApiError::from(stablecoin_core::CoreError::Storage(e.to_string()))
                    .into_response();
            }
        }
    }
    let res = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if sandbox || !res.status().is_success() {
        return res;
    }
    let (mut rparts, rbody) = res.into_parts();
    let rbytes = match to_bytes(rbody, usize::MAX).await {
        Ok(b) => b,
        Err(_) => return ApiError::internal("response body failed").into_response(),
    };
    let stored = match rparts.extensions.remove::<ReplayBody>() {
        Some(ReplayBody(without_secret)) => without_secret,
        None => rbytes.clone(),
    };
    if let Ok(text) = std::str::from_utf8(&stored) {
        let mut response = serde_json::json!({
            "status": rparts.status.as_u16(),
            "body": text,
        });
        if let Some(loc) = rparts
            .headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
        {
            response["location"] = loc.into();
        }
        let record = IdempotencyRecord {
            tenant: tenant.clone(),
            key: store_key(&key),
            request_hash: print,
            response,
            created_at: app.engine.ports().clock.now(),
        };
        match store
            .commit(Batch {
                idempotency: Some(record),
                ..Default::default()
            })
            .await
        {
            Ok(_) | Err(StoreError::IdempotencyExists { .. }) => {}
            Err(e) => tracing::warn!(error = %e, "could not store the idempotent response"),
        }
    }
    rparts
        .headers
        .insert(REPLAYED_HEADER, HeaderValue::from_static("false"));
    Response::from_parts(rparts, Body::from(rbytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_ignores_formatting_not_content() {
        let a = fingerprint(&Method::POST, "/v1/x", b"{\"a\":1,\"b\":2}");
        let b = fingerprint(&Method::POST, "/v1/x", b"{ \"b\": 2, \"a\": 1 }");
        let c = fingerprint(&Method::POST, "/v1/x", b"{\"a\":1,\"b\":3}");
        let d = fingerprint(&Method::POST, "/v1/y", b"{\"a\":1,\"b\":2}");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }
}
