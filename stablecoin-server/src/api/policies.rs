//! Spending policies, their dry run, their approvals, and the address book (issue #51):
//! thin handlers over the engine (`Engine::create_policy`, `evaluate_policy`,
//! `approve_policy_request`, `add_address_book_entry`, ...). The rules and their
//! decision are the engine's; these only decode, encode and refuse a test key.

use super::schemas::{ListLimit, ListPage, PhoneNumber, TokenAmount, TokenName};
use super::{network, paging, phone, token};
use crate::auth::{Caller, Staff};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::policy::{Decision, Policy, WindowLimit, WindowSpan};
use stablecoin_core::engine::{
    AddressBookEntry, PendingRequest, PolicyApproval, PolicyInput, PolicyQuery,
};
use stablecoin_core::ports::RailId;
use utoipa::{IntoParams, ToSchema};

/// One rolling-window limit.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WindowBody {
    /// `24h`, `7d` or `30d`.
    #[schema(example = "24h", pattern = "^(24h|7d|30d)$")]
    pub window: String,
    /// Most moved in the window, operations in flight included (token units).
    #[serde(default)]
    #[schema(value_type = Option<TokenAmount>)]
    pub max_amount: Option<String>,
    /// Most operations in the window, operations in flight included.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1000000)]
    pub max_count: Option<u32>,
}

/// `POST /v1/policies` and `POST /v1/policies/{id}`: the rules of a policy. Every field
/// is optional; a policy governs the requests its scope (`phone_number`, `rail`,
/// `token`) matches.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PolicyBody {
    /// Only this wallet (the caller must be a member). Absent: every wallet of the tenant
    /// (the windows then count the tenant's operations together).
    #[serde(default)]
    #[schema(value_type = Option<PhoneNumber>)]
    pub phone_number: Option<String>,
    /// Only this rail: `polygon`, `base`, `bsc`, `evm-<chain id>`, `tron` or `solana`.
    #[serde(default)]
    #[schema(example = "polygon")]
    pub rail: Option<String>,
    /// Only this token.
    #[serde(default)]
    #[schema(value_type = Option<TokenName>)]
    pub token: Option<String>,
    /// Largest amount of one send, withdrawal or swap (token units; a swap counts what it gives).
    #[serde(default)]
    #[schema(value_type = Option<TokenAmount>)]
    pub max_per_transaction: Option<String>,
    /// Rolling-window limits, at most one per window.
    #[serde(default)]
    pub windows: Vec<WindowBody>,
    /// Not empty: only these destinations (chain addresses, `+` mobile-money numbers).
    #[serde(default)]
    pub allow_list: Vec<String>,
    /// Destinations never paid.
    #[serde(default)]
    pub deny_list: Vec<String>,
    /// Only destinations in the address book, past their cooling-off. Default false.
    #[serde(default)]
    pub require_address_book: bool,
    /// A destination is usable this many hours after the tenant's requests first name
    /// it (or once its address-book entry is usable). 0 to 720; default none.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 720)]
    pub cooling_off_hours: Option<u32>,
    /// Above this amount a request waits for a second approver (APPROVAL_REQUIRED).
    #[serde(default)]
    #[schema(value_type = Option<TokenAmount>)]
    pub approval_threshold: Option<String>,
}

/// A policy.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PolicyView {
    /// `pol_...`; every rule id starts with it.
    pub id: String,
    /// The wallet it governs (`wal_...`); null: every wallet.
    pub wallet_id: Option<String>,
    /// The rail it governs; null: every rail.
    pub rail: Option<String>,
    /// The token it governs; null: every token.
    pub token: Option<String>,
    /// Token units; null: no cap. Rule `max_per_transaction`.
    pub max_per_transaction: Option<String>,
    /// Rules `window_<window>_amount` and `window_<window>_count`.
    pub windows: Vec<WindowBody>,
    /// Rule `allow_list`.
    pub allow_list: Vec<String>,
    /// Rule `deny_list`.
    pub deny_list: Vec<String>,
    /// Rule `address_book`.
    pub require_address_book: bool,
    /// Rule `cooling_off`.
    pub cooling_off_hours: Option<u32>,
    /// Rule `approval_threshold`.
    pub approval_threshold: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub updated_at: String,
}

