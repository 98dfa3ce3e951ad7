//! [`CheckoutEngine`]: businesses, payment sessions (create, read, list, cancel), the
//! payer's public read, and (in `deposits`) the one function every deposit goes
//! through, whoever saw it: the session-address scanner, a separately deployed scanner
//! reporting through the intake, or a test key's simulated payment.
//!
//! Every decision commits one batch: the session, its deposits, the ledger transfers,
//! the outbox events and the idempotency record together.

mod auto_refunds;
mod deposits;
mod links;
mod phone_pay;
mod refunds;
mod sessions;

pub use deposits::{DepositFact, DepositOutcome, DepositStage};
pub use phone_pay::{PhonePaymentCodeView, PhonePaymentView, ledger_hash};

use crate::error::{CheckoutError, CheckoutResult, store_err};
use crate::model::{Business, DEFAULT_BUSINESS, Mode, Session, SessionDeposit};
use crate::views::{BusinessView, NewBusiness};
use stablecoin_core::domain::ids::TenantId;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::kernel::{AuthContext, Kernel, KeyKind, KeyMode};
use stablecoin_core::ports::{Batch, ListQuery, Record, Versioned, get_record};

/// Times a decision is re-read and re-made after losing a race for the same record.
pub(crate) const MAX_RETRIES: usize = 8;

/// Deposits a session read lists (a session has a handful; this bounds a hostile one).
pub(crate) const MAX_DEPOSITS_READ: usize = 200;

/// Settings of the checkout.
#[derive(Clone, Debug)]
pub struct CheckoutConfig {
    /// Expiry of a session created without `expires_in_secs`.
    pub default_expiry_secs: u64,
    /// Shortest `expires_in_secs` accepted.
    pub min_expiry_secs: u64,
    /// Longest `expires_in_secs` accepted.
    pub max_expiry_secs: u64,
    /// How long after expiry deposits seen in time may still confirm and pay.
    pub confirm_grace_ms: i64,
    /// Largest session amount.
    pub max_amount: Micros,
    /// Records a worker step takes at once (scan page, due sessions).
    pub batch_limit: usize,
    /// How long a claimed session stays with one worker.
    pub claim_lease_ms: i64,
    /// This worker's name in claims.
    pub worker_id: String,
    /// How long a refund's claim link may be used before its money goes back to where
    /// it came from (default 30 days).
    pub refund_claim_secs: u64,
    /// What the payment page needs to write each network's wallet request (EIP-681,
    /// Solana Pay), by network name; a network without an entry (a simulated one) shows
    /// its bare address (`crate::wallet_links`).
    pub wallet_networks: std::collections::BTreeMap<String, crate::wallet_links::WalletNetwork>,
}

impl Default for CheckoutConfig {
    fn default() -> Self {
        CheckoutConfig {
            default_expiry_secs: 3600,
            min_expiry_secs: 60,
            max_expiry_secs: 7 * 24 * 3600,
            confirm_grace_ms: 3_600_000,
            max_amount: Micros::new(1_000_000 * 1_000_000),
            batch_limit: 100,
            claim_lease_ms: 30_000,
            worker_id: "checkout".into(),
            refund_claim_secs: 30 * 24 * 3600,
            wallet_networks: Default::default(),
        }
    }
}

/// The checkout engine: cheap to clone, share it across tasks.
#[derive(Clone)]
pub struct CheckoutEngine {
    /// The ports, rails and tenants shared with the other products.
    pub(crate) kernel: Kernel,
    pub(crate) config: CheckoutConfig,
    /// The wallets a payer may pay from by phone (`phone_pay`); `None` when no wallet
    /// engine runs beside this checkout.
    pub(crate) phone_wallets:
        Option<std::sync::Arc<dyn stablecoin_core::kernel::PhoneWalletPayments>>,
    /// The tenant's spending policies over live refunds (issue #51); `None`: no
    /// policies govern them (an embedder without the wallet engine).
    pub(crate) policies: Option<std::sync::Arc<dyn stablecoin_core::kernel::SpendingPolicies>>,
}

/// Who a business key acts for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Scope {
    pub tenant: TenantId,
    pub business: String,
    pub mode: Mode,
}

