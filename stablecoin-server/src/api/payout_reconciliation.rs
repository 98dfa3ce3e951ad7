//! `POST /admin/v1/payouts/reconciliation` (issue #52 item 4): staff upload a payout
//! provider's settlement report (the M-Pesa organisation statement or the MTN MoMo
//! statement, as CSV) for a tenant and a period, and get each payout back as matched,
//! amount_differs, missing_on_our_side or missing_on_their_side.
//!
//! Parsing is `stablecoin_providers::settlement_reports`', the comparison
//! `stablecoin_core::domain::payout_reconciliation`'s (both pure), the reads the
//! engine's (`Engine::reconcile_payouts`); this maps HTTP to them. Nothing is stored:
//! the same upload answers the same report. Documented in docs/exports.md.

use crate::auth::Staff;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::payout_reconciliation::{Outcome, ReconLine};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_providers::ProviderError;
use stablecoin_providers::settlement_reports::{parse_mpesa_statement, parse_mtn_momo_statement};
use utoipa::ToSchema;

/// The largest request body of the route: a month's statement of a busy account fits
/// (the rest of the API keeps `body_limit_bytes`, 64 KiB by default).
pub const REPORT_BODY_LIMIT: usize = 16 * 1024 * 1024;

/// A settlement report to reconcile.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PayoutReconciliationBody {
    /// The report's provider and format: `mpesa` (the M-Pesa organisation statement)
    /// or `mtn_momo` (the MoMo partner portal's statement). Only payouts paid through
    /// that provider are compared.
    #[schema(example = "mpesa")]
    pub provider: String,
    /// The tenant whose withdrawals are compared (`ten_...`).
    pub tenant: String,
    /// Start of the report's period (RFC 3339, inclusive).
    #[schema(example = "2026-11-29T00:00:00Z")]
    pub from: String,
    /// End of the report's period (RFC 3339, exclusive).
    #[schema(example = "2026-11-30T00:00:00Z")]
    pub to: String,
    /// The report file's text, CSV as the provider's portal exports it (docs/exports.md
    /// lists the columns read).
    pub report: String,
}

/// How many payouts landed in each outcome.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct ReconciliationCounts {
    /// Both sides, same amount.
    pub matched: u64,
    /// Both sides, different amounts or currencies.
    pub amount_differs: u64,
    /// In the report; not a payout we recorded as paid.
    pub missing_on_our_side: u64,
    /// Paid here in the period; not in the report.
    pub missing_on_their_side: u64,
}

/// One payout of the reconciliation.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReconciliationLineView {
    /// `matched`, `amount_differs`, `missing_on_our_side` or `missing_on_their_side`.
    pub outcome: String,
    /// Our withdrawal (`wd_...`), when one was found.
    #[schema(nullable = true)]
    pub withdrawal: Option<String>,
    /// Its status (`COMPLETED`, `PAYOUT_UNKNOWN`, ...), when one was found.
    #[schema(nullable = true)]
    pub status: Option<String>,
    /// The provider's reference (M-Pesa receipt, MTN financial transaction id).
    #[schema(nullable = true)]
    pub reference: Option<String>,
    /// Our payout amount (decimal string, the currency's major unit).
    #[schema(nullable = true)]
    pub our_amount: Option<String>,
    /// The report's amount.
    #[schema(nullable = true)]
    pub their_amount: Option<String>,
    /// ISO 4217.
    #[schema(nullable = true)]
    pub currency: Option<String>,
    /// The report's line (1-based), for payouts the report has.
    #[schema(nullable = true)]
    pub report_line: Option<u64>,
}

/// A payout reconciliation: report payouts in report order, then ours it lacks.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct PayoutReconciliationView {
    /// Always `payout_reconciliation`.
    pub object: String,
    /// `mpesa` or `mtn_momo`.
    pub provider: String,
    /// The tenant.
    pub tenant: String,
    /// The period's start.
    pub from: String,
    /// The period's end (exclusive).
    pub to: String,
    /// Payouts the report shows.
    pub report_payouts: u64,
    /// Per outcome.
    pub counts: ReconciliationCounts,
    /// Every payout of either side, once.
    pub lines: Vec<ReconciliationLineView>,
}

