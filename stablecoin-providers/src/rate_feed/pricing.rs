//! The quoted rate: the feed's rate moved by the spread and rounded to the currency's
//! decimals, both in the service's favour.

use rust_decimal::{Decimal, RoundingStrategy};
use stablecoin_core::ports::RateSide;

/// Basis points in one whole (100%).
pub const BPS_PER_UNIT: u32 = 10_000;

/// The largest number of decimals a quoted rate may be rounded to.
pub const MAX_DECIMALS: u32 = 18;

/// The rate the service converts at, from the feed's `mid` rate (local currency per
/// token): `mid × (1 + spread)` rounded up when the customer buys tokens (a higher rate
/// gives fewer tokens), `mid × (1 − spread)` rounded down when the customer sells them
/// (a lower rate pays less fiat), rounded to `decimals` places.
///
/// Exact: the product is computed without rounding and rounded once, in the service's
/// favour, so the result is never better for the customer than the exact one and never
/// a full unit of the last decimal worse. `None` when the result cannot be represented
/// (overflow), when `spread_bps` is 10,000 or more, when `decimals` exceeds
/// [`MAX_DECIMALS`], or when `mid` is not positive.
pub fn quoted_rate(
    mid: Decimal,
    spread_bps: u32,
    decimals: u32,
    side: RateSide,
) -> Option<Decimal> {
    if mid <= Decimal::ZERO || spread_bps >= BPS_PER_UNIT || decimals > MAX_DECIMALS {
        return None;
    }
    let (factor, strategy) = match side {
        RateSide::CustomerBuysToken => (BPS_PER_UNIT + spread_bps, RoundingStrategy::AwayFromZero),
        RateSide::CustomerSellsToken => (BPS_PER_UNIT - spread_bps, RoundingStrategy::ToZero),
    };
    // mid × factor is exact (or overflows); dividing by 10^4 only moves the decimal
    // point, which needs 4 more places of scale. Rounding first to 24 places in the same
    // direction keeps the final rounding exact (directed roundings compose).
    let scaled = mid
        .checked_mul(Decimal::from(factor))?
        .round_dp_with_strategy(24, strategy);
    let mut exact = scaled;
    exact.set_scale(scaled.scale() + 4).ok()?;
    let rate = exact.round_dp_with_strategy(decimals, strategy);
    (rate > Decimal::ZERO).then_some(rate.normalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).unwrap()
    }

    #[test]
    fn the_spread_and_rounding_favour_the_service_both_ways() {
        // 600.5 × 1.015 = 609.5075 → up to 610 XOF; × 0.985 = 591.4925 → down to 591.
        assert_eq!(
            quoted_rate(d("600.5"), 150, 0, RateSide::CustomerBuysToken),
            Some(d("610"))
        );
        assert_eq!(
            quoted_rate(d("600.5"), 150, 0, RateSide::CustomerSellsToken),
            Some(d("591"))
        );
        // No spread, already on the grid: unchanged.
        assert_eq!(
            quoted_rate(d("1550.25"), 0, 2, RateSide::CustomerBuysToken),
            Some(d("1550.25"))
        );
        assert_eq!(
            quoted_rate(d("1550.25"), 0, 2, RateSide::CustomerSellsToken),
            Some(d("1550.25"))
        );
    }

    #[test]
    fn nonsense_is_refused_not_quoted() {
        assert_eq!(
            quoted_rate(d("0"), 10, 2, RateSide::CustomerBuysToken),
            None
        );
        assert_eq!(
            quoted_rate(d("-1"), 10, 2, RateSide::CustomerBuysToken),
            None
        );
        assert_eq!(
            quoted_rate(d("1"), 10_000, 2, RateSide::CustomerSellsToken),
            None
        );
        assert_eq!(
            quoted_rate(d("1"), 0, 19, RateSide::CustomerSellsToken),
            None
        );
        assert_eq!(
            quoted_rate(Decimal::MAX, 1, 0, RateSide::CustomerBuysToken),
            None
        );
        // A rate that rounds down to nothing is not a rate.
        assert_eq!(
            quoted_rate(d("0.4"), 0, 0, RateSide::CustomerSellsToken),
            None
        );
    }
}

/// The property the spread and rounding must keep, for random rates, spreads and
/// decimals, checked against an independent computation in integers.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// `num / den` rounded up (`up`) or down, both positive.
    fn div_round(num: i128, den: i128, up: bool) -> i128 {
        let q = num / den;
        if up && num % den != 0 { q + 1 } else { q }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        #[test]
        fn the_quoted_rate_is_the_exact_result_rounded_in_the_service_favour(
            mantissa in 1u64..=1_000_000_000_000u64,
            scale in 0u32..=10,
            spread_bps in 0u32..=3_000,
            decimals in 0u32..=8,
            buys in any::<bool>(),
        ) {
            let mid = Decimal::from_i128_with_scale(i128::from(mantissa), scale);
            let side = if buys { RateSide::CustomerBuysToken } else { RateSide::CustomerSellsToken };
            let factor = if buys { 10_000 + spread_bps } else { 10_000 - spread_bps };
            // exact = mantissa × factor / 10^(scale + 4); in units of 10^-decimals:
            let num = i128::from(mantissa) * i128::from(factor) * 10i128.pow(decimals);
            let den = 10i128.pow(scale + 4);
            let units = div_round(num, den, buys);
            let got = quoted_rate(mid, spread_bps, decimals, side);
            if units == 0 {
                prop_assert_eq!(got, None, "a rate that rounds to nothing is refused");
                return Ok(());
            }
            let got = got.expect("a representable rate is quoted");
            let want = Decimal::from_i128_with_scale(units, decimals);
            prop_assert_eq!(got, want);
            // Never in the customer's favour, and within one unit of the last decimal.
            let exact = Decimal::from_i128_with_scale(i128::from(mantissa) * i128::from(factor), scale + 4);
            let unit = Decimal::from_i128_with_scale(1, decimals);
            if buys {
                prop_assert!(got >= exact && got - exact < unit, "{} vs {}", got, exact);
            } else {
                prop_assert!(got <= exact && exact - got < unit, "{} vs {}", got, exact);
            }
            prop_assert!(got.scale() <= decimals);
        }
    }
}
