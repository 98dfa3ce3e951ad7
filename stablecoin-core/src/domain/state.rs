//! Operation state machines (spec 3.2, ARCHITECTURE 6): one pure [`transition`] function
//! for funding, transfer, swap and withdrawal.
//!
//! | Kind | Machine |
//! |---|---|
//! | funding / transfer / swap | `QUEUED -Claim-> SUBMITTING -Submitted-> SUBMITTED -Confirmed-> SETTLED` |
//! | | `SUBMITTING -OutcomeUnknown-> SUBMISSION_UNKNOWN -Confirmed-> SETTLED` |
//! | withdrawal | `PENDING -Claim-> SUBMITTING -Submitted-> SUBMITTED -Confirmed-> CRYPTO_RECEIVED` |
//! | | `SUBMITTING -OutcomeUnknown-> SUBMISSION_UNKNOWN -Confirmed-> CRYPTO_RECEIVED` |
//! | | `CRYPTO_RECEIVED -PayoutStart-> PAYOUT_SUBMITTING -PayoutDelivered-> COMPLETED` |
//! | | `PAYOUT_SUBMITTING -PayoutUnknown-> PAYOUT_UNKNOWN -PayoutDelivered/PayoutRefunded-> COMPLETED/REFUNDED` |
//! | | `PAYOUT_SUBMITTING -PayoutRefunded-> REFUNDED` |
//! | all | `Failed`: start state, SUBMITTING, SUBMITTED, SUBMISSION_UNKNOWN `-> FAILED` |
//!
//! Terminal states (SETTLED, COMPLETED, REFUNDED, FAILED) accept no event, and a status a
//! kind never uses (e.g. PENDING for a transfer) accepts no event either.
//!
//! **Why the unknown states never go back to SUBMITTING.** SUBMISSION_UNKNOWN and
//! PAYOUT_UNKNOWN mean we could not tell whether the operation reached the network or the
//! payout provider: it may already have happened (spec 3.2 rule 5). A new submission
//! (under a new id) could therefore pay twice. The only way out is for the reconciler to
//! ask the rail/provider what actually happened and record the answer:
//! `Confirmed`/`Failed` for SUBMISSION_UNKNOWN, `PayoutDelivered`/`PayoutRefunded` for
//! PAYOUT_UNKNOWN. Two rules decide when an answer is final:
//! - `Failed` from SUBMISSION_UNKNOWN needs a proof that the payment can no longer land:
//!   the rail's `Failed`, or its `NotFound` after the payment's deadline
//!   (`RailPayment::past_deadline`); never a timer.
//! - `PayoutRefunded` needs the provider's own word that the payout failed
//!   (`PayoutStatus::Failed`, or a definite `PayoutError::Rejected`); never a timer. A
//!   provider that has no record of the payout is sent the same payout id again (it
//!   deduplicates by id, so that is not a second payment): the state stays put.
//!
//! **Every state is resumable.** Each side effect is recorded (SUBMITTING,
//! PAYOUT_SUBMITTING, a refund attempt) before it is made, so a worker that dies at any
//! point leaves a state whose next claim continues: SUBMITTING becomes SUBMISSION_UNKNOWN
//! and is reconciled; PAYOUT_SUBMITTING and PAYOUT_UNKNOWN ask the provider; a recorded
//! refund asks the rail about its attempt id. See `engine::withdrawals` for the table.

use serde::{Deserialize, Serialize};

use crate::domain::RuleError;

/// A money-moving operation kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpKind {
    /// Tenant treasury to a customer wallet (`POST /v1/users/fund`).
    Funding,
    /// P2P between phone-keyed wallets, fees deducted on EVM (`POST /v1/transfers/send`).
    Transfer,
    /// Token exchange; the engine does not run swaps yet, so none exists.
    Swap,
    /// Off-ramp: the wallet's tokens swept to the treasury on chain, then paid out as fiat
    /// by mobile money.
    Withdrawal,
}

impl OpKind {
    /// Every kind, in declaration order.
    pub const ALL: [OpKind; 4] = [
        OpKind::Funding,
        OpKind::Transfer,
        OpKind::Swap,
        OpKind::Withdrawal,
    ];

