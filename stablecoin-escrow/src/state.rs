//! The escrow state machine and the deposit rule: pure, synchronous, deterministic.
//!
//! The machine's state is a [`Phase`]: the public [`EscrowState`] plus the payout that is
//! claimed and not yet settled, if any (the view's `payout_pending`). One function,
//! [`transition`], decides every move; the engine asks it before every write, and a
//! refusal is the 409-class error the API returns (`INVALID_STATE`, or
//! `PAYOUT_IN_FLIGHT` while a payout is claimed).
//!
//! | from | action | to | who |
//! |---|---|---|---|
//! | CREATED | `Fund` | FUNDED | the deposit scanner, when confirmed deposits reach the amount |
//! | CREATED | `Expire` | EXPIRED | the worker, at `funding_expires_at` |
//! | CREATED | `Cancel` | CANCELLED | the tenant |
//! | FUNDED | `Release` / `AutoRelease` | FUNDED, payout RELEASE pending | the tenant / the worker at `auto_release_at` |
//! | FUNDED | `Refund` | FUNDED, payout REFUND pending | the tenant |
//! | FUNDED | `Dispute` | DISPUTED | the tenant (`reason` required) |
//! | DISPUTED | `ResolveRelease` / `ResolveRefund` | DISPUTED, payout pending | service staff (`resolution_note` required) |
//! | FUNDED or DISPUTED, payout RELEASE pending | `PayoutConfirmed` | RELEASED | the payout worker |
//! | FUNDED or DISPUTED, payout REFUND pending | `PayoutConfirmed` | REFUNDED | the payout worker |
//! | FUNDED or DISPUTED, payout pending | `PayoutFailed` | same state, no payout pending | the payout worker |
//! | FUNDED or DISPUTED, payout pending | anything else | refused: `PAYOUT_IN_FLIGHT` | |
//! | any other pair | | refused: `INVALID_STATE` | |
//!
//! RELEASED, REFUNDED, EXPIRED and CANCELLED are terminal: no action leaves them.

use serde::{Deserialize, Serialize};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use std::fmt;

/// The public state of an escrow (spec 2.1, 3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EscrowState {
    /// Admitted; waiting for confirmed deposits to reach the amount before
    /// `funding_expires_at`.
    Created,
    /// The amount is held; the tenant may release, refund or dispute (a payout may be
    /// pending).
    Funded,
    /// The tenant disputed; only a staff resolution leaves it (a payout may be pending).
    Disputed,
    /// Terminal: the amount was paid to the seller and confirmed on chain.
    Released,
    /// Terminal: the amount was paid back to the buyer and confirmed on chain.
    Refunded,
    /// Terminal: the funding window closed unpaid; counted deposits are recoverable.
    Expired,
    /// Terminal: the tenant cancelled the unfunded escrow; counted deposits are recoverable.
    Cancelled,
}

impl EscrowState {
    /// Every state, in lifecycle order.
    pub const ALL: [EscrowState; 7] = [
        EscrowState::Created,
        EscrowState::Funded,
        EscrowState::Disputed,
        EscrowState::Released,
        EscrowState::Refunded,
        EscrowState::Expired,
        EscrowState::Cancelled,
    ];

    /// Wire name, identical to the serde representation.
    pub fn as_str(self) -> &'static str {
        match self {
            EscrowState::Created => "CREATED",
            EscrowState::Funded => "FUNDED",
            EscrowState::Disputed => "DISPUTED",
            EscrowState::Released => "RELEASED",
            EscrowState::Refunded => "REFUNDED",
            EscrowState::Expired => "EXPIRED",
            EscrowState::Cancelled => "CANCELLED",
        }
    }

    /// The state with this wire name (exact, upper case); `None` for any other string.
    pub fn parse(s: &str) -> Option<EscrowState> {
        EscrowState::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// RELEASED, REFUNDED, EXPIRED or CANCELLED: no action leaves it.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            EscrowState::Released
                | EscrowState::Refunded
                | EscrowState::Expired
                | EscrowState::Cancelled
        )
    }
}

impl fmt::Display for EscrowState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a claimed deal payout goes: the full amount to the seller (release) or back to
/// the buyer (refund), each to the party's linked wallet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PayoutPurpose {
    /// The amount goes to the seller.
    Release,
    /// The amount goes back to the buyer.
    Refund,
}

impl PayoutPurpose {
    /// Wire name (`RELEASE`, `REFUND`), identical to the serde representation.
    pub fn as_str(self) -> &'static str {
        match self {
            PayoutPurpose::Release => "RELEASE",
            PayoutPurpose::Refund => "REFUND",
        }
    }
}

