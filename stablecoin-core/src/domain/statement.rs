//! Account statements (issue #52 item 2): an account's opening balance at the start of
//! a period, every posting in it with its operation and counterparty, and its closing
//! balance, computed from one consistent read of the ledger
//! (`Ledger::entries_since`, a port the domain does not name) so that
//! `opening + sum(entries) = closing = the ledger's posted balance at the period's end`,
//! to the micro-unit, by construction and checked before a statement is returned.
//!
//! A statement is of the **posted** balance (what the balance endpoints show as the
//! balance): a two-phase transfer's reservation (`Pending`) and its release (`Void`)
//! move no posted money and are not entries; its posting (`Post`) is, at the time it was
//! posted.
//!
//! Times are the ledger's commit times. Periods are half-open, `[from, to)`: a posting
//! at `to` belongs to the next period, so consecutive statements chain (one's closing is
//! the next one's opening).

use crate::domain::ledger_types::{AccountEntries, Phase, TimedEntry};
use crate::domain::money::Micros;
use crate::domain::time::Timestamp;

/// The most entries one statement holds; a longer period is refused (ask for shorter
/// ones: they chain).
pub const MAX_STATEMENT_ENTRIES: usize = 50_000;

/// Money in or out of the account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The account was credited (its balance went up).
    Credit,
    /// The account was debited.
    Debit,
}

impl Direction {
    /// `credit` / `debit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Credit => "credit",
            Direction::Debit => "debit",
        }
    }
}

/// One posting of a statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementEntry {
    /// When it was posted (`None` only on a store that does not record ledger times).
    pub at: Option<Timestamp>,
    /// The ledger transfer (`tr_...:post`, `dep:...`): unique, the reconciliation key.
    pub ledger_transfer: String,
    /// The operation it belongs to (`tr_...`, `fd_...`, `tu_...`, `cs_...`), or the
    /// ledger transfer itself when its id names none.
    pub operation: String,
    /// What kind of operation (`transfer`, `funding`, `swap`, `withdrawal`, `topup`,
    /// `deposit`, `treasury_credit`, `checkout`, `escrow`, `other`).
    pub operation_type: &'static str,
    /// In or out.
    pub direction: Direction,
    /// The amount moved (always positive; `direction` gives the sign).
    pub amount: Micros,
    /// The account's posted balance after this posting.
    pub balance_after: i128,
    /// The other side, named without internal detail (see [`counterparty`]).
    pub counterparty: String,
}

/// An account's statement over `[from, to)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// Start of the period (`None`: the account's first posting).
    pub from: Option<Timestamp>,
    /// End of the period, exclusive (`None`: the moment of the read).
    pub to: Option<Timestamp>,
    /// Posted balance at `from`.
    pub opening: i128,
    /// The postings in the period, oldest first.
    pub entries: Vec<StatementEntry>,
    /// Posted balance at `to`: `opening` plus every entry, and the ledger's balance then.
    pub closing: i128,
}

/// Why no statement: the period cannot be answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatementRefusal {
    /// `to` is not after `from`.
    EmptyPeriod,
    /// The store does not record ledger times, so only the whole history can be stated
    /// (no `from`, no `to`).
    PeriodNeedsLedgerTimes,
    /// More than [`MAX_STATEMENT_ENTRIES`] postings in the period.
    TooManyEntries,
    /// The read did not add up (a store bug): never shown as a statement.
    Unbalanced,
}

/// The signed effect of an entry on `account`'s posted balance; `None` for a
/// reservation or a release (no posted money moves).
fn effect(account: &str, e: &TimedEntry) -> Option<(Direction, i128)> {
    if matches!(e.entry.phase, Phase::Pending | Phase::Void { .. }) {
        return None;
    }
    let amount = i128::from(e.entry.amount.0);
    if e.entry.credit == account {
        Some((Direction::Credit, amount))
    } else if e.entry.debit == account {
        Some((Direction::Debit, -amount))
    } else {
        None
    }
}

