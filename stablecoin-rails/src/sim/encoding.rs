//! Text forms of the simulated chain: hex, base58, addresses and transaction hashes.
//!
//! EVM and TRON addresses here are SIMULATED: they are derived from the SHA-256 of the
//! compressed secp256k1 public key, not from the Keccak-256 of the uncompressed key (and,
//! for EVM, not from the CREATE2 smart-account derivation). They have the right shape
//! (`0x` + 40 lowercase hex; base58check `T...` with the 0x41 prefix) but are not the
//! addresses a real chain would give the same key. The real derivations belong to the
//! `evm` and `tron` rails. The Solana address (base58 of the 32-byte ed25519 public
//! key) is the real Solana form.

use super::SimProfile;
use sha2::{Digest, Sha256};
use stablecoin_core::ports::{ChainAddress, RailError};

const BASE58_ALPHABET: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const TRON_PREFIX: u8 = 0x41;

pub(crate) fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    s
}

pub(crate) fn base58_encode(bytes: &[u8]) -> String {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    // Little-endian base-58 digits of the big-endian number.
    let mut digits: Vec<u8> = Vec::with_capacity(bytes.len() * 138 / 100 + 1);
    for &byte in &bytes[zeros..] {
        let mut carry = u32::from(byte);
        for d in digits.iter_mut() {
            carry += u32::from(*d) << 8;
            *d = (carry % 58) as u8;
            carry /= 58;
        }
        while carry > 0 {
            digits.push((carry % 58) as u8);
            carry /= 58;
        }
    }
    let mut out = String::with_capacity(zeros + digits.len());
    out.extend(std::iter::repeat_n('1', zeros));
    out.extend(
        digits
            .iter()
            .rev()
            .map(|d| BASE58_ALPHABET[usize::from(*d)] as char),
    );
    out
}

pub(crate) fn base58_decode(text: &str) -> Option<Vec<u8>> {
    let zeros = text.bytes().take_while(|c| *c == b'1').count();
    // Little-endian base-256 bytes of the number.
    let mut bytes: Vec<u8> = Vec::with_capacity(text.len());
    for c in text.bytes().skip(zeros) {
        let value = BASE58_ALPHABET.iter().position(|a| *a == c)?;
        let mut carry = value as u32;
        for b in bytes.iter_mut() {
            carry += u32::from(*b) * 58;
            *b = (carry & 0xff) as u8;
            carry >>= 8;
        }
        while carry > 0 {
            bytes.push((carry & 0xff) as u8);
            carry >>= 8;
        }
    }
    let mut out = vec![0u8; zeros];
    out.extend(bytes.iter().rev());
    Some(out)
}

fn base58check_encode(payload: &[u8]) -> String {
    let check = sha256(&[&sha256(&[payload])]);
    let mut full = payload.to_vec();
    full.extend_from_slice(&check[..4]);
    base58_encode(&full)
}

fn base58check_decode(text: &str) -> Option<Vec<u8>> {
    let full = base58_decode(text)?;
    if full.len() < 4 {
        return None;
    }
    let (payload, check) = full.split_at(full.len() - 4);
    (sha256(&[&sha256(&[payload])])[..4] == *check).then(|| payload.to_vec())
}

/// The simulated 20-byte account hash of a public key (see the module docs).
fn account_hash(domain: &[u8], public_key: &[u8]) -> [u8; 20] {
    let digest = sha256(&[domain, public_key]);
    let mut out = [0u8; 20];
    out.copy_from_slice(&digest[12..]);
    out
}

/// The address of a public key in the profile's text form.
pub(crate) fn address_from_public_key(profile: SimProfile, public_key: &[u8]) -> ChainAddress {
    match profile {
        SimProfile::Evm(_) => {
            let h = account_hash(b"stablecoin-sim/evm-address", public_key);
            ChainAddress(format!("0x{}", hex(&h)))
        }
        SimProfile::Tron => {
            let h = account_hash(b"stablecoin-sim/tron-address", public_key);
            let mut payload = vec![TRON_PREFIX];
            payload.extend_from_slice(&h);
            ChainAddress(base58check_encode(&payload))
        }
        SimProfile::Solana => ChainAddress(base58_encode(public_key)),
    }
}

/// The fixed external address deposits made with `SimRail::mint` come from.
pub(crate) fn faucet_address(profile: SimProfile) -> ChainAddress {
    let seed = sha256(&[b"stablecoin-sim/faucet"]);
    address_from_public_key(profile, &seed)
}

