//! `sim`: a deterministic in-process chain implementing the [`Rail`] port.
//!
//! One [`SimRail`] simulates one chain profile ([`SimProfile`]): EVM (by chain id), TRON
//! or Solana. It keeps a block height (starting at 0, the empty genesis), balances per
//! (address, token) in micro-units, a mempool, a log of executed transfers per block and
//! the submissions by payment id.
//!
//! - A submitted payment is verified (source address, legs, a real signature from the
//!   [`Signer`] checked against the public key, available balance), then waits in the
//!   mempool and executes when the next block is mined: all legs or none.
//! - A payment is `Confirmed` once `confirmations` blocks including its own are mined
//!   (`head - block + 1 >= confirmations`).
//! - With [`SimConfig::auto_mine`] (the default) every `status` and `scan` call first
//!   mines one block, so engine workers drive the chain without an extra task.
//! - A payment's deadline (`RailPayment::valid_until`) is honoured by a chain given a
//!   clock ([`SimRail::with_clock`]): a payment past it is refused at submit, and one
//!   still in the mempool when a block is mined past it fails there (it never executes).
//!   A chain without a clock has no time and includes payments whatever their deadline.
//! - A confirmed payment reports what landing it cost the service
//!   ([`SubmissionStatus::Confirmed`]'s `cost`): a fixed, documented figure per profile
//!   ([`SimCosts::for_profile`]), replaced with [`SimRail::with_costs`]. One that a
//!   block included and that reverted there reports that figure on its `Failed` status
//!   too ([`SimCosts::failed`]); one that expired unincluded or was refused, `None`.
//! - Test controls: [`SimRail::mint`], [`SimRail::external_transfer`], [`SimRail::mine`],
//!   [`SimRail::inject`] a [`Fault`] into the next submit, [`SimRail::reorg`] the newest
//!   blocks, and readiness switches.
//!
//! Addresses and hashes have each chain's text form; EVM and TRON addresses are
//! SIMULATED derivations (see [`SimRail::address_for`](Rail::address_for)). Nothing
//! reads the wall clock or OS randomness: the same calls give the same chain (its time
//! is the injected clock's).

mod chain;
mod costs;
mod encoding;
#[cfg(feature = "sim-http")]
pub mod http;

use async_trait::async_trait;
use chain::{Chain, Tx};
pub use costs::{
    SIM_EVM_GAS_PER_PAYMENT, SIM_EVM_GAS_PRICE_WEI, SIM_SOLANA_FEE_LAMPORTS,
    SIM_SOLANA_TOKEN_ACCOUNT_RENT_LAMPORTS, SIM_TRON_BANDWIDTH_PER_PAYMENT,
    SIM_TRON_ENERGY_PER_PAYMENT, SIM_TRON_SUN_PER_BANDWIDTH, SIM_TRON_SUN_PER_ENERGY, SimCosts,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use stablecoin_core::domain::crypto::{verify_ed25519, verify_secp256k1};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    ChainAddress, Clock, Curve, KeyPurpose, LegRole, Rail, RailError, RailId, RailPayment,
    Readiness, ReadinessStatus, ScanBatch, Signer, SignerError, Submission, SubmissionStatus,
};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

/// Which chain a [`SimRail`] imitates: its [`RailId`], key curve and text formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "chain", content = "chain_id", rename_all = "snake_case")]
pub enum SimProfile {
    /// An EVM chain by chain id: secp256k1 keys, `0x` addresses, `0x` + 64 hex hashes.
    Evm(u64),
    /// TRON: secp256k1 keys, base58check `T...` addresses, 64-hex hashes (no `0x`).
    Tron,
    /// Solana: ed25519 keys, base58 addresses, base58 64-byte signatures as hashes.
    Solana,
}

impl SimProfile {
    /// The [`RailId`] a rail of this profile reports.
    pub fn rail_id(self) -> RailId {
        match self {
            SimProfile::Evm(id) => RailId::Evm(id),
            SimProfile::Tron => RailId::Tron,
            SimProfile::Solana => RailId::Solana,
        }
    }