/// The statement of `account` over `[from, to)` from `read`, the answer of
/// `entries_since(account, from)` (the caller reads it once, then calls this).
pub fn build(
    account: &str,
    read: &AccountEntries,
    from: Option<Timestamp>,
    to: Option<Timestamp>,
) -> Result<Statement, StatementRefusal> {
    if let (Some(f), Some(t)) = (from, to)
        && t <= f
    {
        return Err(StatementRefusal::EmptyPeriod);
    }
    if !read.timed && (from.is_some() || to.is_some()) {
        return Err(StatementRefusal::PeriodNeedsLedgerTimes);
    }
    let now = read.balance.posted();
    // Every listed posting is at or after `from`: the balance before all of them is the
    // opening one. Those at or after `to` are after the period.
    let listed: Vec<(&TimedEntry, Direction, i128)> = read
        .entries
        .iter()
        .filter(|e| from.is_none_or(|f| e.committed_at.is_some_and(|at| at >= f)))
        .filter_map(|e| effect(account, e).map(|(d, x)| (e, d, x)))
        .collect();
    let total: i128 = listed.iter().map(|(_, _, x)| x).sum();
    let opening = now - total;
    let in_period = |e: &TimedEntry| to.is_none_or(|t| e.committed_at.is_some_and(|at| at < t));
    let mut balance = opening;
    let mut entries = Vec::new();
    for (e, direction, x) in listed.iter().filter(|(e, _, _)| in_period(e)) {
        if entries.len() >= MAX_STATEMENT_ENTRIES {
            return Err(StatementRefusal::TooManyEntries);
        }
        balance += x;
        let other = match direction {
            Direction::Credit => &e.entry.debit,
            Direction::Debit => &e.entry.credit,
        };
        let (operation, operation_type) = operation_of(&e.entry.transfer_id);
        entries.push(StatementEntry {
            at: e.committed_at,
            ledger_transfer: e.entry.transfer_id.clone(),
            operation,
            operation_type,
            direction: *direction,
            amount: e.entry.amount,
            balance_after: balance,
            counterparty: counterparty(other),
        });
    }
    let after: i128 = listed
        .iter()
        .filter(|(e, _, _)| !in_period(e))
        .map(|(_, _, x)| x)
        .sum();
    let closing = now - after;
    if balance != closing {
        return Err(StatementRefusal::Unbalanced);
    }
    Ok(Statement {
        from,
        to,
        opening,
        entries,
        closing,
    })
}

/// The operation a ledger transfer belongs to, and its type. Operation ids lead the
/// transfer ids the engines write (`tr_...:post`, `sw_...:in`, `tu_...`); other transfers
/// are named by their own id (`dep:...`, `credit:...`, `checkout:...`).
pub fn operation_of(transfer_id: &str) -> (String, &'static str) {
    let head = transfer_id.split(':').next().unwrap_or(transfer_id);
    let by_prefix = |p: &str| match p {
        "tr" => Some("transfer"),
        "fd" => Some("funding"),
        "sw" => Some("swap"),
        "wd" => Some("withdrawal"),
        "tu" => Some("topup"),
        "cs" => Some("checkout"),
        "rf" => Some("refund"),
        "esc" => Some("escrow"),
        _ => None,
    };
    if let Some((prefix, rest)) = head.split_once('_')
        && !rest.is_empty()
        && let Some(kind) = by_prefix(prefix)
    {
        return (head.to_string(), kind);
    }
    let kind = match head {
        "dep" => "deposit",
        "credit" => "treasury_credit",
        "checkout" => "checkout",
        "escrow" | "escrow_dep" => "escrow",
        _ => "other",
    };
    (transfer_id.to_string(), kind)
}

