//! A record body in the `records.body` column: the compact form
//! ([`stablecoin_core::ports::compact`]) as a BLOB when the format takes the body, else
//! the JSON text as TEXT. Reads tell the two apart by the cell's type, so rows written
//! before the compact form existed read as before and no migration rewrites them; a
//! compact cell is handed to the engine as it is, and decoded straight into the
//! record's type there (issue 47).

use stablecoin_core::ports::store::{JsonText, StoredBody};

/// A body bound as a `records.body` parameter.
pub(crate) struct BodyCell(pub(crate) StoredBody);

impl rusqlite::ToSql for BodyCell {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match &self.0 {
            StoredBody::Text(t) => t.to_sql(),
            StoredBody::Compact(b) => b.to_sql(),
        }
    }
}

/// The body of a `records.body` cell, whichever way it was stored.
pub(crate) fn body_of(cell: rusqlite::types::ValueRef<'_>) -> Result<JsonText, String> {
    match cell {
        rusqlite::types::ValueRef::Text(t) => std::str::from_utf8(t)
            .map(|t| JsonText::from_stored_text(t.to_string()))
            .map_err(|_| "corrupt row: body is not UTF-8".to_string()),
        rusqlite::types::ValueRef::Blob(b) => Ok(JsonText::from_stored_compact(b.to_vec())),
        _ => Err("corrupt row: body is neither text nor a compact body".into()),
    }
}
