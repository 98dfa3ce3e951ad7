//! The refund of a checkout session: its state machine and its money rule, pure (no
//! clock, no store), as `state.rs` is for sessions.
//!
//! # What can be refunded
//!
//! Per token, a session owes back two kinds of money ([`RefundSources`]):
//! - **owed back**: its excess and late payments, a token it does not take, and the
//!   applied part of a session that failed or expired unpaid. The ledger holds these in
//!   the business's `checkout_refundable:<tenant>:<business>:<TOKEN>` account.
//! - **settled**: the applied part of a paid session, credited to the tenant's treasury.
//!
//! A refund takes from the owed-back part first (money that was never the business's),
//! then from the settled part ([`split_refund`]). Whatever is reserved by refunds not
//! returned (awaiting a claim, sending, sent) is subtracted, so the sum of refunds never
//! passes what the session received, however many partial refunds are made.
//!
//! # States
//!
//! | from | event | to |
//! |---|---|---|
//! | awaiting_claim | the payer claims it with an address ([`RefundEvent::Claim`]) | pending |
//! | awaiting_claim | the claim link expires ([`RefundEvent::Expire`]) | expired (money returned) |
//! | pending | the send is written ahead of the rail call ([`RefundEvent::Submit`]) | submitting |
//! | submitting | the rail took it, or its answer was lost ([`RefundEvent::Sent`]) | submitted |
//! | submitting | the rail refused it: nothing sent ([`RefundEvent::Rejected`]) | pending |
//! | submitting, submitted | the payment is unseen, maybe on its way ([`RefundEvent::Resubmit`]) | submitting |
//! | submitted | this attempt can never land ([`RefundEvent::AttemptLost`]) | pending |
//! | submitting, submitted | it landed ([`RefundEvent::Landed`]) | completed |
//! | pending | the attempts are spent ([`RefundEvent::GiveUp`]) | failed (money returned) |
//! | any other pair | | refused ([`RefundTransitionError`]) |
//!
//! `failed` is reached only from `pending`, that is only when no attempt can still land:
//! money is never returned to the business while a payment of it may be on its way.

use crate::error::{CheckoutError, CheckoutResult};
use serde::{Deserialize, Serialize};
use stablecoin_core::domain::money::Micros;

/// Where a refund stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefundStatus {
    /// A claim link waits for the payer's address.
    AwaitingClaim,
    /// Has a destination; waiting for its (next) attempt.
    Pending,
    /// Committed before the rail call: the outcome is asked, never assumed.
    Submitting,
    /// Sent; polled until it lands.
    Submitted,
    /// Landed at the destination.
    Completed,
    /// Could not be sent; the money went back where it came from (`failure_reason`).
    Failed,
    /// The claim link expired unclaimed; the money went back where it came from.
    Expired,
}

impl RefundStatus {
    /// Every status.
    pub const ALL: [RefundStatus; 7] = [
        RefundStatus::AwaitingClaim,
        RefundStatus::Pending,
        RefundStatus::Submitting,
        RefundStatus::Submitted,
        RefundStatus::Completed,
        RefundStatus::Failed,
        RefundStatus::Expired,
    ];

    /// The stored word.
    pub fn as_str(self) -> &'static str {
        match self {
            RefundStatus::AwaitingClaim => "awaiting_claim",
            RefundStatus::Pending => "pending",
            RefundStatus::Submitting => "submitting",
            RefundStatus::Submitted => "submitted",
            RefundStatus::Completed => "completed",
            RefundStatus::Failed => "failed",
            RefundStatus::Expired => "expired",
        }
    }

    /// The word of the API and the webhooks: `submitting` is the write-ahead step of
    /// `submitted` and shows as it (whether the rail has it yet is not knowable).
    pub fn wire(self) -> &'static str {
        match self {
            RefundStatus::Submitting => "submitted",
            s => s.as_str(),
        }
    }

    /// Completed, failed or expired: nothing moves it again.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            RefundStatus::Completed | RefundStatus::Failed | RefundStatus::Expired
        )
    }

    /// True while the refund's money is reserved (not returned): every state but
    /// failed and expired.
    pub fn holds_money(self) -> bool {
        !matches!(self, RefundStatus::Failed | RefundStatus::Expired)
    }
}

/// What can happen to a refund.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefundEvent {
    /// The payer gave an address on the claim page.
    Claim,
    /// The claim link's time passed.
    Expire,
    /// The worker commits the attempt before calling the rail.
    Submit,
    /// The rail accepted the payment, or its answer was lost (asked later).
    Sent,
    /// The rail refused the payment: nothing was sent.
    Rejected,
    /// Unseen but maybe still on its way: the same payment again.
    Resubmit,
    /// The attempt can never land (failed, or unseen past its deadline).
    AttemptLost,
    /// The payment landed.
    Landed,
    /// The attempts are spent.
    GiveUp,
}

