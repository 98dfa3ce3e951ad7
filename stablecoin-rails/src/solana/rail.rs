//! [`SolanaRail`]: the [`Rail`] port over any [`SolanaRpc`].

use super::codec::{self, TransferLeg};
use super::journal::{SendRecord, SendState, SolanaSendInfo};
use super::rpc::{Commitment, RpcError, SignatureStatus, SignaturesQuery, SolanaRpc, codes};
use super::scan;
use async_trait::async_trait;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::signer::verify_ed25519;
use stablecoin_core::ports::{
    ChainAddress, Curve, Inbound, KeyPurpose, LegRole, MemoryJournal, PaymentLeg, Rail, RailError,
    RailId, RailJournal, RailPayment, Readiness, ReadinessStatus, ScanBatch, Signer, SignerError,
    Submission, SubmissionStatus,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Settings of a [`SolanaRail`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SolanaConfig {
    pub usdc_mint: Pubkey,
    pub usdt_mint: Pubkey,
    /// The token program of both mints (SPL Token on mainnet).
    pub token_program: Pubkey,
    /// Decimals of both mints (6 on mainnet); checked against the mints by `readiness`.
    pub decimals: u8,
    /// The key that pays every fee and every rent (the sponsor).
    pub fee_payer: KeyPurpose,
    /// Receipt monitoring is configured (`SOLANA_SCAN_ENABLED=true`). Without it the
    /// rail reports `DEGRADED` and `scan` answers `Unavailable` (spec 1.5).
    pub scan_enabled: bool,
    /// Operator switch for sponsored sends; off, readiness tops out at `INBOUND_READY`.
    pub sends_enabled: bool,
    /// Fee-payer lamports below which sends are unavailable (`INBOUND_READY`).
    pub min_fee_payer_lamports_for_sends: u64,
    /// How long `provision` waits for its transaction to finalize.
    pub finality_timeout_ms: u64,
    /// Delay between signature-status polls while waiting.
    pub poll_interval_ms: u64,
    /// First slot the scanner looks at when the engine has no cursor yet.
    pub scan_start_slot: u64,
    /// Signatures per `getSignaturesForAddress` page (the validator allows 1000).
    pub scan_page_size: usize,
}

impl SolanaConfig {
    /// Mainnet USDC and USDT (SPL Token, 6 decimals), sponsor key `Sponsor`, monitoring
    /// and sends off until the operator turns them on, 0.05 SOL send threshold.
    pub fn mainnet() -> Self {
        SolanaConfig {
            usdc_mint: codec::MAINNET_USDC_MINT,
            usdt_mint: codec::MAINNET_USDT_MINT,
            token_program: codec::TOKEN_PROGRAM_ID,
            decimals: 6,
            fee_payer: KeyPurpose::Sponsor,
            scan_enabled: false,
            sends_enabled: false,
            min_fee_payer_lamports_for_sends: 50_000_000,
            finality_timeout_ms: 60_000,
            poll_interval_ms: 500,
            scan_start_slot: 0,
            scan_page_size: 1000,
        }
    }

    pub fn mint(&self, token: Token) -> Pubkey {
        match token {
            Token::Usdc => self.usdc_mint,
            Token::Usdt => self.usdt_mint,
        }
    }

    fn mints(&self) -> [(Token, Pubkey); 2] {
        [(Token::Usdc, self.usdc_mint), (Token::Usdt, self.usdt_mint)]
    }
}

/// Result of [`SolanaRail::provision`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolanaProvisioned {
    /// The customer's durable wallet address (its ed25519 key for the phone).
    pub address: ChainAddress,
    pub usdc_ata: ChainAddress,
    pub usdt_ata: ChainAddress,
    /// `true` when this call created at least one of the two accounts (the service paid
    /// the rent); `false` when both already existed.
    pub created: bool,
    /// The finalized provisioning transaction, when one was needed.
    pub signature: Option<String>,
}

/// A send by asset name or mint address ([`SolanaRail::send`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolanaSend {
    /// Idempotency id of the payment.
    pub id: String,
    pub from: KeyPurpose,
    /// `USDC`, `USDT`, or one of their mint addresses. Native SOL, wrapped SOL and any
    /// other mint are refused.
    pub asset: String,
    pub legs: Vec<PaymentLeg>,
}

/// What [`SolanaRail::send`] and [`SolanaRail::submit_with_info`] return.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolanaSendResult {
    pub submission: Submission,
    pub info: SolanaSendInfo,
}

/// The Solana rail: durable per-phone ed25519 addresses, USDC/USDT ATAs provisioned
/// with the service as fee and rent payer, sponsored SPL `TransferChecked` sends, an
/// inbound scanner over the watched token accounts. All node access goes through the
/// [`SolanaRpc`] it is built with; all signing through the [`Signer`] port.
pub struct SolanaRail {
    rpc: Arc<dyn SolanaRpc>,
    signer: Arc<dyn Signer>,
    config: SolanaConfig,
    /// Where each payment's [`SendRecord`] is written before its broadcast.
    journal: Arc<dyn RailJournal>,
    fee_payer: Mutex<Option<Pubkey>>,
    payment_locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::fmt::Debug for SolanaRail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SolanaRail")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn rejected(reason: impl Into<String>) -> RailError {
    RailError::Rejected {
        reason: reason.into(),
    }
}

fn unavailable(reason: impl Into<String>) -> RailError {
    RailError::Unavailable {
        reason: reason.into(),
    }
}

fn unsupported(what: impl Into<String>) -> RailError {
    RailError::Unsupported { what: what.into() }
}

fn read_err(e: RpcError) -> RailError {
    unavailable(format!("solana rpc: {e}"))
}

fn codec_err(e: codec::CodecError) -> RailError {
    match e {
        codec::CodecError::InvalidAddress { address, reason } => {
            RailError::InvalidAddress { address, reason }
        }
        codec::CodecError::Invalid(r) => rejected(r),
    }
}

