//! [`RpcBundler`]: an external ERC-4337 bundler over its JSON-RPC API
//! (`eth_sendUserOperation`, `eth_estimateUserOperationGas`,
//! `eth_getUserOperationReceipt`, `eth_getUserOperationByHash`,
//! `eth_supportedEntryPoints`), in the v0.7/v0.8 unpacked user-operation shape.
//!
//! The bundler answers a send with the user-operation hash, not a bundle: the rail
//! records that hash before sending, and learns the bundle transaction later from
//! [`Bundler::view`] (the bundler's receipt) or the EntryPoint's `UserOperationEvent`.
//! An answer that is lost is never retried: the operation is reconciled by its hash.
//!
//! A bundler's mempool is not durable: a restart or an eviction drops an accepted
//! operation, after which it answers `null` to both `eth_getUserOperationReceipt` and
//! `eth_getUserOperationByHash`. [`Bundler::resend`] hands the same signed operation
//! over again (same hash, same nonce: the EntryPoint executes it once at most), at most
//! once per [`RpcBundler::with_resend_after`] (30 s by default) per operation.

use super::address::EvmAddress;
use super::bundler::{BundleError, Bundler, BundlerView};
use super::rpc::{HttpJsonRpc, JsonRpc, RpcError, hash_of, hex0x, quantity};
use super::userop::{Nonce, UserOp};
use async_trait::async_trait;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long after an operation was last handed over [`Bundler::resend`] may hand it
/// over again, by default.
pub const DEFAULT_RESEND_AFTER: Duration = Duration::from_secs(30);

/// An ERC-4337 bundler reached over JSON-RPC, for one EntryPoint.
pub struct RpcBundler {
    rpc: Arc<dyn JsonRpc>,
    entry_point: EvmAddress,
    /// `None`: a dropped operation is never handed over again.
    resend_after: Option<Duration>,
    /// When each operation (by sender and nonce) was last handed over by this process.
    last_sent: Mutex<HashMap<(EvmAddress, [u8; 32]), Instant>>,
}

/// The gas limits a bundler estimates for an operation (`eth_estimateUserOperationGas`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GasEstimate {
    /// `preVerificationGas`.
    pub pre_verification_gas: u128,
    /// `verificationGasLimit`.
    pub verification_gas_limit: u128,
    /// `callGasLimit`.
    pub call_gas_limit: u128,
    /// `paymasterVerificationGasLimit`, when the operation has a paymaster.
    pub paymaster_verification_gas_limit: Option<u128>,
}

/// An operation's receipt as the bundler gives it (`eth_getUserOperationReceipt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserOpReceipt {
    /// The bundle transaction that carried it.
    pub tx_hash: [u8; 32],
    /// Whether its calls succeeded (`success`).
    pub success: bool,
}

/// A 256-bit big-endian word as a JSON-RPC quantity (`0x0`, no leading zeros).
fn quantity_word(w: &[u8]) -> String {
    let h = hex::encode(w);
    let t = h.trim_start_matches('0');
    format!("0x{}", if t.is_empty() { "0" } else { t })
}

fn quantity_u128(v: u128) -> String {
    format!("0x{v:x}")
}