impl CheckoutEngine {
    /// A checkout on `kernel`: its ports, every rail it has (sessions take deposits on
    /// each), its tenants.
    pub fn new(kernel: &Kernel, config: CheckoutConfig) -> CheckoutResult<Self> {
        let c = &config;
        if c.min_expiry_secs == 0
            || c.min_expiry_secs > c.default_expiry_secs
            || c.default_expiry_secs > c.max_expiry_secs
            || c.max_expiry_secs > i64::MAX as u64 / 1000
            || c.max_amount.is_zero()
            || c.batch_limit == 0
            || c.claim_lease_ms <= 0
            || c.confirm_grace_ms < 0
            || c.refund_claim_secs == 0
            || c.refund_claim_secs > i64::MAX as u64 / 1000
        {
            return Err(CheckoutError::InvalidParameter {
                field: "config",
                reason: "expiry bounds must satisfy 0 < min <= default <= max; amounts, batch and lease positive".into(),
            });
        }
        Ok(CheckoutEngine {
            kernel: kernel.clone(),
            config,
            phone_wallets: None,
            policies: None,
        })
    }

    /// The checkout with its live refunds governed by `policies` (the wallet engine's
    /// spending policies, issue #51): decided before anything is reserved, as the
    /// wallet's sends are. Test-mode refunds are not (the sandbox holds no live money).
    pub fn with_spending_policies(
        mut self,
        policies: std::sync::Arc<dyn stablecoin_core::kernel::SpendingPolicies>,
    ) -> Self {
        self.policies = Some(policies);
        self
    }

    /// The kernel it runs on (its ports, rails and tenants).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The settings it was built with.
    pub fn config(&self) -> &CheckoutConfig {
        &self.config
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.kernel.now()
    }

    pub(crate) fn new_id(&self, prefix: &str) -> String {
        self.kernel.new_id(prefix)
    }

    pub(crate) async fn commit(&self, batch: Batch) -> CheckoutResult<()> {
        self.kernel.commit(batch).await.map_err(store_err)?;
        Ok(())
    }

    pub(crate) fn scope(auth: &AuthContext) -> CheckoutResult<Scope> {
        if auth.kind != KeyKind::Business {
            return Err(CheckoutError::WrongKeyKind {
                expected: "business API key (live_sk_... or test_sk_...)",
            });
        }
        Ok(Scope {
            tenant: auth.tenant.clone(),
            business: auth
                .business
                .clone()
                .unwrap_or_else(|| DEFAULT_BUSINESS.into()),
            mode: match auth.mode {
                KeyMode::Live => Mode::Live,
                KeyMode::Test => Mode::Test,
            },
        })
    }

    // ---- businesses ------------------------------------------------------------------