/// The other side of a posting, as a statement names it: the kind of account and its
/// public id, never a tenant id or an internal account name.
///
/// `wallet:<id>`, `treasury`, `service_fees`, `tenant_fees`, `chain:<network>`,
/// `fiat`, `swap_venue:<venue>`, `checkout_session:<cs_...>`, `checkout_refundable:<biz>`,
/// `checkout_refund:<rf_...>`, `escrow`, `external`.
pub fn counterparty(account: &str) -> String {
    let parts: Vec<&str> = account.split(':').collect();
    match parts.as_slice() {
        ["wallet", w, ..] => format!("wallet:{w}"),
        ["treasury", ..] => "treasury".into(),
        ["fees", "service", ..] => "service_fees".into(),
        ["fees", "tenant", ..] => "tenant_fees".into(),
        ["chain_in", rail, ..] => format!("chain:{rail}"),
        ["fiat_in", ..] => "fiat".into(),
        ["swap_venue", venue, ..] => format!("swap_venue:{venue}"),
        ["checkout_held", session, ..] => format!("checkout_session:{session}"),
        ["checkout_refundable", _, business, ..] => format!("checkout_refundable:{business}"),
        ["checkout_refund", refund, ..] => format!("checkout_refund:{refund}"),
        [first, ..] if first.starts_with("escrow") => "escrow".into(),
        _ => "external".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ledger_types::{Balance, LedgerEntry};

    fn e(id: &str, debit: &str, credit: &str, amount: u64, phase: Phase, at: i64) -> TimedEntry {
        TimedEntry {
            entry: LedgerEntry {
                transfer_id: id.into(),
                debit: debit.into(),
                credit: credit.into(),
                amount: Micros(amount),
                phase,
            },
            committed_at: Some(Timestamp::from_millis(at)),
        }
    }

    #[test]
    fn opening_plus_entries_is_closing_and_periods_chain() {
        let acct = "wallet:w1:USDC";
        let entries = vec![
            e("fd_1:post", "treasury:t:USDC", acct, 100, Phase::Single, 10),
            e("tr_1", acct, "wallet:w2:USDC", 30, Phase::Pending, 20),
            e(
                "tr_1:post",
                acct,
                "wallet:w2:USDC",
                30,
                Phase::Post {
                    pending_id: "tr_1".into(),
                },
                30,
            ),
            e("tr_2", acct, "wallet:w2:USDC", 5, Phase::Pending, 40),
            e(
                "tr_2:void",
                acct,
                "wallet:w2:USDC",
                5,
                Phase::Void {
                    pending_id: "tr_2".into(),
                },
                50,
            ),
            e("dep:9", "chain_in:polygon:USDC", acct, 7, Phase::Single, 60),
        ];
        let read = AccountEntries {
            balance: Balance {
                credits_posted: 107,
                debits_posted: 30,
                ..Default::default()
            },
            entries,
            timed: true,
        };
        let t = |ms| Some(Timestamp::from_millis(ms));
        let whole = build(acct, &read, None, None).unwrap();
        assert_eq!(
            (whole.opening, whole.closing, whole.entries.len()),
            (0, 77, 3)
        );
        let a = build(acct, &read, None, t(30)).unwrap();
        let b = build(acct, &read, t(30), t(61)).unwrap();
        assert_eq!((a.opening, a.closing), (0, 100));
        assert_eq!(
            (b.opening, b.closing),
            (100, 77),
            "one's closing is the next's opening"
        );
        assert_eq!(b.entries[0].operation, "tr_1");
        assert_eq!(b.entries[0].operation_type, "transfer");
        assert_eq!(b.entries[0].counterparty, "wallet:w2");
        assert_eq!(b.entries[0].direction, Direction::Debit);
        assert_eq!(b.entries[1].operation_type, "deposit");
        assert_eq!(b.entries[1].counterparty, "chain:polygon");
        assert_eq!(b.entries[1].balance_after, 77);
        assert_eq!(
            build(acct, &read, t(30), t(30)),
            Err(StatementRefusal::EmptyPeriod)
        );
        let untimed = AccountEntries {
            timed: false,
            ..read
        };
        assert_eq!(
            build(acct, &untimed, t(1), None),
            Err(StatementRefusal::PeriodNeedsLedgerTimes)
        );
    }

    #[test]
    fn counterparties_name_no_tenant() {
        assert_eq!(counterparty("treasury:ten_secret:USDC"), "treasury");
        assert_eq!(counterparty("fees:tenant:ten_secret:USDC"), "tenant_fees");
        assert_eq!(
            counterparty("checkout_refundable:ten_x:biz_1:USDC"),
            "checkout_refundable:biz_1"
        );
        assert_eq!(
            counterparty("checkout_held:cs_1:USDT"),
            "checkout_session:cs_1"
        );
        assert_eq!(counterparty("wallet:w9:tron:USDT"), "wallet:w9");
        assert_eq!(operation_of("credit:ten_x:wire-1").1, "treasury_credit");
        assert_eq!(operation_of("tu_abc").0, "tu_abc");
    }
}
