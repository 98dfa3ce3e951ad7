//! Settings of the Solana rail and the shapes of its own operations (provisioning,
//! sends by asset name).

use crate::solana::{SolanaFeePolicy, SolanaSendInfo, codec};
use serde::{Deserialize, Serialize};
use solana_pubkey::Pubkey;
use stablecoin_core::domain::money::Token;
use stablecoin_core::ports::{ChainAddress, KeyPurpose, PaymentLeg, Submission};

/// Settings of a [`SolanaRail`](super::SolanaRail).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SolanaConfig {
    /// The mint of [`Token::Usdc`] (mainnet: [`codec::MAINNET_USDC_MINT`]).
    pub usdc_mint: Pubkey,
    /// The mint of [`Token::Usdt`] (mainnet: [`codec::MAINNET_USDT_MINT`]).
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
    /// Each send's compute-unit limit and price (priority fee), see
    /// [`fees`](crate::solana::fees).
    pub fees: SolanaFeePolicy,
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
            fees: SolanaFeePolicy::default(),
        }
    }

    /// The configured mint of `token`.
    pub fn mint(&self, token: Token) -> Pubkey {
        match token {
            Token::Usdc => self.usdc_mint,
            Token::Usdt => self.usdt_mint,
        }
    }

    pub(super) fn mints(&self) -> [(Token, Pubkey); 2] {
        [(Token::Usdc, self.usdc_mint), (Token::Usdt, self.usdt_mint)]
    }
}

/// Result of [`SolanaRail::provision`](super::SolanaRail::provision).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolanaProvisioned {
    /// The customer's durable wallet address (its ed25519 key for the phone).
    pub address: ChainAddress,
    /// The wallet's USDC associated token account (where USDC deposits go).
    pub usdc_ata: ChainAddress,
    /// The wallet's USDT associated token account.
    pub usdt_ata: ChainAddress,
    /// `true` when this call created at least one of the two accounts (the service paid
    /// the rent); `false` when both already existed.
    pub created: bool,
    /// The finalized provisioning transaction, when one was needed.
    pub signature: Option<String>,
}

/// A send by asset name or mint address ([`SolanaRail::send`](super::SolanaRail::send)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolanaSend {
    /// Idempotency id of the payment.
    pub id: String,
    /// The sender's key (e.g. a customer wallet); it signs as token authority.
    pub from: KeyPurpose,
    /// `USDC`, `USDT`, or one of their mint addresses. Native SOL, wrapped SOL and any
    /// other mint are refused.
    pub asset: String,
    /// The recipients and amounts (micro-units), paid in one transaction.
    pub legs: Vec<PaymentLeg>,
}

/// What [`SolanaRail::send`](super::SolanaRail::send) and
/// [`SolanaRail::submit_with_info`](super::SolanaRail::submit_with_info) return.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SolanaSendResult {
    /// The acknowledgement `Rail::submit` gives (`tx_hash`: the signature).
    pub submission: Submission,
    /// What the send did: fee payer, token accounts created, rent paid.
    pub info: SolanaSendInfo,
}
