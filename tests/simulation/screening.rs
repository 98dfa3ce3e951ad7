//! Sanctions screening in the simulated world (issue #51): the engines screen every
//! outbound destination through this screen, which lists exactly the addresses the
//! workload marks (never a suffix rule, so no wallet, treasury or session address can
//! be a hit by chance). Refunds (`refunds.rs`) go now and then to a listed payer, or to
//! one whose screen is down: both are refused before anything is held, and the claim
//! link of a refund stays claimable after a refused address.

use stablecoin::core::kernel::screening::{ScreeningFailMode, ScreeningGate};
use stablecoin::core::ports::screening::{Screening, ScreeningVerdict, normalize_address};
use stablecoin::core::ports::{ChainAddress, RailId};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// What a payer's address is to the screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flag {
    Clear,
    Listed,
    Outage,
}

#[derive(Default)]
pub struct SimScreening {
    listed: Mutex<BTreeSet<String>>,
    outage: Mutex<BTreeSet<String>>,
}

impl SimScreening {
    /// Marks `address` as `flag`.
    pub fn mark(&self, address: &str, flag: Flag) {
        let set = match flag {
            Flag::Clear => return,
            Flag::Listed => &self.listed,
            Flag::Outage => &self.outage,
        };
        set.lock().unwrap().insert(normalize_address(address));
    }

    /// The gate every engine of the world installs: fail-closed, as production.
    pub fn gate(self: &Arc<Self>) -> ScreeningGate {
        ScreeningGate {
            screen: self.clone(),
            fail_mode: ScreeningFailMode::Closed,
        }
    }
}

#[async_trait::async_trait]
impl Screening for SimScreening {
    fn name(&self) -> &str {
        "simulation"
    }

    async fn screen(&self, _rail: RailId, address: &ChainAddress) -> ScreeningVerdict {
        let a = normalize_address(&address.0);
        if self.outage.lock().unwrap().contains(&a) {
            return ScreeningVerdict::Unavailable {
                reason: "simulated outage".into(),
            };
        }
        if self.listed.lock().unwrap().contains(&a) {
            return ScreeningVerdict::Hit {
                list: "SIM".into(),
                reference: format!("sim-{a}"),
            };
        }
        ScreeningVerdict::Clear
    }
}

impl super::world::World {
    /// An outside deposit to a wallet from a sanctioned sender (issue #51, inbound): the
    /// sender gets the tokens from the faucet, then pays the wallet; the router
    /// quarantines it instead of crediting the wallet.
    pub async fn listed_deposit(
        &mut self,
        to: &stablecoin::core::ports::ChainAddress,
        token: stablecoin::core::domain::money::Token,
        amount: stablecoin::core::domain::money::Micros,
    ) {
        self.payers += 1;
        let sender = ChainAddress(format!("0x{:040x}", 0xbad0_0000_0000u64 + self.payers));
        self.screening.mark(&sender.0, Flag::Listed);
        self.evm.mint(&sender, token, amount).unwrap();
        self.evm
            .external_transfer(&sender, to, token, amount)
            .unwrap();
        *self
            .stats
            .entry("deposit from a listed sender".into())
            .or_default() += 1;
    }

    /// Staff decide every quarantined deposit still held: every other one is released
    /// to its wallet, the rest returned to a fresh clear address (never to the listed
    /// sender). Returns how many were decided.
    pub async fn decide_quarantined(&mut self) -> usize {
        use stablecoin::core::kernel::staff::StaffIdentity;
        let staff = StaffIdentity::admin_token();
        let (held, _) = self
            .engine
            .quarantined_deposits(Some("held"), 100, 1)
            .await
            .unwrap();
        let n = held.len();
        for q in held {
            let id = q.deposit.id.clone();
            if self.rng.below(2) == 0 {
                self.engine
                    .release_quarantined_deposit(&staff, &id, "cleared by compliance")
                    .await
                    .unwrap();
                *self.stats.entry("quarantine released".into()).or_default() += 1;
            } else {
                self.payers += 1;
                let to = format!("0x{:040x}", 0xc1ea_0000_0000u64 + self.payers);
                self.engine
                    .return_quarantined_deposit(&staff, &id, Some(&to), "returned on request")
                    .await
                    .unwrap();
                *self.stats.entry("quarantine returned".into()).or_default() += 1;
            }
        }
        n
    }
}

impl super::world::World {
    /// Every quarantined deposit is released or returned (none held, proposed or on its
    /// way).
    pub async fn quarantine_settled(&self) -> bool {
        let mut page = 1;
        loop {
            let (rows, total) = self
                .engine
                .quarantined_deposits(None, 100, page)
                .await
                .unwrap();
            if rows
                .iter()
                .any(|q| !matches!(q.deposit.status.as_str(), "released" | "returned"))
            {
                return false;
            }
            if (page as u64) * 100 >= total {
                return true;
            }
            page += 1;
        }
    }
}
