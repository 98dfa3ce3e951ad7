//! The claim rule around a side effect: the one rule every background worker (the
//! engine's operations and payouts, escrow's payouts) applies before it calls out to a
//! rail or a payout provider.
//!
//! A worker owns a record through its claim ([`Store::claim_due`]), and the claim ends
//! with the worker's next commit of that record ([`Store::commit`]). Before a side effect
//! the worker commits the record first (write-ahead: "SUBMITTING", so a crash is found
//! and reconciled). Were that record still due, the commit would hand it to any other
//! worker (another process on the same database) while the call is in flight: that
//! worker would find it SUBMITTING, take the outcome for unknown and act on a payment
//! that is still on its way.
//!
//! The rule: the write-ahead commit makes the record due only one claim lease later
//! ([`hold_through_side_effect`]). Nobody claims it meanwhile; the worker's own commit
//! of the outcome sets the next due time. If the worker dies (or its call outlasts the
//! lease) the record becomes due again and the next worker finds it in its submitting
//! state: the outcome is unknown, and it is resolved by asking the rail or provider
//! about the same id, never by a second send under a new id.
//!
//! The hold keeps the common case clean; it is not what makes a late worker safe.
//! Safety comes from what the late worker may conclude: a chain payment is failed only
//! once it provably can no longer land (`NotFound` after its deadline,
//! [`RailPayment::past_deadline`]), and a payout is refunded only on the provider's own
//! word that it failed.
//!
//! [`Store::claim_due`]: crate::ports::Store::claim_due
//! [`Store::commit`]: crate::ports::Store::commit
//! [`RailPayment::past_deadline`]: crate::ports::RailPayment::past_deadline

use crate::domain::time::Timestamp;

/// When a record committed just before a side effect becomes due again: one claim lease
/// after `now`, so no other worker claims it while the side effect runs (see the module
/// documentation).
pub fn hold_through_side_effect(now: Timestamp, lease_ms: i64) -> Timestamp {
    now.plus_millis(lease_ms.max(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hold_is_one_lease_and_never_in_the_past() {
        let now = Timestamp::from_secs(100);
        assert_eq!(
            hold_through_side_effect(now, 30_000),
            Timestamp::from_secs(130)
        );
        assert_eq!(hold_through_side_effect(now, -5), now);
    }
}
