//! What a webhook receiver is handed: a signature header and a body, both the sender's
//! (or an attacker's). The input is split at the first NUL into a header and a body.
//! Nothing panics; a body no secret signed never verifies.
//!
//! The body of the fuzz target `webhook_input` (fuzz/fuzz_targets/webhook_input.rs), kept apart from
//! libFuzzer so the ordinary test run replays its seeds and corpus through the same code
//! (tests/fuzz_corpora.rs).
use stablecoin_webhooks::{receiver, standard};

/// One input, as libFuzzer hands it; panics on a finding.
pub fn run(data: &[u8]) {
    let (header, body) = match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (&data[..0], data),
    };
    let header = String::from_utf8_lossy(header);
    let secret = "svcwh_fuzz";
    assert!(receiver::verify_payments(secret, body, Some(&header)).is_err());
    assert!(receiver::verify_wallet(secret, body, Some(&header)).is_err());
    let mut parts = header.splitn(3, ' ');
    let (id, ts, sig) = (parts.next(), parts.next(), parts.next());
    assert!(standard::verify("whsec_ZnV6eg==", body, id, ts, sig, 1_800_000_000, 300).is_err());
    let _ = receiver::parse_payments(body);
}
