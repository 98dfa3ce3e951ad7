//! java-tron's `/wallet/*` HTTP API (`visible=false`) over the shared chain state.

use crate::Addr;
use crate::address::{addr_from_json, from_evm};
use crate::chain::{Block, Chain};
use crate::pb;
use crate::trigger::evm_of;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use prost::Message;
use serde_json::{Value, json};
use sha2::Digest;
use sha3::Keccak256;
use std::sync::Arc;
use tokio::sync::Mutex;

pub(crate) type Shared = Arc<Mutex<Chain>>;

pub(crate) fn down() -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, "node down (test control)").into_response()
}

macro_rules! guard {
    ($chain:expr) => {{
        let mut c = $chain.lock().await;
        c.apply_controls().await;
        if c.down {
            return down();
        }
        c
    }};
}

pub(crate) fn block_json(b: &Block) -> Value {
    json!({
        "blockID": hex::encode(b.id),
        "block_header": {"raw_data": {
            "number": b.number,
            "timestamp": b.timestamp,
            "parentHash": hex::encode(b.parent),
            "version": 32,
        }},
    })
}

pub(crate) async fn getnowblock(State(s): State<Shared>) -> Response {
    let mut c = guard!(s);
    if c.config.block_per_head_read {
        c.produce_block();
    }
    Json(block_json(c.head())).into_response()
}

/// `/wallet/getblockbynum` (`{"num": n}`): the block, or `{}` when there is none (as
/// java-tron answers); transactions are not listed.
pub(crate) async fn getblockbynum(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
    let c = guard!(s);
    let block = body
        .get("num")
        .and_then(Value::as_u64)
        .and_then(|n| c.blocks.get(usize::try_from(n).ok()?));
    match block {
        Some(b) => Json(block_json(b)).into_response(),
        None => Json(json!({})).into_response(),
    }
}

pub(crate) fn body_addr(body: &Value, key: &str) -> Option<Addr> {
    body.get(key)
        .and_then(Value::as_str)
        .and_then(addr_from_json)
}

pub(crate) async fn getaccount(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
    let c = guard!(s);
    let Some(addr) = body_addr(&body, "address") else {
        return Json(json!({"Error": "INVALID address"})).into_response();
    };
    let Some(a) = c.accounts.get(&addr) else {
        return Json(json!({})).into_response();
    };
    let mut v = json!({"address": hex::encode(addr)});
    let put = |v: &mut Value, k: &str, n: u64| {
        if n > 0 {
            v[k] = json!(n);
        }
    };
    put(&mut v, "balance", a.balance);
    let mut frozen = vec![];
    frozen.push(if a.frozen_bandwidth > 0 {
        json!({"amount": a.frozen_bandwidth})
    } else {
        json!({})
    });
    frozen.push(if a.frozen_energy > 0 {
        json!({"type": "ENERGY", "amount": a.frozen_energy})
    } else {
        json!({"type": "ENERGY"})
    });
    frozen.push(json!({"type": "TRON_POWER"}));
    v["frozenV2"] = json!(frozen);
    put(
        &mut v,
        "delegated_frozenV2_balance_for_bandwidth",
        a.delegated_bandwidth,
    );
    put(
        &mut v,
        "acquired_delegated_frozenV2_balance_for_bandwidth",
        a.acquired_bandwidth,
    );
    put(&mut v, "net_usage", a.net_usage);
    put(&mut v, "free_net_usage", a.free_net_usage);
    let mut res = json!({});
    put(&mut res, "energy_usage", a.energy_usage);
    put(
        &mut res,
        "delegated_frozenV2_balance_for_energy",
        a.delegated_energy,
    );
    put(
        &mut res,
        "acquired_delegated_frozenV2_balance_for_energy",
        a.acquired_energy,
    );
    v["account_resource"] = res;
    Json(v).into_response()
}

pub(crate) async fn getaccountresource(
    State(s): State<Shared>,
    Json(body): Json<Value>,
) -> Response {
    let c = guard!(s);
    let Some(addr) = body_addr(&body, "address") else {
        return Json(json!({"Error": "INVALID address"})).into_response();
    };
    let Some(a) = c.accounts.get(&addr) else {
        return Json(json!({})).into_response();
    };
    let mut v = json!({
        "freeNetLimit": c.config.free_net_limit,
        "TotalNetLimit": c.config.total_net_limit,
        "TotalNetWeight": c.total_net_weight(),
        "TotalEnergyLimit": c.config.total_energy_limit,
        "TotalEnergyWeight": c.total_energy_weight(),
    });
    for (k, n) in [
        ("freeNetUsed", a.free_net_usage),
        ("NetLimit", c.net_limit(a)),
        ("NetUsed", a.net_usage),
        ("EnergyLimit", c.energy_limit(a)),
        ("EnergyUsed", a.energy_usage),
    ] {
        if n > 0 {
            v[k] = json!(n);
        }
    }
    Json(v).into_response()
}