/// `op` in the JSON shape of an ERC-4337 v0.7/v0.8 bundler: `initCode` split into
/// `factory` + `factoryData`, `paymasterAndData` into `paymaster`,
/// `paymasterVerificationGasLimit`, `paymasterPostOpGasLimit` and `paymasterData`; the
/// factory and paymaster fields left out when the operation has none (bundlers refuse
/// unknown fields).
pub fn user_op_json(op: &UserOp) -> Value {
    let mut m = Map::new();
    m.insert("sender".into(), json!(op.sender.to_hex()));
    m.insert("nonce".into(), json!(quantity_word(&op.nonce.word())));
    if op.init_code.len() >= 20 {
        m.insert("factory".into(), json!(hex0x(&op.init_code[..20])));
        m.insert("factoryData".into(), json!(hex0x(&op.init_code[20..])));
    }
    m.insert("callData".into(), json!(hex0x(&op.call_data)));
    m.insert(
        "callGasLimit".into(),
        json!(quantity_u128(op.call_gas_limit)),
    );
    m.insert(
        "verificationGasLimit".into(),
        json!(quantity_u128(op.verification_gas_limit)),
    );
    m.insert(
        "preVerificationGas".into(),
        json!(quantity_u128(op.pre_verification_gas)),
    );
    m.insert(
        "maxFeePerGas".into(),
        json!(quantity_u128(op.max_fee_per_gas)),
    );
    m.insert(
        "maxPriorityFeePerGas".into(),
        json!(quantity_u128(op.max_priority_fee_per_gas)),
    );
    let pm = &op.paymaster_and_data;
    if pm.len() >= 52 {
        m.insert("paymaster".into(), json!(hex0x(&pm[..20])));
        m.insert(
            "paymasterVerificationGasLimit".into(),
            json!(quantity_word(&pm[20..36])),
        );
        m.insert(
            "paymasterPostOpGasLimit".into(),
            json!(quantity_word(&pm[36..52])),
        );
        m.insert("paymasterData".into(), json!(hex0x(&pm[52..])));
    }
    m.insert("signature".into(), json!(hex0x(&op.signature)));
    Value::Object(m)
}

/// The operation of [`user_op_json`]'s shape (what the rail journals to hand a dropped
/// operation over again); `None` if any field is missing or malformed.
pub fn user_op_from_json(v: &Value) -> Option<UserOp> {
    fn bytes(v: &Value) -> Option<Vec<u8>> {
        hex::decode(v.as_str()?.strip_prefix("0x")?).ok()
    }
    fn word(v: &Value) -> Option<[u8; 32]> {
        let h = v.as_str()?.strip_prefix("0x")?;
        if h.is_empty() || h.len() > 64 {
            return None;
        }
        hex::decode(format!("{h:0>64}")).ok()?.try_into().ok()
    }
    fn u128_of(v: &Value) -> Option<u128> {
        let w = word(v)?;
        w[..16]
            .iter()
            .all(|b| *b == 0)
            .then(|| u128::from_be_bytes(w[16..].try_into().unwrap_or([0; 16])))
    }
    let nonce = word(v.get("nonce")?)?;
    let mut key = [0u8; 24];
    key.copy_from_slice(&nonce[..24]);
    let mut seq = [0u8; 8];
    seq.copy_from_slice(&nonce[24..]);
    let mut init_code = Vec::new();
    if let Some(f) = v.get("factory") {
        init_code.extend(bytes(f)?);
        init_code.extend(bytes(v.get("factoryData")?)?);
    }
    let mut paymaster_and_data = Vec::new();
    if let Some(p) = v.get("paymaster") {
        paymaster_and_data.extend(bytes(p)?);
        paymaster_and_data.extend(&word(v.get("paymasterVerificationGasLimit")?)?[16..]);
        paymaster_and_data.extend(&word(v.get("paymasterPostOpGasLimit")?)?[16..]);
        paymaster_and_data.extend(bytes(v.get("paymasterData")?)?);
    }
    Some(UserOp {
        sender: v.get("sender")?.as_str()?.parse().ok()?,
        nonce: Nonce {
            key,
            seq: u64::from_be_bytes(seq),
        },
        init_code,
        call_data: bytes(v.get("callData")?)?,
        verification_gas_limit: u128_of(v.get("verificationGasLimit")?)?,
        call_gas_limit: u128_of(v.get("callGasLimit")?)?,
        pre_verification_gas: u128_of(v.get("preVerificationGas")?)?,
        max_priority_fee_per_gas: u128_of(v.get("maxPriorityFeePerGas")?)?,
        max_fee_per_gas: u128_of(v.get("maxFeePerGas")?)?,
        paymaster_and_data,
        signature: bytes(v.get("signature")?)?,
    })
}

