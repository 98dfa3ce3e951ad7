//! FX quotes (spec 2.3, 4.2): a locked fiat-to-token rate, valid for 60 seconds and
//! usable once, plus the `quote_id` forms a transfer accepts.
//!
//! Conversion rounds the token amount DOWN to the micro-unit and is computed with exact
//! integer arithmetic, so a quote never promises more tokens than the fiat pays for.

use crate::domain::RuleError;
use crate::domain::ids::{QuoteId, TenantId};
use crate::domain::money::{AMOUNT_DECIMALS, Currency, Micros, MoneyError, Token};
use crate::domain::time::Timestamp;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Quote lifetime (spec 8): long enough for a client to confirm, short enough that the
/// locked rate cannot drift far from the market.
pub const QUOTE_TTL_MS: i64 = 60_000;

/// Decimal places of a fiat amount in requests and responses (spec 2.3).
const FIAT_DECIMALS: u32 = 2;
/// The largest fiat amount quoted; keeps every later product far from `Decimal` limits.
const MAX_FIAT_AMOUNT: i64 = 1_000_000_000_000;
/// The `quote_id` prefix of a transfer that moves tokens without FX (spec 2.3).
const DIRECT_CRYPTO_PREFIX: &str = "DIRECT_CRYPTO:";

fn bad_fiat(reason: &str) -> RuleError {
    RuleError::InvalidParameter {
        field: "fiat_amount",
        reason: reason.to_string(),
    }
}

/// True for `digits[.digits]`: no signs, spaces or underscores, which `Decimal::from_str`
/// would otherwise accept and silently reinterpret.
fn is_plain_decimal(s: &str) -> bool {
    let (whole, frac) = match s.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (s, None),
    };
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    digits(whole) && frac.is_none_or(digits)
}

/// Rejects what the API refuses; shared by request parsing and `make_quote` so a quote can
/// never hold an amount a request could not have carried.
fn check_fiat_amount(d: Decimal) -> Result<Decimal, RuleError> {
    if d <= Decimal::ZERO {
        return Err(bad_fiat("fiat_amount must be greater than zero"));
    }
    if d.normalize().scale() > FIAT_DECIMALS {
        return Err(bad_fiat("fiat_amount has more than 2 decimal places"));
    }
    if d > Decimal::from(MAX_FIAT_AMOUNT) {
        return Err(bad_fiat("fiat_amount is larger than 1000000000000"));
    }
    let mut kept = d.normalize();
    kept.rescale(FIAT_DECIMALS);
    Ok(kept)
}

/// Parses a fiat amount string (from a JSON number or string): positive, at most 2 decimal
/// places, at most 1e12; else InvalidParameter{field:"fiat_amount",..}
///
/// Exponent forms (`1e4`, `1.5E+3`) are accepted because a JSON number may be written
/// that way; trailing zeros beyond two places (`10.500`) are accepted because they do
/// not change the value. The result always has scale 2.
pub fn parse_fiat_amount(s: &str) -> Result<Decimal, RuleError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(bad_fiat("fiat_amount is empty"));
    }
    if t.len() > 64 {
        return Err(bad_fiat("fiat_amount is too long"));
    }
    let not_a_number =
        || bad_fiat("fiat_amount must be a positive decimal number such as 10000.50");
    let d = match t.find(['e', 'E']) {
        None => {
            if !is_plain_decimal(t) {
                return Err(not_a_number());
            }
            Decimal::from_str(t).map_err(|_| bad_fiat("fiat_amount is too large"))?
        }
        Some(i) => {
            let (mantissa, exp) = (&t[..i], &t[i + 1..]);
            let exp_digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
            if !is_plain_decimal(mantissa)
                || exp_digits.is_empty()
                || exp_digits.len() > 3
                || !exp_digits.bytes().all(|b| b.is_ascii_digit())
            {
                return Err(not_a_number());
            }
            Decimal::from_scientific(t).map_err(|_| not_a_number())?
        }
    };
    check_fiat_amount(d)
}

