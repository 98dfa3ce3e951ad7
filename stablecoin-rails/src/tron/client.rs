//! Transport: java-tron's HTTP API (`/wallet/*`, hex addresses, `visible=false`) behind
//! the small [`TronApi`] trait, so the rail runs against a real full node, TronGrid or the
//! local test node. The `parse_*` functions are pure and take the JSON the node answers.

use super::address::TronAddress;
use super::tx::{self, SignedTx};
use crate::rpc_pool::RpcPool;
use async_trait::async_trait;
use serde_json::{Value, json};
use std::time::Duration;
use thiserror::Error;

/// The head block: number, 32-byte id and timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRef {
    /// Block height.
    pub number: u64,
    /// Block id: the height (8 bytes, big-endian) ++ 24 bytes of the block hash; the TaPoS
    /// reference of [`TxHeader::from_block_id`](super::tx::TxHeader::from_block_id).
    pub id: [u8; 32],
    /// Block time, Unix milliseconds.
    pub timestamp_ms: i64,
}

/// What `/wallet/getaccount` tells about an existing account (Stake 2.0 fields, sun).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountInfo {
    /// Liquid TRX (`balance`), in sun.
    pub balance_sun: u64,
    /// Own stake for Energy / Bandwidth (`frozenV2`), including what is delegated out.
    pub frozen_energy_sun: u64,
    /// Own stake for Bandwidth (`frozenV2`), including what is delegated out.
    pub frozen_bandwidth_sun: u64,
    /// Stake delegated to other accounts.
    pub delegated_energy_sun: u64,
    /// Bandwidth stake delegated to other accounts.
    pub delegated_bandwidth_sun: u64,
    /// Stake other accounts delegated to this one.
    pub acquired_energy_sun: u64,
    /// Bandwidth stake other accounts delegated to this one.
    pub acquired_bandwidth_sun: u64,
}

impl AccountInfo {
    /// Own Energy stake not yet delegated.
    pub fn delegatable_energy_sun(&self) -> u64 {
        self.frozen_energy_sun
            .saturating_sub(self.delegated_energy_sun)
    }
    /// Own Bandwidth stake not yet delegated.
    pub fn delegatable_bandwidth_sun(&self) -> u64 {
        self.frozen_bandwidth_sun
            .saturating_sub(self.delegated_bandwidth_sun)
    }
}

/// `/wallet/getaccountresource`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountResources {
    /// `freeNetLimit`: the account's free daily Bandwidth, in bytes.
    pub free_net_limit: u64,
    /// `freeNetUsed`: of it, used (usage recovers over 24 hours).
    pub free_net_used: u64,
    /// `NetLimit`: Bandwidth from stake, own and acquired, in bytes.
    pub net_limit: u64,
    /// `NetUsed`: of it, used.
    pub net_used: u64,
    /// `EnergyLimit`: Energy from stake, own and acquired.
    pub energy_limit: u64,
    /// `EnergyUsed`: of it, used.
    pub energy_used: u64,
    /// `TotalNetLimit`: the Bandwidth the network shares among all Bandwidth stakes.
    pub total_net_limit: u64,
    /// `TotalNetWeight`: TRX staked for Bandwidth network-wide, in whole TRX.
    pub total_net_weight: u64,
    /// `TotalEnergyLimit`: the Energy the network shares among all Energy stakes.
    pub total_energy_limit: u64,
    /// `TotalEnergyWeight`: TRX staked for Energy network-wide, in whole TRX.
    pub total_energy_weight: u64,
}

impl AccountResources {
    /// Staked TRX (sun) whose delegation yields at least `energy` Energy (whole TRX,
    /// at least 1 TRX as java-tron requires). `None` when the network reports no weight.
    pub fn sun_for_energy(&self, energy: u64) -> Option<u64> {
        sun_for(energy, self.total_energy_limit, self.total_energy_weight)
    }
    /// Same for Bandwidth.
    pub fn sun_for_bandwidth(&self, bandwidth: u64) -> Option<u64> {
        sun_for(bandwidth, self.total_net_limit, self.total_net_weight)
    }
}

