//! The router and its OpenAPI description, generated from the same `routes!` calls (so
//! the document cannot list a route the router does not serve, nor miss one).

pub mod account;
pub mod chains;
pub mod checkout;
pub mod checkout_refunds;
mod document;
pub mod escrow;
pub mod events;
pub mod export_rows;
pub mod exports;
pub mod fx;
pub mod health;
pub mod intake;
pub mod payment_links;
pub mod payout_reconciliation;
pub mod phone_payments;
pub mod policies;
pub mod policy_approvals;
pub mod quarantined_deposits;
pub mod reconciliation;
pub mod schemas;
pub mod security_headers;
pub mod sponsorship;
pub mod staff;
pub mod staff_payouts;
pub mod statements;
pub mod stray_deposits;
pub mod swaps;
pub mod topups;
pub mod transfers;
pub mod types;
pub mod users;
pub mod webhooks;

use crate::auth;
use crate::error::{ApiError, ErrorBody, ErrorDetail, at};
use crate::idempotency;
use crate::metrics;
use crate::rate_limit;
use crate::route_kind::{self, RouteKind};
use crate::state::AppState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{StatusCode, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use health::OpenApiJson;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::ports::RailId;
use std::sync::Arc;
use types::OperationResponse;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The published interface version (spec 9.2).
pub const API_VERSION: &str = "1.0.1";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Stablecoin wallet, escrow and payments API",
        version = "1.0.1",
        description = "Reference server of the stablecoin SDK. Authenticate with `X-API-Key`: tenant keys `svc_sk_live_` (live) / `svc_sk_test_` (sandbox: supported mutations are simulated and marked `\"simulated\": true`, others answer SANDBOX_UNSUPPORTED); business keys `live_sk_` / `test_sk_` open only the checkout (`/api/v1/checkout/...`) and the payments-family events (`/api/v1/events`): a test key sees and creates only test sessions, paid by simulated deposits; a live key only live ones. Every POST accepts `Idempotency-Key`. Errors are `{\"error\":{\"code\",\"message\",\"param\"?}}`.",
        license(name = "Apache-2.0")
    ),
    components(schemas(ErrorBody, ErrorDetail)),
    tags(
        (name = "users", description = "EVM wallets keyed by phone number"),
        (name = "account", description = "The tenant's account and its test mode"),
        (name = "transfers", description = "Transfers and the reads of asynchronous operations"),
        (name = "fx", description = "FX quotes"),
        (name = "treasury", description = "Top-ups: money in to the tenant's treasury"),
        (name = "tron", description = "Native TRON USDT rail"),
        (name = "solana", description = "Solana SPL rail"),
        (name = "escrows", description = "Embedded escrow over per-deal TRON USDT addresses"),
        (name = "webhooks", description = "Webhook endpoints of both families, events, deliveries and replay"),
        (name = "statements", description = "Statements of the treasury, customer wallets and checkout funds, reconciling to the ledger"),
        (name = "exports", description = "Exports of operations, withdrawals, escrow deals, checkout sessions and payments as CSV or JSON lines, streamed"),
        (name = "events", description = "The events API: every event of the key's family, cursor-paged, payloads as delivered"),
        (name = "checkout", description = "Checkout payment sessions (business keys)"),
        (name = "policies", description = "Spending policies (per-transaction caps, rolling windows, destination rules, approvals), their dry run, and the address book"),
        (name = "admin", description = "Service staff routes (admin bearer token; 404 ADMIN_DISABLED when the server has none)"),
        (name = "health", description = "Health, metrics and this document")
    )
)]
struct ApiDoc;

// ---- request helpers shared by the handlers -------------------------------------------

pub(crate) fn phone(field: &str, s: &str) -> Result<Phone, ApiError> {
    Phone::parse(s).map_err(at(field))
}

pub(crate) fn token(field: &str, s: &str) -> Result<Token, ApiError> {
    s.trim().parse::<Token>().map_err(at(field))
}