/// A locked conversion rate. Stored so that a transfer can redeem it exactly once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quote {
    /// `fx_...`: what a transfer's `quote_id` names.
    pub id: QuoteId,
    /// The tenant that asked for it; only its transfers may redeem it.
    pub tenant: TenantId,
    /// ISO 4217 code of the fiat side (`XOF`, `NGN`, ...).
    pub local_currency: String,
    /// The token the transfer must send.
    pub target_token: Token,
    /// The fiat paid, exactly 2 decimal places.
    pub fiat_amount: Decimal,
    /// Local currency per token.
    pub rate: Decimal,
    /// Tokens the fiat buys, `fiat_amount / rate` rounded down to the micro-unit.
    pub expected_out: Micros,
    /// When the rate was locked.
    pub created_at: Timestamp,
    /// `created_at` + [`QUOTE_TTL_MS`]; the quote is refused from this instant on.
    pub expires_at: Timestamp,
    /// When a transfer redeemed it; `Some` means it can never be used again.
    pub used_at: Option<Timestamp>,
    /// The operation that redeemed the quote, so a redemption can be traced.
    pub used_by: Option<String>,
}

/// `floor(fiat / rate)` in micro-units, by long division on integers.
///
/// `Decimal` division keeps only 28 significant digits and rounds the last one, which can
/// carry a quotient such as 16.66666699...9 up to 16.666667 before it is floored, and so
/// over-deliver a micro-unit. Long division is exact at every step.
fn tokens_for_fiat(fiat: Decimal, rate: Decimal) -> Option<Micros> {
    // fiat = fm / 10^fs and rate = rm / 10^rs, both positive, so
    // micros = floor(fm * 10^(rs + 6) / (rm * 10^fs)).
    let fm = u128::try_from(fiat.mantissa()).ok()?;
    let rm = u128::try_from(rate.mantissa()).ok()?;
    if rm == 0 {
        return None;
    }
    let up = rate.scale() + AMOUNT_DECIMALS;
    let (num, mut shift) = if up >= fiat.scale() {
        (fm, up - fiat.scale())
    } else {
        // Dropping low fiat digits first is exact for a floor: floor(floor(a/b)/c) = floor(a/(bc)).
        (fm / 10u128.checked_pow(fiat.scale() - up)?, 0)
    };
    let mut q = num / rm;
    let mut r = num % rm;
    while shift > 0 {
        // r < rm < 2^96, so r * 10 cannot overflow u128.
        let wide = r * 10;
        q = q.checked_mul(10)?.checked_add(wide / rm)?;
        r = wide % rm;
        if q > u128::from(u64::MAX) {
            return None;
        }
        shift -= 1;
    }
    u64::try_from(q).ok().map(Micros)
}

/// rate = local currency per token (> 0 else InvalidParameter rate); expected_out =
/// fiat_amount / rate rounded DOWN to 6 places (must be > 0 else InvalidAmount "too small");
/// expires_at = now + 60 s; fiat_amount kept with scale 2.
pub fn make_quote(
    id: QuoteId,
    tenant: TenantId,
    currency: Currency,
    target_token: Token,
    fiat_amount: Decimal,
    rate: Decimal,
    now: Timestamp,
) -> Result<Quote, RuleError> {
    if rate <= Decimal::ZERO {
        return Err(RuleError::InvalidParameter {
            field: "rate",
            reason: format!("rate must be greater than zero, got {rate}"),
        });
    }
    let fiat_amount = check_fiat_amount(fiat_amount)?;
    let expected_out =
        tokens_for_fiat(fiat_amount, rate).ok_or_else(|| RuleError::InvalidAmount {
            input: fiat_amount.to_string(),
            reason: "fiat_amount converts to more tokens than can be represented".into(),
        })?;
    if expected_out.is_zero() {
        return Err(RuleError::InvalidAmount {
            input: fiat_amount.to_string(),
            reason: format!(
                "fiat_amount is too small: it converts to less than 0.000001 {target_token}"
            ),
        });
    }
    Ok(Quote {
        id,
        tenant,
        local_currency: currency.code.to_string(),
        target_token,
        fiat_amount,
        rate,
        expected_out,
        created_at: now,
        expires_at: now.plus_millis(QUOTE_TTL_MS),
        used_at: None,
        used_by: None,
    })
}

