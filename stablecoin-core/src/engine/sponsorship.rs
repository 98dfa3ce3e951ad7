//! Sponsorship budgets (issue #51 item 4): staff cap what one tenant's payments may cost
//! the service per rail, per UTC day and month; every confirmed payment's receipt cost is
//! metered; a payment whose budget is spent is refused before anything is held. The
//! period and limit rules are the domain's ([`crate::domain::sponsorship`]).
//!
//! Why one record per (tenant, rail) holding both the caps and the spend: admission reads
//! one record, metering updates one record. It is updated version-checked, so two
//! settlements never lose an update (the loser's whole settlement is refused and polled
//! again; the worker meters every settlement of one tick in one update per record, see
//! `polls.rs`). Metering commits in the settlement's own batch, which also moves the
//! operation out of SUBMITTED version-checked: a confirmation polled twice settles, and
//! is metered, once.
//!
//! Why a flag on the tenant ([`Tenant::sponsorship_budgets`]): a tenant without budgets
//! must not pay for them. Admission and settlement already read the tenant record
//! (cached for `read_cache_ms`), and only a flagged tenant reads or writes a budget
//! record. Staff setting the first budget set the flag in the same commit; another
//! process sees it within `read_cache_ms` (default 1 s), so payments confirmed in that
//! moment there are not metered: documented, and bounded by the cache's lifetime.

use super::Engine;
use crate::domain::ids::TenantId;
use crate::domain::sponsorship::{self, BudgetCaps};
use crate::error::{CoreError, CoreResult};
use crate::kernel::auth::Tenant;
pub use crate::kernel::sponsorship::{Metered, SponsorBudget, SponsoredTenants};
use crate::kernel::staff::StaffIdentity;
use crate::ports::kinds::kind;
use crate::ports::rail::{RailId, SponsorCost};
use crate::ports::record::{Record, get_record};
use crate::ports::store::{Batch, ListQuery, Put};

/// The most budget records one tenant can have: one per rail an engine can carry.
const MAX_BUDGETS_PER_TENANT: usize = 64;

impl Engine {
    /// The configured rail called `name` (`polygon`, `base`, `bsc`, `tron`, `solana`,
    /// `evm-<id>`); INVALID_PARAMETER (`rail`) otherwise.
    pub fn rail_named(&self, name: &str) -> CoreResult<RailId> {
        self.rails()
            .map(|r| r.id())
            .find(|id| id.name() == name)
            .ok_or_else(|| CoreError::InvalidParameter {
                field: "rail",
                reason: format!(
                    "{:?} is not a rail of this deployment",
                    name.chars().take(32).collect::<String>()
                ),
            })
    }

    /// Staff set `tenant`'s budget on `rail` (all caps `None` lifts it; the spend is
    /// kept and metering goes on). Audited (`sponsorship_budget.set`) in the same
    /// commit, which also flags the tenant for metering. A settlement that updates the
    /// budget at the same moment makes the commit lose its race: it is decided again on
    /// fresh reads, up to three times, then CONFLICT.
    pub async fn set_sponsor_budget(
        &self,
        staff: &StaffIdentity,
        tenant: &TenantId,
        rail: RailId,
        caps: BudgetCaps,
    ) -> CoreResult<SponsorBudget> {
        self.rail(rail)?;
        let mut last = None;
        for _ in 0..3 {
            match self.set_budget_once(staff, tenant, rail, caps).await {
                Err(e)
                    if e.lost_race_on(kind::SPONSOR_BUDGET)
                        || e.lost_race_on(Tenant::KIND)
                        || e.lost_race_on(kind::SPONSORED_TENANTS) =>
                {
                    last = Some(e)
                }
                other => return other,
            }
        }
        Err(last.unwrap_or(CoreError::Conflict {
            what: "sponsor_budget".into(),
            record: None,
        }))
    }