fn signer_err(e: SignerError) -> RailError {
    match e {
        SignerError::Unavailable(r) => unavailable(format!("signer: {r}")),
        other => rejected(format!("signer: {other}")),
    }
}

fn addr(key: &Pubkey) -> ChainAddress {
    ChainAddress(key.to_string())
}

/// Micro-units to on-chain base units of a mint with `decimals`; inexact is refused.
pub fn micros_to_base_units(amount: Micros, decimals: u8) -> Result<u64, RailError> {
    let m = amount.get();
    if decimals >= 6 {
        let scale = 10u64
            .checked_pow(u32::from(decimals - 6))
            .ok_or_else(|| rejected("mint decimals out of range"))?;
        m.checked_mul(scale)
            .ok_or_else(|| rejected("amount overflows the mint's base units"))
    } else {
        let scale = 10u64.pow(u32::from(6 - decimals));
        if !m.is_multiple_of(scale) {
            return Err(rejected(format!(
                "{amount} is not representable with {decimals} decimals"
            )));
        }
        Ok(m / scale)
    }
}

/// On-chain base units to micro-units; inexact is refused.
pub fn base_units_to_micros(units: u64, decimals: u8) -> Result<Micros, RailError> {
    if decimals >= 6 {
        let scale = 10u64
            .checked_pow(u32::from(decimals - 6))
            .ok_or_else(|| unavailable("mint decimals out of range"))?;
        if !units.is_multiple_of(scale) {
            return Err(unavailable(format!(
                "{units} base units ({decimals} decimals) are not a whole micro-unit"
            )));
        }
        Ok(Micros(units / scale))
    } else {
        let scale = 10u64.pow(u32::from(6 - decimals));
        units
            .checked_mul(scale)
            .map(Micros)
            .ok_or_else(|| unavailable("balance overflows micro-units"))
    }
}

/// The preflight error of a blockhash the node does not know (yet).
const BLOCKHASH_NOT_FOUND: &str = "BlockhashNotFound";

/// Outcome of looking up a journaled signature.
enum Reconciled {
    Landed(SignatureStatus),
    /// Not seen yet, blockhash still valid: it may still land.
    InFlight,
    /// Not seen and its blockhash expired: it can never land.
    Expired,
}

/// A built, signed transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedTransaction {
    /// The wire bytes (`sendTransaction` sends them base64).
    pub wire: Vec<u8>,
    /// The serialized message every signer signed.
    pub message: Vec<u8>,
    /// The fee payer's signature: the transaction id.
    pub signature: Signature,
    /// From the blockhash's `getLatestBlockhash` answer (0 when built offline).
    pub last_valid_block_height: u64,
}

/// Compiles `instructions` into a legacy message paid by `fee_payer` with `blockhash`,
/// signs it through the [`Signer`] port with the key purpose of each required signer
/// (`keys`), verifies every signature, and encodes the wire transaction. The one path
/// every rail transaction takes; pure but for the signer.
pub async fn sign_transaction(
    signer: &dyn Signer,
    instructions: &[Instruction],
    fee_payer: &Pubkey,
    blockhash: solana_hash::Hash,
    keys: &[(Pubkey, KeyPurpose)],
) -> Result<SignedTransaction, RailError> {
    let message = codec::compile_message(instructions, fee_payer, blockhash);
    let bytes = codec::message_bytes(&message);
    let mut sigs = Vec::new();
    for signer_key in codec::required_signers(&message) {
        let purpose = keys
            .iter()
            .find(|(k, _)| k == signer_key)
            .map(|(_, p)| p)
            .ok_or_else(|| rejected(format!("no key purpose signs for {signer_key}")))?;
        let sig = signer
            .sign(purpose, Curve::Ed25519, &bytes)
            .await
            .map_err(signer_err)?;
        if !verify_ed25519(signer_key.as_ref(), &bytes, &sig.0) {
            return Err(rejected(format!(
                "signature of {purpose} does not verify against {signer_key}"
            )));
        }
        let arr: [u8; 64] = sig
            .0
            .as_slice()
            .try_into()
            .map_err(|_| rejected("ed25519 signature is not 64 bytes"))?;
        sigs.push(arr);
    }
    let first = sigs
        .first()
        .copied()
        .ok_or_else(|| rejected("transaction has no signer"))?;
    let wire = codec::encode_transaction(&sigs, &bytes).map_err(codec_err)?;
    Ok(SignedTransaction {
        wire,
        message: bytes,
        signature: Signature::from(first),
        last_valid_block_height: 0,
    })
}

impl SolanaRail {
    /// A rail whose send journal is in memory (a [`MemoryJournal`]: forgotten by a
    /// restart); a deployment adds a durable one with [`with_journal`](Self::with_journal).
    pub fn new(rpc: Arc<dyn SolanaRpc>, signer: Arc<dyn Signer>, config: SolanaConfig) -> Self {
        SolanaRail {
            rpc,
            signer,
            config,
            journal: Arc::new(MemoryJournal::new()),
            fee_payer: Mutex::new(None),
            payment_locks: Mutex::new(HashMap::new()),
        }
    }

    /// Keeps the send journal in `journal` (a deployment passes a durable one, such as
    /// `StoreJournal` over its database): a rail restarted over it reconciles the sends
    /// in flight by their signatures instead of forgetting them.
    pub fn with_journal(mut self, journal: Arc<dyn RailJournal>) -> Self {
        self.journal = journal;
        self
    }

    /// The journaled record of a payment: the signed transaction and where it stands.
    pub async fn send_record(&self, payment_id: &str) -> Result<Option<SendRecord>, RailError> {
        crate::journal::load_entry(
            &*self.journal,
            &self.id().name(),
            payment_id,
            SendRecord::from_entry,
        )
        .await
    }

    /// Writes `record` to the journal; durable (with a durable journal) when it returns.
    async fn journal_save(&self, record: &SendRecord) -> Result<(), RailError> {
        self.journal
            .save(&self.id().name(), &record.payment_id, &record.to_entry()?)
            .await
    }