    /// The tokens the simulated chain carries: what the real rail of the same kind
    /// carries by default (TRON: USDT only, spec 1.4).
    pub fn tokens(self) -> Vec<Token> {
        match self {
            SimProfile::Evm(_) | SimProfile::Solana => Token::ALL.to_vec(),
            SimProfile::Tron => vec![Token::Usdt],
        }
    }

    /// The curve of the chain's account keys.
    pub fn curve(self) -> Curve {
        match self {
            SimProfile::Evm(_) | SimProfile::Tron => Curve::Secp256k1,
            SimProfile::Solana => Curve::Ed25519,
        }
    }

    /// The default confirmation depth: EVM 3, TRON 19, Solana 1.
    pub fn default_confirmations(self) -> u64 {
        match self {
            SimProfile::Evm(_) => 3,
            SimProfile::Tron => 19,
            SimProfile::Solana => 1,
        }
    }

    /// Chain-scoping tag mixed into digests and hashes.
    fn chain_tag(self) -> String {
        match self {
            SimProfile::Evm(id) => format!("evm:{id}"),
            SimProfile::Tron => "tron".into(),
            SimProfile::Solana => "solana".into(),
        }
    }
}

/// Settings of a [`SimRail`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimConfig {
    /// Blocks (including the transaction's own) before a payment or deposit counts as
    /// confirmed.
    pub confirmations: u64,
    /// Mine one block at the start of every `status` and `scan` call.
    pub auto_mine: bool,
}

impl SimConfig {
    /// The profile's default depth (EVM 3, TRON 19, Solana 1) with auto-mining on.
    pub fn for_profile(profile: SimProfile) -> Self {
        SimConfig {
            confirmations: profile.default_confirmations(),
            auto_mine: true,
        }
    }
}

/// A fault injected into the next submit that would otherwise be accepted: replays of a
/// known payment id and submits failing validation, the signature or the balance check
/// leave it queued. Several injected faults apply to successive submits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fault {
    /// The node refuses it: `Err(Rejected)`, nothing is recorded.
    Reject,
    /// Accepted, then fails at execution: `Failed`, nothing moves.
    Revert,
    /// Accepted; executes only after this many extra blocks.
    Delay(u64),
    /// Recorded and executes normally, but submit answers `Err(Unknown)`.
    LostResponse,
    /// Submit answers `Err(Unknown)` and the transaction never lands (`NotFound`).
    Drop,
}

/// A deterministic in-process chain implementing [`Rail`] for one [`SimProfile`].
pub struct SimRail {
    profile: SimProfile,
    config: SimConfig,
    signer: Arc<dyn Signer>,
    chain: Mutex<Chain>,
    /// The chain's time, for payment deadlines; `None`: no time passes.
    clock: Option<Arc<dyn Clock>>,
    /// What a confirmed payment reports it cost.
    costs: SimCosts,
}

impl std::fmt::Debug for SimRail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimRail")
            .field("profile", &self.profile)
            .field("config", &self.config)
            .field("costs", &self.costs)
            .field("head", &self.head())
            .finish_non_exhaustive()
    }
}

fn unavailable(reason: &str) -> RailError {
    RailError::Unavailable {
        reason: reason.to_string(),
    }
}

fn rejected(reason: impl Into<String>) -> RailError {
    RailError::Rejected {
        reason: reason.into(),
    }
}

fn signer_error(e: SignerError) -> RailError {
    match e {
        SignerError::Unavailable(r) => RailError::Unavailable {
            reason: format!("signer: {r}"),
        },
        other => rejected(format!("signer: {other}")),
    }
}

const RPC_DOWN: &str = "rpc unreachable (simulated outage)";

