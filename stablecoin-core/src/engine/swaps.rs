//! Swaps: a wallet trades USDC for USDT (or back) at a [`SwapVenue`] of its rail (spec
//! 3.2, 6.1, `GET /v1/swaps/{id}`).
//!
//! `QUEUED -> SUBMITTING -> SUBMITTED -> SETTLED`, or `FAILED` with `error_reason`; the
//! same machine, worker and unknown-outcome rules as a transfer (`worker.rs`), with the
//! venue in the rail's place: the order is recorded SUBMITTING before the venue executes
//! it, an unknown outcome is resolved only by the venue's status of the same order id,
//! and a `NotFound` fails it only after the order's deadline.
//!
//! The quote is taken when the swap is accepted: `min_amount_out` is the quote less the
//! slippage the caller allows (`max_slippage_bps`, rounded down to the micro-unit), and a
//! venue trades nothing for less (Uniswap's `amountOutMin`).
//!
//! Ledger (`swap_venue:<venue>:<TOKEN>` is the venue's side, which may go negative):
//! acceptance holds `wallet:<w>:<IN> -> swap_venue:<v>:<IN>` (`amount_in`); settlement
//! posts it and credits what the chain says the wallet received,
//! `swap_venue:<v>:<OUT> -> wallet:<w>:<OUT>`; a failure voids the hold.

use super::{Engine, Operation, OperationView};
use crate::domain::events::DomainEvent;
use crate::domain::money::{Micros, Token};
use crate::domain::phone::Phone;
use crate::domain::state::OpKind;
use crate::domain::time::Timestamp;
use crate::error::{CoreError, CoreResult};
use crate::ports::ledger::{LedgerTransfer, Phase};
use crate::ports::rail::{Rail, RailError, RailId, RailPayment, Submission, SubmissionStatus};
use crate::ports::record::Record;
use crate::ports::signer::KeyPurpose;
use crate::ports::store::{Batch, OutboxEvent};
use crate::ports::swap::{SwapOrder, SwapVenue};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The most slippage a swap may allow: 10%. Above it a "swap" is a gift to whoever
/// moves the pool first.
pub const MAX_SLIPPAGE_BPS: u32 = 1_000;

/// The slippage allowed when the request names none: 0.5%.
pub const DEFAULT_SLIPPAGE_BPS: u32 = 50;

/// `POST /v1/swaps`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapRequest {
    /// The trading wallet's phone; the caller must be a member of that wallet.
    pub phone_number: Phone,
    /// The token given.
    pub token_in: Token,
    /// The token received; not `token_in`.
    pub token_out: Token,
    /// Micro-units of `token_in` given; above zero.
    pub amount_in: Micros,
    /// The most the outcome may fall below the quote, in basis points (0 to
    /// [`MAX_SLIPPAGE_BPS`]).
    pub max_slippage_bps: u32,
}

/// The trade of a swap operation (its `token` and `amount` are what is given).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapLeg {
    /// The token received.
    pub token_out: Token,
    /// The venue's name ([`SwapVenue::name`]).
    pub venue: String,
    /// What the venue quoted at acceptance.
    pub quoted_amount_out: Micros,
    /// The least the wallet accepts.
    pub min_amount_out: Micros,
    /// The slippage allowed, in basis points.
    pub max_slippage_bps: u32,
    /// What the wallet received, read from the chain at settlement.
    #[serde(default)]
    pub amount_out: Option<Micros>,
}

/// `quoted` less `bps` basis points, rounded down (never above what the caller allowed).
pub fn min_amount_out(quoted: Micros, bps: u32) -> Micros {
    let kept = u128::from(10_000 - bps.min(10_000));
    Micros((u128::from(quoted.0) * kept / 10_000) as u64)
}

/// `swap_venue:<venue>:<TOKEN>`, named with the other ledger accounts
/// ([`crate::ports::accounts`]); kept under this name for existing callers.
pub use crate::ports::accounts::swap_venue as venue_account;

impl Engine {
    /// The engine with `venue` trading for its rail's wallets (a later venue of the same
    /// rail replaces an earlier one).
    pub fn with_swap_venue(mut self, venue: Arc<dyn SwapVenue>) -> Self {
        let mut venues = (*self.swap_venues).clone();
        venues.insert(venue.rail(), venue);
        self.swap_venues = Arc::new(venues);
        self
    }

