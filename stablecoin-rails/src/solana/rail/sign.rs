//! The one path every rail transaction takes: compile, sign through the `Signer` port,
//! verify, encode.

use super::{codec_err, rejected, signer_err};
use crate::solana::codec;
use solana_instruction::Instruction;
use solana_pubkey::Pubkey;
use solana_signature::Signature;
use stablecoin_core::domain::crypto::verify_ed25519;
use stablecoin_core::ports::{Curve, KeyPurpose, RailError, Signer};

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
