//! The validator's JSON-RPC shapes over the emulated state, for the JSON-RPC server
//! ([`server`](super::server)) and the tests of the HTTP client.

use super::state::TxRecord;
use super::{BLOCKHASH_VALIDITY_BLOCKS, LiteSvmRpc};
use crate::solana::rpc::{RpcError, SignaturesQuery, TokenBalance, codes};
use crate::solana::{Commitment, codec};
use serde_json::{Value, json};
use solana_pubkey::Pubkey;
use solana_signature::Signature;

impl LiteSvmRpc {
    /// Answers one JSON-RPC call with the validator's JSON shapes (used by
    /// [`server`](super::server)).
    pub fn handle_json(&self, method: &str, params: &Value) -> Result<Value, RpcError> {
        let mut s = self.lock();
        if s.down {
            return Err(RpcError::transport("node down"));
        }
        let p = |i: usize| params.get(i);
        let cfg_commitment = |i: usize| {
            params
                .get(i)
                .and_then(|c| c.get("commitment"))
                .and_then(Value::as_str)
                .and_then(Commitment::parse)
                .unwrap_or(Commitment::Finalized)
        };
        let invalid = |m: &str| RpcError::Server {
            code: codes::INVALID_PARAMS,
            message: format!("Invalid params: {m}"),
            data: None,
        };
        let pubkey_param = |i: usize| -> Result<Pubkey, RpcError> {
            let t = p(i)
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("missing address"))?;
            t.parse::<Pubkey>().map_err(|_| RpcError::Server {
                code: codes::INVALID_PARAMS,
                message: "Invalid param: Invalid".into(),
                data: None,
            })
        };
        let sig_of = |v: &Value| -> Result<Signature, RpcError> {
            v.as_str()
                .and_then(|t| t.parse::<Signature>().ok())
                .ok_or_else(|| invalid("bad signature"))
        };
        let context = |slot: u64, value: Value| json!({"context": {"apiVersion": "2.2.0", "slot": slot}, "value": value});
        s.count(method);
        match method {
            "getHealth" => Ok(json!("ok")),
            "getVersion" => Ok(json!({"solana-core": "2.2.0-litesvm", "feature-set": 0})),
            "getLatestBlockhash" => {
                let c = cfg_commitment(0);
                let slot = s.slot_at(c);
                let value = json!({
                    "blockhash": s.svm.latest_blockhash().to_string(),
                    "lastValidBlockHeight": s.blockhash_issued_at + BLOCKHASH_VALIDITY_BLOCKS,
                });
                Ok(context(slot, value))
            }
            "getBlockHeight" | "getSlot" => Ok(json!(s.slot_at(cfg_commitment(0)))),
            "getMinimumBalanceForRentExemption" => {
                let len = p(0)
                    .and_then(Value::as_u64)
                    .ok_or_else(|| invalid("data length"))?;
                Ok(json!(
                    s.svm.minimum_balance_for_rent_exemption(len as usize)
                ))
            }
            "sendTransaction" => {
                let encoding = p(1)
                    .and_then(|c| c.get("encoding"))
                    .and_then(Value::as_str)
                    .unwrap_or("base58");
                let text = p(0)
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("transaction"))?;
                use base64::Engine as _;
                let wire = match encoding {
                    "base64" => base64::engine::general_purpose::STANDARD
                        .decode(text)
                        .map_err(|_| invalid("invalid base64 encoding"))?,
                    other => return Err(invalid(&format!("unsupported encoding {other}"))),
                };
                s.send(&wire).map(|sig| json!(sig.to_string()))
            }
            "getSignatureStatuses" => {
                if s.auto_advance {
                    s.advance(1);
                }
                let list = p(0)
                    .and_then(Value::as_array)
                    .ok_or_else(|| invalid("signatures"))?;
                let mut out = Vec::new();
                for v in list {
                    let sig = sig_of(v)?;
                    out.push(match s.status_of(&sig) {
                        None => Value::Null,
                        Some(st) => {
                            let confirmations = match st.confirmation_status {
                                Some(Commitment::Finalized) => Value::Null,
                                _ => json!(s.slot.saturating_sub(st.slot + 1)),
                            };
                            let status = match &st.err {
                                None => json!({"Ok": null}),
                                Some(e) => json!({"Err": e}),
                            };
                            json!({
                                "slot": st.slot,
                                "confirmations": confirmations,
                                "err": st.err,
                                "status": status,
                                "confirmationStatus": st.confirmation_status.map(Commitment::as_str),
                            })
                        }
                    });
                }
                Ok(context(s.slot, Value::Array(out)))
            }
            "getRecentPrioritizationFees" => {
                let accounts = match p(0) {
                    None | Some(Value::Null) => Vec::new(),
                    Some(v) => v
                        .as_array()
                        .ok_or_else(|| invalid("accounts"))?
                        .iter()
                        .map(|a| {
                            a.as_str()
                                .and_then(|t| t.parse::<Pubkey>().ok())
                                .ok_or_else(|| invalid("account"))
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                };
                if accounts.len() > 128 {
                    return Err(invalid("Too many inputs provided; max 128"));
                }
                let list = s.recent_prioritization_fees(&accounts)?;
                Ok(Value::Array(
                    list.into_iter()
                        .map(|(slot, fee)| json!({"slot": slot, "prioritizationFee": fee}))
                        .collect(),
                ))
            }
            "getAccountInfo" => {
                let key = pubkey_param(0)?;
                let slot = s.slot_at(cfg_commitment(1));
                let value = match s.account(&key) {
                    None => Value::Null,
                    Some(a) => {
                        use base64::Engine as _;
                        json!({
                            "data": [base64::engine::general_purpose::STANDARD.encode(&a.data), "base64"],
                            "executable": a.executable,
                            "lamports": a.lamports,
                            "owner": a.owner.to_string(),
                            "rentEpoch": u64::MAX,
                            "space": a.data.len(),
                        })
                    }
                };
                Ok(context(slot, value))
            }
            "getBalance" => {
                let key = pubkey_param(0)?;
                let slot = s.slot_at(cfg_commitment(1));
                Ok(context(slot, json!(s.svm.get_balance(&key).unwrap_or(0))))
            }
            "getTokenAccountBalance" => {
                let key = pubkey_param(0)?;
                let slot = s.slot_at(cfg_commitment(1));
                match s.token_account_balance(&key)? {
                    None => Err(RpcError::Server {
                        code: codes::INVALID_PARAMS,
                        message: "Invalid param: could not find account".into(),
                        data: None,
                    }),
                    Some((amount, decimals)) => {
                        Ok(context(slot, ui_token_amount(amount, decimals)))
                    }
                }
            }
            "getSignaturesForAddress" => {
                let key = pubkey_param(0)?;
                let cfg = p(1).cloned().unwrap_or(Value::Null);
                let q = SignaturesQuery {
                    before: cfg.get("before").map(sig_of).transpose()?,
                    until: cfg.get("until").map(sig_of).transpose()?,
                    limit: cfg.get("limit").and_then(Value::as_u64).unwrap_or(1000) as usize,
                };
                let list = s.signatures_for(&key, &q, cfg_commitment(1));
                let fin = s.finalized_slot();
                Ok(Value::Array(
                    list.into_iter()
                        .map(|i| {
                            json!({
                                "signature": i.signature.to_string(),
                                "slot": i.slot,
                                "err": i.err,
                                "memo": i.memo,
                                "blockTime": i.block_time,
                                "confirmationStatus": if i.slot <= fin { "finalized" } else { "confirmed" },
                            })
                        })
                        .collect(),
                ))
            }
            "getTransaction" => {
                let sig = sig_of(p(0).ok_or_else(|| invalid("signature"))?)?;
                let encoding = p(1)
                    .and_then(|c| c.get("encoding"))
                    .and_then(Value::as_str)
                    .unwrap_or("json");
                if encoding != "json" {
                    return Err(invalid(&format!("unsupported encoding {encoding}")));
                }
                let Some((r, _)) = s.transaction(&sig, cfg_commitment(1)) else {
                    return Ok(Value::Null);
                };
                Ok(render_transaction(r))
            }
            other => Err(RpcError::Server {
                code: -32601,
                message: format!("Method not found: {other}"),
                data: None,
            }),
        }
    }
}

