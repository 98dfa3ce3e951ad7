//! Phone numbers and quote ids from request bodies and query strings. Nothing panics,
//! and a phone's normal form is a fixed point (parsing it again gives the same phone).
#![no_main]

use libfuzzer_sys::fuzz_target;
use stablecoin_core::domain::fx::parse_quote_ref;
use stablecoin_core::domain::phone::Phone;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = Phone::parse(s) {
        assert_eq!(Phone::parse(p.as_str()).ok().as_ref(), Some(&p), "{s:?}");
    }
    let _ = parse_quote_ref(s);
});