/// java-tron: resource of a stake = stake_trx * total_limit / total_weight (weight in TRX).
fn sun_for(units: u64, total_limit: u64, total_weight_trx: u64) -> Option<u64> {
    if total_limit == 0 || total_weight_trx == 0 {
        return None;
    }
    let trx = (units as u128 * total_weight_trx as u128).div_ceil(total_limit as u128);
    let trx = u64::try_from(trx.max(1)).ok()?;
    trx.checked_mul(1_000_000)
}

/// Answer of a broadcast the node did answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BroadcastOutcome {
    /// `result: true`: the node took the transaction into its pool (not yet in a block).
    Accepted,
    /// The node refused it (`result` not true); `DUP_TRANSACTION_ERROR` means it already
    /// has the transaction.
    Rejected {
        /// java-tron's `response_code` name (SIGERROR, DUP_TRANSACTION_ERROR, ...).
        code: String,
        /// The node's `message` (decoded from hex where java-tron hex-encodes it).
        message: String,
    },
}

/// One event log of a transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxLog {
    /// The emitting contract, 20-byte EVM form.
    pub address: [u8; 20],
    /// Indexed topics; topic 0 identifies the event (see
    /// [`transfer_event_topic`](super::tx::transfer_event_topic)).
    pub topics: Vec<[u8; 32]>,
    /// The non-indexed, ABI-encoded arguments.
    pub data: Vec<u8>,
}

/// `/wallet/gettransactioninfobyid` of an included transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxInfo {
    /// `id`: the transaction's txID.
    pub txid: [u8; 32],
    /// `blockNumber`: the block that includes it.
    pub block_number: u64,
    /// `blockTimeStamp`: that block's time, Unix milliseconds.
    pub block_timestamp_ms: i64,
    /// `fee`: all TRX burnt, in sun.
    pub fee_sun: u64,
    /// `receipt.result` for smart-contract calls (SUCCESS, REVERT, OUT_OF_ENERGY, ...).
    pub receipt_result: Option<String>,
    /// `result: FAILED` present.
    pub failed: bool,
    /// `resMessage`, decoded from hex.
    pub res_message: Option<String>,
    /// `contractResult[0]`: the call's return data (the revert data of a REVERT).
    pub contract_result: Vec<u8>,
    /// `receipt.energy_usage_total`: Energy consumed, from stake or paid for by burning.
    pub energy_usage_total: u64,
    /// `receipt.energy_fee`: TRX burnt for Energy, in sun.
    pub energy_fee_sun: u64,
    /// `receipt.net_usage`: Bandwidth consumed from stake or the free allowance, in bytes.
    pub net_usage: u64,
    /// `receipt.net_fee`: TRX burnt for Bandwidth, in sun.
    pub net_fee_sun: u64,
    /// `log`: the events emitted, in order.
    pub logs: Vec<TxLog>,
}

impl TxInfo {
    /// Whether the transaction executed successfully.
    pub fn succeeded(&self) -> bool {
        !self.failed
            && self
                .receipt_result
                .as_deref()
                .is_none_or(|r| r == "SUCCESS")
    }

    /// A failure reason: `execution reverted` (with the contract's reason, if it gave
    /// one) for a REVERT, as the EVM tools word it, so every rail reports a revert alike;
    /// otherwise the receipt result plus the node's message (`OUT_OF_ENERGY: ...`).
    pub fn failure_reason(&self) -> String {
        if self.receipt_result.as_deref() == Some("REVERT") {
            return if self.contract_result.is_empty() {
                "execution reverted".to_string()
            } else {
                format!(
                    "execution reverted: {}",
                    crate::revert::reason(&self.contract_result)
                )
            };
        }
        let result = self
            .receipt_result
            .clone()
            .unwrap_or_else(|| "FAILED".to_string());
        match &self.res_message {
            Some(m) if !m.is_empty() => format!("{result}: {m}"),
            _ => result,
        }
    }
}

