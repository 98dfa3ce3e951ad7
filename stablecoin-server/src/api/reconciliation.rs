//! The chain reconciliation as staff and operators see it: the staff report
//! (`GET /admin/v1/reconciliation`) and the summary in `GET /health/ready`. The
//! comparison itself is the engine's (`Engine::reconcile_chains`); see
//! [`crate::chain_reconciliation`] for the job that runs it.

use crate::error::ApiError;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use stablecoin_core::engine::{DriftDirection, DriftLine, ReconciliationReport};
use utoipa::ToSchema;

/// The reconciliation in `GET /health/ready`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReconciliationSummary {
    /// IN_BALANCE (every account compared, none drifted), DRIFT (an account's chain
    /// balance is outside what its ledger balance allows: see the staff report),
    /// INCOMPLETE (some accounts could not be read; none drifted), PENDING (no pass has
    /// finished yet) or DISABLED (`reconciliation.enabled = false`, or no workers here).
    #[schema(example = "IN_BALANCE")]
    pub status: String,
    /// When the last pass finished (RFC 3339), if one has.
    pub checked_at: Option<String>,
    /// Accounts the last pass compared.
    pub accounts_checked: u64,
    /// Accounts it found drifted.
    pub drifted_accounts: u64,
}

impl ReconciliationSummary {
    /// The summary of `last` (`None`: no pass yet); `enabled` false reports DISABLED.
    pub fn of(enabled: bool, last: Option<&ReconciliationReport>) -> Self {
        let status = match (enabled, last) {
            (false, _) => "DISABLED",
            (true, None) => "PENDING",
            (true, Some(r)) if !r.drifts.is_empty() => "DRIFT",
            (true, Some(r)) if !r.errors.is_empty() => "INCOMPLETE",
            (true, Some(_)) => "IN_BALANCE",
        };
        ReconciliationSummary {
            status: status.into(),
            checked_at: last.map(|r| r.finished_at.to_rfc3339()),
            accounts_checked: last.map_or(0, |r| r.accounts_checked),
            drifted_accounts: last.map_or(0, |r| r.drifts.len() as u64),
        }
    }
}

/// One drifted account in the staff report. Amounts are decimal strings of micro-units
/// (exact integers; a shortfall is negative).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct DriftLineResponse {
    /// The ledger account (`wallet:<wallet>:USDC`, `fees:service:USDT`).
    pub account: String,
    /// The rail (`polygon`, `tron`, ...), or `all` for the fee sum over rails.
    pub rail: String,
    /// USDC or USDT.
    pub token: String,
    /// The address read on chain, when one was.
    pub address: Option<String>,
    /// SHORTFALL (missing on chain) or EXCESS (more on chain than recorded).
    pub direction: String,
    /// The drift, in micro-units: chain minus the nearest balance the ledger allows.
    #[schema(example = "-2500000")]
    pub drift_micros: String,
    /// The ledger's posted balance, in micro-units.
    pub ledger_posted_micros: String,
    /// Held amounts leaving, in micro-units (may already be gone on chain).
    pub in_flight_out_micros: String,
    /// Held amounts arriving, in micro-units (may already be there on chain).
    pub in_flight_in_micros: String,
    /// Tokens at this address the ledger holds in quarantine (deposits from flagged
    /// senders, not yet released or returned), in micro-units: counted with the ledger
    /// balance, so they are no drift.
    #[schema(example = "0")]
    pub quarantined_micros: String,
    /// What the chain says, in micro-units.
    pub chain_micros: String,
}

impl From<&DriftLine> for DriftLineResponse {
    fn from(d: &DriftLine) -> Self {
        DriftLineResponse {
            account: d.account.clone(),
            rail: d.rail.clone(),
            token: d.token.to_string(),
            address: d.address.clone(),
            direction: match d.direction {
                DriftDirection::Shortfall => "SHORTFALL",
                DriftDirection::Excess => "EXCESS",
            }
            .into(),
            drift_micros: d.drift_micros.to_string(),
            ledger_posted_micros: d.ledger_posted_micros.to_string(),
            in_flight_out_micros: d.in_flight_out_micros.to_string(),
            in_flight_in_micros: d.in_flight_in_micros.to_string(),
            quarantined_micros: d.quarantined_micros.to_string(),
            chain_micros: d.chain_micros.to_string(),
        }
    }
}

/// `GET /admin/v1/reconciliation`: the last pass, in full.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ReconciliationResponse {
    /// As in `GET /health/ready`.
    pub summary: ReconciliationSummary,
    /// When the pass started (RFC 3339).
    pub started_at: String,
    /// Every drifted account, in the order found.
    pub drifts: Vec<DriftLineResponse>,
    /// The accounts that could not be compared, with why (no URL or credential: rail
    /// errors are reported by their code).
    pub unreadable: Vec<String>,
}

/// Staff: the ledger compared with the chains, every drifted account with its address
/// and amounts.
///
/// Answers the last pass of this server's reconciliation job; when none has finished
/// yet (or the job is off here), runs one now. Reads only. Needs
/// `Authorization: Bearer <admin.token>`; without an `[admin] token` the route answers
/// 404 ADMIN_DISABLED.
#[utoipa::path(get, path = "/admin/v1/reconciliation", tag = "admin",
    responses(
        (status = 200, description = "The last reconciliation pass", body = ReconciliationResponse),
        (status = 401, description = "ADMIN_TOKEN_REQUIRED: no admin bearer token, or a wrong one", body = crate::error::ErrorBody),
        (status = 403, description = "KEY_KIND_NOT_ALLOWED: an API key instead of the admin token", body = crate::error::ErrorBody),
        (status = 404, description = "ADMIN_DISABLED: the server has no admin token", body = crate::error::ErrorBody)),
    security(("admin_token" = [])))]
pub async fn report(State(app): State<AppState>) -> Result<Json<ReconciliationResponse>, ApiError> {
    let report = match app.engine.last_reconciliation() {
        Some(r) => r,
        None => app.engine.reconcile_chains().await,
    };
    Ok(Json(ReconciliationResponse {
        summary: ReconciliationSummary::of(true, Some(&report)),
        started_at: report.started_at.to_rfc3339(),
        drifts: report.drifts.iter().map(Into::into).collect(),
        unreadable: report.errors.clone(),
    }))
}
