//! [`EvmRail`]: the [`Rail`] of one EVM chain (Polygon PoS, Base, BNB Smart Chain) over
//! ERC-4337 v0.8 smart accounts.
//!
//! - Every key purpose owns a SimpleAccount whose address is derived offline (CREATE2 from
//!   the factory and the owner key); the account is deployed by the `initCode` of its
//!   first operation.
//! - A payment is ONE user operation whose `executeBatch` makes every leg's ERC-20
//!   transfer (recipient, service fee, tenant fee): all or nothing.
//! - Gas is paid by the service's verifying paymaster; the service signs each sponsorship
//!   and bundles the operation itself ([`Bundler`]). The account never holds native coin.
//! - The nonce key of an operation is derived from the payment id, so operations of one
//!   account run in parallel (one key each) and one payment id can only ever be one
//!   operation: a resubmission finds the key used and reconciles.
//! - `tx_hash` is the bundle transaction's hash; the user-operation hash is kept beside
//!   it. An unknown outcome is reconciled from the bundle receipt or, failing that, from
//!   the EntryPoint's `UserOperationEvent` log, never by sending again.
//!
//! Split by concern: `config` (the chain profile), `submitted` (what the rail remembers
//! of each payment, written through to its journal) and `operations` (building,
//! sponsoring and signing a user operation, and reading its fate from the EntryPoint's
//! logs); this file holds the rail, its constructors and its [`Rail`] implementation.

use super::abi::{self, Abi, keccak};
use super::address::EvmAddress;
use super::bundler::{Bundler, BundlerView};
use super::rpc::{Eth, JsonRpc, RpcError, address_topic, hex0x, topic_address};
use super::userop::{AccountFactory, Call};
use async_trait::async_trait;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{
    ChainAddress, Curve, Inbound, KeyPurpose, MemoryJournal, Rail, RailError, RailId, RailJournal,
    RailPayment, Readiness, ReadinessStatus, ScanBatch, Signer, Submission, SubmissionStatus,
};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

mod batch;
mod config;
mod operations;
mod reads;
mod submitted;

pub use config::{ERC1967_PROXY_V08, EvmConfig, EvmToken, GasPolicy};
pub use operations::call_revert_reason;
pub use submitted::Submitted;

/// The [`Rail`] of one EVM chain (see the module documentation for how a payment goes on
/// chain). Built by [`EvmRail::new`]; one instance per chain profile.
pub struct EvmRail {
    config: EvmConfig,
    factory: AccountFactory,
    rpc: Arc<dyn JsonRpc>,
    signer: Arc<dyn Signer>,
    bundler: Arc<dyn Bundler>,
    /// Read-through cache of `durable`.
    journal: Mutex<HashMap<String, Submitted>>,
    durable: Arc<dyn RailJournal>,
    /// Accounts whose deploying operation is sent but maybe not yet mined.
    deploying: Mutex<HashSet<EvmAddress>>,
    /// Building and sending are serialized per rail so that an account's `initCode` goes
    /// with exactly one operation.
    send_lock: tokio::sync::Mutex<()>,
    /// Head and receipts shared by concurrent status polls.
    reads: reads::ReadCache,
}

const SALT: u128 = 0;

fn user_op_event_topic() -> [u8; 32] {
    keccak(b"UserOperationEvent(bytes32,address,address,uint256,bool,uint256,uint256)")
}

fn user_op_revert_topic() -> [u8; 32] {
    keccak(b"UserOperationRevertReason(bytes32,address,uint256,bytes)")
}

fn transfer_topic() -> [u8; 32] {
    keccak(b"Transfer(address,address,uint256)")
}

fn unavailable(what: &str, e: RpcError) -> RailError {
    RailError::Unavailable {
        reason: format!("{what}: {e}"),
    }
}

fn rejected(reason: impl Into<String>) -> RailError {
    RailError::Rejected {
        reason: reason.into(),
    }
}

/// An address given to the rail, in any case (checksummed when mixed).
pub fn parse_address(a: &ChainAddress) -> Result<EvmAddress, RailError> {
    a.0.parse().map_err(
        |e: super::address::AddressError| RailError::InvalidAddress {
            address: a.0.chars().take(64).collect(),
            reason: e.to_string(),
        },
    )
}

