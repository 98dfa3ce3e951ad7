//! A local `Signer` that derives every key from one master seed.
//!
//! Derivation: `HMAC-SHA512(seed, "stablecoin/v1/<curve>/<purpose path>/<counter>")`, first
//! 32 bytes, retried with the next counter in the (2^-128) case of an invalid secp256k1
//! scalar. So the same purpose always yields the same key on every machine that shares
//! the seed (durable addresses across restarts), and no key is ever stored. Production
//! deployments replace it with a KMS/HSM adapter of the same port.

use crate::ports::signer::{Curve, KeyPurpose, PublicKey, Signature, Signer, SignerError};
use async_trait::async_trait;
use hmac::{Hmac, Mac};
use sha2::Sha512;
use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

/// How many derived secp256k1 keys are kept (the cache is emptied when full).
const SECP_CACHE: usize = 4096;

/// A [`Signer`] holding a 32-byte master seed in memory, for tests, simulations and
/// single-host deployments (see the module docs for the derivation).
pub struct LocalSigner {
    seed: [u8; 32],
    /// Derived secp256k1 keys by purpose path. Deriving one is an HMAC plus a scalar
    /// multiplication for its public key (`SigningKey::from_bytes`), which was ~45% of
    /// the settlement worker's CPU on the simulated rails: every submission asks for the
    /// sender's address and a signature. The keys derive from the seed held here anyway,
    /// so keeping them adds nothing an attacker of this process's memory lacks; they are
    /// zeroized when dropped.
    secp: Mutex<HashMap<String, SecpKey>>,
}

/// One derived secp256k1 key, in the forms its uses need.
#[derive(Clone)]
struct SecpKey {
    /// The derivation's key (k256): its bytes for [`LocalSigner::secp256k1_secret`].
    k256: k256::ecdsa::SigningKey,
    /// The same secret for libsecp256k1, which signs. Why not k256: a signature is
    /// made for every payment the service submits, and k256's signing was ~15% of the
    /// settlement worker's CPU per transfer (issue 47's profile, 32 us of 212 us);
    /// libsecp256k1 (the C library Bitcoin Core uses) makes the identical RFC 6979
    /// signature, low-S, same recovery id, in about half the time
    /// (`libsecp256k1_signs_exactly_what_k256_signs`).
    secret: secp256k1::SecretKey,
    /// The compressed public key (33 bytes), computed once.
    public: [u8; 33],
}

impl SecpKey {
    fn new(k256: k256::ecdsa::SigningKey) -> Self {
        let secret = match secp256k1::SecretKey::from_slice(&k256.to_bytes()) {
            Ok(s) => s,
            // k256 accepted the scalar (non-zero, below the order): so does libsecp256k1.
            Err(_) => unreachable!("a valid k256 scalar is a valid libsecp256k1 secret"),
        };
        let public = secp256k1::PublicKey::from_secret_key(signing_context(), &secret).serialize();
        SecpKey {
            k256,
            secret,
            public,
        }
    }
}

/// libsecp256k1's signing context: built once (it holds precomputed tables).
fn signing_context() -> &'static secp256k1::Secp256k1<secp256k1::SignOnly> {
    static CONTEXT: std::sync::OnceLock<secp256k1::Secp256k1<secp256k1::SignOnly>> =
        std::sync::OnceLock::new();
    CONTEXT.get_or_init(secp256k1::Secp256k1::signing_only)
}

impl fmt::Debug for LocalSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LocalSigner { seed: <redacted> }")
    }
}