fn ui_token_amount(amount: u64, decimals: u8) -> Value {
    let scale = 10u128.pow(u32::from(decimals));
    let whole = u128::from(amount) / scale;
    let frac = u128::from(amount) % scale;
    let text = if decimals == 0 {
        whole.to_string()
    } else {
        let f = format!("{frac:0width$}", width = usize::from(decimals));
        let f = f.trim_end_matches('0');
        if f.is_empty() {
            whole.to_string()
        } else {
            format!("{whole}.{f}")
        }
    };
    json!({
        "amount": amount.to_string(),
        "decimals": decimals,
        "uiAmount": text.parse::<f64>().ok(),
        "uiAmountString": text,
    })
}

fn render_token_balances(list: &[TokenBalance]) -> Value {
    Value::Array(
        list.iter()
            .map(|b| {
                json!({
                    "accountIndex": b.account_index,
                    "mint": b.mint.to_string(),
                    "owner": b.owner.map(|o| o.to_string()),
                    "programId": codec::TOKEN_PROGRAM_ID.to_string(),
                    "uiTokenAmount": ui_token_amount(b.amount, b.decimals),
                })
            })
            .collect(),
    )
}

fn render_transaction(r: &TxRecord) -> Value {
    let status = match &r.err {
        None => json!({"Ok": null}),
        Some(e) => json!({"Err": e}),
    };
    json!({
        "slot": r.slot,
        "blockTime": null,
        "version": "legacy",
        "meta": {
            "err": r.err,
            "status": status,
            "fee": r.fee,
            "preBalances": r.pre_balances,
            "postBalances": r.post_balances,
            "preTokenBalances": render_token_balances(&r.pre_token_balances),
            "postTokenBalances": render_token_balances(&r.post_token_balances),
            "innerInstructions": [],
            "logMessages": r.logs,
            "rewards": [],
            "loadedAddresses": {"readonly": [], "writable": []},
        },
        "transaction": {
            "signatures": r.wire_signatures.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "message": {
                "accountKeys": r.account_keys.iter().map(|k| k.to_string()).collect::<Vec<_>>(),
                "header": {
                    "numRequiredSignatures": r.num_required_signatures,
                    "numReadonlySignedAccounts": r.num_readonly_signed,
                    "numReadonlyUnsignedAccounts": r.num_readonly_unsigned,
                },
                "recentBlockhash": r.recent_blockhash.to_string(),
                "instructions": [],
            }
        }
    })
}
