//! `Signer`: key custody. A KMS/HSM adapter replaces the local one; keys never leave it.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::fmt;
use thiserror::Error;

/// What a key is for. The text form is the derivation path of local signers, so the
/// same purpose always yields the same key from the same master seed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "type", content = "id", rename_all = "snake_case")]
pub enum KeyPurpose {
    /// A customer wallet (by wallet id: survives phone changes).
    Wallet(String),
    /// A customer wallet keyed by phone (Solana: the same phone always gets the same address).
    PhoneWallet(String),
    /// A per-deal escrow address.
    EscrowDeal(String),
    /// A checkout payment session's deposit address (by session id): one per session,
    /// never reused.
    CheckoutSession(String),
    /// The service treasury that funds customer wallets.
    Treasury,
    /// The account that sponsors gas / fees.
    Sponsor,
    /// The service fee collection address.
    ServiceFees,
}

impl KeyPurpose {
    /// The derivation path of this purpose (`wallet/<id>`, `service/treasury`, ...):
    /// stable, so a key never changes for a purpose.
    pub fn path(&self) -> String {
        match self {
            KeyPurpose::Wallet(id) => format!("wallet/{id}"),
            KeyPurpose::PhoneWallet(p) => format!("phone/{p}"),
            KeyPurpose::EscrowDeal(id) => format!("escrow/{id}"),
            KeyPurpose::CheckoutSession(id) => format!("checkout/{id}"),
            KeyPurpose::Treasury => "service/treasury".into(),
            KeyPurpose::Sponsor => "service/sponsor".into(),
            KeyPurpose::ServiceFees => "service/fees".into(),
        }
    }
}

impl fmt::Display for KeyPurpose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path())
    }
}

/// The signature scheme of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Curve {
    /// ECDSA on secp256k1 (EVM chains and TRON).
    Secp256k1,
    /// Ed25519 (Solana).
    Ed25519,
}

/// A public key: SEC1 compressed (33 bytes) for secp256k1, 32 bytes for ed25519.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PublicKey {
    /// The scheme the key belongs to; it decides the length of `bytes`.
    pub curve: Curve,
    /// The encoded key: 33 bytes (SEC1 compressed) or 32 bytes (ed25519).
    pub bytes: Vec<u8>,
}

/// A signature: secp256k1 as r||s||v (65 bytes, v = recovery id 0/1) over a 32-byte
/// digest; ed25519 as 64 bytes over the message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature(pub Vec<u8>);

/// Why a signer could not give a key or a signature.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SignerError {
    /// The request is wrong (e.g. a secp256k1 payload that is not 32 bytes); retrying
    /// cannot help.
    #[error("invalid input to sign: {0}")]
    InvalidInput(String),
    /// The custody backend could not answer (KMS/HSM down); the same call may succeed
    /// later.
    #[error("signer unavailable: {0}")]
    Unavailable(String),
}

/// Key custody: derives keys by purpose and signs with them; the private keys never leave
/// it.
#[async_trait]
pub trait Signer: Send + Sync {
    /// The public key of `purpose` on `curve` (the same on every call).
    async fn public_key(
        &self,
        purpose: &KeyPurpose,
        curve: Curve,
    ) -> Result<PublicKey, SignerError>;
    /// secp256k1: `payload` is a 32-byte digest; ed25519: the message itself.
    async fn sign(
        &self,
        purpose: &KeyPurpose,
        curve: Curve,
        payload: &[u8],
    ) -> Result<Signature, SignerError>;
}
