//! Conversions shared by the SQL backends: integers, phases, unique-key lists.
// With no backend feature nothing here is used.
#![cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]

use stablecoin_core::ports::ledger::Phase;

/// A stored non-negative integer, back as `u64`; a negative value means a corrupt row.
pub(crate) fn u64_from_db(v: i64, what: &str) -> Result<u64, String> {
    u64::try_from(v).map_err(|_| format!("corrupt row: {what} is negative ({v})"))
}

/// A `u64` the store has already bounded to `MAX_AMOUNT_MICROS`.
pub(crate) fn i64_to_db(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Ids to load, each once, sorted (a stable lock order on PostgreSQL).
pub(crate) fn sort_dedup(ids: &mut Vec<String>) {
    ids.sort_unstable();
    ids.dedup();
}

/// `usize` limits and offsets for SQL (`usize::MAX` means "all").
pub(crate) fn sql_count(v: usize) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(crate) fn phase_to_db(p: &Phase) -> (&'static str, Option<&str>) {
    match p {
        Phase::Single => ("single", None),
        Phase::Pending => ("pending", None),
        Phase::Post { pending_id } => ("post", Some(pending_id)),
        Phase::Void { pending_id } => ("void", Some(pending_id)),
    }
}

pub(crate) fn phase_from_db(phase: &str, pending_id: Option<String>) -> Result<Phase, String> {
    match (phase, pending_id) {
        ("single", None) => Ok(Phase::Single),
        ("pending", None) => Ok(Phase::Pending),
        ("post", Some(pending_id)) => Ok(Phase::Post { pending_id }),
        ("void", Some(pending_id)) => Ok(Phase::Void { pending_id }),
        (p, id) => Err(format!("corrupt row: phase {p:?} with pending id {id:?}")),
    }
}

/// The keys a record keeps: first occurrence of each, in order (as `MemoryStore` does).
pub(crate) fn dedup_keys(keys: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    keys.iter()
        .filter(|k| seen.insert(k.as_str()))
        .cloned()
        .collect()
}

pub(crate) fn keys_to_db(keys: &[String]) -> String {
    serde_json::to_string(keys).unwrap_or_else(|_| "[]".to_string())
}

pub(crate) fn keys_from_db(text: &str) -> Result<Vec<String>, String> {
    serde_json::from_str(text).map_err(|e| format!("corrupt row: unique_keys {text:?}: {e}"))
}

pub(crate) fn json_from_db(text: &str, what: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| format!("corrupt row: {what} is not JSON: {e}"))
}
