//! Phone numbers in E.164, the key of every EVM wallet.

use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// A phone number that is not a plausible E.164 number. The domain's own error, so phone
/// parsing names no outer layer (KERNEL.md §3.1); `CoreError::InvalidPhone` wraps it
/// with the same text, code and field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid phone number {input:?}: {reason}")]
pub struct PhoneError {
    /// The number as given (at most 32 characters of it).
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

impl PhoneError {
    /// The stable machine code, the one `CoreError` shows for it.
    pub fn code(&self) -> &'static str {
        "INVALID_PHONE"
    }
}

/// A normalised E.164 number: `+` then 8 to 15 digits, the first not zero.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Phone(String);

impl Phone {
    /// Normalises common human formatting (spaces, dashes, dots, parentheses) and
    /// rejects anything that is not then E.164. A leading `00` is not accepted as `+`:
    /// the international prefix differs by country, so guessing could key a wallet to
    /// the wrong person.
    pub fn parse(input: &str) -> Result<Phone, PhoneError> {
        let bad = |why: &str| PhoneError {
            input: input.chars().take(32).collect(),
            reason: why.to_string(),
        };
        let trimmed = input.trim();
        let Some(rest) = trimmed.strip_prefix('+') else {
            return Err(bad(
                "phone number must be in E.164 format, starting with '+'",
            ));
        };
        let mut digits = String::with_capacity(15);
        for c in rest.chars() {
            match c {
                '0'..='9' => digits.push(c),
                ' ' | '-' | '.' | '(' | ')' => {}
                _ => return Err(bad("phone number may contain only digits after '+'")),
            }
        }
        if !(8..=15).contains(&digits.len()) {
            return Err(bad("phone number must have 8 to 15 digits"));
        }
        if digits.starts_with('0') {
            return Err(bad("country code must not start with 0"));
        }
        Ok(Phone(format!("+{digits}")))
    }

    /// The E.164 form (`+2250700000001`), as stored and sent to the SMS gateway.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A masked form for logs and messages (`+225*****0001`).
    pub fn masked(&self) -> String {
        let n = self.0.len();
        let keep_head = 4.min(n);
        let keep_tail = 4.min(n.saturating_sub(keep_head));
        format!(
            "{}{}{}",
            &self.0[..keep_head],
            "*".repeat(n - keep_head - keep_tail),
            &self.0[n - keep_tail..]
        )
    }
}

impl fmt::Display for Phone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Phone {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Phone::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn normalises() {
        assert_eq!(
            Phone::parse("+225 07 00 00 00 01").unwrap().as_str(),
            "+2250700000001"
        );
        assert_eq!(
            Phone::parse("+1 (415) 555-0100").unwrap().as_str(),
            "+14155550100"
        );
        assert_eq!(
            Phone::parse("+2250700000001").unwrap().masked(),
            "+225******0001"
        );
    }

    #[test]
    fn rejects() {
        for bad in [
            "",
            "2250700000001",
            "00225070000",
            "+0225070000",
            "+12",
            "+1234567890123456",
            "+225abc0000001",
            "+",
            "+225 07 00 00 00 01 ext 5",
        ] {
            assert_eq!(
                Phone::parse(bad).unwrap_err().code(),
                "INVALID_PHONE",
                "{bad}"
            );
        }
    }

    /// A valid number as people type it: `+`, 8 to 15 digits (the first not zero) with
    /// separators between them, maybe padded. Random text almost never parses, so the
    /// properties below also draw from this on purpose.
    const HUMAN_E164: &str = "[ ]{0,2}\\+[1-9]([0-9]|[ ().-][0-9]){7,14}[ ]{0,2}";

    proptest! {
        #[test]
        fn never_panics_and_output_is_e164(s in prop_oneof!["\\PC{0,30}", HUMAN_E164]) {
            if let Ok(p) = Phone::parse(&s) {
                let d = &p.as_str()[1..];
                prop_assert!(p.as_str().starts_with('+'));
                prop_assert!((8..=15).contains(&d.len()));
                prop_assert!(d.bytes().all(|b| b.is_ascii_digit()));
                prop_assert_eq!(Phone::parse(p.as_str()).unwrap(), p.clone());
            }
        }

        #[test]
        fn numbers_as_people_type_them_are_accepted(s in HUMAN_E164) {
            let p = Phone::parse(&s).unwrap();
            let digits: String = s.chars().filter(char::is_ascii_digit).collect();
            prop_assert_eq!(p.as_str(), format!("+{digits}"));
        }
    }
}