/// The EVM chain a request names (`network`): `polygon`, `base`, `bsc`, `evm-<chain id>`
/// or the bare chain id; absent is the primary chain. Whether it is enabled is the
/// engine's to say.
pub(crate) fn network(s: Option<&str>) -> Result<Option<RailId>, ApiError> {
    let Some(s) = s else { return Ok(None) };
    // Exactly the documented pattern: `polygon|base|bsc|(evm-)?[1-9][0-9]{0,18}`.
    let digits = |d: &str| {
        (1..=19).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()) && !d.starts_with('0')
    };
    let id = match s {
        "polygon" => Some(137),
        "base" => Some(8453),
        "bsc" => Some(56),
        _ => {
            let d = s.strip_prefix("evm-").unwrap_or(s);
            if digits(d) {
                d.parse::<u64>().ok()
            } else {
                None
            }
        }
    };
    id.map(|id| Some(RailId::Evm(id))).ok_or_else(|| {
        ApiError::bad_request(
            "INVALID_PARAMETER",
            "network must be polygon, base, bsc, evm-<chain id> or a chain id".to_string(),
        )
        .with_param("network")
    })
}

pub(crate) fn amount(s: &str) -> Result<Micros, ApiError> {
    Micros::parse_positive(s).map_err(|e| ApiError::from(stablecoin_core::CoreError::from(e)))
}

/// `202 Accepted` with the operation and, when it can be read back, its `Location`.
pub(crate) fn accepted(op: OperationResponse, location: Option<String>) -> Response {
    let mut res = (StatusCode::ACCEPTED, axum::Json(op)).into_response();
    if let Some(loc) = location
        && let Ok(v) = loc.parse()
    {
        res.headers_mut().insert(header::LOCATION, v);
    }
    res
}

/// `limit` (1-100, default 20) and `page` (from 1, default 1) of a list (API-CONVENTIONS).
pub(crate) struct Paging {
    pub limit: u32,
    pub page: u32,
}

impl Paging {
    /// (offset, count).
    pub fn window(&self) -> (usize, usize) {
        (
            (self.page as usize - 1) * self.limit as usize,
            self.limit as usize,
        )
    }
}

pub(crate) fn paging(limit: Option<&str>, page: Option<&str>) -> Result<Paging, ApiError> {
    fn num(v: Option<&str>, name: &str, default: u32, max: u32) -> Result<u32, ApiError> {
        match v {
            None => Ok(default),
            Some(s) => match s.trim().parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(ApiError::bad_request(
                    "INVALID_PARAMETER",
                    format!("{name} must be an integer from 1 to {max}"),
                )
                .with_param(name)),
            },
        }
    }
    use schemas::{LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, LIST_PAGE_MAX};
    Ok(Paging {
        limit: num(limit, "limit", LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX)?,
        page: num(page, "page", 1, LIST_PAGE_MAX)?,
    })
}

// ---- router ---------------------------------------------------------------------------

/// The tenant-key stack over `routes`: authentication, then the rate limit (it keys on
/// the caller's API key), then HTTP idempotency on POST, then the handler.
fn tenant_key(routes: OpenApiRouter<AppState>, state: &AppState) -> OpenApiRouter<AppState> {
    routes
        .route_layer(from_fn_with_state(state.clone(), idempotency::idempotency))
        .route_layer(from_fn_with_state(
            state.rate_limiter.clone(),
            rate_limit::enforce,
        ))
        .route_layer(from_fn_with_state(state.clone(), auth::require_tenant_key))
}

/// The tenant-key routes that move money through one engine operation, marked
/// [`RouteKind::Money`] (`crate::route_kind`): the money rate budget, and the engine
/// alone records their `Idempotency-Key`.
fn money_routes(state: &AppState) -> OpenApiRouter<AppState> {
    let routes = OpenApiRouter::new()
        .routes(routes!(users::fund))
        .routes(routes!(users::withdraw))
        .routes(routes!(transfers::send))
        .routes(routes!(swaps::create_swap))
        .routes(routes!(chains::tron_send))
        .routes(routes!(chains::tron_withdraw))
        .routes(routes!(chains::solana_send));
    // Marked last: the mark must be set before the stack's middleware runs.
    route_kind::mark(tenant_key(routes, state), RouteKind::Money)
}