    /// Creates a business of `tenant` with a live and a test key, in one commit; the keys
    /// are in the answer only.
    pub async fn create_business(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> CheckoutResult<NewBusiness> {
        // The document's `maxLength` is of what the client sent: counted before trimming.
        let sent = name.chars().count();
        let name = name.trim();
        if name.is_empty() || sent > 100 || name.chars().any(char::is_control) {
            return Err(CheckoutError::InvalidParameter {
                field: "name",
                reason: "1 to 100 characters, no control characters".into(),
            });
        }
        self.kernel.tenant(tenant).await?;
        let business = Business {
            id: self.new_id("biz"),
            tenant: tenant.clone(),
            name: name.into(),
            created_at: self.now(),
            auto_refunds: false,
        };
        let live = self.kernel.new_api_key(
            tenant,
            KeyKind::Business,
            KeyMode::Live,
            Some(business.id.clone()),
        );
        let test = self.kernel.new_api_key(
            tenant,
            KeyKind::Business,
            KeyMode::Test,
            Some(business.id.clone()),
        );
        self.commit(Batch {
            puts: vec![business.insert()?, live.key.insert()?, test.key.insert()?],
            ..Default::default()
        })
        .await?;
        Ok(NewBusiness {
            business: BusinessView::of(&business),
            live_key: Some(live.secret),
            test_key: Some(test.secret),
        })
    }

    /// The ledger account of a business's checkout funds in `token`: what it holds for
    /// payers (over, late and unpaid payments, see [`crate::model::accounts`]), for its
    /// statement. The business must be `tenant`'s (`NOT_FOUND` otherwise, as for any
    /// other tenant's record); `biz_default` is the tenant's default business (sessions
    /// of keys issued without one).
    pub async fn funds_account(
        &self,
        tenant: &TenantId,
        business: &str,
        token: stablecoin_core::domain::money::Token,
    ) -> CheckoutResult<String> {
        if business != DEFAULT_BUSINESS {
            get_record::<Business>(&*self.kernel.ports().store, business)
                .await?
                .filter(|b| &b.record.tenant == tenant)
                .ok_or_else(|| CheckoutError::NotFound {
                    kind: "business",
                    id: business.chars().take(64).collect(),
                })?;
        }
        Ok(crate::model::accounts::refundable(tenant, business, token).id)
    }

    /// A tenant's businesses, newest first (at most 100).
    pub async fn list_businesses(&self, tenant: &TenantId) -> CheckoutResult<Vec<BusinessView>> {
        let (rows, _) = self
            .kernel
            .ports()
            .store
            .list(&ListQuery {
                kind: Business::KIND.into(),
                tenant: tenant.0.clone(),
                subkind: None,
                status: None,
                limit: 100,
                offset: 0,
            })
            .await
            .map_err(store_err)?;
        rows.iter()
            .map(|r| Ok(BusinessView::of(&Business::from_stored(r)?)))
            .collect()
    }

    /// The display name of a session's business (the default business is the tenant's
    /// own name).
    pub(crate) async fn business_name(&self, s: &Session) -> CheckoutResult<String> {
        self.business_name_of(&s.tenant, &s.business).await
    }

    /// The display name of `business` of `tenant` (see [`Self::business_name`]).
    pub(crate) async fn business_name_of(
        &self,
        tenant: &TenantId,
        business: &str,
    ) -> CheckoutResult<String> {
        if business == DEFAULT_BUSINESS {
            return Ok(self.kernel.tenant(tenant).await?.name);
        }
        Ok(
            get_record::<Business>(&*self.kernel.ports().store, business)
                .await?
                .map(|v| v.record.name)
                .unwrap_or_default(),
        )
    }

    // ---- reads -----------------------------------------------------------------------

    pub(crate) async fn load(&self, id: &str) -> CheckoutResult<Option<Versioned<Session>>> {
        if !is_session_id(id) {
            return Ok(None);
        }
        Ok(get_record::<Session>(&*self.kernel.ports().store, id).await?)
    }

    /// The session, only for the business and mode that own it: anything else is
    /// `NOT_FOUND`, exactly as a session that does not exist.
    pub(crate) async fn load_scoped(
        &self,
        scope: &Scope,
        id: &str,
    ) -> CheckoutResult<Versioned<Session>> {
        match self.load(id).await? {
            Some(v)
                if v.record.tenant == scope.tenant
                    && v.record.business == scope.business
                    && v.record.mode == scope.mode =>
            {
                Ok(v)
            }
            _ => Err(CheckoutError::NotFound {
                kind: "session",
                id: id.chars().take(64).collect(),
            }),
        }
    }

    /// A session's deposits, oldest first.
    pub(crate) async fn deposits_of(&self, s: &Session) -> CheckoutResult<Vec<SessionDeposit>> {
        if s.deposit_count == 0 {
            return Ok(Vec::new());
        }
        let (rows, _) = self
            .kernel
            .ports()
            .store
            .list(&ListQuery {
                kind: SessionDeposit::KIND.into(),
                tenant: s.tenant.0.clone(),
                subkind: Some(s.id.clone()),
                status: None,
                limit: MAX_DEPOSITS_READ,
                offset: 0,
            })
            .await
            .map_err(store_err)?;
        let mut out = rows
            .iter()
            .map(SessionDeposit::from_stored)
            .collect::<Result<Vec<_>, _>>()?;
        out.reverse();
        Ok(out)
    }

    /// The session whose Solana Pay `reference` is `reference` (one read of its unique
    /// key), for a scanner that finds transactions by reference
    /// (`getSignaturesForAddress(reference)`); `None` when no session has it.
    pub async fn session_by_solana_reference(
        &self,
        reference: &str,
    ) -> CheckoutResult<Option<Session>> {
        let key = Session::solana_reference_key(reference);
        Ok(stablecoin_core::ports::get_record_by_unique::<Session>(
            &*self.kernel.ports().store,
            &key,
        )
        .await?
        .map(|v| v.record))
    }

    /// The payer's read of a session by its unguessable id (the hosted payment page):
    /// the session, its deposits and its business's display name; `None` for an unknown
    /// id. It carries nothing of any other session.
    pub async fn public_session(
        &self,
        id: &str,
    ) -> CheckoutResult<Option<(Session, Vec<SessionDeposit>, String)>> {
        let Some(v) = self.load(id).await? else {
            return Ok(None);
        };
        let deposits = self.deposits_of(&v.record).await?;
        let name = self.business_name(&v.record).await?;
        Ok(Some((v.record, deposits, name)))
    }
}

/// `cs_` and 26 Crockford characters: anything else is never looked up.
pub fn is_session_id(id: &str) -> bool {
    stablecoin_core::domain::ids::is_valid_id("cs", id)
}
