//! Unauthenticated operational endpoints: health, metrics and the API description.

use super::types::*;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use stablecoin_core::ports::{RailId, ReadinessStatus};
use std::collections::BTreeMap;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// The OpenAPI document, serialized once when the router is built.
#[derive(Clone)]
pub struct OpenApiJson(pub Arc<String>);

fn status_name(s: ReadinessStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "DEGRADED".into())
}

/// Readiness as the engine reports it publicly: costly checks cached, URLs redacted.
async fn rail_readiness(app: &AppState) -> BTreeMap<String, RailReadiness> {
    app.engine
        .readiness_report()
        .await
        .into_iter()
        .map(|(name, r)| {
            let simulated = app.simulated_rails().iter().any(|id| id.name() == name);
            let rpc_endpoints = app
                .engine
                .rails()
                .find(|rail| rail.id().name() == name)
                .map(|rail| rail.rpc_endpoints())
                .unwrap_or_default()
                .into_iter()
                .map(|e| RpcEndpointStatus {
                    endpoint: e.endpoint,
                    healthy: e.healthy,
                    consecutive_failures: e.consecutive_failures,
                    last_error: e.last_error,
                })
                .collect();
            (
                name,
                RailReadiness {
                    status: status_name(r.status),
                    reasons: r.reasons,
                    simulated,
                    rpc_endpoints,
                },
            )
        })
        .collect()
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/health/live", tag = "health",
    responses((status = 200, description = "Alive", body = LiveResponse)))]
pub async fn live() -> Json<LiveResponse> {
    Json(LiveResponse {
        status: "ok".into(),
    })
}

/// Readiness per rail (fields `polygon`, `base`, `bsc`, `tron`, `solana`; spec 1.4, 1.5)
/// and of storage.
///
/// 200 when storage answers and this process's workers run, whatever the rails report
/// (a rail that is not READY makes only its own sends answer 503); 503 when storage does
/// not answer or the workers are STALLED. DISABLED means the rail is not configured.
/// Readiness does not certify separately deployed custody or deposit-scanner workers.
/// A real rail's check is cached for a few seconds, and reasons never carry a URL.
///
/// Anyone sees the statuses; the details (`rails` with each rail's reasons, and the
/// last reconciliation's counts) only a caller with `Authorization: Bearer
/// <metrics_token>`, and nobody on a server without a metrics token: they tell an
/// outsider how the service's money and nodes stand.
#[utoipa::path(get, path = "/health/ready", tag = "health",
    responses(
        (status = 200, description = "Serving; per-rail readiness", body = ReadinessResponse),
        (status = 503, description = "Storage unavailable or workers stalled", body = ReadinessResponse)))]
pub async fn ready(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let details = holds_metrics_token(&app, &headers);
    let workers = if app.config.run_workers {
        app.metrics.worker_health()
    } else {
        crate::metrics::WorkerHealth::Ok
    };
    let workers_ok = workers == crate::metrics::WorkerHealth::Ok;
    let rails = rail_readiness(&app).await;
    let storage_ok = app
        .storage
        .store
        .get(
            stablecoin_core::ports::kinds::kind::SERVER_META,
            "readiness-probe",
        )
        .await
        .is_ok();
    let field = |id: RailId| {
        rails
            .get(&id.name())
            .map(|r| r.status.clone())
            .unwrap_or_else(|| "DISABLED".into())
    };
    let body = ReadinessResponse {
        status: match (storage_ok, workers_ok) {
            (true, true) => "ok",
            (true, false) => "degraded",
            (false, _) => "unavailable",
        }
        .into(),
        mode: app.config.mode.as_str().into(),
        storage: if storage_ok { "READY" } else { "DEGRADED" }.into(),
        polygon: field(RailId::Evm(137)),
        base: field(RailId::Evm(8453)),
        bsc: field(RailId::Evm(56)),
        tron: field(RailId::Tron),
        solana: field(RailId::Solana),
        workers: if app.config.run_workers {
            workers.as_str()
        } else {
            "DISABLED"
        }
        .into(),
        rails: details.then_some(rails),
        reconciliation: details.then(|| {
            super::reconciliation::ReconciliationSummary::of(
                app.config.run_workers && app.config.reconciliation.enabled,
                app.engine.last_reconciliation().as_ref(),
            )
        }),
        node: details.then(|| NodeRole {
            id: app.leases.node().to_string(),
            singletons: app.leases.held().into_iter().map(|(job, _)| job).collect(),
        }),
    };
    let status = if storage_ok && workers_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(body)).into_response()
}

