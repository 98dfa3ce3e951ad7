//! The chain state: configuration, accounts, blocks, stored transactions, the queued test
//! controls, and the block and balance bookkeeping. Broadcast validation and execution
//! are in `broadcast` and `trigger`.

use crate::Addr;
use crate::address::addr_from_base58;
use crate::anvil::Evm;
use crate::pb;
use crate::trigger::{evm_of, intrinsic_gas, transfer_call, transfer_log, word};
use prost::Message;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

// ---- chain state ----------------------------------------------------------------------

/// Where TriggerSmartContract calls execute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenBackend {
    /// A native TRC-20 ledger in the node (fixed Energy costs).
    Native,
    /// The token's real EVM bytecode (`stablecoin-rails/tests/fixtures/tron/usdt_like.json`,
    /// compiled from `stablecoin-rails/scripts/tron/UsdtLike.sol`) on an Anvil child
    /// process (hardfork istanbul); Energy is the gas the EVM used minus the intrinsic gas
    /// TRON does not charge.
    Anvil,
}

/// How a [`TronNode`](crate::TronNode) starts; the defaults follow mainnet's
/// parameters, USDT's address and the native token backend.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// Where the TRC-20 calls execute (default [`TokenBackend::Native`]).
    pub backend: TokenBackend,
    /// Seal every accepted transaction in its own block at once (default on); off, the
    /// transactions wait in the pending list for `mine`.
    pub automine: bool,
    /// Timestamp of block 0, in milliseconds since the Unix epoch.
    pub genesis_ms: i64,
    /// Milliseconds between the timestamps of consecutive blocks (3,000 on mainnet).
    pub block_interval_ms: i64,
    /// Energy the whole network gets per day, shared out by Energy stake weight.
    pub total_energy_limit: u64,
    /// Energy weight (TRX) of the rest of the network; local stakes add to it.
    pub base_energy_weight: u64,
    /// Bandwidth (bytes) the whole network gets per day, shared out by Bandwidth stake
    /// weight.
    pub total_net_limit: u64,
    /// Bandwidth weight (TRX) of the rest of the network; local stakes add to it.
    pub base_net_weight: u64,
    /// Free Bandwidth of every account, in bytes (600 on mainnet; never recovers here).
    pub free_net_limit: u64,
    /// TRX burnt per unit of Energy a call needs beyond its stake, in sun.
    pub energy_price_sun: u64,
    /// TRX burnt per byte of a transaction no staked or free Bandwidth covers, in sun.
    pub bandwidth_price_sun: u64,
    /// Fee of an AccountCreate or of a TRX transfer that creates its recipient, in sun.
    pub create_account_fee_sun: u64,
    /// Burnt instead of Bandwidth when a transaction creates an account and the owner's
    /// staked Bandwidth does not cover it, in sun (free Bandwidth does not apply).
    pub create_account_bandwidth_fee_sun: u64,
    /// Address of the USDT-like TRC-20 (default: mainnet USDT's).
    pub usdt_contract: Addr,
    /// A second TRC-20 (USDC-like, same bytecode and issuer) at its own address.
    pub usdc_contract: Addr,
    /// The tokens' issuer: the sender of every `mint` deposit (and, on Anvil, the
    /// owner that calls `issue`).
    pub usdt_issuer: Addr,
    /// Produce a block before answering every `getnowblock`: the chain advances as its
    /// clients poll it (block production without a wall clock).
    pub block_per_head_read: bool,
    /// The genesis block's id (`getblockbynum` 0), which names the network: its last
    /// four bytes are the chain id (mainnet `…2b6653dc`, Nile `…cd8690dc`). Default
    /// `None`: a hash of this private chain's genesis, which is no public network's.
    /// A given id must carry block number 0 (its first eight bytes zero).
    pub genesis_block_id: Option<[u8; 32]>,
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
            genesis_block_id: None,
        }
    }
}

