//! A local TRON HTTP API node for flow tests (test support, feature `tron-test`).
//!
//! `stablecoin_rails::tron::testkit`, used by `tests/tron_flows.rs` and by the escrow
//! lifecycle suite on the real rail. It shares no code with the rail: its own protobuf
//! message definitions, address codec and signature recovery (k256), so it checks the
//! rail's encoding instead of repeating it. It serves java-tron's `/wallet/*` HTTP API
//! (`visible=false`: hex addresses) on 127.0.0.1:0 and stops when its handle is dropped
//! (or with the test's runtime).
//!
//! What it does as java-tron does:
//! - `broadcasthex`: decodes the `Transaction` protobuf, recomputes the txID as SHA-256
//!   of `raw_data`, checks TaPoS (`TAPOS_ERROR`), expiration (`TRANSACTION_EXPIRATION_ERROR`),
//!   duplicates (`DUP_TRANSACTION_ERROR`), recovers the signer and rejects a signature
//!   that is not the owner's (`SIGERROR`), consumes Bandwidth (staked, then free 600/day,
//!   then burnt TRX, else `BANDWITH_ERROR`), validates the contract
//!   (`CONTRACT_VALIDATE_ERROR`) and executes it. Error messages follow java-tron's
//!   `Wallet.broadcastTransaction`.
//! - Contracts: AccountCreate (1 TRX fee), Transfer (TRX; creates the recipient),
//!   Stake 2.0 DelegateResource / UnDelegateResource, TriggerSmartContract against one
//!   USDT-like TRC-20 at the mainnet USDT address, executed by one of two backends
//!   ([`TokenBackend`]): `Anvil` runs the token's real EVM bytecode
//!   (`scripts/tron/UsdtLike.sol`, compiled by solc into `tests/fixtures/tron/usdt_like.json`)
//!   on an Anvil child process (hardfork istanbul, the owner impersonated), and the
//!   Energy of a call is the gas the EVM used minus the intrinsic gas TRON does not charge;
//!   `Native` keeps the balances in the node with fixed Energy costs (29 650 to a
//!   holder-less address, 14 650 otherwise, 1 200 for a revert). Both emit `Transfer`
//!   logs and revert on an insufficient balance.
//! - Energy: a call's Energy limit is min(stake Energy left + balance / price,
//!   fee_limit / price), as java-tron computes it; Energy comes from stake first, then
//!   burnt TRX; a call that needs more fails in its block with `OUT_OF_ENERGY`.
//! - Blocks: with `automine` every accepted transaction is sealed in its own block
//!   (3 s apart, deterministic timestamps from `genesis_ms`); `mine(n)` adds blocks;
//!   with `block_per_head_read` every `getnowblock` first seals a block, so the chain
//!   advances as its clients poll it, without a wall clock.
//! - Tokens: USDT and a USDC-like second TRC-20 (same bytecode, same issuer).
//! - Test controls: async methods on [`TronNode`], and [`Controls`] for callers outside
//!   an async context (queued, applied before the node's next answer). Faults: a lost
//!   broadcast answer, a reverting TRC-20 call, the node down.
//!
//! Simplifications (NOT java-tron): Anvil's EVM (istanbul gas schedule) stands in for
//! the TVM, whose Energy prices and dynamic energy factor differ; resource usage never
//! recovers (no 24 h window); the delegatable stake ignores usage; one signature per
//! transaction (owner permission, threshold 1, no multi-sig); `mint_usdt` deposits have no
//! signed TRON transaction behind them (on Anvil the issuer's `issue` + `transfer` do run);
//! messages of validation errors the node's author could not check against java-tron's
//! source (e.g. for a missing owner account) are approximations; no block production by
//! witnesses, no forks, no solidity node.
#![allow(dead_code)]

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use prost::Message;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sha3::Keccak256;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, MutexGuard};

pub type Addr = [u8; 21];

// ---- protobuf (java-tron field numbers), node-side copies -----------------------------

