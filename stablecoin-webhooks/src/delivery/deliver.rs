//! Delivering due deliveries: claim them, attempt several at once (see [`super::attempt`]),
//! commit their outcomes in groups as they finish, then track each endpoint's health
//! (`failing_since`, automatic disabling).

use super::retry::Next;
use super::{AUTO_DISABLE_AFTER_MS, Deliverer, Delivery, Endpoint, RoundReport, store_err};
use crate::error::{WebhookError, WebhookResult};
use futures_util::StreamExt;
use stablecoin_core::domain::ids::WebhookEndpointId;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::{Record, RecordError, get_record};
use stablecoin_core::ports::{Batch, Put, StoreError, StoredRecord};
use std::collections::HashMap;

/// Most attempt outcomes committed in one store commit.
pub const OUTCOME_GROUP: usize = 64;

/// Per endpoint id: (2xx, when) of each attempt whose outcome was committed.
pub(super) type Health = HashMap<String, Vec<(bool, Timestamp)>>;

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
        let mut claimed = self.claim(self.config.batch_limit).await?;
        claimed.extend(held);
        if claimed.is_empty() {
            return Ok(());
        }
        // One read per endpoint per round, not per delivery.
        let mut endpoints: HashMap<String, Option<Endpoint>> = HashMap::new();
        let mut due = Vec::with_capacity(claimed.len());
        for stored in &claimed {
            let d = Delivery::from_stored(stored)?;
            if !endpoints.contains_key(d.endpoint.as_str()) {
                let e = self.usable_endpoint(d.endpoint.as_str()).await?;
                endpoints.insert(d.endpoint.0.clone(), e);
            }
            due.push((d, stored.version));
        }
        let endpoints = &endpoints;
        // Attempts and commits overlap: while a group of outcomes is being committed,
        // the next requests are already in flight.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let attempts = async move {
            let mut finished = futures_util::stream::iter(due)
                .map(|(d, version)| {
                    let e = endpoints.get(d.endpoint.as_str()).and_then(Option::as_ref);
                    self.attempt_claimed(d, version, e)
                })
                .buffer_unordered(self.config.concurrency.max(1));
            while let Some(r) = finished.next().await {
                if tx.send(r).is_err() {
                    break;
                }
            }
        };
        let commits = async {
            // Per endpoint: (ok, time) of each attempt, for the health tracking below.
            let mut health = Health::new();
            let mut first_error = None;
            while let Some(first) = rx.recv().await {
                let mut chunk = vec![first];
                while chunk.len() < OUTCOME_GROUP {
                    match rx.try_recv() {
                        Ok(r) => chunk.push(r),
                        Err(_) => break,
                    }
                }
                let ready: Vec<Prepared> = chunk.into_iter().flatten().collect();
                if let Err(e) = self.commit_and_count(ready, report, &mut health).await {
                    // Not committed: the claims lapse and the deliveries are tried again.
                    first_error.get_or_insert(e);
                }
            }
            (health, first_error)
        };
        let ((), (health, first_error)) = tokio::join!(attempts, commits);
        let health_error = self.track_all(health, report).await.err();
        match first_error.or(health_error) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Claims up to `limit` due deliveries for this worker's lease.
    pub(super) async fn claim(&self, limit: usize) -> WebhookResult<Vec<StoredRecord>> {
        self.store
            .claim_due(
                Delivery::KIND,
                0,
                &self.config.worker_id,
                self.clock.now(),
                self.config.lease_ms,
                limit,
            )
            .await
            .map_err(store_err)
    }

    /// An endpoint as stored, if it exists and is enabled.
    pub(super) async fn usable_endpoint(&self, id: &str) -> WebhookResult<Option<Endpoint>> {
        Ok(get_record::<Endpoint>(&*self.store, id)
            .await?
            .map(|v| v.record)
            .filter(|e| e.enabled))
    }

    /// Commits attempted deliveries (see [`Self::commit_outcomes`]), counts what was
    /// kept in `report` and notes each kept attempt's outcome per endpoint in `health`.
    pub(super) async fn commit_and_count(
        &self,
        ready: Vec<Prepared>,
        report: &mut RoundReport,
        health: &mut Health,
    ) -> WebhookResult<()> {
        for p in self.commit_outcomes(ready).await? {
            match p.outcome {
                Next::Delivered => report.delivered += 1,
                Next::Retry { .. } => report.retried += 1,
                Next::Dead => report.dead += 1,
            }
            if let Some(a) = p.health {
                health.entry(p.endpoint).or_default().push(a);
            }
        }
        Ok(())
    }

    /// Tracks the health of every endpoint in `health` (read afresh, so a concurrent
    /// change is not overwritten); endpoints it disables go to `report`. Every endpoint
    /// is tried; the first error is returned.
    pub(super) async fn track_all(
        &self,
        health: Health,
        report: &mut RoundReport,
    ) -> WebhookResult<()> {
        let mut first_error = None;
        for (id, mut attempts) in health {
            attempts.sort_by_key(|(_, at)| *at);
            let tracked = match get_record::<Endpoint>(&*self.store, &id).await {
                Ok(Some(v)) => self.track_health(v.record, v.version, &attempts).await,
                Ok(None) => Ok(None),
                Err(e) => Err(e.into()),
            };
            match tracked {
                Ok(Some(disabled)) => report.auto_disabled.push(disabled),
                Ok(None) => {}
                Err(e) => {
                    first_error.get_or_insert(e);
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
    pub(super) async fn commit_outcomes(
        &self,
        ready: Vec<Prepared>,
    ) -> WebhookResult<Vec<Prepared>> {
        self.commit_each(ready, |p| p.delivery.update(p.version))
            .await
    }

    /// Commits `put(item)` of every item in one batch or, when a version conflict fails
    /// it, one by one; returns the items committed (the others changed meanwhile).
    pub(super) async fn commit_each<T>(
        &self,
        items: Vec<T>,
        put: impl Fn(&T) -> Result<Put, RecordError>,
    ) -> WebhookResult<Vec<T>> {
        if items.is_empty() {
            return Ok(items);
        }
        let puts = items.iter().map(&put).collect::<Result<Vec<_>, _>>()?;
        match self
            .store
            .commit(Batch {
                puts,
                background: true,
                ..Default::default()
            })
            .await
        {
            Ok(_) => return Ok(items),
            Err(StoreError::VersionConflict { .. }) => {}
            Err(e) => return Err(store_err(e)),
        }
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            match self
                .store
                .commit(Batch {
                    puts: vec![put(&item)?],
                    background: true,
                    ..Default::default()
                })
                .await
            {
                Ok(_) => kept.push(item),
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
        match self.put_endpoint(&e, Some(version)).await {
            Ok(_) => Ok(disabled),
            Err(WebhookError::Conflict { .. }) => Ok(None),
            Err(err) => Err(err),
        }
    }
}
