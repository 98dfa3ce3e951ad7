//! Ethereum JSON-RPC: one `request` method behind the [`JsonRpc`] trait (so a test can
//! drop a response or a host can add auth and retries), typed helpers on top.

use super::abi;
use super::address::EvmAddress;
use crate::rpc_pool::RpcPool;
use async_trait::async_trait;
use serde_json::{Value, json};
use stablecoin_core::ports::RpcEndpointHealth;

/// Why a call failed. `Transport`: the request may or may not have reached the node
/// (a send is then of unknown outcome); `Node`: the node answered with an error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RpcError {
    /// No usable answer (connection, timeout, a body that is not JSON): the node may have
    /// acted on the request.
    #[error("transport: {0}")]
    Transport(String),
    /// The node answered with a JSON-RPC `error` object.
    #[error("node error {code}: {message}")]
    Node {
        /// `error.code` (0 when the node sent none).
        code: i64,
        /// `error.message` (empty when the node sent none).
        message: String,
        /// Revert data of a failed `eth_call` / `eth_estimateGas`, when the node gives it.
        data: Option<Vec<u8>>,
    },
    /// The node answered, but not in the shape of the method's result.
    #[error("unexpected answer to {method}: {detail}")]
    Decode {
        /// The JSON-RPC method, or `log` for an entry of a receipt or of `eth_getLogs`.
        method: String,
        /// What did not parse.
        detail: String,
    },
}

/// An Ethereum JSON-RPC endpoint: [`HttpJsonRpc`] in production; tests wrap it to drop
/// answers, a host to add auth or retries.
#[async_trait]
pub trait JsonRpc: Send + Sync {
    /// Sends one request and returns its `result` (`null` when absent): a node's `error` is
    /// [`RpcError::Node`], no answer at all [`RpcError::Transport`].
    async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError>;

    /// The health of each URL behind this endpoint (issue #49), for readiness; empty when
    /// the implementation tracks none.
    fn endpoints(&self) -> Vec<RpcEndpointHealth> {
        Vec::new()
    }
}

/// JSON-RPC over HTTP, over one URL or several ([`RpcPool`]: a URL that times out,
/// refuses, answers 5xx or garbles its answer is left for the next; a submission is
/// never re-posted once it may have reached a node, see [`crate::rpc_pool`]).
pub struct HttpJsonRpc {
    pool: RpcPool,
}

/// The methods that send something: never re-posted to another URL once they may have
/// reached a node (the rail reconciles them by hash instead).
const SUBMISSIONS: &[&str] = &[
    "eth_sendRawTransaction",
    "eth_sendTransaction",
    "eth_sendUserOperation",
];

impl HttpJsonRpc {
    /// A client of `url`; each request gives up after `timeout` (a [`RpcError::Transport`]).
    pub fn new(url: impl Into<String>, timeout: std::time::Duration) -> Self {
        HttpJsonRpc {
            pool: RpcPool::single(url.into(), timeout),
        }
    }

    /// A client of several URLs of one chain, the first preferred (issue #49). Fails on
    /// an empty list.
    pub fn with_urls(urls: Vec<String>, timeout: std::time::Duration) -> Result<Self, RpcError> {
        RpcPool::new(urls, timeout)
            .map(|pool| HttpJsonRpc { pool })
            .map_err(RpcError::Transport)
    }

    /// How long a failed URL waits behind the healthy ones (default 30 s).
    pub fn with_retry_down_after(mut self, d: std::time::Duration) -> Self {
        self.pool = self.pool.with_retry_down_after(d);
        self
    }
}

#[async_trait]
impl JsonRpc for HttpJsonRpc {
    async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (status, v) = self
            .pool
            .post("", &body, SUBMISSIONS.contains(&method))
            .await
            .map_err(|e| RpcError::Transport(format!("{method}: {}", e.reason)))?;
        if !v.is_object() {
            return Err(RpcError::Transport(format!(
                "{method}: HTTP {status}, not a JSON-RPC answer"
            )));
        }
        if let Some(err) = v.get("error") {
            let data = err
                .get("data")
                .and_then(Value::as_str)
                .and_then(|d| hex::decode(d.trim_start_matches("0x")).ok());
            return Err(RpcError::Node {
                code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: err
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                data,
            });
        }
        Ok(v.get("result").cloned().unwrap_or(Value::Null))
    }

    fn endpoints(&self) -> Vec<RpcEndpointHealth> {
        self.pool.health()
    }
}