/// Why a call to a TRON node failed. Each variant has a stable [`code`](ApiError::code).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ApiError {
    /// No answer (connection refused or dropped, timeout, 5xx): a broadcast may or may
    /// not have reached the node.
    #[error("transport: {reason}")]
    Transport {
        /// The endpoint and what failed (reqwest's words, or the HTTP status).
        reason: String,
    },
    /// The node answered something we cannot read.
    #[error("unexpected answer: {reason}")]
    Decode {
        /// What could not be read.
        reason: String,
    },
    /// The node answered with an error.
    #[error("node error {code}: {message}")]
    Node {
        /// `ERROR` for java-tron's `{"Error": ...}`, `HTTP_<status>` for a 4xx, or the
        /// `code` java-tron gives (e.g. `CONTRACT_VALIDATE_ERROR`).
        code: String,
        /// The node's message (decoded from hex where java-tron hex-encodes it).
        message: String,
    },
}

impl ApiError {
    /// A stable machine code per variant.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Transport { .. } => "TRON_API_TRANSPORT",
            ApiError::Decode { .. } => "TRON_API_DECODE",
            ApiError::Node { .. } => "TRON_API_NODE_ERROR",
        }
    }
}

/// The read and write calls the rail needs from a TRON node.
#[async_trait]
pub trait TronApi: Send + Sync {
    /// `/wallet/getnowblock`.
    async fn now_block(&self) -> Result<BlockRef, ApiError>;
    /// `/wallet/getaccount`; `None` for an account that does not exist on chain.
    async fn account(&self, address: &TronAddress) -> Result<Option<AccountInfo>, ApiError>;
    /// `/wallet/getaccountresource`.
    async fn account_resources(&self, address: &TronAddress) -> Result<AccountResources, ApiError>;
    /// `/wallet/triggerconstantcontract` of `balanceOf(owner)`, called as `reader`.
    async fn trc20_balance(
        &self,
        contract: &TronAddress,
        owner: &TronAddress,
        reader: &TronAddress,
    ) -> Result<u128, ApiError>;
    /// `/wallet/broadcasthex`.
    async fn broadcast(&self, tx: &SignedTx) -> Result<BroadcastOutcome, ApiError>;
    /// `/wallet/gettransactioninfobyid`: `None` until the transaction is in a block.
    async fn transaction_info(&self, txid: &[u8; 32]) -> Result<Option<TxInfo>, ApiError>;
    /// `/wallet/gettransactionbyid`: whether the node stored the transaction.
    async fn transaction_known(&self, txid: &[u8; 32]) -> Result<bool, ApiError>;
    /// `/wallet/gettransactioninfobyblocknum`: the infos of every transaction of a block.
    async fn block_transaction_infos(&self, number: u64) -> Result<Vec<TxInfo>, ApiError>;
    /// The health of each API root behind this client (issue #49), for readiness; empty
    /// when the implementation tracks none.
    fn endpoints(&self) -> Vec<stablecoin_core::ports::RpcEndpointHealth> {
        Vec::new()
    }
}

// ---- pure parsers ---------------------------------------------------------------------

fn decode_err(reason: impl Into<String>) -> ApiError {
    ApiError::Decode {
        reason: reason.into(),
    }
}

fn u64_field(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn hex32(text: &str) -> Result<[u8; 32], ApiError> {
    let bytes = hex::decode(text).map_err(|e| decode_err(format!("hex {text:?}: {e}")))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| decode_err(format!("not 32 bytes: {text}")))
}

/// java-tron answers error messages hex-encoded on some endpoints and as text on
/// others: decode hex that is valid UTF-8, keep anything else as it is.
pub fn decode_message(text: &str) -> String {
    if !text.is_empty()
        && text.len().is_multiple_of(2)
        && text.bytes().all(|b| b.is_ascii_hexdigit())
        && let Ok(bytes) = hex::decode(text)
        && let Ok(s) = String::from_utf8(bytes)
    {
        return s;
    }
    text.to_string()
}

/// A read's `{"Error": ...}` answer becomes `Node` (a broadcast's `{"code", "message"}`
/// refusal is read by its own parser below).
fn node_error(v: &Value) -> Option<ApiError> {
    if let Some(e) = v.get("Error").and_then(Value::as_str) {
        return Some(ApiError::Node {
            code: "ERROR".into(),
            message: e.to_string(),
        });
    }
    None
}