    async fn set_budget_once(
        &self,
        staff: &StaffIdentity,
        tenant: &TenantId,
        rail: RailId,
        caps: BudgetCaps,
    ) -> CoreResult<SponsorBudget> {
        let store = &*self.ports().store;
        let Some(t) = get_record::<Tenant>(store, &tenant.0).await? else {
            return Err(CoreError::NotFound {
                kind: "tenant",
                id: tenant.0.chars().take(64).collect(),
            });
        };
        let now = self.now();
        let mut puts = Vec::new();
        if !t.record.sponsorship_budgets {
            let mut rec = t.record.clone();
            rec.sponsorship_budgets = true;
            rec.updated_at = now;
            puts.push(rec.update(t.version)?);
            let index = get_record::<SponsoredTenants>(store, SponsoredTenants::ID).await?;
            let mut all = match &index {
                Some(v) => v.record.clone(),
                None => SponsoredTenants {
                    id: SponsoredTenants::ID.into(),
                    created_at: now,
                    ..Default::default()
                },
            };
            all.tenants.insert(tenant.0.clone());
            puts.push(match &index {
                Some(v) => all.update(v.version)?,
                None => all.insert()?,
            });
        }
        let id = SponsorBudget::id_of(tenant, rail);
        let current = get_record::<SponsorBudget>(store, &id).await?;
        let mut b = match &current {
            Some(v) => v.record.clone(),
            None => SponsorBudget::empty(tenant, rail, now),
        };
        b.caps = caps;
        b.set_by = Some(staff.id().to_string());
        b.updated_at = now;
        puts.push(match &current {
            Some(v) => b.update(v.version)?,
            None => b.insert()?,
        });
        let note = format!(
            "tenant {} on {}: {}",
            tenant.0,
            rail.name(),
            serde_json::to_string(&caps).unwrap_or_default()
        );
        puts.push(
            self.audit_entry(staff.id(), "sponsorship_budget.set", &id, Some(&note))?
                .insert()?,
        );
        self.commit(Batch {
            puts,
            ..Default::default()
        })
        .await?;
        self.kernel.forget_tenant(tenant);
        Ok(b.at(now))
    }

    /// Every budget of `tenant` (one per rail that has caps or was metered), as of now,
    /// in rail order.
    pub async fn sponsor_budgets(&self, tenant: &TenantId) -> CoreResult<Vec<SponsorBudget>> {
        let (rows, _) = self
            .ports()
            .store
            .list(&ListQuery {
                kind: kind::SPONSOR_BUDGET.into(),
                tenant: tenant.0.clone(),
                subkind: None,
                status: None,
                limit: MAX_BUDGETS_PER_TENANT,
                offset: 0,
            })
            .await
            .map_err(super::store_err)?;
        let now = self.now();
        let mut out = rows
            .iter()
            .map(|r| SponsorBudget::from_stored(r).map(|b| b.at(now)))
            .collect::<Result<Vec<_>, _>>()?;
        out.sort_by_key(|b| b.rail);
        Ok(out)
    }

    /// Every tenant's budgets (for `/metrics`): one read of the tenants that have any,
    /// then one list per such tenant.
    pub async fn all_sponsor_budgets(&self) -> CoreResult<Vec<SponsorBudget>> {
        let Some(index) =
            get_record::<SponsoredTenants>(&*self.ports().store, SponsoredTenants::ID).await?
        else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for t in index.record.tenants {
            out.extend(self.sponsor_budgets(&TenantId(t)).await?);
        }
        Ok(out)
    }

    /// The admission check of a sponsored payment of `tenant` on `rail`, before anything
    /// is held: SPONSORSHIP_BUDGET_EXCEEDED when a cap of the current day or month is
    /// reached or would be passed by the estimated cost. A tenant without budgets pays a
    /// cached tenant read and nothing else.
    pub(crate) async fn sponsor_gate(&self, tenant: &TenantId, rail: RailId) -> CoreResult<()> {
        if !self.tenant(tenant).await?.sponsorship_budgets {
            return Ok(());
        }
        let id = SponsorBudget::id_of(tenant, rail);
        let Some(v) = get_record::<SponsorBudget>(&*self.ports().store, &id).await? else {
            return Ok(());
        };
        let now = self.now();
        sponsorship::check(&v.record.caps, &v.record.spend, now).map_err(|e| {
            CoreError::SponsorshipBudgetExceeded {
                rail: rail.name(),
                period: e.period.name(),
                resource: e.resource,
                cap: e.cap.to_string(),
                spent: e.spent.to_string(),
                retry_after_ms: (e.resets_at.millis() - now.millis()).max(1_000),
            }
        })
    }

    /// What a settlement of `tenant`'s payment that cost `cost` meters: `None` when the
    /// rail reported no cost or the tenant has no budgets.
    pub(crate) async fn to_meter(
        &self,
        tenant: &TenantId,
        rail: RailId,
        cost: Option<SponsorCost>,
    ) -> CoreResult<Option<Metered>> {
        let Some(cost) = cost else { return Ok(None) };
        if !self.tenant(tenant).await?.sponsorship_budgets {
            return Ok(None);
        }
        Ok(Some(Metered {
            tenant: tenant.clone(),
            rail,
            cost,
        }))
    }

    /// The budget updates that add every cost of `metered` to its tenant's spend
    /// ([`crate::kernel::sponsorship::meter_puts`]), at the engine's clock.
    pub(crate) async fn meter_puts(&self, metered: &[&Metered]) -> CoreResult<Vec<Put>> {
        crate::kernel::sponsorship::meter_puts(&*self.ports().store, self.now(), metered).await
    }
}