impl Quote {
    /// `<LOCAL_CURRENCY>_<TOKEN>` (spec 2.3), e.g. `XOF_USDC`.
    pub fn currency_pair(&self) -> String {
        format!("{}_{}", self.local_currency, self.target_token)
    }

    /// QuoteExpired if now >= expires_at; QuoteAlreadyUsed if used_at is Some;
    /// QuoteTokenMismatch if token differs.
    ///
    /// "Already used" is reported before "expired": a client retrying with a spent quote
    /// must learn that the transfer already happened, not be told to fetch a new quote and
    /// pay twice. A quote is dead at its `expires_at` instant, so a client that checks
    /// `expires_at` (spec 4.2) never sees a quote it believed valid refused.
    pub fn check_usable(&self, now: Timestamp, token: Token) -> Result<(), RuleError> {
        if self.used_at.is_some() {
            return Err(RuleError::QuoteAlreadyUsed {
                quote_id: self.id.to_string(),
            });
        }
        if now >= self.expires_at {
            return Err(RuleError::QuoteExpired {
                quote_id: self.id.to_string(),
            });
        }
        if token != self.target_token {
            return Err(RuleError::QuoteTokenMismatch {
                quote_token: self.target_token.to_string(),
                token: token.to_string(),
            });
        }
        Ok(())
    }

    /// Records the redemption. The first redemption wins, so a repeated call cannot hide
    /// which operation actually spent the quote; callers run `check_usable` first.
    pub fn mark_used(&mut self, now: Timestamp, by_operation: &str) {
        if self.used_at.is_none() {
            self.used_at = Some(now);
            self.used_by = Some(by_operation.to_string());
        }
    }

    /// The API response (spec 2.3).
    pub fn view(&self) -> QuoteView {
        let mut fiat = self.fiat_amount;
        fiat.rescale(FIAT_DECIMALS);
        QuoteView {
            currency_pair: self.currency_pair(),
            expected_out: self.expected_out.to_decimal_string(),
            expires_at: self.expires_at.to_rfc3339(),
            fiat_amount: fiat.to_string(),
            quote_id: self.id.to_string(),
            rate: self.rate.normalize().to_string(),
            target_token: self.target_token.to_string(),
        }
    }
}

/// The spec 2.3 response, every field a string
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuoteView {
    /// `<LOCAL_CURRENCY>_<TOKEN>`, e.g. `XOF_USDC`.
    pub currency_pair: String,
    /// 6 decimals.
    pub expected_out: String,
    /// RFC 3339, UTC.
    pub expires_at: String,
    /// Exactly two decimals, e.g. "10000.00".
    pub fiat_amount: String,
    /// `fx_...`.
    pub quote_id: String,
    /// Normalized (no trailing zeros) but never less precise than the stored rate.
    pub rate: String,
    /// `USDC` or `USDT`.
    pub target_token: String,
}

/// What a transfer's `quote_id` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QuoteRef {
    /// A locked FX quote, redeemed once by the transfer.
    Fx(QuoteId),
    /// `DIRECT_CRYPTO:<TOKEN>:<amount>`: a token amount sent as is, without FX.
    DirectCrypto {
        /// The token to send.
        token: Token,
        /// The amount to send, positive, at most 6 decimal places on the wire.
        amount: Micros,
    },
}

impl fmt::Display for QuoteRef {
    /// The wire form `parse_quote_ref` accepts.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuoteRef::Fx(id) => f.write_str(id.as_str()),
            QuoteRef::DirectCrypto { token, amount } => {
                write!(
                    f,
                    "{DIRECT_CRYPTO_PREFIX}{token}:{}",
                    amount.to_decimal_string()
                )
            }
        }
    }
}

