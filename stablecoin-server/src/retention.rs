//! The retention job: deletes what has outlived its window (`[retention]`), at start and
//! then every `retention.interval_ms`, on the workers' thread (so only where
//! `run_workers` is on, at the workers' CPU priority).
//!
//! The server decides nothing here: what may go, and the smallest windows, are the
//! engines' rules (`Engine::purge_expired`: idempotency records, quotes, challenges;
//! `Deliverer::purge_expired`: webhook events, finished deliveries and the outbox events
//! fan-out has passed). Each purge is a
//! run of small deletes, so a large backlog never holds the database for long; several
//! nodes on one database run it one at a time, on the node holding its lease
//! (`crate::workers::SINGLETONS`; were two to run it, every row would still go once).
//!
//! A failing run is logged, counted (`stablecoin_retention_errors_total`) and tried again
//! at the next interval. It does not make readiness fail: records kept a little longer
//! are no reason to stop serving payments. What each run deleted is counted by kind
//! (`stablecoin_retention_purged_total{what}`).

use crate::state::AppState;
use stablecoin_core::engine::PurgeReport;
use stablecoin_webhooks::delivery::WebhookPurgeReport;
use tokio::sync::watch;

/// What one run of the job deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// The engine's records: idempotency records, quotes, challenges, console sessions,
    /// payout results.
    pub core: PurgeReport,
    /// Webhook event records, delivered or dead deliveries, and outbox events fan-out
    /// had passed.
    pub webhooks: WebhookPurgeReport,
}

impl RetentionReport {
    /// (what, rows deleted), as the metrics label them.
    pub fn counts(&self) -> [(&'static str, u64); 8] {
        [
            ("idempotency", self.core.idempotency),
            ("quote", self.core.quotes),
            ("challenge", self.core.challenges),
            ("console_session", self.core.console_sessions),
            ("payout_result", self.core.payout_results),
            ("webhook_event", self.webhooks.events),
            ("webhook_delivery", self.webhooks.deliveries),
            ("outbox", self.webhooks.outbox),
        ]
    }
}

/// One run: the engine's purge, then the webhook deliverer's, with the windows of
/// `[retention]` (validated when the configuration was loaded).
pub async fn purge_once(state: &AppState) -> Result<RetentionReport, String> {
    let settings = &state.config.retention;
    let core = settings.engine().map_err(|e| e.to_string())?;
    let webhooks = settings.webhooks().map_err(|e| e.to_string())?;
    Ok(RetentionReport {
        core: state
            .engine
            .purge_expired(&core)
            .await
            .map_err(|e| e.to_string())?,
        webhooks: state
            .webhooks
            .purge_expired(&webhooks)
            .await
            .map_err(|e| e.to_string())?,
    })
}

/// The job's loop ([`crate::periodic::every`]), until `stop` says the server is
/// stopping. A panic in a run (a store bug) is counted as a failed run instead of ending
/// the job; a run still going when the server stops is abandoned between two deletes
/// (each is atomic, so nothing is half done).
pub(crate) async fn run(state: AppState, stop: watch::Receiver<bool>) {
    let settings = &state.config.retention;
    if !settings.enabled {
        return;
    }
    let interval = std::time::Duration::from_millis(settings.interval_ms);
    let task = state.clone();
    let pass = move || {
        let task = task.clone();
        async move { purge_once(&task).await }
    };
    let leases = state.leases.clone();
    let job = (crate::workers::RETENTION, &*leases);
    crate::periodic::every(job, interval, stop, pass, |outcome| match outcome {
        Ok(Ok(report)) => {
            state.metrics.retention_ran(&report.counts());
            let deleted: u64 = report.counts().iter().map(|(_, n)| n).sum();
            if deleted > 0 {
                tracing::info!(?report, "retention: purged expired records");
            }
        }
        Ok(Err(e)) => {
            state.metrics.retention_failed();
            tracing::warn!(error = %e, "retention run failed; trying again later");
        }
        Err(e) => {
            state.metrics.retention_failed();
            tracing::error!(error = %e, "retention run panicked; trying again later");
        }
    })
    .await;
}