/// Reads a `/wallet/getnowblock` answer; [`ApiError::Decode`] when the `blockID` does not
/// carry the block's number.
pub fn parse_now_block(v: &Value) -> Result<BlockRef, ApiError> {
    if let Some(e) = node_error(v) {
        return Err(e);
    }
    let id = hex32(
        v.get("blockID")
            .and_then(Value::as_str)
            .ok_or_else(|| decode_err("getnowblock: no blockID"))?,
    )?;
    let raw = &v["block_header"]["raw_data"];
    let number = u64_field(raw, "number");
    if u64::from_be_bytes(id[..8].try_into().unwrap_or([0; 8])) != number {
        return Err(decode_err(
            "getnowblock: blockID does not carry the block number",
        ));
    }
    Ok(BlockRef {
        number,
        id,
        timestamp_ms: raw.get("timestamp").and_then(Value::as_i64).unwrap_or(0),
    })
}

/// Reads a `/wallet/getaccount` answer: `None` for the `{}` java-tron answers for an
/// account that does not exist.
pub fn parse_account(v: &Value) -> Result<Option<AccountInfo>, ApiError> {
    if let Some(e) = node_error(v) {
        return Err(e);
    }
    if v.get("address").is_none() {
        return Ok(None);
    }
    let mut info = AccountInfo {
        balance_sun: u64_field(v, "balance"),
        delegated_bandwidth_sun: u64_field(v, "delegated_frozenV2_balance_for_bandwidth"),
        acquired_bandwidth_sun: u64_field(v, "acquired_delegated_frozenV2_balance_for_bandwidth"),
        ..AccountInfo::default()
    };
    if let Some(frozen) = v.get("frozenV2").and_then(Value::as_array) {
        for f in frozen {
            let amount = u64_field(f, "amount");
            match f.get("type").and_then(Value::as_str) {
                None | Some("BANDWIDTH") => info.frozen_bandwidth_sun += amount,
                Some("ENERGY") => info.frozen_energy_sun += amount,
                Some(_) => {}
            }
        }
    }
    let res = &v["account_resource"];
    info.delegated_energy_sun = u64_field(res, "delegated_frozenV2_balance_for_energy");
    info.acquired_energy_sun = u64_field(res, "acquired_delegated_frozenV2_balance_for_energy");
    Ok(Some(info))
}

/// Reads a `/wallet/getaccountresource` answer (a missing field reads as 0).
pub fn parse_account_resources(v: &Value) -> Result<AccountResources, ApiError> {
    if let Some(e) = node_error(v) {
        return Err(e);
    }
    Ok(AccountResources {
        free_net_limit: u64_field(v, "freeNetLimit"),
        free_net_used: u64_field(v, "freeNetUsed"),
        net_limit: u64_field(v, "NetLimit"),
        net_used: u64_field(v, "NetUsed"),
        energy_limit: u64_field(v, "EnergyLimit"),
        energy_used: u64_field(v, "EnergyUsed"),
        total_net_limit: u64_field(v, "TotalNetLimit"),
        total_net_weight: u64_field(v, "TotalNetWeight"),
        total_energy_limit: u64_field(v, "TotalEnergyLimit"),
        total_energy_weight: u64_field(v, "TotalEnergyWeight"),
    })
}

/// Reads the uint256 a `/wallet/triggerconstantcontract` call returned
/// (`constant_result[0]`); a call the node did not run (`result.result` not true) is
/// [`ApiError::Node`] with the node's code and message.
pub fn parse_constant_uint(v: &Value) -> Result<u128, ApiError> {
    let result = &v["result"];
    if result.get("result").and_then(Value::as_bool) != Some(true) {
        return Err(ApiError::Node {
            code: result
                .get("code")
                .and_then(Value::as_str)
                .unwrap_or("UNKNOWN")
                .to_string(),
            message: decode_message(result.get("message").and_then(Value::as_str).unwrap_or("")),
        });
    }
    let word = v["constant_result"]
        .get(0)
        .and_then(Value::as_str)
        .ok_or_else(|| decode_err("triggerconstantcontract: no constant_result"))?;
    let bytes = hex::decode(word).map_err(|e| decode_err(e.to_string()))?;
    tx::parse_uint256(&bytes).map_err(|e| decode_err(e.to_string()))
}

