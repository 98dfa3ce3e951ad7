//! [`EscrowEngine`]: the tenant API of escrow (create, read, list, history, release,
//! refund, dispute, cancel) and the shared decision code the admin API and the workers
//! use. Every decision commits ONE batch: the deal, its history entries, the outbox
//! events, the ledger transfers, any payout record and the idempotency record.

use crate::error::{EscrowError, EscrowResult, rail_err, store_err};
use crate::events::EscrowEventType;
use crate::model::*;
use crate::state::{Action, EscrowState, PayoutPurpose, Phase, transition};
use crate::view::*;
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use stablecoin_core::domain::consent::Wallet;
use stablecoin_core::domain::ids::{EscrowId, EventId, TenantId};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{AuthContext, KeyKind, Ports, validate_idempotency_key};
use stablecoin_core::ports::{
    Batch, Clock, Entropy, IdempotencyRecord, KeyPurpose, Ledger, LedgerAccount, LedgerError,
    LedgerTransfer, LegRole, ListQuery, OutboxEvent, PaymentLeg, Phase as LedgerPhase, Rail,
    RailId, RailPayment, ReadinessStatus, Record, Store, StoreError, Versioned, get_record,
    get_record_by_unique,
};
use std::sync::Arc;

/// Times a decision is re-read and re-made after losing a race for the same record.
pub(crate) const MAX_RETRIES: usize = 8;
/// Longest `reason` / note.
const MAX_TEXT: usize = 1000;
/// Longest partner `reference`.
const MAX_REFERENCE: usize = 200;

/// The escrow engine: cheap to clone, share it across tasks.
#[derive(Clone)]
pub struct EscrowEngine {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub store: Arc<dyn Store>,
    pub ledger: Arc<dyn Ledger>,
    pub clock: Arc<dyn Clock>,
    pub entropy: Arc<dyn Entropy>,
    pub rail: Arc<dyn Rail>,
    pub config: EscrowConfig,
}

/// A validated create request.
struct ValidCreate {
    buyer_phone: Phone,
    seller_phone: Phone,
    amount: Micros,
    token: Token,
    reference: String,
    funding_window_secs: u64,
    auto_release_after_secs: Option<u64>,
}

