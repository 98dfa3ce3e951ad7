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

use super::abi::{self, Abi, keccak};
use super::address::EvmAddress;
use super::bundler::{BundleError, Bundler};
use super::rpc::{Eth, JsonRpc, Log, RpcError, address_topic, hex0x, topic_address};
use super::userop::{
    AccountFactory, Call, Nonce, Sponsorship, UserOp, erc20_transfer_call, execute_batch_call,
};
use async_trait::async_trait;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    ChainAddress, Curve, Inbound, KeyPurpose, MemoryJournal, Rail, RailError, RailId, RailJournal,
    RailPayment, Readiness, ReadinessStatus, ScanBatch, Signer, Submission, SubmissionStatus,
};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// ERC1967Proxy's creation code as SimpleAccountFactory v0.8 embeds it (cut out of the
/// factory's runtime code by `scripts/evm/build_artifacts.sh`).
pub const ERC1967_PROXY_V08: &str = include_str!("erc1967_proxy_v08.hex");

/// One stablecoin contract on the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvmToken {
    pub address: EvmAddress,
    /// 6 for USDC/USDT on Polygon and Base, 18 for BNB Smart Chain's Binance-Peg tokens.
    pub decimals: u8,
}

impl EvmToken {
    fn scale(&self) -> u128 {
        10u128.pow(u32::from(self.decimals.saturating_sub(6)))
    }

    /// Micro-units to the token's base units (exact).
    pub fn base_units(&self, m: Micros) -> u128 {
        u128::from(m.0) * self.scale()
    }

    /// Base units to micro-units, rounding down (dust below a micro-unit is not spendable
    /// through the service and is never shown).
    pub fn micros(&self, base: u128) -> Option<Micros> {
        u64::try_from(base / self.scale()).ok().map(Micros)
    }
}

/// Gas limits of the operations the rail builds. Fixed rather than estimated: the batch
/// shapes are known and bounded, and unused gas is refunded to the paymaster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GasPolicy {
    pub verification_gas: u128,
    /// Verification when the operation also deploys the account.
    pub deploy_verification_gas: u128,
    pub call_gas_base: u128,
    pub call_gas_per_transfer: u128,
    pub pre_verification_gas: u128,
    pub paymaster_verification_gas: u128,
}

impl Default for GasPolicy {
    fn default() -> Self {
        GasPolicy {
            verification_gas: 120_000,
            deploy_verification_gas: 500_000,
            call_gas_base: 40_000,
            call_gas_per_transfer: 70_000,
            pre_verification_gas: 60_000,
            paymaster_verification_gas: 80_000,
        }
    }
}

/// A chain profile. A chain is enabled only with every field set (the constructor
/// refuses anything missing) and its readiness check passing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvmConfig {
    pub chain_id: u64,
    pub entry_point: EvmAddress,
    pub factory: EvmAddress,
    /// The factory's embedded proxy creation code (default: v0.8's).
    pub proxy_creation_code: Vec<u8>,
    pub paymaster: EvmAddress,
    pub usdc: Option<EvmToken>,
    pub usdt: Option<EvmToken>,
    /// Below this paymaster deposit in the EntryPoint (wei), sends stop being offered.
    pub min_paymaster_deposit_wei: u128,
    /// Below this native balance of the bundler account (wei), likewise.
    pub min_bundler_balance_wei: u128,
    /// Blocks (the transaction's own included) before a payment or deposit is confirmed.
    pub confirmations: u64,
    /// First block an empty scan cursor starts from.
    pub scan_start_block: u64,
    /// Blocks read per `scan` call at most.
    pub max_scan_blocks: u64,
    pub gas: GasPolicy,
}

impl EvmConfig {
    /// A profile with the chain's defaults (confirmations: 128 on Polygon PoS, 12 on Base
    /// and BNB Smart Chain) and the v0.8 proxy code; contract addresses must be set.
    pub fn new(
        chain_id: u64,
        entry_point: EvmAddress,
        factory: EvmAddress,
        paymaster: EvmAddress,
    ) -> Self {
        EvmConfig {
            chain_id,
            entry_point,
            factory,
            proxy_creation_code: hex::decode(ERC1967_PROXY_V08.trim().trim_start_matches("0x"))
                .unwrap_or_default(),
            paymaster,
            usdc: None,
            usdt: None,
            min_paymaster_deposit_wei: 10u128.pow(17),
            min_bundler_balance_wei: 10u128.pow(17),
            confirmations: if chain_id == 137 { 128 } else { 12 },
            scan_start_block: 0,
            max_scan_blocks: 2_000,
            gas: GasPolicy::default(),
        }
    }