fn decode_err(method: &str, detail: impl Into<String>) -> RpcError {
    RpcError::Decode {
        method: method.into(),
        detail: detail.into(),
    }
}

/// `0x`-prefixed hex quantity to u128.
pub fn quantity(method: &str, v: &Value) -> Result<u128, RpcError> {
    let s = v
        .as_str()
        .ok_or_else(|| decode_err(method, format!("not a quantity: {v}")))?;
    u128::from_str_radix(s.trim_start_matches("0x"), 16)
        .map_err(|_| decode_err(method, format!("not a quantity: {s}")))
}

/// `0x`-prefixed hex data to bytes; `method` names the call in a [`RpcError::Decode`].
pub fn data_of(method: &str, v: &Value) -> Result<Vec<u8>, RpcError> {
    let s = v
        .as_str()
        .ok_or_else(|| decode_err(method, format!("not hex data: {v}")))?;
    hex::decode(s.trim_start_matches("0x")).map_err(|_| decode_err(method, "not hex data"))
}

/// `0x`-prefixed hex of exactly 32 bytes (a transaction hash, a block hash, a topic).
pub fn hash_of(method: &str, v: &Value) -> Result<[u8; 32], RpcError> {
    data_of(method, v)?
        .try_into()
        .map_err(|_| decode_err(method, "not a 32-byte hash"))
}

/// Bytes as `0x`-prefixed lower-case hex, the form of JSON-RPC data parameters.
pub fn hex0x(b: &[u8]) -> String {
    format!("0x{}", hex::encode(b))
}

/// One log entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Log {
    /// The contract that emitted it.
    pub address: EvmAddress,
    /// `topics`: the event signature's hash first, then the indexed arguments.
    pub topics: Vec<[u8; 32]>,
    /// The non-indexed arguments, ABI-encoded.
    pub data: Vec<u8>,
    /// `blockNumber`: the block that includes it.
    pub block: u64,
    /// `transactionHash`: the transaction that emitted it.
    pub tx_hash: [u8; 32],
    /// `logIndex`: its position in the block.
    pub log_index: u64,
}

fn log_of(v: &Value) -> Result<Log, RpcError> {
    let m = "log";
    let address = v["address"]
        .as_str()
        .and_then(|s| s.to_ascii_lowercase().parse().ok())
        .ok_or_else(|| decode_err(m, "address"))?;
    let topics = v["topics"]
        .as_array()
        .ok_or_else(|| decode_err(m, "topics"))?
        .iter()
        .map(|t| hash_of(m, t))
        .collect::<Result<_, _>>()?;
    Ok(Log {
        address,
        topics,
        data: data_of(m, &v["data"])?,
        block: quantity(m, &v["blockNumber"])? as u64,
        tx_hash: hash_of(m, &v["transactionHash"])?,
        log_index: quantity(m, &v["logIndex"])? as u64,
    })
}

/// A mined transaction's receipt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Receipt {
    /// `status == 1`: the transaction did not revert. A bundle can succeed while an operation
    /// in it reverted: its `UserOperationEvent` says.
    pub success: bool,
    /// `blockNumber`: the block that includes it.
    pub block: u64,
    /// Every log the transaction emitted, in order.
    pub logs: Vec<Log>,
}

/// Typed calls over any [`JsonRpc`].
pub struct Eth<'a>(pub &'a dyn JsonRpc);