pub(crate) async fn triggerconstantcontract(
    State(s): State<Shared>,
    Json(body): Json<Value>,
) -> Response {
    let c = guard!(s);
    let err = |m: &str| {
        Json(json!({"result": {"code": "CONTRACT_VALIDATE_ERROR", "message": hex::encode(m)}}))
            .into_response()
    };
    let Some(contract) = body_addr(&body, "contract_address").filter(|a| c.tokens().contains(a))
    else {
        return err("No contract or not a smart contract");
    };
    let selector = body
        .get("function_selector")
        .and_then(Value::as_str)
        .unwrap_or("");
    let parameter = hex::decode(body.get("parameter").and_then(Value::as_str).unwrap_or(""))
        .unwrap_or_default();
    if let Some(evm) = &c.evm {
        // Any view call, executed by the token's bytecode.
        let mut data = Keccak256::digest(selector.as_bytes())[..4].to_vec();
        data.extend_from_slice(&parameter);
        return match evm.call(&evm_of(&contract), &data).await {
            Ok(out) => Json(json!({
                "result": {"result": true},
                "constant_result": [hex::encode(out)],
            }))
            .into_response(),
            Err(e) => Json(json!({
                "result": {"code": "CONTRACT_EXE_ERROR", "message": hex::encode(e)}
            }))
            .into_response(),
        };
    }
    if selector != "balanceOf(address)" || parameter.len() != 32 {
        return err("the native ledger serves balanceOf(address) only");
    }
    let who = from_evm(&parameter[12..]);
    Json(json!({
        "result": {"result": true},
        "energy_used": 935,
        "constant_result": [format!("{:064x}", c.token_balance_of(&contract, &who).await)],
    }))
    .into_response()
}

pub(crate) async fn broadcasthex(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
    let mut c = guard!(s);
    let Some(bytes) = body
        .get("transaction")
        .and_then(Value::as_str)
        .and_then(|h| hex::decode(h).ok())
    else {
        return Json(json!({"Error": "invalid transaction hex"})).into_response();
    };
    let kind = pb::Transaction::decode(&bytes[..])
        .ok()
        .and_then(|t| t.raw_data)
        .and_then(|r| r.contract.first().map(|k| k.r#type));
    if c.drop_next_request.is_some() && c.drop_next_request == kind {
        c.drop_next_request = None;
        return (StatusCode::BAD_GATEWAY, "").into_response();
    }
    if let Some((code, message)) = c
        .refuse_next_request
        .take_if(|(k, _, _)| Some(*k) == kind)
        .map(|(_, code, message)| (code, message))
    {
        let mut v = json!({"result": false, "code": code, "message": message});
        if let Some(raw) = pb::Transaction::decode(&bytes[..])
            .ok()
            .and_then(|t| t.raw_data)
        {
            v["txid"] = json!(hex::encode(sha2::Sha256::digest(raw.encode_to_vec())));
        }
        return Json(v).into_response();
    }
    if kind == Some(pb::TRIGGER)
        && let Some(ahead) = c.ahead_of_next_trigger.pop_front()
    {
        // Another client's transaction got there first; its outcome is its own.
        let _ = c.broadcast(&ahead).await;
    }
    let lose = c.lose_next_response.is_some() && c.lose_next_response == kind;
    if lose {
        c.lose_next_response = None;
    }
    let answer = match c.broadcast(&bytes).await {
        Ok(txid) => json!({"result": true, "code": "SUCCESS", "txid": hex::encode(txid)}),
        Err((txid, r)) => {
            let mut v = json!({"result": false, "code": r.code, "message": r.message});
            if let Some(t) = txid {
                v["txid"] = json!(hex::encode(t));
            }
            v
        }
    };
    if lose {
        // The node processed it; the answer never reaches the client.
        return (StatusCode::BAD_GATEWAY, "").into_response();
    }
    Json(answer).into_response()
}

pub(crate) fn txid_of(body: &Value) -> Option<[u8; 32]> {
    let v = hex::decode(body.get("value")?.as_str()?).ok()?;
    v.as_slice().try_into().ok()
}

pub(crate) fn info_json(c: &Chain, txid: &[u8; 32]) -> Option<Value> {
    let s = c.txs.get(txid)?;
    let block = s.block?;
    let b = &c.blocks[block as usize];
    let mut v = s.info.clone();
    v["id"] = json!(hex::encode(txid));
    v["blockNumber"] = json!(block);
    v["blockTimeStamp"] = json!(b.timestamp);
    Some(v)
}

pub(crate) async fn gettransactioninfobyid(
    State(s): State<Shared>,
    Json(body): Json<Value>,
) -> Response {
    let c = guard!(s);
    let v = txid_of(&body)
        .and_then(|t| info_json(&c, &t))
        .unwrap_or(json!({}));
    Json(v).into_response()
}

pub(crate) async fn gettransactionbyid(
    State(s): State<Shared>,
    Json(body): Json<Value>,
) -> Response {
    let c = guard!(s);
    let Some(txid) = txid_of(&body) else {
        return Json(json!({})).into_response();
    };
    let v = match c.txs.get(&txid) {
        Some(st) if st.block.is_some() => json!({
            "ret": [{"contractRet": st.contract_ret}],
            "signature": st.signature,
            "txID": hex::encode(txid),
            "raw_data_hex": st.raw_hex,
        }),
        _ => json!({}),
    };
    Json(v).into_response()
}

pub(crate) async fn gettransactioninfobyblocknum(
    State(s): State<Shared>,
    Json(body): Json<Value>,
) -> Response {
    let c = guard!(s);
    let n = body.get("num").and_then(Value::as_u64).unwrap_or(u64::MAX);
    let Some(b) = c.blocks.get(n as usize) else {
        return Json(json!([])).into_response();
    };
    let infos: Vec<Value> = b.txids.iter().filter_map(|t| info_json(&c, t)).collect();
    Json(json!(infos)).into_response()
}