    /// What is missing or inconsistent, if anything.
    pub fn validate(&self) -> Result<(), String> {
        if self.usdc.is_none() && self.usdt.is_none() {
            return Err("no token contract configured (usdc, usdt)".into());
        }
        for t in self.usdc.iter().chain(self.usdt.iter()) {
            if !(6..=30).contains(&t.decimals) {
                return Err(format!(
                    "token {} has {} decimals: 6 to 30 are supported",
                    t.address, t.decimals
                ));
            }
        }
        if self.proxy_creation_code.is_empty() {
            return Err("proxy_creation_code is empty".into());
        }
        for (name, a) in [
            ("entry_point", self.entry_point),
            ("factory", self.factory),
            ("paymaster", self.paymaster),
        ] {
            if a == EvmAddress::ZERO {
                return Err(format!("{name} is not configured"));
            }
        }
        if self.confirmations == 0 {
            return Err("confirmations must be at least 1".into());
        }
        Ok(())
    }
}

/// What the rail remembers of a submitted payment: written to the [`RailJournal`] before
/// the bundle is sent (without `tx_hash`) and again once it is, so a restarted rail
/// reconciles an in-flight operation from its `UserOperationEvent`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    pub sender: EvmAddress,
    pub user_op_hash: [u8; 32],
    /// The bundle transaction, when known.
    pub tx_hash: Option<[u8; 32]>,
    /// Where to start looking for its `UserOperationEvent`.
    pub from_block: u64,
    /// The bundler refused it before sending: nothing is on its way.
    pub rejected: bool,
}

impl Submitted {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "sender": self.sender.to_string(),
            "user_op_hash": hex0x(&self.user_op_hash),
            "tx_hash": self.tx_hash.map(|h| hex0x(&h)),
            "from_block": self.from_block,
            "rejected": self.rejected,
        })
    }

    fn from_json(v: &serde_json::Value) -> Option<Submitted> {
        let h32 = |s: &str| -> Option<[u8; 32]> {
            hex::decode(s.trim_start_matches("0x"))
                .ok()?
                .try_into()
                .ok()
        };
        Some(Submitted {
            sender: v.get("sender")?.as_str()?.parse().ok()?,
            user_op_hash: h32(v.get("user_op_hash")?.as_str()?)?,
            tx_hash: match v.get("tx_hash")? {
                serde_json::Value::Null => None,
                t => Some(h32(t.as_str()?)?),
            },
            from_block: v.get("from_block")?.as_u64()?,
            rejected: v.get("rejected")?.as_bool()?,
        })
    }
}

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

/// A secp256k1 signature as Solidity's `ECDSA.recover` takes it (v = 27/28).
async fn sign_for_evm(
    signer: &dyn Signer,
    purpose: &KeyPurpose,
    digest: &[u8; 32],
) -> Result<Vec<u8>, RailError> {
    let mut sig = signer
        .sign(purpose, Curve::Secp256k1, digest)
        .await
        .map_err(|e| RailError::Unavailable {
            reason: format!("signer: {e}"),
        })?
        .0;
    if sig.len() != 65 {
        return Err(RailError::Unavailable {
            reason: "signer returned a malformed secp256k1 signature".into(),
        });
    }
    if sig[64] < 27 {
        sig[64] += 27;
    }
    Ok(sig)
}

