//! [`EscrowEngine`]: the tenant API of escrow (create, read, list, history, release,
//! refund, dispute, cancel) and the shared decision code the admin API and the workers
//! use. Every decision commits ONE batch: the deal, its history entries, the outbox
//! events, the ledger transfers, any payout record and the idempotency record.
//!
//! - `create`: validation, parties, admission and the create batch (and its sandbox twin).
//! - `actions`: the pure [`decide`] (who may ask for which action from which phase, and
//!   what it does) and the batch that carries a decision out.
//! - `payouts`: a payout's record and ledger hold; the readiness a payout needs.
//! - `history`: history entries with their outbox events, and the paged history read.
//! - here: the engine, reads of deals, the ledger read, request helpers.

mod actions;
mod create;
mod history;
mod payouts;

pub use actions::{Decision, Effect, Requester, decide};

use crate::error::{EscrowError, EscrowResult, store_err};
use crate::model::*;
use crate::state::EscrowState;
use crate::view::*;
use stablecoin_core::domain::ids::{EscrowId, TenantId};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::kernel::{AuthContext, Kernel, KeyKind};
use stablecoin_core::ports::{
    Batch, LedgerError, ListQuery, Rail, RailId, Record, Versioned, get_record,
};
use std::sync::Arc;

/// Times a decision is re-read and re-made after losing a race for the same record.
pub(crate) const MAX_RETRIES: usize = 8;

/// The escrow engine: cheap to clone, share it across tasks.
#[derive(Clone)]
pub struct EscrowEngine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// The ports (store, ledger, clock, entropy) shared with the other products.
    pub kernel: Kernel,
    /// The kernel's TRON rail: escrow runs on TRON only.
    pub rail: Arc<dyn Rail>,
    pub config: EscrowConfig,
    /// The tenant's spending policies over payouts (issue #51); `None`: no policies
    /// govern them (an embedder without the wallet engine).
    pub policies: Option<Arc<dyn stablecoin_core::kernel::SpendingPolicies>>,
}

impl EscrowEngine {
    /// An engine on `kernel` (its ports, and its TRON rail, which it must have:
    /// INVALID_CONFIG otherwise).
    pub fn new(kernel: &Kernel, config: EscrowConfig) -> EscrowResult<Self> {
        let Ok(tron) = kernel.rail(RailId::Tron) else {
            return Err(EscrowError::InvalidConfig(
                "escrow needs the TRON rail, and the kernel has none".into(),
            ));
        };
        let c = &config;
        let bounds_ok = c.min_funding_window_secs > 0
            && c.min_funding_window_secs <= c.default_funding_window_secs
            && c.default_funding_window_secs <= c.max_funding_window_secs
            && c.min_auto_release_after_secs > 0
            && c.min_auto_release_after_secs <= c.max_auto_release_after_secs
            && c.max_funding_window_secs <= i64::MAX as u64 / 1000
            && c.max_auto_release_after_secs <= i64::MAX as u64 / 1000;
        if !bounds_ok {
            return Err(EscrowError::InvalidConfig(
                "window bounds must satisfy 0 < min <= default <= max".into(),
            ));
        }
        if c.max_amount.is_zero()
            || c.batch_limit == 0
            || c.claim_lease_ms <= 0
            || c.poll_interval_ms < 0
            || c.send_retry_ms < 0
            || c.unknown_grace_ms < 0
            || c.network.trim().is_empty()
            || c.worker_id.trim().is_empty()
        {
            return Err(EscrowError::InvalidConfig(
                "max_amount, batch_limit and claim_lease_ms must be positive, delays not negative, network and worker_id set".into(),
            ));
        }
        Ok(EscrowEngine {
            inner: Arc::new(Inner {
                kernel: kernel.clone(),
                rail: tron.clone(),
                config,
                policies: None,
            }),
        })
    }