impl SimRail {
    /// An empty chain at height 0 (no balances, no clock: see
    /// [`with_clock`](Self::with_clock)). `signer` holds the keys whose addresses it
    /// derives and whose signatures it checks.
    pub fn new(profile: SimProfile, signer: Arc<dyn Signer>, config: SimConfig) -> SimRail {
        SimRail {
            profile,
            config,
            signer,
            chain: Mutex::new(Chain::new(matches!(profile, SimProfile::Solana))),
            clock: None,
            costs: SimCosts::for_profile(profile),
        }
    }

    /// Replaces the profile's default cost of a confirmed payment
    /// ([`SimCosts::for_profile`]), e.g. so a sponsorship budget test picks round
    /// numbers.
    pub fn with_costs(mut self, costs: SimCosts) -> Self {
        self.costs = costs;
        self
    }

    /// What a confirmed payment reports it cost.
    pub fn costs(&self) -> SimCosts {
        self.costs
    }

    /// Gives the chain a clock (the engine's, in tests; the system clock in a server):
    /// from then on it refuses payments past their deadline, at submit and at inclusion.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The chain's time in Unix ms, when it has a clock.
    fn now_ms(&self) -> Option<i64> {
        self.clock.as_ref().map(|c| c.now().millis())
    }

    /// The chain this rail imitates.
    pub fn profile(&self) -> SimProfile {
        self.profile
    }

    /// Its confirmation depth and auto-mining switch.
    pub fn config(&self) -> SimConfig {
        self.config
    }

