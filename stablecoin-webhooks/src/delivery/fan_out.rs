//! Fan-out: outbox events become tenant-scoped [`WebhookEvent`] records and one
//! [`Delivery`] per subscribed enabled endpoint, committed with the advanced cursor in one
//! batch (see the module docs of [`super`]). Also the rendering of an event's wire body
//! for its family, shared with replay.

use super::{Attempt, ESCROW_PREFIX, family_of};
use super::{Cursor, Deliverer, Delivery, DeliveryState, Endpoint, WebhookEvent, store_err};
use crate::error::{WebhookError, WebhookResult};
use crate::payload::WalletPayload;
use crate::payments::PaymentsPayload;
use crate::signature::Family;
use stablecoin_core::domain::events::DomainEvent;
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::record::{Record, get_record};
use stablecoin_core::ports::{Batch, OutboxEvent, StoreError, StoredRecord};
use std::collections::HashMap;

/// What one page of fan-out did.
#[derive(Default)]
pub(super) struct FanOut {
    /// Deliveries created.
    pub(super) created: usize,
    /// The pending ones this worker holds, as stored (version 1), when fanned out with a
    /// lease.
    pub(super) fresh: Vec<StoredRecord>,
    /// The page was full: more events may be waiting.
    pub(super) full_page: bool,
}

impl Deliverer {
    /// Fans out one page of outbox events after the cursor; returns how many deliveries
    /// it created, due now.
    pub async fn fan_out(&self) -> WebhookResult<usize> {
        Ok(self.fan_out_page(None).await?.created)
    }

    /// One page of fan-out. `lease_ms`: `None` makes the deliveries due now; `Some` holds
    /// them for this worker that long (due after the lease), for [`Self::round`] to
    /// attempt at once.
    pub(super) async fn fan_out_page(&self, lease_ms: Option<i64>) -> WebhookResult<FanOut> {
        for _ in 0..8 {
            let cursor = get_record::<Cursor>(&*self.store, "wallet").await?;
            let after = cursor.as_ref().map_or(0, |c| c.record.after_seq);
            let events = self
                .store
                .outbox_after(after, self.config.batch_limit)
                .await
                .map_err(store_err)?;
            let Some((last_seq, _)) = events.last() else {
                return Ok(FanOut::default());
            };
            let full_page = events.len() >= self.config.batch_limit;
            let now = self.clock.now();
            let mut puts = Vec::new();
            let mut created = 0;
            let mut fresh = Vec::new();
            // One endpoint read per tenant per page, not per event.
            let mut by_tenant: HashMap<String, Vec<Endpoint>> = HashMap::new();
            for (_, event) in &events {
                if !by_tenant.contains_key(&event.tenant) {
                    let endpoints = self.enabled_endpoints(&event.tenant).await?;
                    by_tenant.insert(event.tenant.clone(), endpoints);
                }
                let mut record = WebhookEvent {
                    id: event.id.clone(),
                    tenant: TenantId(event.tenant.clone()),
                    event_type: event.event_type.clone(),
                    occurred_at: event.occurred_at,
                    payload: event.payload.clone(),
                    deliveries: Vec::new(),
                    replays: 0,
                };
                for endpoint in subscribed(&by_tenant[&event.tenant], &event.event_type) {
                    let mut d = new_delivery(&record, endpoint, now, None);
                    if let (Some(lease), DeliveryState::Pending) = (lease_ms, d.state) {
                        d.next_attempt_at = Some(now.plus_millis(lease));
                    }
                    record.deliveries.push(d.id.clone());
                    let put = d.insert()?;
                    if lease_ms.is_some() && d.state == DeliveryState::Pending {
                        let mut stored = put.record.clone();
                        stored.version = 1;
                        fresh.push(stored);
                    }
                    puts.push(put);
                    created += 1;
                }
                puts.push(record.insert()?);
            }
            let next = Cursor {
                after_seq: *last_seq,
                created_at: cursor.as_ref().map_or(now, |c| c.record.created_at),
            };
            puts.push(match &cursor {
                Some(c) => next.update(c.version)?,
                None => next.insert()?,
            });
            match self
                .store
                .commit(Batch {
                    puts,
                    background: true,
                    ..Default::default()
                })
                .await
            {
                Ok(_) => {
                    return Ok(FanOut {
                        created,
                        fresh,
                        full_page,
                    });
                }
                // Another worker fanned out this page first: read the cursor again.
                Err(StoreError::VersionConflict { .. }) => continue,
                Err(e) => return Err(store_err(e)),
            }
        }
        Err(WebhookError::Conflict {
            what: "webhook fan-out cursor".into(),
        })
    }
}

