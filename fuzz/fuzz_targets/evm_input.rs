//! EVM input: addresses from clients, JSON-RPC answers (quantities, data, hashes) and
//! ABI-encoded return data (words, dynamic bytes, revert reasons). Nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use stablecoin_core::ports::ChainAddress;
use stablecoin_rails::evm::{abi, rail, rpc};

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = rail::parse_address(&ChainAddress(s.to_string()));
    }
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = rpc::quantity("eth_fuzz", &v);
        let _ = rpc::data_of("eth_fuzz", &v);
        let _ = rpc::hash_of("eth_fuzz", &v);
    }
    for n in 0..4 {
        if let Some(w) = abi::word(data, n) {
            let _ = abi::word_u128(&w);
        }
        let _ = abi::dynamic_bytes(data, n);
    }
    let _ = abi::revert_reason(data);
});