    fn lock(&self) -> MutexGuard<'_, Chain> {
        // The chain state stays consistent between statements, so a poisoned lock (a
        // panicking test thread) is safe to reuse.
        self.chain.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Locks the chain, failing with `Unavailable` while the RPC is down.
    fn lock_up(&self) -> Result<MutexGuard<'_, Chain>, RailError> {
        let chain = self.lock();
        if chain.rpc_down {
            Err(unavailable(RPC_DOWN))
        } else {
            Ok(chain)
        }
    }

    // ---- test controls -------------------------------------------------------------

    /// The current block height (0 before anything is mined).
    pub fn head(&self) -> u64 {
        self.lock().height
    }

    /// Mines `n` blocks, executing due mempool transactions; returns the new head.
    pub fn mine(&self, n: u64) -> u64 {
        let now = self.now_ms();
        self.lock().mine(n, now)
    }

    /// A chain reorganisation of the newest `depth` blocks (see `Chain::reorg`): their
    /// transactions go back to the mempool and land again in a later block. A depth
    /// below the confirmation depth touches nothing confirmed; a deeper one un-confirms
    /// what was final, the case the engine must report rather than absorb. Returns the
    /// transactions sent back to the mempool.
    pub fn reorg(&self, depth: u64) -> usize {
        self.lock().reorg(depth)
    }

    /// Queues a fault for the next submit (see [`Fault`]).
    pub fn inject(&self, fault: Fault) {
        self.lock().faults.push_back(fault);
    }

    /// How many distinct payments the chain accepted (replays and dropped or rejected
    /// submits do not count).
    pub fn submit_count(&self) -> usize {
        self.lock().accepted
    }

    /// With `false`, sends are disabled: readiness becomes `INBOUND_READY`.
    pub fn set_sponsor_funded(&self, funded: bool) {
        self.lock().sponsor_funded = funded;
    }

    /// With `true`, readiness is `DEGRADED` and every other call answers `Unavailable`.
    pub fn set_rpc_down(&self, down: bool) {
        self.lock().rpc_down = down;
    }

    /// With `false`, receipt monitoring is disabled: readiness is `DEGRADED` (spec 1.5)
    /// and `scan` answers `Unavailable`.
    pub fn set_monitoring(&self, enabled: bool) {
        self.lock().monitoring = enabled;
    }

    /// The fixed outside address [`mint`](Self::mint) deposits come from.
    pub fn faucet_address(&self) -> ChainAddress {
        encoding::faucet_address(self.profile)
    }

    /// An external deposit to `to`: executes in the next mined block as a transfer from
    /// the faucet address, so scanners see it. Returns its transaction hash.
    pub fn mint(
        &self,
        to: &ChainAddress,
        token: Token,
        amount: Micros,
    ) -> Result<String, RailError> {
        self.enqueue_external(self.faucet_address(), to, token, amount, true)
    }

    /// An outside party pays `to` from `from`: executes in the next mined block (and
    /// fails there, moving nothing, if `from` lacks the balance). Returns its hash.
    pub fn external_transfer(
        &self,
        from: &ChainAddress,
        to: &ChainAddress,
        token: Token,
        amount: Micros,
    ) -> Result<String, RailError> {
        let from = encoding::normalize_address(self.profile, from)?;
        self.enqueue_external(from, to, token, amount, false)
    }

    fn enqueue_external(
        &self,
        from: ChainAddress,
        to: &ChainAddress,
        token: Token,
        amount: Micros,
        mint: bool,
    ) -> Result<String, RailError> {
        let to = encoding::normalize_address(self.profile, to)?;
        if amount.is_zero() {
            return Err(rejected("amount must be positive"));
        }
        let mut chain = self.lock();
        chain.external_seq += 1;
        let tx_hash =
            encoding::tx_hash(self.profile, b"external", &chain.external_seq.to_be_bytes());
        let execute_at = chain.height + 1;
        let tx = Tx {
            tx_hash: tx_hash.clone(),
            from,
            token,
            legs: vec![(to, amount)],
            recipient_leg: Some(0),
            mint,
            revert: false,
            execute_at,
            valid_until: None,
        };
        chain.enqueue(None, tx);
        Ok(tx_hash)
    }

    /// Solana: whether the address has its token account for `token` (opened by
    /// `prepare_wallet` or by a first incoming transfer). Always true elsewhere.
    pub fn token_account_exists(&self, address: &ChainAddress, token: Token) -> bool {
        match encoding::normalize_address(self.profile, address) {
            Ok(a) => self.lock().has_token_account(&a, token),
            Err(_) => false,
        }
    }

    // ---- internals ------------------------------------------------------------------

    async fn derive_address(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError> {
        let key = self
            .signer
            .public_key(purpose, self.profile.curve())
            .await
            .map_err(signer_error)?;
        Ok(encoding::address_from_public_key(self.profile, &key.bytes))
    }

    /// SHA-256 of a canonical, length-prefixed encoding of the payment, scoped to the
    /// chain. This is what the source key signs.
    fn payment_digest(&self, payment: &RailPayment) -> [u8; 32] {
        fn put(h: &mut Sha256, bytes: &[u8]) {
            h.update((bytes.len() as u64).to_be_bytes());
            h.update(bytes);
        }
        let mut h = Sha256::new();
        put(&mut h, b"stablecoin-sim/payment/v1");
        put(&mut h, self.profile.chain_tag().as_bytes());
        put(&mut h, payment.id.as_bytes());
        put(&mut h, payment.from.path().as_bytes());
        put(&mut h, payment.from_address.0.as_bytes());
        put(&mut h, payment.token.as_str().as_bytes());
        h.update((payment.legs.len() as u64).to_be_bytes());
        for leg in &payment.legs {
            put(&mut h, leg.to.0.as_bytes());
            h.update(leg.amount.get().to_be_bytes());
            let role: &[u8] = match leg.role {
                LegRole::Recipient => b"recipient",
                LegRole::ServiceFee => b"service_fee",
                LegRole::TenantFee => b"tenant_fee",
            };
            put(&mut h, role);
        }
        if let Some(deadline) = payment.valid_until {
            put(&mut h, b"valid_until");
            h.update(deadline.millis().to_be_bytes());
        }
        h.finalize().into()
    }

    /// Signs the payment digest with the source key and verifies the signature.
    async fn sign_and_verify(&self, payment: &RailPayment) -> Result<(), RailError> {
        let curve = self.profile.curve();
        let digest = self.payment_digest(payment);
        let key = self
            .signer
            .public_key(&payment.from, curve)
            .await
            .map_err(signer_error)?;
        let sig = self
            .signer
            .sign(&payment.from, curve, &digest)
            .await
            .map_err(signer_error)?;
        let valid = match curve {
            Curve::Secp256k1 => verify_secp256k1(&key.bytes, &digest, &sig.0),
            Curve::Ed25519 => verify_ed25519(&key.bytes, &digest, &sig.0),
        };
        if valid {
            Ok(())
        } else {
            Err(rejected("signature does not verify against the source key"))
        }
    }

    fn readiness_of(chain: &Chain) -> Readiness {
        let mut degraded = Vec::new();
        if chain.rpc_down {
            degraded.push(RPC_DOWN.to_string());
        }
        if !chain.monitoring {
            degraded.push("receipt monitoring disabled".to_string());
        }
        let mut reasons = degraded.clone();
        if !chain.sponsor_funded {
            reasons.push("sponsor account has no resources: sends disabled".to_string());
        }
        let status = if !degraded.is_empty() {
            ReadinessStatus::Degraded
        } else if !chain.sponsor_funded {
            ReadinessStatus::InboundReady
        } else {
            ReadinessStatus::Ready
        };
        Readiness { status, reasons }
    }

    fn submission(payment_id: &str, tx_hash: &str) -> Submission {
        Submission {
            payment_id: payment_id.to_string(),
            tx_hash: Some(tx_hash.to_string()),
        }
    }
}