/// Whether a bundler's JSON-RPC error proves the operation was refused (nothing on its
/// way): every answered error except an internal one (-32603, or the server's -32000
/// range without an ERC-4337 code), whose effect is unknown.
fn classify(e: RpcError) -> Result<(), BundleError> {
    match e {
        // The same operation already in its mempool: it is on its way.
        RpcError::Node { ref message, .. } if message.to_lowercase().contains("already known") => {
            Ok(())
        }
        RpcError::Node { code, message, .. } if code == -32603 || code == 0 => {
            Err(BundleError::Unknown {
                tx_hash: None,
                reason: format!("bundler error {code}: {message}"),
            })
        }
        RpcError::Node { code, message, .. } => Err(BundleError::Rejected(format!(
            "bundler error {code}: {message}"
        ))),
        RpcError::Transport(t) => Err(BundleError::Unknown {
            tx_hash: None,
            reason: format!("bundler transport: {t}"),
        }),
        e @ RpcError::Decode { .. } => Err(BundleError::Unknown {
            tx_hash: None,
            reason: e.to_string(),
        }),
    }
}

impl RpcBundler {
    /// A bundler behind `rpc`, for the operations of `entry_point`.
    pub fn new(rpc: Arc<dyn JsonRpc>, entry_point: EvmAddress) -> Self {
        RpcBundler {
            rpc,
            entry_point,
            resend_after: Some(DEFAULT_RESEND_AFTER),
            last_sent: Mutex::new(HashMap::new()),
        }
    }

    /// How long after an operation was last handed over a dropped one may be handed over
    /// again ([`DEFAULT_RESEND_AFTER`]); `None`: never (it then fails at its deadline,
    /// its money returned).
    pub fn with_resend_after(mut self, after: Option<Duration>) -> Self {
        self.resend_after = after;
        self
    }

    fn mark_sent(&self, op: &UserOp) {
        if let Ok(mut m) = self.last_sent.lock() {
            m.insert((op.sender, op.nonce.word()), Instant::now());
        }
    }

    /// A bundler at `url` (HTTP JSON-RPC; the URL may carry an API key), each request
    /// giving up after `timeout`.
    pub fn http(url: &str, entry_point: EvmAddress, timeout: std::time::Duration) -> Self {
        RpcBundler::new(Arc::new(HttpJsonRpc::new(url, timeout)), entry_point)
    }

    /// `eth_supportedEntryPoints`.
    pub async fn supported_entry_points(&self) -> Result<Vec<EvmAddress>, RpcError> {
        let m = "eth_supportedEntryPoints";
        let v = self.rpc.request(m, json!([])).await?;
        v.as_array()
            .ok_or_else(|| RpcError::Decode {
                method: m.into(),
                detail: format!("not a list: {v}"),
            })?
            .iter()
            .map(|a| {
                a.as_str()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| RpcError::Decode {
                        method: m.into(),
                        detail: format!("not an address: {a}"),
                    })
            })
            .collect()
    }

    /// `eth_sendUserOperation`: the operation's hash as the bundler computed it.
    pub async fn send_user_operation(&self, op: &UserOp) -> Result<[u8; 32], RpcError> {
        let m = "eth_sendUserOperation";
        let v = self
            .rpc
            .request(m, json!([user_op_json(op), self.entry_point.to_hex()]))
            .await?;
        hash_of(m, &v)
    }

    /// `eth_estimateUserOperationGas` of `op` (its signatures may be dummies of the right
    /// length).
    pub async fn estimate(&self, op: &UserOp) -> Result<GasEstimate, RpcError> {
        let m = "eth_estimateUserOperationGas";
        let v = self
            .rpc
            .request(m, json!([user_op_json(op), self.entry_point.to_hex()]))
            .await?;
        Ok(GasEstimate {
            pre_verification_gas: quantity(m, &v["preVerificationGas"])?,
            verification_gas_limit: quantity(m, &v["verificationGasLimit"])?,
            call_gas_limit: quantity(m, &v["callGasLimit"])?,
            paymaster_verification_gas_limit: v
                .get("paymasterVerificationGasLimit")
                .filter(|p| !p.is_null())
                .map(|p| quantity(m, p))
                .transpose()?,
        })
    }

    /// `eth_getUserOperationReceipt`: `None` while the operation is in no mined bundle.
    pub async fn receipt(
        &self,
        user_op_hash: &[u8; 32],
    ) -> Result<Option<UserOpReceipt>, RpcError> {
        let m = "eth_getUserOperationReceipt";
        let v = self.rpc.request(m, json!([hex0x(user_op_hash)])).await?;
        if v.is_null() {
            return Ok(None);
        }
        let tx = v
            .get("receipt")
            .and_then(|r| r.get("transactionHash"))
            .unwrap_or(&Value::Null);
        Ok(Some(UserOpReceipt {
            tx_hash: hash_of(m, tx)?,
            success: v.get("success").and_then(Value::as_bool).unwrap_or(false),
        }))
    }

    /// `eth_getUserOperationByHash`: `None` when the bundler does not know the operation;
    /// `Some(None)` while it is known but not in a mined bundle; `Some(Some(tx))` once it
    /// is.
    pub async fn by_hash(
        &self,
        user_op_hash: &[u8; 32],
    ) -> Result<Option<Option<[u8; 32]>>, RpcError> {
        let m = "eth_getUserOperationByHash";
        let v = self.rpc.request(m, json!([hex0x(user_op_hash)])).await?;
        if v.is_null() {
            return Ok(None);
        }
        match v.get("transactionHash") {
            None | Some(Value::Null) => Ok(Some(None)),
            Some(t) => Ok(Some(Some(hash_of(m, t)?))),
        }
    }
}

