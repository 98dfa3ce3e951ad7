//! A payment the service makes from one of its own addresses and retries until it lands
//! (checkout's sweeps to the treasury, staff's returns of stray deposits): what a poll of
//! its current attempt decides.
//!
//! Why one rule: both are "submit, poll, and on proof that this attempt can never land
//! try again under a new id", and the proof is the subtle part: a `NotFound` proves
//! nothing until the attempt's deadline (plus a margin for clocks) has passed, so before
//! then the same payment is submitted again (the rail dedupes by id) and never a second
//! one. Each product keeps its own record and maps the decision onto it.

use crate::domain::time::Timestamp;
use crate::ports::{RailError, RailPayment, SponsorCost, SubmissionStatus};

/// Pause between two polls of a submitted attempt.
pub const POLL_MS: i64 = 2_000;
/// Pause before a failed attempt is followed by the next one.
pub const RETRY_MS: i64 = 30_000;
/// Margin for clocks before a `NotFound` past the deadline proves an attempt is dead.
pub const DEADLINE_MARGIN_MS: i64 = 60_000;

/// What to do after polling the current attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptNext {
    /// It landed, in this transaction.
    Landed {
        /// The confirmed transaction's hash.
        tx_hash: String,
        /// What it cost the sponsor (to meter in the commit that records it).
        cost: Option<SponsorCost>,
    },
    /// Still on its way, or the rail could not be asked: poll again.
    PollAgain {
        /// When to poll again.
        due_at: Timestamp,
        /// Why asking failed, to record (`None`: it is on its way).
        error: Option<String>,
    },
    /// It can never land (it failed, or it is unseen past its deadline): the next
    /// attempt, under a new payment id.
    NewAttempt {
        /// When to make it.
        due_at: Timestamp,
        /// The failure to record, if the rail gave one.
        error: Option<String>,
        /// What the failed attempt cost the sponsor, when it reached the chain.
        cost: Option<SponsorCost>,
    },
    /// Unseen but maybe still on its way: submit this same payment again.
    SubmitAgain,
}

/// The decision for `payment`'s poll answer `status`, at `now`.
pub fn after_poll(
    status: Result<SubmissionStatus, RailError>,
    payment: &RailPayment,
    now: Timestamp,
) -> AttemptNext {
    match status {
        Ok(SubmissionStatus::Confirmed { tx_hash, cost, .. }) => {
            AttemptNext::Landed { tx_hash, cost }
        }
        Ok(SubmissionStatus::Pending { .. }) => AttemptNext::PollAgain {
            due_at: now.plus_millis(POLL_MS),
            error: None,
        },
        Ok(SubmissionStatus::Failed { reason, cost, .. }) => AttemptNext::NewAttempt {
            due_at: now.plus_millis(RETRY_MS),
            error: Some(reason),
            cost,
        },
        Ok(SubmissionStatus::NotFound) if payment.past_deadline(now, DEADLINE_MARGIN_MS) => {
            AttemptNext::NewAttempt {
                due_at: now,
                error: None,
                cost: None,
            }
        }
        Ok(SubmissionStatus::NotFound) => AttemptNext::SubmitAgain,
        Err(e) => AttemptNext::PollAgain {
            due_at: now.plus_millis(POLL_MS),
            error: Some(e.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::money::Token;
    use crate::ports::{ChainAddress, KeyPurpose};

    fn payment(valid_until: Option<Timestamp>) -> RailPayment {
        RailPayment {
            id: "swp_1_1".into(),
            from: KeyPurpose::Treasury,
            from_address: ChainAddress("0xabc".into()),
            token: Token::Usdc,
            legs: Vec::new(),
            valid_until,
        }
    }

    #[test]
    fn every_poll_answer_has_one_decision() {
        let now = Timestamp(1_000_000);
        let live = payment(Some(now.plus_millis(5_000)));
        let dead = payment(Some(now.plus_millis(-DEADLINE_MARGIN_MS - 1)));
        assert_eq!(
            after_poll(
                Ok(SubmissionStatus::Confirmed {
                    tx_hash: "0x1".into(),
                    block: 7,
                    created_recipient_account: false,
                    cost: Some(SponsorCost {
                        native: 5,
                        ..Default::default()
                    }),
                }),
                &live,
                now
            ),
            AttemptNext::Landed {
                tx_hash: "0x1".into(),
                cost: Some(SponsorCost {
                    native: 5,
                    ..Default::default()
                })
            }
        );
        assert_eq!(
            after_poll(Ok(SubmissionStatus::Pending { tx_hash: None }), &live, now),
            AttemptNext::PollAgain {
                due_at: now.plus_millis(POLL_MS),
                error: None
            }
        );
        assert_eq!(
            after_poll(
                Ok(SubmissionStatus::Failed {
                    reason: "reverted".into(),
                    tx_hash: None,
                    cost: Some(SponsorCost {
                        native: 3,
                        ..Default::default()
                    })
                }),
                &live,
                now
            ),
            AttemptNext::NewAttempt {
                due_at: now.plus_millis(RETRY_MS),
                error: Some("reverted".into()),
                cost: Some(SponsorCost {
                    native: 3,
                    ..Default::default()
                })
            }
        );
        // Unseen: before the deadline (and its margin) the same payment again; after it,
        // a new attempt; without a deadline, never a new one.
        assert_eq!(
            after_poll(Ok(SubmissionStatus::NotFound), &live, now),
            AttemptNext::SubmitAgain
        );
        let at_margin = payment(Some(now.plus_millis(-DEADLINE_MARGIN_MS + 1)));
        assert_eq!(
            after_poll(Ok(SubmissionStatus::NotFound), &at_margin, now),
            AttemptNext::SubmitAgain
        );
        assert_eq!(
            after_poll(Ok(SubmissionStatus::NotFound), &dead, now),
            AttemptNext::NewAttempt {
                due_at: now,
                error: None,
                cost: None
            }
        );
        assert_eq!(
            after_poll(Ok(SubmissionStatus::NotFound), &payment(None), now),
            AttemptNext::SubmitAgain
        );
        let down = RailError::Unavailable {
            reason: "node down".into(),
        };
        assert!(matches!(
            after_poll(Err(down), &live, now),
            AttemptNext::PollAgain { due_at, error: Some(_) } if due_at == now.plus_millis(POLL_MS)
        ));
    }
}