#[async_trait]
impl Rail for SimRail {
    fn id(&self) -> RailId {
        self.profile.rail_id()
    }

    fn tokens(&self) -> Vec<Token> {
        self.profile.tokens()
    }

    async fn readiness(&self) -> Readiness {
        Self::readiness_of(&self.lock())
    }

    /// A memory read: the engine asks before every send, so a flipped readiness
    /// (`set_sponsor_funded`, `set_rpc_down`) shows at the next request.
    fn readiness_is_cheap(&self) -> bool {
        true
    }

    /// Derived offline from the signer's public key for the purpose (secp256k1 on EVM and
    /// TRON, ed25519 on Solana). EVM (`0x` + 40 lowercase hex) and TRON (base58check
    /// `T...`) addresses are SIMULATED: they hash the key with SHA-256 instead of the
    /// real Keccak/CREATE2 derivations of the `evm` and `tron` rails. The Solana address
    /// is the real form: base58 of the 32-byte public key.
    async fn address_for(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError> {
        drop(self.lock_up()?);
        self.derive_address(purpose).await
    }

    /// Solana: opens the wallet's USDC and USDT token accounts. A no-op elsewhere.
    async fn prepare_wallet(&self, purpose: &KeyPurpose) -> Result<(), RailError> {
        drop(self.lock_up()?);
        let address = self.derive_address(purpose).await?;
        let mut chain = self.lock_up()?;
        if self.profile == SimProfile::Solana {
            for token in Token::ALL {
                chain.open_token_account(&address, token);
            }
        }
        Ok(())
    }

    /// As on the real chain: the Solana profile's token accounts pay rent.
    fn prepare_wallet_pays_rent(&self) -> bool {
        self.profile == SimProfile::Solana
    }

    /// The executed balance: it includes transfers mined but not yet at the
    /// confirmation depth, and excludes the mempool.
    async fn balance(&self, address: &ChainAddress, token: Token) -> Result<Micros, RailError> {
        let address = encoding::normalize_address(self.profile, address)?;
        Ok(self.lock_up()?.balance(&address, token))
    }

    async fn submit(&self, payment: &RailPayment) -> Result<Submission, RailError> {
        {
            let chain = self.lock_up()?;
            if let Some(hash) = chain.tx_hash_of(&payment.id) {
                return Ok(Self::submission(&payment.id, hash));
            }
            let readiness = Self::readiness_of(&chain);
            if !readiness.can_send() {
                return Err(unavailable(&format!(
                    "sends disabled: {}",
                    readiness.reasons.join("; ")
                )));
            }
        }
        if payment.id.is_empty() {
            return Err(rejected("payment id is empty"));
        }
        if payment.legs.is_empty() {
            return Err(rejected("payment has no legs"));
        }
        if payment.legs.iter().any(|l| l.amount.is_zero()) {
            return Err(rejected("every leg amount must be positive"));
        }
        if let Some(now) = self.clock.as_ref().map(|c| c.now())
            && payment.expired_at(now)
        {
            return Err(rejected("the payment's deadline (valid_until) has passed"));
        }
        let total = payment
            .total()
            .ok_or_else(|| rejected("payment total overflows"))?;
        let from = encoding::normalize_address(self.profile, &payment.from_address)?;
        let legs = payment
            .legs
            .iter()
            .map(|l| Ok((encoding::normalize_address(self.profile, &l.to)?, l.amount)))
            .collect::<Result<Vec<_>, RailError>>()?;
        if self.derive_address(&payment.from).await? != from {
            return Err(rejected(format!(
                "from_address {} is not the address of key {}",
                payment.from_address, payment.from
            )));
        }
        self.sign_and_verify(payment).await?;

        let mut chain = self.lock_up()?;
        // A concurrent submit of the same id may have landed while we signed.
        if let Some(hash) = chain.tx_hash_of(&payment.id) {
            return Ok(Self::submission(&payment.id, hash));
        }
        let available = chain
            .balance(&from, payment.token)
            .get()
            .saturating_sub(chain.pending_from(&from, payment.token));
        if available < total.get() {
            return Err(rejected(format!(
                "insufficient balance: {} available, {} needed",
                Micros(available),
                total
            )));
        }
        let fault = chain.faults.pop_front();
        if fault == Some(Fault::Reject) {
            return Err(rejected("rejected by the node (injected fault)"));
        }
        let tx_hash = encoding::tx_hash(self.profile, b"payment", payment.id.as_bytes());
        if fault == Some(Fault::Drop) {
            return Err(RailError::Unknown {
                reason: "connection dropped before the node answered".into(),
            });
        }
        let delay = match fault {
            Some(Fault::Delay(blocks)) => blocks,
            _ => 0,
        };
        let tx = Tx {
            tx_hash: tx_hash.clone(),
            from,
            token: payment.token,
            legs,
            recipient_leg: payment
                .legs
                .iter()
                .position(|l| l.role == LegRole::Recipient),
            mint: false,
            revert: fault == Some(Fault::Revert),
            execute_at: chain.height.saturating_add(1).saturating_add(delay),
            valid_until: payment.valid_until.map(|t| t.millis()),
        };
        chain.enqueue(Some(&payment.id), tx);
        chain.accepted += 1;
        if fault == Some(Fault::LostResponse) {
            return Err(RailError::Unknown {
                reason: "response lost after the transaction was sent".into(),
            });
        }
        Ok(Self::submission(&payment.id, &tx_hash))
    }

    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError> {
        let now = self.now_ms();
        let mut chain = self.lock_up()?;
        if self.config.auto_mine {
            chain.mine(1, now);
        }
        Ok(chain.status(payment_id, self.config.confirmations, &self.costs))
    }

    /// `cursor` is a decimal block number (`""` = from genesis); returns transfers to
    /// watched addresses (to any address when `watched` is empty) in later blocks. The returned cursor only passes blocks whose
    /// transfers are all confirmed, so unconfirmed ones come back in the next scan:
    /// callers dedupe by `(tx_hash, index)`. A cursor ahead of the head (a lagging
    /// node) yields nothing and comes back unchanged; a non-numeric cursor is `Rejected`.
    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError> {
        let from_block = crate::cursor::block_cursor(cursor, 0)?;
        let watched = watched
            .iter()
            .map(|a| encoding::normalize_address(self.profile, a))
            .collect::<Result<BTreeSet<_>, _>>()?;
        let now = self.now_ms();
        let mut chain = self.lock_up()?;
        if !chain.monitoring {
            return Err(unavailable("receipt monitoring disabled"));
        }
        if self.config.auto_mine {
            chain.mine(1, now);
        }
        let (inbound, next) = chain.scan(from_block, &watched, limit, self.config.confirmations);
        Ok(ScanBatch {
            inbound,
            cursor: next.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stablecoin_core::memory::LocalSigner;

    fn rail(profile: SimProfile) -> SimRail {
        let config = SimConfig {
            auto_mine: false,
            ..SimConfig::for_profile(profile)
        };
        SimRail::new(profile, Arc::new(LocalSigner::from_seed([3; 32])), config)
    }

    #[test]
    fn profiles_map_to_rail_ids_and_curves() {
        assert_eq!(SimProfile::Evm(137).rail_id(), RailId::Evm(137));
        assert_eq!(SimProfile::Tron.rail_id(), RailId::Tron);
        assert_eq!(SimProfile::Solana.rail_id(), RailId::Solana);
        assert_eq!(SimProfile::Solana.curve(), Curve::Ed25519);
        assert_eq!(SimProfile::Tron.curve(), Curve::Secp256k1);
        assert_eq!(SimConfig::for_profile(SimProfile::Evm(56)).confirmations, 3);
        assert_eq!(SimConfig::for_profile(SimProfile::Tron).confirmations, 19);
        assert_eq!(SimConfig::for_profile(SimProfile::Solana).confirmations, 1);
        assert!(SimConfig::for_profile(SimProfile::Solana).auto_mine);
    }

    #[test]
    fn digest_binds_every_field() {
        let r = rail(SimProfile::Evm(137));
        let base = RailPayment {
            id: "op-1".into(),
            from: KeyPurpose::Treasury,
            from_address: ChainAddress("0x00".into()),
            token: Token::Usdc,
            legs: vec![stablecoin_core::ports::PaymentLeg {
                to: ChainAddress("0x01".into()),
                amount: Micros(5),
                role: LegRole::Recipient,
            }],
            valid_until: None,
        };
        let d = r.payment_digest(&base);
        let mut other = base.clone();
        other.legs[0].amount = Micros(6);
        assert_ne!(d, r.payment_digest(&other));
        let mut other = base.clone();
        other.legs[0].role = LegRole::ServiceFee;
        assert_ne!(d, r.payment_digest(&other));
        let mut other = base.clone();
        other.token = Token::Usdt;
        assert_ne!(d, r.payment_digest(&other));
        let mut other = base.clone();
        other.valid_until = Some(stablecoin_core::domain::time::Timestamp(1));
        assert_ne!(d, r.payment_digest(&other));
        let other_chain = rail(SimProfile::Evm(8453));
        assert_ne!(d, other_chain.payment_digest(&base));
    }

    #[tokio::test]
    async fn scan_cursor_validation() {
        let r = rail(SimProfile::Evm(137));
        let ahead = r.scan("5", &[], 10).await.unwrap();
        assert!(ahead.inbound.is_empty());
        assert_eq!(ahead.cursor, "5");
        let err = r.scan("-1", &[], 10).await.unwrap_err();
        assert_eq!(err.code(), "RAIL_REJECTED");
        let err = r.scan("abc", &[], 10).await.unwrap_err();
        assert_eq!(err.code(), "RAIL_REJECTED");
        assert_eq!(r.scan("", &[], 10).await.unwrap().cursor, "0");
    }

    #[tokio::test]
    async fn failed_submit_checks_leave_faults_queued() {
        let r = rail(SimProfile::Tron);
        r.inject(Fault::Reject);
        let payment = RailPayment {
            id: "x".into(),
            from: KeyPurpose::Treasury,
            from_address: r.address_for(&KeyPurpose::Treasury).await.unwrap(),
            token: Token::Usdt,
            legs: vec![],
            valid_until: None,
        };
        // Validation failures do not consume the injected fault.
        assert!(r.submit(&payment).await.is_err());
        assert_eq!(r.lock().faults.len(), 1);
    }
}