impl Eth<'_> {
    /// `eth_chainId`: the chain the node serves.
    pub async fn chain_id(&self) -> Result<u64, RpcError> {
        let v = self.0.request("eth_chainId", json!([])).await?;
        Ok(quantity("eth_chainId", &v)? as u64)
    }

    /// `eth_blockNumber`: the head block.
    pub async fn block_number(&self) -> Result<u64, RpcError> {
        let v = self.0.request("eth_blockNumber", json!([])).await?;
        Ok(quantity("eth_blockNumber", &v)? as u64)
    }

    /// The timestamp (Unix seconds) of block `number`: the chain's own clock, which the
    /// EntryPoint checks a user operation's `validUntil` against.
    pub async fn block_timestamp(&self, number: u64) -> Result<u64, RpcError> {
        let m = "eth_getBlockByNumber";
        let v = self
            .0
            .request(m, json!([format!("0x{number:x}"), false]))
            .await?;
        if v.is_null() {
            return Err(decode_err(m, "no such block"));
        }
        Ok(quantity(m, &v["timestamp"])? as u64)
    }

    /// `eth_call` at the latest block: the return data, ABI-encoded. A revert is
    /// [`RpcError::Node`] (with its revert data when the node gives it).
    pub async fn call(&self, to: &EvmAddress, data: &[u8]) -> Result<Vec<u8>, RpcError> {
        let v = self
            .0
            .request(
                "eth_call",
                json!([{"to": to.to_hex(), "data": hex0x(data)}, "latest"]),
            )
            .await?;
        data_of("eth_call", &v)
    }

    /// `eth_call` from `from` with a gas limit: a transaction's simulation, one execution
    /// (where `eth_estimateGas` searches over many).
    pub async fn call_from(
        &self,
        from: &EvmAddress,
        to: &EvmAddress,
        data: &[u8],
        gas: u128,
    ) -> Result<Vec<u8>, RpcError> {
        let v = self
            .0
            .request(
                "eth_call",
                json!([{"from": from.to_hex(), "to": to.to_hex(), "data": hex0x(data),
                    "gas": format!("0x{gas:x}")}, "latest"]),
            )
            .await?;
        data_of("eth_call", &v)
    }

    /// A view returning one word, read as an unsigned integer below 2^128.
    pub async fn call_uint(&self, to: &EvmAddress, data: &[u8]) -> Result<u128, RpcError> {
        let out = self.call(to, data).await?;
        abi::word(&out, 0)
            .and_then(|w| abi::word_u128(&w))
            .ok_or_else(|| decode_err("eth_call", "expected a uint below 2^128"))
    }

    /// `eth_getCode` at the latest block: empty when no contract is deployed at `a`.
    pub async fn code(&self, a: &EvmAddress) -> Result<Vec<u8>, RpcError> {
        let v = self
            .0
            .request("eth_getCode", json!([a.to_hex(), "latest"]))
            .await?;
        data_of("eth_getCode", &v)
    }

    /// `eth_getBalance` at the latest block: `a`'s native coin, in wei.
    pub async fn balance(&self, a: &EvmAddress) -> Result<u128, RpcError> {
        let v = self
            .0
            .request("eth_getBalance", json!([a.to_hex(), "latest"]))
            .await?;
        quantity("eth_getBalance", &v)
    }

    /// `eth_getTransactionCount` at `pending`: the nonce of `a`'s next transaction, counting
    /// those still in the node's mempool.
    pub async fn pending_nonce(&self, a: &EvmAddress) -> Result<u64, RpcError> {
        let v = self
            .0
            .request("eth_getTransactionCount", json!([a.to_hex(), "pending"]))
            .await?;
        Ok(quantity("eth_getTransactionCount", &v)? as u64)
    }

    /// `eth_getTransactionCount` at `latest`: how many of `a`'s transactions are mined
    /// (the nonce of the first one that is not).
    pub async fn latest_nonce(&self, a: &EvmAddress) -> Result<u64, RpcError> {
        let v = self
            .0
            .request("eth_getTransactionCount", json!([a.to_hex(), "latest"]))
            .await?;
        Ok(quantity("eth_getTransactionCount", &v)? as u64)
    }

    /// `eth_getTransactionCount` at block `number`: how many of `a`'s transactions that
    /// block and those before it hold.
    pub async fn nonce_at(&self, a: &EvmAddress, number: u64) -> Result<u64, RpcError> {
        let v = self
            .0
            .request(
                "eth_getTransactionCount",
                json!([a.to_hex(), format!("0x{number:x}")]),
            )
            .await?;
        Ok(quantity("eth_getTransactionCount", &v)? as u64)
    }

    /// `eth_gasPrice`: the node's suggested price, in wei per gas.
    pub async fn gas_price(&self) -> Result<u128, RpcError> {
        let v = self.0.request("eth_gasPrice", json!([])).await?;
        quantity("eth_gasPrice", &v)
    }

    /// `eth_maxPriorityFeePerGas`: the node's suggested tip, in wei per gas.
    pub async fn max_priority_fee(&self) -> Result<u128, RpcError> {
        let v = self
            .0
            .request("eth_maxPriorityFeePerGas", json!([]))
            .await?;
        quantity("eth_maxPriorityFeePerGas", &v)
    }

    /// `eth_estimateGas` of a call from `from`, in gas units. A call that would revert is
    /// [`RpcError::Node`] (with its revert data when the node gives it).
    pub async fn estimate_gas(
        &self,
        from: &EvmAddress,
        to: &EvmAddress,
        data: &[u8],
    ) -> Result<u64, RpcError> {
        let v = self
            .0
            .request(
                "eth_estimateGas",
                json!([{"from": from.to_hex(), "to": to.to_hex(), "data": hex0x(data)}]),
            )
            .await?;
        Ok(quantity("eth_estimateGas", &v)? as u64)
    }

    /// `eth_sendRawTransaction` of a signed transaction; returns its hash. After a
    /// [`RpcError::Transport`] the node may or may not have it: reconcile, never resend blindly.
    pub async fn send_raw(&self, raw: &[u8]) -> Result<[u8; 32], RpcError> {
        let v = self
            .0
            .request("eth_sendRawTransaction", json!([hex0x(raw)]))
            .await?;
        hash_of("eth_sendRawTransaction", &v)
    }

    /// `eth_getTransactionReceipt`: `None` while the transaction is not mined (or unknown to
    /// the node).
    pub async fn receipt(&self, tx: &[u8; 32]) -> Result<Option<Receipt>, RpcError> {
        let m = "eth_getTransactionReceipt";
        let v = self.0.request(m, json!([hex0x(tx)])).await?;
        if v.is_null() {
            return Ok(None);
        }
        let logs = v["logs"]
            .as_array()
            .ok_or_else(|| decode_err(m, "logs"))?
            .iter()
            .map(log_of)
            .collect::<Result<_, _>>()?;
        Ok(Some(Receipt {
            success: quantity(m, &v["status"])? == 1,
            block: quantity(m, &v["blockNumber"])? as u64,
            logs,
        }))
    }

    /// `eth_getLogs` over `[from, to]` for `addresses`, with per-position topic filters
    /// (`None` = any; a list = any of them).
    pub async fn logs(
        &self,
        from: u64,
        to: u64,
        addresses: &[EvmAddress],
        topics: &[Option<Vec<[u8; 32]>>],
    ) -> Result<Vec<Log>, RpcError> {
        let topics: Vec<Value> = topics
            .iter()
            .map(|t| match t {
                None => Value::Null,
                Some(list) => Value::Array(list.iter().map(|h| json!(hex0x(h))).collect()),
            })
            .collect();
        let filter = json!({
            "fromBlock": format!("0x{from:x}"),
            "toBlock": format!("0x{to:x}"),
            "address": addresses.iter().map(EvmAddress::to_hex).collect::<Vec<_>>(),
            "topics": topics,
        });
        let v = self.0.request("eth_getLogs", json!([filter])).await?;
        v.as_array()
            .ok_or_else(|| decode_err("eth_getLogs", "not a list"))?
            .iter()
            .map(log_of)
            .collect()
    }
}

/// A 20-byte address as a 32-byte topic.
pub fn address_topic(a: &EvmAddress) -> [u8; 32] {
    let mut t = [0u8; 32];
    t[12..].copy_from_slice(&a.0);
    t
}

/// The address in a 32-byte topic or word.
pub fn topic_address(t: &[u8; 32]) -> EvmAddress {
    let mut a = [0u8; 20];
    a.copy_from_slice(&t[12..]);
    EvmAddress(a)
}
