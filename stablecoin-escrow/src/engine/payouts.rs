//! Payouts: the record and pending ledger hold of a payout from the deal address to a
//! party's linked wallet (deal payouts and recoveries alike), and the readiness every
//! payout needs, being a sponsored send.

use super::EscrowEngine;
use crate::error::{EscrowError, EscrowResult};
use crate::model::*;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{
    KeyPurpose, LedgerAccount, LedgerTransfer, LegRole, PaymentLeg, Phase as LedgerPhase,
    RailPayment, ReadinessStatus,
};

impl EscrowEngine {
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
        assert_within_custody(amount, custody_of(deal, kind, token));
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
            // Escrow payouts carry no deadline (yet): its worker decides on its own grace.
            valid_until: None,
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
}

/// What the deal's record says the payout's source account holds: the applied deposits
/// for a deal payout (from `held`), the recoverable balance for a recovery (from its
/// bucket, before it is taken).
fn custody_of(deal: &Deal, kind: PayoutKind, token: Token) -> Micros {
    match kind {
        PayoutKind::Deal(_) if token == deal.token => deal.applied,
        PayoutKind::Deal(_) => Micros::ZERO,
        PayoutKind::Recovery(k) => deal.recoverable_of(k, token),
    }
}

/// Asserts (debug builds, tests, the `sim` profile) that a payout never exceeds what
/// custody holds for it. The release build relies on the ledger: the payout's pending
/// hold on a non-negative account is refused (`InsufficientFunds`) before anything is
/// sent, so this guards the callers' arithmetic, not hostile input.
fn assert_within_custody(amount: Micros, custody: Micros) {
    debug_assert!(
        amount <= custody,
        "payout of {amount:?} exceeds the {custody:?} custody holds"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payout_up_to_custody_passes_its_check() {
        assert_within_custody(Micros::new(5), Micros::new(5));
        assert_within_custody(Micros::ZERO, Micros::ZERO);
    }

    /// The check is live in debug builds: a payout beyond custody panics.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "exceeds the")]
    fn a_payout_beyond_custody_is_caught() {
        assert_within_custody(Micros::new(6), Micros::new(5));
    }
}
