//! The ledger rules, written once for every store: accounts and two-phase transfers
//! (TigerBeetle's model, the contract of [`crate::ports::ledger`]) decided in memory,
//! synchronously, over the rows a store already holds.
//!
//! Why one module: a store owns where the ledger rows live, but what a transfer may do
//! is the same for every store, and two copies of the rules drift (an error code, an
//! overflow check, the order of checks). So a store does not apply transfers itself. It
//! shows the rules its rows through a [`LedgerView`], applies a batch's accounts and
//! transfers, in order, to an [`Overlay`] over that view, and writes the
//! [`LedgerChanges`] the overlay returns (final states only) however it stores them:
//!
//! - `MemoryStore` reads its own maps (a missing row is simply absent) and merges the
//!   changes once the whole batch has passed, so a failed batch has nothing to undo;
//! - a SQL store loads the rows a batch may read into [`Known`] first ([`needed_ids`]
//!   lists them; PostgreSQL locks them `FOR UPDATE`), then writes the changes with a few
//!   statements. The SQLite writer keeps its `Known` across the batches of a group and
//!   [`Known::merge`]s each kept batch's changes.
//!
//! A third-party store does the same: implement [`LedgerView`] (or fill a [`Known`]),
//! run the batch through an [`Overlay`], write the changes in the batch's transaction.
//!
//! The rules, with the error each breach returns (checked in this order):
//! - a transfer id is applied once: the same id with the same fields is a no-op, with
//!   other fields `TransferExists`;
//! - an amount is positive and at most [`MAX_AMOUNT_MICROS`], debit and credit differ
//!   (`InvalidTransfer`); both accounts exist (`UnknownAccount`);
//! - `Post`/`Void` name a pending transfer (`PendingNotFound`) not yet resolved
//!   (`PendingResolved`) with the same accounts and amount (`InvalidTransfer`);
//! - no account sum passes [`MAX_AMOUNT_MICROS`] (`InvalidTransfer`, "overflows");
//! - an account without `allow_negative` never has
//!   `debits_posted + debits_pending > credits_posted` (`InsufficientFunds`).
//!
//! Accounts are created if absent; the same id with other flags is `AccountExists`.

use crate::domain::ledger_types::{Balance, LedgerAccount, LedgerError, LedgerTransfer, Phase};
use std::collections::{HashMap, HashSet};

/// The largest amount, and the largest account sum, any store holds: `i64::MAX`
/// (2^63 - 1 micro-units), what a signed 64-bit SQL integer stores. Every store refuses
/// a transfer beyond it, or one that would push a sum beyond it, with the same
/// `InvalidTransfer`, so a batch means the same thing in memory as on disk.
pub const MAX_AMOUNT_MICROS: u64 = i64::MAX as u64;

/// An account as the rules see it: its flags and its sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccountState {
    /// See [`LedgerAccount::allow_negative`].
    pub allow_negative: bool,
    /// Its four sums.
    pub balance: Balance,
}

/// An applied transfer as the rules see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferState {
    /// The transfer as it was applied.
    pub transfer: LedgerTransfer,
    /// For a pending transfer: posted or voided already.
    pub resolved: bool,
}

/// The ledger as it stands before a batch: what [`Overlay`] reads.
///
/// `Ok(None)` means the row does not exist. `Err` means the view cannot tell (a store
/// that loads rows ahead of the rules and did not load this one); the rules pass the
/// error on rather than take a missing row for an absent one.
pub trait LedgerView {
    /// The account with this id.
    fn account(&self, id: &str) -> Result<Option<AccountState>, LedgerError>;
    /// The applied transfer with this id.
    fn transfer(&self, id: &str) -> Result<Option<&TransferState>, LedgerError>;
}

