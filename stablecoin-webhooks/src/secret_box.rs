//! Webhook secrets at rest: sealed with AES-256-GCM-SIV under a key-encryption key.
//!
//! The delivery worker needs each endpoint's signing secret in the clear to sign, so a
//! one-way hash (as for API keys) cannot work; instead the secret is encrypted, and a copy
//! of the database alone (a backup, a dump, a stolen disk) does not reveal it.
//!
//! - The key-encryption key is derived from the master seed (`HMAC-SHA256(seed,
//!   "stablecoin/webhook-secret-key/v1")`) or configured on its own.
//! - AES-GCM-SIV resists nonce reuse: a repeated nonce reveals only that two sealed
//!   secrets are equal, never the key or the plaintext.
//! - The endpoint id is the associated data: a sealed secret copied onto another
//!   endpoint's record does not open there.
//! - Sealed text is `v1:` + base64 of nonce (12 bytes) and ciphertext with its tag.

use aes_gcm_siv::aead::{Aead, KeyInit, Payload};
use aes_gcm_siv::{Aes256GcmSiv, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const PREFIX: &str = "v1:";

/// The key-encryption key of webhook secrets.
#[derive(Clone)]
pub struct SecretKey([u8; 32]);

impl SecretKey {
    /// A configured key-encryption key (32 random bytes, kept apart from the database).
    pub fn new(bytes: [u8; 32]) -> Self {
        SecretKey(bytes)
    }

    /// The key of a master seed: every process of a deployment derives the same one.
    pub fn from_master_seed(seed: &[u8; 32]) -> Self {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(seed).expect("HMAC accepts a key of any length");
        mac.update(b"stablecoin/webhook-secret-key/v1");
        SecretKey(mac.finalize().into_bytes().into())
    }

    /// Seals `secret` for the record `bound_to` (its id). `nonce` must be random.
    pub fn seal(&self, secret: &str, bound_to: &str, nonce: [u8; 12]) -> String {
        let cipher = Aes256GcmSiv::new((&self.0).into());
        let sealed = cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: secret.as_bytes(),
                    aad: bound_to.as_bytes(),
                },
            )
            .expect("AES-GCM-SIV encrypts any message below 2^36 bytes");
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        format!("{PREFIX}{}", STANDARD.encode(bytes))
    }

    /// Opens what [`SecretKey::seal`] sealed for `bound_to`. `None` when the text is not
    /// sealed, was sealed with another key or for another record, or was altered.
    pub fn open(&self, sealed: &str, bound_to: &str) -> Option<String> {
        let bytes = STANDARD.decode(sealed.strip_prefix(PREFIX)?).ok()?;
        if bytes.len() < 12 + 16 {
            return None;
        }
        let (nonce, ciphertext) = bytes.split_at(12);
        let cipher = Aes256GcmSiv::new((&self.0).into());
        let plain = cipher
            .decrypt(
                Nonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: bound_to.as_bytes(),
                },
            )
            .ok()?;
        String::from_utf8(plain).ok()
    }

    /// Whether a stored value is sealed (records written before secrets were sealed hold
    /// the plain secret; they are sealed when next written).
    pub fn is_sealed(stored: &str) -> bool {
        stored.starts_with(PREFIX)
    }
}

/// Redacted: the key never appears in logs.
impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_with_its_key_and_record() {
        let k = SecretKey::from_master_seed(&[7; 32]);
        let secret = "whsec_3q2+7w==";
        let sealed = k.seal(secret, "whe_1", [1; 12]);
        assert!(SecretKey::is_sealed(&sealed));
        assert!(!sealed.contains(secret));
        assert_eq!(k.open(&sealed, "whe_1").as_deref(), Some(secret));
        assert_eq!(k.open(&sealed, "whe_2"), None, "bound to its record");
        let other = SecretKey::from_master_seed(&[8; 32]);
        assert_eq!(other.open(&sealed, "whe_1"), None, "another key");
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 3;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        assert_eq!(k.open(&String::from_utf8(tampered).unwrap(), "whe_1"), None);
        assert_eq!(k.open(secret, "whe_1"), None, "plain text is not sealed");
        assert_eq!(k.open("v1:AAAA", "whe_1"), None);
        assert_ne!(sealed, k.seal(secret, "whe_1", [2; 12]), "nonces differ");
        assert_eq!(format!("{k:?}"), "SecretKey(<redacted>)");
    }
}
