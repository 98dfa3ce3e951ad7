//! Sponsorship budget records and their metering, shared by every product that settles a
//! sponsored payment (the wallet engine, escrow payouts, checkout sweeps and refunds,
//! stray returns): the engine's `engine::sponsorship` sets, reads and gates budgets;
//! whoever commits a payment's settlement or failure adds [`meter_puts`] to that commit.

use crate::domain::ids::TenantId;
use crate::domain::sponsorship::{BudgetCaps, Spend, Usage};
use crate::domain::time::Timestamp;
use crate::error::CoreResult;
use crate::kernel::auth::Tenant;
use crate::ports::kinds::kind;
use crate::ports::rail::{RailId, SponsorCost};
use crate::ports::record::{Record, Versioned, get_record};
use crate::ports::store::{Put, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A tenant's sponsorship budget on one rail, and what its payments consumed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SponsorBudget {
    /// `<tenant>:<rail name>` ([`SponsorBudget::id_of`]): found without an index.
    pub id: String,
    /// The tenant.
    pub tenant: TenantId,
    /// The rail.
    pub rail: RailId,
    /// The caps staff set; all `None`: metered, never refused.
    pub caps: BudgetCaps,
    /// Consumed in the current UTC day and month (read through [`Spend::at`]).
    pub spend: Spend,
    /// When it was first written.
    pub created_at: Timestamp,
    /// Last change of caps or spend.
    pub updated_at: Timestamp,
    /// Who last set the caps (`stf_...`, `admin-token`); `None` when only metered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_by: Option<String>,
}

impl SponsorBudget {
    /// The record id of `tenant`'s budget on `rail`.
    pub fn id_of(tenant: &TenantId, rail: RailId) -> String {
        format!("{}:{}", tenant.0, rail.name())
    }

    pub(crate) fn empty(tenant: &TenantId, rail: RailId, now: Timestamp) -> Self {
        SponsorBudget {
            id: Self::id_of(tenant, rail),
            tenant: tenant.clone(),
            rail,
            caps: BudgetCaps::default(),
            spend: Spend::default(),
            created_at: now,
            updated_at: now,
            set_by: None,
        }
    }

    /// The budget as of `now`: periods that ended count zero.
    pub fn at(mut self, now: Timestamp) -> Self {
        self.spend = self.spend.at(now);
        self
    }
}

impl Record for SponsorBudget {
    const KIND: &'static str = kind::SPONSOR_BUDGET;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn tenant(&self) -> Option<String> {
        Some(self.tenant.0.clone())
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// The tenants that have sponsorship budgets (one record, id [`SponsoredTenants::ID`]):
/// what `/metrics` walks. Written only when staff set a tenant's first budget.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SponsoredTenants {
    /// Always [`SponsoredTenants::ID`].
    pub id: String,
    /// The tenants, in id order.
    pub tenants: std::collections::BTreeSet<String>,
    /// When the first was added.
    pub created_at: Timestamp,
}

impl SponsoredTenants {
    /// The one record's id.
    pub const ID: &'static str = "all";
}

impl Record for SponsoredTenants {
    const KIND: &'static str = kind::SPONSORED_TENANTS;
    fn id(&self) -> String {
        self.id.clone()
    }
    fn created_at(&self) -> Timestamp {
        self.created_at
    }
}

/// One confirmed payment's cost to meter: whose, on which rail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metered {
    /// Whose payment it was.
    pub tenant: TenantId,
    /// The rail it was on.
    pub rail: RailId,
    /// What its receipt said it cost.
    pub cost: SponsorCost,
}

pub(crate) fn usage(c: SponsorCost) -> Usage {
    Usage {
        native: c.native,
        energy: c.energy,
        bandwidth: c.bandwidth,
    }
}

/// What a settlement or failure of `tenant`'s payment that cost `cost` meters: `None`
/// when the rail reported no cost or the tenant has no budgets (one tenant read, only
/// when there is a cost).
pub async fn to_meter(
    store: &dyn Store,
    tenant: &TenantId,
    rail: RailId,
    cost: Option<SponsorCost>,
) -> CoreResult<Option<Metered>> {
    let Some(cost) = cost else { return Ok(None) };
    let flagged = get_record::<Tenant>(store, &tenant.0)
        .await?
        .is_some_and(|t| t.record.sponsorship_budgets);
    Ok(flagged.then(|| Metered {
        tenant: tenant.clone(),
        rail,
        cost,
    }))
}

/// The budget updates that add every cost of `metered` (any number per budget) to its
/// tenant's spend: one version-checked put per budget record, to commit with the
/// settlements they meter (a lost race refuses the whole commit, decided again later).
pub async fn meter_puts(
    store: &dyn Store,
    now: Timestamp,
    metered: &[&Metered],
) -> CoreResult<Vec<Put>> {
    let mut by_budget: BTreeMap<String, Vec<&Metered>> = BTreeMap::new();
    for m in metered {
        by_budget
            .entry(SponsorBudget::id_of(&m.tenant, m.rail))
            .or_default()
            .push(m);
    }
    let mut puts = Vec::with_capacity(by_budget.len());
    for (id, ms) in by_budget {
        let current: Option<Versioned<SponsorBudget>> = get_record(store, &id).await?;
        let mut b = match &current {
            Some(v) => v.record.clone(),
            None => SponsorBudget::empty(&ms[0].tenant, ms[0].rail, now),
        };
        for m in &ms {
            b.spend.record(now, usage(m.cost));
        }
        b.updated_at = now;
        puts.push(match &current {
            Some(v) => b.update(v.version)?,
            None => b.insert()?,
        });
    }
    Ok(puts)
}

impl crate::kernel::Kernel {
    /// The budget updates metering one payment of `tenant` on `rail` that cost `cost`,
    /// to commit with the decision that records it (settled or failed): empty without a
    /// cost or when the tenant has no budgets. For products settling their own payments
    /// (checkout sweeps and refunds, escrow payouts).
    pub async fn sponsorship_puts(
        &self,
        tenant: &TenantId,
        rail: RailId,
        cost: Option<SponsorCost>,
    ) -> CoreResult<Vec<Put>> {
        let store = &*self.ports().store;
        match to_meter(store, tenant, rail, cost).await? {
            Some(m) => meter_puts(store, self.now(), &[&m]).await,
            None => Ok(Vec::new()),
        }
    }
}