/// Rows a store loaded for the rules: `Some` for a row that exists, `None` for one known
/// not to exist. An id not in the map was not loaded, and reading it is a
/// `LedgerError::Backend` (a bug in what the store loaded, never a silent absence).
#[derive(Clone, Debug, Default)]
pub struct Known {
    /// Account id -> the account, or `None`: known not to exist.
    pub accounts: HashMap<String, Option<AccountState>>,
    /// Transfer id -> the transfer, or `None`: known not to exist.
    pub transfers: HashMap<String, Option<TransferState>>,
}

fn not_loaded(what: &str, id: &str) -> LedgerError {
    LedgerError::Backend(format!("internal: {what} {id} was not loaded before use"))
}

impl LedgerView for Known {
    fn account(&self, id: &str) -> Result<Option<AccountState>, LedgerError> {
        match self.accounts.get(id) {
            Some(a) => Ok(*a),
            None => Err(not_loaded("account", id)),
        }
    }

    fn transfer(&self, id: &str) -> Result<Option<&TransferState>, LedgerError> {
        match self.transfers.get(id) {
            Some(t) => Ok(t.as_ref()),
            None => Err(not_loaded("transfer", id)),
        }
    }
}

impl Known {
    /// Takes in the changes of a batch that was kept, so the next batch over the same
    /// `Known` sees them (the SQLite writer keeps one across the batches of a group).
    pub fn merge(&mut self, changes: &LedgerChanges) {
        for a in &changes.accounts {
            self.accounts.insert(a.id.clone(), Some(a.state));
        }
        for t in &changes.new_transfers {
            self.transfers
                .insert(t.transfer.id.clone(), Some(t.clone()));
        }
        for id in &changes.resolved {
            if let Some(Some(t)) = self.transfers.get_mut(id) {
                t.resolved = true;
            }
        }
    }
}

/// Appends the ids of every account and transfer (own and pending) the rules may read
/// for these accounts and transfers: what a store loads into [`Known`]. Ids may repeat;
/// sort and deduplicate them before loading.
pub fn needed_ids(
    batch_accounts: &[LedgerAccount],
    batch_ledger: &[LedgerTransfer],
    accounts: &mut Vec<String>,
    transfers: &mut Vec<String>,
) {
    for a in batch_accounts {
        accounts.push(a.id.clone());
    }
    for t in batch_ledger {
        accounts.push(t.debit.clone());
        accounts.push(t.credit.clone());
        transfers.push(t.id.clone());
        if let Phase::Post { pending_id } | Phase::Void { pending_id } = &t.phase {
            transfers.push(pending_id.clone());
        }
    }
}

/// An account a batch created or whose sums it changed, with its final state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountChange {
    /// The account id.
    pub id: String,
    /// Its state after the batch.
    pub state: AccountState,
    /// The batch created it (insert rather than update).
    pub created: bool,
}

/// What a batch's ledger part writes: final states only, whatever the batch's steps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LedgerChanges {
    /// Created or changed accounts, in first-touch order.
    pub accounts: Vec<AccountChange>,
    /// Transfers the batch applied, in order (the accounts' history order), each with
    /// its final `resolved` flag (a pending transfer posted in the same batch is
    /// written resolved already).
    pub new_transfers: Vec<TransferState>,
    /// Pending transfers from before the batch that it posted or voided.
    pub resolved: Vec<String>,
}

/// One batch's ledger decisions: its own changes over a [`LedgerView`], which it never
/// changes. Apply the batch's accounts, then its transfers, in order; the first error is
/// the batch's error. [`Overlay::into_changes`] gives what to write.
pub struct Overlay<'v, V: LedgerView + ?Sized> {
    view: &'v V,
    accounts: HashMap<String, AccountState>,
    transfers: HashMap<String, TransferState>,
    created: HashSet<String>,
    touched: Vec<String>,
    new_transfers: Vec<String>,
    resolved_existing: Vec<String>,
}

/// `a + b` if it stays within what every store can hold.
fn add(a: u64, b: u64) -> Option<u64> {
    a.checked_add(b).filter(|s| *s <= MAX_AMOUNT_MICROS)
}

