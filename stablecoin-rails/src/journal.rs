//! Reading a rail's entries back from its [`RailJournal`]: one rule for every rail that
//! journals its sends (EVM, TRON, Solana). `null` is how a rail records "nothing in
//! flight" (the node refused the send), and an entry the rail cannot parse is an outage,
//! not an absence: reporting it absent would let the engine give up on a payment that
//! may land.

use stablecoin_core::ports::{RailError, RailJournal};

pub(crate) async fn load_entry<T>(
    journal: &dyn RailJournal,
    rail: &str,
    payment_id: &str,
    parse: impl FnOnce(&serde_json::Value) -> Option<T>,
) -> Result<Option<T>, RailError> {
    match journal.load(rail, payment_id).await? {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v) => parse(&v).map(Some).ok_or_else(|| RailError::Unavailable {
            reason: format!("send journal: unreadable {rail} entry for {payment_id}"),
        }),
    }
}