pub(super) fn subscribed<'a>(
    endpoints: &'a [Endpoint],
    event_type: &'a str,
) -> impl Iterator<Item = &'a Endpoint> + 'a {
    endpoints
        .iter()
        .filter(move |e| e.events.iter().any(|t| t == event_type))
}

/// The wire body of an event for its family: core events are rendered to their spec
/// payload; escrow events, `sandbox.stray_deposit` and `deposit.quarantined` already carry theirs; payments events are parsed strictly and
/// re-serialised in the spec's field order.
pub fn render(event_type: &str, payload: &serde_json::Value) -> Result<String, String> {
    let body = match family_of(event_type) {
        Some(Family::Wallet)
            if event_type.starts_with(ESCROW_PREFIX)
                || event_type == super::model::SANDBOX_STRAY_DEPOSIT
                || event_type == super::model::DEPOSIT_QUARANTINED =>
        {
            return serde_json::to_string(payload).map_err(|e| e.to_string());
        }
        Some(Family::Wallet) => {
            let domain: DomainEvent =
                serde_json::from_value(payload.clone()).map_err(|e| e.to_string())?;
            WalletPayload::from_event(&domain)
                .to_body()
                .map_err(|e| e.to_string())?
        }
        Some(Family::Payments) => PaymentsPayload::from_value(payload)?
            .to_body()
            .map_err(|e| e.to_string())?,
        None => return Err(format!("{event_type} belongs to no webhook family")),
    };
    String::from_utf8(body).map_err(|e| e.to_string())
}

pub(super) fn new_delivery(
    event: &WebhookEvent,
    endpoint: &Endpoint,
    now: Timestamp,
    replay: Option<u32>,
) -> Delivery {
    let (body, state, attempts) = match render(&event.event_type, &event.payload) {
        Ok(body) => (body, DeliveryState::Pending, Vec::new()),
        // Kept, visibly dead, rather than dropped: an operator can see what failed.
        Err(reason) => (
            String::new(),
            DeliveryState::Dead,
            vec![Attempt {
                at: now,
                status: None,
                latency_ms: 0,
                error: Some(format!("cannot render the payload: {reason}")),
            }],
        ),
    };
    let id = match replay {
        None => format!("whd_{}_{}", event.id, endpoint.id),
        Some(n) => format!("whd_{}_{}_r{n}", event.id, endpoint.id),
    };
    Delivery {
        id,
        tenant: endpoint.tenant.clone(),
        endpoint: endpoint.id.clone(),
        event_id: event.id.clone(),
        event_type: event.event_type.clone(),
        body,
        state,
        next_attempt_at: Some(now),
        attempts,
        replay_of: None,
        replayed_by: None,
        created_at: now,
    }
}

/// Builds the outbox event of a domain event (what the engines commit); exposed for
/// hosts and tests that emit events themselves.
pub fn outbox_event(
    id: &str,
    tenant: &TenantId,
    at: Timestamp,
    event: &DomainEvent,
) -> WebhookResult<OutboxEvent> {
    Ok(OutboxEvent {
        id: id.to_string(),
        tenant: tenant.0.clone(),
        event_type: event.name().to_string(),
        occurred_at: at,
        payload: serde_json::to_value(event).map_err(|e| WebhookError::InvalidParameter {
            field: "payload",
            reason: e.to_string(),
        })?,
    })
}