/// The other tenant-key routes, with HTTP idempotency on POST.
fn tenant_routes(state: &AppState) -> OpenApiRouter<AppState> {
    let routes = OpenApiRouter::new()
        .routes(routes!(account::get_account))
        .routes(routes!(account::set_test_mode))
        .routes(routes!(users::provision))
        .routes(routes!(users::balance))
        .routes(routes!(users::link_request))
        .routes(routes!(users::link_confirm))
        .routes(routes!(users::phone_change_request))
        .routes(routes!(users::phone_change_confirm))
        .routes(routes!(transfers::list_transfers))
        .routes(routes!(transfers::get_transfer))
        .routes(routes!(transfers::get_funding))
        .routes(routes!(transfers::get_withdrawal))
        .routes(routes!(transfers::get_swap))
        .routes(routes!(swaps::list_swaps))
        .routes(routes!(fx::quote))
        .routes(routes!(topups::create_topup, topups::list_topups))
        .routes(routes!(topups::get_topup))
        .routes(routes!(chains::tron_provision))
        .routes(routes!(chains::tron_balance))
        .routes(routes!(chains::solana_provision))
        .routes(routes!(chains::solana_balance))
        .routes(routes!(escrow::get_escrow))
        .routes(routes!(escrow::escrow_events))
        .routes(routes!(
            webhooks::create_webhook_endpoint,
            webhooks::list_webhook_endpoints
        ))
        .routes(routes!(
            webhooks::get_webhook_endpoint,
            webhooks::delete_webhook_endpoint
        ))
        .routes(routes!(webhooks::enable_webhook_endpoint))
        .routes(routes!(webhooks::rotate_webhook_secret))
        .routes(routes!(webhooks::list_webhook_events))
        .routes(routes!(webhooks::get_webhook_event))
        .routes(routes!(webhooks::replay_webhook_event))
        .routes(routes!(webhooks::replay_failed_webhooks))
        .routes(routes!(webhooks::list_webhook_deliveries))
        .routes(routes!(events::list_events))
        .routes(routes!(events::get_event))
        .routes(routes!(statements::get_statement))
        .routes(routes!(exports::export_operations))
        .routes(routes!(exports::export_withdrawals))
        .routes(routes!(exports::export_escrows))
        .routes(routes!(
            checkout::create_business,
            checkout::list_businesses
        ))
        .routes(routes!(checkout_refunds::set_auto_refunds))
        .routes(routes!(policies::create_policy, policies::list_policies))
        .routes(routes!(
            policies::get_policy,
            policies::update_policy,
            policies::delete_policy
        ))
        .routes(routes!(policies::evaluate_policy))
        .routes(routes!(policies::get_approval))
        .routes(routes!(sponsorship::list_sponsorship_budgets))
        .routes(routes!(
            policies::add_address_book_entry,
            policies::list_address_book
        ))
        .routes(routes!(policies::remove_address_book_entry));
    // Escrow creation: its engine records the bare key in the escrow's own commit.
    let escrows = OpenApiRouter::new().routes(routes!(escrow::create_escrow, escrow::list_escrows));
    tenant_key(routes, state).merge(route_kind::mark(
        tenant_key(escrows, state),
        RouteKind::EngineRecorded,
    ))
}

/// Tenant key, no idempotency key: escrow actions (spec 2.2; their state rules make them
/// safe to retry). Release and refund pay out, so they are money routes.
fn escrow_action_routes(state: &AppState) -> OpenApiRouter<AppState> {
    let limited = |routes: OpenApiRouter<AppState>| {
        routes
            .route_layer(from_fn_with_state(
                state.rate_limiter.clone(),
                rate_limit::enforce,
            ))
            .route_layer(from_fn_with_state(state.clone(), auth::require_tenant_key))
    };
    let payouts = OpenApiRouter::new()
        .routes(routes!(escrow::release_escrow))
        .routes(routes!(escrow::refund_escrow));
    let others = OpenApiRouter::new()
        .routes(routes!(escrow::dispute_escrow))
        .routes(routes!(escrow::cancel_escrow));
    route_kind::mark(limited(payouts), RouteKind::Money).merge(limited(others))
}