/// Validates an address for the profile and returns its canonical form (EVM addresses
/// are lower-cased, so a checksummed address names the same account).
pub(crate) fn normalize_address(
    profile: SimProfile,
    address: &ChainAddress,
) -> Result<ChainAddress, RailError> {
    let text = address.0.as_str();
    let invalid = |reason: &str| RailError::InvalidAddress {
        address: text.chars().take(128).collect(),
        reason: reason.to_string(),
    };
    match profile {
        SimProfile::Evm(_) => {
            let body = text
                .strip_prefix("0x")
                .ok_or_else(|| invalid("EVM address must start with 0x"))?;
            if body.len() != 40 || !body.bytes().all(|c| c.is_ascii_hexdigit()) {
                return Err(invalid("EVM address must be 0x followed by 40 hex digits"));
            }
            Ok(ChainAddress(format!("0x{}", body.to_ascii_lowercase())))
        }
        SimProfile::Tron => {
            if text.len() != 34 || !text.starts_with('T') {
                return Err(invalid(
                    "TRON address must be 34 characters starting with T",
                ));
            }
            let payload = base58check_decode(text)
                .ok_or_else(|| invalid("TRON address is not valid base58check"))?;
            if payload.len() != 21 || payload[0] != TRON_PREFIX {
                return Err(invalid(
                    "TRON address must carry the 0x41 prefix and 20 bytes",
                ));
            }
            Ok(address.clone())
        }
        SimProfile::Solana => {
            let bytes =
                base58_decode(text).ok_or_else(|| invalid("Solana address is not base58"))?;
            if bytes.len() != 32 {
                return Err(invalid("Solana address must decode to 32 bytes"));
            }
            Ok(address.clone())
        }
    }
}

/// A transaction hash in the profile's text form, derived from a seed (the payment id).
pub(crate) fn tx_hash(profile: SimProfile, kind: &[u8], seed: &[u8]) -> String {
    let chain = profile.chain_tag();
    let len = (seed.len() as u64).to_be_bytes();
    let first = sha256(&[b"stablecoin-sim/tx", kind, &len, seed, chain.as_bytes()]);
    match profile {
        SimProfile::Evm(_) => format!("0x{}", hex(&first)),
        SimProfile::Tron => hex(&first),
        SimProfile::Solana => {
            let second = sha256(&[&first, b"stablecoin-sim/tx/2"]);
            let mut sig = first.to_vec();
            sig.extend_from_slice(&second);
            base58_encode(&sig)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base58_known_vectors() {
        assert_eq!(base58_encode(b""), "");
        assert_eq!(base58_encode(&[0]), "1");
        assert_eq!(base58_encode(&[0, 0, 1]), "112");
        assert_eq!(base58_encode(b"hello world"), "StV1DL6CwTryKyV");
        // The Solana system program id is 32 zero bytes.
        assert_eq!(
            base58_encode(&[0u8; 32]),
            "11111111111111111111111111111111"
        );
        assert_eq!(base58_decode("StV1DL6CwTryKyV").unwrap(), b"hello world");
        assert_eq!(base58_decode("112").unwrap(), vec![0, 0, 1]);
        assert!(base58_decode("0OIl").is_none());
    }

    #[test]
    fn base58_round_trips() {
        for n in 0u8..64 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37).wrapping_add(n)).collect();
            assert_eq!(base58_decode(&base58_encode(&bytes)).unwrap(), bytes);
        }
    }

    #[test]
    fn known_tron_address_validates() {
        // The TRON USDT contract address: a real base58check T-address.
        let usdt = ChainAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t".into());
        assert_eq!(normalize_address(SimProfile::Tron, &usdt).unwrap(), usdt);
        let broken = ChainAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u".into());
        assert!(normalize_address(SimProfile::Tron, &broken).is_err());
    }

    #[test]
    fn evm_addresses_are_lower_cased() {
        let mixed = ChainAddress("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48".into());
        let n = normalize_address(SimProfile::Evm(1), &mixed).unwrap();
        assert_eq!(n.0, "0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48");
        assert!(normalize_address(SimProfile::Evm(1), &ChainAddress("0x12".into())).is_err());
        assert!(normalize_address(SimProfile::Evm(1), &ChainAddress("a0b8".into())).is_err());
    }

    #[test]
    fn faucet_addresses_are_valid() {
        for p in [SimProfile::Evm(137), SimProfile::Tron, SimProfile::Solana] {
            let f = faucet_address(p);
            assert_eq!(normalize_address(p, &f).unwrap(), f);
        }
    }

    #[test]
    fn tx_hash_formats() {
        let evm = tx_hash(SimProfile::Evm(137), b"p", b"id-1");
        assert!(evm.starts_with("0x") && evm.len() == 66);
        let tron = tx_hash(SimProfile::Tron, b"p", b"id-1");
        assert!(tron.len() == 64 && tron.bytes().all(|c| c.is_ascii_hexdigit()));
        let sol = tx_hash(SimProfile::Solana, b"p", b"id-1");
        assert_eq!(base58_decode(&sol).unwrap().len(), 64);
        // Chain-scoped and deterministic.
        assert_ne!(evm, tx_hash(SimProfile::Evm(8453), b"p", b"id-1"));
        assert_eq!(evm, tx_hash(SimProfile::Evm(137), b"p", b"id-1"));
    }
}
