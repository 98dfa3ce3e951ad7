//! Every (phase, action) pair of the escrow machine against an explicit table.

use stablecoin_escrow::{Action, EscrowState, PayoutPurpose, Phase, TransitionError, transition};

use Action::*;
use EscrowState::*;

const C: Phase = Phase::new(Created);
const F: Phase = Phase::new(Funded);
const FR: Phase = Phase::pending(Funded, PayoutPurpose::Release);
const FF: Phase = Phase::pending(Funded, PayoutPurpose::Refund);
const D: Phase = Phase::new(Disputed);
const DR: Phase = Phase::pending(Disputed, PayoutPurpose::Release);
const DF: Phase = Phase::pending(Disputed, PayoutPurpose::Refund);
const REL: Phase = Phase::new(Released);
const REF: Phase = Phase::new(Refunded);
const EXP: Phase = Phase::new(Expired);
const CAN: Phase = Phase::new(Cancelled);

/// Expected outcome: `Ok(to)`, or the error code.
#[derive(Debug, PartialEq)]
enum Want {
    To(Phase),
    Invalid,
    InFlight,
}

fn expected(from: Phase, action: Action) -> Want {
    use Want::*;
    match (from, action) {
        (C, Fund) => To(F),
        (C, Expire) => To(EXP),
        (C, Cancel) => To(CAN),
        (F, Release) => To(FR),
        (F, AutoRelease) => To(FR),
        (F, Refund) => To(FF),
        (F, Dispute) => To(D),
        (D, ResolveRelease) => To(DR),
        (D, ResolveRefund) => To(DF),
        (FR, PayoutConfirmed) | (DR, PayoutConfirmed) => To(REL),
        (FF, PayoutConfirmed) | (DF, PayoutConfirmed) => To(REF),
        (FR, PayoutFailed) | (FF, PayoutFailed) => To(F),
        (DR, PayoutFailed) | (DF, PayoutFailed) => To(D),
        // A payout is claimed and unsettled: everything else is PAYOUT_IN_FLIGHT (409),
        // including a repeated release and a dispute after release (spec 3.1, 4.1 rule 4).
        (FR | FF | DR | DF, _) => InFlight,
        _ => Invalid,
    }
}

#[test]
fn every_phase_action_pair() {
    assert_eq!(Phase::ALL.len(), 11);
    assert_eq!(Action::ALL.len(), 11);
    let mut allowed = 0;
    let mut refused = 0;
    for from in Phase::ALL {
        for action in Action::ALL {
            let got = transition(from, action);
            let want = expected(from, action);
            match (&got, &want) {
                (Ok(to), Want::To(w)) => {
                    assert_eq!(to, w, "{from} --{action}-->");
                    allowed += 1;
                }
                (Err(e @ TransitionError::InvalidState { .. }), Want::Invalid) => {
                    assert_eq!(e.code(), "INVALID_STATE");
                    refused += 1;
                }
                (Err(e @ TransitionError::PayoutInFlight { .. }), Want::InFlight) => {
                    assert_eq!(e.code(), "PAYOUT_IN_FLIGHT");
                    refused += 1;
                }
                _ => panic!("{from} --{action}--> got {got:?}, want {want:?}"),
            }
        }
    }
    assert_eq!(allowed, 17);
    assert_eq!(allowed + refused, 121);
}

#[test]
fn terminal_states_accept_nothing() {
    for from in [REL, REF, EXP, CAN] {
        assert!(from.state.is_terminal());
        for action in Action::ALL {
            let e = transition(from, action).unwrap_err();
            assert_eq!(e.code(), "INVALID_STATE", "{from} {action}");
        }
    }
}

#[test]
fn the_spec_release_rows() {
    // FUNDED + release -> FUNDED with payout_pending (202, not settlement).
    let to = transition(F, Release).unwrap();
    assert_eq!(to.state, Funded);
    assert!(to.payout_pending());
    // Confirmed -> RELEASED.
    assert_eq!(transition(to, PayoutConfirmed).unwrap(), REL);
    // Release from any state that does not allow it: 409.
    for from in [C, D, REL, REF, EXP, CAN] {
        assert_eq!(
            transition(from, Release).unwrap_err().code(),
            "INVALID_STATE"
        );
    }
    // Repeated release while in flight: 409.
    assert_eq!(
        transition(FR, Release).unwrap_err().code(),
        "PAYOUT_IN_FLIGHT"
    );
    // Dispute once a payout is claimed: refused.
    assert_eq!(
        transition(FR, Dispute).unwrap_err().code(),
        "PAYOUT_IN_FLIGHT"
    );
    assert_eq!(
        transition(FF, Dispute).unwrap_err().code(),
        "PAYOUT_IN_FLIGHT"
    );
    // A disputed deal needs a service resolution: the tenant cannot release or refund.
    assert_eq!(transition(D, Release).unwrap_err().code(), "INVALID_STATE");
    assert_eq!(transition(D, Refund).unwrap_err().code(), "INVALID_STATE");
}

#[test]
fn invalid_phases_are_refused() {
    // Phases the machine never reaches are refused rather than guessed.
    for from in [
        Phase::pending(Created, PayoutPurpose::Release),
        Phase::pending(Released, PayoutPurpose::Refund),
    ] {
        for action in Action::ALL {
            assert!(transition(from, action).is_err());
        }
    }
}
