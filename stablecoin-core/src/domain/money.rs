//! Token amounts as integer micro-units, tokens, and fiat amounts.
//!
//! Every API and webhook amount is a count of micro-units (10^-6 of a token) held in a
//! `u64`. Arithmetic is checked: an overflow is an error, never a wrap. Rails convert
//! micro-units to on-chain base units themselves (18 decimals on BNB Smart Chain).

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// Why an amount, token or currency text is refused. The domain's own error, so money
/// names no outer layer (KERNEL.md §3.1); `CoreError` wraps each variant as its variant
/// of the same name, with the same text, code and field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum MoneyError {
    /// An amount string the API refuses (format, sign, precision, zero, overflow).
    #[error("invalid amount {input:?}: {reason}")]
    InvalidAmount {
        /// The amount as given (at most 64 characters of it).
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A token name other than `USDC` or `USDT`.
    #[error("unknown token {token:?}: expected USDC or USDT")]
    UnknownToken {
        /// The name as given (at most 32 characters of it).
        token: String,
    },
    /// A fiat currency the FX desk does not quote.
    #[error("unknown or unsupported currency {currency:?}")]
    UnknownCurrency {
        /// The code as given (at most 16 characters of it).
        currency: String,
    },
}

impl MoneyError {
    /// The stable machine code, the one `CoreError` shows for it (`INVALID_AMOUNT`, ...).
    pub fn code(&self) -> &'static str {
        match self {
            MoneyError::InvalidAmount { .. } => "INVALID_AMOUNT",
            MoneyError::UnknownToken { .. } => "UNKNOWN_TOKEN",
            MoneyError::UnknownCurrency { .. } => "UNKNOWN_CURRENCY",
        }
    }
}

/// Micro-units per whole token.
pub const MICROS_PER_TOKEN: u64 = 1_000_000;
/// Decimal places of every API amount string.
pub const AMOUNT_DECIMALS: u32 = 6;

/// A non-negative token amount in micro-units (10^-6 of a token).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Micros(pub u64);

impl Micros {
    /// No tokens.
    pub const ZERO: Micros = Micros(0);
    /// The largest amount a request may carry: just below 10^12 tokens. Far inside what
    /// every store holds (2^63 - 1 micro-units, also for a few such amounts summed), so
    /// an amount a client sends is refused as input (400) rather than failing in the
    /// ledger; and a bound a JSON Schema pattern can state (at most 12 whole digits).
    pub const MAX_REQUEST: Micros = Micros(999_999_999_999_999_999);

    /// An amount of `micros` micro-units.
    pub const fn new(micros: u64) -> Self {
        Micros(micros)
    }

    /// The amount in micro-units.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// True for no tokens (an amount the API refuses for a send).
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Whole tokens; `None` on overflow.
    pub fn from_whole_tokens(tokens: u64) -> Option<Self> {
        tokens.checked_mul(MICROS_PER_TOKEN).map(Micros)
    }

    /// The sum; `None` on overflow.
    pub fn checked_add(self, other: Micros) -> Option<Micros> {
        self.0.checked_add(other.0).map(Micros)
    }

    /// The difference; `None` when `other` is larger.
    pub fn checked_sub(self, other: Micros) -> Option<Micros> {
        self.0.checked_sub(other.0).map(Micros)
    }

