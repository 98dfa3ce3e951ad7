//! Payout providers' settlement reports (issue #52 item 4): the statement files staff
//! download from the provider's portal, parsed into the payouts they show
//! ([`TheirPayout`]) for `stablecoin_core::domain::payout_reconciliation`. Pure
//! functions over the file's text: no I/O.
//!
//! Columns are found by their header names, in any order, so a portal that adds or
//! moves a column still parses; a file without the required ones is refused with the
//! line at fault. Layouts (learned from public integrations and portal exports; not
//! checked against a live account, so the parser asks only for the columns it needs):
//!
//! - **M-Pesa organisation statement** (Safaricom M-Pesa org portal, account statement
//!   export; the B2C working account's): optional preamble lines (organisation, short
//!   code, period), then the header `Receipt No., Completion Time, Initiation Time,
//!   Details, Transaction Status, Paid In, Withdrawn, Balance, Balance Confirmed, Reason
//!   Type, Other Party Info, Linked Transaction ID, A/C No.`. A payout is a row with
//!   `Transaction Status` `Completed` and an amount in `Withdrawn` (either sign,
//!   thousands separators allowed), not a charge (B2C charges are their own rows, with
//!   `Charge` in `Details` or `Reason Type` and the payment in `Linked Transaction ID`).
//!   Its reference is `Receipt No.` (Daraja's `TransactionReceipt`, which our
//!   withdrawal records as `payout_reference`); its currency KES.
//!   Required: `Receipt No.`, `Completion Time`, `Transaction Status`, `Withdrawn`.
//! - **MTN MoMo statement** (MoMo partner portal, transaction history export): the
//!   header `Id, External Transaction Id, Date, Status, Type, Provider Category,
//!   Information, Note Message, From, From Name, To, To Name, Initiated By, On Behalf
//!   Of, Amount, Currency, Fee, Fee Currency, Balance, Balance Currency`. A payout is a
//!   row with `Status` `Successful` and `Type` `TRANSFER`, `DISBURSEMENT` or `PAYMENT`.
//!   Its reference is `Id` (the `financialTransactionId` our withdrawal records), its
//!   external id `External Transaction Id` (the `externalId` we sent: the withdrawal's
//!   id). Required: `Id`, `External Transaction Id`, `Date`, `Status`, `Type`,
//!   `Amount`, `Currency`.
//!
//! Sample files: `testdata/settlement/` of this crate.

use crate::ProviderError;
use rust_decimal::Decimal;
use stablecoin_core::domain::payout_reconciliation::TheirPayout;
use std::str::FromStr;

/// The largest report accepted, in rows (a month of a busy B2C account fits many
/// times over; a bigger file is split by period).
pub const MAX_ROWS: usize = 200_000;

fn bad(line: usize, reason: impl Into<String>) -> ProviderError {
    ProviderError::BadReport {
        line,
        reason: reason.into(),
    }
}

/// A parsed CSV record: the 1-based line it starts on, and its cells.
pub type Record = (usize, Vec<String>);

/// RFC 4180 records of `text` (quoted fields, doubled quotes, CRLF or LF line ends),
/// each with the 1-based line it starts on. Blank lines are skipped.
pub fn csv_records(text: &str) -> Result<Vec<Record>, ProviderError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    let mut row: Vec<String> = Vec::new();
    let mut cell = String::new();
    let mut quoted = false;
    let mut line = 1;
    let mut start = 1;
    let mut chars = text.chars().peekable();
    let end_row = |row: &mut Vec<String>, cell: &mut String, out: &mut Vec<_>, start| {
        row.push(std::mem::take(cell));
        let r = std::mem::take(row);
        if !(r.len() == 1 && r[0].trim().is_empty()) {
            out.push((start, r));
        }
    };
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    cell.push('"');
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    cell.push(c);
                }
                c => cell.push(c),
            }
            continue;
        }
        match c {
            '"' if cell.trim().is_empty() => {
                cell.clear();
                quoted = true;
            }
            ',' => row.push(std::mem::take(&mut cell)),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                end_row(&mut row, &mut cell, &mut out, start);
                line += 1;
                start = line;
                if out.len() > MAX_ROWS {
                    return Err(bad(line, format!("more than {MAX_ROWS} rows")));
                }
            }
            c => cell.push(c),
        }
    }
    if quoted {
        return Err(bad(start, "a quoted field is not closed"));
    }
    end_row(&mut row, &mut cell, &mut out, start);
    Ok(out)
}

