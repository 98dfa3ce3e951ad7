//! TRON account addresses: 21 bytes (`0x41` ++ the last 20 bytes of the Keccak-256 of
//! the uncompressed secp256k1 public key without its `0x04` tag), written as Base58Check
//! (`T...`, 34 characters) or as 42 hex characters (`41...`).

use sha2::{Digest as _, Sha256};
use sha3::Keccak256;
use std::fmt;
use std::str::FromStr;
use thiserror::Error;

/// The mainnet (and Nile/Shasta) address prefix byte.
pub const ADDRESS_PREFIX: u8 = 0x41;
/// Length of the binary address: prefix + 20 bytes.
pub const ADDRESS_LEN: usize = 21;

/// Why a text or byte address is not a TRON address. Each variant has a stable
/// [`code`](AddressError::code).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AddressError {
    /// An empty string.
    #[error("empty address")]
    Empty,
    /// An ASCII character outside the Base58 alphabet (`0`, `O`, `I`, `l`, punctuation, ...).
    #[error("invalid base58 character {character:?} at position {index}")]
    InvalidCharacter {
        /// The offending character.
        character: char,
        /// Its byte offset in the text.
        index: usize,
    },
    /// The Base58Check checksum does not match: a mistyped address.
    #[error("base58check checksum mismatch")]
    BadChecksum,
    /// A payload that is not 21 bytes.
    #[error("wrong length: {len} bytes decoded, 21 expected")]
    WrongLength {
        /// The decoded length, in bytes (Base58Check: without its 4-byte checksum).
        len: usize,
    },
    /// A first byte other than [`ADDRESS_PREFIX`] (e.g. a 20-byte EVM address padded out).
    #[error("wrong prefix byte 0x{prefix:02x}, 0x41 expected")]
    WrongPrefix {
        /// The first byte found.
        prefix: u8,
    },
    /// Hex that does not decode, or Base58 that fails otherwise than on a bad character
    /// (e.g. a non-ASCII one).
    #[error("invalid hex address: {reason}")]
    InvalidHex {
        /// The decoder's description.
        reason: String,
    },
    /// Bytes that are not a SEC1 secp256k1 public key (in [`TronAddress::from_public_key`]).
    #[error("invalid secp256k1 public key: {reason}")]
    InvalidPublicKey {
        /// k256's description.
        reason: String,
    },
}

impl AddressError {
    /// A stable machine code per variant.
    pub fn code(&self) -> &'static str {
        match self {
            AddressError::Empty => "TRON_ADDRESS_EMPTY",
            AddressError::InvalidCharacter { .. } => "TRON_ADDRESS_INVALID_CHARACTER",
            AddressError::BadChecksum => "TRON_ADDRESS_BAD_CHECKSUM",
            AddressError::WrongLength { .. } => "TRON_ADDRESS_WRONG_LENGTH",
            AddressError::WrongPrefix { .. } => "TRON_ADDRESS_WRONG_PREFIX",
            AddressError::InvalidHex { .. } => "TRON_ADDRESS_INVALID_HEX",
            AddressError::InvalidPublicKey { .. } => "TRON_INVALID_PUBLIC_KEY",
        }
    }
}

/// A validated TRON address (always carries the `0x41` prefix).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TronAddress([u8; ADDRESS_LEN]);