impl EvmRail {
    /// A payment of `sender` will never land: if it was the one deploying the account
    /// (and the account has no code), the account's next operation must carry the
    /// `initCode` again. Without this, a dropped or cancelled first bundle would leave
    /// every later payment of the account refused (`AA20 account not deployed`).
    async fn undeployed_unless_on_chain(&self, sender: &EvmAddress) {
        if let Ok(code) = self.eth().code(sender).await
            && code.is_empty()
            && let Ok(mut d) = self.deploying.lock()
        {
            d.remove(sender);
        }
    }

    /// A rail over `rpc` (a node of `config.chain_id`), signing with `signer`'s keys and
    /// sending through `bundler`; its send journal is in memory until
    /// [`with_journal`](Self::with_journal). `Err`: what [`EvmConfig::validate`] finds wrong.
    pub fn new(
        config: EvmConfig,
        rpc: Arc<dyn JsonRpc>,
        signer: Arc<dyn Signer>,
        bundler: Arc<dyn Bundler>,
    ) -> Result<Self, String> {
        config.validate()?;
        Ok(EvmRail {
            factory: AccountFactory {
                address: config.factory,
                proxy_creation_code: config.proxy_creation_code.clone(),
            },
            config,
            rpc,
            signer,
            bundler,
            journal: Mutex::new(HashMap::new()),
            durable: Arc::new(MemoryJournal::new()),
            deploying: Mutex::new(HashSet::new()),
            send_lock: tokio::sync::Mutex::new(()),
            reads: Default::default(),
        })
    }

    /// Keeps the send journal in `journal` (a deployment passes a durable one, such as
    /// `StoreJournal` over its database) instead of in memory.
    pub fn with_journal(mut self, journal: Arc<dyn RailJournal>) -> Self {
        self.durable = journal;
        self
    }

    /// The chain profile the rail runs.
    pub fn config(&self) -> &EvmConfig {
        &self.config
    }

    fn eth(&self) -> Eth<'_> {
        Eth(&*self.rpc)
    }

    /// `eth_call` of `data` on contract `to` at the latest block, over the rail's node:
    /// the return data, or [`RpcError::Node`] with the revert data.
    pub async fn eth_call(&self, to: &EvmAddress, data: &[u8]) -> Result<Vec<u8>, RpcError> {
        self.eth().call(to, data).await
    }

    /// The chain's contract of `t`; `Unsupported` when the profile does not offer it.
    pub fn token(&self, t: Token) -> Result<EvmToken, RailError> {
        match t {
            Token::Usdc => self.config.usdc,
            Token::Usdt => self.config.usdt,
        }
        .ok_or_else(|| RailError::Unsupported {
            what: format!("{t:?} on chain {}", self.config.chain_id),
        })
    }

    /// The EOA address of a key (the owner of its smart account).
    pub async fn owner_of(&self, purpose: &KeyPurpose) -> Result<EvmAddress, RailError> {
        let pk = self
            .signer
            .public_key(purpose, Curve::Secp256k1)
            .await
            .map_err(|e| RailError::Unavailable {
                reason: format!("signer: {e}"),
            })?;
        EvmAddress::from_public_key(&pk.bytes).map_err(|e| RailError::Unavailable {
            reason: format!("signer: {e}"),
        })
    }

    /// Whether block `head` is past a `validUntil` (Unix seconds): no later block can
    /// include the operation. `false` without a deadline.
    async fn expired_at_head(
        &self,
        valid_until: Option<u64>,
        head: u64,
    ) -> Result<bool, RailError> {
        let Some(deadline) = valid_until else {
            return Ok(false);
        };
        let t = self
            .eth()
            .block_timestamp(head)
            .await
            .map_err(|e| unavailable("eth_getBlockByNumber", e))?;
        Ok(t > deadline)
    }

    /// The smart account of a key, offline.
    pub async fn account_of(&self, purpose: &KeyPurpose) -> Result<EvmAddress, RailError> {
        Ok(self
            .factory
            .account_address(&self.owner_of(purpose).await?, SALT))
    }

    /// Sends `calls` as ONE user operation of `from`'s account (its sponsored
    /// `executeBatch`: every call or none), under the idempotency id `id`: the path every
    /// payment takes ([`Rail::submit`] is this with the legs' ERC-20 transfers), open to
    /// any calls (a DEX's approve and swap). Write-ahead journaled, nonce-keyed by `id`
    /// (an id can only ever be one operation: a second call with it returns the first
    /// one's submission and sends nothing), and answered by [`Rail::status`] under `id`.
    /// `call_gas` is the operation's `callGasLimit` (see [`GasPolicy`]); `valid_until`
    /// the deadline the sponsorship carries (the EntryPoint refuses the operation after
    /// it). Errors as [`Rail::submit`]'s: `Rejected` proves nothing was sent.
    pub async fn submit_calls(
        &self,
        id: &str,
        from: &KeyPurpose,
        from_address: &ChainAddress,
        calls: &[Call],
        call_gas: u128,
        valid_until: Option<Timestamp>,
    ) -> Result<Submission, RailError> {
        if let Some(done) = self.journaled(id).await? {
            return Ok(done);
        }
        let _serial = self.send_lock.lock().await;
        let order = batch::Order {
            id,
            from,
            from_address,
            calls,
            call_gas,
            valid_until,
        };
        match self.prepare(&order).await? {
            batch::Prepared::Done(s) => Ok(s),
            batch::Prepared::Ready(r) => self
                .dispatch(vec![*r])
                .await
                .pop()
                .unwrap_or_else(|| Err(rejected("nothing was dispatched"))),
        }
    }
}

