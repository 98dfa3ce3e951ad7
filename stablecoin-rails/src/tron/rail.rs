//! [`TronRail`]: the native TRON USDT rail (spec 1.4, 8.4).
//!
//! - Addresses: the [`Signer`]'s secp256k1 key of the purpose, Keccak-256, `0x41`,
//!   Base58Check. Offline; the same purpose always gives the same `T...`.
//! - Receiving and balance reads need nothing on chain: a TRC-20 balance is contract
//!   storage, so a customer with zero TRX (even an account that does not exist yet) can
//!   receive USDT and read it.
//! - Sends are sponsored. For each payment the sponsor account ([`KeyPurpose::Sponsor`]):
//!   1. activates the customer's account if it does not exist, with an
//!      `AccountCreateContract` (the sponsor pays the creation fee; the customer keeps
//!      zero TRX);
//!   2. delegates Energy and Bandwidth (Stake 2.0 `DelegateResourceContract`, no lock)
//!      sized from [`TronConfig::energy_per_transfer`] / [`TronConfig::bandwidth_per_transfer`];
//!
//!   each sponsor transaction is waited for until it is in a block, so the customer's
//!   transfer can never reach a block producer before its resources. Then the customer's
//!   key signs the TRC-20 `transfer` (fee limit [`TronConfig::fee_limit_sun`]) and it is
//!   broadcast. Once the transfer is in a block (success or failure) `status` reclaims the
//!   delegations (`UnDelegateResourceContract`). No TRX is charged to the customer and
//!   no fee leg is accepted (spec 8.4: no TRON business fee).
//! - Readiness: `DEGRADED` when the node or the read checks (sponsor account read, USDT
//!   `balanceOf`) fail; `INBOUND_READY` when reads pass but the sponsor lacks the TRX or
//!   the delegatable stake for one sponsored send (then `submit` answers `Unavailable`:
//!   the server's 503); `READY` when sponsored sends may be called. Readiness never
//!   certifies the deposit scanner.
//! - `status(payment_id)` reads the transaction by its txID. The payment id -> txID
//!   record (with the expiry and the delegations still to reclaim) is written to the
//!   [`RailJournal`] before the broadcast (the txID depends on the reference block, so it
//!   cannot be derived from the payment id): with a durable journal
//!   ([`TronRail::with_journal`]) a restarted rail reconciles by txID. Hosts without one
//!   can re-seed a record with [`TronRail::restore_submission`].
//! - `scan` reads blocks with `/wallet/gettransactioninfobyblocknum` and returns the
//!   USDT `Transfer` events of successful transactions; the cursor is the next block
//!   number and only passes blocks at the confirmation depth (19 by default).

use super::address::TronAddress;
use super::client::{AccountInfo, AccountResources, ApiError, BroadcastOutcome, TronApi, TxInfo};
use super::tx::{self, Resource, SignedTx, TxHeader, UnsignedTx};
use async_trait::async_trait;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    ChainAddress, Curve, Inbound, KeyPurpose, LegRole, MemoryJournal, Rail, RailError, RailId,
    RailJournal, RailPayment, Readiness, ReadinessStatus, ScanBatch, Signer, SignerError,
    Submission, SubmissionStatus,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The mainnet USDT (TRC-20) contract.
pub const MAINNET_USDT: &str = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";

/// Settings of a [`TronRail`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TronConfig {
    /// The USDT TRC-20 contract (6 decimals: one base unit is one micro-unit).
    pub usdt_contract: TronAddress,
    /// A USDC TRC-20 contract, if the deployment reads and moves it. TRON wallets are USDT
    /// (spec 1.1); with it, USDC sent to a watched address by mistake is detected by the
    /// scanner and can be sent back (escrow's UNSUPPORTED_TOKEN recovery). `None`: USDC
    /// is `Unsupported` and invisible to the scanner.
    pub usdc_contract: Option<TronAddress>,
    /// Blocks (including the transaction's own) before a payment or deposit counts as
    /// confirmed. TRON finalizes after 19 (2/3 of the 27 super representatives + 1).
    pub confirmations: u64,
    /// `fee_limit` of the customer's TRC-20 transfer, in sun.
    pub fee_limit_sun: i64,
    /// Energy delegated for one transfer; 0 delegates none (the transfer then relies on
    /// the sender's own Energy, which a sponsored customer does not have).
    pub energy_per_transfer: u64,
    /// Bandwidth (bytes) delegated for one transfer; 0 delegates none.
    pub bandwidth_per_transfer: u64,
    /// TRX (sun) the sponsor must hold to activate a new account (creation fee and the
    /// burn for its bandwidth).
    pub activation_reserve_sun: u64,
    /// Validity of a built transaction after the head block's timestamp.
    pub expiration_ms: i64,
    /// How long `submit` waits for a sponsor transaction to be in a block.
    pub inclusion_timeout: Duration,
    /// Poll interval while waiting.
    pub poll_interval: Duration,
    /// First block an empty scan cursor starts from.
    pub scan_start_block: u64,
    /// Blocks read per `scan` call at most.
    pub max_scan_blocks: u64,
}

