//! Micro-units and a mint's base units, both ways, exactly or not at all.

use super::{rejected, unavailable};
use stablecoin_core::domain::money::Micros;
use stablecoin_core::ports::RailError;

/// Micro-units to on-chain base units of a mint with `decimals`; inexact is refused.
pub fn micros_to_base_units(amount: Micros, decimals: u8) -> Result<u64, RailError> {
    let m = amount.get();
    if decimals >= 6 {
        let scale = 10u64
            .checked_pow(u32::from(decimals - 6))
            .ok_or_else(|| rejected("mint decimals out of range"))?;
        m.checked_mul(scale)
            .ok_or_else(|| rejected("amount overflows the mint's base units"))
    } else {
        let scale = 10u64.pow(u32::from(6 - decimals));
        if !m.is_multiple_of(scale) {
            return Err(rejected(format!(
                "{amount} is not representable with {decimals} decimals"
            )));
        }
        Ok(m / scale)
    }
}

/// On-chain base units to micro-units; inexact is refused.
pub fn base_units_to_micros(units: u64, decimals: u8) -> Result<Micros, RailError> {
    if decimals >= 6 {
        let scale = 10u64
            .checked_pow(u32::from(decimals - 6))
            .ok_or_else(|| unavailable("mint decimals out of range"))?;
        if !units.is_multiple_of(scale) {
            return Err(unavailable(format!(
                "{units} base units ({decimals} decimals) are not a whole micro-unit"
            )));
        }
        Ok(Micros(units / scale))
    } else {
        let scale = 10u64.pow(u32::from(6 - decimals));
        units
            .checked_mul(scale)
            .map(Micros)
            .ok_or_else(|| unavailable("balance overflows micro-units"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_conversions_are_exact() {
        assert_eq!(
            micros_to_base_units(Micros(1_234_567), 6).unwrap(),
            1_234_567
        );
        assert_eq!(micros_to_base_units(Micros(5), 9).unwrap(), 5_000);
        assert_eq!(micros_to_base_units(Micros(500), 4).unwrap(), 5);
        assert!(micros_to_base_units(Micros(501), 4).is_err());
        assert_eq!(base_units_to_micros(7, 6).unwrap(), Micros(7));
        assert_eq!(base_units_to_micros(7_000, 9).unwrap(), Micros(7));
        assert!(base_units_to_micros(7_001, 9).is_err());
        assert_eq!(base_units_to_micros(7, 4).unwrap(), Micros(700));
    }
}