/// How one transfer moves an account's four sums, as signed deltas:
/// `(debits_posted, debits_pending, credits_posted, credits_pending)`.
fn deltas(before: &Balance, after: &Balance) -> [i128; 4] {
    let d = |b: u64, a: u64| i128::from(a) - i128::from(b);
    [
        d(before.debits_posted, after.debits_posted),
        d(before.debits_pending, after.debits_pending),
        d(before.credits_posted, after.credits_posted),
        d(before.credits_pending, after.credits_pending),
    ]
}

/// Asserts (debug builds, tests, the `sim` profile) what a validated transfer is about
/// to apply, given the debit's and the credit's balances `[debit, credit]` before and
/// after:
/// - conservation: the debit account's debit sums and the credit account's credit sums
///   move by the same amounts, the transfer's phase says which (`Single` +amount
///   posted, `Pending` +amount pending, `Post` pending to posted, `Void` -amount
///   pending), and nothing else moves;
/// - an account without `allow_negative` is not negative afterwards
///   (`debits_posted + debits_pending <= credits_posted`).
///
/// The release build enforces the second with `InsufficientFunds` before this point;
/// this guards the arithmetic between the rules and the write.
fn check_applied(
    t: &LedgerTransfer,
    before: [Balance; 2],
    after: [Balance; 2],
    debit_may_go_negative: bool,
) {
    let amount = i128::from(t.amount.0);
    let (posted, pending) = match t.phase {
        Phase::Single => (amount, 0),
        Phase::Pending => (0, amount),
        Phase::Post { .. } => (amount, -amount),
        Phase::Void { .. } => (0, -amount),
    };
    let debit = deltas(&before[0], &after[0]);
    let credit = deltas(&before[1], &after[1]);
    debug_assert_eq!(
        debit,
        [posted, pending, 0, 0],
        "ledger transfer {} moved the debit account {} off its phase",
        t.id,
        t.debit
    );
    debug_assert_eq!(
        credit,
        [0, 0, posted, pending],
        "ledger transfer {} moved the credit account {} off its phase",
        t.id,
        t.credit
    );
    let d = &after[0];
    debug_assert!(
        debit_may_go_negative
            || u128::from(d.debits_posted) + u128::from(d.debits_pending)
                <= u128::from(d.credits_posted),
        "ledger transfer {} left the non-negative account {} negative: {d:?}",
        t.id,
        t.debit
    );
}

impl<'v, V: LedgerView + ?Sized> Overlay<'v, V> {
    /// An overlay with no changes yet.
    pub fn new(view: &'v V) -> Self {
        Overlay {
            view,
            accounts: HashMap::new(),
            transfers: HashMap::new(),
            created: HashSet::new(),
            touched: Vec::new(),
            new_transfers: Vec::new(),
            resolved_existing: Vec::new(),
        }
    }

    fn account(&self, id: &str) -> Result<Option<AccountState>, LedgerError> {
        match self.accounts.get(id) {
            Some(a) => Ok(Some(*a)),
            None => self.view.account(id),
        }
    }

    fn transfer_state(&self, id: &str) -> Result<Option<&TransferState>, LedgerError> {
        match self.transfers.get(id) {
            Some(t) => Ok(Some(t)),
            None => self.view.transfer(id),
        }
    }

    fn set_account(&mut self, id: &str, state: AccountState) {
        if self.accounts.insert(id.to_string(), state).is_none() {
            self.touched.push(id.to_string());
        }
    }

    /// Creates an account if absent; the same id with other flags is `AccountExists`.
    pub fn create_account(&mut self, account: &LedgerAccount) -> Result<(), LedgerError> {
        match self.account(&account.id)? {
            Some(existing) if existing.allow_negative != account.allow_negative => {
                Err(LedgerError::AccountExists {
                    account: account.id.clone(),
                })
            }
            Some(_) => Ok(()),
            None => {
                self.created.insert(account.id.clone());
                self.set_account(
                    &account.id,
                    AccountState {
                        allow_negative: account.allow_negative,
                        balance: Balance::default(),
                    },
                );
                Ok(())
            }
        }
    }

