//! Amounts as clients and providers send them: token amounts (`"12.5"`), whole-token
//! settings, fiat amounts. Nothing panics, and an accepted token amount prints back to
//! a string that parses to the same micro-units.
//!
//! The body of the fuzz target `amounts` (fuzz/fuzz_targets/amounts.rs), kept apart from
//! libFuzzer so the ordinary test run replays its seeds and corpus through the same code
//! (tests/fuzz_corpora.rs).
use stablecoin_core::domain::fx::parse_fiat_amount;
use stablecoin_core::domain::money::Micros;

/// One input, as libFuzzer hands it; panics on a finding.
pub fn run(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(m) = Micros::parse_decimal(s) {
        assert_eq!(Micros::parse_decimal(&m.to_string()).ok(), Some(m), "{s:?}");
    }
    if let Ok(m) = Micros::parse_positive(s) {
        assert!(!m.is_zero(), "{s:?}");
    }
    let _ = Micros::parse_whole_tokens(s);
    let _ = parse_fiat_amount(s);
}