/// A page of policies (all of the tenant's live ones: at most 50).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PolicyList {
    /// Oldest id first.
    pub policies: Vec<PolicyView>,
}

/// `POST /v1/policies/evaluate`: a send, withdrawal or swap as it would be asked.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluateBody {
    /// `send`, `withdrawal` or `swap`.
    #[schema(example = "withdrawal", pattern = "^(send|withdrawal|swap)$")]
    pub operation: String,
    /// Withdrawal: the wallet (and the number paid). Swap: the trading wallet.
    #[serde(default)]
    #[schema(value_type = Option<PhoneNumber>)]
    pub phone_number: Option<String>,
    /// Send: the sender.
    #[serde(default)]
    #[schema(value_type = Option<PhoneNumber>)]
    pub from_phone_number: Option<String>,
    /// Send: the recipient.
    #[serde(default)]
    #[schema(value_type = Option<PhoneNumber>)]
    pub to_phone_number: Option<String>,
    /// The token (a swap's `token_in`).
    #[schema(value_type = TokenName)]
    pub token: String,
    /// The amount (token units; a swap's `amount_in`).
    #[schema(value_type = TokenAmount)]
    pub amount: String,
    /// `polygon`, `base`, `bsc`, `evm-<chain id>`, `tron` or `solana`; absent: the
    /// primary EVM chain.
    #[serde(default)]
    #[schema(example = "polygon")]
    pub rail: Option<String>,
}

/// What a request would get from the policies now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct EvaluationView {
    /// `ALLOW`, `DENY` (the call would answer 403 POLICY_DENIED) or `APPROVAL_REQUIRED`
    /// (403 APPROVAL_REQUIRED, held for a second approver).
    #[schema(example = "DENY")]
    pub decision: String,
    /// The rule that refuses or holds it, `<policy id>:<rule>`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rule_id: Option<String>,
    /// Why (DENY).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
}

/// A request held above a policy's approval threshold.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ApprovalView {
    /// `apr_...`.
    pub id: String,
    /// `PENDING` or `APPROVED`.
    pub status: String,
    /// `send`, `withdrawal` or `swap`.
    pub operation: String,
    /// Token units.
    pub amount: String,
    /// The token.
    pub token: String,
    /// The rail.
    pub rail: String,
    /// The rule that held it.
    pub rule_id: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339; approving after it is INVALID_STATE.
    pub expires_at: String,
    /// Who approved it (`stf_...` or `admin-token`).
    pub approved_by: Option<String>,
    /// The operation it became (`tr_...`, `wd_...`).
    pub operation_id: Option<String>,
}

/// `POST /v1/address-book`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddressBookBody {
    /// A chain address, or a mobile-money number in E.164 (starting with `+`).
    #[schema(example = "+254700000001")]
    pub value: String,
    /// The tenant's label, 1 to 100 characters.
    #[schema(example = "Supplier payouts")]
    pub label: String,
}

/// An address-book entry.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AddressBookView {
    /// `adb_...`.
    pub id: String,
    /// `chain_address` or `mobile_money`.
    pub kind: String,
    /// The address or number.
    pub value: String,
    /// The label.
    pub label: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: from then policies count it as a known destination (24 h after it was
    /// added by default).
    pub usable_at: String,
}

/// A page of the address book.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct AddressBookList {
    /// Page size.
    pub limit: u32,
    /// 1-based page.
    pub page: u32,
    /// Live entries in all.
    pub total: u64,
    /// Newest first.
    pub entries: Vec<AddressBookView>,
}

/// Paging of the address book.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AddressBookParams {
    /// 1-100, default 20.
    #[param(value_type = ListLimit, required = false)]
    pub limit: Option<String>,
    /// 1-based, default 1.
    #[param(value_type = ListPage, required = false)]
    pub page: Option<String>,
}

