//! Payout reconciliation (issue #52 item 4): a payout provider's settlement report
//! (M-Pesa's organisation statement, MTN MoMo's transaction statement; parsed by
//! `stablecoin_providers::settlement_reports`) against our withdrawals' payout legs.
//! Pure: the engine gathers our side (`Engine::reconcile_payouts`), this decides.
//!
//! Each payout ends in exactly one line:
//! - `matched`: both sides have it, same amount (and currency, where the report says);
//! - `amount_differs`: both have it, the amounts (or currencies) differ;
//! - `missing_on_our_side`: the provider paid it, and we have no withdrawal recorded as
//!   paid with that reference (none at all, one not COMPLETED, or a second payment of
//!   a reference already matched);
//! - `missing_on_their_side`: we recorded it paid (COMPLETED, in the period), and the
//!   report has no payment with its reference.

use rust_decimal::Decimal;
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// One payout in the provider's report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TheirPayout {
    /// The provider's reference: M-Pesa's receipt (`Receipt No.`), MTN's financial
    /// transaction id (`Id`). Our withdrawal's `payout_reference` holds the same.
    pub reference: String,
    /// Our payout id when the report carries it (MTN's `External Transaction Id`: the
    /// `externalId` we sent, the withdrawal's id).
    pub external_id: Option<String>,
    /// What was paid, positive, in the currency's major unit.
    pub amount: Decimal,
    /// ISO 4217, when the report says.
    pub currency: Option<String>,
    /// When the provider completed it, as the report writes it.
    pub at: String,
    /// The report's line number (1-based, counting every line of the file).
    pub line: usize,
}

/// One of our withdrawals' payout legs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OurPayout {
    /// The withdrawal (`wd_...`, also our payout id).
    pub withdrawal: String,
    /// The tenant's withdrawal status (`COMPLETED`, `PAYOUT_SUBMITTING`, ...).
    pub status: String,
    /// The provider's reference we recorded, once COMPLETED.
    pub reference: Option<String>,
    /// The payout amount, in the currency's major unit.
    pub amount: Decimal,
    /// ISO 4217.
    pub currency: String,
    /// Whether the payout belongs to the reconciled period (completed in it): only
    /// those can be missing on the provider's side. Others are only looked up.
    pub in_period: bool,
}

/// How one payout compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Both sides, same amount.
    Matched,
    /// Both sides, different amounts (or currencies).
    AmountDiffers,
    /// In the report, not paid on our side.
    MissingOnOurSide,
    /// Paid on our side, not in the report.
    MissingOnTheirSide,
}

/// One line of a reconciliation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconLine {
    /// How it compares.
    pub outcome: Outcome,
    /// Our withdrawal, when one was found.
    pub withdrawal: Option<String>,
    /// Its status, when one was found.
    pub status: Option<String>,
    /// The provider's reference (theirs, or ours when they have none).
    pub reference: Option<String>,
    /// Our amount.
    pub our_amount: Option<Decimal>,
    /// Their amount.
    pub their_amount: Option<Decimal>,
    /// Our currency, or theirs when we have none.
    pub currency: Option<String>,
    /// The report's line.
    pub report_line: Option<usize>,
}