/// Reads a `/wallet/broadcasthex` answer: `Accepted` on `result: true`, otherwise
/// `Rejected` with the node's `code`.
pub fn parse_broadcast(v: &Value) -> Result<BroadcastOutcome, ApiError> {
    if let Some(e) = node_error(v) {
        return Err(e);
    }
    if v.get("result").and_then(Value::as_bool) == Some(true) {
        return Ok(BroadcastOutcome::Accepted);
    }
    let code = v
        .get("code")
        .and_then(Value::as_str)
        .ok_or_else(|| decode_err(format!("broadcast answer without result or code: {v}")))?;
    Ok(BroadcastOutcome::Rejected {
        code: code.to_string(),
        message: decode_message(v.get("message").and_then(Value::as_str).unwrap_or("")),
    })
}

/// Reads a `/wallet/gettransactioninfobyid` answer: `None` (java-tron answers `{}`) until
/// the transaction is in a block.
pub fn parse_transaction_info(v: &Value) -> Result<Option<TxInfo>, ApiError> {
    if let Some(e) = node_error(v) {
        return Err(e);
    }
    let Some(id) = v.get("id").and_then(Value::as_str) else {
        return Ok(None);
    };
    let receipt = &v["receipt"];
    let mut logs = Vec::new();
    for log in v.get("log").and_then(Value::as_array).into_iter().flatten() {
        let address = hex::decode(log.get("address").and_then(Value::as_str).unwrap_or(""))
            .map_err(|e| decode_err(format!("log address: {e}")))?;
        // Logs carry the 20-byte form; accept a 21-byte 41-prefixed one too.
        let address: [u8; 20] = match address.len() {
            20 => address.as_slice().try_into().unwrap_or([0; 20]),
            21 => address[1..].try_into().unwrap_or([0; 20]),
            n => return Err(decode_err(format!("log address of {n} bytes"))),
        };
        let topics = log
            .get("topics")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| hex32(t.as_str().unwrap_or("")))
            .collect::<Result<Vec<_>, _>>()?;
        let data = hex::decode(log.get("data").and_then(Value::as_str).unwrap_or(""))
            .map_err(|e| decode_err(format!("log data: {e}")))?;
        logs.push(TxLog {
            address,
            topics,
            data,
        });
    }
    Ok(Some(TxInfo {
        txid: hex32(id)?,
        block_number: u64_field(v, "blockNumber"),
        block_timestamp_ms: v.get("blockTimeStamp").and_then(Value::as_i64).unwrap_or(0),
        fee_sun: u64_field(v, "fee"),
        receipt_result: receipt
            .get("result")
            .and_then(Value::as_str)
            .map(str::to_string),
        failed: v.get("result").and_then(Value::as_str) == Some("FAILED"),
        res_message: v
            .get("resMessage")
            .and_then(Value::as_str)
            .map(decode_message),
        contract_result: v
            .get("contractResult")
            .and_then(|r| r.get(0))
            .and_then(Value::as_str)
            .and_then(|h| hex::decode(h).ok())
            .unwrap_or_default(),
        energy_usage_total: u64_field(receipt, "energy_usage_total"),
        energy_fee_sun: u64_field(receipt, "energy_fee"),
        net_usage: u64_field(receipt, "net_usage"),
        net_fee_sun: u64_field(receipt, "net_fee"),
        logs,
    }))
}

/// Reads a `/wallet/gettransactioninfobyblocknum` answer: one [`TxInfo`] per transaction
/// (none for the `{}` of a block without transactions).
pub fn parse_block_transaction_infos(v: &Value) -> Result<Vec<TxInfo>, ApiError> {
    if let Some(e) = node_error(v) {
        return Err(e);
    }
    let Some(items) = v.as_array() else {
        // java-tron answers `{}` for a block without transactions.
        return if v.as_object().is_some_and(|o| o.is_empty()) {
            Ok(vec![])
        } else {
            Err(decode_err(format!("gettransactioninfobyblocknum: {v}")))
        };
    };
    items
        .iter()
        .map(|i| parse_transaction_info(i)?.ok_or_else(|| decode_err("info without id")))
        .collect()
}

// ---- HTTP transport -------------------------------------------------------------------

