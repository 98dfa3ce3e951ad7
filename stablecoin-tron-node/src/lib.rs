//! A local TRON HTTP API node for flow tests (test support, never for production).
//!
//! A dev-only workspace crate (`publish = false`), used by `stablecoin-rails`'
//! `tests/tron_flows.rs` and rail suite, by the escrow lifecycle suite on the real rail and
//! by the server's real-TRON test. It shares no code with the rail: its own protobuf
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
//!   (`stablecoin-rails/scripts/tron/UsdtLike.sol`, compiled by solc into
//!   `stablecoin-rails/tests/fixtures/tron/usdt_like.json`)
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
//!   advances as its clients poll it, without a wall clock. `getblockbynum` answers a
//!   block's id and header; the genesis block's id, which names the network (its last
//!   four bytes are the chain id), is a hash of this private chain unless
//!   `genesis_block_id` gives a public network's.
//! - Tokens: USDT and a USDC-like second TRC-20 (same bytecode, same issuer).
//! - Test controls: async methods on [`TronNode`], and [`Controls`] for callers outside
//!   an async context (queued, applied before the node's next answer). Faults: a lost
//!   broadcast answer, a refused broadcast, a reverting TRC-20 call, the node down; and
//!   one ordering control: a signed transaction processed just before the next
//!   TriggerSmartContract (another transaction of the same account arriving in between
//!   draws on the Energy lent for the next one, as on mainnet).
//!
//! Simplifications (NOT java-tron): Anvil's EVM (istanbul gas schedule) stands in for
//! the TVM, whose Energy prices and dynamic energy factor differ; resource usage never
//! recovers (no 24 h window); the delegatable stake ignores usage; one signature per
//! transaction (owner permission, threshold 1, no multi-sig); `mint_usdt` deposits have no
//! signed TRON transaction behind them (on Anvil the issuer's `issue` + `transfer` do run);
//! messages of validation errors the node's author could not check against java-tron's
//! source (e.g. for a missing owner account) are approximations; no block production by
//! witnesses, no forks, no solidity node.
//!
//! Layout: `pb` and `address` are the node's own encodings, `chain` the state
//! and its bookkeeping, `broadcast` and `trigger` the validation and execution of
//! transactions, `anvil` the EVM backend of the token, `http` the `/wallet/*` API, and
//! this file the running node ([`TronNode`]) with its test controls.

mod address;
mod anvil;
mod broadcast;
mod chain;
mod http;
mod pb;
mod trigger;

pub use address::{addr_from_base58, addr_to_base58};
pub use anvil::{backend_from_env, find_anvil};
pub use chain::{Account, Chain, Controls, NodeConfig, TokenBackend};

use anvil::start_anvil;
use axum::Router;
use axum::routing::post;
use http::*;
use pb::ENERGY;
use std::sync::Arc;
use tokio::sync::{Mutex, MutexGuard};

/// A TRON address: 0x41 then the 20 bytes of its EVM view.
pub type Addr = [u8; 21];

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
    /// Starts the node on 127.0.0.1 (an ephemeral port) and, for
    /// [`TokenBackend::Anvil`], its Anvil child; panics if either cannot start (test
    /// support). Dropping the node stops both.
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
            .route("/wallet/getblockbynum", post(getblockbynum))
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

    /// `http://127.0.0.1:PORT`: the base URL to give a TRON client (no trailing slash).
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

    /// A USDT deposit from the issuer to `to`, sealed in a new block; returns its txid
    /// in hex (see [`Chain::mint`]).
    pub async fn mint_usdt(&self, to: &Addr, amount: u128) -> String {
        hex::encode(self.chain().await.mint(to, amount).await)
    }

    /// Seals `n` blocks (pending transactions go in the first); returns the new head's
    /// number.
    pub async fn mine(&self, n: u64) -> u64 {
        let mut c = self.chain().await;
        for _ in 0..n {
            c.produce_block();
        }
        c.head().number
    }

    /// The number of the newest block.
    pub async fn head(&self) -> u64 {
        self.chain().await.head().number
    }

    /// The newest block's timestamp, in milliseconds since the Unix epoch.
    pub async fn head_timestamp(&self) -> i64 {
        self.chain().await.head().timestamp
    }

    /// The TRX balance of `a`, in sun (0 for an account that does not exist).
    pub async fn trx_balance(&self, a: &Addr) -> u64 {
        self.chain()
            .await
            .accounts
            .get(a)
            .map(|x| x.balance)
            .unwrap_or(0)
    }

    /// A copy of the account at `a`; `None` if it does not exist on chain.
    pub async fn account(&self, a: &Addr) -> Option<Account> {
        self.chain().await.accounts.get(a).cloned()
    }

    /// The USDT balance of `a`, in base units (micro-USDT).
    pub async fn usdt_balance(&self, a: &Addr) -> u128 {
        self.chain().await.token_balance(a).await
    }

    /// Sun of `resource` (0 bandwidth, 1 energy) stake `from` delegates to `to` now.
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

    /// Takes the node down (every API call answers 503) or brings it back.
    pub async fn set_down(&self, down: bool) {
        self.chain().await.down = down;
    }

    /// Turns automine on or off (see [`NodeConfig::automine`]).
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