/// "fx_..." (must be a well-formed QuoteId) or "DIRECT_CRYPTO:{USDC|USDT}:{amount}" (amount
/// positive, <= 6 places); anything else InvalidQuoteId with a clear reason; never panics
pub fn parse_quote_ref(s: &str) -> Result<QuoteRef, RuleError> {
    let bad = |reason: String| RuleError::InvalidQuoteId {
        quote_id: s.chars().take(64).collect(),
        reason,
    };
    if s.is_empty() {
        return Err(bad("quote_id is empty".into()));
    }
    if s.starts_with("fx_") {
        return QuoteId::parse(s).map(QuoteRef::Fx).ok_or_else(|| {
            bad("an FX quote id is \"fx_\" followed by 26 Crockford base32 characters".into())
        });
    }
    let Some(rest) = s.strip_prefix(DIRECT_CRYPTO_PREFIX) else {
        return Err(bad(
            "expected an FX quote id (\"fx_...\") or \"DIRECT_CRYPTO:{USDC|USDT}:{amount}\"".into(),
        ));
    };
    let Some((token, amount)) = rest.split_once(':') else {
        return Err(bad("expected \"DIRECT_CRYPTO:{USDC|USDT}:{amount}\"".into()));
    };
    let token = Token::from_str(token)
        .map_err(|_| bad("the DIRECT_CRYPTO token must be USDC or USDT".into()))?;
    // `parse_positive` trims; a quote id is an exact string, so whitespace is refused here.
    if amount.is_empty() || amount.trim() != amount {
        return Err(bad(
            "the DIRECT_CRYPTO amount must be a decimal such as 12.50".into(),
        ));
    }
    let amount = Micros::parse_positive(amount).map_err(|e| match e {
        MoneyError::InvalidAmount { reason, .. } => bad(format!("DIRECT_CRYPTO {reason}")),
        other => bad(other.to_string()),
    })?;
    Ok(QuoteRef::DirectCrypto { token, amount })
}

#[cfg(test)]
mod tests {
    use super::*;
    // The store impls live in engine/records.rs; these tests check what they claim.
    use crate::ports::record::Record;
    use proptest::prelude::*;

    const NOW: Timestamp = Timestamp::from_secs(1_795_341_600); // 2026-11-22T10:00:00Z

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    fn quote(fiat: &str, rate: &str) -> Result<Quote, RuleError> {
        make_quote(
            QuoteId::generate(NOW.millis(), [7; 10]),
            TenantId::generate(NOW.millis(), [1; 10]),
            Currency::parse("XOF").unwrap(),
            Token::Usdc,
            d(fiat),
            d(rate),
            NOW,
        )
    }

    #[test]
    fn worked_example_xof_to_usdc() {
        let q = quote("10000", "600").unwrap();
        assert_eq!(q.expected_out, Micros(16_666_666));
        assert_eq!(q.currency_pair(), "XOF_USDC");
        assert_eq!(q.expires_at, NOW.plus_secs(60));
        assert_eq!(q.fiat_amount.scale(), 2);
        let v = q.view();
        assert_eq!(v.expected_out, "16.666666");
        assert_eq!(v.fiat_amount, "10000.00");
        assert_eq!(v.currency_pair, "XOF_USDC");
        assert_eq!(v.expires_at, "2026-11-22T10:01:00Z");
        assert_eq!(v.rate, "600");
        assert_eq!(v.target_token, "USDC");
        assert!(v.quote_id.starts_with("fx_"));
        assert_eq!(v.quote_id, q.id.to_string());
    }

    #[test]
    fn view_formats_rate_and_fiat() {
        let q = quote("1234.5", "655.957000").unwrap();
        assert_eq!(q.view().fiat_amount, "1234.50");
        assert_eq!(q.view().rate, "655.957");
        assert_eq!(q.expected_out, Micros(1_881_983)); // 1.8819831177...
        let q = quote("1", "0.000000123456789").unwrap();
        assert_eq!(q.view().rate, "0.000000123456789");
        assert_eq!(q.view().expected_out, "8100000.073710");
    }