impl TronConfig {
    /// The TRC-20 contract of `token`, if this rail moves it.
    pub fn contract_of(&self, token: Token) -> Option<TronAddress> {
        match token {
            Token::Usdt => Some(self.usdt_contract),
            Token::Usdc => self.usdc_contract,
        }
    }

    /// Defaults for a USDT contract: 19 confirmations, 100 TRX fee limit, 65 000 Energy
    /// and 500 bytes of Bandwidth per transfer, 2 TRX activation reserve, 60 s expiry.
    pub fn new(usdt_contract: TronAddress) -> Self {
        TronConfig {
            usdt_contract,
            usdc_contract: None,
            confirmations: 19,
            fee_limit_sun: tx::DEFAULT_FEE_LIMIT_SUN,
            energy_per_transfer: 65_000,
            bandwidth_per_transfer: 500,
            activation_reserve_sun: 2_000_000,
            expiration_ms: tx::DEFAULT_EXPIRATION_MS,
            inclusion_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            scan_start_block: 0,
            max_scan_blocks: 100,
        }
    }

    /// [`TronConfig::new`] with the mainnet USDT contract.
    pub fn mainnet() -> Self {
        Self::new(TronAddress::parse(MAINNET_USDT).unwrap_or_else(|_| unreachable!()))
    }
}

#[derive(Clone, Debug)]
struct PaymentRecord {
    txid: [u8; 32],
    expiration_ms: i64,
    customer: TronAddress,
    /// Delegations still to reclaim once the transfer is in a block.
    delegations: Vec<(Resource, u64)>,
}

impl PaymentRecord {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "txid": hex::encode(self.txid),
            "expiration_ms": self.expiration_ms,
            "customer": self.customer.to_base58(),
            "delegations": self
                .delegations
                .iter()
                .map(|(r, sun)| serde_json::json!({"resource": r.name(), "sun": sun}))
                .collect::<Vec<_>>(),
        })
    }

    fn from_json(v: &serde_json::Value) -> Option<PaymentRecord> {
        let txid = hex::decode(v.get("txid")?.as_str()?)
            .ok()?
            .try_into()
            .ok()?;
        let delegations = v
            .get("delegations")?
            .as_array()?
            .iter()
            .map(|d| {
                let resource = match d.get("resource")?.as_str()? {
                    "ENERGY" => Resource::Energy,
                    "BANDWIDTH" => Resource::Bandwidth,
                    _ => return None,
                };
                Some((resource, d.get("sun")?.as_u64()?))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(PaymentRecord {
            txid,
            expiration_ms: v.get("expiration_ms")?.as_i64()?,
            customer: TronAddress::parse(v.get("customer")?.as_str()?).ok()?,
            delegations,
        })
    }
}

/// The TRON rail. See the module documentation.
pub struct TronRail {
    api: Arc<dyn TronApi>,
    signer: Arc<dyn Signer>,
    config: TronConfig,
    sponsor: TronAddress,
    /// Read-through cache of `journal`.
    payments: Mutex<HashMap<String, PaymentRecord>>,
    journal: Arc<dyn RailJournal>,
    /// One submit at a time: the sponsor's transactions are sequential.
    submit_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for TronRail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TronRail")
            .field("config", &self.config)
            .field("sponsor", &self.sponsor)
            .finish_non_exhaustive()
    }
}

fn unavailable(reason: impl Into<String>) -> RailError {
    RailError::Unavailable {
        reason: reason.into(),
    }
}

