//! Routes whose backing crate is being built: webhook endpoint management
//! (`stablecoin-webhooks`). They authenticate and then answer `501 NOT_IMPLEMENTED` in
//! live and sandbox mode alike: never a fake success.
//!
//! WIRING POINT: replace the bodies here with calls into the webhooks registry when it
//! lands; the paths, auth and OpenAPI entries stay.

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiPath;

fn webhooks() -> ApiError {
    ApiError::not_implemented("webhook endpoint management (stablecoin-webhooks is not wired yet)")
}

/// Register a wallet-service webhook endpoint (its signing secret is returned once).
/// Not wired yet (501).
#[utoipa::path(post, path = "/v1/webhook-endpoints", tag = "webhooks",
    responses((status = 501, description = "NOT_IMPLEMENTED until stablecoin-webhooks is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn create_webhook_endpoint(_caller: Caller) -> ApiError {
    webhooks()
}

/// List the tenant's webhook endpoints. Not wired yet (501).
#[utoipa::path(get, path = "/v1/webhook-endpoints", tag = "webhooks",
    responses((status = 501, description = "NOT_IMPLEMENTED until stablecoin-webhooks is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn list_webhook_endpoints(_caller: Caller) -> ApiError {
    webhooks()
}

/// Read a webhook endpoint. Not wired yet (501).
#[utoipa::path(get, path = "/v1/webhook-endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook endpoint id (`whe_...`)")),
    responses((status = 501, description = "NOT_IMPLEMENTED until stablecoin-webhooks is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_webhook_endpoint(_caller: Caller, ApiPath(_id): ApiPath) -> ApiError {
    webhooks()
}

/// Delete a webhook endpoint. Not wired yet (501).
#[utoipa::path(delete, path = "/v1/webhook-endpoints/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Webhook endpoint id (`whe_...`)")),
    responses((status = 501, description = "NOT_IMPLEMENTED until stablecoin-webhooks is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn delete_webhook_endpoint(_caller: Caller, ApiPath(_id): ApiPath) -> ApiError {
    webhooks()
}