#[async_trait]
impl Bundler for RpcBundler {
    async fn send(&self, ops: &[UserOp]) -> Result<Option<[u8; 32]>, BundleError> {
        for op in ops {
            self.mark_sent(op);
            if let Err(e) = self.send_user_operation(op).await {
                classify(e)?;
            }
        }
        Ok(None)
    }

    async fn account(&self) -> Option<EvmAddress> {
        // The bundler pays its bundles from its own accounts.
        None
    }

    fn accepts_before_bundling(&self) -> bool {
        true
    }

    async fn view(&self, user_op_hash: &[u8; 32]) -> BundlerView {
        if let Ok(Some(r)) = self.receipt(user_op_hash).await {
            return BundlerView::Included(r.tx_hash);
        }
        match self.by_hash(user_op_hash).await {
            Ok(Some(Some(tx))) => BundlerView::Included(tx),
            Ok(Some(None)) => BundlerView::Pending,
            Ok(None) | Err(_) => BundlerView::Unknown,
        }
    }

    async fn resend(&self, op: &UserOp) -> bool {
        let Some(after) = self.resend_after else {
            return false;
        };
        let key = (op.sender, op.nonce.word());
        {
            let Ok(mut m) = self.last_sent.lock() else {
                return false;
            };
            if m.get(&key).is_some_and(|t| t.elapsed() < after) {
                return false;
            }
            m.insert(key, Instant::now());
        }
        // Whatever the answer: "already known" (it still held it), an AA25 nonce error
        // (it executed already), a transport error (asked again after `after`).
        let _ = self.send_user_operation(op).await;
        true
    }