/// The approver key's routes (issue #51): only an approver key opens them, and it opens
/// nothing else. The tenant-key stack with the approver's authentication instead:
/// rate limit, then HTTP idempotency on POST (a retried approval with the same
/// `Idempotency-Key` answers the first; a new one is INVALID_STATE).
fn approver_routes(state: &AppState) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(policy_approvals::approve))
        .routes(routes!(policy_approvals::list_approvals))
        .route_layer(from_fn_with_state(state.clone(), idempotency::idempotency))
        .route_layer(from_fn_with_state(
            state.rate_limiter.clone(),
            rate_limit::enforce,
        ))
        .route_layer(from_fn_with_state(
            state.clone(),
            policy_approvals::require_approver_key,
        ))
}

/// Every route, grouped by the middleware it needs and marked with its kind
/// (`crate::route_kind`), with its OpenAPI entry.
fn api_routes(state: &AppState) -> OpenApiRouter<AppState> {
    let limiter = state.rate_limiter.clone();
    let business = OpenApiRouter::new()
        .routes(routes!(checkout::list))
        .routes(routes!(checkout::create_session))
        .routes(routes!(checkout::get_session))
        .routes(routes!(checkout::cancel_session))
        .routes(routes!(checkout::simulate_payment))
        .routes(routes!(
            checkout_refunds::create_refund,
            checkout_refunds::list_refunds
        ))
        .routes(routes!(checkout_refunds::get_refund))
        .routes(routes!(
            payment_links::create_payment_link,
            payment_links::list_payment_links
        ))
        .routes(routes!(payment_links::get_payment_link))
        .routes(routes!(payment_links::deactivate_payment_link))
        .routes(routes!(events::list_payments_events))
        .routes(routes!(events::get_payments_event))
        .routes(routes!(exports::export_checkout_sessions))
        .routes(routes!(exports::export_payments))
        .route_layer(from_fn_with_state(limiter, rate_limit::enforce))
        .route_layer(from_fn_with_state(
            state.clone(),
            auth::require_business_key,
        ));
    // Service staff: the admin token of `[admin]` or a staff account's secret, no API
    // key, no idempotency key (their state rules make them safe to retry: a replayed
    // confirmation is ALREADY_CONFIRMED, a replayed resolution PAYOUT_IN_FLIGHT).
    // A provider's statement is larger than an API body: its own limit.
    let reconciliation = OpenApiRouter::new()
        .routes(routes!(payout_reconciliation::reconcile_payouts))
        .route_layer(DefaultBodyLimit::max(
            payout_reconciliation::REPORT_BODY_LIMIT,
        ));
    let admin = OpenApiRouter::new()
        .merge(reconciliation)
        .routes(routes!(topups::confirm_topup))
        .routes(routes!(reconciliation::report))
        .routes(routes!(staff::staff_list_escrows))
        .routes(routes!(staff::staff_get_escrow))
        .routes(routes!(staff::staff_escrow_events))
        .routes(routes!(staff::staff_resolve_escrow))
        .routes(routes!(staff::staff_recover_escrow))
        .routes(routes!(staff::staff_audit_log))
        .routes(routes!(staff_payouts::staff_resolve_payout))
        .routes(routes!(stray_deposits::list_stray_deposits))
        .routes(routes!(stray_deposits::return_stray_deposit))
        .routes(routes!(policies::approve_policy_request))
        .routes(routes!(
            sponsorship::staff_list_sponsorship_budgets,
            sponsorship::set_sponsorship_budget
        ))
        .routes(routes!(policy_approvals::issue_approver_key))
        .routes(routes!(quarantined_deposits::list_quarantined_deposits))
        .routes(routes!(quarantined_deposits::get_quarantined_deposit))
        .routes(routes!(quarantined_deposits::release_quarantined_deposit))
        .routes(routes!(quarantined_deposits::return_quarantined_deposit))
        .route_layer(from_fn_with_state(state.clone(), auth::require_admin_token));
    let public = OpenApiRouter::new()
        .routes(routes!(health::live))
        .routes(routes!(health::ready))
        .routes(routes!(health::metrics))
        .routes(routes!(health::openapi))
        .routes(routes!(intake::deposit_events))
        .routes(routes!(phone_payments::request_code))
        .routes(routes!(phone_payments::confirm));
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(money_routes(state))
        .merge(tenant_routes(state))
        .merge(escrow_action_routes(state))
        .merge(approver_routes(state))
        .merge(business)
        .merge(admin)
        .merge(public)
}