    /// Prefix of the operation id (`fd_...`, `tr_...`, `sw_...`, `wd_...`).
    pub fn id_prefix(self) -> &'static str {
        match self {
            OpKind::Funding => "fd",
            OpKind::Transfer => "tr",
            OpKind::Swap => "sw",
            OpKind::Withdrawal => "wd",
        }
    }

    /// Lowercase name (`"funding"`, `"transfer"`, ...), as in record kinds and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Funding => "funding",
            OpKind::Transfer => "transfer",
            OpKind::Swap => "swap",
            OpKind::Withdrawal => "withdrawal",
        }
    }
}

/// Status of a money-moving operation (spec 3.2); serialized in SCREAMING_SNAKE_CASE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OpStatus {
    /// Start state of a funding, transfer or swap: accepted, waiting for a worker.
    Queued,
    /// Start state of a withdrawal: accepted, waiting for a worker.
    Pending,
    /// A worker is sending it to the rail; recorded before the send, so a crash here is
    /// treated as an unknown outcome.
    Submitting,
    /// The rail acknowledged it; waiting for confirmation.
    Submitted,
    /// We cannot tell whether it reached the network; only the reconciler's answer from the
    /// rail moves it on, never a resubmission.
    SubmissionUnknown,
    /// Terminal: confirmed on chain (funding, transfer, swap).
    Settled,
    /// Withdrawal: the stablecoin left the wallet and was confirmed; the payout comes next.
    CryptoReceived,
    /// Withdrawal: the payout is being sent to the provider (recorded before the send).
    PayoutSubmitting,
    /// Withdrawal: the provider's answer was lost; only its status query decides.
    PayoutUnknown,
    /// Terminal: withdrawal paid out.
    Completed,
    /// Terminal: the payout failed and the stablecoin was returned to the wallet.
    Refunded,
    /// Terminal: rejected, reverted, or proven never to land; no money moved.
    Failed,
}

impl OpStatus {
    /// Every status, in declaration order.
    pub const ALL: [OpStatus; 12] = [
        OpStatus::Queued,
        OpStatus::Pending,
        OpStatus::Submitting,
        OpStatus::Submitted,
        OpStatus::SubmissionUnknown,
        OpStatus::Settled,
        OpStatus::CryptoReceived,
        OpStatus::PayoutSubmitting,
        OpStatus::PayoutUnknown,
        OpStatus::Completed,
        OpStatus::Refunded,
        OpStatus::Failed,
    ];

    /// Wire name, identical to the serde representation.
    pub fn as_str(self) -> &'static str {
        match self {
            OpStatus::Queued => "QUEUED",
            OpStatus::Pending => "PENDING",
            OpStatus::Submitting => "SUBMITTING",
            OpStatus::Submitted => "SUBMITTED",
            OpStatus::SubmissionUnknown => "SUBMISSION_UNKNOWN",
            OpStatus::Settled => "SETTLED",
            OpStatus::CryptoReceived => "CRYPTO_RECEIVED",
            OpStatus::PayoutSubmitting => "PAYOUT_SUBMITTING",
            OpStatus::PayoutUnknown => "PAYOUT_UNKNOWN",
            OpStatus::Completed => "COMPLETED",
            OpStatus::Refunded => "REFUNDED",
            OpStatus::Failed => "FAILED",
        }
    }

    /// SETTLED, COMPLETED, REFUNDED and FAILED are terminal (spec 3.2 rule 2).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            OpStatus::Settled | OpStatus::Completed | OpStatus::Refunded | OpStatus::Failed
        )
    }

    /// Parses an exact wire name (`"SUBMISSION_UNKNOWN"`); anything else is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// Something that happened to an operation; see [`transition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OpEvent {
    /// Worker starts submitting: QUEUED (funding/transfer/swap) or PENDING (withdrawal) -> SUBMITTING.
    Claim,
    /// Rail acknowledged: SUBMITTING -> SUBMITTED.
    Submitted,
    /// Timeout / lost response while submitting: SUBMITTING -> SUBMISSION_UNKNOWN.
    OutcomeUnknown,
    /// Confirmed on chain: SUBMITTED | SUBMISSION_UNKNOWN -> SETTLED (funding/transfer/swap)
    /// or CRYPTO_RECEIVED (withdrawal).
    Confirmed,
    /// Rejected before broadcast, reverted on chain, or found by the reconciler never to
    /// have reached the network: start state | SUBMITTING | SUBMITTED | SUBMISSION_UNKNOWN -> FAILED.
    Failed,
    /// Withdrawal only: CRYPTO_RECEIVED -> PAYOUT_SUBMITTING.
    PayoutStart,
    /// Withdrawal only: PAYOUT_SUBMITTING -> PAYOUT_UNKNOWN.
    PayoutUnknown,
    /// Withdrawal only: PAYOUT_SUBMITTING | PAYOUT_UNKNOWN -> COMPLETED (the caller records
    /// the delivery evidence).
    PayoutDelivered,
    /// Withdrawal only: PAYOUT_SUBMITTING | PAYOUT_UNKNOWN -> REFUNDED (payout could not be
    /// delivered, stablecoin returned to the wallet).
    PayoutRefunded,
}

