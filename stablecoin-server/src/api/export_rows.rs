//! The rows of the exports (issue #52 item 3): which columns each export has, how a
//! stored record becomes a row, and how a row is written as CSV (RFC 4180, with
//! spreadsheet formula neutralisation) or as one line of JSON. Also [`Walk`], the
//! keyset walk over one or several store ranges that feeds a streamed export a page at
//! a time. Every column is documented in docs/exports.md; the tables here are the
//! source of the CSV header and of the OpenAPI descriptions.

use serde_json::{Map, Value};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::store::{ListPosition, ListQuery, Store, StoreError, StoredRecord};
use std::collections::VecDeque;
use std::sync::Arc;

/// Records read from the store per keyset page: the memory an export holds per range
/// it walks (a few hundred KiB), whatever the size of the export.
pub const PAGE: usize = 500;

/// The operations export's columns, in order. A row of `GET /v1/exports/operations` is
/// the operation as `GET /v1/transfers/{id}` (and the other reads) shows it; a field the
/// operation does not have is an empty cell (CSV) or absent (JSON lines).
pub const OPERATION_COLUMNS: &[&str] = &[
    "id",
    "object",
    "status",
    "error_reason",
    "rail",
    "token",
    "amount",
    "recipient_amount",
    "service_fee",
    "tenant_fee",
    "tenant_fee_waived",
    "from_phone_number",
    "to_phone_number",
    "quote_id",
    "tx_hash",
    "created_at",
    "updated_at",
    "settled_at",
    "payout_currency",
    "payout_amount",
    "payout_reference",
    "refund_tx_hash",
    "token_out",
    "quoted_amount_out",
    "min_amount_out",
    "amount_out",
    "venue",
];

/// The withdrawals export's columns: the withdrawal and its mobile-money payout leg.
pub const WITHDRAWAL_COLUMNS: &[&str] = &[
    "id",
    "status",
    "error_reason",
    "rail",
    "token",
    "amount",
    "from_phone_number",
    "tx_hash",
    "payout_phone_number",
    "payout_currency",
    "payout_amount",
    "payout_rate",
    "payout_provider",
    "payout_submitted_at",
    "payout_reference",
    "payout_failure",
    "payout_resolution",
    "refund_tx_hash",
    "created_at",
    "updated_at",
    "settled_at",
];

/// The checkout sessions export's columns: the session as `GET
/// /api/v1/checkout/sessions/{id}` shows it, without its deposits (the payments export)
/// and with `payment_options` and `metadata` as JSON text in CSV.
pub const SESSION_COLUMNS: &[&str] = &[
    "id",
    "session_id",
    "business_id",
    "mode",
    "status",
    "amount",
    "currency",
    "payment_method",
    "reference",
    "description",
    "customer_name",
    "customer_email",
    "customer_id",
    "amount_received",
    "amount_pending",
    "amount_due",
    "excess_amount",
    "late",
    "late_amount",
    "refundable_amount",
    "failure_reason",
    "network",
    "tx_hash",
    "expires_at",
    "created_at",
    "updated_at",
    "paid_at",
    "payment_options",
    "metadata",
];

/// The payments export's columns: one row per deposit into a session's address.
pub const PAYMENT_COLUMNS: &[&str] = &[
    "session_id",
    "business_id",
    "mode",
    "session_status",
    "reference",
    "deposit_id",
    "network",
    "address",
    "token",
    "amount",
    "applied",
    "excess",
    "late",
    "status",
    "tx_hash",
    "hash_pending",
    "confirmations",
    "detected_at",
    "confirmed_at",
];

