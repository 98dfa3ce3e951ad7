//! Continuous reconciliation of the ledger against the chains (issue #33, item 6).
//!
//! The ledger is the service's word on who owns what; the chains are where the money is.
//! They drift apart only through a bug (a payment made twice, a void skipped) or through
//! money moved behind the service's back (a leaked key, a mistaken manual transfer).
//! [`Engine::reconcile_chains`] compares, per rail and token:
//! - every wallet's ledger account with its address's on-chain balance;
//! - the service-fee account with the sum of the fee addresses' balances over the rails
//!   that carry the token (one ledger account collects the fees of every rail).
//!
//! **In flight.** An operation holds its ledger amounts (two-phase) before it pays and
//! posts them after the chain confirms, so between the two the chain may already show
//! the move while the ledger does not. A balance is therefore drift-free anywhere in
//! `[posted - pending debits, posted + pending credits]` ([`drift_micros`]). Each account
//! is read ledger, chain, ledger; if the ledger changed meanwhile the reads are repeated,
//! so an operation accepted and settled between the reads is never mistaken for drift.
//!
//! **Quarantine.** A deposit from a sender the sanctions screen flagged
//! (`kernel::quarantine`) sits at the wallet's own address while the ledger holds it in
//! its quarantine account (`quarantine:<id>:<TOKEN>`), not the wallet's. A wallet's
//! comparison therefore adds what the quarantine accounts of deposits to that address
//! and token still hold ([`super::QUARANTINE_OPEN`]): explained tokens are no EXCESS.
//! A deposit being released or returned is in flight out of its quarantine account
//! (the wallet's credit, or the return's payment, may land before the quarantine
//! account closes), so its amount widens the window downwards as a held debit does.
//!
//! **Direction.** A SHORTFALL (less on chain than the ledger owes) is money missing: it
//! makes the report unclean. An EXCESS (more on chain) is reported too; a deposit the
//! scanner has not yet recorded shows as one until it does.
//!
//! Not compared: a tenant's treasury. The treasury address is one pooled float per rail,
//! topped up by the operator against fiat that the ledger records first (`fiat_in`), so
//! the chain holds at least what the treasuries owe, not exactly it. Escrow and checkout
//! deposit addresses have their own reconcilers (their deposit scanners).

use super::Engine;
use crate::domain::consent::Wallet;
use crate::domain::money::Token;
use crate::domain::time::Timestamp;
use crate::ports::kinds::kind;
use crate::ports::ledger::{Balance, LedgerError};
use crate::ports::record::Record;
use crate::ports::store::ListQuery;
use crate::ports::{ChainAddress, KeyPurpose, Rail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Wallets read per store page.
const WALLET_PAGE: usize = 500;
/// Times one account's reads are repeated while the ledger keeps changing under them.
const STABLE_READ_TRIES: usize = 4;

/// Which way a balance drifted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DriftDirection {
    /// Less on chain than the ledger owes, in-flight operations allowed for.
    Shortfall,
    /// More on chain than the ledger knows of.
    Excess,
}

/// One account whose chain balance is outside what its ledger balance allows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriftLine {
    /// The ledger account (`wallet:<w>:USDC`, `fees:service:USDC`).
    pub account: String,
    /// The rail's name (`polygon`, `tron`), or `all` for an account summed over rails.
    pub rail: String,
    /// The token compared.
    pub token: Token,
    /// The address read on chain (none for a sum over rails).
    pub address: Option<String>,
    /// The ledger's posted balance, in micro-units.
    pub ledger_posted_micros: i128,
    /// Held debits on their way out (may already have left on chain).
    pub in_flight_out_micros: u64,
    /// Held credits on their way in (may already have arrived on chain).
    pub in_flight_in_micros: u64,
    /// What the quarantine accounts of deposits to this address hold (tokens at the
    /// address the ledger keeps apart from the wallet's): added to the ledger posted
    /// balance before comparing. Those being released or returned count in
    /// `in_flight_out_micros` too.
    #[serde(default)]
    pub quarantined_micros: u64,
    /// What the chain says, in micro-units.
    pub chain_micros: u64,
    /// Chain minus the nearest balance the ledger allows: negative for a shortfall.
    pub drift_micros: i128,
    /// Which way.
    pub direction: DriftDirection,
}