impl RefundEvent {
    /// Every event.
    pub const ALL: [RefundEvent; 9] = [
        RefundEvent::Claim,
        RefundEvent::Expire,
        RefundEvent::Submit,
        RefundEvent::Sent,
        RefundEvent::Rejected,
        RefundEvent::Resubmit,
        RefundEvent::AttemptLost,
        RefundEvent::Landed,
        RefundEvent::GiveUp,
    ];
}

/// A transition the table does not allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefundTransitionError {
    /// The status it was in.
    pub from: RefundStatus,
    /// The refused event.
    pub event: RefundEvent,
}

impl From<RefundTransitionError> for CheckoutError {
    fn from(e: RefundTransitionError) -> Self {
        CheckoutError::InvalidState {
            status: e.from.wire().into(),
        }
    }
}

/// The one transition function (see the module table).
pub fn transition(
    from: RefundStatus,
    event: RefundEvent,
) -> Result<RefundStatus, RefundTransitionError> {
    use RefundEvent::*;
    use RefundStatus::*;
    match (from, event) {
        (AwaitingClaim, Claim) => Ok(Pending),
        (AwaitingClaim, Expire) => Ok(Expired),
        (Pending, Submit) => Ok(Submitting),
        (Submitting, Sent) => Ok(Submitted),
        (Submitting, Rejected) => Ok(Pending),
        (Submitting | Submitted, Resubmit) => Ok(Submitting),
        (Submitted, AttemptLost) => Ok(Pending),
        (Submitting | Submitted, Landed) => Ok(Completed),
        (Pending, GiveUp) => Ok(Failed),
        _ => Err(RefundTransitionError { from, event }),
    }
}

/// One token's refundable money of a session, by source.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundSources {
    /// From the business's refundable account (excess, late, unpaid).
    pub owed_back: Micros,
    /// From the tenant's treasury (the applied part of a paid session).
    pub settled: Micros,
}

impl RefundSources {
    /// Both parts. Each is a part of what the session received, so the sum fits; it
    /// is summed in `u128` and saturated all the same.
    pub fn total(&self) -> Micros {
        let t = u128::from(self.owed_back.get()) + u128::from(self.settled.get());
        Micros::new(u64::try_from(t).unwrap_or(u64::MAX))
    }

    /// `self - reserved`, part by part (never below zero).
    pub fn minus(&self, reserved: &RefundSources) -> RefundSources {
        RefundSources {
            owed_back: Micros::new(
                self.owed_back
                    .get()
                    .saturating_sub(reserved.owed_back.get()),
            ),
            settled: Micros::new(self.settled.get().saturating_sub(reserved.settled.get())),
        }
    }

    /// `self + other`, part by part, checked.
    pub fn plus(&self, other: &RefundSources) -> CheckoutResult<RefundSources> {
        Ok(RefundSources {
            owed_back: crate::error::checked_sum(self.owed_back, other.owed_back, "refunds")?,
            settled: crate::error::checked_sum(self.settled, other.settled, "refunds")?,
        })
    }
}

/// What a session received in one token, as its credited deposits and status say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Every credited micro-unit of the token.
    pub amount: Micros,
    /// The part that paid the session's amount.
    pub applied: Micros,
}

/// What a session that received `received` of a token, in status `paid` (`paid`) or
/// not, owes back and holds settled: a paid session's applied part is settled; every
/// other micro-unit is owed back (the unpaid applied part of a failed or expired
/// session too, which `close_unpaid` moved to the refundable account). A pending
/// session's applied part is neither: it is still held for the payment.
pub fn sources(received: Received, paid: bool, ended_unpaid: bool) -> RefundSources {
    let beyond = received.amount.get().saturating_sub(received.applied.get());
    let (owed_back, settled) = match (paid, ended_unpaid) {
        (true, _) => (beyond, received.applied.get()),
        (false, true) => (received.amount.get(), 0),
        (false, false) => (beyond, 0),
    };
    RefundSources {
        owed_back: Micros::new(owed_back),
        settled: Micros::new(settled),
    }
}

