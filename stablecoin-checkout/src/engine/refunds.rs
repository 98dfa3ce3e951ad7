//! Refunds of a session (issue #50 item 1): create (to an address, or as a claim link),
//! list, read, and the payer's claim. The rule of what may be refunded and the refund's
//! states are `crate::refund_state`'s; the sending, expiry and failure are the worker's
//! (`crate::refund_worker`).
//!
//! Every decision commits one batch under the session's version: the refund, the
//! session's `refunded` reservation, the ledger moves (live sessions) and the outbox
//! event, so two concurrent refunds cannot both take the same money.

use super::{CheckoutEngine, MAX_RETRIES, Scope};
use crate::error::{CheckoutError, CheckoutResult, store_err};
use crate::events;
use crate::model::DepositState;
use crate::model::{Mode, Session, SessionDeposit, accounts};
use crate::refund_model::{Refund, is_refund_id, refund_account};
use crate::refund_state::{
    Received, RefundEvent, RefundSources, RefundStatus, sources, split_refund, transition,
};
use crate::refund_views::{
    CreateRefundRequest, RefundClaimView, RefundList, RefundView, RefundableView,
};
use crate::state::SessionStatus;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::kernel::AuthContext;
use stablecoin_core::kernel::idempotency::KeyedRequest;
use stablecoin_core::ports::{
    Batch, ChainAddress, KeyPurpose, LedgerTransfer, ListQuery, Phase as LedgerPhase, Record,
    Versioned, get_record,
};
use std::collections::BTreeMap;

/// Refunds a session lists (each refund is a business decision; this bounds the read).
pub(crate) const MAX_REFUNDS_READ: usize = 200;

/// What a session received per token, from its credited deposits.
fn received_by_token(deposits: &[SessionDeposit]) -> BTreeMap<Token, Received> {
    let mut out: BTreeMap<Token, Received> = BTreeMap::new();
    for d in deposits
        .iter()
        .filter(|d| d.state == DepositState::Credited)
    {
        let e = out.entry(d.token).or_default();
        // Each sum is of what the session's own checked sums already hold.
        e.amount = Micros::new(e.amount.get().saturating_add(d.amount.get()));
        e.applied = Micros::new(e.applied.get().saturating_add(d.applied.get()));
    }
    out
}

/// What `s` can still refund per token: its sources less its reservations.
pub(crate) fn refundable_by_token(
    s: &Session,
    deposits: &[SessionDeposit],
) -> BTreeMap<Token, RefundSources> {
    let paid = s.status == SessionStatus::Paid;
    let ended_unpaid = matches!(s.status, SessionStatus::Failed | SessionStatus::Expired);
    received_by_token(deposits)
        .into_iter()
        .map(|(token, r)| {
            let reserved = s.refunded.get(&token).copied().unwrap_or_default();
            (token, sources(r, paid, ended_unpaid).minus(&reserved))
        })
        .collect()
}

/// The ledger moves of a refund's reservation (`reverse`: of its return), live only.
pub(crate) fn reservation_moves(r: &Refund, reverse: bool, batch: &mut Batch) {
    if r.mode != Mode::Live {
        return;
    }
    let hold = refund_account(&r.id, r.token);
    let legs = [
        (
            "owed",
            accounts::refundable(&r.tenant, &r.business, r.token),
            r.sources.owed_back,
        ),
        (
            "settled",
            accounts::treasury(&r.tenant, r.token),
            r.sources.settled,
        ),
    ];
    for (name, source, amount) in legs {
        if amount.is_zero() {
            continue;
        }
        let (debit, credit, step) = if reverse {
            (&hold, &source, "return")
        } else {
            (&source, &hold, "reserve")
        };
        batch.ledger.push(LedgerTransfer {
            id: format!("{}:{step}:{name}", r.id),
            debit: debit.id.clone(),
            credit: credit.id.clone(),
            amount,
            phase: LedgerPhase::Single,
        });
        batch.accounts.push(source.clone());
        batch.accounts.push(hold.clone());
    }
}