/// The machine's state: the public state and the claimed, unsettled payout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Phase {
    /// The public state.
    pub state: EscrowState,
    /// `Some` while a payout is claimed and not yet confirmed (`payout_pending=true`).
    pub payout: Option<PayoutPurpose>,
}

impl Phase {
    /// A phase with no payout pending.
    pub const fn new(state: EscrowState) -> Phase {
        Phase {
            state,
            payout: None,
        }
    }

    /// A phase with a claimed, unsettled payout of `purpose` (meaningful in FUNDED and
    /// DISPUTED only).
    pub const fn pending(state: EscrowState, purpose: PayoutPurpose) -> Phase {
        Phase {
            state,
            payout: Some(purpose),
        }
    }

    /// Every phase the machine can be in (a payout is pending only in FUNDED or DISPUTED).
    pub const ALL: [Phase; 11] = [
        Phase::new(EscrowState::Created),
        Phase::new(EscrowState::Funded),
        Phase::pending(EscrowState::Funded, PayoutPurpose::Release),
        Phase::pending(EscrowState::Funded, PayoutPurpose::Refund),
        Phase::new(EscrowState::Disputed),
        Phase::pending(EscrowState::Disputed, PayoutPurpose::Release),
        Phase::pending(EscrowState::Disputed, PayoutPurpose::Refund),
        Phase::new(EscrowState::Released),
        Phase::new(EscrowState::Refunded),
        Phase::new(EscrowState::Expired),
        Phase::new(EscrowState::Cancelled),
    ];

    /// True while a payout is claimed and unsettled (the view's `payout_pending`).
    pub fn payout_pending(&self) -> bool {
        self.payout.is_some()
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.payout {
            None => f.write_str(self.state.as_str()),
            Some(p) => write!(f, "{} ({} pending)", self.state, p.as_str()),
        }
    }
}

/// Everything that can happen to an escrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Action {
    /// Confirmed deposits reached the amount.
    Fund,
    /// The funding window closed unpaid.
    Expire,
    /// The tenant cancels an unfunded escrow.
    Cancel,
    /// The tenant releases the amount to the seller.
    Release,
    /// The tenant refunds the amount to the buyer.
    Refund,
    /// The inspection window ended: release to the seller without further action.
    AutoRelease,
    /// The tenant raises a dispute.
    Dispute,
    /// Staff resolve a dispute for the seller.
    ResolveRelease,
    /// Staff resolve a dispute for the buyer.
    ResolveRefund,
    /// The claimed payout was confirmed on chain.
    PayoutConfirmed,
    /// The claimed payout failed; nothing moved.
    PayoutFailed,
}

impl Action {
    /// Every action, in the order of the module table.
    pub const ALL: [Action; 11] = [
        Action::Fund,
        Action::Expire,
        Action::Cancel,
        Action::Release,
        Action::Refund,
        Action::AutoRelease,
        Action::Dispute,
        Action::ResolveRelease,
        Action::ResolveRefund,
        Action::PayoutConfirmed,
        Action::PayoutFailed,
    ];

    /// Lower-case name used in errors (`INVALID_STATE`'s `action`) and, upper-cased, as a
    /// payout's `trigger` in `escrow.payout_pending`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Fund => "fund",
            Action::Expire => "expire",
            Action::Cancel => "cancel",
            Action::Release => "release",
            Action::Refund => "refund",
            Action::AutoRelease => "auto_release",
            Action::Dispute => "dispute",
            Action::ResolveRelease => "resolve_release",
            Action::ResolveRefund => "resolve_refund",
            Action::PayoutConfirmed => "payout_confirmed",
            Action::PayoutFailed => "payout_failed",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused action (both are 409-class).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransitionError {
    /// Not permitted from this state (`INVALID_STATE`).
    InvalidState {
        /// The phase the action was asked in.
        from: Phase,
        /// The refused action.
        action: Action,
    },
    /// A payout is claimed and unsettled (`PAYOUT_IN_FLIGHT`): repeat release, dispute
    /// after release, refund during release, cancel, ...
    PayoutInFlight {
        /// The phase the action was asked in (a payout is pending).
        from: Phase,
        /// The refused action.
        action: Action,
    },
}

impl TransitionError {
    /// The stable error code: `INVALID_STATE` or `PAYOUT_IN_FLIGHT`.
    pub fn code(&self) -> &'static str {
        match self {
            TransitionError::InvalidState { .. } => "INVALID_STATE",
            TransitionError::PayoutInFlight { .. } => "PAYOUT_IN_FLIGHT",
        }
    }
}

