//! EVM addresses: parsing (EIP-55 checksums enforced on mixed case), display in checksum
//! form, derivation from a secp256k1 public key, and CREATE / CREATE2 addresses.

use super::abi::keccak;
use std::fmt;
use std::str::FromStr;

/// A 20-byte EVM account or contract address. Parsed from `0x` + 40 hex digits (the
/// EIP-55 checksum enforced when the case is mixed), displayed in checksum form;
/// [`to_hex`](Self::to_hex) gives the lower-case form JSON-RPC takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EvmAddress(pub [u8; 20]);

/// Why a string or a key is not an EVM address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// Not `0x` followed by exactly 40 hex digits.
    #[error("an EVM address is 0x followed by 40 hex digits")]
    Format,
    /// Mixed case that does not match the EIP-55 checksum: most likely a mistyped address,
    /// so it is refused rather than lower-cased.
    #[error("the EIP-55 checksum (letter case) does not match")]
    Checksum,
    /// [`EvmAddress::from_public_key`] was given bytes that are not a SEC1 secp256k1 point.
    #[error("not a secp256k1 public key")]
    PublicKey,
}

impl EvmAddress {
    /// `0x00…00`: stands for an unconfigured contract, which
    /// [`EvmConfig::validate`](crate::evm::EvmConfig::validate) refuses.
    pub const ZERO: EvmAddress = EvmAddress([0; 20]);

    /// The address of a secp256k1 key (SEC1, compressed or not): the last 20 bytes of
    /// keccak(x || y).
    pub fn from_public_key(sec1: &[u8]) -> Result<Self, AddressError> {
        let key = k256::PublicKey::from_sec1_bytes(sec1).map_err(|_| AddressError::PublicKey)?;
        use k256::elliptic_curve::sec1::ToEncodedPoint;
        let point = key.to_encoded_point(false);
        let h = keccak(&point.as_bytes()[1..]);
        Ok(Self::from_hash_tail(&h))
    }

    fn from_hash_tail(h: &[u8; 32]) -> Self {
        let mut a = [0u8; 20];
        a.copy_from_slice(&h[12..]);
        EvmAddress(a)
    }

    /// CREATE2: keccak(0xff || deployer || salt || keccak(init_code))[12..].
    pub fn create2(deployer: &EvmAddress, salt: &[u8; 32], init_code_hash: &[u8; 32]) -> Self {
        let mut buf = Vec::with_capacity(85);
        buf.push(0xff);
        buf.extend_from_slice(&deployer.0);
        buf.extend_from_slice(salt);
        buf.extend_from_slice(init_code_hash);
        Self::from_hash_tail(&keccak(&buf))
    }

    /// CREATE by `deployer` at `nonce` (< 128 suffices here: a contract's first creations).
    pub fn create(deployer: &EvmAddress, nonce: u8) -> Self {
        assert!(nonce < 0x80, "small nonces only");
        let mut buf = vec![0xd6, 0x94];
        buf.extend_from_slice(&deployer.0);
        buf.push(if nonce == 0 { 0x80 } else { nonce });
        Self::from_hash_tail(&keccak(&buf))
    }

    /// Lower-case hex with 0x (JSON-RPC parameters).
    pub fn to_hex(&self) -> String {
        format!("0x{}", hex::encode(self.0))
    }
}

impl FromStr for EvmAddress {
    type Err = AddressError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let body = s.strip_prefix("0x").ok_or(AddressError::Format)?;
        if body.len() != 40 || !body.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(AddressError::Format);
        }
        let mut a = [0u8; 20];
        hex::decode_to_slice(body, &mut a).map_err(|_| AddressError::Format)?;
        let addr = EvmAddress(a);
        let has_lower = body.bytes().any(|b| b.is_ascii_lowercase());
        let has_upper = body.bytes().any(|b| b.is_ascii_uppercase());
        if has_lower && has_upper && addr.to_string() != s {
            return Err(AddressError::Checksum);
        }
        Ok(addr)
    }
}

/// EIP-55 mixed-case checksum form.
impl fmt::Display for EvmAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lower = hex::encode(self.0);
        let h = keccak(lower.as_bytes());
        let mut out = String::with_capacity(42);
        out.push_str("0x");
        for (i, c) in lower.chars().enumerate() {
            let nibble = (h[i / 2] >> (if i % 2 == 0 { 4 } else { 0 })) & 0x0f;
            out.push(if c.is_ascii_alphabetic() && nibble >= 8 {
                c.to_ascii_uppercase()
            } else {
                c
            });
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eip55_vectors() {
        // From EIP-55 itself.
        for s in [
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
        ] {
            let a: EvmAddress = s.parse().unwrap();
            assert_eq!(a.to_string(), s);
        }
        assert_eq!(
            "0x5aaeb6053F3E94C9b9A09f33669435E7Ef1BeAed".parse::<EvmAddress>(),
            Err(AddressError::Checksum)
        );
        assert!(
            "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"
                .parse::<EvmAddress>()
                .is_ok()
        );
        assert_eq!("5aaeb6".parse::<EvmAddress>(), Err(AddressError::Format));
    }

    #[test]
    fn key_and_create_vectors() {
        // Private key 1: the generator point's well-known address.
        let g = k256::SecretKey::from_slice(&{
            let mut k = [0u8; 32];
            k[31] = 1;
            k
        })
        .unwrap()
        .public_key();
        use k256::elliptic_curve::sec1::ToEncodedPoint;
        let a = EvmAddress::from_public_key(g.to_encoded_point(true).as_bytes()).unwrap();
        assert_eq!(a.to_string(), "0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf");
        // CREATE: the Ethereum wiki's example (0x6ac7ea33... nonce 0).
        let d: EvmAddress = "0x6ac7ea33f8831ea9dcc53393aaa88b25a785dbf0"
            .parse()
            .unwrap();
        assert_eq!(
            EvmAddress::create(&d, 0).to_hex(),
            "0xcd234a471b72ba2f1ccf0a70fcaba648a5eecd8d"
        );
        assert_eq!(
            EvmAddress::create(&d, 1).to_hex(),
            "0x343c43a37d37dff08ae8c4a11544c718abb4fcf8"
        );
        // CREATE2: EIP-1014's example 1 (zero deployer, zero salt, init code 0x00).
        assert_eq!(
            EvmAddress::create2(&EvmAddress::ZERO, &[0; 32], &keccak(&[0])).to_hex(),
            "0x4d1a2e2bb4f88f0250f26ffff098b0b30b26bf38"
        );
    }
}