    #[test]
    fn conversion_rounds_down_where_decimal_division_would_round_up() {
        // The exact quotient 0.0000099999...9 (28 nines) floors to 9 micro-units, but
        // `Decimal` keeps 28 significant digits and rounds it up to 0.00001, which would
        // over-deliver one micro-unit.
        let (fiat, rate) = ("1000000000000", "100000000000000000.00000000001");
        let naive = Micros::from_decimal_floor(d(fiat) / d(rate));
        assert_eq!(naive, Some(Micros(10))); // the hazard this module avoids
        assert_eq!(quote(fiat, rate).unwrap().expected_out, Micros(9));
        // Just above a boundary floors to the boundary.
        let q = quote("1", "0.9999999999999999999999999999").unwrap();
        assert_eq!(q.expected_out, Micros(1_000_000));
        let q = quote("1", "1.0000000000000000000000000001").unwrap();
        assert_eq!(q.expected_out, Micros(999_999));
    }

    #[test]
    fn bad_quote_inputs() {
        assert_eq!(quote("10000", "0").unwrap_err().param(), Some("rate"));
        assert_eq!(quote("10000", "-600").unwrap_err().param(), Some("rate"));
        for fiat in ["0", "-5", "1.234", "1000000000000.01"] {
            let e = quote(fiat, "600").unwrap_err();
            assert_eq!(
                (e.code(), e.param()),
                ("INVALID_PARAMETER", Some("fiat_amount")),
                "{fiat}"
            );
        }
        // Too small to buy one micro-unit.
        let e = quote("0.01", "600000").unwrap_err();
        assert_eq!(e.code(), "INVALID_AMOUNT");
        assert!(e.to_string().contains("too small"));
        // Too many tokens to represent.
        assert_eq!(
            quote("1000000000000", "0.0000001").unwrap_err().code(),
            "INVALID_AMOUNT"
        );
        assert!(quote("1000000000000", "600").is_ok());
    }

    #[test]
    fn parse_fiat_amount_rules() {
        for (s, want) in [
            ("10000", "10000.00"),
            ("10000.5", "10000.50"),
            ("10000.50", "10000.50"),
            ("0.01", "0.01"),
            ("10.500", "10.50"),
            (" 7 ", "7.00"),
            ("1e4", "10000.00"),
            ("1.5E+3", "1500.00"),
            ("1000000000000", "1000000000000.00"),
        ] {
            let v = parse_fiat_amount(s).unwrap();
            assert_eq!(v.to_string(), want, "{s}");
            assert_eq!(v.scale(), 2);
        }
        for s in [
            "",
            " ",
            "0",
            "0.00",
            "-1",
            "+1",
            "1.234",
            "1e-3",
            "1_000",
            "1,5",
            ".5",
            "5.",
            "abc",
            "1000000000000.01",
            "1e13",
            "NaN",
            "inf",
            "1e",
            "e5",
            "1e+",
            "1e99999",
            "99999999999999999999999999999999",
            "1.2.3",
            "0x10",
        ] {
            let e = parse_fiat_amount(s).unwrap_err();
            assert_eq!(
                (e.code(), e.param()),
                ("INVALID_PARAMETER", Some("fiat_amount")),
                "{s:?}"
            );
        }
    }

