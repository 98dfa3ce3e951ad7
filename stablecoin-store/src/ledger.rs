//! The ledger rules, applied in memory over rows a backend has loaded (and, on
//! PostgreSQL, locked). Both SQL backends use this one implementation, which mirrors
//! `stablecoin_core::memory::MemoryStore` rule for rule and error for error; the backend
//! then writes the resulting [`LedgerChanges`] with a few set-based statements.
//!
//! A backend fills a [`Known`] with every account and transfer a batch may touch
//! ([`needed_ids`]), absent ones as `None`, and applies the batch to an [`Overlay`] over
//! it. Nothing in `Known` changes until the backend merges the changes of a batch that
//! committed (or, inside a SQLite group, whose savepoint was released).

use crate::codec::MAX_AMOUNT_MICROS;
use stablecoin_core::ports::ledger::{Balance, LedgerAccount, LedgerError, LedgerTransfer, Phase};
use std::collections::{HashMap, HashSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AccountState {
    pub allow_negative: bool,
    pub balance: Balance,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TransferState {
    pub transfer: LedgerTransfer,
    /// For pending transfers: posted or voided already.
    pub resolved: bool,
}

/// Rows loaded from the database; `None` = known not to exist.
#[derive(Debug, Default)]
pub(crate) struct Known {
    pub accounts: HashMap<String, Option<AccountState>>,
    pub transfers: HashMap<String, Option<TransferState>>,
}

/// Account ids and transfer ids (own and pending) a batch may read, each once, sorted.
pub(crate) fn needed_ids(
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

pub(crate) fn sort_dedup(ids: &mut Vec<String>) {
    ids.sort_unstable();
    ids.dedup();
}

impl Known {
    /// Takes in the changes of a batch that was kept (the SQLite writer keeps `Known`
    /// across the batches of a group).
    #[cfg(feature = "sqlite")]
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

/// An account a batch created or whose sums it changed, with its final state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AccountChange {
    pub id: String,
    pub state: AccountState,
    pub created: bool,
}

/// What a batch's ledger part writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LedgerChanges {
    /// Created or changed accounts, in first-touch order.
    pub accounts: Vec<AccountChange>,
    /// Transfers applied by the batch, in order, with their final `resolved` flag.
    pub new_transfers: Vec<TransferState>,
    /// Pending transfers from earlier batches that this batch posted or voided.
    pub resolved: Vec<String>,
}

/// One batch's view: its own changes over the loaded rows.
pub(crate) struct Overlay<'k> {
    known: &'k Known,
    accounts: HashMap<String, AccountState>,
    transfers: HashMap<String, TransferState>,
    created: HashSet<String>,
    touched: Vec<String>,
    new_transfers: Vec<String>,
    resolved_existing: Vec<String>,
}

fn not_loaded(what: &str, id: &str) -> LedgerError {
    LedgerError::Backend(format!("internal: {what} {id} was not loaded before use"))
}

/// `a + b` if it stays within what the store can hold.
fn add(a: u64, b: u64) -> Option<u64> {
    a.checked_add(b).filter(|s| *s <= MAX_AMOUNT_MICROS)
}

impl<'k> Overlay<'k> {
    pub fn new(known: &'k Known) -> Self {
        Overlay {
            known,
            accounts: HashMap::new(),
            transfers: HashMap::new(),
            created: HashSet::new(),
            touched: Vec::new(),
            new_transfers: Vec::new(),
            resolved_existing: Vec::new(),
        }
    }

    fn account(&self, id: &str) -> Result<Option<AccountState>, LedgerError> {
        if let Some(a) = self.accounts.get(id) {
            return Ok(Some(*a));
        }
        match self.known.accounts.get(id) {
            Some(a) => Ok(*a),
            None => Err(not_loaded("account", id)),
        }
    }

    fn transfer_state(&self, id: &str) -> Result<Option<TransferState>, LedgerError> {
        if let Some(t) = self.transfers.get(id) {
            return Ok(Some(t.clone()));
        }
        match self.known.transfers.get(id) {
            Some(t) => Ok(t.clone()),
            None => Err(not_loaded("transfer", id)),
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

    /// Applies one transfer (the rules of `ports::ledger`, as `MemoryStore` applies them).
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
                return Err(LedgerError::UnknownAccount {
                    account: account.clone(),
                });
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
    use stablecoin_core::domain::money::Micros;

    fn t(id: &str, d: &str, c: &str, amount: u64, phase: Phase) -> LedgerTransfer {
        LedgerTransfer {
            id: id.into(),
            debit: d.into(),
            credit: c.into(),
            amount: Micros(amount),
            phase,
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

    #[test]
    fn pending_created_and_posted_in_one_batch_is_written_resolved() {
        let k = known();
        let mut o = Overlay::new(&k);
        o.create_account(&LedgerAccount {
            id: "w".into(),
            allow_negative: true,
        })
        .unwrap();
        o.create_account(&LedgerAccount {
            id: "a".into(),
            allow_negative: false,
        })
        .unwrap();
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
    fn amounts_above_i64_are_refused_with_a_typed_error() {
        let k = known();
        let mut o = Overlay::new(&k);
        for (id, neg) in [("w", true), ("a", false)] {
            o.create_account(&LedgerAccount {
                id: id.into(),
                allow_negative: neg,
            })
            .unwrap();
        }
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
}
