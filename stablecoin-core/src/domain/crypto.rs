//! Signature verification: pure functions of their bytes (no key, no clock, no I/O).
//!
//! Why in the domain: the simulated chain checks every payment's signature and the
//! Solana rail checks its own before sending, and neither should need the in-memory
//! adapters (`memory`, where the signer that makes these signatures lives) to do it.
//! Behind the feature `crypto`, which brings the two verification libraries; `memory`
//! turns it on.

/// Verifies a 65-byte r||s||v secp256k1 signature over a 32-byte digest against a
/// compressed public key. Used by the simulated chain; real chains verify on chain.
///
/// Through libsecp256k1 (the C library Bitcoin Core uses), not k256: a chain checks
/// every payment's signature, and k256's verification (~150 us) was most of the
/// simulated chain's CPU per settlement; libsecp256k1 takes ~59 us. The rule is the
/// same in both: a high-S signature is refused (as by k256's `verify_prehash`), and the
/// signer produces low-S ones.
pub fn verify_secp256k1(public: &[u8], digest: &[u8], sig: &[u8]) -> bool {
    static CONTEXT: std::sync::OnceLock<secp256k1::Secp256k1<secp256k1::VerifyOnly>> =
        std::sync::OnceLock::new();
    let ctx = CONTEXT.get_or_init(secp256k1::Secp256k1::verification_only);
    let (Ok(digest), 65) = (<[u8; 32]>::try_from(digest), sig.len()) else {
        return false;
    };
    let Ok(key) = secp256k1::PublicKey::from_slice(public) else {
        return false;
    };
    let Ok(s) = secp256k1::ecdsa::Signature::from_compact(&sig[..64]) else {
        return false;
    };
    ctx.verify_ecdsa(&secp256k1::Message::from_digest(digest), &s, &key)
        .is_ok()
}

/// Verifies an ed25519 signature.
pub fn verify_ed25519(public: &[u8], message: &[u8], sig: &[u8]) -> bool {
    let Ok(pk) = <[u8; 32]>::try_from(public) else {
        return false;
    };
    let Ok(vk) = ed25519_dalek::VerifyingKey::from_bytes(&pk) else {
        return false;
    };
    let Ok(sig) = <[u8; 64]>::try_from(sig) else {
        return false;
    };
    vk.verify_strict(message, &ed25519_dalek::Signature::from_bytes(&sig))
        .is_ok()
}
