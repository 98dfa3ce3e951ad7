//! The tenant's account: `GET /v1/account` and its test mode,
//! `POST /v1/account/test-mode` (spec 1 "Sandbox mode": "test-mode API keys and account
//! test mode prevent live mutations"). The rule is the engine's
//! (`Engine::set_test_mode_by`, `Engine::authenticate`); this maps HTTP to it.

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use stablecoin_core::engine::KeyMode;
use utoipa::ToSchema;

/// `POST /v1/account/test-mode`. Unknown fields are refused (`UNKNOWN_FIELD`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TestModeBody {
    /// `true`: every key of the account acts as a test key; `false`: live keys are live
    /// again.
    pub enabled: bool,
}

/// The tenant's account as its key sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct AccountResponse {
    /// The tenant (`ten_...`).
    pub tenant_id: String,
    /// Its display name.
    pub name: String,
    /// Account test mode: while `true`, live keys are simulated or refused exactly as
    /// test keys, and nothing live is written or sent for them.
    pub test_mode: bool,
    /// How this request's key acts: `test` for a test key or any key while the
    /// account is in test mode, else `live`.
    #[schema(example = "live")]
    pub mode: String,
}

fn response(t: stablecoin_core::engine::Tenant, mode: KeyMode) -> AccountResponse {
    AccountResponse {
        tenant_id: t.id.0,
        name: t.name,
        test_mode: t.test_mode,
        mode: match mode {
            KeyMode::Live => "live".into(),
            KeyMode::Test => "test".into(),
        },
    }
}

/// The caller's account: its name, whether it is in test mode, and how this key acts.
#[utoipa::path(get, path = "/v1/account", tag = "account",
    responses((status = 200, description = "The account", body = AccountResponse)),
    security(("tenant_key" = [])))]
pub async fn get_account(
    State(app): State<AppState>,
    caller: Caller,
) -> Result<Json<AccountResponse>, ApiError> {
    let t = app.engine.tenant(caller.tenant()).await?;
    Ok(Json(response(t, caller.0.mode)))
}

/// Put the account in test mode, or take it out.
///
/// While the account is in test mode, every key of the tenant acts as a test key:
/// supported mutations answer simulated responses (`"simulated": true`, nothing stored,
/// no chain, no SMS), the others 403 SANDBOX_UNSUPPORTED; reads pass through. Operations
/// accepted before keep going to their end. Only a live tenant key changes it, in test
/// mode too (so a live key can always take the account out; a test key never takes it
/// live): a test key gets 403 SANDBOX_UNSUPPORTED. Setting the mode it already has
/// changes nothing. Audited (`test_mode.set`, by `key:<key id>`). Takes effect at once
/// on this server, on others within `engine.read_cache_ms`.
#[utoipa::path(post, path = "/v1/account/test-mode", tag = "account",
    request_body = TestModeBody,
    responses(
        (status = 200, description = "The account, with the mode now in force", body = AccountResponse),
        (status = 403, description = "SANDBOX_UNSUPPORTED: a test key does not change the account's mode", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn set_test_mode(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<TestModeBody>,
) -> Result<Json<AccountResponse>, ApiError> {
    let t = app.engine.set_test_mode_by(&caller.0, body.enabled).await?;
    let mode = if t.test_mode {
        KeyMode::Test
    } else {
        KeyMode::Live
    };
    Ok(Json(response(t, mode)))
}