/// [`TronApi`] over java-tron's HTTP API with reqwest, over one API root or several
/// ([`RpcPool`]: a root that times out, refuses, answers 5xx or garbles its answer is
/// left for the next; a broadcast is never re-posted once it may have reached a node,
/// the rail reconciles it by transaction id, see [`crate::rpc_pool`]).
pub struct HttpTronApi {
    pool: RpcPool,
    has_api_key: bool,
}

impl std::fmt::Debug for HttpTronApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpTronApi")
            .field("pool", &self.pool)
            .field("api_key", &self.has_api_key.then_some("<redacted>"))
            .finish()
    }
}

impl HttpTronApi {
    /// `base_url` is the full node's HTTP root (e.g. `http://127.0.0.1:8090`).
    pub fn new(base_url: impl Into<String>, timeout: Duration) -> Result<Self, ApiError> {
        Self::with_urls(vec![base_url.into()], timeout)
    }

    /// Several HTTP roots of the same network, the first preferred (issue #49). Fails on
    /// an empty list.
    pub fn with_urls(base_urls: Vec<String>, timeout: Duration) -> Result<Self, ApiError> {
        let pool = RpcPool::new(base_urls, timeout)
            .map_err(|reason| ApiError::Transport { reason })?
            .allow_empty_answer();
        Ok(HttpTronApi {
            pool,
            has_api_key: false,
        })
    }

    /// Sends `TRON-PRO-API-KEY` (TronGrid) with every request, to every root.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.pool = self.pool.with_header("TRON-PRO-API-KEY", key);
        self.has_api_key = true;
        self
    }

    /// How long a failed root waits behind the healthy ones (default 30 s).
    pub fn with_retry_down_after(mut self, d: Duration) -> Self {
        self.pool = self.pool.with_retry_down_after(d);
        self
    }

    /// Each root's health, redacted (`host:port`), for readiness.
    pub fn endpoints(&self) -> Vec<stablecoin_core::ports::RpcEndpointHealth> {
        self.pool.health()
    }

    pub(super) async fn post(&self, path: &str, body: Value) -> Result<Value, ApiError> {
        let (status, v) = self
            .pool
            .post(path, &body, path == "/wallet/broadcasthex")
            .await
            .map_err(|e| ApiError::Transport {
                reason: format!("{path}: {}", e.reason),
            })?;
        if !(200..300).contains(&status) {
            return Err(ApiError::Node {
                code: format!("HTTP_{status}"),
                message: match v {
                    Value::String(text) => text,
                    other => other.to_string().chars().take(300).collect(),
                },
            });
        }
        if v.is_null() {
            return Ok(json!({}));
        }
        Ok(v)
    }
}

#[async_trait]
impl TronApi for HttpTronApi {
    async fn now_block(&self) -> Result<BlockRef, ApiError> {
        parse_now_block(&self.post("/wallet/getnowblock", json!({})).await?)
    }

    async fn account(&self, address: &TronAddress) -> Result<Option<AccountInfo>, ApiError> {
        parse_account(
            &self
                .post("/wallet/getaccount", json!({ "address": address.to_hex() }))
                .await?,
        )
    }

    async fn account_resources(&self, address: &TronAddress) -> Result<AccountResources, ApiError> {
        parse_account_resources(
            &self
                .post(
                    "/wallet/getaccountresource",
                    json!({ "address": address.to_hex() }),
                )
                .await?,
        )
    }

    async fn trc20_balance(
        &self,
        contract: &TronAddress,
        owner: &TronAddress,
        reader: &TronAddress,
    ) -> Result<u128, ApiError> {
        let parameter = hex::encode(&tx::trc20_balance_of_data(owner)[4..]);
        parse_constant_uint(
            &self
                .post(
                    "/wallet/triggerconstantcontract",
                    json!({
                        "owner_address": reader.to_hex(),
                        "contract_address": contract.to_hex(),
                        "function_selector": "balanceOf(address)",
                        "parameter": parameter,
                    }),
                )
                .await?,
        )
    }

