//! Every (phase, action) pair of the escrow machine against an explicit table, and every
//! (phase, action, requester) triple of the engine's `decide` against the same table.

use stablecoin_escrow::{
    Action, Decision, Effect, EscrowState, Party, PayoutPurpose, Phase, Requester, TransitionError,
    decide, transition,
};

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

/// Who may ask for each action, explicitly.
fn asker(action: Action) -> Option<Requester> {
    match action {
        Release | Refund | Dispute | Cancel => Some(Requester::Tenant),
        ResolveRelease | ResolveRefund => Some(Requester::Staff),
        Expire | AutoRelease => Some(Requester::Worker),
        Fund | PayoutConfirmed | PayoutFailed => None,
    }
}

/// What each permitted action does, explicitly.
fn effect(action: Action) -> Effect {
    let payout = |purpose, to, staff_resolution| Effect::Payout {
        purpose,
        to,
        staff_resolution,
    };
    match action {
        Cancel | Expire => Effect::CloseUnfunded,
        Dispute => Effect::Dispute,
        Release | AutoRelease => payout(PayoutPurpose::Release, Party::Seller, false),
        Refund => payout(PayoutPurpose::Refund, Party::Buyer, false),
        ResolveRelease => payout(PayoutPurpose::Release, Party::Seller, true),
        ResolveRefund => payout(PayoutPurpose::Refund, Party::Buyer, true),
        Fund | PayoutConfirmed | PayoutFailed => unreachable!("nobody asks for {action}"),
    }
}

#[test]
fn decide_every_phase_action_requester() {
    assert_eq!(Requester::ALL.len(), 3);
    let mut allowed = 0;
    let mut sends = 0;
    let mut refused = 0;
    for from in Phase::ALL {
        for action in Action::ALL {
            assert_eq!(Requester::of(action), asker(action), "{action}");
            for by in Requester::ALL {
                let got = decide(from, action, by);
                let want = if asker(action) == Some(by) {
                    expected(from, action)
                } else {
                    // Not this requester's to ask, whatever the phase.
                    Want::Invalid
                };
                match (&got, want) {
                    (Ok(d), Want::To(to)) => {
                        let want = Decision {
                            from,
                            to,
                            effect: effect(action),
                        };
                        assert_eq!(*d, want, "{from} --{action} by {by:?}-->");
                        assert_eq!(d.sends(), matches!(d.effect, Effect::Payout { .. }));
                        // A permitted decision is exactly the machine's transition.
                        assert_eq!(transition(from, action), Ok(to));
                        allowed += 1;
                        sends += usize::from(d.sends());
                    }
                    (Err(e), Want::Invalid) if e.code() == "INVALID_STATE" => refused += 1,
                    (Err(e), Want::InFlight) if e.code() == "PAYOUT_IN_FLIGHT" => refused += 1,
                    (_, want) => {
                        panic!("{from} --{action} by {by:?}--> got {got:?}, want {want:?}")
                    }
                }
            }
        }
    }
    // 17 machine moves less Fund (1), PayoutConfirmed (4) and PayoutFailed (4), each for
    // its one requester; five of the eight claim a payout (release, automatic release,
    // refund and the two resolutions).
    assert_eq!(allowed, 8);
    assert_eq!(sends, 5);
    assert_eq!(allowed + refused, 11 * 11 * 3);
}

#[test]
fn decide_refuses_another_requester_s_action_even_where_the_machine_allows_it() {
    // FUNDED + release is a move of the machine, but only the tenant asks for it.
    assert!(decide(F, Release, Requester::Tenant).is_ok());
    for by in [Requester::Staff, Requester::Worker] {
        let e = decide(F, Release, by).unwrap_err();
        assert_eq!(e.code(), "INVALID_STATE", "{by:?}");
    }
    // A tenant cannot resolve its own dispute, nor a worker expire on the tenant's word.
    assert_eq!(
        decide(D, ResolveRelease, Requester::Tenant)
            .unwrap_err()
            .code(),
        "INVALID_STATE"
    );
    assert_eq!(
        decide(C, Expire, Requester::Tenant).unwrap_err().code(),
        "INVALID_STATE"
    );
    // The facts the workers record themselves are nobody's to ask for.
    for by in Requester::ALL {
        assert!(decide(C, Fund, by).is_err());
        assert!(decide(FR, PayoutConfirmed, by).is_err());
        assert!(decide(DF, PayoutFailed, by).is_err());
    }
}