    async fn problems(&self) -> Vec<String> {
        match self.supported_entry_points().await {
            Ok(eps) if eps.contains(&self.entry_point) => Vec::new(),
            Ok(eps) => vec![format!(
                "the bundler serves EntryPoints {:?}, not {}",
                eps.iter().map(ToString::to_string).collect::<Vec<_>>(),
                self.entry_point
            )],
            Err(e) => vec![format!("bundler unreachable: {e}")],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evm::userop::{Nonce, Sponsorship};
    use std::sync::Mutex;

    type Script = Box<dyn Fn(&str) -> Result<Value, RpcError> + Send + Sync>;

    /// A bundler stub: records each request, answers from a script.
    struct Stub {
        seen: Mutex<Vec<(String, Value)>>,
        answer: Script,
    }

    #[async_trait]
    impl JsonRpc for Stub {
        async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
            self.seen.lock().unwrap().push((method.into(), params));
            (self.answer)(method)
        }
    }

    const EP: EvmAddress = EvmAddress([0x43; 20]);

    fn op(deploy: bool) -> UserOp {
        let mut init_code = Vec::new();
        if deploy {
            init_code.extend_from_slice(&[0xfa; 20]);
            init_code.extend_from_slice(&[1, 2, 3]);
        }
        UserOp {
            sender: EvmAddress([0x11; 20]),
            nonce: Nonce {
                key: [0; 24],
                seq: 0,
            },
            init_code,
            call_data: vec![0xb6, 0x1d, 0x27, 0xf6],
            verification_gas_limit: 150_000,
            call_gas_limit: 80_000,
            pre_verification_gas: 60_000,
            max_priority_fee_per_gas: 1_000_000_000,
            max_fee_per_gas: 3_000_000_000,
            paymaster_and_data: Sponsorship {
                paymaster: EvmAddress([0x99; 20]),
                verification_gas_limit: 70_000,
                post_op_gas_limit: 0,
                valid_until: 5,
                valid_after: 0,
            }
            .encode(&[0xee; 65]),
            signature: vec![0x5a; 65],
        }
    }

    #[test]
    fn the_json_shape_splits_init_code_and_paymaster_fields() {
        let j = user_op_json(&op(true));
        let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys.len(), 15, "{keys:?}");
        assert_eq!(j["nonce"], "0x0");
        assert_eq!(j["factory"], hex0x(&[0xfa; 20]));
        assert_eq!(j["factoryData"], "0x010203");
        assert_eq!(j["callGasLimit"], "0x13880");
        assert_eq!(j["maxFeePerGas"], "0xb2d05e00");
        assert_eq!(j["paymaster"], hex0x(&[0x99; 20]));
        assert_eq!(j["paymasterVerificationGasLimit"], "0x11170");
        assert_eq!(j["paymasterPostOpGasLimit"], "0x0");
        // validUntil (6 bytes), validAfter (6 bytes), then the 65-byte signature.
        let data = j["paymasterData"].as_str().unwrap();
        assert_eq!(data.len(), 2 + 2 * (12 + 65));
        assert!(data.starts_with("0x000000000005000000000000eeee"));
        // A deployed account: no factory fields at all (the schema is strict).
        let j = user_op_json(&op(false));
        assert!(j.get("factory").is_none() && j.get("factoryData").is_none());
        let mut keyed = op(false);
        keyed.nonce.key[23] = 1;
        assert_eq!(user_op_json(&keyed)["nonce"], "0x10000000000000000");
    }

    #[test]
    fn the_json_shape_reads_back_into_the_same_operation() {
        for deploy in [true, false] {
            let mut o = op(deploy);
            o.nonce.key[3] = 0xab;
            o.nonce.seq = 7;
            assert_eq!(user_op_from_json(&user_op_json(&o)), Some(o.clone()));
        }
        let mut j = user_op_json(&op(false));
        j["callGasLimit"] = json!("0x1".to_string() + &"0".repeat(40));
        assert_eq!(user_op_from_json(&j), None, "a gas limit above 128 bits");
        j.as_object_mut().unwrap().remove("callGasLimit");
        assert_eq!(user_op_from_json(&j), None);
    }