/// The escrow deals export's columns: the deal as `GET /v1/escrows/{id}` shows it
/// (`recoverable` as JSON text in CSV).
pub const ESCROW_COLUMNS: &[&str] = &[
    "id",
    "object",
    "state",
    "amount",
    "token",
    "rail",
    "network",
    "chain_id",
    "reference",
    "escrow_address",
    "buyer_phone_number",
    "seller_phone_number",
    "buyer_address",
    "seller_address",
    "funding_expires_at",
    "funded_amount",
    "funded_at",
    "auto_release_after_secs",
    "auto_release_at",
    "payout_pending",
    "payout_tx_hash",
    "payout_failure_reason",
    "released_at",
    "refunded_at",
    "disputed_at",
    "dispute_reason",
    "resolution_note",
    "cancelled_at",
    "expired_at",
    "recoverable",
    "created_at",
    "updated_at",
];

/// How an export is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// RFC 4180 CSV, a header row, CRLF line ends.
    Csv,
    /// JSON lines: one JSON object per line, LF line ends.
    Jsonl,
}

impl Format {
    /// `csv` or `jsonl`; anything else is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "csv" => Some(Format::Csv),
            "jsonl" => Some(Format::Jsonl),
            _ => None,
        }
    }

    /// The response's `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8",
            Format::Jsonl => "application/x-ndjson",
        }
    }

    /// The file name's extension.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
        }
    }
}

