//! [`JsonRpcClient`]: [`SolanaRpc`] over a validator's HTTP JSON-RPC API.
//!
//! Split as the architecture asks (§11.3): `request_*` functions build the JSON-RPC
//! params and `parse_*` functions read the validator's JSON shapes, both pure and tested
//! on fixtures; the client itself only posts and hands back.

use super::rpc::{
    AccountInfo, Commitment, LatestBlockhash, RpcError, SignatureInfo, SignatureStatus,
    SignaturesQuery, SolanaRpc, TokenBalance, TransactionDetails, codes,
};
use crate::rpc_pool::RpcPool;
use async_trait::async_trait;
use base64::Engine as _;
use serde_json::{Value, json};
use solana_hash::Hash;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The JSON-RPC 2.0 request envelope.
pub fn request_body(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// Splits a JSON-RPC response into its `result` or its `error`.
pub fn parse_envelope(body: Value) -> Result<Value, RpcError> {
    let Value::Object(mut obj) = body else {
        return Err(RpcError::decode("response is not a JSON object"));
    };
    if let Some(err) = obj.remove("error").filter(|e| !e.is_null()) {
        let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let data = err.get("data").cloned().filter(|d| !d.is_null());
        return Err(RpcError::Server {
            code,
            message,
            data,
        });
    }
    obj.remove("result")
        .ok_or_else(|| RpcError::decode("response has neither result nor error"))
}

fn field<'a>(v: &'a Value, name: &str) -> Result<&'a Value, RpcError> {
    v.get(name)
        .ok_or_else(|| RpcError::decode(format!("missing field {name:?}")))
}

fn u64_of(v: &Value, name: &str) -> Result<u64, RpcError> {
    field(v, name)?
        .as_u64()
        .ok_or_else(|| RpcError::decode(format!("field {name:?} is not an unsigned integer")))
}

fn str_of<'a>(v: &'a Value, name: &str) -> Result<&'a str, RpcError> {
    field(v, name)?
        .as_str()
        .ok_or_else(|| RpcError::decode(format!("field {name:?} is not a string")))
}

fn pubkey_of(s: &str) -> Result<Pubkey, RpcError> {
    Pubkey::from_str(s).map_err(|_| RpcError::decode(format!("bad address {s:?}")))
}

fn signature_of(s: &str) -> Result<Signature, RpcError> {
    Signature::from_str(s).map_err(|_| RpcError::decode(format!("bad signature {s:?}")))
}

fn err_of(v: &Value) -> Option<Value> {
    v.get("err").cloned().filter(|e| !e.is_null())
}

/// `{"context": {...}, "value": X}` -> `X`.
pub fn context_value(result: Value) -> Result<Value, RpcError> {
    let Value::Object(mut obj) = result else {
        return Err(RpcError::decode("result is not an object"));
    };
    obj.remove("value")
        .ok_or_else(|| RpcError::decode("result has no value"))
}

fn commitment_config(c: Commitment) -> Value {
    json!({"commitment": c.as_str()})
}

/// `getLatestBlockhash` params at commitment `c`.
pub fn request_get_latest_blockhash(c: Commitment) -> Value {
    json!([commitment_config(c)])
}

/// Reads a `getLatestBlockhash` result.
pub fn parse_latest_blockhash(result: Value) -> Result<LatestBlockhash, RpcError> {
    let v = context_value(result)?;
    let blockhash =
        Hash::from_str(str_of(&v, "blockhash")?).map_err(|_| RpcError::decode("bad blockhash"))?;
    Ok(LatestBlockhash {
        blockhash,
        last_valid_block_height: u64_of(&v, "lastValidBlockHeight")?,
    })
}

/// `sendTransaction` params: base64 wire bytes, preflight at `confirmed`, no node-side
/// retries (the rail rebroadcasts the same bytes itself while they may land).
pub fn request_send_transaction(wire: &[u8]) -> Value {
    json!([
        base64::engine::general_purpose::STANDARD.encode(wire),
        {
            "encoding": "base64",
            "skipPreflight": false,
            "preflightCommitment": "confirmed",
            "maxRetries": 0
        }
    ])
}

