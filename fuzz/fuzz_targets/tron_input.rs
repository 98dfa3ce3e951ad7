//! Fuzz target `tron_input`: libFuzzer feeds fuzz/bodies/tron_input.rs, whose doc says what is
//! checked. The same body replays the seeds and corpus in the ordinary test run
//! (tests/fuzz_corpora.rs).
#![no_main]

#[path = "../bodies/tron_input.rs"]
mod body;

libfuzzer_sys::fuzz_target!(|data: &[u8]| body::run(data));
