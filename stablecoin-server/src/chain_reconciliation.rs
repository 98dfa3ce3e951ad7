//! The chain reconciliation job (`[reconciliation]`): compares the ledger with the
//! chains at start and then every `reconciliation.interval_ms`, on the workers' thread
//! (so only where `run_workers` is on, at the workers' CPU priority).
//!
//! The server decides nothing here: what is compared, and what counts as in flight, is
//! the engine's rule ([`stablecoin_core::engine::Engine::reconcile_chains`]). Each pass
//! is reported three ways:
//! - metrics: `stablecoin_ledger_drift_micros{rail,token,direction}`,
//!   `stablecoin_ledger_drift_accounts`, `stablecoin_reconciliation_runs_total`, ...;
//! - readiness: the `reconciliation` object of `GET /health/ready` (a drift does not
//!   make readiness fail: stopping payments would not bring the money back, and the
//!   operator needs the API to investigate);
//! - the staff report `GET /admin/v1/reconciliation`, with every drifted account,
//!   address and amount.
//!
//! A drift is logged at error level (a shortfall is money missing), every pass it
//! persists.

use crate::state::AppState;
use stablecoin_core::engine::ReconciliationReport;
use tokio::sync::watch;

/// The job's loop ([`crate::periodic::every`]) until `stop` says the server is stopping.
pub(crate) async fn run(state: AppState, stop: watch::Receiver<bool>) {
    let settings = &state.config.reconciliation;
    if !settings.enabled {
        return;
    }
    let interval = std::time::Duration::from_millis(settings.interval_ms);
    let engine = state.engine.clone();
    let pass = move || {
        let engine = engine.clone();
        async move { engine.reconcile_chains().await }
    };
    let leases = state.leases.clone();
    let job = (crate::workers::RECONCILIATION, &*leases);
    crate::periodic::every(job, interval, stop, pass, |outcome| match outcome {
        Ok(report) => {
            state.metrics.reconciliation_ran(&report);
            log(&report);
        }
        Err(e) => {
            state.metrics.reconciliation_failed();
            tracing::error!(error = %e, "chain reconciliation panicked; trying again later");
        }
    })
    .await;
}

fn log(report: &ReconciliationReport) {
    for d in &report.drifts {
        tracing::error!(
            account = %d.account,
            rail = %d.rail,
            token = %d.token,
            address = d.address.as_deref().unwrap_or(""),
            drift_micros = %d.drift_micros,
            direction = ?d.direction,
            "ledger and chain disagree"
        );
    }
    if !report.errors.is_empty() {
        tracing::warn!(
            accounts = report.errors.len(),
            first = %report.errors[0],
            "chain reconciliation could not compare some accounts; next pass retries"
        );
    }
}
