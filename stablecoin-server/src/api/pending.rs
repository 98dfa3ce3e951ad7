//! Routes whose backing crates are being built: escrow (`stablecoin-escrow`) and webhook
//! endpoint management (`stablecoin-webhooks`). They authenticate and then answer
//! `501 NOT_IMPLEMENTED` in live and sandbox mode alike (escrow has a sandbox simulation
//! in the spec, which needs the escrow engine too): never a fake success.
//!
//! WIRING POINT: replace the bodies here with calls into `EscrowEngine` and the webhooks
//! registry when they land; the paths, auth and OpenAPI entries stay.

use crate::auth::Caller;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiPath;

fn escrow() -> ApiError {
    ApiError::not_implemented("the escrow API (stablecoin-escrow is not wired yet)")
}

fn webhooks() -> ApiError {
    ApiError::not_implemented("webhook endpoint management (stablecoin-webhooks is not wired yet)")
}

/// Create an escrow deal (TRON USDT, per-deal custody address). Not wired yet (501).
#[utoipa::path(post, path = "/v1/escrows", tag = "escrows",
    responses((status = 501, description = "NOT_IMPLEMENTED until the escrow engine is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn create_escrow(_caller: Caller) -> ApiError {
    escrow()
}

/// List the tenant's escrows. Not wired yet (501).
#[utoipa::path(get, path = "/v1/escrows", tag = "escrows",
    responses((status = 501, description = "NOT_IMPLEMENTED until the escrow engine is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn list_escrows(_caller: Caller) -> ApiError {
    escrow()
}

/// Read an escrow (spec 2.1 escrow view). Not wired yet (501).
#[utoipa::path(get, path = "/v1/escrows/{id}", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    responses((status = 501, description = "NOT_IMPLEMENTED until the escrow engine is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_escrow(_caller: Caller, ApiPath(_id): ApiPath) -> ApiError {
    escrow()
}

/// An escrow's event history. Not wired yet (501).
#[utoipa::path(get, path = "/v1/escrows/{id}/events", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    responses((status = 501, description = "NOT_IMPLEMENTED until the escrow engine is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn escrow_events(_caller: Caller, ApiPath(_id): ApiPath) -> ApiError {
    escrow()
}

/// Release a funded escrow to the seller (spec 4.1). Not wired yet (501).
///
/// Once wired: 202 with the escrow view (payout_pending=true), 404 for another tenant's
/// escrow, 409 when not permitted from the current state or already in flight. Escrow
/// actions take no Idempotency-Key.
#[utoipa::path(post, path = "/v1/escrows/{id}/release", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    responses((status = 501, description = "NOT_IMPLEMENTED until the escrow engine is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn release_escrow(_caller: Caller, ApiPath(_id): ApiPath) -> ApiError {
    escrow()
}

/// Refund an escrow to the buyer. Not wired yet (501).
#[utoipa::path(post, path = "/v1/escrows/{id}/refund", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    responses((status = 501, description = "NOT_IMPLEMENTED until the escrow engine is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn refund_escrow(_caller: Caller, ApiPath(_id): ApiPath) -> ApiError {
    escrow()
}

/// Dispute an escrow (reason required). Not wired yet (501).
#[utoipa::path(post, path = "/v1/escrows/{id}/dispute", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    responses((status = 501, description = "NOT_IMPLEMENTED until the escrow engine is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn dispute_escrow(_caller: Caller, ApiPath(_id): ApiPath) -> ApiError {
    escrow()
}

/// Cancel an unfunded escrow. Not wired yet (501).
#[utoipa::path(post, path = "/v1/escrows/{id}/cancel", tag = "escrows",
    params(("id" = String, Path, description = "Escrow id (`esc_...`)")),
    responses((status = 501, description = "NOT_IMPLEMENTED until the escrow engine is wired", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn cancel_escrow(_caller: Caller, ApiPath(_id): ApiPath) -> ApiError {
    escrow()
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
