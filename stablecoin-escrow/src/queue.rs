//! The cross-tenant staff queue: one [`StaffQueueEntry`] per deal, `ATTENTION` while the
//! deal needs service staff (DISPUTED, or holding a recoverable balance), `CLEAR`
//! otherwise.
//!
//! Why an index record: deals are listed per tenant (the store lists one owner's records
//! of a kind), but staff need "every deal that needs staff" across tenants without
//! scanning every tenant. The entry lives under the reserved list owner
//! [`STAFF_QUEUE_OWNER`] and is written in the SAME batch as every deal write
//! (`EscrowEngine::queue_put`, called by each of them), so the list never disagrees
//! with the deals. A deal written before the queue existed has no entry: its next write
//! inserts one.

use crate::engine::EscrowEngine;
use crate::error::EscrowResult;
use crate::model::Deal;
use crate::state::EscrowState;
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::ids::{EscrowId, TenantId};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{Batch, Record, get_record};

/// The reserved list owner of queue entries (no tenant id can equal it).
pub const STAFF_QUEUE_OWNER: &str = "_staff_escrow";

/// The queue status of a deal that needs staff.
pub const ATTENTION: &str = "ATTENTION";

/// The queue status of a deal that needs nothing from staff.
pub const CLEAR: &str = "CLEAR";

/// A deal's entry in the staff queue (its id is the deal's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StaffQueueEntry {
    /// The deal (`esc_...`).
    pub id: EscrowId,
    /// The deal's tenant.
    pub tenant: TenantId,
    /// The deal's public state.
    pub state: EscrowState,
    /// The deal amount, micro-units.
    pub amount: Micros,
    /// The deal's token.
    pub token: Token,
    /// Recoverable balance in the deal's token, all kinds.
    pub recoverable: Micros,
    /// `ATTENTION` or `CLEAR`.
    pub status: String,
    /// The deal's creation (the list order: newest first).
    pub created_at: Timestamp,
    /// The deal's last change.
    pub updated_at: Timestamp,
}

impl StaffQueueEntry {
    /// The entry of `deal` as it is now.
    pub fn of(deal: &Deal) -> StaffQueueEntry {
        StaffQueueEntry {
            id: deal.id.clone(),
            tenant: deal.tenant.clone(),
            state: deal.state,
            amount: deal.amount,
            token: deal.token,
            recoverable: deal.recoverable_total(),
            status: if needs_staff(deal) { ATTENTION } else { CLEAR }.into(),
            created_at: deal.created_at,
            updated_at: deal.updated_at,
        }
    }
}

/// A deal needs staff while DISPUTED (only staff resolve it) or while it holds any
/// recoverable balance (only staff authorise recoveries), whatever its token.
pub fn needs_staff(deal: &Deal) -> bool {
    deal.state == EscrowState::Disputed || !deal.recoverable.is_empty()
}

impl Record for StaffQueueEntry {
    const KIND: &'static str = stablecoin_core::ports::kinds::kind::ESCROW_STAFF_QUEUE;
    fn id(&self) -> String {
        self.id.0.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(STAFF_QUEUE_OWNER.into())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
    fn status(&self) -> Option<String> {
        Some(self.status.clone())
    }
}

impl EscrowEngine {
    /// Adds `deal`'s queue entry to `batch`: an update from the entry's current version,
    /// or an insert when the deal has none yet (deals older than the queue). Every batch
    /// that puts a deal calls this, so the entry changes atomically with the deal; a
    /// concurrent writer of the same deal makes the batch fail as a version conflict.
    pub(crate) async fn queue_put(&self, batch: &mut Batch, deal: &Deal) -> EscrowResult<()> {
        let entry = StaffQueueEntry::of(deal);
        let put = match get_record::<StaffQueueEntry>(&*self.inner.kernel.ports().store, &deal.id.0)
            .await?
        {
            Some(v) => entry.update(v.version)?,
            None => entry.insert()?,
        };
        batch.puts.push(put);
        Ok(())
    }
}