/// Compares the report with our payouts: one line per report payout (in report
/// order), then one per payout of ours in the period the report lacks.
pub fn reconcile(ours: &[OurPayout], theirs: &[TheirPayout]) -> Vec<ReconLine> {
    let by_ref: HashMap<&str, usize> = ours
        .iter()
        .enumerate()
        .filter_map(|(i, o)| o.reference.as_deref().map(|r| (r, i)))
        .collect();
    let by_id: HashMap<&str, usize> = ours
        .iter()
        .enumerate()
        .map(|(i, o)| (o.withdrawal.as_str(), i))
        .collect();
    let mut seen: HashSet<usize> = HashSet::new();
    let mut out = Vec::with_capacity(theirs.len());
    for t in theirs {
        let found = by_ref
            .get(t.reference.as_str())
            .or_else(|| t.external_id.as_deref().and_then(|id| by_id.get(id)))
            .copied();
        let line = |outcome, o: Option<&OurPayout>| ReconLine {
            outcome,
            withdrawal: o.map(|o| o.withdrawal.clone()),
            status: o.map(|o| o.status.clone()),
            reference: Some(t.reference.clone()),
            our_amount: o.map(|o| o.amount),
            their_amount: Some(t.amount),
            currency: o.map(|o| o.currency.clone()).or_else(|| t.currency.clone()),
            report_line: Some(t.line),
        };
        let Some(i) = found else {
            out.push(line(Outcome::MissingOnOurSide, None));
            continue;
        };
        let o = &ours[i];
        // A second payment of one payout, or one we never recorded as paid.
        if o.status != "COMPLETED" || !seen.insert(i) {
            out.push(line(Outcome::MissingOnOurSide, Some(o)));
            continue;
        }
        let same_currency = t
            .currency
            .as_deref()
            .is_none_or(|c| c.eq_ignore_ascii_case(&o.currency));
        let outcome = if o.amount == t.amount && same_currency {
            Outcome::Matched
        } else {
            Outcome::AmountDiffers
        };
        out.push(line(outcome, Some(o)));
    }
    for (i, o) in ours.iter().enumerate() {
        if o.in_period && o.status == "COMPLETED" && !seen.contains(&i) {
            out.push(ReconLine {
                outcome: Outcome::MissingOnTheirSide,
                withdrawal: Some(o.withdrawal.clone()),
                status: Some(o.status.clone()),
                reference: o.reference.clone(),
                our_amount: Some(o.amount),
                their_amount: None,
                currency: Some(o.currency.clone()),
                report_line: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ours(i: usize, amount: i64) -> OurPayout {
        OurPayout {
            withdrawal: format!("wd_{i}"),
            status: "COMPLETED".into(),
            reference: Some(format!("R{i}")),
            amount: Decimal::new(amount, 0),
            currency: "KES".into(),
            in_period: true,
        }
    }

    fn theirs(o: &OurPayout, line: usize) -> TheirPayout {
        TheirPayout {
            reference: o.reference.clone().unwrap(),
            external_id: None,
            amount: o.amount,
            currency: Some(o.currency.clone()),
            at: "2026-11-29 10:00:00".into(),
            line,
        }
    }

    fn count(lines: &[ReconLine], o: Outcome) -> usize {
        lines.iter().filter(|l| l.outcome == o).count()
    }

    #[test]
    fn each_kind_of_mismatch_is_flagged() {
        let ours_v = vec![ours(1, 100), ours(2, 200), ours(3, 300)];
        let mut report = vec![theirs(&ours_v[0], 2), theirs(&ours_v[1], 3)];
        report[1].amount = Decimal::new(199, 0);
        report.push(TheirPayout {
            reference: "STRANGER".into(),
            ..theirs(&ours_v[0], 4)
        });
        let lines = reconcile(&ours_v, &report);
        let outcome = |w: &str| {
            lines
                .iter()
                .find(|l| l.withdrawal.as_deref() == Some(w))
                .unwrap()
                .outcome
        };
        assert_eq!(outcome("wd_1"), Outcome::Matched);
        assert_eq!(outcome("wd_2"), Outcome::AmountDiffers);
        assert_eq!(outcome("wd_3"), Outcome::MissingOnTheirSide);
        let stranger = lines.iter().find(|l| l.withdrawal.is_none()).unwrap();
        assert_eq!(stranger.outcome, Outcome::MissingOnOurSide);
        assert_eq!(stranger.report_line, Some(4));
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn a_payout_not_completed_here_or_paid_twice_is_missing_on_our_side() {
        let mut pending = ours(1, 100);
        pending.status = "PAYOUT_UNKNOWN".into();
        pending.reference = None;
        let paid = ours(2, 50);
        let by_external = TheirPayout {
            reference: "MTN-1".into(),
            external_id: Some("wd_1".into()),
            ..theirs(&paid, 2)
        };
        let lines = reconcile(
            &[pending, paid.clone()],
            &[by_external, theirs(&paid, 3), theirs(&paid, 4)],
        );
        assert_eq!(lines[0].outcome, Outcome::MissingOnOurSide);
        assert_eq!(lines[0].withdrawal.as_deref(), Some("wd_1"));
        assert_eq!(lines[1].outcome, Outcome::Matched);
        assert_eq!(lines[2].outcome, Outcome::MissingOnOurSide, "paid twice");
        assert_eq!(lines.len(), 3);
    }

    proptest! {
        /// Whatever is planted, every payout of either side is on exactly one line, and
        /// the counts are the ones planted.
        #[test]
        fn every_payout_lands_on_one_line(
            plan in proptest::collection::vec(0u8..4, 0..40),
        ) {
            let mut our = Vec::new();
            let mut their = Vec::new();
            for (i, p) in plan.iter().enumerate() {
                let o = ours(i, 10 + i as i64);
                match p {
                    0 => { their.push(theirs(&o, i)); our.push(o); }
                    1 => {
                        let mut t = theirs(&o, i);
                        t.amount += Decimal::ONE;
                        their.push(t);
                        our.push(o);
                    }
                    2 => our.push(o),
                    _ => their.push(theirs(&o, i)),
                }
            }
            let lines = reconcile(&our, &their);
            let planted = |k: u8| plan.iter().filter(|p| **p == k).count();
            prop_assert_eq!(count(&lines, Outcome::Matched), planted(0));
            prop_assert_eq!(count(&lines, Outcome::AmountDiffers), planted(1));
            prop_assert_eq!(count(&lines, Outcome::MissingOnTheirSide), planted(2));
            prop_assert_eq!(count(&lines, Outcome::MissingOnOurSide), planted(3));
            prop_assert_eq!(lines.len(), plan.len());
        }
    }
}