/// Splits a refund of `amount` over what is still `available`: the owed-back part
/// first, then the settled part. `REFUND_EXCEEDS_REFUNDABLE` when it is more than both.
///
/// Invariant (asserted in debug builds, tested): the parts add up to `amount` and
/// neither passes its available part.
pub fn split_refund(available: &RefundSources, amount: Micros) -> CheckoutResult<RefundSources> {
    if amount.is_zero() {
        return Err(CheckoutError::InvalidAmount {
            reason: "nothing to refund".into(),
        });
    }
    if amount > available.total() {
        return Err(CheckoutError::RefundExceedsRefundable {
            refundable: available.total().to_decimal_string(),
        });
    }
    let owed_back = amount.get().min(available.owed_back.get());
    let split = RefundSources {
        owed_back: Micros::new(owed_back),
        settled: Micros::new(amount.get() - owed_back),
    };
    debug_assert!(
        split.settled <= available.settled && split.total() == amount,
        "refund split {split:?} of {amount:?} over {available:?}"
    );
    Ok(split)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(v: u64) -> Micros {
        Micros::new(v)
    }

    #[test]
    fn every_status_event_pair_follows_the_table() {
        use RefundEvent::*;
        use RefundStatus::*;
        for from in RefundStatus::ALL {
            for event in RefundEvent::ALL {
                let expected = match (from, event) {
                    (AwaitingClaim, Claim) => Some(Pending),
                    (AwaitingClaim, Expire) => Some(Expired),
                    (Pending, Submit) => Some(Submitting),
                    (Submitting, Sent) => Some(Submitted),
                    (Submitting, Rejected) => Some(Pending),
                    (Submitting, Resubmit) | (Submitted, Resubmit) => Some(Submitting),
                    (Submitted, AttemptLost) => Some(Pending),
                    (Submitting, Landed) | (Submitted, Landed) => Some(Completed),
                    (Pending, GiveUp) => Some(Failed),
                    _ => None,
                };
                match (transition(from, event), expected) {
                    (Ok(to), Some(e)) => assert_eq!(to, e, "{from:?} {event:?}"),
                    (Err(err), None) => {
                        assert_eq!(err, RefundTransitionError { from, event })
                    }
                    (got, want) => panic!("{from:?} {event:?}: {got:?}, expected {want:?}"),
                }
            }
        }
    }

    #[test]
    fn final_states_have_no_way_out_and_only_failure_and_expiry_return_money() {
        for from in RefundStatus::ALL {
            if from.is_final() {
                for event in RefundEvent::ALL {
                    assert!(transition(from, event).is_err(), "{from:?} {event:?}");
                }
            }
            let returned = matches!(from, RefundStatus::Failed | RefundStatus::Expired);
            assert_eq!(from.holds_money(), !returned);
        }
        // Money goes back only from a state where no payment can be on its way.
        for from in RefundStatus::ALL {
            for event in RefundEvent::ALL {
                if let Ok(to) = transition(from, event)
                    && !to.holds_money()
                {
                    assert!(
                        matches!(from, RefundStatus::AwaitingClaim | RefundStatus::Pending),
                        "{from:?} -> {to:?}"
                    );
                }
            }
        }
        assert_eq!(RefundStatus::Submitting.wire(), "submitted");
        assert_eq!(RefundStatus::AwaitingClaim.wire(), "awaiting_claim");
    }

    #[test]
    fn sources_follow_the_session_outcome() {
        let r = Received {
            amount: m(30),
            applied: m(25),
        };
        assert_eq!(
            sources(r, true, false),
            RefundSources {
                owed_back: m(5),
                settled: m(25)
            }
        );
        assert_eq!(
            sources(r, false, true),
            RefundSources {
                owed_back: m(30),
                settled: m(0)
            }
        );
        // Pending: the applied part is still held for the payment.
        assert_eq!(
            sources(r, false, false),
            RefundSources {
                owed_back: m(5),
                settled: m(0)
            }
        );
    }

    #[test]
    fn a_refund_takes_owed_back_money_first_and_never_more_than_available() {
        let a = RefundSources {
            owed_back: m(5),
            settled: m(25),
        };
        assert_eq!(
            split_refund(&a, m(3)).unwrap(),
            RefundSources {
                owed_back: m(3),
                settled: m(0)
            }
        );
        assert_eq!(
            split_refund(&a, m(8)).unwrap(),
            RefundSources {
                owed_back: m(5),
                settled: m(3)
            }
        );
        assert_eq!(split_refund(&a, m(30)).unwrap(), a);
        let e = split_refund(&a, m(31)).unwrap_err();
        assert_eq!(e.code(), "REFUND_EXCEEDS_REFUNDABLE");
        assert_eq!(split_refund(&a, m(0)).unwrap_err().code(), "INVALID_AMOUNT");
    }

    /// Several partial refunds, each split over what the previous ones left, never
    /// sum past what was available, and the last one that fits empties it.
    #[test]
    fn successive_partial_refunds_never_pass_what_was_received() {
        for owed in [0u64, 1, 7, 100] {
            for settled in [0u64, 1, 13, 100] {
                for step in [1u64, 3, 10, 250] {
                    let start = RefundSources {
                        owed_back: m(owed),
                        settled: m(settled),
                    };
                    let mut reserved = RefundSources::default();
                    loop {
                        let left = start.minus(&reserved);
                        let ask = m(step.min(left.total().get()));
                        if ask.is_zero() {
                            assert!(split_refund(&left, m(1)).is_err());
                            break;
                        }
                        let part = split_refund(&left, ask).unwrap();
                        assert!(part.owed_back <= left.owed_back && part.settled <= left.settled);
                        reserved = reserved.plus(&part).unwrap();
                        assert!(reserved.owed_back <= start.owed_back);
                        assert!(reserved.settled <= start.settled);
                    }
                    assert_eq!(reserved, start);
                }
            }
        }
    }
}