    async fn broadcast(&self, tx: &SignedTx) -> Result<BroadcastOutcome, ApiError> {
        parse_broadcast(
            &self
                .post(
                    "/wallet/broadcasthex",
                    json!({ "transaction": hex::encode(tx.to_bytes()) }),
                )
                .await?,
        )
    }

    async fn transaction_info(&self, txid: &[u8; 32]) -> Result<Option<TxInfo>, ApiError> {
        parse_transaction_info(
            &self
                .post(
                    "/wallet/gettransactioninfobyid",
                    json!({ "value": hex::encode(txid) }),
                )
                .await?,
        )
    }

    async fn transaction_known(&self, txid: &[u8; 32]) -> Result<bool, ApiError> {
        let v = self
            .post(
                "/wallet/gettransactionbyid",
                json!({ "value": hex::encode(txid) }),
            )
            .await?;
        Ok(v.get("txID").is_some())
    }

    fn endpoints(&self) -> Vec<stablecoin_core::ports::RpcEndpointHealth> {
        HttpTronApi::endpoints(self)
    }

    async fn block_transaction_infos(&self, number: u64) -> Result<Vec<TxInfo>, ApiError> {
        parse_block_transaction_infos(
            &self
                .post(
                    "/wallet/gettransactioninfobyblocknum",
                    json!({ "num": number }),
                )
                .await?,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_java_tron_answers() {
        let block = json!({
            "blockID": "0000000004c4b40054f3c5a8e1a3b0f0d0a0b0c0d0e0f0a0b0c0d0e0f0a0b0c0",
            "block_header": {"raw_data": {"number": 80000000, "timestamp": 1767225600000i64}}
        });
        let b = parse_now_block(&block).unwrap();
        assert_eq!(b.number, 80_000_000);
        assert_eq!(b.timestamp_ms, 1_767_225_600_000);

        assert_eq!(parse_account(&json!({})).unwrap(), None);
        let acct = parse_account(&json!({
            "address": "41a614f803b6fd780986a42c78ec9c7f77e6ded13c",
            "balance": 5,
            "frozenV2": [{"amount": 10}, {"type": "ENERGY", "amount": 20}, {"type": "TRON_POWER"}],
            "delegated_frozenV2_balance_for_bandwidth": 3,
            "account_resource": {"delegated_frozenV2_balance_for_energy": 7}
        }))
        .unwrap()
        .unwrap();
        assert_eq!(acct.frozen_bandwidth_sun, 10);
        assert_eq!(acct.frozen_energy_sun, 20);
        assert_eq!(acct.delegatable_energy_sun(), 13);
        assert_eq!(acct.delegatable_bandwidth_sun(), 7);

        let rejected = parse_broadcast(&json!({
            "result": false, "code": "SIGERROR",
            "message": hex::encode("validate signature error")
        }))
        .unwrap();
        assert_eq!(
            rejected,
            BroadcastOutcome::Rejected {
                code: "SIGERROR".into(),
                message: "validate signature error".into()
            }
        );
        assert_eq!(
            parse_broadcast(&json!({"result": true, "txid": "00"})).unwrap(),
            BroadcastOutcome::Accepted
        );
        assert!(parse_transaction_info(&json!({})).unwrap().is_none());
        let info = parse_transaction_info(&json!({
            "id": "d7d1a1f06c3ac7b78de23749cbf380cffbad5ba0d37591f12bbe44983a5432d4",
            "blockNumber": 12, "receipt": {"result": "OUT_OF_ENERGY", "net_usage": 345},
            "result": "FAILED", "resMessage": hex::encode("Not enough energy")
        }))
        .unwrap()
        .unwrap();
        assert!(!info.succeeded());
        assert_eq!(info.failure_reason(), "OUT_OF_ENERGY: Not enough energy");
    }

    #[test]
    fn stake_needed_for_resources() {
        let r = AccountResources {
            total_energy_limit: 180_000_000_000,
            total_energy_weight: 18_000_000_000,
            ..Default::default()
        };
        // 10 Energy per staked TRX: 65_000 Energy need 6_500 TRX.
        assert_eq!(r.sun_for_energy(65_000), Some(6_500_000_000));
        assert_eq!(r.sun_for_energy(1), Some(1_000_000));
        assert_eq!(r.sun_for_bandwidth(1), None);
    }
}