impl CheckoutEngine {
    /// `POST /api/v1/checkout/sessions/{id}/refunds`: reserves the refund's money and
    /// records it, due at once (with an address) or awaiting the payer's claim. The
    /// same `Idempotency-Key` with the same request answers the first refund.
    pub async fn create_refund(
        &self,
        auth: &AuthContext,
        session_id: &str,
        req: &CreateRefundRequest,
        idempotency_key: Option<&str>,
    ) -> CheckoutResult<RefundView> {
        let scope = Self::scope(auth)?;
        self.refund_for(&scope, session_id, req, idempotency_key)
            .await
    }

    /// [`Self::create_refund`] for a business and mode already known (an automatic
    /// refund acts for the business without a key).
    pub(crate) async fn refund_for(
        &self,
        scope: &Scope,
        session_id: &str,
        req: &CreateRefundRequest,
        idempotency_key: Option<&str>,
    ) -> CheckoutResult<RefundView> {
        let scope = scope.clone();
        let namespace = format!("checkout:{}:{}:", scope.business, scope.mode.as_str());
        let at = KeyedRequest {
            tenant: &scope.tenant.0,
            key: idempotency_key,
            namespace: &namespace,
            operation: "checkout.refund",
        };
        let keyed = (session_id, req);
        for _ in 0..MAX_RETRIES {
            let result = self
                .kernel
                .idempotent(at, &keyed, || async {
                    let (refund, batch) = self.decide_refund(&scope, session_id, req).await?;
                    Ok::<_, CheckoutError>((batch, RefundView::of(&refund)))
                })
                .await;
            match result {
                // A deposit or another refund changed the session: decide again.
                Err(CheckoutError::Conflict { .. }) => continue,
                other => return other,
            }
        }
        Err(CheckoutError::Conflict {
            what: format!(
                "session {}",
                session_id.chars().take(64).collect::<String>()
            ),
        })
    }