/// A header's column positions by name (trimmed, case-insensitive, a trailing `.`
/// ignored).
struct Columns(Vec<String>);

fn norm(s: &str) -> String {
    s.trim().trim_end_matches('.').to_ascii_lowercase()
}

impl Columns {
    fn of(cells: &[String]) -> Self {
        Columns(cells.iter().map(|c| norm(c)).collect())
    }
    fn has(&self, name: &str) -> bool {
        self.0.contains(&norm(name))
    }
    fn at(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|c| *c == norm(name))
    }
}

/// Finds the header (the first record holding `marker`), checks `required`, and
/// returns it with the records after it.
fn table<'a>(
    records: &'a [Record],
    marker: &str,
    required: &[&str],
    what: &str,
) -> Result<(Columns, &'a [Record]), ProviderError> {
    let (i, (line, cells)) = records
        .iter()
        .enumerate()
        .find(|(_, (_, cells))| Columns::of(cells).has(marker))
        .ok_or_else(|| bad(0, format!("no header row with \"{marker}\": not {what}")))?;
    let cols = Columns::of(cells);
    for r in required {
        if !cols.has(r) {
            return Err(bad(*line, format!("the header has no \"{r}\" column")));
        }
    }
    Ok((cols, &records[i + 1..]))
}

fn get<'a>(cols: &Columns, row: &'a [String], name: &str) -> &'a str {
    cols.at(name)
        .and_then(|i| row.get(i))
        .map_or("", |s| s.trim())
}

/// A report amount: thousands separators and a sign allowed; the magnitude.
fn amount(line: usize, s: &str) -> Result<Decimal, ProviderError> {
    let cleaned: String = s.chars().filter(|c| *c != ',' && *c != ' ').collect();
    let unsigned = cleaned
        .strip_prefix('-')
        .or_else(|| cleaned.strip_prefix('+'))
        .unwrap_or(&cleaned);
    Decimal::from_str(unsigned).map_err(|_| bad(line, format!("amount \"{s}\" is not a number")))
}

/// The payouts of an M-Pesa organisation statement (see the module doc).
pub fn parse_mpesa_statement(text: &str) -> Result<Vec<TheirPayout>, ProviderError> {
    let records = csv_records(text)?;
    let (cols, rows) = table(
        &records,
        "Receipt No.",
        &[
            "Receipt No.",
            "Completion Time",
            "Transaction Status",
            "Withdrawn",
        ],
        "an M-Pesa organisation statement",
    )?;
    let mut out = Vec::new();
    for (line, row) in rows {
        let withdrawn = get(&cols, row, "Withdrawn");
        let status = get(&cols, row, "Transaction Status");
        let charge = get(&cols, row, "Details")
            .to_ascii_lowercase()
            .contains("charge")
            || get(&cols, row, "Reason Type")
                .to_ascii_lowercase()
                .contains("charge");
        if withdrawn.is_empty() || !status.eq_ignore_ascii_case("completed") || charge {
            continue;
        }
        let amount = amount(*line, withdrawn)?;
        if amount.is_zero() {
            continue;
        }
        let reference = get(&cols, row, "Receipt No.");
        if reference.is_empty() {
            return Err(bad(*line, "a payout without a Receipt No."));
        }
        out.push(TheirPayout {
            reference: reference.into(),
            external_id: None,
            amount,
            currency: Some("KES".into()),
            at: get(&cols, row, "Completion Time").into(),
            line: *line,
        });
    }
    Ok(out)
}