impl EscrowEngine {
    /// An engine over the core ports and the TRON rail (`tron.id()` must be TRON).
    pub fn new(ports: &Ports, tron: Arc<dyn Rail>, config: EscrowConfig) -> EscrowResult<Self> {
        if tron.id() != RailId::Tron {
            return Err(EscrowError::InvalidConfig(format!(
                "escrow needs the TRON rail, got {}",
                tron.id()
            )));
        }
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
                store: ports.store.clone(),
                ledger: ports.ledger.clone(),
                clock: ports.clock.clone(),
                entropy: ports.entropy.clone(),
                rail: tron,
                config,
            }),
        })
    }

    pub fn config(&self) -> &EscrowConfig {
        &self.inner.config
    }

    pub(crate) fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    fn random10(&self) -> [u8; 10] {
        let mut b = [0u8; 10];
        self.inner.entropy.fill(&mut b);
        b
    }

    pub(crate) async fn commit(&self, batch: Batch) -> EscrowResult<()> {
        self.inner.store.commit(batch).await.map_err(store_err)?;
        Ok(())
    }

    // ---- tenant API --------------------------------------------------------------

    /// `POST /v1/escrows`. A sandbox (test) key gets [`simulate_create`](Self::simulate_create).
    ///
    /// Checks, in order: the request (400 class), the parties' wallets (`NOT_FOUND`,
    /// `NOT_A_MEMBER`, `SAME_WALLET`), admission (`ESCROW_UNAVAILABLE` when TRON deposits
    /// are disabled, `RAIL_NOT_READY` unless TRON readiness is READY). Nothing is stored
    /// unless every check passes; then the deal, its first history entry, the
    /// `escrow.created` event and the idempotency record are one batch.
    pub async fn create(
        &self,
        auth: &AuthContext,
        req: &CreateEscrowRequest,
        idempotency_key: Option<&str>,
    ) -> EscrowResult<EscrowView> {
        require_tenant_key(auth)?;
        if auth.is_sandbox() {
            return self.simulate_create(auth, req).await;
        }
        let valid = self.validate_create(req)?;
        if let Some(key) = idempotency_key {
            validate_idempotency_key(key)?;
        }
        let hash = request_hash("escrow.create", req)?;
        if let Some(key) = idempotency_key
            && let Some(found) = self.replay(&auth.tenant, key, &hash).await?
        {
            return Ok(found);
        }
        let (buyer, seller) = self.parties(&auth.tenant, &valid).await?;
        self.admit().await?;
        let actor = Actor::Tenant {
            tenant: auth.tenant.clone(),
            api_key_id: auth.key_id.clone(),
        };
        for _ in 0..MAX_RETRIES {
            let now = self.now();
            let id = EscrowId::generate(now.millis(), self.random10());
            let address = self
                .inner
                .rail
                .address_for(&KeyPurpose::EscrowDeal(id.0.clone()))
                .await
                .map_err(rail_err)?;
            if self.address_taken(&address).await? {
                continue;
            }
            let mut deal = new_deal(
                id,
                &auth.tenant,
                &valid,
                buyer.clone(),
                seller.clone(),
                address,
                &self.inner.config,
                now,
            );
            let mut batch = Batch::default();
            let data = json!({
                "amount": deal.amount.to_base_units_string(),
                "escrow_address": deal.escrow_address.0,
                "funding_expires_at": deal.funding_expires_at.to_rfc3339(),
            });
            self.push_event(
                &mut batch,
                &mut deal,
                EscrowEventType::Created,
                None,
                &actor,
                None,
                None,
                Some(data),
                now,
            )?;
            batch.puts.push(deal.insert()?);
            let view = EscrowView::from_deal(&deal);
            if let Some(key) = idempotency_key {
                batch.idempotency = Some(IdempotencyRecord {
                    tenant: auth.tenant.0.clone(),
                    key: key.to_string(),
                    request_hash: hash.clone(),
                    response: serde_json::to_value(&view)
                        .map_err(|e| EscrowError::Storage(format!("encode response: {e}")))?,
                    created_at: now,
                });
            }
            match self.inner.store.commit(batch).await {
                Ok(_) => return Ok(view),
                Err(StoreError::IdempotencyExists { .. }) => {
                    let key = idempotency_key.unwrap_or_default();
                    return self
                        .replay(&auth.tenant, key, &hash)
                        .await?
                        .ok_or(EscrowError::IdempotencyKeyInUse);
                }
                // The id or the address is taken (a clash of ids): never reuse, draw again.
                Err(StoreError::VersionConflict { .. } | StoreError::UniqueViolation { .. }) => {
                    continue;
                }
                Err(e) => return Err(store_err(e)),
            }
        }
        Err(EscrowError::Conflict {
            what: "a fresh escrow id and address".into(),
        })
    }

    /// Sandbox create: the same validation and wallet checks as a live create (no
    /// admission check: nothing live happens), and a realistic view with a fresh `esc_`
    /// id and `simulated: true`. Nothing is stored and no event is written, so the id can
    /// never be fetched, funded or acted on. Its `escrow_address` is derived from a
    /// separate key path (`escrow/sandbox/<id>`) that no deal and no scanner ever uses.
    pub async fn simulate_create(
        &self,
        auth: &AuthContext,
        req: &CreateEscrowRequest,
    ) -> EscrowResult<EscrowView> {
        require_tenant_key(auth)?;
        let valid = self.validate_create(req)?;
        let (buyer, seller) = self.parties(&auth.tenant, &valid).await?;
        let now = self.now();
        let id = EscrowId::generate(now.millis(), self.random10());
        let address = self
            .inner
            .rail
            .address_for(&KeyPurpose::EscrowDeal(format!("sandbox/{id}")))
            .await
            .map_err(rail_err)?;
        let deal = new_deal(
            id,
            &auth.tenant,
            &valid,
            buyer,
            seller,
            address,
            &self.inner.config,
            now,
        );
        let mut view = EscrowView::from_deal(&deal);
        view.simulated = true;
        Ok(view)
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
            .store
            .list(&ListQuery {
                kind: Deal::KIND.into(),
                tenant: auth.tenant.0.clone(),
                subkind: None,
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

    /// `POST /v1/escrows/{id}/release`: FUNDED -> FUNDED with `payout_pending=true`; the
    /// full amount goes to the seller's linked wallet once the worker's payout confirms.
    pub async fn release(
        &self,
        auth: &AuthContext,
        id: &str,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        self.tenant_action(auth, id, Action::Release, req).await
    }

    /// `POST /v1/escrows/{id}/refund`: FUNDED -> FUNDED with `payout_pending=true`; the
    /// full amount goes back to the buyer's linked wallet once confirmed.
    pub async fn refund(
        &self,
        auth: &AuthContext,
        id: &str,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        self.tenant_action(auth, id, Action::Refund, req).await
    }

    /// `POST /v1/escrows/{id}/dispute`: FUNDED -> DISPUTED; `reason` required. Refused
    /// (`PAYOUT_IN_FLIGHT`) once a payout is claimed.
    pub async fn dispute(
        &self,
        auth: &AuthContext,
        id: &str,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        self.tenant_action(auth, id, Action::Dispute, req).await
    }

    /// `POST /v1/escrows/{id}/cancel`: CREATED -> CANCELLED; partial deposits become
    /// recoverable.
    pub async fn cancel(
        &self,
        auth: &AuthContext,
        id: &str,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        self.tenant_action(auth, id, Action::Cancel, req).await
    }

    async fn tenant_action(
        &self,
        auth: &AuthContext,
        id: &str,
        action: Action,
        req: &EscrowActionRequest,
    ) -> EscrowResult<EscrowView> {
        require_tenant_key(auth)?;
        if auth.is_sandbox() {
            return Err(EscrowError::SandboxUnsupported);
        }
        let on_behalf_of = parse_on_behalf_of(req.on_behalf_of.as_deref())?;
        let reason = clean_text("reason", req.reason.as_deref(), MAX_TEXT)?;
        if action == Action::Dispute && reason.is_none() {
            return Err(EscrowError::MissingParameter {
                field: "reason",
                reason: "a dispute needs a reason; it becomes part of the permanent history".into(),
            });
        }
        let actor = Actor::Tenant {
            tenant: auth.tenant.clone(),
            api_key_id: auth.key_id.clone(),
        };
        let sends = matches!(action, Action::Release | Action::Refund);
        for _ in 0..MAX_RETRIES {
            let v = self.load_for_tenant(&auth.tenant, id).await?;
            if sends && transition(v.record.phase(), action).is_ok() {
                // A payout is a sponsored send (spec 7: 503 while TRON is not READY).
                self.require_can_send().await?;
            }
            match self
                .apply_action(v, action, &actor, on_behalf_of, reason.clone(), None)
                .await
            {
                Err(EscrowError::Conflict { .. }) => continue,
                other => return other,
            }
        }
        Err(EscrowError::Conflict {
            what: format!("escrow {id}"),
        })
    }

    // ---- shared decisions ------------------------------------------------------------

    /// Applies a tenant, staff or worker action to the deal as read at `v.version`, in
    /// one batch. `Conflict` means the deal changed meanwhile: read it again and retry.
    pub(crate) async fn apply_action(
        &self,
        v: Versioned<Deal>,
        action: Action,
        actor: &Actor,
        on_behalf_of: Option<Party>,
        reason: Option<String>,
        resolution_note: Option<String>,
    ) -> EscrowResult<EscrowView> {
        let Versioned {
            record: mut deal,
            version,
        } = v;
        let now = self.now();
        let from = deal.phase();
        let to = transition(from, action)?;
        let mut batch = Batch::default();
        let (event, data) = match action {
            Action::Cancel | Action::Expire => {
                deal.set_phase(to);
                let moved = deal.applied;
                if action == Action::Cancel {
                    deal.cancelled_at = Some(now);
                } else {
                    deal.expired_at = Some(now);
                }
                if !moved.is_zero() {
                    let held = accounts::held(&deal.id, deal.token);
                    let partial =
                        accounts::bucket(&deal.id, crate::state::RecoveryKind::Partial, deal.token);
                    batch.ledger.push(LedgerTransfer {
                        id: format!("escrow:{}:unfunded", deal.id),
                        debit: held.id.clone(),
                        credit: partial.id.clone(),
                        amount: moved,
                        phase: LedgerPhase::Single,
                    });
                    batch.accounts.extend([held, partial]);
                    deal.add_recoverable(crate::state::RecoveryKind::Partial, deal.token, moved)
                        .ok_or_else(overflow)?;
                }
                let event = if action == Action::Cancel {
                    EscrowEventType::Cancelled
                } else {
                    EscrowEventType::Expired
                };
                (
                    event,
                    Some(json!({ "partial_recoverable": moved.to_base_units_string() })),
                )
            }
            Action::Dispute => {
                deal.set_phase(to);
                deal.disputed_at = Some(now);
                deal.dispute_reason = reason.clone();
                (EscrowEventType::Disputed, None)
            }
            Action::Release
            | Action::Refund
            | Action::AutoRelease
            | Action::ResolveRelease
            | Action::ResolveRefund => {
                let purpose = to.payout.ok_or_else(|| EscrowError::InvalidState {
                    state: from.state.as_str().into(),
                    action: action.as_str().into(),
                })?;
                if action == Action::AutoRelease {
                    deal.auto_release_attempted = true;
                }
                let staff = matches!(action, Action::ResolveRelease | Action::ResolveRefund);
                let to_party = match purpose {
                    PayoutPurpose::Release => Party::Seller,
                    PayoutPurpose::Refund => Party::Buyer,
                };
                let source = accounts::held(&deal.id, deal.token);
                let (amount, token) = (deal.amount, deal.token);
                let payout = self.new_payout(
                    &mut deal,
                    PayoutKind::Deal(purpose),
                    to_party,
                    amount,
                    token,
                    source.clone(),
                    actor,
                    on_behalf_of,
                    resolution_note.clone().or_else(|| reason.clone()),
                    staff,
                    now,
                );
                deal.state = to.state;
                deal.payout = Some(PayoutClaim {
                    purpose,
                    payout_id: payout.id.clone(),
                    resolution_note: resolution_note.clone(),
                    claimed_at: now,
                });
                let data = json!({
                    "payout_id": payout.id,
                    "purpose": purpose.as_str(),
                    "trigger": action.as_str().to_ascii_uppercase(),
                    "to": to_party.as_str(),
                    "to_address": deal.party(to_party).address.0,
                    "amount": payout.amount.to_base_units_string(),
                });
                batch
                    .accounts
                    .extend([source, accounts::paid_out(&deal.id, deal.token)]);
                batch.ledger.push(payout.hold.clone());
                batch.puts.push(payout.insert()?);
                (EscrowEventType::PayoutPending, Some(data))
            }
            Action::Fund | Action::PayoutConfirmed | Action::PayoutFailed => {
                return Err(EscrowError::InvalidState {
                    state: from.state.as_str().into(),
                    action: action.as_str().into(),
                });
            }
        };
        self.push_event(
            &mut batch,
            &mut deal,
            event,
            Some(from),
            actor,
            on_behalf_of,
            reason,
            data,
            now,
        )?;
        batch.puts.push(deal.update(version)?);
        self.commit(batch).await?;
        Ok(EscrowView::from_deal(&deal))
    }

    /// A payout of `amount` from the deal address to a party's linked wallet, with its
    /// pending ledger hold. Its id (the rail payment id) is derived from the deal and the
    /// attempt number, so the same attempt can never be paid twice.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_payout(
        &self,
        deal: &mut Deal,
        kind: PayoutKind,
        to: Party,
        amount: Micros,
        token: Token,
        source: LedgerAccount,
        actor: &Actor,
        on_behalf_of: Option<Party>,
        note: Option<String>,
        staff_resolution: bool,
        now: Timestamp,
    ) -> PayoutRecord {
        let id = match kind {
            PayoutKind::Deal(_) => {
                deal.payout_attempts += 1;
                format!("{}:payout:{}", deal.id, deal.payout_attempts)
            }
            PayoutKind::Recovery(_) => {
                deal.recovery_attempts += 1;
                format!("{}:recovery:{}", deal.id, deal.recovery_attempts)
            }
        };
        let party = deal.party(to).clone();
        let payment = RailPayment {
            id: id.clone(),
            from: KeyPurpose::EscrowDeal(deal.id.0.clone()),
            from_address: deal.escrow_address.clone(),
            token,
            legs: vec![PaymentLeg {
                to: party.address.clone(),
                amount,
                role: LegRole::Recipient,
            }],
        };
        let hold = LedgerTransfer {
            id: format!("{id}:hold"),
            debit: source.id,
            credit: accounts::paid_out(&deal.id, token).id,
            amount,
            phase: LedgerPhase::Pending,
        };
        PayoutRecord {
            id,
            deal: deal.id.clone(),
            tenant: deal.tenant.clone(),
            kind,
            staff_resolution,
            to,
            to_wallet: party.wallet,
            amount,
            token,
            payment,
            hold,
            status: PayoutStatus::Queued,
            tx_hash: None,
            block: None,
            error_reason: None,
            requested_by: actor.clone(),
            on_behalf_of,
            note,
            submitted_at: None,
            next_check_at: Some(now),
            created_at: now,
            updated_at: now,
            settled_at: None,
        }
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

    // ---- reads -------------------------------------------------------------------------

    /// A deal by id, any tenant (`None` for a malformed or unknown id).
    pub(crate) async fn load(&self, id: &str) -> EscrowResult<Option<Versioned<Deal>>> {
        if EscrowId::parse(id).is_none() {
            return Ok(None);
        }
        Ok(get_record::<Deal>(&*self.inner.store, id).await?)
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
                    &*self.inner.store,
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

    // ---- create helpers ------------------------------------------------------------

    fn validate_create(&self, req: &CreateEscrowRequest) -> EscrowResult<ValidCreate> {
        let c = &self.inner.config;
        let phone = |field: &'static str, s: &str| {
            Phone::parse(s).map_err(|e| EscrowError::InvalidPhone {
                field,
                reason: match e {
                    stablecoin_core::CoreError::InvalidPhone { reason, .. } => reason,
                    other => other.to_string(),
                },
            })
        };
        let buyer_phone = phone("buyer_phone_number", &req.buyer_phone_number)?;
        let seller_phone = phone("seller_phone_number", &req.seller_phone_number)?;
        let amount = Micros::parse_whole_tokens(&req.amount)?;
        let input = || req.amount.chars().take(64).collect::<String>();
        if amount.is_zero() {
            return Err(EscrowError::InvalidAmount {
                input: input(),
                reason: "amount must be greater than zero".into(),
            });
        }
        if amount > c.max_amount {
            return Err(EscrowError::InvalidAmount {
                input: input(),
                reason: format!(
                    "amount exceeds the escrow limit of {} tokens",
                    c.max_amount.get() / 1_000_000
                ),
            });
        }
        let token = match req.token.as_deref() {
            None => Token::Usdt,
            Some(s) => {
                let t: Token = s.parse()?;
                if t != Token::Usdt {
                    return Err(EscrowError::UnsupportedToken {
                        token: t.to_string(),
                    });
                }
                t
            }
        };
        let reference =
            clean_text("reference", Some(&req.reference), MAX_REFERENCE)?.ok_or_else(|| {
                EscrowError::MissingParameter {
                    field: "reference",
                    reason: "the partner reference of the deal".into(),
                }
            })?;
        let funding_window_secs = match req.funding_window_secs {
            None => c.default_funding_window_secs,
            Some(s) if (c.min_funding_window_secs..=c.max_funding_window_secs).contains(&s) => s,
            Some(_) => {
                return Err(EscrowError::InvalidParameter {
                    field: "funding_window_secs",
                    reason: format!(
                        "must be between {} and {} seconds",
                        c.min_funding_window_secs, c.max_funding_window_secs
                    ),
                });
            }
        };
        let auto_release_after_secs = match req.auto_release_after_secs {
            None => None,
            Some(s)
                if (c.min_auto_release_after_secs..=c.max_auto_release_after_secs).contains(&s) =>
            {
                Some(s)
            }
            Some(_) => {
                return Err(EscrowError::InvalidParameter {
                    field: "auto_release_after_secs",
                    reason: format!(
                        "must be between {} and {} seconds, or absent for no automatic release",
                        c.min_auto_release_after_secs, c.max_auto_release_after_secs
                    ),
                });
            }
        };
        if buyer_phone == seller_phone {
            return Err(EscrowError::SameWallet);
        }
        Ok(ValidCreate {
            buyer_phone,
            seller_phone,
            amount,
            token,
            reference,
            funding_window_secs,
            auto_release_after_secs,
        })
    }

    async fn parties(
        &self,
        tenant: &TenantId,
        v: &ValidCreate,
    ) -> EscrowResult<(PartyWallet, PartyWallet)> {
        let buyer = self
            .party_wallet(tenant, &v.buyer_phone, Party::Buyer)
            .await?;
        let seller = self
            .party_wallet(tenant, &v.seller_phone, Party::Seller)
            .await?;
        if buyer.wallet == seller.wallet {
            return Err(EscrowError::SameWallet);
        }
        Ok((buyer, seller))
    }

    /// The party's wallet must exist and the tenant must be a member of it; its TRON
    /// address comes from the wallet record if core stored one, else from the rail.
    async fn party_wallet(
        &self,
        tenant: &TenantId,
        phone: &Phone,
        party: Party,
    ) -> EscrowResult<PartyWallet> {
        let (field, name) = match party {
            Party::Buyer => ("buyer_phone_number", "buyer"),
            Party::Seller => ("seller_phone_number", "seller"),
        };
        let w = get_record_by_unique::<Wallet>(&*self.inner.store, &Wallet::phone_key(phone))
            .await?
            .ok_or_else(|| EscrowError::NotFound {
                kind: "wallet",
                id: phone.masked(),
                field: Some(field),
            })?
            .record;
        if !w.is_member(tenant) {
            return Err(EscrowError::NotAMember { party: name });
        }
        let address = match w.address(&RailId::Tron.name()) {
            Some(a) => a.clone(),
            None => self
                .inner
                .rail
                .address_for(&KeyPurpose::Wallet(w.id.0.clone()))
                .await
                .map_err(rail_err)?,
        };
        Ok(PartyWallet {
            wallet: w.id,
            phone: w.phone,
            address,
        })
    }

    /// Admission (spec 1.6): TRON deposits enabled and sponsored payouts READY.
    async fn admit(&self) -> EscrowResult<()> {
        if !self.inner.config.deposits_enabled {
            return Err(EscrowError::EscrowUnavailable {
                reason: "TRON deposits are disabled for escrow".into(),
            });
        }
        self.require_can_send().await
    }

    /// TRON readiness must be READY (sponsored sends available), else `RAIL_NOT_READY`.
    pub(crate) async fn require_can_send(&self) -> EscrowResult<()> {
        let r = self.inner.rail.readiness().await;
        if r.status != ReadinessStatus::Ready {
            let status = serde_json::to_value(r.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let mut reason = format!("TRON readiness is {status}, sponsored payouts need READY");
            if !r.reasons.is_empty() {
                reason.push_str(": ");
                reason.push_str(&r.reasons.join("; "));
            }
            return Err(EscrowError::RailNotReady {
                rail: "tron".into(),
                reason,
            });
        }
        Ok(())
    }

    /// Whether an address already belongs to a deal or a customer wallet.
    async fn address_taken(
        &self,
        address: &stablecoin_core::ports::ChainAddress,
    ) -> EscrowResult<bool> {
        let store = &self.inner.store;
        let deal = store
            .get_by_unique(&Deal::address_key(address))
            .await
            .map_err(store_err)?;
        let wallet = store
            .get_by_unique(&Wallet::address_key(&RailId::Tron.name(), address))
            .await
            .map_err(store_err)?;
        Ok(deal.is_some() || wallet.is_some())
    }

    async fn replay(
        &self,
        tenant: &TenantId,
        key: &str,
        hash: &str,
    ) -> EscrowResult<Option<EscrowView>> {
        let Some(rec) = self
            .inner
            .store
            .idempotency(&tenant.0, key)
            .await
            .map_err(store_err)?
        else {
            return Ok(None);
        };
        if rec.request_hash != hash {
            return Err(EscrowError::IdempotencyKeyReused);
        }
        serde_json::from_value(rec.response)
            .map(Some)
            .map_err(|e| EscrowError::Storage(format!("decode stored response: {e}")))
    }

    // ---- accounting ------------------------------------------------------------------

    pub(crate) async fn balance(
        &self,
        account: &str,
    ) -> EscrowResult<stablecoin_core::ports::Balance> {
        match self.inner.ledger.balance(account).await {
            Ok(b) => Ok(b),
            Err(LedgerError::UnknownAccount { .. }) => Ok(Default::default()),
            Err(e) => Err(EscrowError::Storage(e.to_string())),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn new_deal(
    id: EscrowId,
    tenant: &TenantId,
    v: &ValidCreate,
    buyer: PartyWallet,
    seller: PartyWallet,
    escrow_address: stablecoin_core::ports::ChainAddress,
    config: &EscrowConfig,
    now: Timestamp,
) -> Deal {
    Deal {
        id,
        tenant: tenant.clone(),
        state: EscrowState::Created,
        payout: None,
        amount: v.amount,
        token: v.token,
        rail: RailId::Tron.name(),
        network: config.network.clone(),
        chain_id: config.chain_id,
        reference: v.reference.clone(),
        buyer,
        seller,
        escrow_address,
        funding_expires_at: now.plus_secs(v.funding_window_secs as i64),
        auto_release_after_secs: v.auto_release_after_secs,
        auto_release_at: None,
        auto_release_attempted: false,
        applied: Micros::ZERO,
        deposited: Default::default(),
        deposit_count: 0,
        recoverable: Vec::new(),
        recoveries: Vec::new(),
        payout_attempts: 0,
        recovery_attempts: 0,
        payout_tx_hash: None,
        payout_failure_reason: None,
        funded_at: None,
        released_at: None,
        refunded_at: None,
        disputed_at: None,
        dispute_reason: None,
        resolution_note: None,
        cancelled_at: None,
        expired_at: None,
        history_len: 0,
        created_at: now,
        updated_at: now,
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
pub(crate) fn clean_text(
    field: &'static str,
    v: Option<&str>,
    max_chars: usize,
) -> EscrowResult<Option<String>> {
    let Some(s) = v.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    if s.chars().count() > max_chars {
        return Err(EscrowError::InvalidParameter {
            field,
            reason: format!("must be at most {max_chars} characters"),
        });
    }
    if s.chars().any(|c| c.is_control() && c != '\n') {
        return Err(EscrowError::InvalidParameter {
            field,
            reason: "must not contain control characters".into(),
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

fn request_hash(operation: &str, request: &impl Serialize) -> EscrowResult<String> {
    let body = serde_json::to_vec(request)
        .map_err(|e| EscrowError::Storage(format!("encode request: {e}")))?;
    let mut h = Sha256::new();
    h.update(operation.as_bytes());
    h.update(b"\n");
    h.update(&body);
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