    #[tokio::test]
    async fn a_dropped_operation_is_handed_over_again_at_most_once_per_interval() {
        let s = stub(|_| Ok(json!(hex0x(&[7; 32]))));
        let b = RpcBundler::new(s.clone(), EP).with_resend_after(Some(Duration::from_secs(3600)));
        assert_eq!(b.send(&[op(false)]).await, Ok(None));
        assert!(!b.resend(&op(false)).await, "handed over just now");
        let b = RpcBundler::new(s.clone(), EP).with_resend_after(Some(Duration::ZERO));
        assert!(b.resend(&op(false)).await);
        assert!(b.resend(&op(false)).await);
        let sends: Vec<Value> = s
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(m, _)| m == "eth_sendUserOperation")
            .map(|(_, p)| p[0].clone())
            .collect();
        assert_eq!(sends.len(), 3);
        assert!(
            sends.iter().all(|p| *p == user_op_json(&op(false))),
            "the same operation"
        );
        let never = RpcBundler::new(s.clone(), EP).with_resend_after(None);
        assert!(!never.resend(&op(false)).await);
        assert_eq!(s.seen.lock().unwrap().len(), 3);
    }

    fn stub(answer: impl Fn(&str) -> Result<Value, RpcError> + Send + Sync + 'static) -> Arc<Stub> {
        Arc::new(Stub {
            seen: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        })
    }

    #[tokio::test]
    async fn send_answers_no_bundle_hash_and_errors_are_rejected_or_unknown() {
        let s = stub(|_| Ok(json!(hex0x(&[7; 32]))));
        let b = RpcBundler::new(s.clone(), EP);
        assert_eq!(b.send(&[op(true)]).await, Ok(None));
        let seen = s.seen.lock().unwrap().clone();
        assert_eq!(seen[0].0, "eth_sendUserOperation");
        assert_eq!(seen[0].1[1], EP.to_hex());
        assert_eq!(seen[0].1[0]["sender"], EvmAddress([0x11; 20]).to_hex());

        let node = |code: i64, message: &str| RpcError::Node {
            code,
            message: message.into(),
            data: None,
        };
        let refused = node(-32500, "AA24 signature error");
        let b = RpcBundler::new(stub(move |_| Err(refused.clone())), EP);
        assert!(
            matches!(b.send(&[op(false)]).await, Err(BundleError::Rejected(r)) if r.contains("AA24"))
        );
        let b = RpcBundler::new(stub(|_| Err(RpcError::Transport("timed out".into()))), EP);
        assert!(matches!(
            b.send(&[op(false)]).await,
            Err(BundleError::Unknown { tx_hash: None, .. })
        ));
        let internal = node(-32603, "internal error");
        let b = RpcBundler::new(stub(move |_| Err(internal.clone())), EP);
        assert!(matches!(
            b.send(&[op(false)]).await,
            Err(BundleError::Unknown { .. })
        ));
        let known = node(-32602, "Already known");
        let b = RpcBundler::new(stub(move |_| Err(known.clone())), EP);
        assert_eq!(b.send(&[op(false)]).await, Ok(None));
    }

    #[tokio::test]
    async fn view_reads_the_receipt_then_the_mempool() {
        let tx = [0xab; 32];
        let b = RpcBundler::new(
            stub(move |m| {
                Ok(match m {
                    "eth_getUserOperationReceipt" => {
                        json!({"success": true, "receipt": {"transactionHash": hex0x(&tx)}})
                    }
                    _ => Value::Null,
                })
            }),
            EP,
        );
        assert_eq!(b.view(&[1; 32]).await, BundlerView::Included(tx));
        let b = RpcBundler::new(
            stub(|m| {
                Ok(match m {
                    "eth_getUserOperationByHash" => {
                        json!({"userOperation": {}, "transactionHash": null})
                    }
                    _ => Value::Null,
                })
            }),
            EP,
        );
        assert_eq!(b.view(&[1; 32]).await, BundlerView::Pending);
        let b = RpcBundler::new(stub(|_| Ok(Value::Null)), EP);
        assert_eq!(b.view(&[1; 32]).await, BundlerView::Unknown);
        let b = RpcBundler::new(stub(|_| Err(RpcError::Transport("down".into()))), EP);
        assert_eq!(b.view(&[1; 32]).await, BundlerView::Unknown);
    }

    #[tokio::test]
    async fn problems_check_the_supported_entry_points() {
        let b = RpcBundler::new(stub(|_| Ok(json!([EP.to_hex()]))), EP);
        assert!(b.problems().await.is_empty());
        let other = EvmAddress([0x01; 20]);
        let b = RpcBundler::new(stub(move |_| Ok(json!([other.to_hex()]))), EP);
        assert_eq!(b.problems().await.len(), 1);
        let b = RpcBundler::new(stub(|_| Err(RpcError::Transport("refused".into()))), EP);
        assert!(b.problems().await[0].contains("unreachable"));
    }
}