/// The one transition function of the escrow machine (see the module table).
pub fn transition(from: Phase, action: Action) -> Result<Phase, TransitionError> {
    use Action::*;
    use EscrowState::*;
    let to = match (from.state, from.payout, action) {
        (Created, None, Fund) => Phase::new(Funded),
        (Created, None, Expire) => Phase::new(Expired),
        (Created, None, Cancel) => Phase::new(Cancelled),
        (Funded, None, Release | AutoRelease) => Phase::pending(Funded, PayoutPurpose::Release),
        (Funded, None, Refund) => Phase::pending(Funded, PayoutPurpose::Refund),
        (Funded, None, Dispute) => Phase::new(Disputed),
        (Disputed, None, ResolveRelease) => Phase::pending(Disputed, PayoutPurpose::Release),
        (Disputed, None, ResolveRefund) => Phase::pending(Disputed, PayoutPurpose::Refund),
        (Funded | Disputed, Some(PayoutPurpose::Release), PayoutConfirmed) => Phase::new(Released),
        (Funded | Disputed, Some(PayoutPurpose::Refund), PayoutConfirmed) => Phase::new(Refunded),
        (s @ (Funded | Disputed), Some(_), PayoutFailed) => Phase::new(s),
        (Funded | Disputed, Some(_), _) => {
            return Err(TransitionError::PayoutInFlight { from, action });
        }
        _ => return Err(TransitionError::InvalidState { from, action }),
    };
    Ok(to)
}

/// What a recoverable balance came from; each kind is recovered separately (spec 1.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RecoveryKind {
    /// Deposits that counted toward an escrow that then expired or was cancelled unfunded.
    Partial,
    /// Money beyond the amount: the part of the funding deposit above it, and any deposit
    /// to a FUNDED or DISPUTED escrow.
    Excess,
    /// Deposits after the funding window closed or to a closed escrow.
    Late,
    /// Deposits of a token other than the escrow's (recorded, never counted).
    UnsupportedToken,
}

impl RecoveryKind {
    /// Every kind, each with its own ledger account per deal and token.
    pub const ALL: [RecoveryKind; 4] = [
        RecoveryKind::Partial,
        RecoveryKind::Excess,
        RecoveryKind::Late,
        RecoveryKind::UnsupportedToken,
    ];

    /// Wire name (`PARTIAL`, ...), identical to the serde representation.
    pub fn as_str(self) -> &'static str {
        match self {
            RecoveryKind::Partial => "PARTIAL",
            RecoveryKind::Excess => "EXCESS",
            RecoveryKind::Late => "LATE",
            RecoveryKind::UnsupportedToken => "UNSUPPORTED_TOKEN",
        }
    }

    /// The kind with this wire name (a recovery request's `kind`); `None` for any other
    /// string.
    pub fn parse(s: &str) -> Option<RecoveryKind> {
        RecoveryKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Name used in ledger account ids.
    pub fn slug(self) -> &'static str {
        match self {
            RecoveryKind::Partial => "partial",
            RecoveryKind::Excess => "excess",
            RecoveryKind::Late => "late",
            RecoveryKind::UnsupportedToken => "unsupported",
        }
    }
}

/// How a confirmed deposit was counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DepositKind {
    /// Counted toward the amount without reaching it; the escrow stays CREATED.
    Partial,
    /// Brought the counted total to the amount (any part above it is excess).
    Funding,
    /// The escrow was already FUNDED or DISPUTED: all of it is excess.
    Excess,
    /// After the funding window or to a closed escrow: all of it is late.
    Late,
    /// Another token: recorded and recoverable, never counted.
    UnsupportedToken,
}

impl DepositKind {
    /// Wire name (`PARTIAL`, `FUNDING`, ...), identical to the serde representation.
    pub fn as_str(self) -> &'static str {
        match self {
            DepositKind::Partial => "PARTIAL",
            DepositKind::Funding => "FUNDING",
            DepositKind::Excess => "EXCESS",
            DepositKind::Late => "LATE",
            DepositKind::UnsupportedToken => "UNSUPPORTED_TOKEN",
        }
    }
}

/// The decision for one confirmed deposit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DepositDecision {
    /// How the deposit counts.
    pub kind: DepositKind,
    /// Counted toward the amount (held for the deal).
    pub applied: Micros,
    /// Recoverable at once, and of which kind (`None` when nothing is).
    pub recoverable: Micros,
    /// The kind of the `recoverable` part (`None` when it is zero).
    pub recoverable_kind: Option<RecoveryKind>,
    /// The deposit completes the funding: apply [`Action::Fund`].
    pub funds: bool,
}