fn rejected(reason: impl Into<String>) -> RailError {
    RailError::Rejected {
        reason: reason.into(),
    }
}

fn read_error(what: &str, e: ApiError) -> RailError {
    unavailable(format!("{what}: {e}"))
}

fn signer_error(e: SignerError) -> RailError {
    match e {
        SignerError::Unavailable(r) => unavailable(format!("signer: {r}")),
        other => rejected(format!("signer: {other}")),
    }
}

fn unsupported_token(token: Token) -> RailError {
    RailError::Unsupported {
        what: format!(
            "{token} on TRON (this rail moves USDT TRC-20 and no {token} contract is configured)"
        ),
    }
}

fn tx_error(e: tx::TxError) -> RailError {
    match e {
        tx::TxError::Signer(s) => signer_error(s),
        other => rejected(format!("{}: {other}", other.code())),
    }
}

/// Parses a `T...` (or `41...` hex) address into the rail's typed error.
pub fn parse_address(address: &ChainAddress) -> Result<TronAddress, RailError> {
    TronAddress::parse(&address.0).map_err(|e| RailError::InvalidAddress {
        address: address.0.chars().take(64).collect(),
        reason: format!("{}: {e}", e.code()),
    })
}

impl TronRail {
    /// Builds the rail; derives the sponsor address from the signer.
    pub async fn new(
        api: Arc<dyn TronApi>,
        signer: Arc<dyn Signer>,
        config: TronConfig,
    ) -> Result<Self, RailError> {
        let sponsor = derive(signer.as_ref(), &KeyPurpose::Sponsor).await?;
        Ok(TronRail {
            api,
            signer,
            config,
            sponsor,
            payments: Mutex::new(HashMap::new()),
            journal: Arc::new(MemoryJournal::new()),
            submit_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// Keeps the payment records in `journal` (a deployment passes a durable one, such
    /// as `StoreJournal` over its database) instead of in memory.
    pub fn with_journal(mut self, journal: Arc<dyn RailJournal>) -> Self {
        self.journal = journal;
        self
    }

    pub fn config(&self) -> &TronConfig {
        &self.config
    }

    /// The record of a payment, from memory or else from the journal.
    async fn record(&self, payment_id: &str) -> Result<Option<PaymentRecord>, RailError> {
        if let Some(r) = self.lock().get(payment_id).cloned() {
            return Ok(Some(r));
        }
        let Some(r) = crate::journal::load_entry(
            &*self.journal,
            "tron",
            payment_id,
            PaymentRecord::from_json,
        )
        .await?
        else {
            return Ok(None);
        };
        self.lock()
            .entry(payment_id.to_string())
            .or_insert_with(|| r.clone());
        Ok(Some(r))
    }

    /// Writes the record of `payment_id` (`None`: nothing in flight) to the journal.
    async fn persist(
        &self,
        payment_id: &str,
        record: Option<&PaymentRecord>,
    ) -> Result<(), RailError> {
        let entry = record.map_or(serde_json::Value::Null, PaymentRecord::to_json);
        self.journal.save("tron", payment_id, &entry).await
    }

    /// The sponsor account that activates accounts and lends Energy/Bandwidth.
    pub fn sponsor_address(&self) -> TronAddress {
        self.sponsor
    }

    /// Re-seeds the payment id -> txID map after a restart from the `tx_hash` the engine
    /// persisted. Without `expiration_ms` a never-included transaction stays `Pending`
    /// (it cannot be declared dead without knowing its expiry).
    pub fn restore_submission(
        &self,
        payment_id: &str,
        tx_hash: &str,
        customer: &ChainAddress,
        expiration_ms: Option<i64>,
    ) -> Result<(), RailError> {
        let txid = hex::decode(tx_hash)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
            .ok_or_else(|| rejected(format!("invalid TRON txID {tx_hash:?}")))?;
        let customer = parse_address(customer)?;
        self.lock()
            .entry(payment_id.to_string())
            .or_insert(PaymentRecord {
                txid,
                expiration_ms: expiration_ms.unwrap_or(i64::MAX),
                customer,
                delegations: vec![],
            });
        Ok(())
    }

    /// The txID recorded for a payment id, if any.
    pub fn tx_hash_of(&self, payment_id: &str) -> Option<String> {
        self.lock().get(payment_id).map(|r| hex::encode(r.txid))
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, PaymentRecord>> {
        // Records stay consistent between statements: a poisoned lock is safe to reuse.
        self.payments.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn header(&self) -> Result<TxHeader, RailError> {
        let head = self
            .api
            .now_block()
            .await
            .map_err(|e| read_error("getnowblock", e))?;
        Ok(TxHeader::from_block_id(
            &head.id,
            head.timestamp_ms,
            self.config.expiration_ms,
        ))
    }

    /// Stake (sun) to delegate per resource for one transfer.
    fn delegation_plan(&self, res: &AccountResources) -> Result<Vec<(Resource, u64)>, String> {
        let mut plan = Vec::new();
        if self.config.energy_per_transfer > 0 {
            let sun = res
                .sun_for_energy(self.config.energy_per_transfer)
                .ok_or("the node reports no total Energy weight")?;
            plan.push((Resource::Energy, sun));
        }
        if self.config.bandwidth_per_transfer > 0 {
            let sun = res
                .sun_for_bandwidth(self.config.bandwidth_per_transfer)
                .ok_or("the node reports no total Bandwidth weight")?;
            plan.push((Resource::Bandwidth, sun));
        }
        Ok(plan)
    }

    /// Why the sponsor cannot pay for one sponsored send (empty: it can).
    fn sponsor_shortfalls(
        &self,
        account: Option<&AccountInfo>,
        res: &AccountResources,
    ) -> Vec<String> {
        let Some(account) = account else {
            return vec![format!(
                "sponsor account {} does not exist on chain: sends disabled",
                self.sponsor
            )];
        };
        let mut out = Vec::new();
        if account.balance_sun < self.config.activation_reserve_sun {
            out.push(format!(
                "sponsor holds {} sun of TRX, below the activation reserve of {} sun: sends disabled",
                account.balance_sun, self.config.activation_reserve_sun
            ));
        }
        match self.delegation_plan(res) {
            Err(e) => out.push(format!("{e}: sends disabled")),
            Ok(plan) => {
                for (resource, sun) in plan {
                    let available = match resource {
                        Resource::Energy => account.delegatable_energy_sun(),
                        Resource::Bandwidth => account.delegatable_bandwidth_sun(),
                    };
                    if available < sun {
                        out.push(format!(
                            "sponsor has {available} sun of delegatable {} stake, {sun} needed per transfer: sends disabled",
                            resource.name()
                        ));
                    }
                }
            }
        }
        out
    }

    async fn sponsor_state(&self) -> Result<(Option<AccountInfo>, AccountResources), RailError> {
        let account = self
            .api
            .account(&self.sponsor)
            .await
            .map_err(|e| read_error("getaccount(sponsor)", e))?;
        let res = self
            .api
            .account_resources(&self.sponsor)
            .await
            .map_err(|e| read_error("getaccountresource(sponsor)", e))?;
        Ok((account, res))
    }

    /// Polls until the transaction is in a block.
    async fn wait_included(&self, txid: &[u8; 32]) -> Result<TxInfo, String> {
        let deadline = tokio::time::Instant::now() + self.config.inclusion_timeout;
        loop {
            match self.api.transaction_info(txid).await {
                Ok(Some(info)) => return Ok(info),
                Ok(None) => {}
                Err(e) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(format!("gettransactioninfobyid: {e}"));
                    }
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "transaction {} not in a block after {:?}",
                    hex::encode(txid),
                    self.config.inclusion_timeout
                ));
            }
            tokio::time::sleep(self.config.poll_interval).await;
        }
    }

    async fn sign(
        &self,
        purpose: &KeyPurpose,
        owner: &TronAddress,
        unsigned: UnsignedTx,
    ) -> Result<SignedTx, RailError> {
        tx::sign_tx(self.signer.as_ref(), purpose, owner, unsigned)
            .await
            .map_err(tx_error)
    }

    /// Signs with the sponsor key, broadcasts and waits until it executed successfully.
    async fn sponsor_tx(&self, what: &str, unsigned: UnsignedTx) -> Result<(), String> {
        let signed = self
            .sign(&KeyPurpose::Sponsor, &self.sponsor, unsigned)
            .await
            .map_err(|e| format!("{what}: {e}"))?;
        match self.api.broadcast(&signed).await {
            Ok(BroadcastOutcome::Accepted) => {}
            Ok(BroadcastOutcome::Rejected { code, .. }) if code == "DUP_TRANSACTION_ERROR" => {}
            Ok(BroadcastOutcome::Rejected { code, message }) => {
                return Err(format!("{what} rejected: {code}: {message}"));
            }
            // Unknown outcome: waiting for the txID settles it either way.
            Err(_) => {}
        }
        let info = self
            .wait_included(&signed.txid())
            .await
            .map_err(|e| format!("{what}: {e}"))?;
        if info.succeeded() {
            Ok(())
        } else {
            Err(format!("{what} failed: {}", info.failure_reason()))
        }
    }

    /// Broadcasts the undelegations still owed for a payment; keeps those that fail for
    /// the next call.
    async fn reclaim(
        &self,
        customer: &TronAddress,
        delegations: Vec<(Resource, u64)>,
    ) -> Vec<(Resource, u64)> {
        let mut left = Vec::new();
        for (resource, sun) in delegations {
            let done = async {
                let header = self.header().await.ok()?;
                let unsigned =
                    tx::build_undelegate_resource(&header, &self.sponsor, customer, resource, sun)
                        .ok()?;
                let signed = self
                    .sign(&KeyPurpose::Sponsor, &self.sponsor, unsigned)
                    .await
                    .ok()?;
                match self.api.broadcast(&signed).await {
                    Ok(BroadcastOutcome::Accepted) => Some(()),
                    Ok(BroadcastOutcome::Rejected { code, .. })
                        if code == "DUP_TRANSACTION_ERROR" =>
                    {
                        Some(())
                    }
                    _ => None,
                }
            }
            .await;
            if done.is_none() {
                left.push((resource, sun));
            }
        }
        left
    }

    async fn reclaim_payment(&self, payment_id: &str) {
        let owed = {
            let mut payments = self.lock();
            match payments.get_mut(payment_id) {
                Some(r) if !r.delegations.is_empty() => {
                    Some((r.customer, std::mem::take(&mut r.delegations)))
                }
                _ => None,
            }
        };
        if let Some((customer, delegations)) = owed {
            let left = self.reclaim(&customer, delegations).await;
            let updated = {
                let mut payments = self.lock();
                payments.get_mut(payment_id).map(|r| {
                    r.delegations.extend(left);
                    r.clone()
                })
            };
            // Best effort: a stale entry only makes a restarted rail try to reclaim
            // again, which the node refuses harmlessly.
            if let Some(r) = updated {
                let _ = self.persist(payment_id, Some(&r)).await;
            }
        }
    }

    fn validate(
        &self,
        payment: &RailPayment,
    ) -> Result<(TronAddress, TronAddress, u64, TronAddress), RailError> {
        if payment.id.is_empty() {
            return Err(rejected("payment id is empty"));
        }
        let contract = self
            .config
            .contract_of(payment.token)
            .ok_or_else(|| unsupported_token(payment.token))?;
        let [leg] = payment.legs.as_slice() else {
            return Err(RailError::Unsupported {
                what: format!(
                    "{} legs on TRON: a TRON payment is one recipient leg (no fee legs, spec 8.4)",
                    payment.legs.len()
                ),
            });
        };
        if leg.role != LegRole::Recipient {
            return Err(RailError::Unsupported {
                what: "fee legs on TRON: native TRON sponsorship deducts no fee (spec 8.4)".into(),
            });
        }
        if leg.amount.is_zero() {
            return Err(rejected("amount must be positive"));
        }
        let from = parse_address(&payment.from_address)?;
        let to = parse_address(&leg.to)?;
        if from == to {
            return Err(rejected("sender and recipient are the same address"));
        }
        Ok((from, to, leg.amount.get(), contract))
    }

    async fn submit_locked(&self, payment: &RailPayment) -> Result<Submission, RailError> {
        if let Some(r) = self.record(&payment.id).await? {
            return Ok(submission(&payment.id, hex::encode(r.txid)));
        }
        let (from, to, amount, contract) = self.validate(payment)?;
        if derive(self.signer.as_ref(), &payment.from).await? != from {
            return Err(rejected(format!(
                "from_address {} is not the address of key {}",
                payment.from_address, payment.from
            )));
        }
        if from == self.sponsor {
            return Err(rejected("the sponsor account does not send USDT"));
        }
        let (sponsor_account, resources) = self.sponsor_state().await?;
        let shortfalls = self.sponsor_shortfalls(sponsor_account.as_ref(), &resources);
        if !shortfalls.is_empty() {
            return Err(unavailable(format!(
                "TRON sends disabled (readiness INBOUND_READY): {}",
                shortfalls.join("; ")
            )));
        }
        let balance = self
            .api
            .trc20_balance(&contract, &from, &self.sponsor)
            .await
            .map_err(|e| read_error("balanceOf", e))?;
        if balance < amount as u128 {
            return Err(rejected(format!(
                "insufficient balance: {} available, {} needed",
                Micros(u64::try_from(balance).unwrap_or(u64::MAX)),
                Micros(amount)
            )));
        }

        // 1. Activation.
        let customer_account = self
            .api
            .account(&from)
            .await
            .map_err(|e| read_error("getaccount(customer)", e))?;
        if customer_account.is_none() {
            let unsigned = tx::build_account_create(&self.header().await?, &self.sponsor, &from);
            self.sponsor_tx("account activation", unsigned)
                .await
                .map_err(|e| rejected(format!("sponsorship failed, nothing sent: {e}")))?;
        }

        // 2. Resources.
        let plan = self
            .delegation_plan(&resources)
            .map_err(|e| unavailable(format!("sends disabled: {e}")))?;
        let mut delegated = Vec::new();
        for (resource, sun) in &plan {
            let step = async {
                let unsigned = tx::build_delegate_resource(
                    &self.header().await.map_err(|e| e.to_string())?,
                    &self.sponsor,
                    &from,
                    *resource,
                    *sun,
                )
                .map_err(|e| e.to_string())?;
                self.sponsor_tx(&format!("{} delegation", resource.name()), unsigned)
                    .await
            }
            .await;
            match step {
                Ok(()) => delegated.push((*resource, *sun)),
                Err(e) => {
                    let left = self.reclaim(&from, delegated).await;
                    let note = if left.is_empty() {
                        String::new()
                    } else {
                        format!(" (could not reclaim {left:?} from {from})")
                    };
                    return Err(rejected(format!(
                        "sponsorship failed, nothing sent: {e}{note}"
                    )));
                }
            }
        }

        // 3. The transfer, signed by the customer's key.
        let unsigned = tx::build_trc20_transfer(
            &self.header().await?,
            &from,
            &contract,
            &to,
            amount as u128,
            self.config.fee_limit_sun,
        );
        let signed = match self.sign(&payment.from, &from, unsigned).await {
            Ok(s) => s,
            Err(e) => {
                self.reclaim(&from, delegated).await;
                return Err(e);
            }
        };
        // Recorded before the broadcast, so a lost answer (or a restart) is reconciled by
        // txID. If the journal cannot take it, nothing is sent.
        let record = PaymentRecord {
            txid: signed.txid(),
            expiration_ms: signed.expiration_ms(),
            customer: from,
            delegations: delegated,
        };
        if let Err(e) = self.persist(&payment.id, Some(&record)).await {
            self.reclaim(&from, record.delegations).await;
            return Err(e);
        }
        self.lock().insert(payment.id.clone(), record);
        match self.api.broadcast(&signed).await {
            Ok(BroadcastOutcome::Accepted) => Ok(submission(&payment.id, signed.txid_hex())),
            Ok(BroadcastOutcome::Rejected { code, .. }) if code == "DUP_TRANSACTION_ERROR" => {
                Ok(submission(&payment.id, signed.txid_hex()))
            }
            Ok(BroadcastOutcome::Rejected { code, message }) => {
                // Definitely not submitted: forget it and give the resources back.
                let record = self.lock().remove(&payment.id);
                let _ = self.persist(&payment.id, None).await;
                if let Some(r) = record {
                    self.reclaim(&from, r.delegations).await;
                }
                Err(rejected(format!(
                    "node rejected the transfer: {code}: {message}"
                )))
            }
            Err(e) => Err(RailError::Unknown {
                reason: format!(
                    "broadcast of {} unanswered ({e}); reconcile with status",
                    signed.txid_hex()
                ),
            }),
        }
    }
}

fn submission(payment_id: &str, tx_hash: String) -> Submission {
    Submission {
        payment_id: payment_id.to_string(),
        tx_hash: Some(tx_hash),
    }
}

async fn derive(signer: &dyn Signer, purpose: &KeyPurpose) -> Result<TronAddress, RailError> {
    let key = signer
        .public_key(purpose, Curve::Secp256k1)
        .await
        .map_err(signer_error)?;
    TronAddress::from_public_key(&key.bytes)
        .map_err(|e| rejected(format!("signer public key: {e}")))
}

fn word_address(topic: &[u8; 32]) -> TronAddress {
    let mut evm = [0u8; 20];
    evm.copy_from_slice(&topic[12..]);
    TronAddress::from_evm_bytes(&evm)
}

#[async_trait]
impl Rail for TronRail {
    fn id(&self) -> RailId {
        RailId::Tron
    }

    /// USDT only (spec 1.1: TRON is a native USDT rail). A configured `usdc_contract` is
    /// read and sent back (deposits made by mistake), never carried for customers.
    fn tokens(&self) -> Vec<Token> {
        vec![Token::Usdt]
    }

    async fn readiness(&self) -> Readiness {
        let mut degraded = Vec::new();
        if let Err(e) = self.api.now_block().await {
            degraded.push(format!("read-side RPC failed: getnowblock: {e}"));
        }
        let state = if degraded.is_empty() {
            match self.sponsor_state().await {
                Ok(s) => Some(s),
                Err(e) => {
                    degraded.push(format!("reader-account check failed: {e}"));
                    None
                }
            }
        } else {
            None
        };
        if degraded.is_empty()
            && let Err(e) = self
                .api
                .trc20_balance(&self.config.usdt_contract, &self.sponsor, &self.sponsor)
                .await
        {
            degraded.push(format!(
                "USDT contract {} read failed: {e}",
                self.config.usdt_contract
            ));
        }
        if !degraded.is_empty() {
            return Readiness {
                status: ReadinessStatus::Degraded,
                reasons: degraded,
            };
        }
        let Some((account, resources)) = state else {
            unreachable!("state is read whenever nothing is degraded")
        };
        let reasons = self.sponsor_shortfalls(account.as_ref(), &resources);
        Readiness {
            status: if reasons.is_empty() {
                ReadinessStatus::Ready
            } else {
                ReadinessStatus::InboundReady
            },
            reasons,
        }
    }

    async fn address_for(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError> {
        Ok(ChainAddress(
            derive(self.signer.as_ref(), purpose).await?.to_base58(),
        ))
    }

    /// Nothing to prepare: receiving TRC-20 needs no account; activation happens on the
    /// first sponsored send.
    async fn prepare_wallet(&self, _purpose: &KeyPurpose) -> Result<(), RailError> {
        Ok(())
    }

    async fn balance(&self, address: &ChainAddress, token: Token) -> Result<Micros, RailError> {
        let address = parse_address(address)?;
        let contract = self
            .config
            .contract_of(token)
            .ok_or_else(|| unsupported_token(token))?;
        let units = self
            .api
            .trc20_balance(&contract, &address, &self.sponsor)
            .await
            .map_err(|e| read_error("balanceOf", e))?;
        u64::try_from(units)
            .map(Micros)
            .map_err(|_| unavailable(format!("balance {units} exceeds the micro-unit range")))
    }

    async fn submit(&self, payment: &RailPayment) -> Result<Submission, RailError> {
        let _guard = self.submit_lock.lock().await;
        self.submit_locked(payment).await
    }

    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError> {
        let Some(record) = self.record(payment_id).await? else {
            return Ok(SubmissionStatus::NotFound);
        };
        let tx_hash = hex::encode(record.txid);
        let info = self
            .api
            .transaction_info(&record.txid)
            .await
            .map_err(|e| read_error("gettransactioninfobyid", e))?;
        let head = self
            .api
            .now_block()
            .await
            .map_err(|e| read_error("getnowblock", e))?;
        let Some(info) = info else {
            if head.timestamp_ms > record.expiration_ms {
                // Past its expiration and in no block: no node will ever include it.
                self.reclaim_payment(payment_id).await;
                return Ok(SubmissionStatus::Failed {
                    reason: "TRANSACTION_EXPIRED: expired before it was included in a block".into(),
                    tx_hash: Some(tx_hash),
                });
            }
            return Ok(SubmissionStatus::Pending {
                tx_hash: Some(tx_hash),
            });
        };
        // In a block, whatever its result: the resources can go back.
        self.reclaim_payment(payment_id).await;
        let confirmations = (head.number + 1).saturating_sub(info.block_number);
        if confirmations < self.config.confirmations {
            return Ok(SubmissionStatus::Pending {
                tx_hash: Some(tx_hash),
            });
        }
        if info.succeeded() {
            Ok(SubmissionStatus::Confirmed {
                tx_hash,
                block: info.block_number,
                created_recipient_account: false,
            })
        } else {
            Ok(SubmissionStatus::Failed {
                reason: info.failure_reason(),
                tx_hash: Some(tx_hash),
            })
        }
    }

    /// `cursor` is the next block number to read (`""` = [`TronConfig::scan_start_block`]).
    /// Deposits below the confirmation depth are returned with `confirmed: false` and
    /// come back in later scans (dedupe by `(tx_hash, index)`); the returned cursor
    /// passes only blocks at the depth.
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
            .api
            .now_block()
            .await
            .map_err(|e| read_error("getnowblock", e))?
            .number;
        let topic = tx::transfer_event_topic();
        let tokens: Vec<([u8; 20], Token)> = [Token::Usdt, Token::Usdc]
            .into_iter()
            .filter_map(|t| Some((self.config.contract_of(t)?.evm_bytes(), t)))
            .collect();
        let mut inbound = Vec::new();
        let mut next = start;
        let mut passing = true;
        let last = head.min(start.saturating_add(self.config.max_scan_blocks.max(1) - 1));
        let mut n = start;
        while n <= last {
            let infos = self
                .api
                .block_transaction_infos(n)
                .await
                .map_err(|e| read_error("gettransactioninfobyblocknum", e))?;
            let confirmations = head + 1 - n;
            let confirmed = confirmations >= self.config.confirmations;
            for info in infos.iter().filter(|i| i.succeeded()) {
                for (index, log) in info.logs.iter().enumerate() {
                    let Some(&(_, token)) = tokens.iter().find(|(a, _)| *a == log.address) else {
                        continue;
                    };
                    if log.topics.len() != 3 || log.topics[0] != topic {
                        continue;
                    }
                    let to = word_address(&log.topics[2]);
                    if !watched.is_empty() && !watched.contains(&to) {
                        continue;
                    }
                    let Ok(amount) = tx::parse_uint256(&log.data) else {
                        continue;
                    };
                    let Ok(amount) = u64::try_from(amount) else {
                        continue;
                    };
                    inbound.push(Inbound {
                        tx_hash: hex::encode(info.txid),
                        index: index as u32,
                        from: ChainAddress(word_address(&log.topics[1]).to_base58()),
                        to: ChainAddress(to.to_base58()),
                        token,
                        amount: Micros(amount),
                        block: n,
                        confirmations,
                        confirmed,
                    });
                }
            }
            passing &= confirmed;
            if passing {
                next = n + 1;
            }
            n += 1;
            if inbound.len() >= limit.max(1) {
                break;
            }
        }
        Ok(ScanBatch {
            inbound,
            cursor: next.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)]
    fn object_safe(rail: TronRail, api: super::super::client::HttpTronApi) {
        let _: Arc<dyn Rail> = Arc::new(rail);
        let _: Arc<dyn TronApi> = Arc::new(api);
    }

    #[test]
    fn mainnet_config_defaults() {
        let c = TronConfig::mainnet();
        assert_eq!(c.usdt_contract.to_base58(), MAINNET_USDT);
        assert_eq!(c.confirmations, 19);
        assert_eq!(c.fee_limit_sun, 100_000_000);
    }

    #[test]
    fn bad_addresses_map_to_invalid_address() {
        let err =
            parse_address(&ChainAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u".into())).unwrap_err();
        assert_eq!(err.code(), "INVALID_ADDRESS");
        assert!(err.to_string().contains("TRON_ADDRESS_BAD_CHECKSUM"));
    }
}
