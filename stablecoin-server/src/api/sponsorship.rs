//! Sponsorship budgets (issue #51 item 4): staff set a tenant's caps per rail, the tenant
//! and staff read caps and spend. Thin handlers over the engine
//! (`Engine::set_sponsor_budget`, `sponsor_budgets`); metering and refusal are the
//! engine's (`SPONSORSHIP_BUDGET_EXCEEDED`, 429).
//!
//! Amounts are decimal integer strings in the chain's own unit (wei, sun, lamports; TRON
//! Energy and Bandwidth), never converted: a wei amount does not fit a JSON number's
//! exact range.

use crate::auth::{Caller, Staff};
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::sponsorship::{self, BudgetCaps, Caps, Period, Usage};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::SponsorBudget;
use utoipa::ToSchema;

/// Caps of one period; an absent or null resource is uncapped.
#[derive(Clone, Debug, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CapsBody {
    /// Cap on the chain's smallest native unit spent (wei, sun, lamports).
    #[serde(default)]
    #[schema(example = "5000000000000000", pattern = "^[0-9]{1,38}$")]
    pub native: Option<String>,
    /// Cap on TRON Energy consumed (staked or burnt).
    #[serde(default)]
    #[schema(example = "1000000", pattern = "^[0-9]{1,19}$")]
    pub energy: Option<String>,
    /// Cap on TRON Bandwidth consumed, bytes.
    #[serde(default)]
    #[schema(example = "50000", pattern = "^[0-9]{1,19}$")]
    pub bandwidth: Option<String>,
}

/// `POST /admin/v1/tenants/{id}/sponsorship-budgets`: one rail's caps, replacing the
/// previous ones (the spend is kept).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetBody {
    /// The rail: `polygon`, `base`, `bsc`, `evm-<chain id>`, `tron` or `solana` (an
    /// enabled one).
    #[schema(example = "polygon")]
    pub rail: String,
    /// Caps per UTC calendar day.
    #[serde(default)]
    pub daily: Option<CapsBody>,
    /// Caps per UTC calendar month.
    #[serde(default)]
    pub monthly: Option<CapsBody>,
}

/// What sponsored payments consumed, decimal integer strings.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UsageView {
    /// Smallest native unit (wei, sun, lamports).
    pub native: String,
    /// TRON Energy.
    pub energy: String,
    /// TRON Bandwidth bytes.
    pub bandwidth: String,
}

/// A tenant's sponsorship budget on one rail and its spend.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BudgetView {
    /// The rail.
    #[schema(example = "polygon")]
    pub rail: String,
    /// Caps per UTC day (null resource: uncapped).
    pub daily: CapsBody,
    /// Caps per UTC month.
    pub monthly: CapsBody,
    /// The current UTC day, `YYYY-MM-DD`.
    pub day: String,
    /// Consumed by the tenant's confirmed payments on the rail this UTC day.
    pub spent_today: UsageView,
    /// Consumed this UTC month.
    pub spent_this_month: UsageView,
    /// What the next payment is expected to cost (the month's highest cost): a payment is
    /// refused when the spend plus this would pass a cap.
    pub estimated_next_cost: UsageView,
    /// When the day's spend starts over (RFC 3339).
    pub day_resets_at: String,
    /// When the month's spend starts over.
    pub month_resets_at: String,
    /// Confirmed payments metered since the budget was first set.
    pub payments_metered: u64,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339: the last cap change or metered payment.
    pub updated_at: String,
}

/// A tenant's budgets, in rail order.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct BudgetList {
    /// One per rail that has caps or was metered.
    pub sponsorship_budgets: Vec<BudgetView>,
}

fn usage_view(u: Usage) -> UsageView {
    UsageView {
        native: u.native.to_string(),
        energy: u.energy.to_string(),
        bandwidth: u.bandwidth.to_string(),
    }
}

fn caps_view(c: Caps) -> CapsBody {
    CapsBody {
        native: c.native.map(|v| v.to_string()),
        energy: c.energy.map(|v| v.to_string()),
        bandwidth: c.bandwidth.map(|v| v.to_string()),
    }
}