    /// Parses a decimal token amount (`"12"`, `"12.5"`, `"0.000001"`).
    ///
    /// Rejects signs, exponents, more than 6 decimal places, empty parts, and overflow,
    /// so a client typo can never be silently rounded into a different amount.
    pub fn parse_decimal(input: &str) -> Result<Self, MoneyError> {
        let bad = |why: &str| MoneyError::InvalidAmount {
            input: input.chars().take(64).collect(),
            reason: why.to_string(),
        };
        let s = input.trim();
        if s.is_empty() {
            return Err(bad("empty amount"));
        }
        if s.starts_with('-') {
            return Err(bad("amount must not be negative"));
        }
        let (whole, frac) = match s.split_once('.') {
            Some((w, f)) => (w, Some(f)),
            None => (s, None),
        };
        if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad("amount must be a decimal number such as \"12.50\""));
        }
        let whole_v: u64 = whole.parse().map_err(|_| bad("amount is too large"))?;
        let frac_v = match frac {
            None => 0,
            Some(f) => {
                if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad("amount must be a decimal number such as \"12.50\""));
                }
                if f.len() > AMOUNT_DECIMALS as usize {
                    return Err(bad("amount has more than 6 decimal places"));
                }
                let padded = format!("{f:0<6}");
                padded.parse::<u64>().map_err(|_| bad("invalid fraction"))?
            }
        };
        whole_v
            .checked_mul(MICROS_PER_TOKEN)
            .and_then(|w| w.checked_add(frac_v))
            .map(Micros)
            .ok_or_else(|| bad("amount is too large"))
    }

    /// Parses a positive amount of a request (zero is rejected, and anything above
    /// [`Micros::MAX_REQUEST`]).
    pub fn parse_positive(input: &str) -> Result<Self, MoneyError> {
        let v = Self::parse_decimal(input)?;
        let bad = |reason: &str| MoneyError::InvalidAmount {
            input: input.chars().take(64).collect(),
            reason: reason.into(),
        };
        if v.is_zero() {
            return Err(bad("amount must be greater than zero"));
        }
        if v > Self::MAX_REQUEST {
            return Err(bad("amount is too large: at most 999999999999.999999"));
        }
        Ok(v)
    }

    /// Parses a whole-token string (`"150"`), as escrow create requests use (spec 8.5).
    pub fn parse_whole_tokens(input: &str) -> Result<Self, MoneyError> {
        let s = input.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(MoneyError::InvalidAmount {
                input: input.chars().take(64).collect(),
                reason: "amount must be a whole number of tokens such as \"150\"".into(),
            });
        }
        s.parse::<u64>()
            .ok()
            .and_then(Micros::from_whole_tokens)
            .ok_or_else(|| MoneyError::InvalidAmount {
                input: input.chars().take(64).collect(),
                reason: "amount is too large".into(),
            })
    }

    /// The 6-place decimal string used in API responses and webhooks (`"12.500000"`).
    pub fn to_decimal_string(self) -> String {
        format!(
            "{}.{:06}",
            self.0 / MICROS_PER_TOKEN,
            self.0 % MICROS_PER_TOKEN
        )
    }

    /// The base-unit string (micro-units as an integer), as escrow responses use.
    pub fn to_base_units_string(self) -> String {
        self.0.to_string()
    }

    /// As a `Decimal` token amount (for FX arithmetic).
    pub fn to_decimal(self) -> Decimal {
        Decimal::from_i128_with_scale(self.0 as i128, AMOUNT_DECIMALS)
    }

    /// Truncates a non-negative decimal token amount to micro-units (rounds down).
    pub fn from_decimal_floor(d: Decimal) -> Option<Self> {
        if d.is_sign_negative() {
            return None;
        }
        let scaled = d.checked_mul(Decimal::from(MICROS_PER_TOKEN))?.trunc();
        u64::try_from(scaled.mantissa() / 10i128.pow(scaled.scale()))
            .ok()
            .map(Micros)
    }
}

impl fmt::Display for Micros {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_decimal_string())
    }
}

/// The stablecoins the service moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Token {
    /// USD Coin (`USDC`).
    Usdc,
    /// Tether USD (`USDT`).
    Usdt,
}

impl Token {
    /// Every token, in a fixed order (for per-token iterations such as balances).
    pub const ALL: [Token; 2] = [Token::Usdc, Token::Usdt];

    /// The ticker of the API and webhooks (`USDC`, `USDT`), equal to the serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            Token::Usdc => "USDC",
            Token::Usdt => "USDT",
        }
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Token {
    type Err = MoneyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "USDC" => Ok(Token::Usdc),
            "USDT" => Ok(Token::Usdt),
            other => Err(MoneyError::UnknownToken {
                token: other.chars().take(32).collect(),
            }),
        }
    }
}

/// An ISO 4217 fiat currency the FX desk quotes, with its minor-unit exponent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Currency {
    /// ISO 4217 code (`XOF`, `NGN`, ...).
    pub code: &'static str,
    /// ISO 4217 minor-unit exponent (XOF 0, NGN 2, ...).
    pub exponent: u32,
}

/// Currencies with their ISO 4217 exponents. Extend here, not in callers.
pub const CURRENCIES: &[Currency] = &[
    Currency {
        code: "XOF",
        exponent: 0,
    },
    Currency {
        code: "XAF",
        exponent: 0,
    },
    Currency {
        code: "NGN",
        exponent: 2,
    },
    Currency {
        code: "GHS",
        exponent: 2,
    },
    Currency {
        code: "KES",
        exponent: 2,
    },
    Currency {
        code: "UGX",
        exponent: 0,
    },
    Currency {
        code: "TZS",
        exponent: 2,
    },
    Currency {
        code: "RWF",
        exponent: 0,
    },
    Currency {
        code: "ZAR",
        exponent: 2,
    },
    Currency {
        code: "EGP",
        exponent: 2,
    },
    Currency {
        code: "MAD",
        exponent: 2,
    },
    Currency {
        code: "GNF",
        exponent: 0,
    },
    Currency {
        code: "CDF",
        exponent: 2,
    },
    Currency {
        code: "ZMW",
        exponent: 2,
    },
    Currency {
        code: "USD",
        exponent: 2,
    },
    Currency {
        code: "EUR",
        exponent: 2,
    },
];