/// Whether the request carries `Authorization: Bearer <metrics_token>` of a server that
/// has one (compared in constant time). A server without a token has no such caller.
fn holds_metrics_token(app: &AppState, headers: &HeaderMap) -> bool {
    let Some(token) = &app.config.metrics_token else {
        return false;
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    given.as_bytes().ct_eq(token.expose().as_bytes()).into()
}

/// Prometheus metrics (text exposition format 0.0.4).
///
/// Public unless the server has a `metrics_token`; then only with
/// `Authorization: Bearer <token>` (401 otherwise).
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses(
        (status = 200, description = "Prometheus text", body = String, content_type = "text/plain"),
        (status = 401, description = "METRICS_TOKEN_REQUIRED: the server requires a bearer token", body = crate::error::ErrorBody)))]
pub async fn metrics(State(app): State<AppState>, headers: HeaderMap) -> Response {
    if app.config.metrics_token.is_some() && !holds_metrics_token(&app, &headers) {
        return crate::error::ApiError::new(
            StatusCode::UNAUTHORIZED,
            "METRICS_TOKEN_REQUIRED",
            "this server's /metrics needs Authorization: Bearer <metrics_token>",
        )
        .into_response();
    }
    let rails: Vec<(String, String)> = rail_readiness(&app)
        .await
        .into_iter()
        .map(|(name, r)| (name, r.status))
        .collect();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        app.metrics.render(&rails)
            + &stray_gauge(&app).await
            + &quarantine_gauge(&app).await
            + &super::sponsorship::budget_gauges(&app).await,
    )
        .into_response()
}

/// `stablecoin_stray_deposits{status}`, read from the store at scrape time: real money
/// at sandbox addresses that staff have not returned yet (issue #48). A gauge from the
/// records, not a counter, so it is right on every node and after a restart; an alert
/// on `status="held"` above 0 tells staff to look at `GET /admin/v1/stray-deposits`.
async fn stray_gauge(app: &AppState) -> String {
    use stablecoin_core::kernel::stray::StrayStatus;
    let mut out = String::from(
        "# HELP stablecoin_stray_deposits Real deposits to sandbox addresses not yet returned, by status.\n# TYPE stablecoin_stray_deposits gauge\n",
    );
    for status in [
        StrayStatus::Held,
        StrayStatus::Proposed,
        StrayStatus::Returning,
    ] {
        // A store error leaves the line out rather than report a false zero.
        if let Ok(n) = app.engine.count_stray_deposits(status).await {
            out.push_str(&format!(
                "stablecoin_stray_deposits{{status=\"{}\"}} {n}\n",
                status.as_str()
            ));
        }
    }
    out
}

/// The quarantine gauges ([`crate::metrics::render_quarantine`]); a store error leaves
/// them out rather than report a false zero.
async fn quarantine_gauge(app: &AppState) -> String {
    match app.engine.quarantine_totals().await {
        Ok(t) => crate::metrics::render_quarantine(&t),
        Err(e) => {
            tracing::warn!(error = %e, "quarantine gauges unread");
            String::new()
        }
    }
}

/// This API description (OpenAPI 3.1, interface version 1.0.1).
#[utoipa::path(get, path = "/openapi.json", tag = "health",
    responses((status = 200, description = "The OpenAPI document", body = Object)))]
pub async fn openapi(Extension(doc): Extension<OpenApiJson>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        doc.0.as_str().to_string(),
    )
        .into_response()
}