    pub fn config(&self) -> &SolanaConfig {
        &self.config
    }

    pub fn rpc(&self) -> &Arc<dyn SolanaRpc> {
        &self.rpc
    }

    // ---- keys and addresses -------------------------------------------------------

    async fn key_of(&self, purpose: &KeyPurpose) -> Result<Pubkey, RailError> {
        let pk = self
            .signer
            .public_key(purpose, Curve::Ed25519)
            .await
            .map_err(signer_err)?;
        codec::address_from_public_key(&pk.bytes).map_err(codec_err)
    }

    /// The fee payer's account (cached after the first derivation).
    pub async fn fee_payer(&self) -> Result<Pubkey, RailError> {
        if let Some(k) = *self.fee_payer.lock().unwrap_or_else(|e| e.into_inner()) {
            return Ok(k);
        }
        let k = self.key_of(&self.config.fee_payer).await?;
        *self.fee_payer.lock().unwrap_or_else(|e| e.into_inner()) = Some(k);
        Ok(k)
    }

    /// The associated token account of a wallet address for a token.
    pub fn token_account(
        &self,
        owner: &ChainAddress,
        token: Token,
    ) -> Result<ChainAddress, RailError> {
        let owner = codec::parse_address(&owner.0).map_err(codec_err)?;
        Ok(addr(&codec::associated_token_address(
            &owner,
            &self.config.mint(token),
            &self.config.token_program,
        )))
    }

    /// Maps an asset selector to a supported token: `USDC`/`USDT` (any case) or their
    /// configured mint addresses. Native SOL (`SOL`, the wrapped-SOL mint) and every
    /// other mint are refused with `Unsupported`.
    pub fn token_for_asset(&self, asset: &str) -> Result<Token, RailError> {
        let a = asset.trim();
        match a.to_ascii_uppercase().as_str() {
            "USDC" => return Ok(Token::Usdc),
            "USDT" => return Ok(Token::Usdt),
            "SOL" | "WSOL" | "LAMPORTS" => {
                return Err(unsupported(
                    "native SOL payments are not supported on the Solana rail: only SPL USDC \
                     and USDT",
                ));
            }
            _ => {}
        }
        let Ok(mint) = codec::parse_address(a) else {
            return Err(unsupported(format!(
                "asset {:?} is not supported on the Solana rail: only USDC and USDT",
                a.chars().take(64).collect::<String>()
            )));
        };
        if mint == codec::NATIVE_MINT || mint == codec::SYSTEM_PROGRAM_ID {
            return Err(unsupported(
                "native SOL (wrapped SOL mint) payments are not supported on the Solana rail: \
                 only SPL USDC and USDT",
            ));
        }
        self.config
            .mints()
            .into_iter()
            .find(|(_, m)| *m == mint)
            .map(|(t, _)| t)
            .ok_or_else(|| {
                unsupported(format!(
                    "mint {mint} is not supported on the Solana rail: only USDC ({}) and USDT \
                     ({})",
                    self.config.usdc_mint, self.config.usdt_mint
                ))
            })
    }

    async fn build_and_sign(
        &self,
        instructions: &[Instruction],
        fee_payer: &Pubkey,
        keys: &[(Pubkey, KeyPurpose)],
    ) -> Result<SignedTransaction, RailError> {
        let latest = self
            .rpc
            .get_latest_blockhash(Commitment::Confirmed)
            .await
            .map_err(read_err)?;
        let mut signed = sign_transaction(
            &*self.signer,
            instructions,
            fee_payer,
            latest.blockhash,
            keys,
        )
        .await?;
        signed.last_valid_block_height = latest.last_valid_block_height;
        Ok(signed)
    }

    // ---- reconciliation -----------------------------------------------------------

    async fn signature_status(
        &self,
        sig: &Signature,
    ) -> Result<Option<SignatureStatus>, RailError> {
        let mut v = self
            .rpc
            .get_signature_statuses(std::slice::from_ref(sig))
            .await
            .map_err(read_err)?;
        Ok(v.pop().flatten())
    }

    /// Where a signed transaction stands: seen by the node, possibly still landing, or
    /// dead (blockhash expired at `finalized` and still not seen).
    async fn reconcile(&self, sig: &Signature, last_valid: u64) -> Result<Reconciled, RailError> {
        if let Some(s) = self.signature_status(sig).await? {
            return Ok(Reconciled::Landed(s));
        }
        let height = self
            .rpc
            .get_block_height(Commitment::Finalized)
            .await
            .map_err(read_err)?;
        if height <= last_valid {
            return Ok(Reconciled::InFlight);
        }
        // It may have landed between the two calls: look once more after the expiry.
        match self.signature_status(sig).await? {
            Some(s) => Ok(Reconciled::Landed(s)),
            None => Ok(Reconciled::Expired),
        }
    }

    /// Sends signed bytes. `Ok(true)`: the node accepted it; `Err(Rejected)`: the node
    /// refused it (never broadcast); `Err(Unknown)`: the outcome is unknown.
    async fn broadcast(&self, wire: &[u8], expected: &Signature) -> Result<(), RailError> {
        match self.rpc.send_transaction(wire).await {
            Ok(sig) if &sig == expected => Ok(()),
            Ok(sig) => Err(RailError::Unknown {
                reason: format!("node answered signature {sig}, expected {expected}"),
            }),
            Err(e @ RpcError::Server { code, .. })
                if code == codes::SEND_TRANSACTION_PREFLIGHT_FAILURE
                    || code == codes::TRANSACTION_SIGNATURE_VERIFICATION_FAILURE =>
            {
                let reason = match e.preflight_err() {
                    Some(err) => format!(
                        "refused by the node's preflight: {}",
                        codec::describe_transaction_error(err)
                    ),
                    None => format!("refused by the node: {e}"),
                };
                Err(rejected(reason))
            }
            Err(e) => Err(RailError::Unknown {
                reason: format!("sendTransaction: {e}"),
            }),
        }
    }

