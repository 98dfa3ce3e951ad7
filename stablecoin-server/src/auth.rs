//! `X-API-Key` authentication (spec 5).
//!
//! Tenant keys (`svc_sk_live_` / `svc_sk_test_`) open the wallet, transfer, FX, escrow and
//! webhook endpoints; business keys (`live_sk_` / `test_sk_`) open only the checkout list.
//! The prefix selects live or sandbox mode. Keys are stored hashed by the engine; the
//! header value is never logged.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use stablecoin_core::CoreError;
use stablecoin_core::engine::{AuthContext, KeyKind, StaffIdentity};

/// The header that carries the API key (HTTP header names are case-insensitive).
pub const API_KEY_HEADER: &str = "x-api-key";

pub use crate::caller::Caller;
use crate::caller::missing_key;

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

/// The staff identity recorded for actions taken with the shared admin token (staff
/// accounts record their own `stf_...` id). One identity, however many people hold the
/// token: it never approves its own two-person proposal.
pub const ADMIN_TOKEN_STAFF: &str = stablecoin_core::engine::STAFF_ADMIN_TOKEN;

/// Who is acting on a staff route, put in the request extensions by
/// [`require_admin_token`]: a staff account, or the shared admin token. Built only from
/// a proven credential ([`Staff::admin_token`], [`Staff::account`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staff {
    /// Recorded as the actor of every staff action: the account's `stf_...` id, or
    /// [`ADMIN_TOKEN_STAFF`] for the shared token.
    pub id: String,
    /// For humans: the account's name, or `admin token`.
    pub name: String,
    identity: StaffIdentity,
}

impl Staff {
    /// The shared admin token, once the caller proved it.
    pub fn admin_token() -> Staff {
        Staff::of(StaffIdentity::admin_token())
    }

    /// A staff account, once the caller proved it (its secret, or a session opened with
    /// it) and it is active.
    pub fn account(a: &stablecoin_core::engine::StaffAccount) -> Staff {
        Staff::of(a.identity())
    }

    fn of(identity: StaffIdentity) -> Staff {
        Staff {
            id: identity.id().to_string(),
            name: identity.name().to_string(),
            identity,
        }
    }

    /// The engines' proof of who is acting.
    pub fn identity(&self) -> &StaffIdentity {
        &self.identity
    }

    /// The escrow engine's actor for this staff member (ids are validated ASCII).
    pub fn actor(&self) -> Result<stablecoin_escrow::StaffActor, ApiError> {
        stablecoin_escrow::StaffActor::from_identity(&self.identity).map_err(ApiError::from)
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Staff {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Staff>()
            .cloned()
            .ok_or_else(admin_token_required)
    }
}

/// True when `given` is the configured token, in constant time: both sides are hashed
/// first, so neither the content nor the length of the token shows in the timing.
fn admin_token_matches(given: &str, token: &str) -> bool {
    use sha2::{Digest, Sha256};
    use subtle::ConstantTimeEq;
    let a = Sha256::digest(given.as_bytes());
    let b = Sha256::digest(token.as_bytes());
    a.as_slice().ct_eq(b.as_slice()).into()
}

fn admin_token_required() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "ADMIN_TOKEN_REQUIRED",
        "this staff route needs Authorization: Bearer <admin.token> or a staff account's secret (stf_sk_...)",
    )
}

fn admin_disabled() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "ADMIN_DISABLED",
        "this server has no admin token ([admin] token): staff routes are closed",
    )
}

/// Establishes who a staff bearer credential is: a staff account's secret
/// (`stf_sk_...`; an unknown one is 401 ADMIN_TOKEN_REQUIRED, a disabled account 401
/// STAFF_ACCOUNT_DISABLED) or the configured admin token (identity `admin-token`;
/// anything else 401 ADMIN_TOKEN_REQUIRED). Used by the staff routes and reusable by any
/// staff sign-in (a web console), so every entrance checks credentials the same way.
pub async fn authenticate_staff(app: &AppState, bearer: &str) -> Result<Staff, ApiError> {
    let bearer = bearer.trim();
    if stablecoin_core::engine::StaffAccount::is_secret_shaped(bearer) {
        return match app.engine.authenticate_staff(bearer).await {
            Ok(a) => Ok(Staff::account(&a)),
            Err(CoreError::InvalidApiKey) => Err(admin_token_required()),
            Err(CoreError::ApiKeyRevoked) => Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "STAFF_ACCOUNT_DISABLED",
                "this staff account is disabled",
            )),
            Err(other) => Err(ApiError::from(other)),
        };
    }
    match app.config.admin.token.as_ref() {
        Some(token) if !bearer.is_empty() && admin_token_matches(bearer, token.expose().trim()) => {
            Ok(Staff::admin_token())
        }
        _ => Err(admin_token_required()),
    }
}

/// Requires staff credentials on the staff routes (`/admin/v1/...`):
/// `Authorization: Bearer <admin.token>` or `Bearer stf_sk_...` (a staff account), see
/// [`authenticate_staff`]. Without a configured admin token, a request without a staff
/// account's secret answers 404 ADMIN_DISABLED (the routes look absent). A missing or
/// wrong credential is 401 ADMIN_TOKEN_REQUIRED; a tenant or business key instead is 403
/// KEY_KIND_NOT_ALLOWED (API-CONVENTIONS: admin endpoints never take a tenant key).
/// Failed credentials are throttled per source and per credential (429 with
/// `Retry-After`) and audited (`signin.admin_api`), as [`crate::sign_in`] describes.
pub async fn require_admin_token(
    State(app): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let given = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_string);
    let staff_secret = given
        .as_deref()
        .is_some_and(stablecoin_core::engine::StaffAccount::is_secret_shaped);
    if app.config.admin.token.is_none() && !staff_secret {
        return admin_disabled().into_response();
    }
    match given {
        Some(g) => {
            // Throttled and audited like the consoles' sign-ins (`crate::sign_in`).
            let client = crate::sign_in::Client::of_head(&app, req.extensions(), req.headers());
            if let Err(e) = crate::sign_in::before(&app, &client, &g) {
                return e.into_response();
            }
            match authenticate_staff(&app, &g).await {
                Ok(staff) => {
                    let keys = crate::sign_in::SignInThrottle::keys(&client, &g);
                    if app
                        .sign_in_throttle
                        .new_sign_in(&keys, crate::sign_in::now_ms(&app))
                    {
                        crate::sign_in::after(
                            &app,
                            &client,
                            &g,
                            "signin.admin_api",
                            Some(&staff.id),
                            "ok",
                        )
                        .await;
                    }
                    req.extensions_mut().insert(staff);
                    next.run(req).await
                }
                Err(e) => {
                    if e.status == StatusCode::UNAUTHORIZED {
                        crate::sign_in::after(&app, &client, &g, "signin.admin_api", None, e.code)
                            .await;
                    }
                    e.into_response()
                }
            }
        }
        None if req.headers().contains_key(API_KEY_HEADER) => wrong_kind(
            "admin token or staff secret (Authorization: Bearer ...); API keys do not open staff routes",
        )
        .into_response(),
        None => admin_token_required().into_response(),
    }
}

#[cfg(test)]
mod admin_tests {
    use super::admin_token_matches;

    #[test]
    fn the_admin_token_matches_only_itself() {
        let t = "0123456789abcdef0123456789abcdef";
        assert!(admin_token_matches(t, t));
        assert!(!admin_token_matches("0123456789abcdef0123456789abcdeX", t));
        assert!(!admin_token_matches("", t));
        assert!(!admin_token_matches(&format!("{t}x"), t));
    }
}