impl EvmRail {
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
        })
    }

    /// Keeps the send journal in `journal` (a deployment passes a durable one, such as
    /// `StoreJournal` over its database) instead of in memory.
    pub fn with_journal(mut self, journal: Arc<dyn RailJournal>) -> Self {
        self.durable = journal;
        self
    }

    pub fn config(&self) -> &EvmConfig {
        &self.config
    }

    fn eth(&self) -> Eth<'_> {
        Eth(&*self.rpc)
    }

    fn token(&self, t: Token) -> Result<EvmToken, RailError> {
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

    /// The smart account of a key, offline.
    pub async fn account_of(&self, purpose: &KeyPurpose) -> Result<EvmAddress, RailError> {
        Ok(self
            .factory
            .account_address(&self.owner_of(purpose).await?, SALT))
    }

    /// What this process remembers of a payment (user-operation hash beside the
    /// `tx_hash`); [`EvmRail::lookup`] also reads the journal.
    pub fn submitted(&self, payment_id: &str) -> Option<Submitted> {
        self.journal.lock().ok()?.get(payment_id).cloned()
    }

    /// What the rail knows of a payment, from memory or else from the journal.
    pub async fn lookup(&self, payment_id: &str) -> Result<Option<Submitted>, RailError> {
        if let Some(s) = self.submitted(payment_id) {
            return Ok(Some(s));
        }
        let Some(s) = crate::journal::load_entry(
            &*self.durable,
            &self.id().name(),
            payment_id,
            Submitted::from_json,
        )
        .await?
        else {
            return Ok(None);
        };
        if let Ok(mut j) = self.journal.lock() {
            j.insert(payment_id.to_string(), s.clone());
        }
        Ok(Some(s))
    }

    /// Records `s` durably, then in memory.
    async fn remember(&self, payment_id: &str, s: Submitted) -> Result<(), RailError> {
        self.durable
            .save(&self.id().name(), payment_id, &s.to_json())
            .await?;
        if let Ok(mut j) = self.journal.lock() {
            j.insert(payment_id.to_string(), s);
        }
        Ok(())
    }

    /// The `UserOperationEvent` of an operation since `from_block`, and the revert reason
    /// logged beside it when it failed.
    async fn find_event(
        &self,
        topic: (usize, [u8; 32]),
        from_block: u64,
        head: u64,
    ) -> Result<Option<(Log, Option<String>)>, RailError> {
        let mut topics = vec![Some(vec![user_op_event_topic()]), None, None];
        topics[topic.0] = Some(vec![topic.1]);
        let logs = self
            .eth()
            .logs(from_block, head, &[self.config.entry_point], &topics)
            .await
            .map_err(|e| unavailable("eth_getLogs", e))?;
        let Some(event) = logs.into_iter().next() else {
            return Ok(None);
        };
        let reason = self.revert_reason_of(&event).await?;
        Ok(Some((event, reason)))
    }

    async fn revert_reason_of(&self, event: &Log) -> Result<Option<String>, RailError> {
        let success = abi::word(&event.data, 1).is_some_and(|w| w[31] == 1);
        if success {
            return Ok(None);
        }
        let logs = self
            .eth()
            .logs(
                event.block,
                event.block,
                &[self.config.entry_point],
                &[
                    Some(vec![user_op_revert_topic()]),
                    Some(vec![event.topics[1]]),
                ],
            )
            .await
            .map_err(|e| unavailable("eth_getLogs", e))?;
        Ok(Some(
            match logs.first().and_then(|l| abi::dynamic_bytes(&l.data, 1)) {
                Some(data) => call_revert_reason(&data),
                None => "the operation's calls reverted".into(),
            },
        ))
    }

    fn judge(&self, event: &Log, reason: Option<String>, head: u64) -> SubmissionStatus {
        let tx_hash = hex0x(&event.tx_hash);
        if let Some(reason) = reason {
            return SubmissionStatus::Failed {
                reason,
                tx_hash: Some(tx_hash),
            };
        }
        if head + 1 - event.block.min(head) >= self.config.confirmations {
            SubmissionStatus::Confirmed {
                tx_hash,
                block: event.block,
                created_recipient_account: false,
            }
        } else {
            SubmissionStatus::Pending {
                tx_hash: Some(tx_hash),
            }
        }
    }

    async fn build(
        &self,
        payment: &RailPayment,
        sender: EvmAddress,
        owner: EvmAddress,
    ) -> Result<UserOp, RailError> {
        let token = self.token(payment.token)?;
        let mut calls = Vec::new();
        for leg in payment.legs.iter().filter(|l| !l.amount.is_zero()) {
            let to = parse_address(&leg.to)?;
            calls.push(Call {
                target: token.address,
                data: erc20_transfer_call(&to, token.base_units(leg.amount)),
            });
        }
        if calls.is_empty() {
            return Err(rejected("a payment needs at least one leg with an amount"));
        }
        let deployed = self
            .deploying
            .lock()
            .map(|d| d.contains(&sender))
            .unwrap_or(false)
            || !self
                .eth()
                .code(&sender)
                .await
                .map_err(|e| unavailable("eth_getCode", e))?
                .is_empty();
        let g = self.config.gas;
        let priority = self
            .eth()
            .max_priority_fee()
            .await
            .map_err(|e| unavailable("eth_maxPriorityFeePerGas", e))?;
        let price = self
            .eth()
            .gas_price()
            .await
            .map_err(|e| unavailable("eth_gasPrice", e))?;
        let n = calls.len() as u128;
        Ok(UserOp {
            sender,
            nonce: Nonce {
                key: Nonce::key_for(&payment.id),
                seq: 0,
            },
            init_code: if deployed {
                Vec::new()
            } else {
                self.factory.init_code(&owner, SALT)
            },
            call_data: execute_batch_call(&calls),
            verification_gas_limit: if deployed {
                g.verification_gas
            } else {
                g.deploy_verification_gas
            },
            call_gas_limit: g.call_gas_base + n * g.call_gas_per_transfer,
            pre_verification_gas: g.pre_verification_gas,
            max_priority_fee_per_gas: priority,
            max_fee_per_gas: price.saturating_mul(2).saturating_add(priority),
            paymaster_and_data: Vec::new(),
            signature: Vec::new(),
        })
    }

    /// Sponsors (paymaster signature) and signs (owner) an operation.
    async fn sponsor_and_sign(
        &self,
        op: &mut UserOp,
        purpose: &KeyPurpose,
    ) -> Result<[u8; 32], RailError> {
        let sponsorship = Sponsorship {
            paymaster: self.config.paymaster,
            verification_gas_limit: self.config.gas.paymaster_verification_gas,
            post_op_gas_limit: 0,
            valid_until: 0,
            valid_after: 0,
        };
        let digest = op.paymaster_digest(&sponsorship, self.config.chain_id);
        let pm_sig = sign_for_evm(&*self.signer, &KeyPurpose::Sponsor, &digest).await?;
        op.paymaster_and_data = sponsorship.encode(&pm_sig);
        let hash = op.hash(&self.config.entry_point, self.config.chain_id);
        op.signature = sign_for_evm(&*self.signer, purpose, &hash).await?;
        Ok(hash)
    }
}