/// One pass of [`Engine::reconcile_chains`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReconciliationReport {
    /// When the pass started.
    pub started_at: Timestamp,
    /// When it ended.
    pub finished_at: Timestamp,
    /// Accounts compared (wallet, rail and token triples, plus the fee sums).
    pub accounts_checked: u64,
    /// The accounts that drifted, in the order found.
    pub drifts: Vec<DriftLine>,
    /// Accounts that could not be compared (a rail or the store did not answer), with
    /// why. A pass with errors is incomplete, not clean.
    pub errors: Vec<String>,
}

impl ReconciliationReport {
    /// No shortfall, no excess, and every account compared.
    pub fn is_clean(&self) -> bool {
        self.drifts.is_empty() && self.errors.is_empty()
    }
    /// Whether any account is short on chain: money is missing.
    pub fn has_shortfall(&self) -> bool {
        self.drifts
            .iter()
            .any(|d| d.direction == DriftDirection::Shortfall)
    }
    /// The absolute drift summed per (rail, token, direction), for metrics.
    pub fn totals(&self) -> Vec<(String, Token, DriftDirection, u128)> {
        let mut out: Vec<(String, Token, DriftDirection, u128)> = Vec::new();
        for d in &self.drifts {
            let amount = d.drift_micros.unsigned_abs();
            match out
                .iter_mut()
                .find(|(r, t, dir, _)| *r == d.rail && *t == d.token && *dir == d.direction)
            {
                Some(entry) => entry.3 += amount,
                None => out.push((d.rail.clone(), d.token, d.direction, amount)),
            }
        }
        out
    }
}

/// How far `chain` lies outside what `ledger` allows: 0 anywhere in
/// `[posted - pending debits, posted + pending credits]`, else the distance to the
/// nearest end (negative below it).
pub fn drift_micros(ledger: &Balance, chain: u64) -> i128 {
    let posted = ledger.posted();
    let low = posted - ledger.debits_pending as i128;
    let high = posted + ledger.credits_pending as i128;
    let chain = chain as i128;
    if chain < low {
        chain - low
    } else if chain > high {
        chain - high
    } else {
        0
    }
}

/// What one comparison read: the ledger (stable across the chain read, quarantine
/// included) and the chain.
struct Reading {
    ledger: Balance,
    chain: u64,
    /// The quarantine accounts' share of `ledger`'s posted balance.
    quarantined: u64,
}

/// A quarantine account that holds tokens sitting at a wallet's address.
struct Held {
    /// `quarantine:<id>:<TOKEN>`.
    account: String,
    /// Being released or returned: may already be gone from the address (a return) or
    /// already credited to the wallet (a release) before the account closes.
    leaving: bool,
}

/// The open quarantine accounts per (rail, canonical address, token) of wallets.
type HeldAt = BTreeMap<(String, String, Token), Vec<Held>>;

impl Engine {
    /// The last finished [`Engine::reconcile_chains`] pass of this engine, if any.
    pub fn last_reconciliation(&self) -> Option<ReconciliationReport> {
        self.last_reconciliation.read().ok().and_then(|r| r.clone())
    }

    /// Compares every wallet's ledger balances, and the service fees, with the chains
    /// (see the module docs), keeps the report as [`Engine::last_reconciliation`] and
    /// returns it. Reads only: it never moves money or changes a record. Its cost is one
    /// balance read per wallet, rail and token, so a host runs it every few minutes, not
    /// every tick.
    pub async fn reconcile_chains(&self) -> ReconciliationReport {
        let mut report = ReconciliationReport {
            started_at: self.now(),
            ..Default::default()
        };
        self.reconcile_wallets(&mut report).await;
        self.reconcile_service_fees(&mut report).await;
        report.finished_at = self.now();
        if let Ok(mut last) = self.last_reconciliation.write() {
            *last = Some(report.clone());
        }
        report
    }

    /// The quarantine accounts still holding deposits made to wallet addresses. On a
    /// store error the pass is incomplete (and such tokens show as excess).
    async fn held_at_wallets(&self, report: &mut ReconciliationReport) -> HeldAt {
        let mut held = HeldAt::new();
        let open = match self.open_quarantined_deposits().await {
            Ok(open) => open,
            Err(e) => {
                report.errors.push(format!("quarantined deposits: {e}"));
                return held;
            }
        };
        for s in open.into_iter().filter(|s| s.origin == "wallet") {
            let address = crate::kernel::inbound::canonical_address(&s.rail, &s.address);
            held.entry((s.rail.clone(), address, s.token))
                .or_default()
                .push(Held {
                    account: s.account().id,
                    leaving: matches!(
                        s.status,
                        crate::kernel::stray::StrayStatus::Releasing
                            | crate::kernel::stray::StrayStatus::Returning
                    ),
                });
        }
        held
    }