impl LocalSigner {
    /// A signer over `seed`: every process with the same seed derives the same keys, so
    /// keep the seed secret and stable (a new seed means new addresses).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        LocalSigner {
            seed,
            secp: Mutex::new(HashMap::new()),
        }
    }

    fn secret(&self, purpose: &KeyPurpose, curve: Curve, counter: u32) -> [u8; 32] {
        let mut mac = match Hmac::<Sha512>::new_from_slice(&self.seed) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        };
        let curve_name = match curve {
            Curve::Secp256k1 => "secp256k1",
            Curve::Ed25519 => "ed25519",
        };
        mac.update(format!("stablecoin/v1/{curve_name}/{}/{counter}", purpose.path()).as_bytes());
        let out = mac.finalize().into_bytes();
        let mut s = [0u8; 32];
        s.copy_from_slice(&out[..32]);
        s
    }

    fn secp_key(&self, purpose: &KeyPurpose) -> SecpKey {
        let path = purpose.path();
        // A panic elsewhere while holding the lock leaves a map of valid keys: use it.
        let lock = || self.secp.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = lock().get(&path) {
            return k.clone();
        }
        let k = SecpKey::new(self.derive_secp_key(purpose));
        let mut map = lock();
        if map.len() >= SECP_CACHE {
            map.clear();
        }
        map.insert(path, k.clone());
        k
    }

    fn derive_secp_key(&self, purpose: &KeyPurpose) -> k256::ecdsa::SigningKey {
        let mut counter = 0u32;
        loop {
            let s = self.secret(purpose, Curve::Secp256k1, counter);
            if let Ok(k) = k256::ecdsa::SigningKey::from_bytes(&s.into()) {
                return k;
            }
            counter += 1;
        }
    }

    fn ed_key(&self, purpose: &KeyPurpose) -> ed25519_dalek::SigningKey {
        ed25519_dalek::SigningKey::from_bytes(&self.secret(purpose, Curve::Ed25519, 0))
    }

    /// The raw 32-byte secp256k1 secret, for rails that need a chain SDK's own signer
    /// type (e.g. a local EVM signer in tests). Local signers only.
    pub fn secp256k1_secret(&self, purpose: &KeyPurpose) -> [u8; 32] {
        self.secp_key(purpose).k256.to_bytes().into()
    }

    /// The 32-byte ed25519 secret (seed), for the same reason.
    pub fn ed25519_secret(&self, purpose: &KeyPurpose) -> [u8; 32] {
        self.ed_key(purpose).to_bytes()
    }
}

#[async_trait]
impl Signer for LocalSigner {
    async fn public_key(
        &self,
        purpose: &KeyPurpose,
        curve: Curve,
    ) -> Result<PublicKey, SignerError> {
        let bytes = match curve {
            Curve::Secp256k1 => self.secp_key(purpose).public.to_vec(),
            Curve::Ed25519 => self.ed_key(purpose).verifying_key().to_bytes().to_vec(),
        };
        Ok(PublicKey { curve, bytes })
    }

    async fn sign(
        &self,
        purpose: &KeyPurpose,
        curve: Curve,
        payload: &[u8],
    ) -> Result<Signature, SignerError> {
        match curve {
            Curve::Secp256k1 => {
                if payload.len() != 32 {
                    return Err(SignerError::InvalidInput(format!(
                        "secp256k1 signs a 32-byte digest, got {} bytes",
                        payload.len()
                    )));
                }
                let mut digest = [0u8; 32];
                digest.copy_from_slice(payload);
                let key = self.secp_key(purpose);
                let (recid, rs) = signing_context()
                    .sign_ecdsa_recoverable(&secp256k1::Message::from_digest(digest), &key.secret)
                    .serialize_compact();
                let mut out = Vec::with_capacity(65);
                out.extend_from_slice(&rs);
                out.push(recid.to_i32() as u8);
                Ok(Signature(out))
            }
            Curve::Ed25519 => {
                use ed25519_dalek::Signer as _;
                Ok(Signature(
                    self.ed_key(purpose).sign(payload).to_bytes().to_vec(),
                ))
            }
        }
    }
}