    async fn decide_refund(
        &self,
        scope: &Scope,
        session_id: &str,
        req: &CreateRefundRequest,
    ) -> CheckoutResult<(Refund, Batch)> {
        let reason = super::sessions::text("reason", &req.reason, 500)?;
        let Versioned {
            record: mut s,
            version,
        } = self.load_scoped(scope, session_id).await?;
        let deposits = self.deposits_of(&s).await?;
        let available = refundable_by_token(&s, &deposits);
        let token = match req.token.as_deref().map(str::trim) {
            Some(t) => t
                .parse::<Token>()
                .map_err(|_| CheckoutError::UnknownToken {
                    token: t.chars().take(16).collect(),
                })?,
            None => {
                let mut with_money = available.iter().filter(|(_, a)| !a.total().is_zero());
                match (with_money.next(), with_money.next()) {
                    (Some((t, _)), None) => *t,
                    (Some(_), Some(_)) => {
                        return Err(CheckoutError::MissingParameter { field: "token" });
                    }
                    (None, _) => {
                        return Err(CheckoutError::RefundExceedsRefundable {
                            refundable: Micros::ZERO.to_decimal_string(),
                        });
                    }
                }
            }
        };
        let left = available.get(&token).copied().unwrap_or_default();
        let amount = match req.amount.as_deref() {
            Some(a) => {
                Micros::parse_positive(a.trim()).map_err(|e| CheckoutError::InvalidAmount {
                    reason: e.to_string(),
                })?
            }
            None => left.total(),
        };
        let parts = split_refund(&left, amount)?;
        let now = self.now();
        let id = self.new_id("rf");
        let network = req
            .network
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty());
        let (status, network, address, claim_networks, claim_expires_at) =
            match req.address.as_deref().map(str::trim) {
                Some(a) => {
                    let network =
                        network.ok_or(CheckoutError::MissingParameter { field: "network" })?;
                    self.network_for(network, token)?;
                    let a = self.check_refund_destination(&s, network, a).await?;
                    (
                        RefundStatus::Pending,
                        Some(network.to_string()),
                        Some(a),
                        Vec::new(),
                        None,
                    )
                }
                None => {
                    let nets = self.claim_networks(&s, token, network)?;
                    let until = now.plus_secs(self.config.refund_claim_secs as i64);
                    (RefundStatus::AwaitingClaim, None, None, nets, Some(until))
                }
            };
        let refund = Refund {
            id,
            tenant: s.tenant.clone(),
            business: s.business.clone(),
            mode: s.mode,
            session: s.id.clone(),
            token,
            amount,
            sources: parts,
            network,
            address,
            claim_networks,
            reason,
            status,
            failure_reason: None,
            attempt: 0,
            payment: None,
            tx_hash: None,
            last_error: None,
            claim_expires_at,
            due_at: Some(claim_expires_at.unwrap_or(now)),
            created_at: now,
            updated_at: now,
            claimed_at: None,
            completed_at: None,
        };
        // Spending policies (issue #51), before anything is reserved: a live refund is
        // money leaving the tenant's custody. A claim link's destination is not known
        // yet (`None`).
        let mut policy_puts = Vec::new();
        if let Some(policies) = &self.policies
            && s.mode == Mode::Live
        {
            let spend = stablecoin_core::kernel::ProductSpend {
                tenant: s.tenant.clone(),
                operation: "checkout.refund",
                subject_id: refund.id.clone(),
                // The network paid, or a claim link's first (a policy scoped to a rail
                // governs what leaves on it).
                rail: self
                    .network_for(
                        refund
                            .network
                            .as_deref()
                            .or(refund.claim_networks.first().map(String::as_str))
                            .unwrap_or(""),
                        token,
                    )?
                    .id(),
                token,
                amount,
                destination: refund.address.clone(),
            };
            policy_puts = policies.admit_product_spend(&spend).await?;
        }
        let reserved = s.refunded.get(&token).copied().unwrap_or_default();
        s.refunded.insert(token, reserved.plus(&parts)?);
        assert_refunds_within_received(&s);
        s.updated_at = now;
        let mut batch = Batch {
            puts: vec![refund.insert()?, s.update(version)?],
            ..Default::default()
        };
        batch.puts.extend(policy_puts);
        reservation_moves(&refund, false, &mut batch);
        batch.outbox.push(events::refund_event(
            self.new_id("evt"),
            &s,
            &refund,
            events::REFUND_CREATED,
            now,
        ));
        Ok((refund, batch))
    }

    /// The configured rail named `network` that carries `token`.
    fn network_for(
        &self,
        network: &str,
        token: Token,
    ) -> CheckoutResult<std::sync::Arc<dyn stablecoin_core::ports::Rail>> {
        self.kernel
            .rails()
            .find(|r| r.id().name() == network && r.tokens().contains(&token))
            .cloned()
            .ok_or_else(|| CheckoutError::UnsupportedNetwork {
                network: network.chars().take(32).collect(),
            })
    }

    /// The networks a claim may choose: the session's networks that carry `token`, or
    /// the one the business named (which must be one of them).
    fn claim_networks(
        &self,
        s: &Session,
        token: Token,
        named: Option<&str>,
    ) -> CheckoutResult<Vec<String>> {
        let mut nets: Vec<String> = Vec::new();
        for o in &s.options {
            if !nets.contains(&o.network)
                && named.is_none_or(|n| n == o.network)
                && self.network_for(&o.network, token).is_ok()
            {
                nets.push(o.network.clone());
            }
        }
        if nets.is_empty() {
            return Err(CheckoutError::UnsupportedNetwork {
                network: named.unwrap_or("none").chars().take(32).collect(),
            });
        }
        Ok(nets)
    }

    /// **The one check of a refund's destination**, for an address the business gives
    /// and one the payer claims with: the address form every send out of the service's
    /// custody has (`kernel::destination`), and never one of the service's own
    /// addresses (the session's deposit address, the treasury). Sanctions screening of
    /// the destination hooks in here.
    pub(crate) async fn check_refund_destination(
        &self,
        s: &Session,
        network: &str,
        address: &str,
    ) -> CheckoutResult<String> {
        use stablecoin_core::kernel::inbound::canonical_address;
        let address = address.trim();
        stablecoin_core::kernel::destination::check_address_form(network, address).map_err(
            |reason| CheckoutError::InvalidParameter {
                field: "address",
                reason,
            },
        )?;
        let rail = self
            .kernel
            .rails()
            .find(|r| r.id().name() == network)
            .cloned()
            .ok_or_else(|| CheckoutError::UnsupportedNetwork {
                network: network.chars().take(32).collect(),
            })?;
        let treasury = rail
            .address_for(&KeyPurpose::Treasury)
            .await
            .map_err(crate::error::rail_err)?;
        let canonical = canonical_address(network, address);
        let own = s
            .options
            .iter()
            .filter(|o| o.network == network)
            .map(|o| o.address.as_str())
            .chain([treasury.0.as_str()])
            .any(|own| canonical_address(network, own) == canonical);
        if own {
            return Err(CheckoutError::InvalidParameter {
                field: "address",
                reason: "must not be an address of this service".into(),
            });
        }
        // Sanctions screening, the rule of every send out of custody (issue #51): a
        // listed destination is refused and audited before anything is reserved.
        self.kernel
            .screen_addresses(
                &s.tenant.0,
                "checkout.refund",
                &s.id,
                rail.id(),
                &[&ChainAddress(address.to_string())],
            )
            .await?;
        Ok(address.to_string())
    }

    /// `GET /api/v1/checkout/sessions/{id}/refunds`: the session's refunds, newest first,
    /// and what it can still refund per token.
    pub async fn list_refunds(
        &self,
        auth: &AuthContext,
        session_id: &str,
    ) -> CheckoutResult<RefundList> {
        let scope = Self::scope(auth)?;
        let s = self.load_scoped(&scope, session_id).await?.record;
        let refunds = self.refunds_of(&s).await?;
        let deposits = self.deposits_of(&s).await?;
        let refundable = refundable_by_token(&s, &deposits)
            .into_iter()
            .filter(|(_, a)| !a.total().is_zero())
            .map(|(token, a)| RefundableView {
                token: token.to_string(),
                amount: a.total().to_decimal_string(),
                from_refundable: a.owed_back.to_decimal_string(),
                from_settled: a.settled.to_decimal_string(),
            })
            .collect();
        Ok(RefundList {
            refunds: refunds.iter().map(RefundView::of).collect(),
            refundable,
        })
    }

    /// A session's refunds, newest first (the payment page shows them to the payer).
    pub async fn refunds_of(&self, s: &Session) -> CheckoutResult<Vec<Refund>> {
        let (rows, _) = self
            .kernel
            .ports()
            .store
            .list(&ListQuery {
                kind: Refund::KIND.into(),
                tenant: s.tenant.0.clone(),
                subkind: Some(s.id.clone()),
                status: None,
                limit: MAX_REFUNDS_READ,
                offset: 0,
            })
            .await
            .map_err(store_err)?;
        Ok(rows
            .iter()
            .map(Refund::from_stored)
            .collect::<Result<Vec<_>, _>>()?)
    }

    pub(crate) async fn load_refund(&self, id: &str) -> CheckoutResult<Option<Versioned<Refund>>> {
        if !is_refund_id(id) {
            return Ok(None);
        }
        Ok(get_record::<Refund>(&*self.kernel.ports().store, id).await?)
    }

    /// `GET /api/v1/checkout/refunds/{id}`: only for the business and mode that own it
    /// (anything else is `NOT_FOUND`, as a refund that does not exist).
    pub async fn get_refund(&self, auth: &AuthContext, id: &str) -> CheckoutResult<RefundView> {
        let scope = Self::scope(auth)?;
        match self.load_refund(id).await? {
            Some(v)
                if v.record.tenant == scope.tenant
                    && v.record.business == scope.business
                    && v.record.mode == scope.mode =>
            {
                Ok(RefundView::of(&v.record))
            }
            _ => Err(CheckoutError::NotFound {
                kind: "refund",
                id: id.chars().take(64).collect(),
            }),
        }
    }

    /// The payer's read of a refund by its unguessable id (the claim page); `None` for
    /// an unknown id.
    pub async fn public_refund(&self, id: &str) -> CheckoutResult<Option<RefundClaimView>> {
        let Some(v) = self.load_refund(id).await? else {
            return Ok(None);
        };
        let Some(s) = self.load(&v.record.session).await? else {
            return Ok(None);
        };
        let name = self.business_name(&s.record).await?;
        Ok(Some(RefundClaimView::of(
            &v.record,
            name,
            &s.record.reference,
        )))
    }

    /// The payer claims a refund on its page with an address on one of its networks,
    /// once: the refund is then due to be sent. A second claim, or one after the link
    /// expired, is `INVALID_STATE`.
    pub async fn claim_refund(
        &self,
        id: &str,
        network: &str,
        address: &str,
    ) -> CheckoutResult<RefundClaimView> {
        for _ in 0..MAX_RETRIES {
            let Some(Versioned {
                record: mut r,
                version,
            }) = self.load_refund(id).await?
            else {
                return Err(CheckoutError::NotFound {
                    kind: "refund",
                    id: id.chars().take(64).collect(),
                });
            };
            let now = self.now();
            let status = transition(r.status, RefundEvent::Claim)?;
            if r.claim_expires_at.is_some_and(|e| now >= e) {
                return Err(CheckoutError::InvalidState {
                    status: RefundStatus::Expired.wire().into(),
                });
            }
            let network = network.trim();
            if !r.claim_networks.iter().any(|n| n == network) {
                return Err(CheckoutError::UnsupportedNetwork {
                    network: network.chars().take(32).collect(),
                });
            }
            let Some(s) = self.load(&r.session).await? else {
                return Err(CheckoutError::NotFound {
                    kind: "refund",
                    id: id.chars().take(64).collect(),
                });
            };
            let address = self
                .check_refund_destination(&s.record, network, address)
                .await?;
            r.status = status;
            r.network = Some(network.to_string());
            r.address = Some(address);
            r.claimed_at = Some(now);
            r.updated_at = now;
            r.due_at = Some(now);
            let batch = Batch {
                puts: vec![r.update(version)?],
                outbox: vec![events::refund_event(
                    self.new_id("evt"),
                    &s.record,
                    &r,
                    events::REFUND_CLAIMED,
                    now,
                )],
                ..Default::default()
            };
            match self.commit(batch).await {
                Ok(()) => {
                    let name = self.business_name(&s.record).await?;
                    return Ok(RefundClaimView::of(&r, name, &s.record.reference));
                }
                Err(CheckoutError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CheckoutError::Conflict {
            what: format!("refund {}", id.chars().take(64).collect::<String>()),
        })
    }

    /// Returns a refund's money to where it came from, in one commit with its final
    /// state (`Expire` or `GiveUp`) and the session's released reservation.
    pub(crate) async fn return_refund(
        &self,
        mut r: Refund,
        version: u64,
        event: RefundEvent,
        failure_reason: Option<String>,
    ) -> CheckoutResult<()> {
        let status = transition(r.status, event)?;
        for _ in 0..MAX_RETRIES {
            let Some(Versioned {
                record: mut s,
                version: s_version,
            }) = self.load(&r.session).await?
            else {
                return Err(CheckoutError::NotFound {
                    kind: "session",
                    id: r.session.clone(),
                });
            };
            let now = self.now();
            let reserved = s.refunded.get(&r.token).copied().unwrap_or_default();
            s.refunded.insert(r.token, reserved.minus(&r.sources));
            s.updated_at = now;
            r.status = status;
            r.failure_reason = failure_reason.clone();
            r.due_at = None;
            r.updated_at = now;
            let mut batch = Batch {
                puts: vec![r.update(version)?, s.update(s_version)?],
                background: true,
                ..Default::default()
            };
            reservation_moves(&r, true, &mut batch);
            let name = if status == RefundStatus::Expired {
                events::REFUND_EXPIRED
            } else {
                events::REFUND_FAILED
            };
            batch
                .outbox
                .push(events::refund_event(self.new_id("evt"), &s, &r, name, now));
            match self.commit(batch).await {
                Ok(()) => return Ok(()),
                // The session moved (a deposit, another refund): read it again. A
                // conflict on the refund itself is another worker's: it returns the
                // same error on the next round, when the refund is re-read.
                Err(CheckoutError::Conflict { what }) if what.contains(Session::KIND) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(CheckoutError::Conflict {
            what: format!("session {}", r.session),
        })
    }
}

/// Asserts (debug builds, tests, the `sim` profile) that what a session's refunds
/// reserve never passes what it received.
fn assert_refunds_within_received(s: &Session) {
    let reserved: u128 = s
        .refunded
        .values()
        .map(|r| u128::from(r.total().get()))
        .sum();
    debug_assert!(
        reserved <= u128::from(s.received.get()),
        "session {} reserves {reserved} for refunds of {:?} received",
        s.id,
        s.received
    );
}
