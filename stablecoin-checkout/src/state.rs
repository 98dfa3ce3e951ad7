//! The payment session's state machine and its money rules, pure: no clock, no store.
//!
//! Statuses are the spec's four (3.3): `pending`, `paid`, `expired`, `failed`. The edges
//! BTCPay users ask about (partial, over and late payments) are recorded beside the
//! status as amounts and a flag, never as new statuses:
//!
//! | from | event | to |
//! |---|---|---|
//! | pending | confirmed deposits cover the amount ([`SessionEvent::Covered`]) | paid |
//! | pending | expiry with nothing received ([`SessionEvent::ExpireEmpty`]) | expired |
//! | pending | expiry with part received ([`SessionEvent::ExpireUnderpaid`]) | failed (`underpaid: ...`) |
//! | pending | the business cancels ([`SessionEvent::Cancel`]) | failed (`cancelled`) |
//! | any other pair | | refused ([`TransitionError`]) |
//!
//! A deposit never changes a session that has ended; it is recorded, credited and
//! reported as excess (paid) or late (expired, failed), see [`split_deposit`].

use serde::{Deserialize, Serialize};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::time::Timestamp;

/// The spec's session statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// Open: waiting for the amount.
    Pending,
    /// Confirmed deposits covered the amount.
    Paid,
    /// Nothing was received before expiry.
    Expired,
    /// Cancelled, or underpaid at expiry (`failure_reason` says which).
    Failed,
}

impl SessionStatus {
    /// Every status, in the spec's order (the list filter's values).
    pub const ALL: [SessionStatus; 4] = [
        SessionStatus::Pending,
        SessionStatus::Paid,
        SessionStatus::Expired,
        SessionStatus::Failed,
    ];

    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Pending => "pending",
            SessionStatus::Paid => "paid",
            SessionStatus::Expired => "expired",
            SessionStatus::Failed => "failed",
        }
    }

    /// Parses the wire word.
    pub fn parse(s: &str) -> Option<SessionStatus> {
        SessionStatus::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Everything but pending: no event moves it again.
    pub fn is_final(self) -> bool {
        self != SessionStatus::Pending
    }
}

/// What can happen to a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEvent {
    /// Confirmed deposits reached the amount.
    Covered,
    /// The expiry passed with nothing confirmed.
    ExpireEmpty,
    /// The expiry passed with part of the amount confirmed.
    ExpireUnderpaid,
    /// The business cancelled it.
    Cancel,
}

/// A transition the table does not allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransitionError {
    /// The status it was in.
    pub from: SessionStatus,
    /// The refused event.
    pub event: SessionEvent,
}

/// The one transition function (see the module table).
pub fn transition(
    from: SessionStatus,
    event: SessionEvent,
) -> Result<SessionStatus, TransitionError> {
    use SessionEvent::*;
    use SessionStatus::*;
    match (from, event) {
        (Pending, Covered) => Ok(Paid),
        (Pending, ExpireEmpty) => Ok(Expired),
        (Pending, ExpireUnderpaid) | (Pending, Cancel) => Ok(Failed),
        _ => Err(TransitionError { from, event }),
    }
}

/// How one confirmed deposit counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DepositSplit {
    /// Counts toward the amount (held for the session).
    pub applied: Micros,
    /// Beyond the amount, while the session was open or paid.
    pub excess: Micros,
    /// After expiry or after the session ended: owed back as a whole.
    pub late: Micros,
    /// This deposit completes the payment.
    pub completes: bool,
}

impl DepositSplit {
    /// What goes to the refundable account: excess plus late. Both are parts of the
    /// deposit (`applied + excess + late == amount`), so the sum fits; it is checked all
    /// the same, as every sum of money in this crate.
    pub fn refundable(&self) -> crate::error::CheckoutResult<Micros> {
        crate::error::checked_sum(self.excess, self.late, "the refundable part")
    }

    /// Asserts (debug builds, tests, the `sim` profile) the split's invariant: its parts
    /// are the deposit, `applied + excess + late == amount`, so a deposit is counted
    /// once, whole. Summed in `u128`, so the check itself cannot overflow.
    pub fn assert_parts_of(&self, amount: Micros) {
        let parts = u128::from(self.applied.get())
            + u128::from(self.excess.get())
            + u128::from(self.late.get());
        debug_assert_eq!(
            parts,
            u128::from(amount.get()),
            "deposit split does not add up to the deposit: {self:?}"
        );
    }
}

/// Asserts (debug builds, tests, the `sim` profile) what crediting a deposit leaves: the
/// deposit's split adds up to it ([`DepositSplit::assert_parts_of`]) and the session's
/// applied total (all tokens) is at most its amount.
pub fn assert_credited(split: &DepositSplit, deposit: Micros, applied_total: Micros, due: Micros) {
    split.assert_parts_of(deposit);
    debug_assert!(
        applied_total <= due,
        "applied {applied_total:?} beyond the session's amount {due:?}"
    );
}