impl OpEvent {
    /// Every event, in declaration order.
    pub const ALL: [OpEvent; 9] = [
        OpEvent::Claim,
        OpEvent::Submitted,
        OpEvent::OutcomeUnknown,
        OpEvent::Confirmed,
        OpEvent::Failed,
        OpEvent::PayoutStart,
        OpEvent::PayoutUnknown,
        OpEvent::PayoutDelivered,
        OpEvent::PayoutRefunded,
    ];

    fn name(self) -> &'static str {
        match self {
            OpEvent::Claim => "Claim",
            OpEvent::Submitted => "Submitted",
            OpEvent::OutcomeUnknown => "OutcomeUnknown",
            OpEvent::Confirmed => "Confirmed",
            OpEvent::Failed => "Failed",
            OpEvent::PayoutStart => "PayoutStart",
            OpEvent::PayoutUnknown => "PayoutUnknown",
            OpEvent::PayoutDelivered => "PayoutDelivered",
            OpEvent::PayoutRefunded => "PayoutRefunded",
        }
    }
}

/// Start state: QUEUED for funding/transfer/swap, PENDING for withdrawal.
pub fn initial_status(kind: OpKind) -> OpStatus {
    match kind {
        OpKind::Funding | OpKind::Transfer | OpKind::Swap => OpStatus::Queued,
        OpKind::Withdrawal => OpStatus::Pending,
    }
}

/// The one transition function. Every refused move is
/// [`RuleError::InvalidTransition`] (code `INVALID_STATE`).
pub fn transition(kind: OpKind, from: OpStatus, event: OpEvent) -> Result<OpStatus, RuleError> {
    use OpEvent as E;
    use OpStatus as S;

    let start = initial_status(kind);
    let withdrawal = kind == OpKind::Withdrawal;
    let confirmed_target = if withdrawal {
        S::CryptoReceived
    } else {
        S::Settled
    };

    let next = match (from, event) {
        (s, E::Claim) if s == start => Some(S::Submitting),
        (s, E::Failed) if s == start => Some(S::Failed),

        (S::Submitting, E::Submitted) => Some(S::Submitted),
        (S::Submitting, E::OutcomeUnknown) => Some(S::SubmissionUnknown),
        (S::Submitting | S::Submitted | S::SubmissionUnknown, E::Failed) => Some(S::Failed),
        (S::Submitted | S::SubmissionUnknown, E::Confirmed) => Some(confirmed_target),

        (S::CryptoReceived, E::PayoutStart) if withdrawal => Some(S::PayoutSubmitting),
        (S::PayoutSubmitting, E::PayoutUnknown) if withdrawal => Some(S::PayoutUnknown),
        (S::PayoutSubmitting | S::PayoutUnknown, E::PayoutDelivered) if withdrawal => {
            Some(S::Completed)
        }
        (S::PayoutSubmitting | S::PayoutUnknown, E::PayoutRefunded) if withdrawal => {
            Some(S::Refunded)
        }

        _ => None,
    };

    next.ok_or_else(|| RuleError::InvalidTransition {
        machine: kind.as_str(),
        from: from.as_str().to_owned(),
        event: event.name().to_owned(),
    })
}