fn amount_opt(field: &str, v: &Option<String>) -> Result<Option<Micros>, ApiError> {
    v.as_deref()
        .map(|s| super::amount(s).map_err(|e| e.with_param(field.to_string())))
        .transpose()
}

/// A rail named as the API names rails: an EVM network, `tron` or `solana`.
fn rail_of(s: Option<&str>) -> Result<Option<RailId>, ApiError> {
    match s {
        Some("tron") => Ok(Some(RailId::Tron)),
        Some("solana") => Ok(Some(RailId::Solana)),
        other => network(other).map_err(|e| e.with_param("rail")),
    }
}

/// The engine's input of a policy body, checked as the API checks it (the dashboard's
/// form is decoded into the same body, so both refuse the same input the same way).
pub(crate) fn input_of(body: &PolicyBody) -> Result<PolicyInput, ApiError> {
    let mut windows = Vec::new();
    for w in &body.windows {
        let window = WindowSpan::parse(w.window.trim()).ok_or_else(|| {
            ApiError::bad_request("INVALID_PARAMETER", "window must be 24h, 7d or 30d")
                .with_param("windows")
        })?;
        windows.push(WindowLimit {
            window,
            max_amount: amount_opt("windows", &w.max_amount)?,
            max_count: w.max_count,
        });
    }
    Ok(PolicyInput {
        phone_number: body
            .phone_number
            .as_deref()
            .map(|p| phone("phone_number", p))
            .transpose()?,
        rail: rail_of(body.rail.as_deref())?.map(|r| r.name()),
        token: body
            .token
            .as_deref()
            .map(|t| token("token", t))
            .transpose()?,
        max_per_transaction: amount_opt("max_per_transaction", &body.max_per_transaction)?,
        windows,
        allow_list: body.allow_list.clone(),
        deny_list: body.deny_list.clone(),
        require_address_book: body.require_address_book,
        cooling_off_hours: body.cooling_off_hours,
        approval_threshold: amount_opt("approval_threshold", &body.approval_threshold)?,
    })
}

/// A destination key as the tenant wrote it (without `momo:` / `chain:`).
fn shown(key: &str) -> String {
    key.split_once(':').map_or(key, |(_, v)| v).to_string()
}

impl From<Policy> for PolicyView {
    fn from(p: Policy) -> Self {
        PolicyView {
            id: p.id,
            wallet_id: p.wallet.map(|w| w.0),
            rail: p.rail,
            token: p.token.map(|t| t.to_string()),
            max_per_transaction: p.max_per_transaction.map(|m| m.to_decimal_string()),
            windows: p
                .windows
                .into_iter()
                .map(|w| WindowBody {
                    window: w.window.name().into(),
                    max_amount: w.max_amount.map(|m| m.to_decimal_string()),
                    max_count: w.max_count,
                })
                .collect(),
            allow_list: p.allow_list.iter().map(|k| shown(k)).collect(),
            deny_list: p.deny_list.iter().map(|k| shown(k)).collect(),
            require_address_book: p.require_address_book,
            cooling_off_hours: p.cooling_off_hours,
            approval_threshold: p.approval_threshold.map(|m| m.to_decimal_string()),
            created_at: p.created_at.to_rfc3339(),
            updated_at: p.updated_at.to_rfc3339(),
        }
    }
}

impl From<PolicyApproval> for ApprovalView {
    fn from(a: PolicyApproval) -> Self {
        let (operation, rail) = match &a.request {
            PendingRequest::Send { rail, .. } => ("send", rail.name()),
            PendingRequest::Withdrawal { rail, .. } => ("withdrawal", rail.name()),
            PendingRequest::Swap { rail, .. } => ("swap", rail.name()),
        };
        ApprovalView {
            id: a.id,
            status: a.status,
            operation: operation.into(),
            amount: a.amount.to_decimal_string(),
            token: a.token.to_string(),
            rail,
            rule_id: a.rule_id,
            created_at: a.created_at.to_rfc3339(),
            expires_at: a.expires_at.to_rfc3339(),
            approved_by: a.approved_by,
            operation_id: a.operation_id,
        }
    }
}

