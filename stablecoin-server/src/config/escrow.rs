//! `[escrow]`: the embedded escrow (`/v1/escrows`, spec 1.6) on the TRON rail.

use serde::Deserialize;

/// `[escrow]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct EscrowSettings {
    /// TRON deposits are enabled for escrow (spec 1.6: admission requires it). Off, no
    /// new escrow is admitted (`503 ESCROW_UNAVAILABLE`); deals already created are
    /// still scanned, released, refunded and resolved. Why a switch: an operator who
    /// cannot watch or pay out escrow deposits for a while (an incident at the TRON
    /// node, a compliance hold) stops taking new deals without stopping the old ones.
    pub deposits_enabled: bool,
}

impl Default for EscrowSettings {
    /// Deposits enabled.
    fn default() -> Self {
        EscrowSettings {
            deposits_enabled: true,
        }
    }
}