    async fn reconcile_wallets(&self, report: &mut ReconciliationReport) {
        let held = self.held_at_wallets(report).await;
        let mut offset = 0;
        loop {
            let page = self
                .ports()
                .store
                .list(&ListQuery {
                    kind: kind::WALLET.into(),
                    tenant: Wallet::LIST_OWNER.into(),
                    subkind: None,
                    status: None,
                    limit: WALLET_PAGE,
                    offset,
                })
                .await;
            let records = match page {
                Ok((records, _)) => records,
                Err(e) => {
                    report.errors.push(format!("wallets: {e}"));
                    return;
                }
            };
            for rec in &records {
                match Wallet::from_stored(rec) {
                    Ok(wallet) => self.reconcile_wallet(&wallet, &held, report).await,
                    Err(e) => report.errors.push(format!(
                        "{}: {}",
                        rec.id,
                        crate::error::CoreError::from(e)
                    )),
                }
            }
            if records.len() < WALLET_PAGE {
                return;
            }
            offset += records.len();
        }
    }

    async fn reconcile_wallet(
        &self,
        wallet: &Wallet,
        held: &HeldAt,
        report: &mut ReconciliationReport,
    ) {
        for rail in self.rails() {
            let name = rail.id().name();
            let Some(address) = wallet.address(&name) else {
                continue;
            };
            for token in rail.tokens() {
                let account = self.wallet_account(&wallet.id, rail.id(), token).id;
                report.accounts_checked += 1;
                let rails = [(rail, address.clone())];
                let key = (
                    name.clone(),
                    crate::kernel::inbound::canonical_address(&name, &address.0),
                    token,
                );
                let quarantine = held.get(&key).map_or(&[][..], Vec::as_slice);
                match self
                    .stable_reading(&account, quarantine, &rails, token)
                    .await
                {
                    Ok(r) => push_drift(report, &account, &name, token, Some(address), &r),
                    Err(e) => report.errors.push(format!("{account} on {name}: {e}")),
                }
            }
        }
    }

    async fn reconcile_service_fees(&self, report: &mut ReconciliationReport) {
        for token in Token::ALL {
            let mut rails = Vec::new();
            for rail in self.rails().filter(|r| r.tokens().contains(&token)) {
                match self.service_address(rail, KeyPurpose::ServiceFees).await {
                    Ok(a) => rails.push((rail, a)),
                    Err(e) => report
                        .errors
                        .push(format!("service fee address on {}: {e}", rail.id().name())),
                }
            }
            if rails.is_empty() {
                continue;
            }
            let account = super::accounts::service_fees(token).id;
            report.accounts_checked += 1;
            match self.stable_reading(&account, &[], &rails, token).await {
                Ok(r) => push_drift(report, &account, "all", token, None, &r),
                Err(e) => report.errors.push(format!("{account}: {e}")),
            }
        }
    }

    /// Reads the ledger, the chain (summed over `rails`), then the ledger again, until
    /// both ledger reads agree: then nothing the service did moved the chain between
    /// them unseen (an operation holds before it pays). The ledger read is `account`
    /// plus the `quarantine` accounts of tokens at the same address.
    async fn stable_reading(
        &self,
        account: &str,
        quarantine: &[Held],
        rails: &[(&Arc<dyn Rail>, ChainAddress)],
        token: Token,
    ) -> Result<Reading, String> {
        let mut before = self.ledger_with(account, quarantine).await?;
        for _ in 0..STABLE_READ_TRIES {
            let mut chain: u64 = 0;
            for (rail, address) in rails {
                let b = rail
                    .balance(address, token)
                    .await
                    .map_err(|e| e.code().to_string())?;
                chain = chain.saturating_add(b.get());
            }
            let after = self.ledger_with(account, quarantine).await?;
            if after == before {
                return Ok(Reading {
                    ledger: after.0,
                    chain,
                    quarantined: after.1,
                });
            }
            before = after;
        }
        Err("the ledger kept changing during the reads; compared next pass".into())
    }