impl TronAddress {
    /// From 21 bytes; the first must be `0x41`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, AddressError> {
        if bytes.len() != ADDRESS_LEN {
            return Err(AddressError::WrongLength { len: bytes.len() });
        }
        if bytes[0] != ADDRESS_PREFIX {
            return Err(AddressError::WrongPrefix { prefix: bytes[0] });
        }
        let mut a = [0u8; ADDRESS_LEN];
        a.copy_from_slice(bytes);
        Ok(TronAddress(a))
    }

    /// From the 20-byte EVM form (as in ABI words and event topics).
    pub fn from_evm_bytes(bytes: &[u8; 20]) -> Self {
        let mut a = [0u8; ADDRESS_LEN];
        a[0] = ADDRESS_PREFIX;
        a[1..].copy_from_slice(bytes);
        TronAddress(a)
    }

    /// From a SEC1 secp256k1 public key, compressed (33 bytes, what the
    /// [`Signer`](stablecoin_core::ports::Signer) port returns) or uncompressed (65).
    pub fn from_public_key(public_key: &[u8]) -> Result<Self, AddressError> {
        let key = k256::PublicKey::from_sec1_bytes(public_key).map_err(|e| {
            AddressError::InvalidPublicKey {
                reason: e.to_string(),
            }
        })?;
        Ok(Self::from_verifying_key(&k256::ecdsa::VerifyingKey::from(
            key,
        )))
    }

    pub(crate) fn from_verifying_key(key: &k256::ecdsa::VerifyingKey) -> Self {
        let uncompressed = key.to_encoded_point(false);
        let hash = Keccak256::digest(&uncompressed.as_bytes()[1..]);
        let mut evm = [0u8; 20];
        evm.copy_from_slice(&hash[12..]);
        Self::from_evm_bytes(&evm)
    }

    /// Parses Base58Check (`T...`) or hex (`41` + 40 hex digits, optional `0x`).
    pub fn parse(text: &str) -> Result<Self, AddressError> {
        if text.is_empty() {
            return Err(AddressError::Empty);
        }
        let hex_body = text.strip_prefix("0x").unwrap_or(text);
        if hex_body.len() == 2 * ADDRESS_LEN && hex_body.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Self::from_hex(hex_body);
        }
        Self::from_base58(text)
    }

    /// Parses the Base58Check form only.
    pub fn from_base58(text: &str) -> Result<Self, AddressError> {
        if text.is_empty() {
            return Err(AddressError::Empty);
        }
        let decoded = bs58::decode(text).into_vec().map_err(|e| match e {
            bs58::decode::Error::InvalidCharacter { character, index } => {
                AddressError::InvalidCharacter { character, index }
            }
            other => AddressError::InvalidHex {
                reason: other.to_string(),
            },
        })?;
        if decoded.len() < 4 {
            return Err(AddressError::WrongLength { len: decoded.len() });
        }
        let (payload, checksum) = decoded.split_at(decoded.len() - 4);
        if payload.len() != ADDRESS_LEN {
            // Report the length before the checksum: a truncated or padded address is a
            // length problem whatever its last four bytes are.
            return Err(AddressError::WrongLength { len: payload.len() });
        }
        if checksum != &double_sha256(payload)[..4] {
            return Err(AddressError::BadChecksum);
        }
        Self::from_bytes(payload)
    }

    /// Parses the hex form (`41` + 40 hex digits).
    pub fn from_hex(text: &str) -> Result<Self, AddressError> {
        let bytes = hex::decode(text.strip_prefix("0x").unwrap_or(text)).map_err(|e| {
            AddressError::InvalidHex {
                reason: e.to_string(),
            }
        })?;
        Self::from_bytes(&bytes)
    }

    /// The 21 binary bytes (`0x41` ++ 20), as protobuf address fields carry them.
    pub fn as_bytes(&self) -> &[u8; ADDRESS_LEN] {
        &self.0
    }

    /// The 20 bytes after the prefix (the EVM form).
    pub fn evm_bytes(&self) -> [u8; 20] {
        let mut out = [0u8; 20];
        out.copy_from_slice(&self.0[1..]);
        out
    }

    /// `T...` Base58Check.
    pub fn to_base58(&self) -> String {
        let mut payload = self.0.to_vec();
        payload.extend_from_slice(&double_sha256(&self.0)[..4]);
        bs58::encode(payload).into_string()
    }

    /// `41...` lowercase hex (the form java-tron's HTTP API uses with `visible=false`).
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

fn double_sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(Sha256::digest(data)).into()
}

impl fmt::Display for TronAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_base58())
    }
}

impl fmt::Debug for TronAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TronAddress({})", self.to_base58())
    }
}

impl FromStr for TronAddress {
    type Err = AddressError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_addresses_round_trip() {
        // The USDT contract on mainnet.
        let usdt = TronAddress::parse("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t").unwrap();
        assert_eq!(usdt.to_hex(), "41a614f803b6fd780986a42c78ec9c7f77e6ded13c");
        assert_eq!(TronAddress::parse(&usdt.to_hex()).unwrap(), usdt);
        assert_eq!(usdt.to_base58(), "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t");
    }

    #[test]
    fn private_key_one_has_its_known_address() {
        // secp256k1 generator point G (private key 1): widely published TRON address.
        let key = k256::ecdsa::SigningKey::from_slice(&{
            let mut k = [0u8; 32];
            k[31] = 1;
            k
        })
        .unwrap();
        let addr = TronAddress::from_verifying_key(key.verifying_key());
        assert_eq!(addr.to_hex(), "417e5f4552091a69125d5dfcb7b8c2659029395bdf");
        assert_eq!(addr.to_base58(), "TMVQGm1qAQYVdetCeGRRkTWYYrLXuHK2HC");
    }
}