/// A TRON account's TRX and Stake 2.0 resources; amounts of TRX are in sun (1 TRX =
/// 1,000,000 sun), usages in Energy units or bytes, and usage never recovers.
#[derive(Clone, Debug, Default)]
pub struct Account {
    /// Spendable TRX, in sun.
    pub balance: u64,
    /// TRX staked for Energy (`FreezeBalanceV2`), in sun, delegated share included.
    pub frozen_energy: u64,
    /// TRX staked for Bandwidth, in sun, delegated share included.
    pub frozen_bandwidth: u64,
    /// Of `frozen_energy`, the sun delegated to other accounts.
    pub delegated_energy: u64,
    /// Of `frozen_bandwidth`, the sun delegated to other accounts.
    pub delegated_bandwidth: u64,
    /// Energy stake other accounts delegated to this one, in sun.
    pub acquired_energy: u64,
    /// Bandwidth stake other accounts delegated to this one, in sun.
    pub acquired_bandwidth: u64,
    /// Energy consumed from the stake so far (burnt TRX not counted).
    pub energy_usage: u64,
    /// Staked Bandwidth consumed so far, in bytes.
    pub net_usage: u64,
    /// Free Bandwidth consumed so far, in bytes (bounded by
    /// [`NodeConfig::free_net_limit`]).
    pub free_net_usage: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct Block {
    pub(crate) number: u64,
    pub(crate) id: [u8; 32],
    pub(crate) parent: [u8; 32],
    pub(crate) timestamp: i64,
    pub(crate) txids: Vec<[u8; 32]>,
}

#[derive(Clone, Debug)]
pub(crate) struct Stored {
    pub(crate) raw_hex: String,
    pub(crate) signature: Vec<String>,
    /// TransactionInfo JSON without block fields.
    pub(crate) info: Value,
    pub(crate) contract_ret: &'static str,
    pub(crate) block: Option<u64>,
}

/// The whole state of the node, for tests to read and edit through
/// [`TronNode::chain`](crate::TronNode::chain) or [`Controls::edit`].
pub struct Chain {
    /// The configuration; tests may change it while the node runs (e.g. `automine`).
    pub config: NodeConfig,
    pub(crate) blocks: Vec<Block>,
    /// Every account the chain knows; a missing one does not exist on chain.
    pub accounts: HashMap<Addr, Account>,
    pub(crate) delegations: HashMap<(Addr, Addr, i32), u64>,
    /// Native ledger balances by (token contract, holder).
    pub(crate) token: HashMap<(Addr, Addr), u128>,
    pub(crate) txs: HashMap<[u8; 32], Stored>,
    pub(crate) pending: Vec<[u8; 32]>,
    pub(crate) seen: HashSet<[u8; 32]>,
    /// Lose the answer of the next broadcast of this contract type.
    pub(crate) lose_next_response: Option<i32>,
    /// The node is down: every API call answers 503 until it is cleared.
    pub down: bool,
    /// Transactions accepted by `broadcasthex` so far (signed broadcasts only, not
    /// mints).
    pub accepted: usize,
    pub(crate) seq: u64,
    pub(crate) evm: Option<Evm>,
    /// The next TriggerSmartContract executes as a REVERT (fault injection).
    pub(crate) revert_next_trigger: bool,
    /// The next broadcast of this contract type never reaches the node (fault injection).
    pub(crate) drop_next_request: Option<i32>,
    /// The next broadcast of this contract type is refused with this java-tron
    /// `code` and `message`, nothing executed (fault injection).
    pub(crate) refuse_next_request: Option<(i32, String, String)>,
    /// Signed transactions (protobuf bytes), each reaching the node just before one of the
    /// next TriggerSmartContract broadcasts, in order, and processed first (test ordering
    /// control).
    pub(crate) ahead_of_next_trigger: std::collections::VecDeque<Vec<u8>>,
    pub(crate) controls: Arc<Controls>,
}

/// A change queued by a synchronous test control, applied (in order) by the next request
/// before it reads anything: the node behaves as if it had happened at once.
pub(crate) enum Control {
    Mint {
        contract: Addr,
        to: Addr,
        amount: u128,
    },
    Mine(u64),
    Edit(Box<dyn FnOnce(&mut Chain) + Send>),
}

/// Test controls callable outside an async context (see [`TronNode::controls`](crate::TronNode::controls)).
#[derive(Default)]
pub struct Controls {
    pub(crate) queue: std::sync::Mutex<Vec<Control>>,
    pub(crate) triggers_accepted: std::sync::atomic::AtomicUsize,
}

impl Controls {
    pub(crate) fn push(&self, c: Control) {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).push(c);
    }

