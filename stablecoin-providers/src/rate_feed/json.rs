//! Reading one value out of a feed's JSON answer by JSON pointer (RFC 6901), from the
//! raw text: a rate never passes through an `f64`.

use rust_decimal::Decimal;
use serde_json::value::RawValue;
use stablecoin_core::domain::time::Timestamp;
use std::collections::HashMap;

/// The raw JSON text at `pointer` in `body`, or why there is none.
pub fn raw_at<'a>(body: &'a str, pointer: &str) -> Result<&'a str, String> {
    let mut here: &'a RawValue =
        serde_json::from_str(body).map_err(|e| format!("the answer is not JSON: {e}"))?;
    if pointer.is_empty() {
        return Ok(here.get());
    }
    let Some(path) = pointer.strip_prefix('/') else {
        return Err(format!(
            "{pointer:?} is not a JSON pointer (it must start with '/')"
        ));
    };
    for token in path.split('/') {
        let key = token.replace("~1", "/").replace("~0", "~");
        let text = here.get().trim_start();
        let next = if text.starts_with('{') {
            let map: HashMap<String, &'a RawValue> = serde_json::from_str(here.get())
                .map_err(|e| format!("the answer is not JSON: {e}"))?;
            map.get(&key).copied()
        } else if text.starts_with('[') {
            let list: Vec<&'a RawValue> = serde_json::from_str(here.get())
                .map_err(|e| format!("the answer is not JSON: {e}"))?;
            key.parse::<usize>().ok().and_then(|i| list.get(i).copied())
        } else {
            None
        };
        here = next.ok_or_else(|| format!("the answer has nothing at {pointer}"))?;
    }
    Ok(here.get())
}

/// A decimal from a JSON number or a JSON string holding one (`600.5`, `"600.5"`,
/// `6.005e2`), exactly.
pub fn decimal(raw: &str) -> Result<Decimal, String> {
    let raw = raw.trim();
    let text = if raw.starts_with('"') {
        serde_json::from_str::<String>(raw).map_err(|e| e.to_string())?
    } else {
        raw.to_string()
    };
    let text = text.trim();
    let parsed = if text.contains(['e', 'E']) {
        Decimal::from_scientific(text)
    } else {
        Decimal::from_str_exact(text)
    };
    parsed.map_err(|_| format!("{} is not a decimal number", clip(raw)))
}

/// An instant from a JSON number of Unix seconds (`1700000000`, `1700000000.25`), a
/// string of them, or an RFC 3339 string (`"2023-11-14T22:13:20Z"`).
pub fn timestamp(raw: &str) -> Result<Timestamp, String> {
    let raw = raw.trim();
    if raw.starts_with('"') {
        let s = serde_json::from_str::<String>(raw).map_err(|e| e.to_string())?;
        if let Some(t) = Timestamp::parse_rfc3339(s.trim()) {
            return Ok(t);
        }
    }
    let secs = decimal(raw)
        .map_err(|_| format!("{} is neither Unix seconds nor an RFC 3339 time", clip(raw)))?;
    secs.checked_mul(Decimal::from(1000))
        .map(|ms| ms.trunc())
        .and_then(|ms| i64::try_from(ms).ok())
        .map(Timestamp)
        .ok_or_else(|| format!("{} is out of range as Unix seconds", clip(raw)))
}

/// At most 40 characters of `s`, for error messages about a feed's answer.
fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = r#"{"data":{"rate":600.123456789012345678901,"ts":1700000000,
        "iso":"2023-11-14T22:13:20Z","s":"1550.25","a/b":{"~x":[1,"2.5"]}}}"#;

    #[test]
    fn numbers_are_read_exactly_from_the_raw_text() {
        let r = decimal(raw_at(BODY, "/data/rate").unwrap()).unwrap();
        assert_eq!(r.to_string(), "600.123456789012345678901");
        assert_eq!(
            decimal(raw_at(BODY, "/data/s").unwrap())
                .unwrap()
                .to_string(),
            "1550.25"
        );
        assert_eq!(
            decimal(raw_at(BODY, "/data/a~1b/~0x/1").unwrap())
                .unwrap()
                .to_string(),
            "2.5"
        );
        assert_eq!(decimal("6.005e2").unwrap().to_string(), "600.5");
    }

    #[test]
    fn timestamps_are_unix_seconds_or_rfc3339() {
        let secs = timestamp(raw_at(BODY, "/data/ts").unwrap()).unwrap();
        let iso = timestamp(raw_at(BODY, "/data/iso").unwrap()).unwrap();
        assert_eq!(secs, Timestamp(1_700_000_000_000));
        assert_eq!(iso, secs);
    }

    #[test]
    fn a_missing_or_odd_value_is_an_error() {
        assert!(raw_at(BODY, "/data/nope").is_err());
        assert!(raw_at(BODY, "data/rate").is_err());
        assert!(raw_at("{not json", "/data").is_err());
        assert!(raw_at(BODY, "/data/rate/deeper").is_err());
        assert!(decimal("true").is_err());
        assert!(decimal(r#""12abc""#).is_err());
        assert!(timestamp(r#""yesterday""#).is_err());
        assert!(timestamp("1e300").is_err());
    }
}
