//! TRON input: addresses (base58check and hex) from clients, and the node's HTTP API
//! answers (JSON) and signatures. Nothing panics, and an accepted address prints back
//! to forms that parse to the same address.
//!
//! The body of the fuzz target `tron_input` (fuzz/fuzz_targets/tron_input.rs), kept apart from
//! libFuzzer so the ordinary test run replays its seeds and corpus through the same code
//! (tests/fuzz_corpora.rs).
use stablecoin_rails::tron::{TronAddress, client, tx};

/// One input, as libFuzzer hands it; panics on a finding.
pub fn run(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        for a in [
            TronAddress::parse(s),
            TronAddress::from_hex(s),
            TronAddress::from_base58(s),
        ]
        .into_iter()
        .flatten()
        {
            assert_eq!(TronAddress::parse(&a.to_base58()).ok(), Some(a));
            assert_eq!(TronAddress::from_hex(&a.to_hex()).ok(), Some(a));
        }
        let _ = client::decode_message(s);
    }
    let _ = TronAddress::from_bytes(data);
    if data.len() >= 32 {
        let txid: [u8; 32] = data[..32].try_into().unwrap();
        let _ = tx::recover_signer(&txid, &data[32..]);
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = client::parse_now_block(&v);
        let _ = client::parse_account(&v);
        let _ = client::parse_account_resources(&v);
        let _ = client::parse_constant_uint(&v);
        let _ = client::parse_broadcast(&v);
        let _ = client::parse_transaction_info(&v);
        let _ = client::parse_block_transaction_infos(&v);
    }
}