    /// Applies one transfer by the rules of the module doc. On `Err` nothing of this
    /// transfer is applied (the overlay keeps the batch's earlier steps; a store drops
    /// the whole overlay, since the batch fails).
    pub fn transfer(&mut self, t: &LedgerTransfer) -> Result<(), LedgerError> {
        if let Some(existing) = self.transfer_state(&t.id)? {
            return if existing.transfer == *t {
                Ok(())
            } else {
                Err(LedgerError::TransferExists { id: t.id.clone() })
            };
        }
        let invalid = |reason: &str| LedgerError::InvalidTransfer {
            id: t.id.clone(),
            reason: reason.to_string(),
        };
        if t.amount.0 == 0 {
            return Err(invalid("amount must be positive"));
        }
        if t.amount.0 > MAX_AMOUNT_MICROS {
            return Err(invalid(
                "amount exceeds the store's limit of 9223372036854775807 micro-units (2^63 - 1)",
            ));
        }
        if t.debit == t.credit {
            return Err(invalid("debit and credit accounts are the same"));
        }
        let mut states = [None, None];
        for (slot, account) in states.iter_mut().zip([&t.debit, &t.credit]) {
            *slot = self.account(account)?;
            if slot.is_none() {
                return Err(LedgerError::unknown_account(account));
            }
        }
        let [Some(debit_state), Some(credit_state)] = states else {
            return Err(not_loaded("account", &t.debit));
        };
        let amount = t.amount.0;
        let overflow = || invalid("amount overflows the account sums");
        let debit_before = debit_state.balance;
        let mut debit = debit_before;
        let mut credit = credit_state.balance;
        let mut resolves = None;
        match &t.phase {
            Phase::Single => {
                debit.debits_posted = add(debit.debits_posted, amount).ok_or_else(overflow)?;
                credit.credits_posted = add(credit.credits_posted, amount).ok_or_else(overflow)?;
            }
            Phase::Pending => {
                debit.debits_pending = add(debit.debits_pending, amount).ok_or_else(overflow)?;
                credit.credits_pending =
                    add(credit.credits_pending, amount).ok_or_else(overflow)?;
            }
            Phase::Post { pending_id } | Phase::Void { pending_id } => {
                let pending = match self.transfer_state(pending_id)? {
                    Some(p) if p.transfer.phase == Phase::Pending => p,
                    _ => {
                        return Err(LedgerError::PendingNotFound {
                            id: pending_id.clone(),
                        });
                    }
                };
                if pending.resolved {
                    return Err(LedgerError::PendingResolved {
                        id: pending_id.clone(),
                    });
                }
                let p = &pending.transfer;
                if p.debit != t.debit || p.credit != t.credit || p.amount != t.amount {
                    return Err(invalid(
                        "debit, credit and amount must equal the pending transfer's",
                    ));
                }
                let pending = pending.clone();
                // The pending amounts are on the accounts, so these cannot underflow;
                // checked anyway so a corrupt row is an error, not a wrap.
                let corrupt = || {
                    LedgerError::Backend(format!(
                        "corrupt ledger: pending sums of {} / {} below pending {}",
                        t.debit, t.credit, pending_id
                    ))
                };
                debit.debits_pending = debit
                    .debits_pending
                    .checked_sub(amount)
                    .ok_or_else(corrupt)?;
                credit.credits_pending = credit
                    .credits_pending
                    .checked_sub(amount)
                    .ok_or_else(corrupt)?;
                if matches!(t.phase, Phase::Post { .. }) {
                    debit.debits_posted = add(debit.debits_posted, amount).ok_or_else(overflow)?;
                    credit.credits_posted =
                        add(credit.credits_posted, amount).ok_or_else(overflow)?;
                }
                resolves = Some(pending);
            }
        }
        if !debit_state.allow_negative
            && (debit.debits_posted as u128 + debit.debits_pending as u128)
                > debit.credits_posted as u128
        {
            return Err(LedgerError::InsufficientFunds {
                account: t.debit.clone(),
                available: debit_before.available(),
                needed: amount,
            });
        }
        check_applied(
            t,
            [debit_before, credit_state.balance],
            [debit, credit],
            debit_state.allow_negative,
        );
        // Validated: apply.
        if let Some(mut pending) = resolves {
            let id = pending.transfer.id.clone();
            pending.resolved = true;
            if !self.transfers.contains_key(&id) {
                self.resolved_existing.push(id.clone());
            }
            self.transfers.insert(id, pending);
        }
        self.set_account(
            &t.debit,
            AccountState {
                allow_negative: debit_state.allow_negative,
                balance: debit,
            },
        );
        self.set_account(
            &t.credit,
            AccountState {
                allow_negative: credit_state.allow_negative,
                balance: credit,
            },
        );
        self.new_transfers.push(t.id.clone());
        self.transfers.insert(
            t.id.clone(),
            TransferState {
                transfer: t.clone(),
                resolved: false,
            },
        );
        Ok(())
    }