    /// The engine with its tenants' payouts governed by `policies` (the wallet engine's
    /// spending policies, issue #51): a tenant's release or refund, and the
    /// auto-release, are decided by them before anything is claimed. Staff resolutions
    /// of disputes are not (staff decide them, under their own two-person rule). Called
    /// while building, before the engine is shared (a shared one is left unchanged).
    pub fn with_spending_policies(
        mut self,
        policies: Arc<dyn stablecoin_core::kernel::SpendingPolicies>,
    ) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.policies = Some(policies);
        }
        self
    }

    /// The settings the engine was built with (validated by [`EscrowEngine::new`]).
    pub fn config(&self) -> &EscrowConfig {
        &self.inner.config
    }

    /// The kernel it runs on.
    pub fn kernel(&self) -> &Kernel {
        &self.inner.kernel
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.inner.kernel.now()
    }

    pub(crate) fn random10(&self) -> [u8; 10] {
        self.inner.kernel.random10()
    }

    pub(crate) async fn commit(&self, batch: Batch) -> EscrowResult<()> {
        self.inner.kernel.commit(batch).await.map_err(store_err)?;
        Ok(())
    }

    /// `GET /v1/escrows/{id}`: another tenant's escrow is `NOT_FOUND`.
    pub async fn get(&self, auth: &AuthContext, id: &str) -> EscrowResult<EscrowView> {
        require_tenant_key(auth)?;
        let v = self.load_for_tenant(&auth.tenant, id).await?;
        Ok(EscrowView::from_deal(&v.record))
    }

    /// `GET /v1/escrows`: the tenant's escrows, newest first, optionally by state.
    pub async fn list(
        &self,
        auth: &AuthContext,
        query: &ListEscrowsQuery,
    ) -> EscrowResult<EscrowList> {
        require_tenant_key(auth)?;
        let (limit, page) = page_params(query.limit, query.page)?;
        let status = match &query.state {
            None => None,
            Some(s) => Some(
                EscrowState::parse(s)
                    .ok_or_else(|| EscrowError::InvalidParameter {
                        field: "state",
                        reason: "must be one of CREATED, FUNDED, DISPUTED, RELEASED, REFUNDED, EXPIRED, CANCELLED".into(),
                    })?
                    .as_str()
                    .to_string(),
            ),
        };
        let (records, total) = self
            .inner
            .kernel
            .ports()
            .store
            .list(&ListQuery {
                kind: Deal::KIND.into(),
                subkind: None,
                tenant: auth.tenant.0.clone(),
                status,
                limit: limit as usize,
                offset: (page as usize - 1).saturating_mul(limit as usize),
            })
            .await
            .map_err(store_err)?;
        let escrows = records
            .iter()
            .map(|r| Deal::from_stored(r).map(|d| EscrowView::from_deal(&d)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(EscrowList {
            limit,
            page,
            total,
            escrows,
        })
    }

    /// A deal by id, any tenant (`None` for a malformed or unknown id).
    pub(crate) async fn load(&self, id: &str) -> EscrowResult<Option<Versioned<Deal>>> {
        if EscrowId::parse(id).is_none() {
            return Ok(None);
        }
        Ok(get_record::<Deal>(&*self.inner.kernel.ports().store, id).await?)
    }

    pub(crate) async fn load_any(&self, id: &str) -> EscrowResult<Versioned<Deal>> {
        self.load(id).await?.ok_or_else(|| not_found(id))
    }

    async fn load_for_tenant(&self, tenant: &TenantId, id: &str) -> EscrowResult<Versioned<Deal>> {
        match self.load(id).await? {
            Some(v) if &v.record.tenant == tenant => Ok(v),
            // Another tenant's escrow is reported exactly like a missing one (spec 5.4).
            _ => Err(not_found(id)),
        }
    }

    pub(crate) async fn balance(
        &self,
        account: &str,
    ) -> EscrowResult<stablecoin_core::ports::Balance> {
        match self.inner.kernel.ports().ledger.balance(account).await {
            Ok(b) => Ok(b),
            Err(LedgerError::UnknownAccount { .. }) => Ok(Default::default()),
            Err(e) => Err(EscrowError::Storage(e.to_string())),
        }
    }
}

pub(crate) fn not_found(id: &str) -> EscrowError {
    EscrowError::NotFound {
        kind: "escrow",
        id: id.chars().take(64).collect(),
        field: None,
    }
}

pub(crate) fn overflow() -> EscrowError {
    EscrowError::Storage("amount overflows u64 micro-units".into())
}

/// Escrow is called with tenant keys (`svc_sk_*`), never checkout business keys.
fn require_tenant_key(auth: &AuthContext) -> EscrowResult<()> {
    if auth.kind != KeyKind::Tenant {
        return Err(EscrowError::InvalidApiKey);
    }
    Ok(())
}

/// `on_behalf_of`: absent, `BUYER` or `SELLER`; anything else is `INVALID_PARAMETER`.
pub fn parse_on_behalf_of(v: Option<&str>) -> EscrowResult<Option<Party>> {
    match v {
        None => Ok(None),
        Some(s) => Party::parse(s)
            .map(Some)
            .ok_or_else(|| EscrowError::InvalidParameter {
                field: "on_behalf_of",
                reason: "must be BUYER or SELLER, or absent when the partner acts in its own right"
                    .into(),
            }),
    }
}

/// Trims free text; empty means absent; too long or control characters are refused.
/// Control characters are looked for before trimming, as the API document's pattern
/// says (`"\r"` alone is refused, not trimmed away into "absent").
pub(crate) fn clean_text(
    field: &'static str,
    v: Option<&str>,
    max_chars: usize,
) -> EscrowResult<Option<String>> {
    if v.is_some_and(|s| s.chars().any(|c| c.is_control() && c != '\n')) {
        return Err(EscrowError::InvalidParameter {
            field,
            reason: "must not contain control characters".into(),
        });
    }
    let Some(s) = v.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    if s.chars().count() > max_chars {
        return Err(EscrowError::InvalidParameter {
            field,
            reason: format!("must be at most {max_chars} characters"),
        });
    }
    Ok(Some(s.to_string()))
}

pub(crate) fn page_params(limit: Option<u32>, page: Option<u32>) -> EscrowResult<(u32, u32)> {
    let limit = limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(EscrowError::InvalidParameter {
            field: "limit",
            reason: "must be between 1 and 100".into(),
        });
    }
    let page = page.unwrap_or(1);
    if page == 0 {
        return Err(EscrowError::InvalidParameter {
            field: "page",
            reason: "pages start at 1".into(),
        });
    }
    Ok((limit, page))
}

#[cfg(test)]
mod clean_text_tests {
    use super::clean_text;

    /// What the API document's free-text pattern refuses, the engine refuses: a control
    /// character other than the line feed, even one that trimming would remove.
    #[test]
    fn control_characters_are_refused_before_trimming() {
        for bad in ["\r", " \t ", "ok\u{7}", "\u{85}"] {
            let e = clean_text("reason", Some(bad), 100).unwrap_err();
            assert_eq!(e.code(), "INVALID_PARAMETER", "{bad:?}");
        }
        assert_eq!(clean_text("reason", Some("  "), 100).unwrap(), None);
        assert_eq!(clean_text("reason", None, 100).unwrap(), None);
        assert_eq!(
            clean_text("reason", Some(" two\nlines "), 100)
                .unwrap()
                .as_deref(),
            Some("two\nlines")
        );
    }
}