/// Reads a `sendTransaction` result: the transaction's first signature.
pub fn parse_send_transaction(result: Value) -> Result<Signature, RpcError> {
    let s = result
        .as_str()
        .ok_or_else(|| RpcError::decode("sendTransaction result is not a string"))?;
    signature_of(s)
}

/// `getSignatureStatuses` params, with `searchTransactionHistory: true` so statuses
/// older than the node's recent cache are found too.
pub fn request_get_signature_statuses(sigs: &[Signature]) -> Value {
    let list: Vec<String> = sigs.iter().map(|s| s.to_string()).collect();
    json!([list, {"searchTransactionHistory": true}])
}

/// Reads a `getSignatureStatuses` result: one entry per signature asked, `None` for one
/// the node does not know; a list of another length than `expected` is
/// [`RpcError::Decode`].
pub fn parse_signature_statuses(
    result: Value,
    expected: usize,
) -> Result<Vec<Option<SignatureStatus>>, RpcError> {
    let v = context_value(result)?;
    let list = v
        .as_array()
        .ok_or_else(|| RpcError::decode("statuses value is not an array"))?;
    if list.len() != expected {
        return Err(RpcError::decode(format!(
            "asked {expected} statuses, got {}",
            list.len()
        )));
    }
    list.iter()
        .map(|entry| {
            if entry.is_null() {
                return Ok(None);
            }
            let confirmation_status = entry
                .get("confirmationStatus")
                .and_then(Value::as_str)
                .and_then(Commitment::parse);
            Ok(Some(SignatureStatus {
                slot: u64_of(entry, "slot")?,
                err: err_of(entry),
                confirmation_status,
            }))
        })
        .collect()
}

/// `getAccountInfo` params: base64 data, at commitment `c`.
pub fn request_get_account_info(address: &Pubkey, c: Commitment) -> Value {
    json!([address.to_string(), {"encoding": "base64", "commitment": c.as_str()}])
}

/// Reads a `getAccountInfo` result: `None` for a missing account; data in another
/// encoding than base64 is [`RpcError::Decode`].
pub fn parse_account_info(result: Value) -> Result<Option<AccountInfo>, RpcError> {
    let v = context_value(result)?;
    if v.is_null() {
        return Ok(None);
    }
    let data = field(&v, "data")?;
    let (b64, encoding) = match data.as_array().map(Vec::as_slice) {
        Some([Value::String(d), Value::String(e)]) => (d.as_str(), e.as_str()),
        _ => return Err(RpcError::decode("account data is not [data, encoding]")),
    };
    if encoding != "base64" {
        return Err(RpcError::decode(format!(
            "account data encoding {encoding:?}"
        )));
    }
    let data = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| RpcError::decode("account data is not base64"))?;
    Ok(Some(AccountInfo {
        lamports: u64_of(&v, "lamports")?,
        owner: pubkey_of(str_of(&v, "owner")?)?,
        data,
        executable: v
            .get("executable")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }))
}

/// Params of the methods that take an address and a commitment (`getBalance`,
/// `getTokenAccountBalance`).
pub fn request_address(address: &Pubkey, c: Commitment) -> Value {
    json!([address.to_string(), commitment_config(c)])
}

/// Reads a `getBalance` result, in lamports.
pub fn parse_balance(result: Value) -> Result<u64, RpcError> {
    context_value(result)?
        .as_u64()
        .ok_or_else(|| RpcError::decode("balance is not an unsigned integer"))
}

fn ui_amount(v: &Value) -> Result<(u64, u8), RpcError> {
    let amount = str_of(v, "amount")?
        .parse::<u64>()
        .map_err(|_| RpcError::decode("token amount is not a u64 string"))?;
    let decimals = u8::try_from(u64_of(v, "decimals")?)
        .map_err(|_| RpcError::decode("token decimals out of range"))?;
    Ok((amount, decimals))
}