/// The reason of a reverted `executeBatch`: `ExecuteError(uint256 index, bytes error)`
/// wraps the failing call's own revert.
pub fn call_revert_reason(data: &[u8]) -> String {
    if data.len() > 4 && data[..4] == abi::selector("ExecuteError(uint256,bytes)") {
        let body = &data[4..];
        let index = abi::word(body, 0)
            .and_then(|w| abi::word_u128(&w))
            .unwrap_or(0);
        let inner = abi::dynamic_bytes(body, 1).unwrap_or_default();
        return format!(
            "call {index} of the batch reverted: {}",
            abi::revert_reason(&inner)
        );
    }
    abi::revert_reason(data)
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
        if let Some(s) = self.lookup(&payment.id).await?.filter(|s| !s.rejected) {
            return Ok(Submission {
                payment_id: payment.id.clone(),
                tx_hash: s.tx_hash.map(|h| hex0x(&h)),
            });
        }
        let _serial = self.send_lock.lock().await;
        if let Some(s) = self.lookup(&payment.id).await?.filter(|s| !s.rejected) {
            return Ok(Submission {
                payment_id: payment.id.clone(),
                tx_hash: s.tx_hash.map(|h| hex0x(&h)),
            });
        }
        let owner = self.owner_of(&payment.from).await?;
        let sender = self.factory.account_address(&owner, SALT);
        if parse_address(&payment.from_address)? != sender {
            return Err(rejected(format!(
                "from_address {} is not the account of {} ({sender})",
                payment.from_address, payment.from
            )));
        }
        // The payment's nonce key already used: it went out in an earlier life of this
        // process. Find it rather than send anything.
        let key = Nonce::key_for(&payment.id);
        let mut key_word = [0u8; 32];
        key_word[8..].copy_from_slice(&key);
        let nonce_word = self
            .eth()
            .call(
                &self.config.entry_point,
                &abi::call(
                    "getNonce(address,uint192)",
                    &[Abi::address(&sender.0), Abi::Word(key_word)],
                ),
            )
            .await
            .map_err(|e| unavailable("getNonce", e))?;
        // getNonce answers key << 64 | sequence.
        let seq = abi::word(&nonce_word, 0)
            .map(|w| u64::from_be_bytes(w[24..].try_into().unwrap_or([0; 8])))
            .ok_or_else(|| {
                unavailable(
                    "getNonce",
                    RpcError::Decode {
                        method: "eth_call".into(),
                        detail: "getNonce answered no word".into(),
                    },
                )
            })?;
        if seq > 0 {
            let nonce = Nonce { key, seq: 0 }.word();
            let found = self
                .find_event_by_nonce(&sender, &nonce)
                .await?
                .ok_or_else(|| RailError::Unknown {
                    reason:
                        "the payment's nonce key is used but its UserOperationEvent was not found"
                            .into(),
                })?;
            self.remember(
                &payment.id,
                Submitted {
                    sender,
                    user_op_hash: found.topics[1],
                    tx_hash: Some(found.tx_hash),
                    from_block: found.block,
                    rejected: false,
                },
            )
            .await?;
            return Ok(Submission {
                payment_id: payment.id.clone(),
                tx_hash: Some(hex0x(&found.tx_hash)),
            });
        }
        let mut op = self.build(payment, sender, owner).await?;
        let user_op_hash = self.sponsor_and_sign(&mut op, &payment.from).await?;
        let from_block = self
            .eth()
            .block_number()
            .await
            .map_err(|e| unavailable("eth_blockNumber", e))?;
        let deploys = !op.init_code.is_empty();
        let mut record = Submitted {
            sender,
            user_op_hash,
            tx_hash: None,
            from_block,
            rejected: false,
        };
        // Write-ahead: if the journal cannot take it, nothing is sent.
        self.remember(&payment.id, record.clone()).await?;
        match self.bundler.send(std::slice::from_ref(&op)).await {
            Ok(tx) => {
                record.tx_hash = Some(tx);
                // Best effort: the entry already written finds the operation by its
                // hash even without the bundle's.
                let _ = self.remember(&payment.id, record).await;
                if deploys && let Ok(mut d) = self.deploying.lock() {
                    d.insert(sender);
                }
                Ok(Submission {
                    payment_id: payment.id.clone(),
                    tx_hash: Some(hex0x(&tx)),
                })
            }
            Err(BundleError::Rejected(reason)) => {
                // Definitely not sent: a later submit of this id may build it again.
                record.rejected = true;
                let _ = self.remember(&payment.id, record).await;
                Err(rejected(reason))
            }
            Err(BundleError::Unknown { tx_hash, reason }) => {
                record.tx_hash = tx_hash;
                let _ = self.remember(&payment.id, record).await;
                if deploys && let Ok(mut d) = self.deploying.lock() {
                    d.insert(sender);
                }
                Err(RailError::Unknown { reason })
            }
        }
    }

    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError> {
        let Some(s) = self.lookup(payment_id).await?.filter(|s| !s.rejected) else {
            return Ok(SubmissionStatus::NotFound);
        };
        let head = self
            .eth()
            .block_number()
            .await
            .map_err(|e| unavailable("eth_blockNumber", e))?;
        if let Some(tx) = s.tx_hash
            && let Some(receipt) = self
                .eth()
                .receipt(&tx)
                .await
                .map_err(|e| unavailable("eth_getTransactionReceipt", e))?
        {
            if !receipt.success {
                return Ok(SubmissionStatus::Failed {
                    reason: "the bundle transaction reverted; nothing moved".into(),
                    tx_hash: Some(hex0x(&tx)),
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
        // log is the truth.
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
            // send, or the bundler refused before sending): the engine fails it after its
            // grace period.
            None if s.tx_hash.is_none() => Ok(SubmissionStatus::NotFound),
            None => Ok(SubmissionStatus::Pending {
                tx_hash: s.tx_hash.map(|h| hex0x(&h)),
            }),
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

impl EvmRail {
    async fn find_event_by_nonce(
        &self,
        sender: &EvmAddress,
        nonce: &[u8; 32],
    ) -> Result<Option<Log>, RailError> {
        let head = self
            .eth()
            .block_number()
            .await
            .map_err(|e| unavailable("eth_blockNumber", e))?;
        let logs = self
            .eth()
            .logs(
                self.config.scan_start_block,
                head,
                &[self.config.entry_point],
                &[
                    Some(vec![user_op_event_topic()]),
                    None,
                    Some(vec![address_topic(sender)]),
                ],
            )
            .await
            .map_err(|e| unavailable("eth_getLogs", e))?;
        Ok(logs
            .into_iter()
            .find(|l| abi::word(&l.data, 0).as_ref() == Some(nonce)))
    }
}