    // ---- provisioning ---------------------------------------------------------------

    /// Creates the USDC and USDT associated token accounts of the phone's wallet with
    /// the service as fee and rent payer, and returns once they are finalized. The
    /// customer signs nothing and holds no SOL. Repeating it is idempotent (`created:
    /// false` once both exist).
    pub async fn provision(&self, phone: &str) -> Result<SolanaProvisioned, RailError> {
        self.provision_purpose(&KeyPurpose::PhoneWallet(phone.to_string()))
            .await
    }

    /// [`provision`](Self::provision) for any key purpose.
    pub async fn provision_purpose(
        &self,
        purpose: &KeyPurpose,
    ) -> Result<SolanaProvisioned, RailError> {
        let owner = self.key_of(purpose).await?;
        let fee_payer = self.fee_payer().await?;
        if owner == fee_payer {
            return Err(rejected(
                "the fee payer cannot be provisioned as a customer",
            ));
        }
        let tp = self.config.token_program;
        let atas: Vec<(Pubkey, Pubkey)> = self
            .config
            .mints()
            .iter()
            .map(|(_, m)| (*m, codec::associated_token_address(&owner, m, &tp)))
            .collect();
        let mut signature = None;
        let mut attempts = 0u32;
        loop {
            let missing = self
                .missing_atas(&owner, &atas, Commitment::Finalized)
                .await?;
            if missing.is_empty() {
                break;
            }
            if attempts >= 3 {
                return Err(RailError::Unknown {
                    reason: "provisioning transactions expired three times without landing".into(),
                });
            }
            attempts += 1;
            let ixs = codec::provision_instructions(&fee_payer, &owner, &missing, &tp);
            let signed = self
                .build_and_sign(
                    &ixs,
                    &fee_payer,
                    &[(fee_payer, self.config.fee_payer.clone())],
                )
                .await?;
            signature = Some(signed.signature.to_string());
            match self.broadcast(&signed.wire, &signed.signature).await {
                Ok(()) | Err(RailError::Unknown { .. }) => {}
                Err(e) => return Err(e),
            }
            if !self.wait_finalized(&signed).await? {
                // Expired unseen: build a fresh one (the idempotent creates make a
                // late landing of the old one harmless, but it can no longer land).
                continue;
            }
        }
        Ok(SolanaProvisioned {
            address: addr(&owner),
            usdc_ata: addr(&atas[0].1),
            usdt_ata: addr(&atas[1].1),
            created: signature.is_some(),
            signature,
        })
    }

    /// The mints whose ATA is missing (and checks that existing ones are token accounts
    /// of the right mint and owner).
    async fn missing_atas(
        &self,
        owner: &Pubkey,
        atas: &[(Pubkey, Pubkey)],
        commitment: Commitment,
    ) -> Result<Vec<Pubkey>, RailError> {
        let mut missing = Vec::new();
        for (mint, ata) in atas {
            match self
                .rpc
                .get_account_info(ata, commitment)
                .await
                .map_err(read_err)?
            {
                None => missing.push(*mint),
                Some(acc) => {
                    let state = codec::parse_token_account(&acc.data).map_err(|e| {
                        unavailable(format!("account {ata} is not a token account: {e}"))
                    })?;
                    if acc.owner != self.config.token_program
                        || state.mint != *mint
                        || state.owner != *owner
                    {
                        return Err(unavailable(format!(
                            "account {ata} is not the {mint} token account of {owner}"
                        )));
                    }
                }
            }
        }
        Ok(missing)
    }