fn instant(field: &'static str, s: &str) -> Result<Timestamp, ApiError> {
    Timestamp::parse_rfc3339(s.trim()).ok_or_else(|| {
        ApiError::bad_request(
            "INVALID_PARAMETER",
            format!("{field} must be an RFC 3339 timestamp"),
        )
        .with_param(field)
    })
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Matched => "matched",
        Outcome::AmountDiffers => "amount_differs",
        Outcome::MissingOnOurSide => "missing_on_our_side",
        Outcome::MissingOnTheirSide => "missing_on_their_side",
    }
}

fn line_view(l: &ReconLine) -> ReconciliationLineView {
    ReconciliationLineView {
        outcome: outcome_name(l.outcome).into(),
        withdrawal: l.withdrawal.clone(),
        status: l.status.clone(),
        reference: l.reference.clone(),
        our_amount: l.our_amount.map(|a| a.to_string()),
        their_amount: l.their_amount.map(|a| a.to_string()),
        currency: l.currency.clone(),
        report_line: l.report_line.map(|n| n as u64),
    }
}

/// Staff: reconcile a payout provider's settlement report with a tenant's withdrawals.
///
/// Report payouts are matched to withdrawals by the provider's reference (the
/// withdrawal's `payout_reference`) or, in MTN's report, by `External Transaction Id`
/// (the withdrawal id). A withdrawal is the period's when it COMPLETED in `[from, to)`;
/// withdrawals accepted up to 7 days before `from` are looked up too. Nothing is stored.
#[utoipa::path(post, path = "/admin/v1/payouts/reconciliation", tag = "admin",
    request_body = PayoutReconciliationBody,
    responses(
        (status = 200, description = "The reconciliation", body = PayoutReconciliationView),
        (status = 400, description = "INVALID_PARAMETER (provider, from, to, report: the report is not the provider's format, naming the line), UNKNOWN_FIELD", body = ErrorBody),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED, STAFF_ACCOUNT_DISABLED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND (no such tenant); ADMIN_DISABLED", body = ErrorBody)),
    security(("admin_token" = [])))]
pub async fn reconcile_payouts(
    State(app): State<AppState>,
    _staff: Staff,
    ApiJson(body): ApiJson<PayoutReconciliationBody>,
) -> Result<Json<PayoutReconciliationView>, ApiError> {
    let parse = match body.provider.as_str() {
        "mpesa" => parse_mpesa_statement,
        "mtn_momo" => parse_mtn_momo_statement,
        _ => {
            return Err(ApiError::bad_request(
                "INVALID_PARAMETER",
                "provider must be mpesa or mtn_momo",
            )
            .with_param("provider"));
        }
    };
    let from = instant("from", &body.from)?;
    let to = instant("to", &body.to)?;
    let theirs = parse(&body.report).map_err(|e| {
        let message = match &e {
            ProviderError::BadReport { line: 0, reason } => reason.clone(),
            ProviderError::BadReport { line, reason } => format!("line {line}: {reason}"),
            other => other.to_string(),
        };
        ApiError::bad_request("INVALID_PARAMETER", message).with_param("report")
    })?;
    let tenant = TenantId(body.tenant.trim().to_string());
    app.engine.tenant(&tenant).await?;
    let lines = app
        .engine
        .reconcile_payouts(&tenant, &body.provider, from, to, &theirs)
        .await?;
    let mut counts = ReconciliationCounts::default();
    for l in &lines {
        *match l.outcome {
            Outcome::Matched => &mut counts.matched,
            Outcome::AmountDiffers => &mut counts.amount_differs,
            Outcome::MissingOnOurSide => &mut counts.missing_on_our_side,
            Outcome::MissingOnTheirSide => &mut counts.missing_on_their_side,
        } += 1;
    }
    Ok(Json(PayoutReconciliationView {
        object: "payout_reconciliation".into(),
        provider: body.provider,
        tenant: tenant.0,
        from: from.to_rfc3339(),
        to: to.to_rfc3339(),
        report_payouts: theirs.len() as u64,
        counts,
        lines: lines.iter().map(line_view).collect(),
    }))
}