/// Splits a confirmed deposit of `amount` (a token the session accepts) toward a session
/// in `status` that is owed `due` and already has `applied` of it.
///
/// `detected_at` decides lateness: a payment seen by the expiry is on time even if it
/// confirms after (the payer did pay in time); one first seen after it is late.
///
/// Invariant (asserted here in debug builds, and by the tests): `applied + excess +
/// late == amount`, and applied never takes the session past `due`.
pub fn split_deposit(
    status: SessionStatus,
    due: Micros,
    applied: Micros,
    expires_at: Timestamp,
    detected_at: Timestamp,
    amount: Micros,
) -> DepositSplit {
    let split = split_by_status(status, due, applied, expires_at, detected_at, amount);
    split.assert_parts_of(amount);
    debug_assert!(
        split.applied.is_zero()
            || u128::from(applied.get()) + u128::from(split.applied.get()) <= u128::from(due.get()),
        "deposit applies {:?} past the amount {due:?} (already applied {applied:?})",
        split.applied
    );
    split
}

/// [`split_deposit`]'s rule, before its invariant is checked.
fn split_by_status(
    status: SessionStatus,
    due: Micros,
    applied: Micros,
    expires_at: Timestamp,
    detected_at: Timestamp,
    amount: Micros,
) -> DepositSplit {
    let zero = Micros::ZERO;
    let late = DepositSplit {
        applied: zero,
        excess: zero,
        late: amount,
        completes: false,
    };
    match status {
        SessionStatus::Expired | SessionStatus::Failed => late,
        SessionStatus::Paid if detected_at > expires_at => late,
        SessionStatus::Paid => DepositSplit {
            applied: zero,
            excess: amount,
            late: zero,
            completes: false,
        },
        SessionStatus::Pending if detected_at > expires_at => late,
        SessionStatus::Pending => {
            let missing = due.get().saturating_sub(applied.get());
            let take = missing.min(amount.get());
            DepositSplit {
                applied: Micros::new(take),
                excess: Micros::new(amount.get() - take),
                late: zero,
                completes: take > 0 && take == missing,
            }
        }
    }
}

/// What the expiry worker does with a pending session at `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpiryDecision {
    /// Not expired yet: look again at this time.
    NotYet(Timestamp),
    /// Detected deposits would cover it: give them until this time to confirm.
    AwaitConfirmations(Timestamp),
    /// Apply this event.
    Apply(SessionEvent),
}