    /// Polls until the transaction is finalized (`Ok(true)`), or expired unseen
    /// (`Ok(false)`). A finalized failure is `Rejected`; the deadline is `Unknown`.
    async fn wait_finalized(&self, signed: &SignedTransaction) -> Result<bool, RailError> {
        let deadline =
            tokio::time::Instant::now() + Duration::from_millis(self.config.finality_timeout_ms);
        loop {
            match self
                .reconcile(&signed.signature, signed.last_valid_block_height)
                .await?
            {
                Reconciled::Landed(s) => {
                    if let Some(err) = &s.err {
                        if s.is_finalized() {
                            return Err(rejected(format!(
                                "transaction {} failed: {}",
                                signed.signature,
                                codec::describe_transaction_error(err)
                            )));
                        }
                    } else if s.is_finalized() {
                        return Ok(true);
                    }
                }
                Reconciled::InFlight => {
                    // Same bytes, same signature: a rebroadcast can never pay twice.
                    let _ = self.rpc.send_transaction(&signed.wire).await;
                }
                Reconciled::Expired => return Ok(false),
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(RailError::Unknown {
                    reason: format!(
                        "transaction {} not finalized within {} ms",
                        signed.signature, self.config.finality_timeout_ms
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(self.config.poll_interval_ms)).await;
        }
    }

    // ---- sends ----------------------------------------------------------------------

    /// Sends by asset name or mint ([`token_for_asset`](Self::token_for_asset) refuses
    /// native SOL and unknown mints), then as [`submit_with_info`](Self::submit_with_info).
    pub async fn send(&self, request: &SolanaSend) -> Result<SolanaSendResult, RailError> {
        let token = self.token_for_asset(&request.asset)?;
        let from_address = addr(&self.key_of(&request.from).await?);
        let payment = RailPayment {
            id: request.id.clone(),
            from: request.from.clone(),
            from_address,
            token,
            legs: request.legs.clone(),
        };
        self.submit_with_info(&payment).await
    }

    /// What the rail recorded for a payment id: signature, fee payer,
    /// `created_recipient_ata`, rent paid. `None` for an unknown id.
    pub async fn send_info(&self, payment_id: &str) -> Result<Option<SolanaSendInfo>, RailError> {
        Ok(self.send_record(payment_id).await?.map(|r| r.info))
    }

    fn payment_lock(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.payment_locks.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, l| Arc::strong_count(l) > 1);
        map.entry(id.to_string()).or_default().clone()
    }

    fn digest(payment: &RailPayment) -> String {
        let bytes = serde_json::to_vec(payment).unwrap_or_default();
        let d = Sha256::digest(&bytes);
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Whether sponsored sends may be called now (config switch, monitoring, funded
    /// fee payer): the cheap gate `submit` applies; `readiness` reports the same.
    async fn send_gate(&self) -> Result<(), RailError> {
        if !self.config.sends_enabled {
            return Err(unavailable("solana sends are disabled by configuration"));
        }
        if !self.config.scan_enabled {
            return Err(unavailable(
                "solana receipt monitoring is disabled (SOLANA_SCAN_ENABLED): sends unavailable",
            ));
        }
        let fee_payer = self.fee_payer().await?;
        let lamports = self
            .rpc
            .get_balance(&fee_payer, Commitment::Confirmed)
            .await
            .map_err(read_err)?;
        if lamports < self.config.min_fee_payer_lamports_for_sends {
            return Err(unavailable(format!(
                "fee payer {fee_payer} holds {lamports} lamports, below the {} needed for sends",
                self.config.min_fee_payer_lamports_for_sends
            )));
        }
        Ok(())
    }

    /// [`Rail::submit`] returning the send details too (`created_recipient_ata`).
    pub async fn submit_with_info(
        &self,
        payment: &RailPayment,
    ) -> Result<SolanaSendResult, RailError> {
        if payment.id.is_empty() {
            return Err(rejected("payment id is empty"));
        }
        let lock = self.payment_lock(&payment.id);
        let _guard = lock.lock().await;
        let digest = Self::digest(payment);
        let mut superseded = Vec::new();
        let mut attempts = 0;
        if let Some(mut rec) = self.send_record(&payment.id).await? {
            if rec.request_digest != digest {
                return Err(rejected(format!(
                    "payment id {} was already used for a different payment",
                    payment.id
                )));
            }
            superseded = rec.superseded.clone();
            attempts = rec.info.attempts;
            let sig = Signature::from_str(&rec.info.signature)
                .map_err(|_| unavailable("journal holds an unreadable signature"))?;
            match &rec.state {
                SendState::Finalized { .. } => return Ok(Self::result(&rec)),
                SendState::Sent => match self
                    .reconcile(&sig, rec.info.last_valid_block_height)
                    .await?
                {
                    Reconciled::Landed(_) => return Ok(Self::result(&rec)),
                    Reconciled::InFlight => {
                        let wire = base64::engine::general_purpose::STANDARD
                            .decode(&rec.wire_base64)
                            .map_err(|_| unavailable("journal holds unreadable wire bytes"))?;
                        // Same signed bytes: harmless if it already arrived.
                        let _ = self.rpc.send_transaction(&wire).await;
                        return Ok(Self::result(&rec));
                    }
                    Reconciled::Expired => {
                        rec.state = SendState::Expired;
                        self.journal_save(&rec).await?;
                        superseded.push(rec.info.signature.clone());
                    }
                },
                SendState::Expired => superseded.push(rec.info.signature.clone()),
                // Never reached the network: building it again cannot pay twice.
                SendState::Rejected { .. } => {}
            }
        }
        self.send_gate().await?;
        self.build_and_send(payment, digest, superseded, attempts + 1)
            .await
    }

    fn result(rec: &SendRecord) -> SolanaSendResult {
        SolanaSendResult {
            submission: Submission {
                payment_id: rec.payment_id.clone(),
                tx_hash: Some(rec.info.signature.clone()),
            },
            info: rec.info.clone(),
        }
    }

    async fn build_and_send(
        &self,
        payment: &RailPayment,
        digest: String,
        superseded: Vec<String>,
        attempts: u32,
    ) -> Result<SolanaSendResult, RailError> {
        if payment.legs.is_empty() {
            return Err(rejected("payment has no legs"));
        }
        let source = self.key_of(&payment.from).await?;
        let claimed = codec::parse_address(&payment.from_address.0).map_err(codec_err)?;
        if claimed != source {
            return Err(rejected(format!(
                "from_address {} is not the address of key {}",
                payment.from_address, payment.from
            )));
        }
        let fee_payer = self.fee_payer().await?;
        if source == fee_payer {
            return Err(rejected("the fee payer key does not send tokens"));
        }
        let mint = self.config.mint(payment.token);
        let tp = self.config.token_program;
        let decimals = self.config.decimals;
        let source_ata = codec::associated_token_address(&source, &mint, &tp);

        // Legs: amounts in base units, recipients as wallets, ATAs created when missing.
        let mut total: u64 = 0;
        let mut legs = Vec::with_capacity(payment.legs.len());
        let mut created = Vec::new();
        let mut created_recipient_ata = false;
        let mut seen_missing = BTreeSet::new();
        let mut recipient_accounts = Vec::new();
        for leg in &payment.legs {
            if leg.amount.is_zero() {
                return Err(rejected("every leg amount must be positive"));
            }
            let amount = micros_to_base_units(leg.amount, decimals)?;
            total = total
                .checked_add(amount)
                .ok_or_else(|| rejected("payment total overflows"))?;
            let recipient = codec::parse_address(&leg.to.0).map_err(codec_err)?;
            codec::check_wallet_address(&recipient).map_err(codec_err)?;
            let ata = codec::associated_token_address(&recipient, &mint, &tp);
            let exists = match self
                .rpc
                .get_account_info(&ata, Commitment::Confirmed)
                .await
                .map_err(read_err)?
            {
                None => false,
                Some(acc) => {
                    let st = codec::parse_token_account(&acc.data).map_err(|e| {
                        rejected(format!("recipient account {ata} is unusable: {e}"))
                    })?;
                    if st.frozen {
                        return Err(rejected(format!("recipient account {ata} is frozen")));
                    }
                    true
                }
            };
            if leg.role == LegRole::Recipient {
                recipient_accounts.push(addr(&ata));
            }
            // Create each missing account once even if two legs pay it.
            let create = !exists && seen_missing.insert(ata);
            if create {
                created.push(addr(&ata));
                if leg.role == LegRole::Recipient {
                    created_recipient_ata = true;
                }
            }
            legs.push(TransferLeg {
                recipient,
                amount,
                create_recipient_ata: create,
            });
        }

        // The sender must hold the tokens: refuse before signing anything.
        let available = self
            .rpc
            .get_token_account_balance(&source_ata, Commitment::Confirmed)
            .await
            .map_err(read_err)?
            .unwrap_or(0);
        if available < total {
            return Err(rejected(format!(
                "insufficient {} balance: {} available, {} needed",
                payment.token,
                base_units_to_micros(available, decimals).unwrap_or(Micros::ZERO),
                payment.total().unwrap_or(Micros::ZERO)
            )));
        }
        let rent_each = if created.is_empty() {
            0
        } else {
            self.rpc
                .get_minimum_balance_for_rent_exemption(codec::TOKEN_ACCOUNT_LEN)
                .await
                .map_err(read_err)?
        };
        let ixs = codec::transfer_instructions(&fee_payer, &source, &mint, &tp, decimals, &legs)
            .map_err(codec_err)?;
        let keys = [
            (fee_payer, self.config.fee_payer.clone()),
            (source, payment.from.clone()),
        ];
        let mut attempts = attempts;
        loop {
            let signed = self.build_and_sign(&ixs, &fee_payer, &keys).await?;
            let info = SolanaSendInfo {
                payment_id: payment.id.clone(),
                signature: signed.signature.to_string(),
                fee_payer: addr(&fee_payer),
                source_token_account: addr(&source_ata),
                created_recipient_ata,
                rent_paid_lamports: rent_each.saturating_mul(created.len() as u64),
                created_token_accounts: created.clone(),
                verified_on_chain: false,
                last_valid_block_height: signed.last_valid_block_height,
                attempts,
            };
            let mut record = SendRecord {
                payment_id: payment.id.clone(),
                request_digest: digest.clone(),
                wire_base64: base64::engine::general_purpose::STANDARD.encode(&signed.wire),
                state: SendState::Sent,
                superseded: superseded.clone(),
                recipient_token_accounts: recipient_accounts.clone(),
                info,
            };
            // Journaled before the broadcast: whatever happens next is reconciled by
            // this signature.
            self.journal_save(&record).await?;
            match self.broadcast(&signed.wire, &signed.signature).await {
                Ok(()) => return Ok(Self::result(&record)),
                Err(RailError::Rejected { reason }) => {
                    record.state = SendState::Rejected {
                        reason: reason.clone(),
                    };
                    self.journal_save(&record).await?;
                    // A node behind the cluster does not know the blockhash yet; the
                    // refused transaction was never forwarded, so a fresh one is safe.
                    if reason.contains(BLOCKHASH_NOT_FOUND) && attempts < 3 {
                        attempts += 1;
                        continue;
                    }
                    return Err(RailError::Rejected { reason });
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// After finalization: checks which created accounts really were created by this
    /// transaction (zero lamports before, rent after) and records it.
    async fn verify_created(&self, rec: &mut SendRecord, sig: &Signature) {
        if rec.info.created_token_accounts.is_empty() {
            rec.info.verified_on_chain = true;
            return;
        }
        let Ok(Some(tx)) = self.rpc.get_transaction(sig, Commitment::Finalized).await else {
            return;
        };
        let mut really = Vec::new();
        let mut rent = 0u64;
        for a in &rec.info.created_token_accounts {
            let Ok(key) = codec::parse_address(&a.0) else {
                continue;
            };
            if let Some(i) = tx.account_keys.iter().position(|k| *k == key) {
                let pre = tx.pre_balances.get(i).copied().unwrap_or(0);
                let post = tx.post_balances.get(i).copied().unwrap_or(0);
                if pre == 0 && post > 0 {
                    really.push(a.clone());
                    rent = rent.saturating_add(post);
                }
            }
        }
        rec.info.created_recipient_ata = really
            .iter()
            .any(|a| rec.recipient_token_accounts.contains(a));
        rec.info.created_token_accounts = really;
        rec.info.rent_paid_lamports = rent;
        rec.info.verified_on_chain = true;
    }

    // ---- readiness ------------------------------------------------------------------

    async fn readiness_inner(&self) -> Readiness {
        let mut degraded: Vec<String> = Vec::new();
        let mut inbound_only: Vec<String> = Vec::new();
        // Reads: blockhash, both mints, fee payer balance.
        if let Err(e) = self.rpc.get_latest_blockhash(Commitment::Finalized).await {
            degraded.push(format!("solana rpc unreachable: {e}"));
        } else {
            for (token, mint) in self.config.mints() {
                match self
                    .rpc
                    .get_account_info(&mint, Commitment::Finalized)
                    .await
                {
                    Ok(Some(acc)) if acc.owner == self.config.token_program => {
                        match codec::parse_mint(&acc.data) {
                            Ok(m) if m.decimals == self.config.decimals => {}
                            Ok(m) => degraded.push(format!(
                                "{token} mint {mint} has {} decimals, configured {}",
                                m.decimals, self.config.decimals
                            )),
                            Err(e) => degraded.push(format!("{token} mint {mint}: {e}")),
                        }
                    }
                    Ok(Some(_)) => degraded.push(format!(
                        "{token} mint {mint} is not owned by the token program"
                    )),
                    Ok(None) => degraded.push(format!("{token} mint {mint} does not exist")),
                    Err(e) => degraded.push(format!("{token} mint {mint} unreadable: {e}")),
                }
            }
            match self.fee_payer().await {
                Err(e) => degraded.push(format!("fee payer key: {e}")),
                Ok(fp) => match self.rpc.get_balance(&fp, Commitment::Confirmed).await {
                    Err(e) => degraded.push(format!("fee payer balance unreadable: {e}")),
                    Ok(lamports) => {
                        // Provisioning pays two token-account rents and one fee.
                        match self
                            .rpc
                            .get_minimum_balance_for_rent_exemption(codec::TOKEN_ACCOUNT_LEN)
                            .await
                        {
                            Err(e) => degraded.push(format!("rent unreadable: {e}")),
                            Ok(rent) => {
                                let need = rent
                                    .saturating_mul(2)
                                    .saturating_add(codec::LAMPORTS_PER_SIGNATURE);
                                if lamports < need {
                                    degraded.push(format!(
                                        "fee payer {fp} holds {lamports} lamports: cannot fund \
                                         zero-SOL provisioning ({need} needed)"
                                    ));
                                }
                            }
                        }
                        if lamports < self.config.min_fee_payer_lamports_for_sends {
                            inbound_only.push(format!(
                                "fee payer {fp} holds {lamports} lamports, below the {} needed \
                                 for sponsored sends",
                                self.config.min_fee_payer_lamports_for_sends
                            ));
                        }
                    }
                },
            }
        }
        if !self.config.scan_enabled {
            degraded.push("receipt monitoring disabled (SOLANA_SCAN_ENABLED is not true)".into());
        }
        if !self.config.sends_enabled {
            inbound_only.push("sponsored sends disabled by configuration".into());
        }
        let status = if !degraded.is_empty() {
            ReadinessStatus::Degraded
        } else if !inbound_only.is_empty() {
            ReadinessStatus::InboundReady
        } else {
            ReadinessStatus::Ready
        };
        degraded.extend(inbound_only);
        Readiness {
            status,
            reasons: degraded,
        }
    }

    // ---- scanning -------------------------------------------------------------------

    async fn signatures_after(
        &self,
        address: &Pubkey,
        after_slot: u64,
        head: u64,
    ) -> Result<Vec<(u64, Signature)>, RailError> {
        let mut out = Vec::new();
        let mut before = None;
        loop {
            let page = self
                .rpc
                .get_signatures_for_address(
                    address,
                    &SignaturesQuery {
                        before,
                        until: None,
                        limit: self.config.scan_page_size.clamp(1, 1000),
                    },
                    Commitment::Finalized,
                )
                .await
                .map_err(read_err)?;
            let full = page.len() >= self.config.scan_page_size.clamp(1, 1000);
            let mut reached_cursor = false;
            for info in &page {
                if info.slot <= after_slot {
                    reached_cursor = true;
                    break;
                }
                if info.slot <= head && info.err.is_none() {
                    out.push((info.slot, info.signature));
                }
            }
            if reached_cursor || !full {
                return Ok(out);
            }
            before = page.last().map(|i| i.signature);
        }
    }
}

#[async_trait]
impl Rail for SolanaRail {
    fn id(&self) -> RailId {
        RailId::Solana
    }

    fn tokens(&self) -> Vec<Token> {
        Token::ALL.to_vec()
    }

    /// Spec 1.5: `DEGRADED` whenever monitoring is disabled or reads (blockhash, both
    /// mints, the fee payer's balance) fail or the fee payer cannot fund provisioning;
    /// `INBOUND_READY` when those pass but sends are switched off or the fee payer is
    /// below the send threshold; `READY` otherwise.
    async fn readiness(&self) -> Readiness {
        self.readiness_inner().await
    }

    /// The base58 ed25519 public key of the purpose: offline, durable for a master seed.
    async fn address_for(&self, purpose: &KeyPurpose) -> Result<ChainAddress, RailError> {
        Ok(addr(&self.key_of(purpose).await?))
    }

    /// Creates the wallet's USDC and USDT ATAs (see [`SolanaRail::provision`]).
    async fn prepare_wallet(&self, purpose: &KeyPurpose) -> Result<(), RailError> {
        self.provision_purpose(purpose).await.map(|_| ())
    }

    /// `SOLANA_SCAN_ENABLED` (spec 1.5): without it `scan` answers `Unavailable`.
    fn monitors_inbound(&self) -> bool {
        self.config.scan_enabled
    }

    /// The wallet's ATA balance at `confirmed` (0 while the ATA does not exist).
    async fn balance(&self, address: &ChainAddress, token: Token) -> Result<Micros, RailError> {
        let owner = codec::parse_address(&address.0).map_err(codec_err)?;
        let ata = codec::associated_token_address(
            &owner,
            &self.config.mint(token),
            &self.config.token_program,
        );
        let units = self
            .rpc
            .get_token_account_balance(&ata, Commitment::Confirmed)
            .await
            .map_err(read_err)?
            .unwrap_or(0);
        base_units_to_micros(units, self.config.decimals)
    }

    async fn submit(&self, payment: &RailPayment) -> Result<Submission, RailError> {
        self.submit_with_info(payment).await.map(|r| r.submission)
    }

    /// `Confirmed` once finalized; `Pending` while seen below finality or while its
    /// blockhash can still land (the same signed bytes are rebroadcast); `NotFound` for
    /// an unknown id or once its blockhash expired unseen (it can never land).
    async fn status(&self, payment_id: &str) -> Result<SubmissionStatus, RailError> {
        let lock = self.payment_lock(payment_id);
        let _guard = lock.lock().await;
        let Some(mut rec) = self.send_record(payment_id).await? else {
            return Ok(SubmissionStatus::NotFound);
        };
        let tx_hash = rec.info.signature.clone();
        match &rec.state {
            SendState::Rejected { reason } => {
                return Ok(SubmissionStatus::Failed {
                    reason: reason.clone(),
                    tx_hash: None,
                });
            }
            SendState::Expired => return Ok(SubmissionStatus::NotFound),
            SendState::Finalized { slot, err: None } => {
                return Ok(SubmissionStatus::Confirmed {
                    tx_hash,
                    block: *slot,
                    created_recipient_account: rec.info.created_recipient_ata,
                });
            }
            SendState::Finalized {
                err: Some(reason), ..
            } => {
                return Ok(SubmissionStatus::Failed {
                    reason: reason.clone(),
                    tx_hash: Some(tx_hash),
                });
            }
            SendState::Sent => {}
        }
        let sig = Signature::from_str(&tx_hash)
            .map_err(|_| unavailable("journal holds an unreadable signature"))?;
        match self
            .reconcile(&sig, rec.info.last_valid_block_height)
            .await?
        {
            Reconciled::Landed(s) if s.is_finalized() => {
                let err = s.err.as_ref().map(codec::describe_transaction_error);
                rec.state = SendState::Finalized {
                    slot: s.slot,
                    err: err.clone(),
                };
                if err.is_none() {
                    self.verify_created(&mut rec, &sig).await;
                }
                self.journal_save(&rec).await?;
                Ok(match err {
                    None => SubmissionStatus::Confirmed {
                        tx_hash,
                        block: s.slot,
                        created_recipient_account: rec.info.created_recipient_ata,
                    },
                    Some(reason) => SubmissionStatus::Failed {
                        reason,
                        tx_hash: Some(tx_hash),
                    },
                })
            }
            Reconciled::Landed(_) => Ok(SubmissionStatus::Pending {
                tx_hash: Some(tx_hash),
            }),
            Reconciled::InFlight => {
                if let Ok(wire) = base64::engine::general_purpose::STANDARD.decode(&rec.wire_base64)
                {
                    // Same signed bytes: a rebroadcast cannot pay twice.
                    let _ = self.rpc.send_transaction(&wire).await;
                }
                Ok(SubmissionStatus::Pending {
                    tx_hash: Some(tx_hash),
                })
            }
            Reconciled::Expired => {
                rec.state = SendState::Expired;
                self.journal_save(&rec).await?;
                Ok(SubmissionStatus::NotFound)
            }
        }
    }

    /// `cursor` is the last finalized slot already returned (`""`: the configured start
    /// slot). Reads the signatures of the watched wallets' USDC and USDT ATAs (with an
    /// empty `watched`, of the two mint accounts: every `TransferChecked` and mint-to of
    /// USDC/USDT, a mainnet firehose meant for small deployments) at `finalized`, then
    /// each transaction's token balance deltas. Every returned deposit is finalized.
    async fn scan(
        &self,
        cursor: &str,
        watched: &[ChainAddress],
        limit: usize,
    ) -> Result<ScanBatch, RailError> {
        if !self.config.scan_enabled {
            return Err(unavailable(
                "solana receipt monitoring disabled (SOLANA_SCAN_ENABLED is not true)",
            ));
        }
        let after = scan::parse_cursor(cursor, self.config.scan_start_slot).map_err(rejected)?;
        let owners = watched
            .iter()
            .map(|a| codec::parse_address(&a.0).map_err(codec_err))
            .collect::<Result<BTreeSet<Pubkey>, _>>()?;
        let head = self
            .rpc
            .get_slot(Commitment::Finalized)
            .await
            .map_err(read_err)?;
        if after >= head {
            return Ok(ScanBatch {
                inbound: vec![],
                cursor: after.to_string(),
            });
        }
        let tp = self.config.token_program;
        let addresses: Vec<Pubkey> = if owners.is_empty() {
            self.config.mints().iter().map(|(_, m)| *m).collect()
        } else {
            owners
                .iter()
                .flat_map(|o| {
                    self.config
                        .mints()
                        .map(|(_, m)| codec::associated_token_address(o, &m, &tp))
                })
                .collect()
        };
        let mut found: BTreeMap<(u64, String), Signature> = BTreeMap::new();
        for a in &addresses {
            for (slot, sig) in self.signatures_after(a, after, head).await? {
                found.insert((slot, sig.to_string()), sig);
            }
        }
        let entries: Vec<((u64, String), Signature)> = found.into_iter().collect();
        let slots: Vec<u64> = entries.iter().map(|((s, _), _)| *s).collect();
        let (take, next) = scan::cut_at_limit(&slots, limit, head);
        let mut inbound = Vec::new();
        let mints = self.config.mints();
        for ((slot, sig_text), sig) in entries.into_iter().take(take) {
            let Some(tx) = self
                .rpc
                .get_transaction(&sig, Commitment::Finalized)
                .await
                .map_err(read_err)?
            else {
                return Err(unavailable(format!(
                    "finalized transaction {sig_text} is not available from the node"
                )));
            };
            for c in scan::credits_of(&tx, &mints) {
                if !owners.is_empty() && !owners.contains(&c.to_owner) {
                    continue;
                }
                inbound.push(Inbound {
                    tx_hash: sig_text.clone(),
                    index: c.account_index,
                    from: addr(&c.from),
                    to: addr(&c.to_owner),
                    token: c.token,
                    amount: base_units_to_micros(c.amount, self.config.decimals)?,
                    block: slot,
                    confirmations: head.saturating_sub(slot) + 1,
                    confirmed: true,
                });
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

    #[test]
    fn unit_conversions_are_exact() {
        assert_eq!(
            micros_to_base_units(Micros(1_234_567), 6).unwrap(),
            1_234_567
        );
        assert_eq!(micros_to_base_units(Micros(5), 9).unwrap(), 5_000);
        assert_eq!(micros_to_base_units(Micros(500), 4).unwrap(), 5);
        assert!(micros_to_base_units(Micros(501), 4).is_err());
        assert_eq!(base_units_to_micros(7, 6).unwrap(), Micros(7));
        assert_eq!(base_units_to_micros(7_000, 9).unwrap(), Micros(7));
        assert!(base_units_to_micros(7_001, 9).is_err());
        assert_eq!(base_units_to_micros(7, 4).unwrap(), Micros(700));
    }
}
