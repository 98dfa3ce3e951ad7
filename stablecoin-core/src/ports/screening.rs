//! Sanctions screening of chain addresses (issue #51): the port, and the address
//! normalisation every adapter shares.
//!
//! Why a port: a regulated sender must not pay a sanctioned address, and who says an
//! address is sanctioned differs per deployment (the OFAC SDN list as published, a vendor
//! API such as Chainalysis's, a compliance team's own list). The engine asks the port
//! before it holds anything; what it does with the answer (refuse, audit, fail closed or
//! open when the screen cannot answer) is the engine's rule, not the adapter's.
//!
//! Why three answers and not a `Result<bool>`: "the screen could not answer" must never
//! read as "clear". [`ScreeningVerdict::Unavailable`] forces every caller to choose.

use crate::domain::chain::{ChainAddress, RailId};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What a screen says of one address.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ScreeningVerdict {
    /// Not on any list the adapter knows.
    Clear,
    /// Listed: the list that names it and the list's own reference for the entry (an SDN
    /// entry's `uid`, a vendor's identification), for the audit log and an investigator.
    Hit {
        /// The list (`OFAC SDN`, `chainalysis:sanctions`, ...).
        list: String,
        /// The entry on that list that names the address.
        reference: String,
    },
    /// The screen could not answer (the vendor timed out or refused, the list is not
    /// loaded). Never to be read as clear: the engine's fail mode decides.
    Unavailable {
        /// Why, for logs and the audit log (no secret: adapters must not put keys here).
        reason: String,
    },
}

/// A sanctions screen of chain addresses.
#[async_trait]
pub trait Screening: Send + Sync {
    /// The adapter's name, recorded in the audit log beside each decision (`memory`,
    /// `ofac-list`, `chainalysis`).
    fn name(&self) -> &str;

    /// Screens `address` on `rail`. Must not fail in another way than
    /// [`ScreeningVerdict::Unavailable`], and must not be slow without bound (an HTTP
    /// adapter has a timeout): the engine awaits it before admitting a payment.
    async fn screen(&self, rail: RailId, address: &ChainAddress) -> ScreeningVerdict;
}

/// The form an address is compared in: an EVM address (`0x` + 40 hex digits) is
/// case-insensitive (EIP-55 checksums only change letter case), so it is lower-cased;
/// every other form (TRON and Bitcoin base58, Solana base58, bech32) is compared as
/// written, trimmed. Lists and adapters normalise both sides with this one function.
pub fn normalize_address(address: &str) -> String {
    let a = address.trim();
    let is_evm = a.len() == 42
        && (a.starts_with("0x") || a.starts_with("0X"))
        && a[2..].bytes().all(|b| b.is_ascii_hexdigit());
    if is_evm {
        a.to_ascii_lowercase()
    } else {
        a.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evm_addresses_compare_without_case_and_others_as_written() {
        assert_eq!(
            normalize_address(" 0xAbCdEf0000000000000000000000000000009999 "),
            "0xabcdef0000000000000000000000000000009999"
        );
        // Base58 is case-sensitive: two addresses that differ only in case differ.
        assert_eq!(
            normalize_address("TXyZabc1111111111111111111111111"),
            "TXyZabc1111111111111111111111111"
        );
        // Not 40 hex digits: not lower-cased.
        assert_eq!(normalize_address("0xABC"), "0xABC");
    }
}
