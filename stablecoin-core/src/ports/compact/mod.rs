//! Compact record bodies (issue 47): a small binary encoding of a record's JSON body,
//! which a store may keep instead of the text (the SQLite store does, in its
//! `records.body` column), and which [`JsonText`](super::store::JsonText)
//! decodes straight into the record's type, without JSON text in between.
//!
//! Why: an operation's body was ~1.4 KB of JSON, most of the bytes a settled transfer
//! keeps for good, written again at each of its four commits (and into the WAL each
//! time). Most of it is structure the type already knows: ~45 key names, ids repeated
//! four times (the operation's own, its wallets' inside the ledger account names),
//! hex addresses and hashes at two characters a byte, 13-digit timestamps. The encoding
//! writes each of those once and small:
//!
//! - key names and common values from a fixed table (`DICT`) as one byte;
//! - a string met before in the same body as a back-reference (its number);
//! - `0x` + lowercase hex as its bytes; a `prefix_` + ULID id (`tr_01M8...`) as the
//!   prefix and the ULID's 16 bytes;
//! - a `a:b:c` name whose first part is known (`wallet:wal_...:USDC`) as its parts;
//! - integers as LEB128 varints; arrays and objects with an end mark.
//!
//! Two ways in: [`encode`] takes JSON text; [`to_vec`] is a serde `Serializer` that
//! writes the same bytes from the typed value, without the text (what
//! [`JsonText::encode`](super::store::JsonText::encode) uses).
//!
//! Two ways back: [`to_text`] gives what `serde_json::to_string` wrote (same key order,
//! same escaping), for readers of the JSON view; [`from_slice`] is a serde
//! `Deserializer` over the bytes, which hands a typed record the same values
//! `serde_json::from_str` would, at about half the cost of text and a parse (the
//! settlement worker reads every operation and event it moves: issue 47's profile put
//! JSON and this codec at ~20% of a settled transfer's CPU). A body the encoder cannot
//! take (not JSON, or holding a number that is not a 64-bit integer: a fraction, or a
//! `u128` beyond `u64`, which serde_json would hand over as a lossy `f64`) stays text,
//! byte for byte, in the store.
//!
//! The format is stored: the first byte is its version (`FORMAT`), and `DICT` may
//! only grow at its end. A SQL migration cannot read these bodies with `json_extract`
//! (they are not JSON to SQL); one that must rewrite bodies decodes them in Rust.

mod de;
mod encode;
mod reader;
mod ser;
#[cfg(test)]
mod tests;
mod text;

pub use de::from_slice;
pub use encode::encode;
pub use ser::to_vec;
pub use text::to_text;

use rustc_hash::FxHashMap as HashMap;
use std::sync::LazyLock;

/// The format's version, the first byte of every encoded body.
pub(crate) const FORMAT: u8 = 1;

const T_NULL: u8 = 0;
const T_FALSE: u8 = 1;
const T_TRUE: u8 = 2;
const T_UINT: u8 = 3;
const T_NINT: u8 = 4;
const T_F64: u8 = 5;
const T_STR: u8 = 6;
const T_DICT: u8 = 7;
const T_REF: u8 = 8;
const T_HEX: u8 = 9;
const T_ULID: u8 = 10;
const T_PARTS: u8 = 11;
const T_ARR: u8 = 12;
const T_OBJ: u8 = 13;
const T_END: u8 = 14;

/// Strings written as one byte. APPEND ONLY: stored bodies name entries by position.
const DICT: &[&str] = &[
    // operation
    "id",
    "kind",
    "tenant",
    "status",
    "rail",
    "token",
    "amount",
    "fees",
    "recipient",
    "service_fee",
    "tenant_fee",
    "tenant_fee_waived",
    "from_wallet",
    "to_wallet",
    "from_phone",
    "to_phone",
    "payment",
    "from",
    "type",
    "wallet",
    "from_address",
    "legs",
    "to",
    "role",
    "valid_until",
    "holds",
    "debit",
    "credit",
    "phase",
    "tx_hash",
    "block",
    "submitted_at",
    "created_at",
    "updated_at",
    "settled_at",
    "from_customer",
    "next_check_at",
    "error_reason",
    "created_recipient_account",
    "quote",
    "metadata",
    "description",
    "reference",
    "customer_id",
    "treasury",
    "service",
    "Pending",
    "Single",
    "Evm",
    "Tron",
    "Solana",
    "Transfer",
    "Funding",
    "Swap",
    "Withdrawal",
    "USDC",
    "USDT",
    "QUEUED",
    "PENDING",
    "SUBMITTING",
    "SUBMITTED",
    "SUBMISSION_UNKNOWN",
    "SETTLED",
    "FAILED",
    "tr_",
    "wal_",
    "ten_",
    "fd_",
    "evt_",
    "whd_",
    "whe_",
    // webhook events and deliveries
    "event_type",
    "occurred_at",
    "payload",
    "deliveries",
    "replays",
    "data",
    "event",
    "network",
    "currency",
    "gas_fee",
    "confirmed_at",
    "block_number",
    "to_address",
    "transfer_id",
    "recipient_wallet",
    "confirmed",
    "failed",
    "polygon",
    "base",
    "bsc",
    "tron",
    "solana",
    "transfer.settled",
    "transfer.received",
    "transfer.failed",
    "wallet.transfer.confirmed",
    "wallet.transfer.failed",
    "endpoint",
    "event_id",
    "body",
    "state",
    "next_attempt_at",
    "attempts",
    "DELIVERED",
    "DEAD",
    "at",
    "latency_ms",
    "error",
    "reason",
    // sms, idempotency-like and misc
    "phone",
    "text",
    "message",
    "sent_at",
    "address",
    "addresses",
    "members",
    "name",
    "value",
    "currency_code",
];

static DICT_INDEX: LazyLock<HashMap<&'static str, u8>> = LazyLock::new(|| {
    DICT.iter()
        .enumerate()
        .filter_map(|(i, s)| Some((*s, u8::try_from(i).ok()?)))
        .collect()
});

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
