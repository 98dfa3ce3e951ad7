//! Phone numbers and quote ids from request bodies and query strings. Nothing panics,
//! and a phone's normal form is a fixed point (parsing it again gives the same phone).
//!
//! The body of the fuzz target `phones_and_quotes` (fuzz/fuzz_targets/phones_and_quotes.rs), kept apart from
//! libFuzzer so the ordinary test run replays its seeds and corpus through the same code
//! (tests/fuzz_corpora.rs).
use stablecoin_core::domain::fx::parse_quote_ref;
use stablecoin_core::domain::phone::Phone;

/// One input, as libFuzzer hands it; panics on a finding.
pub fn run(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = Phone::parse(s) {
        assert_eq!(Phone::parse(p.as_str()).ok().as_ref(), Some(&p), "{s:?}");
    }
    let _ = parse_quote_ref(s);
}