    #[test]
    fn quote_lifecycle() {
        let mut q = quote("10000", "600").unwrap();
        assert!(q.check_usable(NOW, Token::Usdc).is_ok());
        assert!(
            q.check_usable(q.expires_at.plus_millis(-1), Token::Usdc)
                .is_ok()
        );
        assert_eq!(
            q.check_usable(q.expires_at, Token::Usdc)
                .unwrap_err()
                .code(),
            "QUOTE_EXPIRED"
        );
        assert_eq!(
            q.check_usable(NOW, Token::Usdt).unwrap_err().code(),
            "QUOTE_TOKEN_MISMATCH"
        );
        q.mark_used(NOW.plus_secs(1), "tr_1");
        assert_eq!(q.used_at, Some(NOW.plus_secs(1)));
        assert_eq!(q.used_by.as_deref(), Some("tr_1"));
        assert_eq!(
            q.check_usable(NOW.plus_secs(2), Token::Usdc)
                .unwrap_err()
                .code(),
            "QUOTE_ALREADY_USED"
        );
        assert_eq!(
            q.check_usable(q.expires_at.plus_secs(5), Token::Usdc)
                .unwrap_err()
                .code(),
            "QUOTE_ALREADY_USED"
        );
        q.mark_used(NOW.plus_secs(3), "tr_2");
        assert_eq!(q.used_by.as_deref(), Some("tr_1"));
    }

    #[test]
    fn quote_record_round_trip() {
        let q = quote("10000", "600").unwrap();
        assert_eq!(Quote::KIND, "quote");
        assert_eq!(Record::id(&q), q.id.to_string());
        assert_eq!(q.tenant(), Some(q.tenant.to_string()));
        assert_eq!(Record::created_at(&q), NOW);
        let back: Quote = serde_json::from_value(serde_json::to_value(&q).unwrap()).unwrap();
        assert_eq!(back, q);
        assert_eq!(back.view(), q.view());
    }

    #[test]
    fn parse_quote_ref_forms() {
        let id = QuoteId::generate(NOW.millis(), [9; 10]);
        assert_eq!(
            parse_quote_ref(id.as_str()).unwrap(),
            QuoteRef::Fx(id.clone())
        );
        assert_eq!(
            parse_quote_ref("DIRECT_CRYPTO:USDC:12.5").unwrap(),
            QuoteRef::DirectCrypto {
                token: Token::Usdc,
                amount: Micros(12_500_000)
            }
        );
        assert_eq!(
            parse_quote_ref("DIRECT_CRYPTO:USDT:0.000001").unwrap(),
            QuoteRef::DirectCrypto {
                token: Token::Usdt,
                amount: Micros(1)
            }
        );
        for s in [
            "",
            "fx_",
            "fx_short",
            &format!("{id}X"),
            &id.as_str().to_lowercase(),
            "tr_01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "DIRECT_CRYPTO",
            "DIRECT_CRYPTO:",
            "DIRECT_CRYPTO:USDC",
            "DIRECT_CRYPTO:USDC:",
            "DIRECT_CRYPTO:SOL:1",
            "DIRECT_CRYPTO:usdc:1",
            "DIRECT_CRYPTO:USDC:0",
            "DIRECT_CRYPTO:USDC:-1",
            "DIRECT_CRYPTO:USDC:1.0000001",
            "DIRECT_CRYPTO:USDC: 1",
            "DIRECT_CRYPTO:USDC:1:2",
            "DIRECT_CRYPTO:USDC:1e3",
            "direct_crypto:USDC:1",
            "99999999999999999999",
        ] {
            let e = parse_quote_ref(s).unwrap_err();
            assert_eq!(e.code(), "INVALID_QUOTE_ID", "{s:?}");
            assert!(!e.to_string().is_empty());
        }
    }

    /// A positive decimal with at most `places` decimals, as (mantissa, scale).
    fn decimal_parts(max_mantissa: u64, places: u32) -> impl Strategy<Value = Decimal> {
        (1..=max_mantissa, 0..=places)
            .prop_map(|(m, s)| Decimal::from_i128_with_scale(i128::from(m), s))
    }