    /// `account`'s balance with the `quarantine` accounts' added (a leaving one's posted
    /// amount also as a held debit), and the quarantine accounts' posted share.
    async fn ledger_with(
        &self,
        account: &str,
        quarantine: &[Held],
    ) -> Result<(Balance, u64), String> {
        let mut total = self.ledger_balance(account).await?;
        let mut quarantined: u64 = 0;
        let overflow = || format!("{account}: quarantine sums overflow");
        for h in quarantine {
            let b = self.ledger_balance(&h.account).await?;
            let posted = u64::try_from(b.posted().max(0)).map_err(|_| overflow())?;
            quarantined = quarantined.checked_add(posted).ok_or_else(overflow)?;
            let leaving = if h.leaving { posted } else { 0 };
            let sum = |a: u64, b: u64| a.checked_add(b).ok_or_else(overflow);
            total = Balance {
                debits_posted: sum(total.debits_posted, b.debits_posted)?,
                credits_posted: sum(total.credits_posted, b.credits_posted)?,
                debits_pending: sum(sum(total.debits_pending, b.debits_pending)?, leaving)?,
                credits_pending: sum(total.credits_pending, b.credits_pending)?,
            };
        }
        Ok((total, quarantined))
    }

    async fn ledger_balance(&self, account: &str) -> Result<Balance, String> {
        match self.ports().ledger.balance(account).await {
            Ok(b) => Ok(b),
            Err(LedgerError::UnknownAccount { .. }) => Ok(Balance::default()),
            Err(e) => Err(e.to_string()),
        }
    }
}

fn push_drift(
    report: &mut ReconciliationReport,
    account: &str,
    rail: &str,
    token: Token,
    address: Option<&ChainAddress>,
    reading: &Reading,
) {
    let drift = drift_micros(&reading.ledger, reading.chain);
    if drift == 0 {
        return;
    }
    report.drifts.push(DriftLine {
        account: account.to_string(),
        rail: rail.to_string(),
        token,
        address: address.map(|a| a.0.clone()),
        ledger_posted_micros: reading.ledger.posted() - i128::from(reading.quarantined),
        in_flight_out_micros: reading.ledger.debits_pending,
        in_flight_in_micros: reading.ledger.credits_pending,
        quarantined_micros: reading.quarantined,
        chain_micros: reading.chain,
        drift_micros: drift,
        direction: if drift < 0 {
            DriftDirection::Shortfall
        } else {
            DriftDirection::Excess
        },
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bal(credits: u64, debits: u64, out: u64, inn: u64) -> Balance {
        Balance {
            credits_posted: credits,
            debits_posted: debits,
            debits_pending: out,
            credits_pending: inn,
        }
    }

    #[test]
    fn the_window_allows_exactly_the_moves_in_flight() {
        // posted 100, 30 on its way out, 20 on its way in: [70, 120] is drift-free.
        let b = bal(150, 50, 30, 20);
        for chain in [70, 71, 100, 119, 120] {
            assert_eq!(drift_micros(&b, chain), 0, "chain {chain}");
        }
        assert_eq!(drift_micros(&b, 69), -1);
        assert_eq!(drift_micros(&b, 0), -70);
        assert_eq!(drift_micros(&b, 121), 1);
        assert_eq!(drift_micros(&b, u64::MAX), u64::MAX as i128 - 120);
        // Nothing in flight: only the exact balance is drift-free.
        let settled = bal(5, 0, 0, 0);
        assert_eq!(drift_micros(&settled, 5), 0);
        assert_eq!(drift_micros(&settled, 4), -1);
        assert_eq!(drift_micros(&settled, 6), 1);
        assert_eq!(drift_micros(&Balance::default(), 0), 0);
    }

    #[test]
    fn totals_add_up_per_rail_token_and_direction() {
        let line = |rail: &str, drift: i128| DriftLine {
            account: "a".into(),
            rail: rail.into(),
            token: Token::Usdc,
            address: None,
            ledger_posted_micros: 0,
            in_flight_out_micros: 0,
            in_flight_in_micros: 0,
            quarantined_micros: 0,
            chain_micros: 0,
            drift_micros: drift,
            direction: if drift < 0 {
                DriftDirection::Shortfall
            } else {
                DriftDirection::Excess
            },
        };
        let report = ReconciliationReport {
            drifts: vec![
                line("base", -5),
                line("base", -7),
                line("base", 3),
                line("tron", -1),
            ],
            ..Default::default()
        };
        assert!(report.has_shortfall() && !report.is_clean());
        let totals = report.totals();
        assert!(totals.contains(&("base".into(), Token::Usdc, DriftDirection::Shortfall, 12)));
        assert!(totals.contains(&("base".into(), Token::Usdc, DriftDirection::Excess, 3)));
        assert!(totals.contains(&("tron".into(), Token::Usdc, DriftDirection::Shortfall, 1)));
        assert_eq!(totals.len(), 3);
    }
}