/// States a kind can ever be in (e.g. transfers are never CRYPTO_RECEIVED), in
/// [`OpStatus::ALL`] order.
pub fn reachable_states(kind: OpKind) -> Vec<OpStatus> {
    use OpStatus as S;
    match kind {
        OpKind::Funding | OpKind::Transfer | OpKind::Swap => vec![
            S::Queued,
            S::Submitting,
            S::Submitted,
            S::SubmissionUnknown,
            S::Settled,
            S::Failed,
        ],
        OpKind::Withdrawal => vec![
            S::Pending,
            S::Submitting,
            S::Submitted,
            S::SubmissionUnknown,
            S::CryptoReceived,
            S::PayoutSubmitting,
            S::PayoutUnknown,
            S::Completed,
            S::Refunded,
            S::Failed,
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet, VecDeque};

    use OpEvent as E;
    use OpKind as K;
    use OpStatus as S;

    /// The expected table, written out by hand, independently of `transition`.
    fn expected_table() -> HashMap<(OpKind, OpStatus, OpEvent), OpStatus> {
        let mut t = HashMap::new();
        for k in [K::Funding, K::Transfer, K::Swap] {
            for (from, ev, to) in [
                (S::Queued, E::Claim, S::Submitting),
                (S::Queued, E::Failed, S::Failed),
                (S::Submitting, E::Submitted, S::Submitted),
                (S::Submitting, E::OutcomeUnknown, S::SubmissionUnknown),
                (S::Submitting, E::Failed, S::Failed),
                (S::Submitted, E::Confirmed, S::Settled),
                (S::Submitted, E::Failed, S::Failed),
                (S::SubmissionUnknown, E::Confirmed, S::Settled),
                (S::SubmissionUnknown, E::Failed, S::Failed),
            ] {
                assert!(t.insert((k, from, ev), to).is_none());
            }
        }
        for (from, ev, to) in [
            (S::Pending, E::Claim, S::Submitting),
            (S::Pending, E::Failed, S::Failed),
            (S::Submitting, E::Submitted, S::Submitted),
            (S::Submitting, E::OutcomeUnknown, S::SubmissionUnknown),
            (S::Submitting, E::Failed, S::Failed),
            (S::Submitted, E::Confirmed, S::CryptoReceived),
            (S::Submitted, E::Failed, S::Failed),
            (S::SubmissionUnknown, E::Confirmed, S::CryptoReceived),
            (S::SubmissionUnknown, E::Failed, S::Failed),
            (S::CryptoReceived, E::PayoutStart, S::PayoutSubmitting),
            (S::PayoutSubmitting, E::PayoutUnknown, S::PayoutUnknown),
            (S::PayoutSubmitting, E::PayoutDelivered, S::Completed),
            (S::PayoutSubmitting, E::PayoutRefunded, S::Refunded),
            (S::PayoutUnknown, E::PayoutDelivered, S::Completed),
            (S::PayoutUnknown, E::PayoutRefunded, S::Refunded),
        ] {
            assert!(t.insert((K::Withdrawal, from, ev), to).is_none());
        }
        t
    }

    #[test]
    fn exhaustive_transition_table() {
        let expected = expected_table();
        assert_eq!(expected.len(), 3 * 9 + 15);
        let mut checked = 0;
        let mut allowed = 0;
        for kind in OpKind::ALL {
            for from in OpStatus::ALL {
                for event in OpEvent::ALL {
                    checked += 1;
                    let got = transition(kind, from, event);
                    match expected.get(&(kind, from, event)) {
                        Some(&to) => {
                            allowed += 1;
                            assert_eq!(got, Ok(to), "{kind:?} {from:?} {event:?}");
                        }
                        None => {
                            let err = got.expect_err(&format!(
                                "{kind:?} {from:?} {event:?} must be refused"
                            ));
                            assert_eq!(err.code(), "INVALID_STATE");
                            match err {
                                RuleError::InvalidTransition {
                                    machine,
                                    from: f,
                                    event: e,
                                } => {
                                    assert_eq!(machine, kind.as_str());
                                    assert_eq!(f, from.as_str());
                                    assert_eq!(e, format!("{event:?}"));
                                }
                                other => panic!("unexpected error {other:?}"),
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 4 * 12 * 9);
        assert_eq!(allowed, expected.len());
    }

    #[test]
    fn terminal_and_unused_states_accept_nothing() {
        for kind in OpKind::ALL {
            let reachable = reachable_states(kind);
            for from in OpStatus::ALL {
                if from.is_terminal() || !reachable.contains(&from) {
                    for event in OpEvent::ALL {
                        assert!(transition(kind, from, event).is_err());
                    }
                }
            }
        }
    }

    #[test]
    fn unknown_states_never_resubmit() {
        for kind in OpKind::ALL {
            for from in [S::SubmissionUnknown, S::PayoutUnknown] {
                for event in OpEvent::ALL {
                    if let Ok(to) = transition(kind, from, event) {
                        assert!(
                            !matches!(to, S::Submitting | S::PayoutSubmitting),
                            "{kind:?} {from:?} -{event:?}-> {to:?}"
                        );
                    }
                }
            }
            for event in OpEvent::ALL {
                let ok = transition(kind, S::SubmissionUnknown, event).is_ok();
                assert_eq!(ok, matches!(event, E::Confirmed | E::Failed));
                let ok = transition(kind, S::PayoutUnknown, event).is_ok();
                assert_eq!(
                    ok,
                    kind == K::Withdrawal
                        && matches!(event, E::PayoutDelivered | E::PayoutRefunded)
                );
            }
        }
    }

    fn successors(kind: OpKind, s: OpStatus) -> Vec<OpStatus> {
        OpEvent::ALL
            .into_iter()
            .filter_map(|e| transition(kind, s, e).ok())
            .collect()
    }

    #[test]
    fn reachability_and_termination() {
        for kind in OpKind::ALL {
            // Forward BFS from the initial state.
            let start = initial_status(kind);
            let mut seen = HashSet::from([start]);
            let mut queue = VecDeque::from([start]);
            while let Some(s) = queue.pop_front() {
                for next in successors(kind, s) {
                    if seen.insert(next) {
                        queue.push_back(next);
                    }
                }
            }
            let declared: HashSet<_> = reachable_states(kind).into_iter().collect();
            assert_eq!(seen, declared, "{kind:?}");
            assert_eq!(declared.len(), reachable_states(kind).len(), "duplicates");

            // Every non-terminal reachable state can reach a terminal one, and
            // terminal states have no successors.
            for &s in &declared {
                if s.is_terminal() {
                    assert!(successors(kind, s).is_empty());
                    continue;
                }
                let mut seen = HashSet::from([s]);
                let mut queue = VecDeque::from([s]);
                let mut found = false;
                while let Some(cur) = queue.pop_front() {
                    if cur.is_terminal() {
                        found = true;
                        break;
                    }
                    for next in successors(kind, cur) {
                        if seen.insert(next) {
                            queue.push_back(next);
                        }
                    }
                }
                assert!(found, "{kind:?} {s:?} cannot terminate");
            }
        }
    }

    #[test]
    fn reachable_states_match_spec() {
        for kind in [K::Funding, K::Transfer, K::Swap] {
            let r = reachable_states(kind);
            assert_eq!(initial_status(kind), S::Queued);
            for s in [
                S::Pending,
                S::CryptoReceived,
                S::PayoutSubmitting,
                S::PayoutUnknown,
                S::Completed,
                S::Refunded,
            ] {
                assert!(!r.contains(&s), "{kind:?} {s:?}");
            }
        }
        assert_eq!(initial_status(K::Withdrawal), S::Pending);
        let r = reachable_states(K::Withdrawal);
        assert!(!r.contains(&S::Queued) && !r.contains(&S::Settled));
    }

    #[test]
    fn status_serde_names_round_trip() {
        assert_eq!(
            serde_json::to_string(&S::SubmissionUnknown).unwrap(),
            "\"SUBMISSION_UNKNOWN\""
        );
        assert_eq!(
            serde_json::from_str::<OpStatus>("\"SUBMISSION_UNKNOWN\"").unwrap(),
            S::SubmissionUnknown
        );
        let mut names = HashSet::new();
        for s in OpStatus::ALL {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<OpStatus>(&json).unwrap(), s);
            assert_eq!(OpStatus::parse(s.as_str()), Some(s));
            assert!(names.insert(s.as_str()));
        }
        assert_eq!(OpStatus::parse("submission_unknown"), None);
        assert_eq!(OpStatus::parse(""), None);
        assert!(serde_json::from_str::<OpStatus>("\"Queued\"").is_err());
    }

    #[test]
    fn kind_and_terminal_names() {
        let prefixes: Vec<_> = OpKind::ALL.iter().map(|k| k.id_prefix()).collect();
        assert_eq!(prefixes, ["fd", "tr", "sw", "wd"]);
        let names: Vec<_> = OpKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, ["funding", "transfer", "swap", "withdrawal"]);
        let terminal: Vec<_> = OpStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(terminal, [S::Settled, S::Completed, S::Refunded, S::Failed]);
    }
}