    proptest! {
        #[test]
        fn parse_quote_ref_never_panics(s in "\\PC{0,60}") {
            let _ = parse_quote_ref(&s);
        }

        #[test]
        fn parse_quote_ref_never_panics_near_valid(
            // Random tails rarely form a reference: valid amounts and quote-id bodies
            // are drawn on purpose beside them, so the round trip is checked.
            tail in prop_oneof![
                "[0-9A-Za-z.:+\\- ]{0,30}",
                "[1-9][0-9]{0,5}(\\.[0-9]{1,6})?",
                "[0-7][0-9A-HJKMNP-TV-Z]{25}",
            ],
            head in prop_oneof![Just("fx_"), Just("DIRECT_CRYPTO:"), Just("DIRECT_CRYPTO:USDC:"), Just("DIRECT_CRYPTO:USDT:")],
        ) {
            let s = format!("{head}{tail}");
            if let Ok(r) = parse_quote_ref(&s) {
                prop_assert_eq!(parse_quote_ref(&r.to_string()).unwrap(), r);
            }
        }

        #[test]
        fn direct_crypto_round_trip(amount in 1u64..=Micros::MAX_REQUEST.0, usdt in any::<bool>()) {
            let token = if usdt { Token::Usdt } else { Token::Usdc };
            let r = QuoteRef::DirectCrypto { token, amount: Micros(amount) };
            let s = r.to_string();
            prop_assert_eq!(&s, &format!("DIRECT_CRYPTO:{token}:{}", Micros(amount).to_decimal_string()));
            prop_assert_eq!(parse_quote_ref(&s).unwrap(), r);
        }

        #[test]
        fn fx_ref_round_trip(ms in 0i64..(1i64 << 48), random in any::<[u8; 10]>()) {
            let id = QuoteId::generate(ms, random);
            prop_assert_eq!(parse_quote_ref(id.as_str()).unwrap(), QuoteRef::Fx(id));
        }

        /// expected_out * rate <= fiat_amount < (expected_out + 1 micro) * rate, checked
        /// with exact integers: rounding down never over-delivers and never under-delivers
        /// by a whole micro-unit.
        #[test]
        fn conversion_is_the_exact_floor(
            cents in 1i64..=100_000_000_000_000,
            normalize in any::<bool>(),
            rate in decimal_parts(1_000_000_000_000, 6),
        ) {
            let fiat = Decimal::new(cents, 2);
            let fiat = if normalize { fiat.normalize() } else { fiat };
            let Ok(q) = quote(&fiat.to_string(), &rate.to_string()) else {
                // Only out-of-range results may fail.
                let exact = fiat / rate;
                prop_assert!(exact < Decimal::new(1, 6) || exact > Decimal::from(u64::MAX / 1_000_000));
                return Ok(());
            };
            // micros * rm / 10^(rs+6)  vs  fm / 10^fs, cross-multiplied.
            let em = u128::from(q.expected_out.0);
            let (rm, rs) = (u128::try_from(rate.mantissa()).unwrap(), rate.scale());
            let (fm, fs) = (u128::try_from(fiat.mantissa()).unwrap(), fiat.scale());
            let lhs = |micros: u128| micros * rm * 10u128.pow(fs);
            let rhs = fm * 10u128.pow(rs + 6);
            prop_assert!(lhs(em) <= rhs);
            prop_assert!(lhs(em + 1) > rhs);
            prop_assert!(em > 0);
            prop_assert_eq!(q.fiat_amount, fiat);
            prop_assert_eq!(q.fiat_amount.scale(), 2);
        }

        #[test]
        fn parse_fiat_amount_never_panics(
            // Valid amounts drawn on purpose beside random text, which rarely is one.
            s in prop_oneof!["\\PC{0,40}", "[0-9]{1,13}(\\.[0-9]{1,2})?"],
        ) {
            if let Ok(v) = parse_fiat_amount(&s) {
                prop_assert!(v > Decimal::ZERO && v.scale() == 2);
            }
        }

        #[test]
        fn fiat_amount_round_trips_through_view(cents in 1i64..=100_000_000_000_000) {
            let s = Decimal::new(cents, 2).to_string();
            let v = parse_fiat_amount(&s).unwrap();
            prop_assert_eq!(v.to_string(), s.clone());
            let q = quote(&s, "1").unwrap();
            prop_assert_eq!(q.view().fiat_amount, s);
        }
    }
}
