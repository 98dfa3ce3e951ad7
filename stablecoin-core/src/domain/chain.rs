//! Which chain, and an address on it: the values the domain's rules name (a wallet's
//! addresses, the per-rail limits). They live here, not beside the `Rail` port, so the
//! domain names no port (KERNEL.md §3.1); `ports::rail` re-exports them.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which chain a rail moves value on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RailId {
    /// An EVM chain by chain id (137 Polygon, 8453 Base, 56 BNB Smart Chain).
    Evm(u64),
    /// TRON (the network its node serves): USDT, sends sponsored by delegated resources.
    Tron,
    /// Solana (the cluster its RPC serves): SPL USDC and USDT.
    Solana,
}

impl RailId {
    /// Stable name used in records, webhooks (`rail`) and readiness fields.
    pub fn name(&self) -> String {
        match self {
            RailId::Evm(137) => "polygon".into(),
            RailId::Evm(8453) => "base".into(),
            RailId::Evm(56) => "bsc".into(),
            RailId::Evm(id) => format!("evm-{id}"),
            RailId::Tron => "tron".into(),
            RailId::Solana => "solana".into(),
        }
    }
}

impl fmt::Display for RailId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// An address on one chain, in that chain's canonical text form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChainAddress(pub String);

impl fmt::Display for ChainAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
