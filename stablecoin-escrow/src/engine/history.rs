//! The permanent history of a deal: every change appends one entry and one outbox event
//! with the same `evt_` id, in the batch of the change; the tenant and staff read it
//! newest first, page by page.

use super::{EscrowEngine, page_params, require_tenant_key};
use crate::error::{EscrowError, EscrowResult};
use crate::events::EscrowEventType;
use crate::model::*;
use crate::state::Phase;
use crate::view::*;
use stablecoin_core::domain::ids::EventId;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::kernel::AuthContext;
use stablecoin_core::ports::{Batch, OutboxEvent, Record, get_record};

impl EscrowEngine {
    /// `GET /v1/escrows/{id}/events`: the permanent history, newest first.
    pub async fn events(
        &self,
        auth: &AuthContext,
        id: &str,
        limit: Option<u32>,
        page: Option<u32>,
    ) -> EscrowResult<EscrowEventList> {
        require_tenant_key(auth)?;
        let v = self.load_for_tenant(&auth.tenant, id).await?;
        self.history_page(&v.record, limit, page).await
    }

    /// Appends one history entry and its outbox event (same `evt_` id) to `batch`. The
    /// deal must already show the state after the change; its put is the caller's.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_event(
        &self,
        batch: &mut Batch,
        deal: &mut Deal,
        event: EscrowEventType,
        from: Option<Phase>,
        actor: &Actor,
        on_behalf_of: Option<Party>,
        reason: Option<String>,
        data: Option<serde_json::Value>,
        now: Timestamp,
    ) -> EscrowResult<()> {
        let seq = deal.history_len;
        deal.history_len += 1;
        deal.updated_at = now;
        let entry = HistoryEntry {
            id: HistoryEntry::make_id(&deal.id, seq),
            deal: deal.id.clone(),
            tenant: deal.tenant.clone(),
            seq,
            event_id: EventId::generate(now.millis(), self.random10()),
            event: event.as_str().into(),
            from_state: from.map(|p| p.state.as_str().to_string()),
            from_payout_pending: from.is_some_and(|p| p.payout_pending()),
            state: deal.state.as_str().into(),
            payout_pending: deal.payout.is_some(),
            actor: actor.clone(),
            authority: actor.authority(),
            on_behalf_of,
            reason,
            data,
            at: now,
        };
        let payload = EscrowWebhookPayload {
            entry: EscrowEventView::from_entry(&entry),
            escrow: EscrowView::from_deal(deal),
        };
        batch.outbox.push(OutboxEvent {
            id: entry.event_id.0.clone(),
            tenant: deal.tenant.0.clone(),
            event_type: event.as_str().into(),
            occurred_at: now,
            payload: serde_json::to_value(&payload)
                .map_err(|e| EscrowError::Storage(format!("encode event: {e}")))?,
        });
        batch.puts.push(entry.insert()?);
        Ok(())
    }

    pub(crate) async fn history_page(
        &self,
        deal: &Deal,
        limit: Option<u32>,
        page: Option<u32>,
    ) -> EscrowResult<EscrowEventList> {
        let (limit, page) = page_params(limit, page)?;
        let total = deal.history_len;
        let offset = (page as u64 - 1).saturating_mul(limit as u64);
        let mut events = Vec::new();
        if offset < total {
            let newest = total - 1 - offset;
            let count = (limit as u64).min(newest + 1);
            for i in 0..count {
                let seq = newest - i;
                let entry = get_record::<HistoryEntry>(
                    &*self.inner.kernel.ports().store,
                    &HistoryEntry::make_id(&deal.id, seq),
                )
                .await?
                .ok_or_else(|| {
                    EscrowError::Storage(format!("history entry {seq} of {} is missing", deal.id))
                })?;
                events.push(EscrowEventView::from_entry(&entry.record));
            }
        }
        Ok(EscrowEventList {
            limit,
            page,
            total,
            events,
        })
    }
}