/// The OpenAPI document of this server (the router built for `state` serves exactly
/// these operations).
pub fn openapi(state: &AppState) -> utoipa::openapi::OpenApi {
    let (_, mut doc) = api_routes(state).split_for_parts();
    document::finish(&mut doc, state);
    doc
}

async fn route_not_found() -> ApiError {
    ApiError::route_not_found()
}

async fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed()
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("handler panicked");
    ApiError::internal("internal error").into_response()
}

/// The complete router: routes, fallbacks (JSON 404 / 405), body limit, metrics and
/// request log, panic guard.
pub fn build_router(state: AppState) -> Router {
    let (router, mut doc) = api_routes(&state).split_for_parts();
    document::finish(&mut doc, &state);
    let json = doc
        .to_pretty_json()
        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    let limit = state.config.body_limit_bytes;
    let metrics = state.metrics.clone();
    router
        // Provider-facing (the SMS gateways' delivery reports, payout callbacks), outside the tenant API
        // and its OpenAPI document: no API key, each authenticated its own way.
        .route(
            crate::sms::TWILIO_CALLBACK_PATH,
            axum::routing::post(crate::sms::twilio_callback),
        )
        .route(
            crate::sms::AFRICASTALKING_CALLBACK_PATH,
            axum::routing::post(crate::sms::africastalking_callback),
        )
        // The payout providers' callbacks, one URL per payout with its token
        // (`crate::payouts`).
        .route(
            &format!("{}/{{id}}/{{token}}", crate::payouts::MPESA_RESULT_PATH),
            axum::routing::post(crate::payouts::mpesa_result),
        )
        .route(
            &format!("{}/{{id}}/{{token}}", crate::payouts::MPESA_TIMEOUT_PATH),
            axum::routing::post(crate::payouts::mpesa_timeout),
        )
        .route(
            &format!(
                "{}/{{id}}/{{token}}",
                crate::payouts::MTN_MOMO_CALLBACK_PATH
            ),
            axum::routing::put(crate::payouts::mtn_momo_callback)
                .post(crate::payouts::mtn_momo_callback),
        )
        // The payer's hosted payment page (HTML, outside the JSON API and its document).
        .merge(crate::pages::pay_routes(Arc::new(
            crate::pages::source::CheckoutPages(state.checkout.clone()),
        )))
        // The payer's refund claim page (HTML, outside the JSON API and its document).
        .merge(
            crate::pages::refund_claim::refund_claim_routes(state.checkout.clone()).route_layer(
                from_fn_with_state(state.clone(), crate::pages::public_limit::limit_posts),
            ),
        )
        // Paying from a phone wallet of this service (issue #50 item 4).
        .merge(crate::pages::phone_pay::phone_pay_routes())
        // A payment link's page: a session of its own for each payer (issue #50).
        .merge(
            crate::pages::link_page::link_routes(state.checkout.clone()).route_layer(
                from_fn_with_state(state.clone(), crate::pages::public_limit::limit_posts),
            ),
        )
        // The tenant dashboard (HTML forms with sessions and CSRF tokens, outside the
        // JSON API and its document).
        .merge(crate::pages::dashboard::routes())
        .merge(crate::pages::console::routes())
        .fallback(route_not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::Extension(OpenApiJson(Arc::new(json))))
        .layer(DefaultBodyLimit::max(limit))
        .layer(from_fn_with_state(metrics, metrics::track))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            panic_response,
        ))
        // Outermost: even a panic's answer carries `nosniff` (and, as JSON, the CSP).
        .layer(axum::middleware::map_response(security_headers::apply))
        .with_state(state)
}