/// The expiry rule: at `expires_at`, a session with nothing applied expires and one with
/// part applied fails underpaid, unless deposits seen in time (`pending`) would still
/// cover it; those get `grace_ms` to confirm.
pub fn decide_expiry(
    now: Timestamp,
    expires_at: Timestamp,
    grace_ms: i64,
    due: Micros,
    applied: Micros,
    pending: Micros,
) -> ExpiryDecision {
    if now < expires_at {
        return ExpiryDecision::NotYet(expires_at);
    }
    let grace_end = expires_at.plus_millis(grace_ms.max(0));
    let would_cover = applied.get().saturating_add(pending.get()) >= due.get();
    if !pending.is_zero() && would_cover && now < grace_end {
        return ExpiryDecision::AwaitConfirmations(grace_end);
    }
    ExpiryDecision::Apply(if applied.is_zero() {
        SessionEvent::ExpireEmpty
    } else {
        SessionEvent::ExpireUnderpaid
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENTS: [SessionEvent; 4] = [
        SessionEvent::Covered,
        SessionEvent::ExpireEmpty,
        SessionEvent::ExpireUnderpaid,
        SessionEvent::Cancel,
    ];

    #[test]
    fn every_status_event_pair_follows_the_table() {
        use SessionEvent::*;
        use SessionStatus::*;
        for from in SessionStatus::ALL {
            for event in EVENTS {
                let expected = match (from, event) {
                    (Pending, Covered) => Some(Paid),
                    (Pending, ExpireEmpty) => Some(Expired),
                    (Pending, ExpireUnderpaid) => Some(Failed),
                    (Pending, Cancel) => Some(Failed),
                    _ => None,
                };
                match (transition(from, event), expected) {
                    (Ok(to), Some(e)) => assert_eq!(to, e, "{from:?} {event:?}"),
                    (Err(err), None) => assert_eq!(err, TransitionError { from, event }),
                    (got, want) => panic!("{from:?} {event:?}: {got:?}, expected {want:?}"),
                }
            }
        }
    }

    #[test]
    fn statuses_parse_back() {
        for s in SessionStatus::ALL {
            assert_eq!(SessionStatus::parse(s.as_str()), Some(s));
            assert_eq!(s.is_final(), s != SessionStatus::Pending);
        }
        assert_eq!(SessionStatus::parse("PAID"), None);
    }

    fn m(v: u64) -> Micros {
        Micros::new(v)
    }

    #[test]
    fn a_deposit_splits_into_applied_excess_and_late_that_add_up() {
        let exp = Timestamp::from_secs(100);
        let on_time = Timestamp::from_secs(99);
        let after = Timestamp::from_secs(101);
        // exact
        let s = split_deposit(SessionStatus::Pending, m(10), m(0), exp, on_time, m(10));
        assert_eq!(
            (s.applied, s.excess, s.late, s.completes),
            (m(10), m(0), m(0), true)
        );
        // partial, then the rest
        let s = split_deposit(SessionStatus::Pending, m(10), m(0), exp, on_time, m(4));
        assert_eq!((s.applied, s.completes), (m(4), false));
        let s = split_deposit(SessionStatus::Pending, m(10), m(4), exp, on_time, m(6));
        assert_eq!((s.applied, s.excess, s.completes), (m(6), m(0), true));
        // over
        let s = split_deposit(SessionStatus::Pending, m(10), m(4), exp, on_time, m(9));
        assert_eq!((s.applied, s.excess, s.completes), (m(6), m(3), true));
        // after paid: all excess
        let s = split_deposit(SessionStatus::Paid, m(10), m(10), exp, on_time, m(2));
        assert_eq!((s.applied, s.excess, s.late), (m(0), m(2), m(0)));
        // late: first seen after expiry, or after the session ended
        for (st, at) in [
            (SessionStatus::Pending, after),
            (SessionStatus::Paid, after),
            (SessionStatus::Expired, on_time),
            (SessionStatus::Failed, on_time),
        ] {
            let s = split_deposit(st, m(10), m(0), exp, at, m(7));
            assert_eq!(
                (s.applied, s.excess, s.late, s.completes),
                (m(0), m(0), m(7), false)
            );
        }
    }

    #[test]
    fn the_split_always_adds_up_and_never_overfills() {
        let exp = Timestamp::from_secs(1000);
        for status in SessionStatus::ALL {
            for due in [1u64, 7, 1_000_000] {
                for applied in [0u64, 1, due / 2, due] {
                    for amount in [1u64, 3, due, due * 3] {
                        for at in [999i64, 1001] {
                            let s = split_deposit(
                                status,
                                m(due),
                                m(applied.min(due)),
                                exp,
                                Timestamp::from_secs(at),
                                m(amount),
                            );
                            assert_eq!(s.applied.get() + s.excess.get() + s.late.get(), amount);
                            assert!(applied.min(due) + s.applied.get() <= due);
                            assert_eq!(s.refundable().unwrap().get(), amount - s.applied.get());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn expiry_waits_for_deposits_seen_in_time_then_expires_or_fails() {
        let exp = Timestamp::from_secs(100);
        let d = |now: i64, applied: u64, pending: u64| {
            decide_expiry(
                Timestamp::from_secs(now),
                exp,
                60_000,
                m(10),
                m(applied),
                m(pending),
            )
        };
        assert_eq!(d(99, 0, 0), ExpiryDecision::NotYet(exp));
        assert_eq!(
            d(100, 0, 0),
            ExpiryDecision::Apply(SessionEvent::ExpireEmpty)
        );
        assert_eq!(
            d(100, 3, 0),
            ExpiryDecision::Apply(SessionEvent::ExpireUnderpaid)
        );
        assert_eq!(
            d(100, 3, 7),
            ExpiryDecision::AwaitConfirmations(Timestamp::from_secs(160))
        );
        // Pending that would not cover it does not hold the expiry.
        assert_eq!(
            d(100, 3, 6),
            ExpiryDecision::Apply(SessionEvent::ExpireUnderpaid)
        );
        // After the grace, it ends anyway.
        assert_eq!(
            d(160, 3, 7),
            ExpiryDecision::Apply(SessionEvent::ExpireUnderpaid)
        );
        assert_eq!(
            d(160, 0, 10),
            ExpiryDecision::Apply(SessionEvent::ExpireEmpty)
        );
    }

    fn parts(applied: u64, excess: u64, late: u64) -> DepositSplit {
        DepositSplit {
            applied: m(applied),
            excess: m(excess),
            late: m(late),
            completes: false,
        }
    }

    #[test]
    fn a_credit_that_adds_up_passes_its_check() {
        assert_credited(&parts(4, 1, 0), m(5), m(10), m(10));
        assert_credited(&parts(0, 0, 7), m(7), m(0), m(10));
    }

    /// The checks are live in debug builds: a split that is not its deposit, and a
    /// session applied beyond its amount, both panic.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "deposit split does not add up")]
    fn a_split_that_is_not_its_deposit_is_caught() {
        parts(4, 2, 0).assert_parts_of(m(5));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "beyond the session's amount")]
    fn a_session_applied_beyond_its_amount_is_caught() {
        assert_credited(&parts(5, 0, 0), m(5), m(11), m(10));
    }
}