impl From<AddressBookEntry> for AddressBookView {
    fn from(e: AddressBookEntry) -> Self {
        AddressBookView {
            id: e.id,
            kind: e.kind,
            value: e.value,
            label: e.label,
            created_at: e.created_at.to_rfc3339(),
            usable_at: e.usable_at.to_rfc3339(),
        }
    }
}

/// Policies and the address book govern live money: a test key may read them, not
/// change them.
fn live_only(caller: &Caller, what: &str) -> Result<(), ApiError> {
    Ok(caller.0.require_live(what)?)
}

/// Create a spending policy.
///
/// It governs every send, withdrawal and swap of its scope from the next request on, before
/// anything is held. A refusal is 403 POLICY_DENIED naming the rule (`rule_id`:
/// `<policy id>:max_per_transaction`, `:window_24h_amount`, `:window_7d_count`,
/// `:allow_list`, `:deny_list`, `:address_book`, `:cooling_off`); above
/// `approval_threshold` the request is held, 403 APPROVAL_REQUIRED with `approval_id`,
/// until staff approve it. Windows count operations in flight; an operation leaves a
/// window between 0 and 1 hour after the window's length has passed (hourly buckets).
#[utoipa::path(post, path = "/v1/policies", tag = "policies",
    request_body = PolicyBody,
    responses(
        (status = 201, description = "Created", body = PolicyView),
        (status = 400, description = "INVALID_PARAMETER, INVALID_AMOUNT, INVALID_PHONE, UNKNOWN_TOKEN", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER of the wallet; SANDBOX_UNSUPPORTED (test key)", body = ErrorBody),
        (status = 404, description = "No wallet for phone_number", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn create_policy(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<PolicyBody>,
) -> Result<Response, ApiError> {
    live_only(&caller, "a policy change")?;
    let p = app
        .engine
        .create_policy(caller.tenant(), &input_of(&body)?)
        .await?;
    Ok((StatusCode::CREATED, Json(PolicyView::from(p))).into_response())
}

/// List the tenant's live policies (at most 50), oldest first.
#[utoipa::path(get, path = "/v1/policies", tag = "policies",
    responses((status = 200, description = "The policies", body = PolicyList)),
    security(("tenant_key" = [])))]
pub async fn list_policies(
    State(app): State<AppState>,
    caller: Caller,
) -> Result<Json<PolicyList>, ApiError> {
    let ps = app.engine.active_policies(caller.tenant()).await?;
    Ok(Json(PolicyList {
        policies: ps.into_iter().map(PolicyView::from).collect(),
    }))
}

/// Read a live policy. Another tenant's, or a deleted one, is 404.
#[utoipa::path(get, path = "/v1/policies/{id}", tag = "policies",
    params(("id" = String, Path, description = "Policy id (`pol_...`)")),
    responses(
        (status = 200, description = "The policy", body = PolicyView),
        (status = 404, description = "NOT_FOUND", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_policy(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<PolicyView>, ApiError> {
    let v = app.engine.policy(caller.tenant(), &id).await?;
    Ok(Json(v.record.into()))
}

/// Replace a policy's rules (its window usage is kept).
#[utoipa::path(post, path = "/v1/policies/{id}", tag = "policies",
    params(("id" = String, Path, description = "Policy id (`pol_...`)")),
    request_body = PolicyBody,
    responses(
        (status = 200, description = "The policy as changed", body = PolicyView),
        (status = 400, description = "INVALID_PARAMETER, INVALID_AMOUNT, INVALID_PHONE, UNKNOWN_TOKEN", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER; SANDBOX_UNSUPPORTED (test key)", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: a concurrent change won; retry", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn update_policy(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<PolicyBody>,
) -> Result<Json<PolicyView>, ApiError> {
    live_only(&caller, "a policy change")?;
    let p = app
        .engine
        .update_policy(caller.tenant(), &id, &input_of(&body)?)
        .await?;
    Ok(Json(p.into()))
}

/// Delete a policy: it governs nothing from the next request on.
#[utoipa::path(delete, path = "/v1/policies/{id}", tag = "policies",
    params(("id" = String, Path, description = "Policy id (`pol_...`)")),
    responses(
        (status = 200, description = "Deleted", body = PolicyView),
        (status = 403, description = "SANDBOX_UNSUPPORTED (test key)", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: a concurrent change won; retry", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn delete_policy(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<PolicyView>, ApiError> {
    live_only(&caller, "a policy change")?;
    let p = app.engine.delete_policy(caller.tenant(), &id).await?;
    Ok(Json(p.into()))
}

/// Dry run: what a send, withdrawal or swap would get from the policies now.
///
/// The same inputs (policies, window usage with operations in flight, address book,
/// first sightings) and the same decision as the real call, which then answers exactly
/// this (ALLOW: accepted as far as policies go; DENY: 403 POLICY_DENIED with this
/// `rule_id`; APPROVAL_REQUIRED: 403 APPROVAL_REQUIRED). Nothing is held or recorded
/// but the audit entry `policy.evaluate`; a first sighting is recorded only by a real
/// call. Other refusals of the real call (funds, screening, readiness) are not checked.
#[utoipa::path(post, path = "/v1/policies/evaluate", tag = "policies",
    request_body = EvaluateBody,
    responses(
        (status = 200, description = "The decision", body = EvaluationView),
        (status = 400, description = "INVALID_PARAMETER, MISSING_PARAMETER, INVALID_AMOUNT, INVALID_PHONE, UNKNOWN_TOKEN", body = ErrorBody),
        (status = 403, description = "NOT_A_MEMBER", body = ErrorBody),
        (status = 404, description = "No wallet for the paying phone", body = ErrorBody),
        (status = 503, description = "RAIL_NOT_READY: the rail is not configured", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn evaluate_policy(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<EvaluateBody>,
) -> Result<Json<EvaluationView>, ApiError> {
    let need = |field: &'static str, v: &Option<String>| {
        v.as_deref()
            .map(|p| phone(field, p))
            .transpose()?
            .ok_or_else(|| {
                ApiError::bad_request("MISSING_PARAMETER", format!("{field} is required"))
                    .with_param(field)
            })
    };
    let rail = rail_of(body.rail.as_deref())?;
    let tok = token("token", &body.token)?;
    let amount = super::amount(&body.amount).map_err(|e| e.with_param("amount"))?;
    let query = match body.operation.as_str() {
        "send" => PolicyQuery::Send {
            rail,
            from: need("from_phone_number", &body.from_phone_number)?,
            to: need("to_phone_number", &body.to_phone_number)?,
            token: tok,
            amount,
        },
        "withdrawal" => PolicyQuery::Withdrawal {
            rail,
            phone: need("phone_number", &body.phone_number)?,
            token: tok,
            amount,
        },
        "swap" => PolicyQuery::Swap {
            rail,
            phone: need("phone_number", &body.phone_number)?,
            token: tok,
            amount,
        },
        _ => {
            return Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                "operation must be send, withdrawal or swap",
            )
            .with_param("operation"));
        }
    };
    let d = app.engine.evaluate_policy(caller.tenant(), &query).await?;
    let name = d.name().to_string();
    let (rule_id, reason) = match d {
        Decision::Allow => (None, None),
        Decision::Deny { rule_id, reason } => (Some(rule_id), Some(reason)),
        Decision::ApprovalRequired { rule_id } => (Some(rule_id), None),
    };
    Ok(Json(EvaluationView {
        decision: name,
        rule_id,
        reason,
    }))
}

/// Read a request held for approval (the `approval_id` of an APPROVAL_REQUIRED).
#[utoipa::path(get, path = "/v1/policies/approvals/{id}", tag = "policies",
    params(("id" = String, Path, description = "Approval id (`apr_...`)")),
    responses(
        (status = 200, description = "The held request", body = ApprovalView),
        (status = 404, description = "NOT_FOUND", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn get_approval(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<ApprovalView>, ApiError> {
    let v = app
        .engine
        .policy_approval(Some(caller.tenant()), &id)
        .await?;
    Ok(Json(v.record.into()))
}

/// Staff: approve a request held above a policy's approval threshold.
///
/// The second person of the two-person rule: the request was made with a tenant key,
/// and a staff identity approves it. It is carried out now, exactly as asked, through
/// every other check again (policies, funds, screening); the approval and its audit
/// entry (`policy.approve`) commit with the operation, so it is carried out once: a
/// second approval is 409 INVALID_STATE.
#[utoipa::path(post, path = "/admin/v1/policy-approvals/{id}/approve", tag = "admin",
    params(("id" = String, Path, description = "Approval id (`apr_...`)")),
    responses(
        (status = 200, description = "Approved and carried out", body = ApprovalView),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED", body = ErrorBody),
        (status = 403, description = "POLICY_DENIED: another rule now refuses it; SCREENING_HIT", body = ErrorBody),
        (status = 404, description = "NOT_FOUND; ADMIN_DISABLED", body = ErrorBody),
        (status = 409, description = "INVALID_STATE: already approved, or expired", body = ErrorBody),
        (status = 422, description = "INSUFFICIENT_FUNDS", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn approve_policy_request(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
) -> Result<Json<ApprovalView>, ApiError> {
    let a = app
        .engine
        .approve_policy_request(&id, staff.identity())
        .await?;
    Ok(Json(a.into()))
}

/// Add a destination to the address book.
///
/// A chain address or an E.164 mobile-money number, with a label. Policies count it as
/// a known destination from `usable_at` (24 h after it is added by default): a policy
/// with `require_address_book` refuses every destination not in the book or still
/// cooling off (POLICY_DENIED, rule `address_book`).
#[utoipa::path(post, path = "/v1/address-book", tag = "policies",
    request_body = AddressBookBody,
    responses(
        (status = 201, description = "Added", body = AddressBookView),
        (status = 400, description = "INVALID_PARAMETER: value (or already in the book), label", body = ErrorBody),
        (status = 403, description = "SANDBOX_UNSUPPORTED (test key)", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn add_address_book_entry(
    State(app): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<AddressBookBody>,
) -> Result<Response, ApiError> {
    live_only(&caller, "an address-book change")?;
    let e = app
        .engine
        .add_address_book_entry(caller.tenant(), &body.value, &body.label)
        .await?;
    Ok((StatusCode::CREATED, Json(AddressBookView::from(e))).into_response())
}

/// List the address book, newest first.
#[utoipa::path(get, path = "/v1/address-book", tag = "policies",
    params(AddressBookParams),
    responses((status = 200, description = "A page of entries", body = AddressBookList)),
    security(("tenant_key" = [])))]
pub async fn list_address_book(
    State(app): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<AddressBookParams>,
) -> Result<Json<AddressBookList>, ApiError> {
    let p = paging(q.limit.as_deref(), q.page.as_deref())?;
    let (offset, count) = p.window();
    let (entries, total) = app
        .engine
        .list_address_book(caller.tenant(), count, offset)
        .await?;
    Ok(Json(AddressBookList {
        limit: p.limit,
        page: p.page,
        total,
        entries: entries.into_iter().map(AddressBookView::from).collect(),
    }))
}

/// Remove an address-book entry; the destination may be added again (a new cooling-off).
#[utoipa::path(delete, path = "/v1/address-book/{id}", tag = "policies",
    params(("id" = String, Path, description = "Entry id (`adb_...`)")),
    responses(
        (status = 200, description = "Removed", body = AddressBookView),
        (status = 403, description = "SANDBOX_UNSUPPORTED (test key)", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: a concurrent change won; retry", body = ErrorBody)),
    security(("tenant_key" = [])))]
pub async fn remove_address_book_entry(
    State(app): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath,
) -> Result<Json<AddressBookView>, ApiError> {
    live_only(&caller, "an address-book change")?;
    let e = app
        .engine
        .remove_address_book_entry(caller.tenant(), &id)
        .await?;
    Ok(Json(e.into()))
}
