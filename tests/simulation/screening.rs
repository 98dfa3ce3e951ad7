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