    /// The venue of `rail`; SWAPS_UNAVAILABLE when none is configured.
    pub fn swap_venue(&self, rail: RailId) -> CoreResult<&Arc<dyn SwapVenue>> {
        self.swap_venues
            .get(&rail)
            .ok_or_else(|| CoreError::SwapsUnavailable { rail: rail.name() })
    }

    /// Accepts a swap on the wallet's primary EVM rail: member only, the quote taken now,
    /// `amount_in` held from the wallet at once (INSUFFICIENT_FUNDS otherwise).
    pub async fn swap(
        &self,
        tenant: &crate::domain::ids::TenantId,
        req: &SwapRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<OperationView> {
        self.swap_on(tenant, None, req, idempotency_key).await
    }

    /// [`Engine::swap`] on the EVM chain `network` names (the primary one for `None`),
    /// at that chain's venue.
    pub async fn swap_on(
        &self,
        tenant: &crate::domain::ids::TenantId,
        network: Option<RailId>,
        req: &SwapRequest,
        idempotency_key: Option<&str>,
    ) -> CoreResult<OperationView> {
        self.swap_gated(tenant, network, req, idempotency_key, None)
            .await
    }

    /// [`Engine::swap_on`], or the carrying out of a pending policy approval
    /// (`approving`, see `policy_gate.rs`). A lost race on a policy's window usage
    /// (another request of its scope admitted first) decides again, once.
    pub(crate) async fn swap_gated(
        &self,
        tenant: &crate::domain::ids::TenantId,
        network: Option<RailId>,
        req: &SwapRequest,
        idempotency_key: Option<&str>,
        approving: Option<&super::policy_gate::Approving>,
    ) -> CoreResult<OperationView> {
        let attempt = || self.swap_attempt(tenant, network, req, idempotency_key, approving);
        match attempt().await {
            Err(e) if super::policy_gate::lost_policy_race(&e) => attempt().await,
            other => other,
        }
    }

    async fn swap_attempt(
        &self,
        tenant: &crate::domain::ids::TenantId,
        network: Option<RailId>,
        req: &SwapRequest,
        idempotency_key: Option<&str>,
        approving: Option<&super::policy_gate::Approving>,
    ) -> CoreResult<OperationView> {
        if req.amount_in.is_zero() {
            return Err(CoreError::InvalidAmount {
                input: "0".into(),
                reason: "amount_in must be greater than zero".into(),
            });
        }
        if req.token_in == req.token_out {
            return Err(CoreError::InvalidParameter {
                field: "token_out",
                reason: "must differ from token_in".into(),
            });
        }
        if req.max_slippage_bps > MAX_SLIPPAGE_BPS {
            return Err(CoreError::InvalidParameter {
                field: "max_slippage_bps",
                reason: format!("must be 0 to {MAX_SLIPPAGE_BPS}"),
            });
        }
        let rail = self.evm_rail_for(network)?.clone();
        super::admission::check_token(&*rail, req.token_in)?;
        super::admission::check_token(&*rail, req.token_out)?;
        let venue = self.swap_venue(rail.id())?.clone();
        let scope = self.scope_on("swap", rail.id());
        self.idempotent(tenant, idempotency_key, &scope, req, || async {
            let name = rail.id().name();
            let wallet = self.require_wallet(&req.phone_number).await?.record;
            wallet.require_member(tenant)?;
            self.require_ready(rail.id()).await?;
            // Sponsorship budget (issue #51 item 4), before anything is held.
            self.sponsor_gate(tenant, rail.id()).await?;
            let from_address =
                wallet
                    .address(&name)
                    .cloned()
                    .ok_or_else(|| CoreError::NotFound {
                        kind: "wallet address",
                        id: name.clone(),
                    })?;
            // The wallet first: a swap it cannot pay is refused as such, whatever the
            // venue would say (the hold below is what enforces it).
            let src = self.wallet_account(&wallet.id, rail.id(), req.token_in);
            let available = self.available(&src.id).await?;
            if available < req.amount_in {
                return Err(CoreError::InsufficientFunds {
                    available: available.to_decimal_string(),
                    needed: req.amount_in.to_decimal_string(),
                });
            }
            let quoted = venue
                .quote(req.token_in, req.token_out, req.amount_in)
                .await
                .map_err(quote_err)?;
            let min_out = min_amount_out(quoted, req.max_slippage_bps);
            if min_out.is_zero() {
                return Err(CoreError::InvalidAmount {
                    input: req.amount_in.to_decimal_string(),
                    reason: "too small: it would buy nothing".into(),
                });
            }
            let id = self.new_id(OpKind::Swap.id_prefix());
            // Sanctions screening of where the wallet's tokens go (the venue's router or
            // the treasury), before anything is held (issue #51).
            let counterparty = venue.counterparty().await;
            if let Some(to) = &counterparty {
                self.kernel
                    .screen_addresses(&tenant.0, "swap", &id, rail.id(), &[to])
                    .await?;
            }
            // Spending policies (issue #51): the amount given, and where it goes (the
            // venue's counterparty), before anything is held.
            let subject = super::policy_gate::Subject {
                operation: "swap",
                wallet: &wallet.id,
                rail: rail.id(),
                token: req.token_in,
                amount: req.amount_in,
                destination: counterparty
                    .as_ref()
                    .map(|a| crate::domain::policy::chain_key(&a.0)),
            };
            let pending = || super::policy_gate::PendingRequest::Swap {
                rail: rail.id(),
                request: req.clone(),
            };
            let policy_puts = self
                .policy_gate(tenant, &subject, &id, approving, pending, idempotency_key)
                .await?;
            let payment = RailPayment {
                id: id.clone(),
                from: KeyPurpose::Wallet(wallet.id.0.clone()),
                from_address,
                token: req.token_in,
                legs: vec![],
                valid_until: None,
            };
            let mut op = self.new_operation(
                OpKind::Swap,
                tenant,
                rail.id(),
                req.token_in,
                req.amount_in,
                payment,
            );
            let dst = venue_account(venue.name(), req.token_in);
            op.holds = vec![LedgerTransfer {
                id: format!("{id}:in"),
                debit: src.id.clone(),
                credit: dst.id.clone(),
                amount: req.amount_in,
                phase: Phase::Pending,
            }];
            op.from_wallet = Some(wallet.id.clone());
            op.to_wallet = Some(wallet.id.clone());
            op.from_phone = Some(wallet.phone.clone());
            op.swap = Some(SwapLeg {
                token_out: req.token_out,
                venue: venue.name().to_string(),
                quoted_amount_out: quoted,
                min_amount_out: min_out,
                max_slippage_bps: req.max_slippage_bps,
                amount_out: None,
            });
            let mut puts = vec![op.insert()?];
            puts.extend(policy_puts);
            let batch = Batch {
                puts,
                accounts: vec![src, dst],
                ledger: op.holds.clone(),
                ..Default::default()
            };
            Ok((batch, op.view()))
        })
        .await
    }

    /// The order a swap operation executes: fixed at acceptance, its deadline that of
    /// the operation's payment (set at the first claim).
    fn swap_order(op: &Operation) -> Result<SwapOrder, RailError> {
        let leg = op.swap.as_ref().ok_or_else(|| RailError::Rejected {
            reason: "a swap operation without its trade".into(),
        })?;
        Ok(SwapOrder {
            id: op.payment.id.clone(),
            from: op.payment.from.clone(),
            from_address: op.payment.from_address.clone(),
            token_in: op.token,
            token_out: leg.token_out,
            amount_in: op.amount,
            quoted_amount_out: leg.quoted_amount_out,
            min_amount_out: leg.min_amount_out,
            valid_until: op.payment.valid_until,
        })
    }

    /// Sends `op` on its way: a swap to its venue, anything else to its rail.
    pub(crate) async fn submit_op(
        &self,
        rail: &Arc<dyn Rail>,
        op: &Operation,
    ) -> Result<Submission, RailError> {
        if op.kind != OpKind::Swap {
            return rail.submit(&op.payment).await;
        }
        let venue = self.venue_of(op)?;
        venue.execute(&Self::swap_order(op)?).await
    }

    /// Where `op` stands: a swap asks its venue (and keeps the amount received once
    /// confirmed), anything else its rail.
    pub(crate) async fn op_status(
        &self,
        rail: &Arc<dyn Rail>,
        op: &mut Operation,
    ) -> Result<SubmissionStatus, RailError> {
        if op.kind != OpKind::Swap {
            return rail.status(&op.payment.id).await;
        }
        let venue = self.venue_of(op)?;
        let s = venue.status(&Self::swap_order(op)?).await?;
        if let SubmissionStatus::Confirmed { .. } = &s.status {
            let Some(out) = s.amount_out else {
                // Confirmed without a reading of what came out: ask again rather than
                // credit a guess.
                return Err(RailError::Unavailable {
                    reason: "the venue confirmed the swap without the amount received".into(),
                });
            };
            if let Some(leg) = op.swap.as_mut() {
                leg.amount_out = Some(out);
            }
        }
        Ok(s.status)
    }

    fn venue_of(&self, op: &Operation) -> Result<&Arc<dyn SwapVenue>, RailError> {
        let want = op.swap.as_ref().map(|l| l.venue.as_str()).unwrap_or("");
        match self.swap_venues.get(&op.rail) {
            Some(v) if v.name() == want => Ok(v),
            _ => Err(RailError::Unavailable {
                reason: format!("swap venue {want:?} is not configured on {}", op.rail),
            }),
        }
    }

    /// What a settled swap adds to its settlement commit: the credit of what the wallet
    /// received, and `swap.settled`.
    pub(crate) fn swap_settlement(
        &self,
        op: &Operation,
        now: Timestamp,
        batch: &mut Batch,
    ) -> CoreResult<()> {
        let (Some(leg), Some(wallet)) = (op.swap.as_ref(), op.to_wallet.as_ref()) else {
            return Ok(());
        };
        let out = leg.amount_out.unwrap_or(Micros::ZERO);
        if !out.is_zero() {
            let from = venue_account(&leg.venue, leg.token_out);
            let to = self.wallet_account(wallet, op.rail, leg.token_out);
            batch.ledger.push(LedgerTransfer {
                id: format!("{}:out", op.id),
                debit: from.id.clone(),
                credit: to.id.clone(),
                amount: out,
                phase: Phase::Single,
            });
            batch.accounts.extend([from, to]);
        }
        batch.outbox.push(self.event(
            &op.tenant,
            DomainEvent::SwapSettled {
                swap_id: op.id.0.clone(),
                token_in: op.token,
                token_out: leg.token_out,
                amount_in: op.amount,
                tx_hash: op.tx_hash.clone().unwrap_or_default(),
                updated_at: now,
            },
        )?);
        Ok(())
    }

    /// `swap.failed` of a failed swap.
    pub(crate) fn swap_failure_event(
        &self,
        op: &Operation,
        reason: &str,
        now: Timestamp,
    ) -> CoreResult<Option<OutboxEvent>> {
        let Some(leg) = op.swap.as_ref() else {
            return Ok(None);
        };
        Ok(Some(self.event(
            &op.tenant,
            DomainEvent::SwapFailed {
                swap_id: op.id.0.clone(),
                token_in: op.token,
                token_out: leg.token_out,
                amount_in: op.amount,
                reason: reason.to_string(),
                updated_at: now,
            },
        )?))
    }
}

/// A venue's refusal to quote is INSUFFICIENT_LIQUIDITY (no liquidity, a pair it does
/// not trade: 422); a venue that cannot answer now is a dependency failure (503).
fn quote_err(e: RailError) -> CoreError {
    match e {
        RailError::Rejected { reason } => CoreError::InsufficientLiquidity { reason },
        other => super::rail_err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_amount_out_rounds_down_and_never_exceeds_the_quote() {
        assert_eq!(min_amount_out(Micros(1_000_000), 50), Micros(995_000));
        assert_eq!(min_amount_out(Micros(1_000_001), 50), Micros(995_000));
        assert_eq!(min_amount_out(Micros(1_000_000), 0), Micros(1_000_000));
        assert_eq!(min_amount_out(Micros(999), 1_000), Micros(899));
        for q in [1u64, 7, 999_999, 123_456_789, u64::MAX] {
            for bps in [0, 1, 50, 999, MAX_SLIPPAGE_BPS] {
                let min = min_amount_out(Micros(q), bps);
                assert!(min.0 <= q);
                // Exactly floor(q * (10000 - bps) / 10000), computed wide.
                assert_eq!(
                    u128::from(min.0),
                    u128::from(q) * u128::from(10_000 - bps) / 10_000
                );
            }
        }
        assert_eq!(min_amount_out(Micros(5), 20_000), Micros::ZERO);
    }
}