/// The funding rule. Deposits to a CREATED escrow recorded before `funding_expires_at`
/// count toward the amount in the order they are recorded; the one that brings the
/// counted total to the amount funds the escrow, and whatever it carries beyond the
/// amount is excess. Anything else is recoverable: excess for a FUNDED or DISPUTED
/// escrow, late after the window or for a closed escrow, unsupported for another token.
/// A deposit is "recorded" once confirmed at the rail's depth and seen by the scanner.
#[allow(clippy::too_many_arguments)]
pub fn classify_deposit(
    phase: Phase,
    deal_token: Token,
    deal_amount: Micros,
    applied_so_far: Micros,
    funding_expires_at: Timestamp,
    now: Timestamp,
    token: Token,
    amount: Micros,
) -> DepositDecision {
    let all = |kind: DepositKind, rk: RecoveryKind| DepositDecision {
        kind,
        applied: Micros::ZERO,
        recoverable: amount,
        recoverable_kind: Some(rk),
        funds: false,
    };
    if token != deal_token {
        return all(
            DepositKind::UnsupportedToken,
            RecoveryKind::UnsupportedToken,
        );
    }
    match phase.state {
        EscrowState::Created if now < funding_expires_at => {
            let missing = deal_amount
                .checked_sub(applied_so_far)
                .unwrap_or(Micros::ZERO);
            if amount < missing {
                DepositDecision {
                    kind: DepositKind::Partial,
                    applied: amount,
                    recoverable: Micros::ZERO,
                    recoverable_kind: None,
                    funds: false,
                }
            } else {
                let excess = amount.checked_sub(missing).unwrap_or(Micros::ZERO);
                DepositDecision {
                    kind: DepositKind::Funding,
                    applied: missing,
                    recoverable: excess,
                    recoverable_kind: (!excess.is_zero()).then_some(RecoveryKind::Excess),
                    funds: true,
                }
            }
        }
        EscrowState::Funded | EscrowState::Disputed => {
            all(DepositKind::Excess, RecoveryKind::Excess)
        }
        _ => all(DepositKind::Late, RecoveryKind::Late),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: u64) -> Micros {
        Micros(v)
    }

    #[test]
    fn deposit_rule() {
        let created = Phase::new(EscrowState::Created);
        let exp = Timestamp::from_secs(100);
        let early = Timestamp::from_secs(50);
        let t = Token::Usdt;
        // partial
        let d = classify_deposit(created, t, m(100), m(0), exp, early, t, m(40));
        assert_eq!(
            (d.kind, d.applied, d.recoverable, d.funds),
            (DepositKind::Partial, m(40), m(0), false)
        );
        // partials adding up exactly
        let d = classify_deposit(created, t, m(100), m(40), exp, early, t, m(60));
        assert_eq!(
            (d.kind, d.applied, d.recoverable, d.funds),
            (DepositKind::Funding, m(60), m(0), true)
        );
        assert!(d.recoverable_kind.is_none());
        // excess on the funding deposit
        let d = classify_deposit(created, t, m(100), m(40), exp, early, t, m(70));
        assert_eq!(
            (d.applied, d.recoverable, d.recoverable_kind),
            (m(60), m(10), Some(RecoveryKind::Excess))
        );
        // at or after expiry: late
        let d = classify_deposit(created, t, m(100), m(0), exp, exp, t, m(100));
        assert_eq!(
            (d.kind, d.recoverable, d.funds),
            (DepositKind::Late, m(100), false)
        );
        // funded / disputed: excess
        for s in [EscrowState::Funded, EscrowState::Disputed] {
            let d = classify_deposit(Phase::new(s), t, m(100), m(100), exp, early, t, m(5));
            assert_eq!(
                (d.kind, d.recoverable_kind),
                (DepositKind::Excess, Some(RecoveryKind::Excess))
            );
        }
        // closed: late
        for s in [
            EscrowState::Released,
            EscrowState::Refunded,
            EscrowState::Expired,
            EscrowState::Cancelled,
        ] {
            let d = classify_deposit(Phase::new(s), t, m(100), m(0), exp, early, t, m(5));
            assert_eq!(d.kind, DepositKind::Late);
        }
        // other token
        let d = classify_deposit(created, t, m(100), m(0), exp, early, Token::Usdc, m(100));
        assert_eq!(
            (d.kind, d.applied, d.recoverable),
            (DepositKind::UnsupportedToken, m(0), m(100))
        );
    }

    #[test]
    fn wire_names_round_trip() {
        for s in EscrowState::ALL {
            assert_eq!(EscrowState::parse(s.as_str()), Some(s));
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for k in RecoveryKind::ALL {
            assert_eq!(RecoveryKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str());
        }
        assert_eq!(EscrowState::parse("created"), None);
    }
}
