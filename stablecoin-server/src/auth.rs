//! `X-API-Key` authentication (spec 5).
//!
//! Tenant keys (`svc_sk_live_` / `svc_sk_test_`) open the wallet, transfer, FX, escrow and
//! webhook endpoints; business keys (`live_sk_` / `test_sk_`) open only the checkout list.
//! The prefix selects live or sandbox mode. Keys are stored hashed by the engine; the
//! header value is never logged.

use crate::app::AppState;
use crate::error::ApiError;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use stablecoin_core::CoreError;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::engine::{AuthContext, KeyKind};

/// The header that carries the API key (HTTP header names are case-insensitive).
pub const API_KEY_HEADER: &str = "x-api-key";

/// The authenticated caller, put in the request extensions by the auth middleware.
#[derive(Clone, Debug)]
pub struct Caller(pub AuthContext);

impl Caller {
    /// The tenant the key belongs to: every read and write of the request is scoped to it.
    pub fn tenant(&self) -> &TenantId {
        &self.0.tenant
    }
    /// A test key: mutations are simulated or refused (spec 1 "Sandbox mode").
    pub fn is_sandbox(&self) -> bool {
        self.0.is_sandbox()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(missing_key)
    }
}

fn missing_key() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "MISSING_API_KEY",
        "the X-API-Key header is required",
    )
}

async fn authenticate(app: &AppState, raw: Option<HeaderValue>) -> Result<AuthContext, ApiError> {
    let Some(raw) = raw else {
        return Err(missing_key());
    };
    let malformed = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "MALFORMED_API_KEY",
            "X-API-Key is not a key: expected svc_sk_live_..., svc_sk_test_..., live_sk_... or test_sk_...",
        )
    };
    let secret = raw.to_str().map_err(|_| malformed())?.trim();
    if secret.is_empty() {
        return Err(missing_key());
    }
    if KeyKind::classify(secret).is_none() {
        return Err(malformed());
    }
    app.engine.authenticate(secret).await.map_err(|e| match e {
        CoreError::InvalidApiKey => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "INVALID_API_KEY",
            "the API key is unknown",
        ),
        other => ApiError::from(other),
    })
}

fn wrong_kind(expected: &str) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "KEY_KIND_NOT_ALLOWED",
        format!("this endpoint needs a {expected}"),
    )
}

/// Requires a tenant key (`svc_sk_live_` / `svc_sk_test_`).
pub async fn require_tenant_key(
    State(app): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    match authenticate(&app, req.headers().get(API_KEY_HEADER).cloned()).await {
        Ok(ctx) if ctx.kind == KeyKind::Tenant => {
            req.extensions_mut().insert(Caller(ctx));
            next.run(req).await
        }
        Ok(_) => wrong_kind(
            "tenant API key (svc_sk_live_... or svc_sk_test_...); business keys only open the checkout list",
        )
        .into_response(),
        Err(e) => e.into_response(),
    }
}

/// Requires a business key (`live_sk_` / `test_sk_`), as the checkout list documents (spec 5.3).
pub async fn require_business_key(
    State(app): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    match authenticate(&app, req.headers().get(API_KEY_HEADER).cloned()).await {
        Ok(ctx) if ctx.kind == KeyKind::Business => {
            req.extensions_mut().insert(Caller(ctx));
            next.run(req).await
        }
        Ok(_) => wrong_kind("business API key (live_sk_... or test_sk_...)").into_response(),
        Err(e) => e.into_response(),
    }
}
