//! What both consoles render the same way: token amounts from base units, and an
//! escrow's history.

use super::html::{e, status, table};
use stablecoin_core::domain::money::Micros;
use stablecoin_escrow::EscrowEventView;

/// Base units (micro-units, as escrow views carry them) as a decimal token amount
/// (`"150000000"` -> `"150.000000"`); anything else as given.
pub fn tokens(base_units: &str) -> String {
    base_units
        .parse::<u64>()
        .map(|m| Micros(m).to_decimal_string())
        .unwrap_or_else(|_| base_units.to_string())
}

/// An escrow's history as a table, newest first: when, event, state, by whom (the
/// authority: the tenant, `staff:<id>`, the system) and the reason or staff note.
pub fn escrow_history(caption: &str, events: &[EscrowEventView]) -> String {
    let rows: Vec<Vec<String>> = events
        .iter()
        .map(|ev| {
            vec![
                e(&ev.occurred_at),
                e(&ev.event),
                status(&ev.state),
                e(&ev.authority),
                e(ev.reason.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    format!(
        "<h2>History</h2>{}",
        table(
            caption,
            &["When", "Event", "State", "By", "Reason or note"],
            &rows
        )
    )
}
