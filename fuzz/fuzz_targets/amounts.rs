//! Fuzz target `amounts`: libFuzzer feeds fuzz/bodies/amounts.rs, whose doc says what is
//! checked. The same body replays the seeds and corpus in the ordinary test run
//! (tests/fuzz_corpora.rs).
#![no_main]

#[path = "../bodies/amounts.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