    /// Deposits `amount` of the token at `contract` to `to` (as [`TronNode::mint_token`](crate::TronNode::mint_token)).
    pub fn mint(&self, contract: Addr, to: Addr, amount: u128) {
        self.push(Control::Mint {
            contract,
            to,
            amount,
        });
    }

    /// Seals `n` blocks (as [`TronNode::mine`](crate::TronNode::mine)).
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

    /// The next broadcast of `contract_type` is refused as java-tron refuses a
    /// transaction it does not accept (`{"result": false, "code", "message"}` with its
    /// txID): nothing is executed or stored, as when validation fails
    /// (`CONTRACT_VALIDATE_ERROR`) or the node is out of sync (`SERVER_BUSY`).
    pub fn refuse_next_broadcast(&self, contract_type: i32, code: &str, message: &str) {
        let (code, message) = (code.to_string(), message.to_string());
        self.edit(move |c| c.refuse_next_request = Some((contract_type, code, message)));
    }

    /// `signed_tx` (a signed `Transaction`'s protobuf bytes) reaches the node just before
    /// the next TriggerSmartContract broadcast (the one after, if one is queued already)
    /// and is processed first, exactly as if it
    /// had been broadcast then (validated, executed, stored; a refusal is dropped
    /// silently, as a transaction another client sent to another node would be). Why: on
    /// mainnet a transaction of the same account that arrives in between (another wallet
    /// using the same key, a second send) draws on the Energy and Bandwidth lent for the
    /// next one; this orders such a transaction deterministically without a clock.
    pub fn run_before_next_trigger(&self, signed_tx: Vec<u8>) {
        self.edit(move |c| c.ahead_of_next_trigger.push_back(signed_tx));
    }

    /// TriggerSmartContract transactions the node accepted (reverted ones included).
    pub fn triggers_accepted(&self) -> usize {
        self.triggers_accepted
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// A refusal at broadcast: java-tron's `response_code` and message.
pub(crate) struct Refusal {
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

pub(crate) fn refuse(code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        code,
        message: message.into(),
    }
}

pub(crate) fn validate_err(message: impl Into<String>) -> Refusal {
    refuse(
        "CONTRACT_VALIDATE_ERROR",
        format!("contract validate error : {}", message.into()),
    )
}

impl Chain {
    pub(crate) fn new(config: NodeConfig) -> Self {
        let genesis = Block {
            number: 0,
            id: config
                .genesis_block_id
                .unwrap_or_else(|| block_id(0, &[0; 32], &[])),
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
            refuse_next_request: None,
            ahead_of_next_trigger: Default::default(),
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

    pub(crate) async fn apply_controls(&mut self) {
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

    pub(crate) fn head(&self) -> &Block {
        self.blocks.last().unwrap()
    }

    /// Seals the pending transactions in a new block, one interval after its parent;
    /// returns its number.
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

    pub(crate) fn total_energy_weight(&self) -> u64 {
        self.config.base_energy_weight
            + self.accounts.values().map(|a| a.frozen_energy).sum::<u64>() / 1_000_000
    }

    pub(crate) fn total_net_weight(&self) -> u64 {
        self.config.base_net_weight
            + self
                .accounts
                .values()
                .map(|a| a.frozen_bandwidth)
                .sum::<u64>()
                / 1_000_000
    }

    pub(crate) fn energy_limit(&self, a: &Account) -> u64 {
        let stake = (a.frozen_energy - a.delegated_energy + a.acquired_energy) / 1_000_000;
        (stake as u128 * self.config.total_energy_limit as u128
            / self.total_energy_weight() as u128) as u64
    }

    pub(crate) fn net_limit(&self, a: &Account) -> u64 {
        let stake = (a.frozen_bandwidth - a.delegated_bandwidth + a.acquired_bandwidth) / 1_000_000;
        (stake as u128 * self.config.total_net_limit as u128 / self.total_net_weight() as u128)
            as u64
    }

    /// The USDT balance of `a`.
    pub async fn token_balance(&self, a: &Addr) -> u128 {
        self.token_balance_of(&self.config.usdt_contract, a).await
    }

    /// The balance of `a`, in the token's base units, at the token `contract`.
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
}

pub(crate) fn tx_size(tx: &pb::Transaction) -> u64 {
    tx.encode_to_vec().len() as u64
}

pub(crate) fn block_id(number: u64, parent: &[u8; 32], txids: &[[u8; 32]]) -> [u8; 32] {
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