/// The verification the simulated chain runs, moved to [`crate::domain::crypto`] (pure,
/// so a rail can use it without the in-memory adapters); kept here for existing imports.
pub use crate::domain::crypto::{verify_ed25519, verify_secp256k1};

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keys_are_deterministic_and_signatures_verify() {
        let a = LocalSigner::from_seed([7; 32]);
        let b = LocalSigner::from_seed([7; 32]);
        let other = LocalSigner::from_seed([8; 32]);
        let p = KeyPurpose::Wallet("wal_1".into());
        for curve in [Curve::Secp256k1, Curve::Ed25519] {
            let ka = a.public_key(&p, curve).await.unwrap();
            assert_eq!(ka, b.public_key(&p, curve).await.unwrap());
            assert_ne!(ka, other.public_key(&p, curve).await.unwrap());
            assert_ne!(
                ka,
                a.public_key(&KeyPurpose::Treasury, curve).await.unwrap()
            );
        }
        let digest = [42u8; 32];
        let pk = a.public_key(&p, Curve::Secp256k1).await.unwrap();
        let sig = a.sign(&p, Curve::Secp256k1, &digest).await.unwrap();
        assert_eq!(sig.0.len(), 65);
        assert!(verify_secp256k1(&pk.bytes, &digest, &sig.0));
        assert!(!verify_secp256k1(&pk.bytes, &[43u8; 32], &sig.0));
        assert!(a.sign(&p, Curve::Secp256k1, b"short").await.is_err());

        // A second call is served from the cache, and the cache holds the derived key.
        assert_eq!(a.secp_key(&p).k256, a.secp_key(&p).k256);
        assert_eq!(
            a.secp_key(&p).k256,
            LocalSigner::from_seed([7; 32]).derive_secp_key(&p)
        );
        assert_ne!(a.secp_key(&p).k256, a.secp_key(&KeyPurpose::Treasury).k256);

        let pk = a.public_key(&p, Curve::Ed25519).await.unwrap();
        let sig = a.sign(&p, Curve::Ed25519, b"hello").await.unwrap();
        assert!(verify_ed25519(&pk.bytes, b"hello", &sig.0));
        assert!(!verify_ed25519(&pk.bytes, b"hellp", &sig.0));
    }

    /// The signatures are k256's, byte for byte: the same RFC 6979 nonce, the low-S
    /// form, the same recovery id (which an EVM or TRON transaction carries as `v`).
    /// Real chains check these (the rails' tests on Anvil and the TRON node); this pins
    /// the swap of signing library to "nothing a chain could see changed".
    #[tokio::test]
    async fn libsecp256k1_signs_exactly_what_k256_signs() {
        for seed in 0..8u8 {
            let signer = LocalSigner::from_seed([seed; 32]);
            for (n, purpose) in [
                KeyPurpose::Treasury,
                KeyPurpose::Wallet(format!("wal_{seed}")),
            ]
            .into_iter()
            .enumerate()
            {
                let reference = signer.derive_secp_key(&purpose);
                let public = signer.public_key(&purpose, Curve::Secp256k1).await.unwrap();
                assert_eq!(
                    public.bytes,
                    reference.verifying_key().to_encoded_point(true).as_bytes()
                );
                for i in 0..16u8 {
                    let mut digest = [i; 32];
                    digest[0] = seed;
                    digest[1] = n as u8;
                    let (sig, recid) = reference.sign_prehash_recoverable(&digest).unwrap();
                    let mut expected = sig.to_bytes().to_vec();
                    expected.push(recid.to_byte());
                    let ours = signer
                        .sign(&purpose, Curve::Secp256k1, &digest)
                        .await
                        .unwrap();
                    assert_eq!(ours.0, expected, "seed {seed}, purpose {n}, digest {i}");
                }
            }
        }
    }

    /// The C verification agrees with k256's on what a chain must refuse: another
    /// digest or key, a high-S twin of a valid signature (malleability), a signature or
    /// digest of the wrong length, and a key that is not on the curve.
    #[tokio::test]
    async fn the_verification_refuses_what_k256_refuses() {
        use k256::ecdsa::signature::hazmat::PrehashVerifier;
        let signer = LocalSigner::from_seed([9; 32]);
        let p = KeyPurpose::Treasury;
        let pk = signer.public_key(&p, Curve::Secp256k1).await.unwrap();
        let other = signer
            .public_key(&KeyPurpose::Wallet("w".into()), Curve::Secp256k1)
            .await
            .unwrap();
        let k256_ok = |key: &[u8], digest: &[u8; 32], sig: &[u8]| {
            let Ok(vk) = k256::ecdsa::VerifyingKey::from_sec1_bytes(key) else {
                return false;
            };
            let Ok(s) = k256::ecdsa::Signature::from_slice(&sig[..64]) else {
                return false;
            };
            vk.verify_prehash(digest, &s).is_ok()
        };
        for i in 0..32u8 {
            let digest = [i; 32];
            let sig = signer.sign(&p, Curve::Secp256k1, &digest).await.unwrap().0;
            assert!(verify_secp256k1(&pk.bytes, &digest, &sig));
            assert!(k256_ok(&pk.bytes, &digest, &sig));
            assert!(!verify_secp256k1(&other.bytes, &digest, &sig));
            assert!(!verify_secp256k1(&pk.bytes, &[i ^ 1; 32], &sig));
            // The high-S twin: s' = n - s verifies in plain ECDSA; both refuse it.
            let s = k256::ecdsa::Signature::from_slice(&sig[..64]).unwrap();
            let high = k256::ecdsa::Signature::from_scalars(s.r(), -*s.s()).unwrap();
            let mut twin = high.to_bytes().to_vec();
            twin.push(sig[64]);
            assert!(!k256_ok(&pk.bytes, &digest, &twin));
            assert!(!verify_secp256k1(&pk.bytes, &digest, &twin));
            assert!(!verify_secp256k1(&pk.bytes, &digest, &sig[..64]));
            assert!(!verify_secp256k1(&pk.bytes, &digest[..31], &sig));
        }
        let mut off_curve = pk.bytes.clone();
        off_curve[0] = 0x05;
        assert!(!verify_secp256k1(&off_curve, &[0; 32], &[0; 65]));
        assert!(!verify_secp256k1(&[], &[0; 32], &[0; 65]));
    }
}