/// `getTokenAccountBalance`; the validator answers a missing account with an
/// invalid-params error, read here as `None`.
pub fn parse_token_account_balance(
    response: Result<Value, RpcError>,
) -> Result<Option<u64>, RpcError> {
    match response {
        Ok(result) => Ok(Some(ui_amount(&context_value(result)?)?.0)),
        Err(RpcError::Server { code, message, .. })
            if code == codes::INVALID_PARAMS && message.contains("could not find account") =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Reads a bare unsigned integer result (`getBlockHeight`, `getSlot`,
/// `getMinimumBalanceForRentExemption`).
pub fn parse_u64(result: Value) -> Result<u64, RpcError> {
    result
        .as_u64()
        .ok_or_else(|| RpcError::decode("result is not an unsigned integer"))
}

/// `getSignaturesForAddress` params; `limit` is clamped to 1..=1000, the validator's
/// range.
pub fn request_get_signatures_for_address(
    address: &Pubkey,
    q: &SignaturesQuery,
    c: Commitment,
) -> Value {
    let mut cfg = serde_json::Map::new();
    cfg.insert("commitment".into(), json!(c.as_str()));
    cfg.insert("limit".into(), json!(q.limit.clamp(1, 1000)));
    if let Some(b) = &q.before {
        cfg.insert("before".into(), json!(b.to_string()));
    }
    if let Some(u) = &q.until {
        cfg.insert("until".into(), json!(u.to_string()));
    }
    json!([address.to_string(), Value::Object(cfg)])
}

/// Reads a `getSignaturesForAddress` result (newest first, as the node lists it).
pub fn parse_signatures_for_address(result: Value) -> Result<Vec<SignatureInfo>, RpcError> {
    let list = result
        .as_array()
        .ok_or_else(|| RpcError::decode("signatures result is not an array"))?;
    list.iter()
        .map(|e| {
            Ok(SignatureInfo {
                signature: signature_of(str_of(e, "signature")?)?,
                slot: u64_of(e, "slot")?,
                err: err_of(e),
                memo: e.get("memo").and_then(Value::as_str).map(str::to_string),
                block_time: e.get("blockTime").and_then(Value::as_i64),
            })
        })
        .collect()
}

/// `getTransaction` params: encoding `json`, `maxSupportedTransactionVersion: 0` (without
/// it the node refuses version-0 transactions).
pub fn request_get_transaction(sig: &Signature, c: Commitment) -> Value {
    json!([
        sig.to_string(),
        {"encoding": "json", "commitment": c.as_str(), "maxSupportedTransactionVersion": 0}
    ])
}

fn token_balances(v: Option<&Value>) -> Result<Vec<TokenBalance>, RpcError> {
    let Some(list) = v.and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .map(|b| {
            let (amount, decimals) = ui_amount(field(b, "uiTokenAmount")?)?;
            Ok(TokenBalance {
                account_index: u32::try_from(u64_of(b, "accountIndex")?)
                    .map_err(|_| RpcError::decode("accountIndex out of range"))?,
                mint: pubkey_of(str_of(b, "mint")?)?,
                owner: b
                    .get("owner")
                    .and_then(Value::as_str)
                    .map(pubkey_of)
                    .transpose()?,
                amount,
                decimals,
            })
        })
        .collect()
}

fn u64_list(v: &Value, name: &str) -> Result<Vec<u64>, RpcError> {
    field(v, name)?
        .as_array()
        .ok_or_else(|| RpcError::decode(format!("{name} is not an array")))?
        .iter()
        .map(|x| {
            x.as_u64()
                .ok_or_else(|| RpcError::decode(format!("{name} holds a non-integer")))
        })
        .collect()
}

/// Reads a `getTransaction` result: `None` (`null`) when the node does not have it at
/// that commitment. The account keys of a version-0 transaction include those loaded
/// from lookup tables, so every `accountIndex` resolves.
pub fn parse_transaction(result: Value) -> Result<Option<TransactionDetails>, RpcError> {
    if result.is_null() {
        return Ok(None);
    }
    let meta = field(&result, "meta")?;
    let message = field(field(&result, "transaction")?, "message")?;
    let mut account_keys = field(message, "accountKeys")?
        .as_array()
        .ok_or_else(|| RpcError::decode("accountKeys is not an array"))?
        .iter()
        .map(|k| {
            k.as_str()
                .ok_or_else(|| RpcError::decode("account key is not a string"))
                .and_then(pubkey_of)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Version-0 transactions list table-loaded keys in meta, after the static ones.
    if let Some(loaded) = meta.get("loadedAddresses") {
        for part in ["writable", "readonly"] {
            if let Some(list) = loaded.get(part).and_then(Value::as_array) {
                for k in list {
                    let s = k
                        .as_str()
                        .ok_or_else(|| RpcError::decode("loaded address is not a string"))?;
                    account_keys.push(pubkey_of(s)?);
                }
            }
        }
    }
    Ok(Some(TransactionDetails {
        slot: u64_of(&result, "slot")?,
        block_time: result.get("blockTime").and_then(Value::as_i64),
        err: err_of(meta),
        fee: meta.get("fee").and_then(Value::as_u64).unwrap_or(0),
        account_keys,
        pre_balances: u64_list(meta, "preBalances")?,
        post_balances: u64_list(meta, "postBalances")?,
        pre_token_balances: token_balances(meta.get("preTokenBalances"))?,
        post_token_balances: token_balances(meta.get("postTokenBalances"))?,
    }))
}

/// [`SolanaRpc`] over HTTP JSON-RPC (reqwest, rustls), over one URL or several
/// ([`RpcPool`]: a URL that times out, refuses, answers 5xx or garbles its answer is left
/// for the next; `sendTransaction` is never re-posted once it may have reached a node,
/// the rail reconciles it by signature, see [`crate::rpc_pool`]).
#[derive(Debug)]
pub struct JsonRpcClient {
    pool: RpcPool,
    next_id: AtomicU64,
}

impl JsonRpcClient {
    /// A client of the validator at `url` (for instance `https://api.mainnet-beta.solana.com`
    /// or a provider's endpoint), with a per-request timeout.
    pub fn new(url: impl Into<String>, timeout: Duration) -> Result<Self, RpcError> {
        Self::with_urls(vec![url.into()], timeout)
    }

    /// A client of several URLs of one cluster, the first preferred (issue #49). Fails on
    /// an empty list.
    pub fn with_urls(urls: Vec<String>, timeout: Duration) -> Result<Self, RpcError> {
        Ok(JsonRpcClient {
            pool: RpcPool::new(urls, timeout).map_err(RpcError::transport)?,
            next_id: AtomicU64::new(1),
        })
    }

    /// How long a failed URL waits behind the healthy ones (default 30 s).
    pub fn with_retry_down_after(mut self, d: Duration) -> Self {
        self.pool = self.pool.with_retry_down_after(d);
        self
    }

    /// The preferred validator endpoint.
    pub fn url(&self) -> &str {
        self.pool.first_url()
    }

    /// Posts one request and returns its `result` (or the node's error).
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (_, body) = self
            .pool
            .post(
                "",
                &request_body(id, method, params),
                method == "sendTransaction",
            )
            .await
            .map_err(|e| RpcError::transport(format!("{method}: {}", e.reason)))?;
        parse_envelope(body)
    }
}

#[async_trait]
impl SolanaRpc for JsonRpcClient {
    async fn get_latest_blockhash(&self, c: Commitment) -> Result<LatestBlockhash, RpcError> {
        parse_latest_blockhash(
            self.call("getLatestBlockhash", request_get_latest_blockhash(c))
                .await?,
        )
    }

    async fn get_block_height(&self, c: Commitment) -> Result<u64, RpcError> {
        parse_u64(
            self.call("getBlockHeight", json!([commitment_config(c)]))
                .await?,
        )
    }

    async fn get_slot(&self, c: Commitment) -> Result<u64, RpcError> {
        parse_u64(self.call("getSlot", json!([commitment_config(c)])).await?)
    }

    async fn send_transaction(&self, wire: &[u8]) -> Result<Signature, RpcError> {
        parse_send_transaction(
            self.call("sendTransaction", request_send_transaction(wire))
                .await?,
        )
    }

    async fn get_signature_statuses(
        &self,
        sigs: &[Signature],
    ) -> Result<Vec<Option<SignatureStatus>>, RpcError> {
        if sigs.is_empty() {
            return Ok(Vec::new());
        }
        let r = self
            .call("getSignatureStatuses", request_get_signature_statuses(sigs))
            .await?;
        parse_signature_statuses(r, sigs.len())
    }

    async fn get_account_info(
        &self,
        address: &Pubkey,
        c: Commitment,
    ) -> Result<Option<AccountInfo>, RpcError> {
        parse_account_info(
            self.call("getAccountInfo", request_get_account_info(address, c))
                .await?,
        )
    }

    async fn get_balance(&self, address: &Pubkey, c: Commitment) -> Result<u64, RpcError> {
        parse_balance(self.call("getBalance", request_address(address, c)).await?)
    }

    async fn get_token_account_balance(
        &self,
        address: &Pubkey,
        c: Commitment,
    ) -> Result<Option<u64>, RpcError> {
        parse_token_account_balance(
            self.call("getTokenAccountBalance", request_address(address, c))
                .await,
        )
    }

    async fn get_minimum_balance_for_rent_exemption(&self, len: usize) -> Result<u64, RpcError> {
        parse_u64(
            self.call("getMinimumBalanceForRentExemption", json!([len]))
                .await?,
        )
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        q: &SignaturesQuery,
        c: Commitment,
    ) -> Result<Vec<SignatureInfo>, RpcError> {
        parse_signatures_for_address(
            self.call(
                "getSignaturesForAddress",
                request_get_signatures_for_address(address, q, c),
            )
            .await?,
        )
    }

    async fn get_transaction(
        &self,
        sig: &Signature,
        c: Commitment,
    ) -> Result<Option<TransactionDetails>, RpcError> {
        parse_transaction(
            self.call("getTransaction", request_get_transaction(sig, c))
                .await?,
        )
    }

    async fn get_recent_prioritization_fees(
        &self,
        accounts: &[Pubkey],
    ) -> Result<Vec<u64>, RpcError> {
        super::fees::parse_recent_prioritization_fees(
            self.call(
                "getRecentPrioritizationFees",
                super::fees::request_recent_prioritization_fees(accounts),
            )
            .await?,
        )
    }

    fn endpoints(&self) -> Vec<stablecoin_core::ports::RpcEndpointHealth> {
        self.pool.health()
    }
}

#[cfg(test)]
mod tests {
    //! Parsers against responses in the shapes the validator documents (solana.com RPC
    //! reference examples, and a preflight failure as a mainnet node returned it).
    use super::*;

    fn ok(v: Value) -> Value {
        parse_envelope(json!({"jsonrpc": "2.0", "result": v, "id": 1})).unwrap()
    }

    #[test]
    fn latest_blockhash() {
        let r = ok(json!({
            "context": {"slot": 2792},
            "value": {"blockhash": "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N", "lastValidBlockHeight": 3090}
        }));
        let b = parse_latest_blockhash(r).unwrap();
        assert_eq!(
            b.blockhash.to_string(),
            "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N"
        );
        assert_eq!(b.last_valid_block_height, 3090);
    }

    #[test]
    fn signature_statuses_with_a_missing_one() {
        let r = ok(json!({
            "context": {"slot": 82},
            "value": [
                {"slot": 48, "confirmations": null, "err": null, "status": {"Ok": null}, "confirmationStatus": "finalized"},
                null,
                {"slot": 80, "confirmations": 1, "err": {"InstructionError": [0, {"Custom": 1}]},
                 "status": {"Err": {"InstructionError": [0, {"Custom": 1}]}}, "confirmationStatus": "confirmed"}
            ]
        }));
        let s = parse_signature_statuses(r.clone(), 3).unwrap();
        assert!(s[0].as_ref().unwrap().is_finalized());
        assert_eq!(s[0].as_ref().unwrap().err, None);
        assert!(s[1].is_none());
        let failed = s[2].as_ref().unwrap();
        assert_eq!(failed.confirmation_status, Some(Commitment::Confirmed));
        assert_eq!(
            failed.err,
            Some(json!({"InstructionError": [0, {"Custom": 1}]}))
        );
        assert!(parse_signature_statuses(r, 2).is_err());
    }

    #[test]
    fn account_info_and_missing_account() {
        let r = ok(json!({
            "context": {"apiVersion": "2.0.15", "slot": 341197053},
            "value": {"data": ["AQID", "base64"], "executable": false, "lamports": 88849814690250u64,
                      "owner": "11111111111111111111111111111111", "rentEpoch": 18446744073709551615u64, "space": 3}
        }));
        let a = parse_account_info(r).unwrap().unwrap();
        assert_eq!(a.data, vec![1, 2, 3]);
        assert_eq!(a.lamports, 88_849_814_690_250);
        assert_eq!(a.owner.to_string(), "11111111111111111111111111111111");
        assert_eq!(
            parse_account_info(ok(json!({"context": {"slot": 1}, "value": null}))).unwrap(),
            None
        );
    }

    #[test]
    fn token_account_balance_and_its_missing_account_error() {
        let r = ok(json!({
            "context": {"slot": 1114},
            "value": {"amount": "9864", "decimals": 2, "uiAmount": 98.64, "uiAmountString": "98.64"}
        }));
        assert_eq!(parse_token_account_balance(Ok(r)).unwrap(), Some(9864));
        let missing = parse_envelope(json!({
            "jsonrpc": "2.0",
            "error": {"code": -32602, "message": "Invalid param: could not find account"},
            "id": 1
        }));
        assert_eq!(parse_token_account_balance(missing).unwrap(), None);
        let other = parse_envelope(json!({
            "jsonrpc": "2.0", "error": {"code": -32602, "message": "Invalid param: not a Token account"}, "id": 1
        }));
        assert!(parse_token_account_balance(other).is_err());
    }

    #[test]
    fn signatures_for_address() {
        let r = ok(json!([{
            "blockTime": null,
            "confirmationStatus": "finalized",
            "err": null,
            "memo": null,
            "signature": "5h6xBEauJ3PK6SWCZ1PGjBvj8vDdWG3KpwATGy1ARAXFSDwt8GFXM7W5Ncn16wmqokgpiKRLuS83KUxyZyv2sUYv",
            "slot": 114
        }]));
        let l = parse_signatures_for_address(r).unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].slot, 114);
        assert_eq!(l[0].err, None);
        let q = SignaturesQuery {
            before: Some(l[0].signature),
            until: None,
            limit: 5000,
        };
        let params = request_get_signatures_for_address(
            &Pubkey::new_from_array([0; 32]),
            &q,
            Commitment::Finalized,
        );
        assert_eq!(params[1]["limit"], 1000);
        assert_eq!(params[1]["commitment"], "finalized");
        assert_eq!(params[1]["before"], l[0].signature.to_string());
    }

    #[test]
    fn transaction_with_token_balances() {
        let r = ok(json!({
            "blockTime": 1700000000,
            "meta": {
                "err": null, "fee": 10000,
                "innerInstructions": [], "logMessages": [],
                "postBalances": [499990000, 2039280, 2039280],
                "postTokenBalances": [
                    {"accountIndex": 1, "mint": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
                     "owner": "6XiWjKZhLJEDLN3mpuoNyXD3hMWJcEByiv6XQYi3TJUU",
                     "programId": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
                     "uiTokenAmount": {"amount": "765433", "decimals": 6, "uiAmount": 0.765433, "uiAmountString": "0.765433"}},
                    {"accountIndex": 2, "mint": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
                     "owner": "AkVD4U7VeXzCpEpT6V8BjtwhoQLEs6sSn1kQkRTWxepy",
                     "programId": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
                     "uiTokenAmount": {"amount": "1234567", "decimals": 6, "uiAmount": 1.234567, "uiAmountString": "1.234567"}}
                ],
                "preBalances": [500000000, 2039280, 0],
                "preTokenBalances": [
                    {"accountIndex": 1, "mint": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
                     "owner": "6XiWjKZhLJEDLN3mpuoNyXD3hMWJcEByiv6XQYi3TJUU",
                     "programId": "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
                     "uiTokenAmount": {"amount": "2000000", "decimals": 6, "uiAmount": 2.0, "uiAmountString": "2"}}
                ],
                "rewards": [], "status": {"Ok": null},
                "loadedAddresses": {"readonly": [], "writable": []}
            },
            "slot": 430,
            "transaction": {
                "message": {
                    "accountKeys": [
                        "EjJFPZGbQjx8Wrwz1FLASm2pPJXuNH58ozUfyotDJJ2Q",
                        "DEKTR9ghjzAvhAacsALDp7XTC3usiwqLuZTyDjpJqd6i",
                        "G8MhEyG6bMXBg5arCn3erMv7A8HBu4ht5mLbaQWg6n5"
                    ],
                    "header": {"numReadonlySignedAccounts": 0, "numReadonlyUnsignedAccounts": 0, "numRequiredSignatures": 1},
                    "instructions": [], "recentBlockhash": "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N"
                },
                "signatures": ["5h6xBEauJ3PK6SWCZ1PGjBvj8vDdWG3KpwATGy1ARAXFSDwt8GFXM7W5Ncn16wmqokgpiKRLuS83KUxyZyv2sUYv"]
            },
            "version": "legacy"
        }));
        let t = parse_transaction(r).unwrap().unwrap();
        assert_eq!(t.slot, 430);
        assert_eq!(t.account_keys.len(), 3);
        assert_eq!(t.pre_balances[2], 0);
        assert_eq!(t.post_token_balances[1].amount, 1_234_567);
        assert_eq!(t.pre_token_balances[0].account_index, 1);
        assert_eq!(parse_transaction(ok(Value::Null)).unwrap(), None);
    }

    #[test]
    fn preflight_failure_is_a_server_error_with_the_transaction_error() {
        let e = parse_envelope(json!({
            "jsonrpc": "2.0", "id": 19,
            "error": {
                "code": -32002,
                "message": "Transaction simulation failed: Error processing Instruction 2: custom program error: 0x7",
                "data": {"accounts": null, "err": {"InstructionError": [2, {"Custom": 7}]},
                         "innerInstructions": null, "logs": [], "returnData": null, "unitsConsumed": 2025}
            }
        }))
        .unwrap_err();
        assert_eq!(
            e.preflight_err(),
            Some(&json!({"InstructionError": [2, {"Custom": 7}]}))
        );
        assert!(matches!(e, RpcError::Server { code: -32002, .. }));
    }

    #[test]
    fn send_transaction_params() {
        let p = request_send_transaction(&[1, 2, 3]);
        assert_eq!(p[0], "AQID");
        assert_eq!(p[1]["encoding"], "base64");
        assert_eq!(p[1]["skipPreflight"], false);
        assert_eq!(p[1]["maxRetries"], 0);
        let sig = "5h6xBEauJ3PK6SWCZ1PGjBvj8vDdWG3KpwATGy1ARAXFSDwt8GFXM7W5Ncn16wmqokgpiKRLuS83KUxyZyv2sUYv";
        assert_eq!(parse_send_transaction(json!(sig)).unwrap().to_string(), sig);
        assert!(parse_send_transaction(json!(5)).is_err());
        assert!(parse_envelope(json!([])).is_err());
        assert!(parse_envelope(json!({"jsonrpc": "2.0", "id": 1})).is_err());
    }
}