    /// The batch's writes, final states only.
    pub fn into_changes(mut self) -> LedgerChanges {
        let accounts = self
            .touched
            .iter()
            .map(|id| AccountChange {
                id: id.clone(),
                state: self.accounts[id],
                created: self.created.contains(id),
            })
            .collect();
        let new_transfers = self
            .new_transfers
            .iter()
            .filter_map(|id| self.transfers.remove(id))
            .collect();
        LedgerChanges {
            accounts,
            new_transfers,
            resolved: self.resolved_existing,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::money::Micros;

    fn t(id: &str, d: &str, c: &str, amount: u64, phase: Phase) -> LedgerTransfer {
        LedgerTransfer {
            id: id.into(),
            debit: d.into(),
            credit: c.into(),
            amount: Micros(amount),
            phase,
        }
    }

    fn acct(id: &str, allow_negative: bool) -> LedgerAccount {
        LedgerAccount {
            id: id.into(),
            allow_negative,
        }
    }

    fn known() -> Known {
        let mut k = Known::default();
        k.accounts.insert("w".into(), None);
        k.accounts.insert("a".into(), None);
        for id in ["f", "p", "p-post", "big", "big2"] {
            k.transfers.insert(id.into(), None);
        }
        k
    }

    /// A view with no rows, as an empty in-memory store shows the rules.
    struct Empty;

    impl LedgerView for Empty {
        fn account(&self, _: &str) -> Result<Option<AccountState>, LedgerError> {
            Ok(None)
        }
        fn transfer(&self, _: &str) -> Result<Option<&TransferState>, LedgerError> {
            Ok(None)
        }
    }

    #[test]
    fn pending_created_and_posted_in_one_batch_is_written_resolved() {
        let k = known();
        let mut o = Overlay::new(&k);
        o.create_account(&acct("w", true)).unwrap();
        o.create_account(&acct("a", false)).unwrap();
        o.transfer(&t("p", "w", "a", 5, Phase::Pending)).unwrap();
        let post = Phase::Post {
            pending_id: "p".into(),
        };
        o.transfer(&t("p-post", "w", "a", 5, post)).unwrap();
        let c = o.into_changes();
        assert_eq!(c.accounts.len(), 2);
        assert!(c.accounts.iter().all(|a| a.created));
        assert_eq!(c.new_transfers.len(), 2);
        assert!(c.new_transfers[0].resolved, "p is written already resolved");
        assert!(c.resolved.is_empty(), "nothing pre-existing was resolved");
        assert_eq!(c.accounts[1].state.balance.credits_posted, 5);
    }

    #[test]
    fn a_pending_transfer_of_an_earlier_batch_is_resolved_through_merge() {
        let mut k = known();
        let mut o = Overlay::new(&k);
        o.create_account(&acct("w", true)).unwrap();
        o.create_account(&acct("a", false)).unwrap();
        o.transfer(&t("p", "w", "a", 5, Phase::Pending)).unwrap();
        let first = o.into_changes();
        k.merge(&first);

        let mut o = Overlay::new(&k);
        let void = Phase::Void {
            pending_id: "p".into(),
        };
        o.transfer(&t("p-post", "w", "a", 5, void)).unwrap();
        let second = o.into_changes();
        assert_eq!(second.resolved, ["p"], "p was resolved from before");
        assert!(second.accounts.iter().all(|a| !a.created));
        assert_eq!(second.accounts[1].state.balance, Balance::default());
        k.merge(&second);
        assert!(k.transfers["p"].as_ref().unwrap().resolved);

        let mut o = Overlay::new(&k);
        let again = Phase::Post {
            pending_id: "p".into(),
        };
        let err = o.transfer(&t("big", "w", "a", 5, again)).unwrap_err();
        assert_eq!(err, LedgerError::PendingResolved { id: "p".into() });
    }

    #[test]
    fn amounts_above_i64_are_refused_with_a_typed_error() {
        let k = known();
        let mut o = Overlay::new(&k);
        o.create_account(&acct("w", true)).unwrap();
        o.create_account(&acct("a", false)).unwrap();
        let err = o
            .transfer(&t("big", "w", "a", u64::MAX, Phase::Single))
            .unwrap_err();
        assert!(
            matches!(err, LedgerError::InvalidTransfer { .. }),
            "{err:?}"
        );
        o.transfer(&t("big", "w", "a", MAX_AMOUNT_MICROS, Phase::Single))
            .unwrap();
        let err = o
            .transfer(&t("big2", "w", "a", 1, Phase::Single))
            .unwrap_err();
        assert!(
            matches!(&err, LedgerError::InvalidTransfer { reason, .. } if reason.contains("overflows")),
            "{err:?}"
        );
    }

    #[test]
    fn unloaded_rows_are_a_backend_error_not_a_silent_absence() {
        let k = Known::default();
        let mut o = Overlay::new(&k);
        let err = o.transfer(&t("x", "w", "a", 1, Phase::Single)).unwrap_err();
        assert!(matches!(err, LedgerError::Backend(_)), "{err:?}");
    }

    #[test]
    fn a_view_that_knows_every_row_reports_absence_as_the_typed_error() {
        let mut o = Overlay::new(&Empty);
        let err = o.transfer(&t("x", "w", "a", 1, Phase::Single)).unwrap_err();
        assert_eq!(
            err,
            LedgerError::UnknownAccount {
                account: "w".into()
            }
        );
        o.create_account(&acct("w", false)).unwrap();
        o.create_account(&acct("a", false)).unwrap();
        let err = o.transfer(&t("x", "w", "a", 1, Phase::Single)).unwrap_err();
        assert!(
            matches!(err, LedgerError::InsufficientFunds { ref account, available: 0, needed: 1 } if account == "w"),
            "{err:?}"
        );
        let err = o.create_account(&acct("w", true)).unwrap_err();
        assert_eq!(
            err,
            LedgerError::AccountExists {
                account: "w".into()
            }
        );
        let c = o.into_changes();
        assert!(
            c.new_transfers.is_empty(),
            "a refused transfer writes nothing"
        );
        assert_eq!(c.accounts.len(), 2);
    }

    fn bal(debits_posted: u64, credits_posted: u64) -> Balance {
        Balance {
            debits_posted,
            credits_posted,
            ..Balance::default()
        }
    }

    #[test]
    fn every_phase_passes_the_conservation_check() {
        let mut o = Overlay::new(&Empty);
        o.create_account(&acct("w", true)).unwrap();
        o.create_account(&acct("a", false)).unwrap();
        o.create_account(&acct("b", false)).unwrap();
        o.transfer(&t("fund", "w", "a", 10, Phase::Single)).unwrap();
        for (id, phase) in [
            ("p1", Phase::Pending),
            (
                "post",
                Phase::Post {
                    pending_id: "p1".into(),
                },
            ),
            ("p2", Phase::Pending),
            (
                "void",
                Phase::Void {
                    pending_id: "p2".into(),
                },
            ),
        ] {
            o.transfer(&t(id, "a", "b", 4, phase)).unwrap();
        }
    }

    /// The checks are live in debug builds: a credit that moved less than the debit,
    /// and a non-negative account pushed below zero, both panic.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "moved the credit account")]
    fn a_transfer_that_creates_money_is_caught() {
        let x = t("x", "a", "b", 5, Phase::Single);
        check_applied(&x, [bal(0, 10), bal(0, 0)], [bal(5, 10), bal(0, 4)], false);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "left the non-negative account")]
    fn a_transfer_that_overdraws_is_caught() {
        let x = t("x", "a", "b", 5, Phase::Single);
        check_applied(&x, [bal(0, 3), bal(0, 0)], [bal(5, 3), bal(0, 5)], false);
    }

    #[test]
    fn an_account_allowed_negative_may_go_below_zero() {
        let x = t("x", "w", "b", 5, Phase::Single);
        check_applied(&x, [bal(0, 0), bal(0, 0)], [bal(5, 0), bal(0, 5)], true);
    }

    proptest::proptest! {
        /// Random transfers of every phase among a wallet allowed negative and two
        /// accounts that are not: the checks of every applied transfer hold (a panic
        /// fails the case), and the ledger's totals balance at the end.
        #[test]
        fn random_transfers_keep_the_checks_and_balance_the_totals(
            steps in proptest::collection::vec((0usize..3, 0usize..3, 1u64..80, 0u8..4), 1..60)
        ) {
            let names = ["w", "a", "b"];
            let mut o = Overlay::new(&Empty);
            o.create_account(&acct("w", true)).unwrap();
            o.create_account(&acct("a", false)).unwrap();
            o.create_account(&acct("b", false)).unwrap();
            o.transfer(&t("fund", "w", "a", 100, Phase::Single)).unwrap();
            let mut pending: Vec<LedgerTransfer> = Vec::new();
            for (i, (d, c, amount, kind)) in steps.into_iter().enumerate() {
                let id = format!("t{i}");
                let x = match (kind, pending.pop()) {
                    (0, p) => {
                        pending.extend(p);
                        t(&id, names[d], names[c], amount, Phase::Single)
                    }
                    (1, p) => {
                        pending.extend(p);
                        t(&id, names[d], names[c], amount, Phase::Pending)
                    }
                    (_, Some(p)) => {
                        let pending_id = p.id.clone();
                        let phase = if kind == 2 {
                            Phase::Post { pending_id }
                        } else {
                            Phase::Void { pending_id }
                        };
                        t(&id, &p.debit, &p.credit, p.amount.0, phase)
                    }
                    (_, None) => continue,
                };
                // Refusals (same account, insufficient funds) are part of the walk.
                if o.transfer(&x).is_ok() && x.phase == Phase::Pending {
                    pending.push(x);
                }
            }
            let changes = o.into_changes();
            let total = |f: fn(&Balance) -> u64| -> u128 {
                changes.accounts.iter().map(|a| u128::from(f(&a.state.balance))).sum()
            };
            proptest::prop_assert_eq!(total(|b| b.debits_posted), total(|b| b.credits_posted));
            proptest::prop_assert_eq!(total(|b| b.debits_pending), total(|b| b.credits_pending));
        }
    }
}