#[async_trait]
impl Rail for EvmRail {
    fn id(&self) -> RailId {
        RailId::Evm(self.config.chain_id)
    }

    fn tokens(&self) -> Vec<Token> {
        Token::ALL
            .into_iter()
            .filter(|t| self.token(*t).is_ok())
            .collect()
    }

    fn rpc_endpoints(&self) -> Vec<stablecoin_core::ports::RpcEndpointHealth> {
        self.rpc.endpoints()
    }

    async fn readiness(&self) -> Readiness {
        let eth = self.eth();
        let mut degraded = Vec::new();
        match eth.chain_id().await {
            Ok(id) if id == self.config.chain_id => {}
            Ok(id) => degraded.push(format!(
                "rpc serves chain {id}, not {}",
                self.config.chain_id
            )),
            Err(e) => {
                return Readiness {
                    status: ReadinessStatus::Degraded,
                    reasons: vec![format!("rpc unreachable: {e}")],
                };
            }
        }
        let mut contracts = vec![
            ("entry point", self.config.entry_point),
            ("account factory", self.config.factory),
            ("paymaster", self.config.paymaster),
        ];
        contracts.extend(self.config.usdc.map(|t| ("USDC", t.address)));
        contracts.extend(self.config.usdt.map(|t| ("USDT", t.address)));
        for (name, a) in contracts {
            match eth.code(&a).await {
                Ok(code) if !code.is_empty() => {}
                Ok(_) => degraded.push(format!("no {name} contract at {a}")),
                Err(e) => degraded.push(format!("{name}: {e}")),
            }
        }
        if !degraded.is_empty() {
            return Readiness {
                status: ReadinessStatus::Degraded,
                reasons: degraded,
            };
        }
        // Sponsor health: sends stop being offered before they would start failing.
        let mut sponsor = Vec::new();
        let deposit = eth
            .call_uint(
                &self.config.entry_point,
                &abi::call(
                    "balanceOf(address)",
                    &[Abi::address(&self.config.paymaster.0)],
                ),
            )
            .await;
        match deposit {
            Ok(d) if d >= self.config.min_paymaster_deposit_wei => {}
            Ok(d) => sponsor.push(format!(
                "paymaster deposit {d} wei is below the threshold of {} wei",
                self.config.min_paymaster_deposit_wei
            )),
            Err(e) => sponsor.push(format!("paymaster deposit: {e}")),
        }
        sponsor.extend(self.bundler.problems().await);
        if let Some(bundler) = self.bundler.account().await {
            match eth.balance(&bundler).await {
                Ok(b) if b >= self.config.min_bundler_balance_wei => {}
                Ok(b) => sponsor.push(format!(
                    "bundler {bundler} holds {b} wei, below the threshold of {} wei",
                    self.config.min_bundler_balance_wei
                )),
                Err(e) => sponsor.push(format!("bundler balance: {e}")),
            }
        }
        if sponsor.is_empty() {
            Readiness::ready()
        } else {
            Readiness {
                status: ReadinessStatus::InboundReady,
                reasons: sponsor,
            }
        }
    }

