//! The block-number scan cursor the block-based rails (simulated, TRON, EVM) share:
//! a decimal block number, `""` meaning the rail's configured first block.

use stablecoin_core::ports::RailError;

/// The first block a scan reads: `start` for an empty cursor, else the cursor's number.
/// A cursor that is not a number is `Rejected` (it never came from the rail).
#[allow(dead_code)] // unused when no block-based rail is compiled in
pub(crate) fn block_cursor(cursor: &str, start: u64) -> Result<u64, RailError> {
    if cursor.is_empty() {
        return Ok(start);
    }
    cursor.parse().map_err(|_| RailError::Rejected {
        reason: format!("invalid scan cursor {cursor:?}"),
    })
}