/// The view of `b` as of `now` (the engine hands budgets already rolled to `now`).
pub fn budget_view(b: &SponsorBudget, now: Timestamp) -> BudgetView {
    let s = b.spend.at(now);
    let day = now.to_rfc3339().chars().take(10).collect();
    BudgetView {
        rail: b.rail.name(),
        daily: caps_view(b.caps.daily),
        monthly: caps_view(b.caps.monthly),
        day,
        spent_today: usage_view(s.day),
        spent_this_month: usage_view(s.month),
        estimated_next_cost: usage_view(s.estimate(now)),
        day_resets_at: sponsorship::period_end(Period::Day, now).to_rfc3339(),
        month_resets_at: sponsorship::period_end(Period::Month, now).to_rfc3339(),
        payments_metered: s.payments,
        created_at: b.created_at.to_rfc3339(),
        updated_at: b.updated_at.to_rfc3339(),
    }
}

fn cap<T: std::str::FromStr>(field: &str, v: &Option<String>) -> Result<Option<T>, ApiError> {
    match v {
        None => Ok(None),
        Some(s) if !s.is_empty() && s.len() <= 38 && s.bytes().all(|b| b.is_ascii_digit()) => s
            .parse()
            .map(Some)
            .map_err(|_| invalid(field, "out of range")),
        Some(_) => Err(invalid(field, "a decimal integer string, e.g. \"1000000\"")),
    }
}

fn invalid(field: &str, reason: &str) -> ApiError {
    ApiError::bad_request("INVALID_PARAMETER", format!("{field}: {reason}")).with_param(field)
}

fn caps_of(prefix: &str, c: &Option<CapsBody>) -> Result<Caps, ApiError> {
    let Some(c) = c else {
        return Ok(Caps::default());
    };
    Ok(Caps {
        native: cap(&format!("{prefix}.native"), &c.native)?,
        energy: cap(&format!("{prefix}.energy"), &c.energy)?,
        bandwidth: cap(&format!("{prefix}.bandwidth"), &c.bandwidth)?,
    })
}

fn list(app: &AppState, budgets: Vec<SponsorBudget>) -> BudgetList {
    let now = app.engine.ports().clock.now();
    BudgetList {
        sponsorship_budgets: budgets.iter().map(|b| budget_view(b, now)).collect(),
    }
}

/// The tenant's sponsorship budgets and spend, per rail.
///
/// What the service spends to sponsor the tenant's payments (EVM gas in wei, TRON sun,
/// Energy and Bandwidth, Solana lamports of fees and rent), read from each confirmed
/// receipt, against the caps staff set per UTC day and month. A send, withdrawal, swap
/// or funding on a rail whose budget is spent is refused with 429
/// SPONSORSHIP_BUDGET_EXCEEDED before anything is held. Empty until staff set a budget.
#[utoipa::path(get, path = "/v1/sponsorship-budgets", tag = "policies",
    responses((status = 200, description = "The budgets", body = BudgetList)),
    security(("tenant_key" = [])))]
pub async fn list_sponsorship_budgets(
    State(app): State<AppState>,
    caller: Caller,
) -> Result<Json<BudgetList>, ApiError> {
    let bs = app.engine.sponsor_budgets(caller.tenant()).await?;
    Ok(Json(list(&app, bs)))
}

