//! EVM input: addresses and public keys from clients, JSON-RPC answers of the node
//! (quantities, data, hashes, blocks, receipts, logs) and of an ERC-4337 bundler (gas
//! estimates, user-operation receipts, entry points, errors), and ABI-encoded return
//! data (words, dynamic bytes, revert reasons, EntryPoint errors). Nothing panics, and
//! an accepted address prints back to forms that parse to the same address.
//!
//! The body of the fuzz target `evm_input` (fuzz/fuzz_targets/evm_input.rs), kept apart from
//! libFuzzer so the ordinary test run replays its seeds and corpus through the same code
//! (tests/fuzz_corpora.rs).
use async_trait::async_trait;
use serde_json::Value;
use stablecoin_core::ports::ChainAddress;
use stablecoin_rails::evm::rpc::Eth;
use stablecoin_rails::evm::userop::{Nonce, UserOp};
use stablecoin_rails::evm::{
    Bundler, EvmAddress, JsonRpc, RpcBundler, RpcError, abi, bundler, rail, rpc,
};
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// A node that answers every request with the fuzzed JSON: as the `result` itself, or
/// (`Envelope`) read like `HttpJsonRpc` reads a response body, its `error` first.
struct Node {
    answer: Value,
    envelope: bool,
}

#[async_trait]
impl JsonRpc for Node {
    async fn request(&self, _method: &str, _params: Value) -> Result<Value, RpcError> {
        if !self.envelope {
            return Ok(self.answer.clone());
        }
        let v = &self.answer;
        if let Some(err) = v.get("error") {
            return Err(RpcError::Node {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                data: err
                    .get("data")
                    .and_then(Value::as_str)
                    .and_then(|d| hex::decode(d.trim_start_matches("0x")).ok()),
            });
        }
        Ok(v.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// Runs a future that never waits (the node above answers at once).
fn now<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the stub node never waits"),
    }
}

fn op() -> UserOp {
    UserOp {
        sender: EvmAddress([0x11; 20]),
        nonce: Nonce {
            key: [0; 24],
            seq: 0,
        },
        init_code: Vec::new(),
        call_data: vec![0xb6, 0x1d, 0x27, 0xf6],
        verification_gas_limit: 150_000,
        call_gas_limit: 80_000,
        pre_verification_gas: 60_000,
        max_priority_fee_per_gas: 1_000_000_000,
        max_fee_per_gas: 3_000_000_000,
        paymaster_and_data: Vec::new(),
        signature: vec![0x5a; 65],
    }
}

fn node_answers(answer: Value, envelope: bool) {
    let node = Arc::new(Node { answer, envelope });
    let a = EvmAddress([0x22; 20]);
    let eth = Eth(node.as_ref());
    let _ = now(eth.chain_id());
    let _ = now(eth.block_number());
    let _ = now(eth.block_timestamp(7));
    let _ = now(eth.call(&a, &[1, 2]));
    let _ = now(eth.call_uint(&a, &[1, 2]));
    let _ = now(eth.code(&a));
    let _ = now(eth.balance(&a));
    let _ = now(eth.pending_nonce(&a));
    let _ = now(eth.gas_price());
    let _ = now(eth.max_priority_fee());
    let _ = now(eth.estimate_gas(&a, &a, &[]));
    let _ = now(eth.send_raw(&[1]));
    let _ = now(eth.receipt(&[3; 32]));
    let _ = now(eth.logs(1, 2, &[a], &[None]));
    let b = RpcBundler::new(node.clone(), EvmAddress([0x43; 20]));
    let _ = now(b.supported_entry_points());
    let _ = now(b.send_user_operation(&op()));
    let _ = now(b.estimate(&op()));
    let _ = now(b.receipt(&[4; 32]));
    let _ = now(b.by_hash(&[4; 32]));
    let _ = now(b.send(&[op()]));
    let _ = now(b.view(&[4; 32]));
    let _ = now(b.problems());
}

/// One input, as libFuzzer hands it; panics on a finding.
pub fn run(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data)
        && let Ok(a) = rail::parse_address(&ChainAddress(s.to_string()))
    {
        assert_eq!(a.to_string().parse::<EvmAddress>().ok(), Some(a));
        assert_eq!(a.to_hex().parse::<EvmAddress>().ok(), Some(a));
    }
    if let Ok(a) = EvmAddress::from_public_key(data) {
        assert_eq!(a.to_string().parse::<EvmAddress>().ok(), Some(a));
    }
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        let _ = rpc::quantity("eth_fuzz", &v);
        let _ = rpc::data_of("eth_fuzz", &v);
        let _ = rpc::hash_of("eth_fuzz", &v);
        node_answers(v.clone(), false);
        node_answers(v, true);
    }
    for n in 0..4 {
        if let Some(w) = abi::word(data, n) {
            let _ = abi::word_u128(&w);
        }
        let _ = abi::dynamic_bytes(data, n);
    }
    let _ = abi::revert_reason(data);
    let _ = bundler::entry_point_reason(data);
    let _ = bundler::failed_op_index(data);
}
