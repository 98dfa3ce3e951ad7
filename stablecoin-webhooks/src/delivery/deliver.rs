//! Delivering due deliveries: claim them, attempt several at once (see [`super::attempt`]),
//! commit their outcomes in groups as they finish, then track each endpoint's health
//! (`failing_since`, automatic disabling).

use super::retry::Next;
use super::{AUTO_DISABLE_AFTER_MS, Deliverer, Delivery, Endpoint, RoundReport, store_err};
use crate::error::{WebhookError, WebhookResult};
use futures_util::StreamExt;
use stablecoin_core::domain::ids::WebhookEndpointId;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::{Record, get_record};
use stablecoin_core::ports::{Batch, StoreError, StoredRecord};
use std::collections::HashMap;

/// Most attempt outcomes committed in one store commit.
pub const OUTCOME_GROUP: usize = 64;

/// An attempted delivery whose new state is not committed yet.
pub(super) struct Prepared {
    pub(super) endpoint: String,
    /// (2xx, when) of the attempt, when the endpoint was usable.
    pub(super) health: Option<(bool, Timestamp)>,
    pub(super) delivery: Delivery,
    pub(super) version: u64,
    pub(super) outcome: Next,
}

impl Deliverer {
    /// Attempts every due delivery once (up to the batch limit), several at once.
    /// Outcomes are committed in groups as attempts finish (one store commit for up to
    /// [`OUTCOME_GROUP`] outcomes instead of one each): a crash between an attempt and
    /// its commit only means the delivery is attempted again after its lease, which
    /// receivers already handle (they dedupe on the event id / `X-Webhook-ID`).
    pub async fn deliver_due(&self, report: &mut RoundReport) -> WebhookResult<()> {
        self.deliver(Vec::new(), report).await
    }

    /// Attempts `held` (deliveries this worker already holds, as stored) and every due
    /// delivery it can claim.
    pub(super) async fn deliver(
        &self,
        held: Vec<StoredRecord>,
        report: &mut RoundReport,
    ) -> WebhookResult<()> {
        let now = self.clock.now();
        let mut claimed = self
            .store
            .claim_due(
                Delivery::KIND,
                &self.config.worker_id,
                now,
                self.config.lease_ms,
                self.config.batch_limit,
            )
            .await
            .map_err(store_err)?;
        claimed.extend(held);
        if claimed.is_empty() {
            return Ok(());
        }
        // One read per endpoint per round, not per delivery.
        let mut endpoints: HashMap<String, Option<(Endpoint, u64)>> = HashMap::new();
        for stored in &claimed {
            let d = Delivery::from_stored(stored)?;
            if !endpoints.contains_key(d.endpoint.as_str()) {
                let e = get_record::<Endpoint>(&*self.store, d.endpoint.as_str())
                    .await?
                    .filter(|e| e.record.enabled)
                    .map(|e| (e.record, e.version));
                endpoints.insert(d.endpoint.0.clone(), e);
            }
        }
        let endpoints = &endpoints;
        // Attempts and commits overlap: while a group of outcomes is being committed,
        // the next requests are already in flight.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let attempts = async move {
            let mut finished = futures_util::stream::iter(claimed)
                .map(|stored| self.attempt_claimed(stored, endpoints))
                .buffer_unordered(self.config.concurrency.max(1));
            while let Some(r) = finished.next().await {
                if tx.send(r).is_err() {
                    break;
                }
            }
        };
        let commits = async {
            // Per endpoint: (ok, time) of each attempt, for the health tracking below.
            let mut health: HashMap<String, Vec<(bool, Timestamp)>> = HashMap::new();
            let mut first_error = None;
            while let Some(first) = rx.recv().await {
                let mut chunk = vec![first];
                while chunk.len() < OUTCOME_GROUP {
                    match rx.try_recv() {
                        Ok(r) => chunk.push(r),
                        Err(_) => break,
                    }
                }
                let mut ready = Vec::with_capacity(chunk.len());
                for r in chunk {
                    match r {
                        Ok(Some(p)) => ready.push(p),
                        Ok(None) => {}
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                match self.commit_outcomes(ready).await {
                    Ok(kept) => {
                        for p in kept {
                            match p.outcome {
                                Next::Delivered => report.delivered += 1,
                                Next::Retry { .. } => report.retried += 1,
                                Next::Dead => report.dead += 1,
                            }
                            if let Some(a) = p.health {
                                health.entry(p.endpoint).or_default().push(a);
                            }
                        }
                    }
                    Err(e) => {
                        // Not committed: the claims lapse and the deliveries are tried again.
                        first_error.get_or_insert(e);
                    }
                }
            }
            (health, first_error)
        };
        let ((), (health, mut first_error)) = tokio::join!(attempts, commits);
        for (id, mut attempts) in health {
            attempts.sort_by_key(|(_, at)| *at);
            if let Some(Some((e, version))) = endpoints.get(&id) {
                match self.track_health(e.clone(), *version, &attempts).await {
                    Ok(Some(disabled)) => report.auto_disabled.push(disabled),
                    Ok(None) => {}
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Commits attempted deliveries together; if one of them lost its claim (a version
    /// conflict fails the whole group), commits them one by one and drops the losers,
    /// whose outcome another worker decided.
    async fn commit_outcomes(&self, ready: Vec<Prepared>) -> WebhookResult<Vec<Prepared>> {
        if ready.is_empty() {
            return Ok(ready);
        }
        let puts = ready
            .iter()
            .map(|p| p.delivery.update(p.version))
            .collect::<Result<Vec<_>, _>>()?;
        match self
            .store
            .commit(Batch {
                puts,
                background: true,
                ..Default::default()
            })
            .await
        {
            Ok(_) => return Ok(ready),
            Err(StoreError::VersionConflict { .. }) => {}
            Err(e) => return Err(store_err(e)),
        }
        let mut kept = Vec::with_capacity(ready.len());
        for p in ready {
            match self
                .store
                .commit(Batch {
                    puts: vec![p.delivery.update(p.version)?],
                    background: true,
                    ..Default::default()
                })
                .await
            {
                Ok(_) => kept.push(p),
                Err(StoreError::VersionConflict { .. }) => {}
                Err(e) => return Err(store_err(e)),
            }
        }
        Ok(kept)
    }

    /// Keeps `failing_since` and disables an endpoint that has failed for days, given
    /// this round's attempts to it in time order. Best effort under concurrency: a
    /// version conflict means another worker just updated the endpoint, and the next
    /// round looks again.
    async fn track_health(
        &self,
        mut e: Endpoint,
        version: u64,
        attempts: &[(bool, Timestamp)],
    ) -> WebhookResult<Option<WebhookEndpointId>> {
        let before = (e.enabled, e.failing_since);
        let mut disabled = None;
        for &(ok, at) in attempts {
            match (ok, e.failing_since) {
                (true, _) => e.failing_since = None,
                (false, None) => e.failing_since = Some(at),
                (false, Some(since))
                    if e.enabled && at.millis() - since.millis() >= AUTO_DISABLE_AFTER_MS =>
                {
                    e.enabled = false;
                    e.disabled_reason = Some(format!(
                        "disabled automatically: every delivery has failed since {}",
                        since.to_rfc3339()
                    ));
                    disabled = Some(e.id.clone());
                }
                (false, Some(_)) => {}
            }
        }
        if (e.enabled, e.failing_since) == before {
            return Ok(None);
        }
        match self.put(e.update(version)?).await {
            Ok(()) => Ok(disabled),
            Err(WebhookError::Conflict { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }
}
