//! [`MemoryScreening`]: a sanctions screen with deterministic, documented test answers.
//!
//! Why fixed suffixes (as Circle's sandbox does with addresses ending in `9999`): a
//! developer, a tenant's test suite or the service's own tests can provoke a hit or an
//! outage on any rail without a list file or a vendor, and know beforehand which
//! addresses will. The suffixes are made of characters every address alphabet has
//! (hex and base58 both have `8` and `9`).

use crate::domain::chain::{ChainAddress, RailId};
use crate::ports::screening::{Screening, ScreeningVerdict, normalize_address};
use async_trait::async_trait;
use std::collections::BTreeSet;
use std::sync::RwLock;

/// An address ending in this is a hit ([`MemoryScreening::TEST_LIST`], reference
/// `test-9999`).
pub const HIT_SUFFIX: &str = "9999";
/// An address ending in this makes the screen answer Unavailable (a simulated outage).
pub const UNAVAILABLE_SUFFIX: &str = "8888";

/// The in-memory screen: addresses ending in [`HIT_SUFFIX`] and addresses added with
/// [`MemoryScreening::list`] are hits; addresses ending in [`UNAVAILABLE_SUFFIX`] answer
/// Unavailable; every other address is clear. Development and tests only.
#[derive(Default)]
pub struct MemoryScreening {
    listed: RwLock<BTreeSet<String>>,
}

impl MemoryScreening {
    /// The list name its hits carry.
    pub const TEST_LIST: &'static str = "TEST";

    /// A screen with only the suffix rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lists `address` too (compared as [`normalize_address`] does).
    pub fn list(&self, address: &str) {
        if let Ok(mut l) = self.listed.write() {
            l.insert(normalize_address(address));
        }
    }
}

#[async_trait]
impl Screening for MemoryScreening {
    fn name(&self) -> &str {
        "memory"
    }

    async fn screen(&self, _rail: RailId, address: &ChainAddress) -> ScreeningVerdict {
        let a = normalize_address(&address.0);
        if a.ends_with(UNAVAILABLE_SUFFIX) {
            return ScreeningVerdict::Unavailable {
                reason: format!("test outage (address ends in {UNAVAILABLE_SUFFIX})"),
            };
        }
        let listed = self.listed.read().map(|l| l.contains(&a)).unwrap_or(false);
        if a.ends_with(HIT_SUFFIX) || listed {
            let reference = if listed {
                format!("test-{a}")
            } else {
                format!("test-{HIT_SUFFIX}")
            };
            return ScreeningVerdict::Hit {
                list: Self::TEST_LIST.into(),
                reference,
            };
        }
        ScreeningVerdict::Clear
    }
}