/// The payouts of an MTN MoMo statement (see the module doc).
pub fn parse_mtn_momo_statement(text: &str) -> Result<Vec<TheirPayout>, ProviderError> {
    let records = csv_records(text)?;
    let (cols, rows) = table(
        &records,
        "External Transaction Id",
        &[
            "Id",
            "External Transaction Id",
            "Date",
            "Status",
            "Type",
            "Amount",
            "Currency",
        ],
        "an MTN MoMo statement",
    )?;
    let mut out = Vec::new();
    for (line, row) in rows {
        let status = get(&cols, row, "Status");
        let kind = get(&cols, row, "Type").to_ascii_uppercase();
        if !status.eq_ignore_ascii_case("successful")
            || !matches!(kind.as_str(), "TRANSFER" | "DISBURSEMENT" | "PAYMENT")
        {
            continue;
        }
        let reference = get(&cols, row, "Id");
        if reference.is_empty() {
            return Err(bad(*line, "a payout without an Id"));
        }
        let external = get(&cols, row, "External Transaction Id");
        let currency = get(&cols, row, "Currency");
        out.push(TheirPayout {
            reference: reference.into(),
            external_id: (!external.is_empty()).then(|| external.to_string()),
            amount: amount(*line, get(&cols, row, "Amount"))?,
            currency: (!currency.is_empty()).then(|| currency.to_ascii_uppercase()),
            at: get(&cols, row, "Date").into(),
            line: *line,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MPESA: &str = include_str!("../testdata/settlement/mpesa_org_statement.csv");
    const MTN: &str = include_str!("../testdata/settlement/mtn_momo_statement.csv");

    #[test]
    fn the_mpesa_sample_yields_its_payouts_and_skips_charges_and_deposits() {
        let p = parse_mpesa_statement(MPESA).unwrap();
        let refs: Vec<&str> = p.iter().map(|p| p.reference.as_str()).collect();
        assert_eq!(refs, ["TKT4HX8PQ2", "TKT4HX8PQ1"]);
        assert_eq!(p[0].amount, Decimal::from_str("1280").unwrap());
        assert_eq!(p[1].amount, Decimal::from_str("12500").unwrap());
        assert_eq!(p[0].currency.as_deref(), Some("KES"));
        assert_eq!(p[0].at, "2026-11-29 09:15:07");
        assert_eq!(p[0].line, 7);
    }

    #[test]
    fn the_mtn_sample_yields_its_successful_transfers() {
        let p = parse_mtn_momo_statement(MTN).unwrap();
        let refs: Vec<&str> = p.iter().map(|p| p.reference.as_str()).collect();
        assert_eq!(refs, ["1184302917", "1184302655"]);
        assert_eq!(p[0].external_id.as_deref(), Some("wd_sample2"));
        assert_eq!(p[0].amount, Decimal::from_str("9.20").unwrap());
        assert_eq!(p[1].currency.as_deref(), Some("EUR"));
    }

    #[test]
    fn the_wrong_file_is_refused_with_the_line_at_fault() {
        let e = parse_mpesa_statement(MTN).unwrap_err();
        assert!(matches!(e, ProviderError::BadReport { line: 0, .. }), "{e}");
        let e =
            parse_mtn_momo_statement("Id,External Transaction Id,Date\r\n1,2,3\r\n").unwrap_err();
        assert!(matches!(e, ProviderError::BadReport { line: 1, .. }), "{e}");
        let bad_amount = "Receipt No.,Completion Time,Transaction Status,Withdrawn\n\
                          A1,2026-11-29,Completed,abc\n";
        let e = parse_mpesa_statement(bad_amount).unwrap_err();
        assert_eq!(e, bad(2, "amount \"abc\" is not a number"));
        assert!(matches!(
            csv_records("a,\"b\n").unwrap_err(),
            ProviderError::BadReport { line: 1, .. }
        ));
    }

    proptest! {
        /// Any cells written as RFC 4180 read back as they were, on the line they start.
        #[test]
        fn csv_records_read_back_what_was_written(
            rows in proptest::collection::vec(
                proptest::collection::vec("[a-z0-9,\"-][a-z0-9 ,\"\n-]{0,7}", 1..5), 1..6),
        ) {
            let mut text = String::new();
            for r in &rows {
                let cells: Vec<String> = r
                    .iter()
                    .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
                    .collect();
                text.push_str(&cells.join(","));
                text.push_str("\r\n");
            }
            let back = csv_records(&text).unwrap();
            let got: Vec<Vec<String>> = back.iter().map(|(_, r)| r.clone()).collect();
            prop_assert_eq!(got, rows.clone());
            let mut line = 1;
            for ((start, _), r) in back.iter().zip(&rows) {
                prop_assert_eq!(*start, line);
                line += 1 + r.iter().map(|c| c.matches('\n').count()).sum::<usize>();
            }
        }
    }
}
