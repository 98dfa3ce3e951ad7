//! Inspection and replay: a tenant's events, deliveries and their attempts, and sending
//! an event (or every dead delivery of a time range) again. Everything is tenant-scoped:
//! another tenant's event or delivery is `NOT_FOUND`.

use super::fan_out::{new_delivery, subscribed};
use super::{Deliverer, Delivery, DeliveryState, Endpoint, EventDetail, Page, WebhookEvent};
use super::{not_found, store_err};
use crate::error::{WebhookError, WebhookResult};
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::{Record, get_record};
use stablecoin_core::ports::{Batch, ListQuery, StoreError};
use std::collections::HashMap;

impl Deliverer {
    pub(super) async fn list<R: Record>(
        &self,
        tenant: &TenantId,
        status: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> WebhookResult<Page<R>> {
        let (records, total) = self
            .store
            .list(&ListQuery {
                kind: R::KIND.into(),
                subkind: None,
                tenant: tenant.0.clone(),
                status: status.map(str::to_string),
                limit,
                offset,
            })
            .await
            .map_err(store_err)?;
        let items = records
            .iter()
            .map(R::from_stored)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Page { items, total })
    }

    /// A delivery of the tenant (inspection); another tenant's is not found.
    pub async fn delivery(&self, tenant: &TenantId, id: &str) -> WebhookResult<Delivery> {
        get_record::<Delivery>(&*self.store, id)
            .await?
            .filter(|v| &v.record.tenant == tenant)
            .map(|v| v.record)
            .ok_or_else(|| not_found("webhook delivery", id))
    }

    /// The tenant's events, newest first (optionally of one type), and their total.
    pub async fn list_events(
        &self,
        tenant: &TenantId,
        event_type: Option<&str>,
        limit: usize,
        offset: usize,
    ) -> WebhookResult<Page<WebhookEvent>> {
        self.list(tenant, event_type, limit, offset).await
    }

    /// The tenant's deliveries, newest first (optionally in one state), and their total.
    pub async fn list_deliveries(
        &self,
        tenant: &TenantId,
        state: Option<DeliveryState>,
        limit: usize,
        offset: usize,
    ) -> WebhookResult<Page<Delivery>> {
        self.list(tenant, state.map(DeliveryState::as_str), limit, offset)
            .await
    }

    async fn event_versioned(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> WebhookResult<(WebhookEvent, u64)> {
        get_record::<WebhookEvent>(&*self.store, id)
            .await?
            .filter(|v| &v.record.tenant == tenant)
            .map(|v| (v.record, v.version))
            .ok_or_else(|| not_found("webhook event", id))
    }

    /// One event of the tenant with its deliveries and every attempt of each.
    pub async fn event(&self, tenant: &TenantId, id: &str) -> WebhookResult<EventDetail> {
        let (event, _) = self.event_versioned(tenant, id).await?;
        let mut deliveries = Vec::with_capacity(event.deliveries.len());
        for d in &event.deliveries {
            if let Some(v) = get_record::<Delivery>(&*self.store, d).await? {
                deliveries.push(v.record);
            }
        }
        Ok(EventDetail { event, deliveries })
    }

    /// Sends one event again, now, to every enabled endpoint of the tenant subscribed to
    /// its type; returns the new deliveries. Same body, same `event_id`.
    pub async fn replay_event(&self, tenant: &TenantId, id: &str) -> WebhookResult<Vec<Delivery>> {
        for _ in 0..4 {
            let (mut event, version) = self.event_versioned(tenant, id).await?;
            let endpoints = self.enabled_endpoints(&tenant.0).await?;
            let now = self.clock.now();
            event.replays += 1;
            let created: Vec<Delivery> = subscribed(&endpoints, &event.event_type)
                .map(|e| new_delivery(&event, e, now, Some(event.replays)))
                .collect();
            let mut puts = Vec::with_capacity(created.len() + 1);
            for d in &created {
                event.deliveries.push(d.id.clone());
                puts.push(d.insert()?);
            }
            puts.push(event.update(version)?);
            match self
                .store
                .commit(Batch {
                    puts,
                    ..Default::default()
                })
                .await
            {
                Ok(_) => return Ok(created),
                Err(StoreError::VersionConflict { .. }) => continue,
                Err(e) => return Err(store_err(e)),
            }
        }
        Err(WebhookError::Conflict {
            what: format!("webhook event {id}"),
        })
    }

    /// Re-sends every `DEAD` delivery of the tenant created in `[from, to)` whose
    /// endpoint is enabled and that no earlier replay re-sent; returns the new
    /// deliveries (up to 1,000 per call; call again for more).
    pub async fn replay_failed(
        &self,
        tenant: &TenantId,
        from: Timestamp,
        to: Timestamp,
    ) -> WebhookResult<Vec<Delivery>> {
        if to.millis() <= from.millis() {
            return Err(WebhookError::InvalidParameter {
                field: "to",
                reason: "the range end must be after its start".into(),
            });
        }
        let endpoints: HashMap<String, Endpoint> = self
            .enabled_endpoints(&tenant.0)
            .await?
            .into_iter()
            .map(|e| (e.id.0.clone(), e))
            .collect();
        let mut created = Vec::new();
        let mut offset = 0;
        loop {
            let (records, _) = self
                .store
                .list(&ListQuery {
                    kind: Delivery::KIND.into(),
                    subkind: None,
                    tenant: tenant.0.clone(),
                    status: Some(DeliveryState::Dead.as_str().into()),
                    limit: 100,
                    offset,
                })
                .await
                .map_err(store_err)?;
            if records.is_empty() || created.len() >= 1000 {
                break;
            }
            offset += records.len();
            for r in &records {
                let mut old = Delivery::from_stored(r)?;
                let t = old.created_at.millis();
                if t < from.millis() || t >= to.millis() || old.replayed_by.is_some() {
                    continue;
                }
                let Some(endpoint) = endpoints.get(&old.endpoint.0) else {
                    continue;
                };
                let Some((mut event, ev_version)) =
                    get_record::<WebhookEvent>(&*self.store, &old.event_id)
                        .await?
                        .map(|v| (v.record, v.version))
                else {
                    continue;
                };
                let now = self.clock.now();
                event.replays += 1;
                let mut d = new_delivery(&event, endpoint, now, Some(event.replays));
                if old.body != d.body && !old.body.is_empty() {
                    // The bytes first sent are the ones replayed.
                    d.body = old.body.clone();
                }
                d.replay_of = Some(old.id.clone());
                old.replayed_by = Some(d.id.clone());
                event.deliveries.push(d.id.clone());
                let batch = Batch {
                    puts: vec![
                        d.insert()?,
                        old.update(r.version)?,
                        event.update(ev_version)?,
                    ],
                    ..Default::default()
                };
                match self.store.commit(batch).await {
                    Ok(_) => created.push(d),
                    // A concurrent replay got there first.
                    Err(StoreError::VersionConflict { .. }) => {}
                    Err(e) => return Err(store_err(e)),
                }
            }
        }
        Ok(created)
    }
}
