//! Fuzz target `phones_and_quotes`: libFuzzer feeds fuzz/bodies/phones_and_quotes.rs, whose doc says what is
//! checked. The same body replays the seeds and corpus in the ordinary test run
//! (tests/fuzz_corpora.rs).
#![no_main]

#[path = "../bodies/phones_and_quotes.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