impl Currency {
    /// The currency of an ISO 4217 code in [`CURRENCIES`] (case-sensitive); else
    /// `UnknownCurrency`.
    pub fn parse(code: &str) -> Result<Currency, MoneyError> {
        CURRENCIES
            .iter()
            .copied()
            .find(|c| c.code == code)
            .ok_or_else(|| MoneyError::UnknownCurrency {
                currency: code.chars().take(16).collect(),
            })
    }
}

impl Serialize for Currency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code)
    }
}

impl<'de> Deserialize<'de> for Currency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Currency::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_and_formats() {
        assert_eq!(Micros::parse_decimal("12.5").unwrap(), Micros(12_500_000));
        assert_eq!(Micros::parse_decimal("0.000001").unwrap(), Micros(1));
        assert_eq!(Micros::parse_decimal("7").unwrap(), Micros(7_000_000));
        assert_eq!(Micros(12_500_000).to_decimal_string(), "12.500000");
        assert_eq!(Micros(1).to_decimal_string(), "0.000001");
        assert_eq!(
            Micros::parse_whole_tokens("150").unwrap(),
            Micros(150_000_000)
        );
        assert_eq!(Micros(150_000_000).to_base_units_string(), "150000000");
    }

    #[test]
    fn rejects_bad_amounts() {
        for bad in [
            "",
            "-1",
            "1.2345678",
            "1e6",
            "abc",
            ".5",
            "5.",
            "+5",
            "1,5",
            " ",
            "1.2.3",
            "99999999999999999999",
        ] {
            let err = Micros::parse_decimal(bad).unwrap_err();
            assert_eq!(err.code(), "INVALID_AMOUNT", "{bad}");
        }
        assert_eq!(
            Micros::parse_positive("0").unwrap_err().code(),
            "INVALID_AMOUNT"
        );
        assert_eq!(
            Micros::parse_positive("999999999999.999999").unwrap(),
            Micros::MAX_REQUEST
        );
        for too_large in ["1000000000000", "9223372036854.775807", "18446744073709"] {
            assert!(Micros::parse_decimal(too_large).is_ok(), "{too_large}");
            let err = Micros::parse_positive(too_large).unwrap_err();
            assert_eq!(err.code(), "INVALID_AMOUNT", "{too_large}");
        }
        for bad in ["1.5", "0.1", "-3", "", "1e2"] {
            assert_eq!(
                Micros::parse_whole_tokens(bad).unwrap_err().code(),
                "INVALID_AMOUNT"
            );
        }
    }

    #[test]
    fn tokens_and_currencies() {
        assert_eq!("USDC".parse::<Token>().unwrap(), Token::Usdc);
        assert_eq!("usdc".parse::<Token>().unwrap_err().code(), "UNKNOWN_TOKEN");
        assert_eq!("SOL".parse::<Token>().unwrap_err().code(), "UNKNOWN_TOKEN");
        assert_eq!(Currency::parse("XOF").unwrap().exponent, 0);
        assert_eq!(Currency::parse("NGN").unwrap().exponent, 2);
        assert_eq!(
            Currency::parse("XXX").unwrap_err().code(),
            "UNKNOWN_CURRENCY"
        );
    }

    proptest! {
        #[test]
        fn format_parse_round_trip(v in 0u64..=u64::MAX / 2) {
            let m = Micros(v);
            prop_assert_eq!(Micros::parse_decimal(&m.to_decimal_string()).unwrap(), m);
            prop_assert_eq!(Micros::from_decimal_floor(m.to_decimal()).unwrap(), m);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = Micros::parse_decimal(&s);
            let _ = Micros::parse_whole_tokens(&s);
        }

        #[test]
        fn checked_arithmetic_is_exact(a in any::<u64>(), b in any::<u64>()) {
            let sum = Micros(a).checked_add(Micros(b));
            prop_assert_eq!(sum.map(|m| m.0), a.checked_add(b));
            let diff = Micros(a).checked_sub(Micros(b));
            prop_assert_eq!(diff.map(|m| m.0), a.checked_sub(b));
        }
    }
}