/// Staff: a tenant's sponsorship budgets and spend.
#[utoipa::path(get, path = "/admin/v1/tenants/{id}/sponsorship-budgets", tag = "admin",
    params(("id" = String, Path, description = "Tenant id (`ten_...`)")),
    responses(
        (status = 200, description = "The budgets (empty for an unknown tenant)", body = BudgetList),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED", body = ErrorBody),
        (status = 404, description = "ADMIN_DISABLED", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn staff_list_sponsorship_budgets(
    State(app): State<AppState>,
    _staff: Staff,
    ApiPath(id): ApiPath,
) -> Result<Json<BudgetList>, ApiError> {
    let bs = app.engine.sponsor_budgets(&TenantId(id)).await?;
    Ok(Json(list(&app, bs)))
}

/// Staff: set a tenant's sponsorship budget on one rail.
///
/// Replaces the rail's caps (absent or null: uncapped; both periods empty lifts the
/// budget, metering goes on); the spend is kept. Periods are UTC calendar days and
/// months. From then on every confirmed payment of the tenant on any rail is metered
/// from its receipt, and a sponsored request whose budget is spent (or whose estimated
/// cost, the month's highest, would pass a cap) is refused with 429
/// SPONSORSHIP_BUDGET_EXCEEDED before anything is held. Payments already in flight are
/// not counted until confirmed, so they may overshoot a cap by their own cost. Audited
/// (`sponsorship_budget.set`).
#[utoipa::path(post, path = "/admin/v1/tenants/{id}/sponsorship-budgets", tag = "admin",
    params(("id" = String, Path, description = "Tenant id (`ten_...`)")),
    request_body = BudgetBody,
    responses(
        (status = 200, description = "The budget as set", body = BudgetView),
        (status = 400, description = "INVALID_PARAMETER (`rail`, a cap), UNKNOWN_FIELD", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND (the tenant); ADMIN_DISABLED", body = ErrorBody),
        (status = 409, description = "CONFLICT: metering kept changing it; retry", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn set_sponsorship_budget(
    State(app): State<AppState>,
    staff: Staff,
    ApiPath(id): ApiPath,
    ApiJson(body): ApiJson<BudgetBody>,
) -> Result<Json<BudgetView>, ApiError> {
    let rail = app.engine.rail_named(&body.rail)?;
    let caps = BudgetCaps {
        daily: caps_of("daily", &body.daily)?,
        monthly: caps_of("monthly", &body.monthly)?,
    };
    let b = app
        .engine
        .set_sponsor_budget(staff.identity(), &TenantId(id), rail, caps)
        .await?;
    Ok(Json(budget_view(&b, app.engine.ports().clock.now())))
}

/// `stablecoin_sponsorship_spent` and `stablecoin_sponsorship_cap` gauges, read from the
/// budget records at scrape time (right on every node and after a restart), labelled by
/// `tenant`, `rail`, `period` (`day`, `month`: the current UTC ones) and `resource`
/// (`native` in the chain's unit; `energy`, `bandwidth` on TRON only).
///
/// Cardinality: one series per tenant that staff gave a budget, per rail it was metered
/// or capped on, per period and resource (at most 2 x 3), so it grows only by staff
/// action, never by traffic. A store error leaves the lines out rather than report a
/// false zero.
pub async fn budget_gauges(app: &AppState) -> String {
    let Ok(all) = app.engine.all_sponsor_budgets().await else {
        return String::new();
    };
    let now = app.engine.ports().clock.now();
    let mut spent = String::from(
        "# HELP stablecoin_sponsorship_spent What a tenant's confirmed payments cost the service in the current UTC day or month, in the chain's unit (native: wei, sun, lamports; TRON energy and bandwidth).\n# TYPE stablecoin_sponsorship_spent gauge\n",
    );
    let mut caps = String::from(
        "# HELP stablecoin_sponsorship_cap A tenant's sponsorship budget cap per UTC day or month (only capped resources).\n# TYPE stablecoin_sponsorship_cap gauge\n",
    );
    for b in &all {
        let s = b.spend.at(now);
        let rail = b.rail.name();
        let tron = rail == "tron";
        for (period, used, cap) in [
            ("day", s.day, b.caps.daily),
            ("month", s.month, b.caps.monthly),
        ] {
            let lines: [(&str, u128, Option<u128>); 3] = [
                ("native", used.native, cap.native),
                ("energy", used.energy.into(), cap.energy.map(u128::from)),
                (
                    "bandwidth",
                    used.bandwidth.into(),
                    cap.bandwidth.map(u128::from),
                ),
            ];
            for (resource, value, cap) in lines {
                let labels = format!(
                    "tenant=\"{}\",rail=\"{rail}\",period=\"{period}\",resource=\"{resource}\"",
                    crate::metrics::escape_label(&b.tenant.0)
                );
                if resource == "native" || tron || value > 0 {
                    spent.push_str(&format!(
                        "stablecoin_sponsorship_spent{{{labels}}} {value}\n"
                    ));
                }
                if let Some(c) = cap {
                    caps.push_str(&format!("stablecoin_sponsorship_cap{{{labels}}} {c}\n"));
                }
            }
        }
    }
    spent + &caps
}
