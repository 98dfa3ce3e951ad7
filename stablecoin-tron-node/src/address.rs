//! The node's own address codec (base58check, hex, the EVM view of an address) and
//! signature recovery (k256), independent of the rail's.

use crate::Addr;
use sha2::Digest;
use sha3::Keccak256;

// ---- address codec (node-side) --------------------------------------------------------

/// The `T...` base58check form of an address, as wallets and explorers show it.
pub fn addr_to_base58(a: &Addr) -> String {
    bs58::encode(a).with_check().into_string()
}

/// Parses a `T...` base58check address; `None` for a bad checksum, a wrong length or a
/// prefix other than 0x41.
pub fn addr_from_base58(s: &str) -> Option<Addr> {
    let v = bs58::decode(s).with_check(None).into_vec().ok()?;
    let a: Addr = v.as_slice().try_into().ok()?;
    (a[0] == 0x41).then_some(a)
}

pub(crate) fn addr_from_json(s: &str) -> Option<Addr> {
    if s.starts_with('T') {
        return addr_from_base58(s);
    }
    let v = hex::decode(s).ok()?;
    let a: Addr = v.as_slice().try_into().ok()?;
    (a[0] == 0x41).then_some(a)
}

pub(crate) fn addr_from_bytes(b: &[u8]) -> Option<Addr> {
    let a: Addr = b.try_into().ok()?;
    (a[0] == 0x41).then_some(a)
}

pub(crate) fn evm(a: &Addr) -> [u8; 20] {
    a[1..].try_into().unwrap()
}

pub(crate) fn from_evm(e: &[u8]) -> Addr {
    let mut a = [0u8; 21];
    a[0] = 0x41;
    a[1..].copy_from_slice(e);
    a
}

pub(crate) fn recover(txid: &[u8; 32], sig: &[u8]) -> Result<Addr, String> {
    if sig.len() < 65 {
        return Err(format!("Signature size is {}", sig.len()));
    }
    let v = if sig[64] >= 27 { sig[64] - 27 } else { sig[64] };
    let recid = k256::ecdsa::RecoveryId::from_byte(v).ok_or("Header byte out of range")?;
    let s = k256::ecdsa::Signature::from_slice(&sig[..64]).map_err(|e| e.to_string())?;
    let key = k256::ecdsa::VerifyingKey::recover_from_prehash(txid, &s, recid)
        .map_err(|e| e.to_string())?;
    let point = key.to_encoded_point(false);
    Ok(from_evm(&Keccak256::digest(&point.as_bytes()[1..])[12..]))
}