    async fn address_for(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError> {
        Ok(ChainAddress(self.account_of(purpose).await?.to_string()))
    }

    async fn prepare_wallet(&self, _purpose: &KeyPurpose) -> Result<(), RailError> {
        // Counterfactual: the account is deployed by its first operation.
        Ok(())
    }

    async fn balance(&self, address: &ChainAddress, token: Token) -> Result<Micros, RailError> {
        let t = self.token(token)?;
        let who = parse_address(address)?;
        let base = self
            .eth()
            .call_uint(
                &t.address,
                &abi::call("balanceOf(address)", &[Abi::address(&who.0)]),
            )
            .await
            .map_err(|e| unavailable("balanceOf", e))?;
        t.micros(base)
            .ok_or_else(|| rejected(format!("balance of {who} does not fit in micro-units")))
    }

    async fn submit(&self, payment: &RailPayment) -> Result<Submission, RailError> {
        let (calls, call_gas) = self.transfer_calls(payment)?;
        self.submit_calls(
            &payment.id,
            &payment.from,
            &payment.from_address,
            &calls,
            call_gas,
            payment.valid_until,
        )
        .await
    }

    async fn submit_batch(&self, payments: &[RailPayment]) -> Vec<Result<Submission, RailError>> {
        self.submit_payments(payments).await
    }

    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError> {
        // The engine polls every submitted payment: the bundler's chance to replace a
        // bundle the chain leaves unmined (rate-limited inside).
        self.bundler.maintain().await;
        let Some(mut s) = self.lookup(payment_id).await?.filter(|s| !s.rejected) else {
            return Ok(SubmissionStatus::NotFound);
        };
        // An external bundler's answer carries no bundle hash: ask it (never a second
        // send) which bundle carried the operation, or whether it still holds it.
        let mut in_mempool = false;
        if s.tx_hash.is_none() {
            match self.bundler.view(&s.user_op_hash).await {
                BundlerView::Included(tx) => {
                    s.tx_hash = Some(tx);
                    s.sent = true;
                    let _ = self.remember(payment_id, s.clone()).await;
                }
                BundlerView::Pending => in_mempool = true,
                BundlerView::Unknown => {}
            }
        }
        let head = self.head_block().await?;
        if let Some(tx) = s.tx_hash
            && let Some(receipt) = self.bundle_receipt(&tx).await?
        {
            if !receipt.success {
                // The whole `handleOps` reverted: no operation was charged to the
                // paymaster's deposit, and the bundle's fee is the bundler's, shared by
                // every operation it carried: no cost of this payment's to report.
                return Ok(SubmissionStatus::Failed {
                    reason: "the bundle transaction reverted; nothing moved".into(),
                    tx_hash: Some(hex0x(&tx)),
                    cost: None,
                });
            }
            let event = receipt.logs.iter().find(|l| {
                l.address == self.config.entry_point
                    && l.topics.first() == Some(&user_op_event_topic())
                    && l.topics.get(1) == Some(&s.user_op_hash)
            });
            if let Some(event) = event {
                let reason = self.revert_reason_of(event).await?;
                return Ok(self.judge(event, reason, head));
            }
        }
        // No receipt (lost, or another bundler carried the operation): the EntryPoint's
        // log is the truth, read up to the current head (never a reused one: whether the
        // chain is past the operation's deadline is decided on it).
        let head = self
            .eth()
            .block_number()
            .await
            .map_err(|e| unavailable("eth_blockNumber", e))?;
        match self
            .find_event((1, s.user_op_hash), s.from_block, head)
            .await?
        {
            Some((event, reason)) => {
                let status = self.judge(&event, reason, head);
                let _ = self
                    .remember(
                        payment_id,
                        Submitted {
                            tx_hash: Some(event.tx_hash),
                            ..s
                        },
                    )
                    .await;
                Ok(status)
            }
            // Journaled but no bundle was ever sent (a crash between the journal and the
            // send, or the bundler refused before sending) and no bundler holds it: the
            // engine fails it once its deadline has passed.
            None if s.tx_hash.is_none() && !s.sent && !in_mempool => {
                self.undeployed_unless_on_chain(&s.sender).await;
                Ok(SubmissionStatus::NotFound)
            }
            // Sent, not in any block up to the head, and the head is past its
            // `validUntil`: the EntryPoint refuses it in every later block, so it can
            // never land (its bundle was dropped, or reverted for another operation).
            None if self.expired_at_head(s.valid_until, head).await? => {
                self.undeployed_unless_on_chain(&s.sender).await;
                Ok(SubmissionStatus::NotFound)
            }
            None => {
                // Handed to an external bundler, in no block up to the head, still valid,
                // and the bundler no longer knows it: it may have dropped it (a restart, an
                // eviction). The same signed operation goes again (same hash and nonce:
                // executed once at most), rate-limited by the bundler.
                if s.tx_hash.is_none()
                    && !in_mempool
                    && let Some(op) = &s.op
                {
                    self.bundler.resend(op).await;
                }
                Ok(SubmissionStatus::Pending {
                    tx_hash: s.tx_hash.map(|h| hex0x(&h)),
                })
            }
        }
    }

    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError> {
        let start = crate::cursor::block_cursor(cursor, self.config.scan_start_block)?;
        let watched = watched
            .iter()
            .map(parse_address)
            .collect::<Result<BTreeSet<_>, _>>()?;
        let head = self
            .eth()
            .block_number()
            .await
            .map_err(|e| unavailable("eth_blockNumber", e))?;
        if start > head {
            return Ok(ScanBatch {
                inbound: Vec::new(),
                cursor: start.to_string(),
            });
        }
        let mut last = head.min(start.saturating_add(self.config.max_scan_blocks.max(1) - 1));
        let tokens: Vec<(Token, EvmToken)> = [
            (Token::Usdc, self.config.usdc),
            (Token::Usdt, self.config.usdt),
        ]
        .into_iter()
        .filter_map(|(t, c)| c.map(|c| (t, c)))
        .collect();
        let to_topics =
            (!watched.is_empty()).then(|| watched.iter().map(address_topic).collect::<Vec<_>>());
        let mut logs = self
            .eth()
            .logs(
                start,
                last,
                &tokens.iter().map(|(_, c)| c.address).collect::<Vec<_>>(),
                &[Some(vec![transfer_topic()]), None, to_topics],
            )
            .await
            .map_err(|e| unavailable("eth_getLogs", e))?;
        logs.sort_by_key(|l| (l.block, l.log_index));
        // Whole blocks only, so the cursor never splits one.
        if logs.len() > limit.max(1) {
            let cut_block = logs[limit.max(1) - 1].block;
            logs.retain(|l| l.block <= cut_block);
            last = cut_block;
        }
        let mut inbound = Vec::new();
        for l in &logs {
            let Some((token, cfg)) = tokens.iter().find(|(_, c)| c.address == l.address) else {
                continue;
            };
            if l.topics.len() != 3 {
                continue;
            }
            let Some(amount) = abi::word(&l.data, 0)
                .and_then(|w| abi::word_u128(&w))
                .and_then(|b| cfg.micros(b))
            else {
                continue;
            };
            let confirmations = head + 1 - l.block;
            inbound.push(Inbound {
                tx_hash: hex0x(&l.tx_hash),
                index: l.log_index as u32,
                from: ChainAddress(topic_address(&l.topics[1]).to_string()),
                to: ChainAddress(topic_address(&l.topics[2]).to_string()),
                token: *token,
                amount,
                block: l.block,
                confirmations,
                confirmed: confirmations >= self.config.confirmations,
            });
        }
        // The cursor moves past confirmed blocks only: unconfirmed deposits are reported
        // again (as confirmed) by a later scan.
        let confirmed_through = (head + 1).checked_sub(self.config.confirmations);
        let next = match confirmed_through {
            Some(c) if c >= start => last.min(c) + 1,
            _ => start,
        };
        Ok(ScanBatch {
            inbound,
            cursor: next.to_string(),
        })
    }
}