mod pb {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Any {
        #[prost(string, tag = "1")]
        pub type_url: String,
        #[prost(bytes = "vec", tag = "2")]
        pub value: Vec<u8>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Transaction {
        #[prost(message, optional, tag = "1")]
        pub raw_data: Option<Raw>,
        #[prost(bytes = "vec", repeated, tag = "2")]
        pub signature: Vec<Vec<u8>>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Raw {
        #[prost(bytes = "vec", tag = "1")]
        pub ref_block_bytes: Vec<u8>,
        #[prost(int64, tag = "3")]
        pub ref_block_num: i64,
        #[prost(bytes = "vec", tag = "4")]
        pub ref_block_hash: Vec<u8>,
        #[prost(int64, tag = "8")]
        pub expiration: i64,
        #[prost(bytes = "vec", tag = "10")]
        pub data: Vec<u8>,
        #[prost(message, repeated, tag = "11")]
        pub contract: Vec<Contract>,
        #[prost(bytes = "vec", tag = "12")]
        pub scripts: Vec<u8>,
        #[prost(int64, tag = "14")]
        pub timestamp: i64,
        #[prost(int64, tag = "18")]
        pub fee_limit: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Contract {
        #[prost(int32, tag = "1")]
        pub r#type: i32,
        #[prost(message, optional, tag = "2")]
        pub parameter: Option<Any>,
        #[prost(int32, tag = "5")]
        pub permission_id: i32,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AccountCreate {
        #[prost(bytes = "vec", tag = "1")]
        pub owner_address: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub account_address: Vec<u8>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Transfer {
        #[prost(bytes = "vec", tag = "1")]
        pub owner_address: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub to_address: Vec<u8>,
        #[prost(int64, tag = "3")]
        pub amount: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Trigger {
        #[prost(bytes = "vec", tag = "1")]
        pub owner_address: Vec<u8>,
        #[prost(bytes = "vec", tag = "2")]
        pub contract_address: Vec<u8>,
        #[prost(int64, tag = "3")]
        pub call_value: i64,
        #[prost(bytes = "vec", tag = "4")]
        pub data: Vec<u8>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Delegate {
        #[prost(bytes = "vec", tag = "1")]
        pub owner_address: Vec<u8>,
        #[prost(int32, tag = "2")]
        pub resource: i32,
        #[prost(int64, tag = "3")]
        pub balance: i64,
        #[prost(bytes = "vec", tag = "4")]
        pub receiver_address: Vec<u8>,
        #[prost(bool, tag = "5")]
        pub lock: bool,
    }
}

const ACCOUNT_CREATE: i32 = 0;
const TRANSFER: i32 = 1;
const TRIGGER: i32 = 31;
const DELEGATE: i32 = 57;
const UNDELEGATE: i32 = 58;
const BANDWIDTH: i32 = 0;
const ENERGY: i32 = 1;
const MAX_RESULT_SIZE_IN_TX: u64 = 64;
const MAX_FEE_LIMIT: i64 = 15_000_000_000;

// ---- address codec (node-side) --------------------------------------------------------

pub fn addr_to_base58(a: &Addr) -> String {
    bs58::encode(a).with_check().into_string()
}

pub fn addr_from_base58(s: &str) -> Option<Addr> {
    let v = bs58::decode(s).with_check(None).into_vec().ok()?;
    let a: Addr = v.as_slice().try_into().ok()?;
    (a[0] == 0x41).then_some(a)
}

fn addr_from_json(s: &str) -> Option<Addr> {
    if s.starts_with('T') {
        return addr_from_base58(s);
    }
    let v = hex::decode(s).ok()?;
    let a: Addr = v.as_slice().try_into().ok()?;
    (a[0] == 0x41).then_some(a)
}

fn addr_from_bytes(b: &[u8]) -> Option<Addr> {
    let a: Addr = b.try_into().ok()?;
    (a[0] == 0x41).then_some(a)
}

fn evm(a: &Addr) -> [u8; 20] {
    a[1..].try_into().unwrap()
}

fn from_evm(e: &[u8]) -> Addr {
    let mut a = [0u8; 21];
    a[0] = 0x41;
    a[1..].copy_from_slice(e);
    a
}

fn recover(txid: &[u8; 32], sig: &[u8]) -> Result<Addr, String> {
    if sig.len() < 65 {
        return Err(format!("Signature size is {}", sig.len()));
    }
    let v = if sig[64] >= 27 { sig[64] - 27 } else { sig[64] };
    let recid = k256::ecdsa::RecoveryId::from_byte(v).ok_or("Header byte out of range")?;
    let s = k256::ecdsa::Signature::from_slice(&sig[..64]).map_err(|e| e.to_string())?;
    let key = k256::ecdsa::VerifyingKey::recover_from_prehash(txid, &s, recid)
        .map_err(|e| e.to_string())?;
    let point = key.to_encoded_point(false);
    Ok(from_evm(&Keccak256::digest(&point.as_bytes()[1..])[12..]))
}

// ---- chain state ----------------------------------------------------------------------

/// Where TriggerSmartContract calls execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenBackend {
    /// A native TRC-20 ledger in the node (fixed Energy costs).
    Native,
    /// The token's real EVM bytecode (`tests/fixtures/tron/usdt_like.json`, compiled from
    /// `scripts/tron/UsdtLike.sol`) on an Anvil child process (hardfork istanbul); Energy
    /// is the gas the EVM used minus the intrinsic gas TRON does not charge.
    Anvil,
}

#[derive(Clone, Debug)]
pub struct NodeConfig {
    pub backend: TokenBackend,
    pub automine: bool,
    pub genesis_ms: i64,
    pub block_interval_ms: i64,
    pub total_energy_limit: u64,
    /// Energy weight (TRX) of the rest of the network; local stakes add to it.
    pub base_energy_weight: u64,
    pub total_net_limit: u64,
    pub base_net_weight: u64,
    pub free_net_limit: u64,
    pub energy_price_sun: u64,
    pub bandwidth_price_sun: u64,
    pub create_account_fee_sun: u64,
    pub create_account_bandwidth_fee_sun: u64,
    pub usdt_contract: Addr,
    /// A second TRC-20 (USDC-like, same bytecode and issuer) at its own address.
    pub usdc_contract: Addr,
    pub usdt_issuer: Addr,
    /// Produce a block before answering every `getnowblock`: the chain advances as its
    /// clients poll it (block production without a wall clock).
    pub block_per_head_read: bool,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            backend: TokenBackend::Native,
            automine: true,
            genesis_ms: 1_767_225_600_000,
            block_interval_ms: 3_000,
            total_energy_limit: 180_000_000_000,
            base_energy_weight: 18_000_000_000,
            total_net_limit: 43_200_000_000,
            base_net_weight: 30_000_000_000,
            free_net_limit: 600,
            energy_price_sun: 210,
            bandwidth_price_sun: 1_000,
            create_account_fee_sun: 1_000_000,
            create_account_bandwidth_fee_sun: 100_000,
            usdt_contract: addr_from_base58("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t").unwrap(),
            usdc_contract: addr_from_base58("TEkxiTehnzSmSe2XqrBj4w32RUN966rdz8").unwrap(),
            usdt_issuer: addr_from_base58("THPvaUhoh2Qn2y9THCZML3H815hhFhn5YC").unwrap(),
            block_per_head_read: false,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Account {
    pub balance: u64,
    pub frozen_energy: u64,
    pub frozen_bandwidth: u64,
    pub delegated_energy: u64,
    pub delegated_bandwidth: u64,
    pub acquired_energy: u64,
    pub acquired_bandwidth: u64,
    pub energy_usage: u64,
    pub net_usage: u64,
    pub free_net_usage: u64,
}

#[derive(Clone, Debug)]
struct Block {
    number: u64,
    id: [u8; 32],
    parent: [u8; 32],
    timestamp: i64,
    txids: Vec<[u8; 32]>,
}

#[derive(Clone, Debug)]
struct Stored {
    tx_hex: String,
    raw_hex: String,
    signature: Vec<String>,
    /// TransactionInfo JSON without block fields.
    info: Value,
    contract_ret: &'static str,
    block: Option<u64>,
}

pub struct Chain {
    pub config: NodeConfig,
    blocks: Vec<Block>,
    pub accounts: HashMap<Addr, Account>,
    delegations: HashMap<(Addr, Addr, i32), u64>,
    /// Native ledger balances by (token contract, holder).
    token: HashMap<(Addr, Addr), u128>,
    txs: HashMap<[u8; 32], Stored>,
    pending: Vec<[u8; 32]>,
    seen: HashSet<[u8; 32]>,
    /// Lose the answer of the next broadcast of this contract type.
    lose_next_response: Option<i32>,
    pub down: bool,
    pub accepted: usize,
    seq: u64,
    evm: Option<Evm>,
    /// The next TriggerSmartContract executes as a REVERT (fault injection).
    revert_next_trigger: bool,
    /// The next broadcast of this contract type never reaches the node (fault injection).
    drop_next_request: Option<i32>,
    controls: Arc<Controls>,
}

/// A change queued by a synchronous test control, applied (in order) by the next request
/// before it reads anything: the node behaves as if it had happened at once.
enum Control {
    Mint {
        contract: Addr,
        to: Addr,
        amount: u128,
    },
    Mine(u64),
    Edit(Box<dyn FnOnce(&mut Chain) + Send>),
}

/// Test controls callable outside an async context (see [`TronNode::controls`]).
#[derive(Default)]
pub struct Controls {
    queue: std::sync::Mutex<Vec<Control>>,
    triggers_accepted: std::sync::atomic::AtomicUsize,
}

impl Controls {
    fn push(&self, c: Control) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).push(c);
    }

    /// Deposits `amount` of the token at `contract` to `to` (as [`TronNode::mint_token`]).
    pub fn mint(&self, contract: Addr, to: Addr, amount: u128) {
        self.push(Control::Mint {
            contract,
            to,
            amount,
        });
    }

    pub fn mine(&self, n: u64) {
        self.push(Control::Mine(n));
    }

    /// Any change of the chain state (accounts, stakes, faults).
    pub fn edit(&self, f: impl FnOnce(&mut Chain) + Send + 'static) {
        self.push(Control::Edit(Box::new(f)));
    }

    /// The next TriggerSmartContract is accepted and executes as a REVERT.
    pub fn revert_next_trigger(&self) {
        self.edit(|c| c.revert_next_trigger = true);
    }

    /// The next broadcast of `contract_type` is processed but its answer is lost.
    pub fn lose_next_broadcast_response(&self, contract_type: i32) {
        self.edit(move |c| c.lose_next_response = Some(contract_type));
    }

    /// The next broadcast of `contract_type` is lost on its way: the node never sees it
    /// and the client gets no answer.
    pub fn drop_next_broadcast(&self, contract_type: i32) {
        self.edit(move |c| c.drop_next_request = Some(contract_type));
    }

    /// TriggerSmartContract transactions the node accepted (reverted ones included).
    pub fn triggers_accepted(&self) -> usize {
        self.triggers_accepted
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A refusal at broadcast: java-tron's `response_code` and message.
struct Refusal {
    code: &'static str,
    message: String,
}

fn refuse(code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
    }
}

fn validate_err(message: impl Into<String>) -> Refusal {
    refuse(
        "CONTRACT_VALIDATE_ERROR",
        format!("contract validate error : {}", message.into()),
    )
}

impl Chain {
    fn new(config: NodeConfig) -> Self {
        let genesis = Block {
            number: 0,
            id: block_id(0, &[0; 32], &[]),
            parent: [0; 32],
            timestamp: config.genesis_ms,
            txids: vec![],
        };
        let mut chain = Chain {
            config,
            blocks: vec![genesis],
            accounts: HashMap::new(),
            delegations: HashMap::new(),
            token: HashMap::new(),
            txs: HashMap::new(),
            pending: vec![],
            seen: HashSet::new(),
            lose_next_response: None,
            down: false,
            accepted: 0,
            seq: 0,
            evm: None,
            revert_next_trigger: false,
            drop_next_request: None,
            controls: Arc::new(Controls::default()),
        };
        for contract in chain.tokens() {
            chain.accounts.insert(contract, Account::default());
        }
        chain
    }

    /// The token contracts the node serves: USDT, then USDC.
    pub fn tokens(&self) -> [Addr; 2] {
        [self.config.usdt_contract, self.config.usdc_contract]
    }

    async fn apply_controls(&mut self) {
        let queued = std::mem::take(
            &mut *self
                .controls
                .queue
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        );
        for c in queued {
            match c {
                Control::Mint {
                    contract,
                    to,
                    amount,
                } => {
                    self.mint_token(&contract, &to, amount).await;
                }
                Control::Mine(n) => {
                    for _ in 0..n {
                        self.produce_block();
                    }
                }
                Control::Edit(f) => f(self),
            }
        }
    }

    fn head(&self) -> &Block {
        self.blocks.last().unwrap()
    }

    pub fn produce_block(&mut self) -> u64 {
        let parent = self.head().clone();
        let number = parent.number + 1;
        let txids = std::mem::take(&mut self.pending);
        let block = Block {
            number,
            id: block_id(number, &parent.id, &txids),
            parent: parent.id,
            timestamp: parent.timestamp + self.config.block_interval_ms,
            txids: txids.clone(),
        };
        for t in &txids {
            if let Some(s) = self.txs.get_mut(t) {
                s.block = Some(number);
            }
        }
        self.blocks.push(block);
        number
    }

    fn total_energy_weight(&self) -> u64 {
        self.config.base_energy_weight
            + self.accounts.values().map(|a| a.frozen_energy).sum::<u64>() / 1_000_000
    }

    fn total_net_weight(&self) -> u64 {
        self.config.base_net_weight
            + self
                .accounts
                .values()
                .map(|a| a.frozen_bandwidth)
                .sum::<u64>()
                / 1_000_000
    }

    fn energy_limit(&self, a: &Account) -> u64 {
        let stake = (a.frozen_energy - a.delegated_energy + a.acquired_energy) / 1_000_000;
        (stake as u128 * self.config.total_energy_limit as u128
            / self.total_energy_weight() as u128) as u64
    }

    fn net_limit(&self, a: &Account) -> u64 {
        let stake = (a.frozen_bandwidth - a.delegated_bandwidth + a.acquired_bandwidth) / 1_000_000;
        (stake as u128 * self.config.total_net_limit as u128 / self.total_net_weight() as u128)
            as u64
    }

    /// The USDT balance of `a`.
    pub async fn token_balance(&self, a: &Addr) -> u128 {
        self.token_balance_of(&self.config.usdt_contract, a).await
    }

    pub async fn token_balance_of(&self, contract: &Addr, a: &Addr) -> u128 {
        match &self.evm {
            None => self.token.get(&(*contract, *a)).copied().unwrap_or(0),
            Some(evm) => {
                let mut data = hex::decode("70a08231").unwrap();
                data.extend_from_slice(&[0u8; 12]);
                data.extend_from_slice(&evm_of(a));
                let out = evm
                    .call(&evm_of(contract), &data)
                    .await
                    .expect("balanceOf on anvil");
                u128::from_be_bytes(out[16..32].try_into().unwrap())
            }
        }
    }

    /// A deposit from the issuer, sealed in a new block; returns its txid. The TRON side
    /// is synthetic (no signed transaction); on Anvil the issuer really calls `issue` and
    /// `transfer` on the token.
    pub async fn mint(&mut self, to: &Addr, amount: u128) -> [u8; 32] {
        let usdt = self.config.usdt_contract;
        self.mint_token(&usdt, to, amount).await
    }

    /// [`Chain::mint`] of the token at `contract`.
    pub async fn mint_token(&mut self, contract: &Addr, to: &Addr, amount: u128) -> [u8; 32] {
        self.seq += 1;
        let txid: [u8; 32] = Sha256::digest(format!("mint/{}", self.seq)).into();
        let issuer = self.config.usdt_issuer;
        let contract = *contract;
        let (logs, energy) = match self.evm.clone() {
            None => {
                *self.token.entry((contract, *to)).or_default() += amount;
                (vec![transfer_log(&contract, &issuer, to, amount)], 29_650)
            }
            Some(evm) => {
                let mut issue = hex::decode("cc872b66").unwrap();
                issue.extend_from_slice(&word(amount));
                let r = evm
                    .send(&evm_of(&issuer), &evm_of(&contract), &issue, 1_000_000)
                    .await;
                assert!(r.as_ref().is_ok_and(|r| r.success), "issue on anvil: {r:?}");
                let data = transfer_call(to, amount);
                let r = evm
                    .send(&evm_of(&issuer), &evm_of(&contract), &data, 1_000_000)
                    .await
                    .expect("transfer on anvil");
                assert!(r.success, "mint transfer reverted");
                (r.logs, r.gas_used - intrinsic_gas(&data))
            }
        };
        let info = json!({
            "id": hex::encode(txid),
            "contract_address": hex::encode(contract),
            "receipt": {"energy_usage_total": energy, "result": "SUCCESS"},
            "contractResult": [format!("{:064x}", 1)],
            "log": logs,
        });
        self.txs.insert(
            txid,
            Stored {
                tx_hex: String::new(),
                raw_hex: String::new(),
                signature: vec![],
                info,
                contract_ret: "SUCCESS",
                block: None,
            },
        );
        self.pending.push(txid);
        self.produce_block();
        txid
    }

    async fn broadcast(
        &mut self,
        tx_bytes: &[u8],
    ) -> Result<[u8; 32], (Option<[u8; 32]>, Refusal)> {
        let tx = pb::Transaction::decode(tx_bytes).map_err(|e| {
            (
                None,
                refuse(
                    "OTHER_ERROR",
                    format!("other error : invalid protobuf: {e}"),
                ),
            )
        })?;
        let raw = tx
            .raw_data
            .clone()
            .ok_or((None, refuse("OTHER_ERROR", "other error : no raw_data")))?;
        let raw_bytes = raw.encode_to_vec();
        let txid: [u8; 32] = Sha256::digest(&raw_bytes).into();
        let fail = |r: Refusal| (Some(txid), r);

        // java-tron's Wallet.broadcastTransaction checks (and fills) its txID cache before
        // any validation, and answers a hit with DUP_TRANSACTION_ERROR and no message: a
        // txID that was refused once (the txID does not cover the signature) stays refused.
        if !self.seen.insert(txid) {
            return Err(fail(refuse("DUP_TRANSACTION_ERROR", "")));
        }

        // TaPoS: the referenced block must be a recent block of this chain.
        let tapos_ok = raw.ref_block_bytes.len() == 2
            && raw.ref_block_hash.len() == 8
            && self.blocks.iter().rev().take(65_536).any(|b| {
                b.id[6..8] == raw.ref_block_bytes[..] && b.id[8..16] == raw.ref_block_hash[..]
            });
        if !tapos_ok {
            return Err(fail(refuse("TAPOS_ERROR", "Tapos check error")));
        }
        let head_time = self.head().timestamp;
        if raw.expiration <= head_time || raw.expiration > head_time + 86_400_000 {
            return Err(fail(refuse(
                "TRANSACTION_EXPIRATION_ERROR",
                "transaction expired",
            )));
        }
        if raw.contract.len() != 1 {
            return Err(fail(validate_err("act size should be exactly 1")));
        }
        let contract = &raw.contract[0];
        let param = contract
            .parameter
            .as_ref()
            .map(|p| p.value.clone())
            .unwrap_or_default();
        let owner = match contract.r#type {
            ACCOUNT_CREATE => pb::AccountCreate::decode(&param[..]).map(|c| c.owner_address),
            TRANSFER => pb::Transfer::decode(&param[..]).map(|c| c.owner_address),
            TRIGGER => pb::Trigger::decode(&param[..]).map(|c| c.owner_address),
            DELEGATE | UNDELEGATE => pb::Delegate::decode(&param[..]).map(|c| c.owner_address),
            other => {
                return Err(fail(validate_err(format!(
                    "contract type {other} is not served by the local test node"
                ))));
            }
        }
        .map_err(|e| fail(validate_err(format!("invalid contract parameter: {e}"))))?;
        let owner = addr_from_bytes(&owner).ok_or_else(|| fail(validate_err("Invalid address")))?;

        // Signature: exactly the owner's (owner permission, threshold 1).
        let Some(sig) = tx.signature.first() else {
            return Err(fail(refuse(
                "SIGERROR",
                "validate signature error miss sig or contract",
            )));
        };
        match recover(&txid, sig) {
            Ok(signer) if signer == owner && tx.signature.len() == 1 => {}
            Ok(signer) => {
                return Err(fail(refuse(
                    "SIGERROR",
                    format!(
                        "validate signature error {} is signed by {} but it is not contained of permission.",
                        hex::encode(txid),
                        addr_to_base58(&signer)
                    ),
                )));
            }
            Err(e) => {
                return Err(fail(refuse(
                    "SIGERROR",
                    format!("validate signature error {e}"),
                )));
            }
        }

        // Execute against a copy of the state; commit only if accepted.
        let snapshot = (
            self.accounts.clone(),
            self.delegations.clone(),
            self.token.clone(),
        );
        let size = tx_size(&tx) + MAX_RESULT_SIZE_IN_TX;
        let outcome = self
            .execute(&owner, contract.r#type, &param, raw.fee_limit, size, &txid)
            .await;
        let (mut info, contract_ret) = match outcome {
            Ok(v) => v,
            Err(r) => {
                (self.accounts, self.delegations, self.token) = snapshot;
                return Err(fail(r));
            }
        };
        info["id"] = json!(hex::encode(txid));
        self.txs.insert(
            txid,
            Stored {
                tx_hex: hex::encode(tx_bytes),
                raw_hex: hex::encode(&raw_bytes),
                signature: tx.signature.iter().map(hex::encode).collect(),
                info,
                contract_ret,
                block: None,
            },
        );
        self.pending.push(txid);
        self.accepted += 1;
        if contract.r#type == TRIGGER {
            self.controls
                .triggers_accepted
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        if self.config.automine {
            self.produce_block();
        }
        Ok(txid)
    }

    fn account_mut(&mut self, a: &Addr) -> Result<&mut Account, Refusal> {
        self.accounts
            .get_mut(a)
            .ok_or_else(|| validate_err(format!("account [{}] does not exist", addr_to_base58(a))))
    }

    /// Bandwidth as java-tron's BandwidthProcessor: staked, then free, then burnt TRX.
    fn consume_bandwidth(&mut self, owner: &Addr, bytes: u64) -> Result<(u64, u64), Refusal> {
        let acct = self.accounts.get(owner).cloned().ok_or_else(|| {
            validate_err(format!(
                "account [{}] does not exist",
                addr_to_base58(owner)
            ))
        })?;
        let staked_left = self.net_limit(&acct).saturating_sub(acct.net_usage);
        let free_left = self
            .config
            .free_net_limit
            .saturating_sub(acct.free_net_usage);
        let fee = bytes * self.config.bandwidth_price_sun;
        let a = self.account_mut(owner)?;
        if staked_left >= bytes {
            a.net_usage += bytes;
            Ok((bytes, 0))
        } else if free_left >= bytes {
            a.free_net_usage += bytes;
            Ok((bytes, 0))
        } else if a.balance >= fee {
            a.balance -= fee;
            Ok((0, fee))
        } else {
            Err(refuse(
                "BANDWITH_ERROR",
                "AccountResourceInsufficient error",
            ))
        }
    }

    async fn execute(
        &mut self,
        owner: &Addr,
        kind: i32,
        param: &[u8],
        fee_limit: i64,
        size: u64,
        txid: &[u8; 32],
    ) -> Result<(Value, &'static str), Refusal> {
        if !self.accounts.contains_key(owner) {
            return Err(validate_err(format!(
                "account [{}] does not exist",
                addr_to_base58(owner)
            )));
        }
        match kind {
            ACCOUNT_CREATE => {
                let c =
                    pb::AccountCreate::decode(param).map_err(|e| validate_err(e.to_string()))?;
                let target = addr_from_bytes(&c.account_address)
                    .ok_or_else(|| validate_err("Invalid account address"))?;
                if self.accounts.contains_key(&target) {
                    return Err(validate_err("Account has existed"));
                }
                let (net_usage, net_fee) = self.create_bandwidth(owner, size)?;
                let fee = self.config.create_account_fee_sun;
                let a = self.account_mut(owner)?;
                if a.balance < fee {
                    return Err(validate_err(
                        "Validate CreateAccountActuator error, insufficient fee.",
                    ));
                }
                a.balance -= fee;
                self.accounts.insert(target, Account::default());
                Ok((plain_info(fee + net_fee, net_usage, net_fee), "SUCCESS"))
            }
            TRANSFER => {
                let c = pb::Transfer::decode(param).map_err(|e| validate_err(e.to_string()))?;
                let to = addr_from_bytes(&c.to_address)
                    .ok_or_else(|| validate_err("Invalid toAddress!"))?;
                if c.amount <= 0 {
                    return Err(validate_err("Amount must be greater than 0."));
                }
                if &to == owner {
                    return Err(validate_err("Cannot transfer TRX to yourself."));
                }
                let creates = !self.accounts.contains_key(&to);
                let create_fee = if creates {
                    self.config.create_account_fee_sun
                } else {
                    0
                };
                if self.accounts[owner].balance < c.amount as u64 + create_fee {
                    return Err(validate_err(
                        "Validate TransferContract error, balance is not sufficient.",
                    ));
                }
                let (net_usage, net_fee) = if creates {
                    self.create_bandwidth(owner, size)?
                } else {
                    self.consume_bandwidth(owner, size)?
                };
                let a = self.account_mut(owner)?;
                if a.balance < c.amount as u64 + create_fee {
                    return Err(validate_err(
                        "Validate TransferContract error, balance is not sufficient.",
                    ));
                }
                a.balance -= c.amount as u64 + create_fee;
                self.accounts.entry(to).or_default().balance += c.amount as u64;
                Ok((
                    plain_info(create_fee + net_fee, net_usage, net_fee),
                    "SUCCESS",
                ))
            }
            DELEGATE | UNDELEGATE => {
                let c = pb::Delegate::decode(param).map_err(|e| validate_err(e.to_string()))?;
                let receiver = addr_from_bytes(&c.receiver_address)
                    .ok_or_else(|| validate_err("Invalid receiverAddress"))?;
                if c.resource != ENERGY && c.resource != BANDWIDTH {
                    return Err(validate_err(
                        "ResourceCode error, valid ResourceCode[BANDWIDTH、ENERGY]",
                    ));
                }
                let res_name = if c.resource == ENERGY {
                    "Energy"
                } else {
                    "Bandwidth"
                };
                let balance = u64::try_from(c.balance).unwrap_or(0);
                if kind == DELEGATE {
                    if &receiver == owner {
                        return Err(validate_err(
                            "receiverAddress must not be the same as ownerAddress",
                        ));
                    }
                    if !self.accounts.contains_key(&receiver) {
                        return Err(validate_err(format!(
                            "Account [{}] does not exist",
                            hex::encode(receiver)
                        )));
                    }
                    if balance < 1_000_000 {
                        return Err(validate_err(
                            "delegateBalance must be greater than or equal to 1 TRX",
                        ));
                    }
                    let a = &self.accounts[owner];
                    let available = if c.resource == ENERGY {
                        a.frozen_energy - a.delegated_energy
                    } else {
                        a.frozen_bandwidth - a.delegated_bandwidth
                    };
                    if balance > available {
                        return Err(validate_err(format!(
                            "delegateBalance must be less than or equal to available Freeze{}V2 balance",
                            res_name
                        )));
                    }
                } else {
                    let have = self
                        .delegations
                        .get(&(*owner, receiver, c.resource))
                        .copied()
                        .unwrap_or(0);
                    if have == 0 {
                        return Err(validate_err("delegated Resource does not exist"));
                    }
                    if balance == 0 || balance > have {
                        return Err(validate_err(format!(
                            "insufficient delegatedFrozenBalance({res_name}), request={balance}, unfreezeBalance={have}"
                        )));
                    }
                }
                let (net_usage, net_fee) = self.consume_bandwidth(owner, size)?;
                let key = (*owner, receiver, c.resource);
                if kind == DELEGATE {
                    *self.delegations.entry(key).or_default() += balance;
                    let a = self.accounts.get_mut(owner).unwrap();
                    if c.resource == ENERGY {
                        a.delegated_energy += balance;
                    } else {
                        a.delegated_bandwidth += balance;
                    }
                    let r = self.accounts.get_mut(&receiver).unwrap();
                    if c.resource == ENERGY {
                        r.acquired_energy += balance;
                    } else {
                        r.acquired_bandwidth += balance;
                    }
                } else {
                    *self.delegations.get_mut(&key).unwrap() -= balance;
                    // The receiver's usage of the returned share goes back with it.
                    let r = self.accounts.get_mut(&receiver).unwrap();
                    let moved;
                    if c.resource == ENERGY {
                        let stake = r.frozen_energy + r.acquired_energy;
                        moved = (r.energy_usage as u128 * balance as u128 / stake.max(1) as u128)
                            as u64;
                        r.energy_usage -= moved;
                        r.acquired_energy -= balance;
                    } else {
                        let stake = r.frozen_bandwidth + r.acquired_bandwidth;
                        moved =
                            (r.net_usage as u128 * balance as u128 / stake.max(1) as u128) as u64;
                        r.net_usage -= moved;
                        r.acquired_bandwidth -= balance;
                    }
                    let a = self.accounts.get_mut(owner).unwrap();
                    if c.resource == ENERGY {
                        a.delegated_energy -= balance;
                        a.energy_usage += moved;
                    } else {
                        a.delegated_bandwidth -= balance;
                        a.net_usage += moved;
                    }
                }
                Ok((plain_info(net_fee, net_usage, net_fee), "SUCCESS"))
            }
            TRIGGER => self.trigger(owner, param, fee_limit, size, txid).await,
            _ => Err(validate_err("unsupported contract")),
        }
    }

    /// Bandwidth of a transaction that creates an account: staked bandwidth, else a
    /// burn of `create_account_bandwidth_fee_sun`; free bandwidth does not apply.
    fn create_bandwidth(&mut self, owner: &Addr, bytes: u64) -> Result<(u64, u64), Refusal> {
        let acct = self.accounts[owner].clone();
        let staked_left = self.net_limit(&acct).saturating_sub(acct.net_usage);
        let fee = self.config.create_account_bandwidth_fee_sun;
        let a = self.account_mut(owner)?;
        if staked_left >= bytes {
            a.net_usage += bytes;
            Ok((bytes, 0))
        } else if a.balance >= fee {
            a.balance -= fee;
            Ok((0, fee))
        } else {
            Err(refuse(
                "BANDWITH_ERROR",
                "AccountResourceInsufficient error",
            ))
        }
    }

    async fn trigger(
        &mut self,
        owner: &Addr,
        param: &[u8],
        fee_limit: i64,
        size: u64,
        _txid: &[u8; 32],
    ) -> Result<(Value, &'static str), Refusal> {
        let c = pb::Trigger::decode(param).map_err(|e| validate_err(e.to_string()))?;
        let contract = addr_from_bytes(&c.contract_address)
            .ok_or_else(|| validate_err("Invalid contract address"))?;
        if !self.tokens().contains(&contract) {
            return Err(validate_err("No contract or not a smart contract"));
        }
        if !(0..=MAX_FEE_LIMIT).contains(&fee_limit) {
            return Err(validate_err(format!(
                "feeLimit must be >= 0 and <= {MAX_FEE_LIMIT}"
            )));
        }
        if c.call_value != 0 {
            return Err(validate_err("callValue to a non-payable token contract"));
        }
        let (net_usage, net_fee) = self.consume_bandwidth(owner, size)?;

        let acct = self.accounts[owner].clone();
        let price = self.config.energy_price_sun;
        let stake_left = self.energy_limit(&acct).saturating_sub(acct.energy_usage);
        let limit = (stake_left + acct.balance / price).min(fee_limit as u64 / price);
        let out_of_energy = |needed: String| {
            Some(format!(
                "Not enough energy for 'SSTORE' operation executing: curInvokeEnergyLimit[{limit}], curOpEnergy[{needed}], usedEnergy[{limit}]"
            ))
        };
        let forced_revert = std::mem::take(&mut self.revert_next_trigger);
        let (used, result, res_message, logs) = match self.evm.clone() {
            _ if forced_revert => {
                // Injected fault: the token reverts (as a blacklisted sender would).
                let needed = 1_200;
                if needed > limit {
                    (
                        limit,
                        "OUT_OF_ENERGY",
                        out_of_energy(needed.to_string()),
                        vec![],
                    )
                } else {
                    (
                        needed,
                        "REVERT",
                        Some("REVERT opcode executed".to_string()),
                        vec![],
                    )
                }
            }
            None => {
                // The native ledger: transfer(address,uint256) only, fixed costs.
                enum Effect {
                    Transfer(Addr, u128),
                    Revert,
                }
                let effect = if c.data.len() == 68 && c.data[..4] == [0xa9, 0x05, 0x9c, 0xbb] {
                    let to = from_evm(&c.data[16..36]);
                    let amount = u128::from_be_bytes(c.data[52..68].try_into().unwrap());
                    if c.data[36..52].iter().any(|b| *b != 0)
                        || c.data[4..16].iter().any(|b| *b != 0)
                        || self.token_balance_of(&contract, owner).await < amount
                    {
                        Effect::Revert
                    } else {
                        Effect::Transfer(to, amount)
                    }
                } else {
                    Effect::Revert
                };
                let needed: u64 = match &effect {
                    Effect::Transfer(to, _)
                        if self.token_balance_of(&contract, to).await == 0 && to != owner =>
                    {
                        29_650
                    }
                    Effect::Transfer(..) => 14_650,
                    Effect::Revert => 1_200,
                };
                if needed > limit {
                    (
                        limit,
                        "OUT_OF_ENERGY",
                        out_of_energy(needed.to_string()),
                        vec![],
                    )
                } else {
                    match effect {
                        Effect::Transfer(to, amount) => {
                            *self.token.entry((contract, *owner)).or_default() -= amount;
                            *self.token.entry((contract, to)).or_default() += amount;
                            let log = transfer_log(&contract, owner, &to, amount);
                            (needed, "SUCCESS", None, vec![log])
                        }
                        Effect::Revert => (
                            needed,
                            "REVERT",
                            Some("REVERT opcode executed".to_string()),
                            vec![],
                        ),
                    }
                }
            }
            Some(evm) => {
                // The token's bytecode on Anvil, with the Energy limit as gas above the
                // intrinsic gas (which TRON does not charge).
                let intrinsic = intrinsic_gas(&c.data);
                let gas = intrinsic + limit.min(10_000_000);
                let r = evm
                    .send(&evm_of(owner), &evm_of(&contract), &c.data, gas)
                    .await
                    .map_err(|e| refuse("OTHER_ERROR", format!("other error : {e}")))?;
                let spent = r.gas_used.saturating_sub(intrinsic);
                if r.success {
                    (spent, "SUCCESS", None, r.logs)
                } else if r.gas_used >= gas {
                    (limit, "OUT_OF_ENERGY", out_of_energy("?".into()), vec![])
                } else {
                    (
                        spent,
                        "REVERT",
                        Some("REVERT opcode executed".to_string()),
                        vec![],
                    )
                }
            }
        };
        let from_stake = used.min(stake_left);
        let burnt = (used - from_stake) * price;
        let a = self.account_mut(owner)?;
        a.energy_usage += from_stake;
        a.balance -= burnt.min(a.balance);
        let mut receipt = json!({
            "energy_usage_total": used,
            "result": result,
        });
        if from_stake > 0 {
            receipt["energy_usage"] = json!(from_stake);
        }
        if burnt > 0 {
            receipt["energy_fee"] = json!(burnt);
        }
        if net_usage > 0 {
            receipt["net_usage"] = json!(net_usage);
        }
        if net_fee > 0 {
            receipt["net_fee"] = json!(net_fee);
        }
        let mut info = json!({
            "contract_address": hex::encode(contract),
            "receipt": receipt,
            "contractResult": [if result == "SUCCESS" { format!("{:064x}", 1) } else { String::new() }],
            "log": logs,
        });
        if burnt + net_fee > 0 {
            info["fee"] = json!(burnt + net_fee);
        }
        if result != "SUCCESS" {
            info["result"] = json!("FAILED");
            if let Some(m) = res_message {
                info["resMessage"] = json!(hex::encode(m));
            }
        }
        Ok((info, result))
    }
}

fn plain_info(fee: u64, net_usage: u64, net_fee: u64) -> Value {
    let mut receipt = json!({});
    if net_usage > 0 {
        receipt["net_usage"] = json!(net_usage);
    }
    if net_fee > 0 {
        receipt["net_fee"] = json!(net_fee);
    }
    let mut info = json!({"contractResult": [""], "receipt": receipt});
    if fee > 0 {
        info["fee"] = json!(fee);
    }
    info
}

fn transfer_log(contract: &Addr, from: &Addr, to: &Addr, amount: u128) -> Value {
    let topic0 = hex::encode(Keccak256::digest(b"Transfer(address,address,uint256)"));
    json!({
        "address": hex::encode(evm(contract)),
        "topics": [
            topic0,
            format!("{:0>64}", hex::encode(evm(from))),
            format!("{:0>64}", hex::encode(evm(to))),
        ],
        "data": format!("{amount:064x}"),
    })
}

fn evm_of(a: &Addr) -> [u8; 20] {
    evm(a)
}

fn word(v: u128) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[16..].copy_from_slice(&v.to_be_bytes());
    w
}

fn transfer_call(to: &Addr, amount: u128) -> Vec<u8> {
    let mut d = hex::decode("a9059cbb").unwrap();
    d.extend_from_slice(&[0u8; 12]);
    d.extend_from_slice(&evm(to));
    d.extend_from_slice(&word(amount));
    d
}

/// EVM intrinsic gas (Istanbul): 21 000 + 4 per zero and 16 per non-zero calldata byte.
fn intrinsic_gas(data: &[u8]) -> u64 {
    21_000
        + data
            .iter()
            .map(|b| if *b == 0 { 4 } else { 16 })
            .sum::<u64>()
}

// ---- Anvil ------------------------------------------------------------------------------

#[derive(Debug)]
struct EvmReceipt {
    success: bool,
    gas_used: u64,
    /// TRON-shaped log JSON.
    logs: Vec<Value>,
}

/// JSON-RPC to the Anvil child process.
#[derive(Clone, Debug)]
struct Evm {
    url: String,
    http: reqwest::Client,
}

fn hex0x(b: &[u8]) -> String {
    format!("0x{}", hex::encode(b))
}

fn quantity(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap_or("0x0").trim_start_matches("0x"), 16).unwrap_or(0)
}

impl Evm {
    async fn rpc(&self, method: &str, params: Value) -> Result<Value, String> {
        let resp: Value = self
            .http
            .post(&self.url)
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .map_err(|e| format!("{method}: {e}"))?
            .json()
            .await
            .map_err(|e| format!("{method}: {e}"))?;
        if let Some(e) = resp.get("error") {
            return Err(format!("{method}: {e}"));
        }
        Ok(resp["result"].clone())
    }

    async fn call(&self, to: &[u8; 20], data: &[u8]) -> Result<Vec<u8>, String> {
        let out = self
            .rpc(
                "eth_call",
                json!([{"to": hex0x(to), "data": hex0x(data)}, "latest"]),
            )
            .await?;
        hex::decode(out.as_str().unwrap_or("0x").trim_start_matches("0x"))
            .map_err(|e| e.to_string())
    }

    /// An impersonated, zero-gas-price transaction, mined at once.
    async fn send(
        &self,
        from: &[u8; 20],
        to: &[u8; 20],
        data: &[u8],
        gas: u64,
    ) -> Result<EvmReceipt, String> {
        let hash = self
            .rpc(
                "eth_sendTransaction",
                json!([{
                    "from": hex0x(from), "to": hex0x(to), "data": hex0x(data),
                    "gas": format!("0x{gas:x}"), "gasPrice": "0x0",
                }]),
            )
            .await?;
        // Automine seals it at once, but the receipt may show up a moment later.
        let mut r = Value::Null;
        for _ in 0..400 {
            r = self.rpc("eth_getTransactionReceipt", json!([hash])).await?;
            if !r.is_null() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if r.is_null() {
            return Err(format!("no receipt for {hash}"));
        }
        let logs = r["logs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| {
                json!({
                    "address": l["address"].as_str().unwrap_or("").trim_start_matches("0x").to_lowercase(),
                    "topics": l["topics"].as_array().into_iter().flatten()
                        .map(|t| t.as_str().unwrap_or("").trim_start_matches("0x").to_string())
                        .collect::<Vec<_>>(),
                    "data": l["data"].as_str().unwrap_or("").trim_start_matches("0x"),
                })
            })
            .collect();
        Ok(EvmReceipt {
            success: quantity(&r["status"]) == 1,
            gas_used: quantity(&r["gasUsed"]),
            logs,
        })
    }
}

/// The token backend a suite runs on: `Anvil` when an anvil binary is found, else the
/// native ledger, unless `TRON_REQUIRE_ANVIL` is set (as `scripts/test` does), which
/// turns a missing Anvil into a failure instead of a silent downgrade.
pub fn backend_from_env() -> TokenBackend {
    if find_anvil().is_some() {
        return TokenBackend::Anvil;
    }
    assert!(
        std::env::var_os("TRON_REQUIRE_ANVIL").is_none(),
        "TRON_REQUIRE_ANVIL is set but no anvil binary was found"
    );
    TokenBackend::Native
}

/// The anvil binary: `$ANVIL`, then `scripts/tron/node_modules/.bin/anvil` (see
/// `scripts/tron/README.md`), then `anvil` on `PATH`.
pub fn find_anvil() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("ANVIL") {
        return Some(p.into());
    }
    let local = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/tron/node_modules/.bin/anvil");
    if local.exists() {
        return Some(local);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("anvil"))
            .find(|p| p.exists())
    })
}

async fn start_anvil(contracts: &[Addr]) -> (tokio::process::Child, Evm) {
    let bin = find_anvil().expect("anvil not found: set ANVIL or see scripts/tron/README.md");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(bin)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "--hardfork",
            "istanbul",
            "--gas-price",
            "0",
            "--auto-impersonate",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn anvil");
    let evm = Evm {
        url: format!("http://127.0.0.1:{port}"),
        http: reqwest::Client::new(),
    };
    let mut ready = false;
    for _ in 0..200 {
        if evm.rpc("eth_chainId", json!([])).await.is_ok() {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(ready, "anvil did not answer on port {port}");
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/tron/usdt_like.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let code = fixture["runtime_bytecode"].as_str().unwrap();
    for contract in contracts {
        evm.rpc(
            "anvil_setCode",
            json!([hex0x(&evm_of(contract)), format!("0x{code}")]),
        )
        .await
        .expect("anvil_setCode");
    }
    (child, evm)
}

fn tx_size(tx: &pb::Transaction) -> u64 {
    tx.encode_to_vec().len() as u64
}

fn block_id(number: u64, parent: &[u8; 32], txids: &[[u8; 32]]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(parent);
    h.update(number.to_be_bytes());
    for t in txids {
        h.update(t);
    }
    let mut id: [u8; 32] = h.finalize().into();
    id[..8].copy_from_slice(&number.to_be_bytes());
    id
}

// ---- HTTP -----------------------------------------------------------------------------

type Shared = Arc<Mutex<Chain>>;

fn down() -> Response {
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

fn block_json(b: &Block) -> Value {
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

async fn getnowblock(State(s): State<Shared>) -> Response {
    let mut c = guard!(s);
    if c.config.block_per_head_read {
        c.produce_block();
    }
    Json(block_json(c.head())).into_response()
}

fn body_addr(body: &Value, key: &str) -> Option<Addr> {
    body.get(key)
        .and_then(Value::as_str)
        .and_then(addr_from_json)
}

async fn getaccount(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
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

async fn getaccountresource(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
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

async fn triggerconstantcontract(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
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

async fn broadcasthex(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
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

fn txid_of(body: &Value) -> Option<[u8; 32]> {
    let v = hex::decode(body.get("value")?.as_str()?).ok()?;
    v.as_slice().try_into().ok()
}

fn info_json(c: &Chain, txid: &[u8; 32]) -> Option<Value> {
    let s = c.txs.get(txid)?;
    let block = s.block?;
    let b = &c.blocks[block as usize];
    let mut v = s.info.clone();
    v["id"] = json!(hex::encode(txid));
    v["blockNumber"] = json!(block);
    v["blockTimeStamp"] = json!(b.timestamp);
    Some(v)
}

async fn gettransactioninfobyid(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
    let c = guard!(s);
    let v = txid_of(&body)
        .and_then(|t| info_json(&c, &t))
        .unwrap_or(json!({}));
    Json(v).into_response()
}

async fn gettransactionbyid(State(s): State<Shared>, Json(body): Json<Value>) -> Response {
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

async fn gettransactioninfobyblocknum(
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

/// The running node and its test controls.
pub struct TronNode {
    url: String,
    chain: Shared,
    controls: Arc<Controls>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    anvil: Option<tokio::process::Child>,
}

impl Drop for TronNode {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(child) = self.anvil.as_mut() {
            let _ = child.start_kill();
        }
    }
}

impl TronNode {
    pub async fn start(config: NodeConfig) -> TronNode {
        let backend = config.backend;
        let mut chain = Chain::new(config);
        let controls = chain.controls.clone();
        let mut anvil = None;
        if backend == TokenBackend::Anvil {
            let (child, evm) = start_anvil(&chain.tokens()).await;
            chain.evm = Some(evm);
            anvil = Some(child);
        }
        let chain: Shared = Arc::new(Mutex::new(chain));
        let app = Router::new()
            .route("/wallet/getnowblock", post(getnowblock).get(getnowblock))
            .route("/wallet/getaccount", post(getaccount))
            .route("/wallet/getaccountresource", post(getaccountresource))
            .route(
                "/wallet/triggerconstantcontract",
                post(triggerconstantcontract),
            )
            .route("/wallet/broadcasthex", post(broadcasthex))
            .route(
                "/wallet/gettransactioninfobyid",
                post(gettransactioninfobyid),
            )
            .route("/wallet/gettransactionbyid", post(gettransactionbyid))
            .route(
                "/wallet/gettransactioninfobyblocknum",
                post(gettransactioninfobyblocknum),
            )
            .with_state(chain.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        TronNode {
            url,
            chain,
            controls,
            shutdown: Some(tx),
            anvil,
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The chain state, after every queued control is applied.
    pub async fn chain(&self) -> MutexGuard<'_, Chain> {
        let mut c = self.chain.lock().await;
        c.apply_controls().await;
        c
    }

    /// Controls callable without `.await` (applied before the node's next answer).
    pub fn controls(&self) -> Arc<Controls> {
        self.controls.clone()
    }

    /// A deposit of the token at `contract` (see [`Chain::mint`]).
    pub async fn mint_token(&self, contract: &Addr, to: &Addr, amount: u128) -> String {
        hex::encode(self.chain().await.mint_token(contract, to, amount).await)
    }

    /// Genesis-style: an account with `balance_sun` TRX.
    pub async fn create_account(&self, a: &Addr, balance_sun: u64) {
        self.chain().await.accounts.entry(*a).or_default().balance += balance_sun;
    }

    /// Genesis-style Stake 2.0 freeze (`FreezeBalanceV2`) for a resource (0 bandwidth, 1 energy).
    pub async fn freeze(&self, a: &Addr, resource: i32, sun: u64) {
        let mut c = self.chain().await;
        let acct = c.accounts.entry(*a).or_default();
        if resource == ENERGY {
            acct.frozen_energy += sun;
        } else {
            acct.frozen_bandwidth += sun;
        }
    }

    pub async fn mint_usdt(&self, to: &Addr, amount: u128) -> String {
        hex::encode(self.chain().await.mint(to, amount).await)
    }

    pub async fn mine(&self, n: u64) -> u64 {
        let mut c = self.chain().await;
        for _ in 0..n {
            c.produce_block();
        }
        c.head().number
    }

    pub async fn head(&self) -> u64 {
        self.chain().await.head().number
    }

    pub async fn head_timestamp(&self) -> i64 {
        self.chain().await.head().timestamp
    }

    pub async fn trx_balance(&self, a: &Addr) -> u64 {
        self.chain()
            .await
            .accounts
            .get(a)
            .map(|x| x.balance)
            .unwrap_or(0)
    }

    pub async fn account(&self, a: &Addr) -> Option<Account> {
        self.chain().await.accounts.get(a).cloned()
    }

    pub async fn usdt_balance(&self, a: &Addr) -> u128 {
        self.chain().await.token_balance(a).await
    }

    pub async fn delegated(&self, from: &Addr, to: &Addr, resource: i32) -> u64 {
        self.chain()
            .await
            .delegations
            .get(&(*from, *to, resource))
            .copied()
            .unwrap_or(0)
    }

    /// The next broadcast of a `contract_type` (31: TriggerSmartContract) is processed
    /// but its answer is lost (HTTP 502, empty body).
    pub async fn lose_next_broadcast_response(&self, contract_type: i32) {
        self.chain().await.lose_next_response = Some(contract_type);
    }

    pub async fn set_down(&self, down: bool) {
        self.chain().await.down = down;
    }

    pub async fn set_automine(&self, on: bool) {
        self.chain().await.config.automine = on;
    }

    /// Transactions the node accepted (signed broadcasts only).
    pub async fn accepted(&self) -> usize {
        self.chain().await.accepted
    }

    /// The `receipt.result` of an included transaction.
    pub async fn contract_ret(&self, txid_hex: &str) -> Option<String> {
        let txid: [u8; 32] = hex::decode(txid_hex).ok()?.as_slice().try_into().ok()?;
        self.chain()
            .await
            .txs
            .get(&txid)
            .map(|s| s.contract_ret.to_string())
    }
}
