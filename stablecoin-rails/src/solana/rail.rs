//! [`SolanaRail`]: the [`Rail`] port over any [`SolanaRpc`].
//!
//! Split by concern: `config` (settings and request shapes), `units` (micro-units and
//! base units), `sign` (compile, sign, verify, encode), `reconcile` (where a signed
//! transaction stands; broadcasts), `provision` (zero-SOL token accounts), `send`
//! (sponsored, journaled sends) and `readiness`; this file holds the rail, its keys and
//! addresses, the scanner's reads and the [`Rail`] implementation.

use super::codec;
use super::journal::{SendRecord, SendState};
use super::rpc::{Commitment, RpcError, SignaturesQuery, SolanaRpc};
use super::scan;
use async_trait::async_trait;
use base64::Engine as _;
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    ChainAddress, Curve, Inbound, KeyPurpose, MemoryJournal, Rail, RailError, RailId, RailJournal,
    RailPayment, Readiness, ScanBatch, Signer, SignerError, SponsorCost, Submission,
    SubmissionStatus,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

mod config;
mod provision;
mod readiness;
mod reconcile;
mod send;
mod sign;
mod units;

use reconcile::Reconciled;

pub use config::{SolanaConfig, SolanaProvisioned, SolanaSend, SolanaSendResult};
pub use sign::{SignedTransaction, sign_transaction};
pub use units::{base_units_to_micros, micros_to_base_units};

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

/// What a landed send cost the service: the lamports its fee payer lost to it (fee and
/// the rent of the token accounts it created, see `SolanaSendInfo::fee_payer_spent_lamports`).
/// A transaction that landed and failed pays its fee all the same (the token accounts it
/// was to create are rolled back with the rest, so no rent): its `Failed` carries this
/// too. Only the landed transaction: an earlier attempt that expired unseen never landed,
/// so it was never charged. `None` while the finalized transaction could not be read.
fn cost_of(rec: &SendRecord) -> Option<SponsorCost> {
    rec.info
        .fee_payer_spent_lamports
        .map(|lamports| SponsorCost {
            native: u128::from(lamports),
            energy: 0,
            bandwidth: 0,
        })
}

fn addr(key: &Pubkey) -> ChainAddress {
    ChainAddress(key.to_string())
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

    /// The settings the rail was built with.
    pub fn config(&self) -> &SolanaConfig {
        &self.config
    }

    /// The node transport the rail reads and broadcasts through.
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
    fn rpc_endpoints(&self) -> Vec<stablecoin_core::ports::RpcEndpointHealth> {
        self.rpc.endpoints()
    }

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

    /// The two ATAs' rent is the service's and never comes back.
    fn prepare_wallet_pays_rent(&self) -> bool {
        true
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
                // Refused by the node: never reached the network, cost nothing.
                return Ok(SubmissionStatus::Failed {
                    reason: reason.clone(),
                    tx_hash: None,
                    cost: None,
                });
            }
            SendState::Expired => return Ok(SubmissionStatus::NotFound),
            SendState::Finalized { slot, err } => {
                let (slot, err) = (*slot, err.clone());
                if rec.info.fee_payer_spent_lamports.is_none() {
                    // Not read when it finalized (the read failed, or an older record):
                    // read it now, once.
                    if let Ok(sig) = Signature::from_str(&tx_hash) {
                        self.read_landed(&mut rec, &sig).await;
                        if rec.info.fee_payer_spent_lamports.is_some() {
                            self.journal_save(&rec).await?;
                        }
                    }
                }
                return Ok(match err {
                    None => SubmissionStatus::Confirmed {
                        tx_hash,
                        block: slot,
                        created_recipient_account: rec.info.created_recipient_ata,
                        cost: cost_of(&rec),
                    },
                    Some(reason) => SubmissionStatus::Failed {
                        reason,
                        tx_hash: Some(tx_hash),
                        cost: cost_of(&rec),
                    },
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
                // Failed or not, it landed and its fee payer paid for it.
                self.read_landed(&mut rec, &sig).await;
                self.journal_save(&rec).await?;
                Ok(match err {
                    None => SubmissionStatus::Confirmed {
                        tx_hash,
                        block: s.slot,
                        created_recipient_account: rec.info.created_recipient_ata,
                        cost: cost_of(&rec),
                    },
                    Some(reason) => SubmissionStatus::Failed {
                        reason,
                        tx_hash: Some(tx_hash),
                        cost: cost_of(&rec),
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