/// True when `s` reads as a plain decimal number (`-12.500000`, `3`): a negative
/// amount is data, not a formula, and keeps its sign. (A leading `+`, as in an E.164
/// phone number, is neutralised like the statements' CSV does.)
fn is_number(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let mut parts = digits.splitn(2, '.');
    let int = parts.next().unwrap_or("");
    let frac = parts.next();
    !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.is_none_or(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
}

/// One CSV field (RFC 4180): a field that a spreadsheet would run as a formula (it
/// starts with `=`, `+`, `-`, `@`, a tab or a carriage return, and is not a plain
/// number) gets a leading `'`; a field holding a comma, a quote or a line break is
/// quoted, its quotes doubled.
///
/// Why the apostrophe: exports are opened in spreadsheets, and their text columns carry
/// what customers typed (a checkout's description, an escrow's reference). A cell
/// `=HYPERLINK(...)` would otherwise run when the file is opened (CSV injection).
pub fn csv_field(out: &mut String, s: &str) {
    let neutralise = s.starts_with(['=', '+', '-', '@', '\t', '\r']) && !is_number(s);
    let quote = s.contains([',', '"', '\n', '\r']);
    if quote {
        out.push('"');
    }
    if neutralise {
        out.push('\'');
    }
    if quote {
        for c in s.chars() {
            if c == '"' {
                out.push('"');
            }
            out.push(c);
        }
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// The CSV header row of `columns`, CRLF-terminated.
pub fn csv_header(out: &mut String, columns: &[&str]) {
    out.push_str(&columns.join(","));
    out.push_str("\r\n");
}

/// A JSON value as one CSV cell: strings as they are, numbers and booleans as JSON
/// writes them, `null` or absent as an empty cell, arrays and objects as JSON text.
fn cell(out: &mut String, v: Option<&Value>) {
    match v {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => csv_field(out, s),
        Some(Value::Bool(b)) => out.push_str(if *b { "true" } else { "false" }),
        Some(Value::Number(n)) => out.push_str(&n.to_string()),
        Some(other) => csv_field(out, &other.to_string()),
    }
}

/// Appends `row` as one CSV line of `columns`.
pub fn csv_row(out: &mut String, columns: &[&str], row: &Map<String, Value>) {
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        cell(out, row.get(*c));
    }
    out.push_str("\r\n");
}

/// Appends `row` as one line of JSON (LF-terminated).
pub fn json_line(out: &mut String, row: &Map<String, Value>) {
    // A map of JSON values always serializes.
    out.push_str(&serde_json::to_string(row).unwrap_or_else(|_| "{}".into()));
    out.push('\n');
}

/// One store range a [`Walk`] reads, newest first, a keyset page at a time.
struct Lane {
    query: ListQuery,
    after: Option<ListPosition>,
    buf: VecDeque<StoredRecord>,
    done: bool,
}

/// A walk, newest first (`created_at`, then id), over the records of one or several
/// store ranges (`ListQuery`s: one per operation kind, say) created in `[from, to)`.
///
/// Each range is read by `Store::list_before` in pages of [`PAGE`], entered at `to`; the
/// walk merges the ranges' heads, so it holds at most one page per range whatever the
/// export's size. It stops at the first record older than `from`. Records created
/// while it walks land ahead of its position and are not seen; none is seen twice.
pub struct Walk {
    store: Arc<dyn Store>,
    lanes: Vec<Lane>,
    from: Option<Timestamp>,
}

impl Walk {
    /// A walk of `queries` (their `limit` and `offset` are replaced) over `[from, to)`.
    pub fn new(
        store: Arc<dyn Store>,
        queries: Vec<ListQuery>,
        from: Option<Timestamp>,
        to: Option<Timestamp>,
    ) -> Self {
        let lanes = queries
            .into_iter()
            .map(|q| Lane {
                query: ListQuery {
                    limit: PAGE,
                    offset: 0,
                    ..q
                },
                after: to.map(ListPosition::before_time),
                buf: VecDeque::new(),
                done: false,
            })
            .collect();
        Walk { store, lanes, from }
    }

    /// The next record, or `None` at the end of the walk.
    pub async fn next(&mut self) -> Result<Option<StoredRecord>, StoreError> {
        for lane in &mut self.lanes {
            if lane.buf.is_empty() && !lane.done {
                let page = self
                    .store
                    .list_before(&lane.query, lane.after.as_ref())
                    .await?;
                lane.done = page.len() < PAGE;
                if let Some(last) = page.last() {
                    lane.after = Some(ListPosition::of(last));
                }
                lane.buf.extend(page);
            }
        }
        let newest = self
            .lanes
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.buf.front().map(|r| (i, r)))
            .max_by(|(_, a), (_, b)| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
            .map(|(i, _)| i);
        let Some(i) = newest else {
            return Ok(None);
        };
        let rec = self.lanes[i].buf.pop_front();
        match (rec, self.from) {
            // Every range is newest first: once the newest head is older than `from`,
            // so is everything left.
            (Some(r), Some(from)) if r.created_at < from => {
                for lane in &mut self.lanes {
                    lane.buf.clear();
                    lane.done = true;
                }
                Ok(None)
            }
            (r, _) => Ok(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn field(s: &str) -> String {
        let mut out = String::new();
        csv_field(&mut out, s);
        out
    }

    /// Reads one RFC 4180 field back (the inverse of `csv_field` without the apostrophe).
    fn unquote(s: &str) -> String {
        match s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
            Some(inner) => inner.replace("\"\"", "\""),
            None => s.to_string(),
        }
    }

    #[test]
    fn fields_are_quoted_and_formulas_neutralised() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\r\nlines"), "\"two\r\nlines\"");
        assert_eq!(field("=1+2"), "'=1+2");
        assert_eq!(field("+254700"), "'+254700");
        assert_eq!(field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(field("-cmd"), "'-cmd");
        assert_eq!(
            field("=HYPERLINK(\"x\",\"y\")"),
            "\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\""
        );
        // Signed amounts are numbers, not formulas.
        assert_eq!(field("-12.500000"), "-12.500000");
        assert_eq!(field("-"), "'-");
    }

    proptest! {
        #[test]
        fn a_field_reads_back_as_written(s in "[a-z0-9=+@,\"\n\r\t .-]{0,24}") {
            let f = field(&s);
            let back = unquote(&f);
            let expected = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) && !is_number(&s) {
                format!("'{s}")
            } else {
                s.clone()
            };
            prop_assert_eq!(back, expected);
            // An unquoted field never holds a separator, quote or line break.
            if !f.starts_with('"') {
                prop_assert!(!f.contains([',', '"', '\n', '\r']));
            }
        }
    }
}
