//! The authenticated caller of a request, as the auth middleware leaves it in the
//! request's extensions. Its own module because the rate limiter (held by the server's
//! state) keys on it: in `auth`, which takes the state, it tied the two into one import
//! cycle (issue #45).

use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::engine::AuthContext;

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

pub(crate) fn missing_key() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "MISSING_API_KEY",
        "the X-API-Key header is required",
    )
}
