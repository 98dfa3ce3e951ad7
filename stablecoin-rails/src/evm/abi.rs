//! The slice of the Solidity ABI the rail speaks: static words, `bytes`, tuples and
//! dynamic arrays of them (head/tail encoding), function selectors and event topics.
//! Checked against the chain itself: the tests compare our `getUserOpHash` and CREATE2
//! derivations with the EntryPoint's and the factory's answers on Anvil.

use sha3::{Digest, Keccak256};

/// Keccak-256 (Ethereum's hash, not NIST SHA3-256): selectors, event topics, CREATE2,
/// EIP-712 and transaction hashes.
pub fn keccak(data: &[u8]) -> [u8; 32] {
    Keccak256::digest(data).into()
}

/// A uint256 word of a value that fits in 128 bits.
pub fn uint_word(v: u128) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[16..].copy_from_slice(&v.to_be_bytes());
    w
}

/// The 4-byte selector of a canonical signature (`"transfer(address,uint256)"`).
pub fn selector(signature: &str) -> [u8; 4] {
    let h = keccak(signature.as_bytes());
    [h[0], h[1], h[2], h[3]]
}

/// One ABI value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Abi {
    /// Any static 32-byte word (uint, address, bool, bytes32), already left-padded.
    Word([u8; 32]),
    /// `bytes` (dynamic).
    Bytes(Vec<u8>),
    /// A tuple; dynamic when any member is.
    Tuple(Vec<Abi>),
    /// `T[]` (dynamic).
    Array(Vec<Abi>),
}

impl Abi {
    /// A `uint256` value (amounts in base units, gas, wei: all fit in 128 bits here).
    pub fn uint(v: u128) -> Abi {
        Abi::Word(uint_word(v))
    }

    /// An `address` value, left-padded to a word.
    pub fn address(a: &[u8; 20]) -> Abi {
        let mut w = [0u8; 32];
        w[12..].copy_from_slice(a);
        Abi::Word(w)
    }

    fn is_dynamic(&self) -> bool {
        match self {
            Abi::Word(_) => false,
            Abi::Bytes(_) | Abi::Array(_) => true,
            Abi::Tuple(items) => items.iter().any(Abi::is_dynamic),
        }
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            Abi::Word(w) => out.extend_from_slice(w),
            Abi::Bytes(b) => {
                out.extend_from_slice(&word_of_len(b.len()));
                out.extend_from_slice(b);
                out.resize(out.len() + (32 - b.len() % 32) % 32, 0);
            }
            Abi::Tuple(items) => encode_sequence(items, out),
            Abi::Array(items) => {
                out.extend_from_slice(&word_of_len(items.len()));
                encode_sequence(items, out);
            }
        }
    }
}

fn word_of_len(n: usize) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[24..].copy_from_slice(&(n as u64).to_be_bytes());
    w
}

/// Head/tail encoding of a sequence (a tuple's members, an array's elements, arguments).
fn encode_sequence(items: &[Abi], out: &mut Vec<u8>) {
    let head_len: usize = items
        .iter()
        .map(|i| match i {
            Abi::Tuple(members) if !i.is_dynamic() => 32 * members.len(),
            _ => 32,
        })
        .sum();
    let mut tails = Vec::new();
    for item in items {
        if item.is_dynamic() {
            out.extend_from_slice(&word_of_len(head_len + tails.len()));
            item.encode_into(&mut tails);
        } else {
            item.encode_into(out);
        }
    }
    out.extend_from_slice(&tails);
}

/// `abi.encode(args...)`.
pub fn encode(args: &[Abi]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_sequence(args, &mut out);
    out
}

/// Calldata: selector + `abi.encode(args...)`.
pub fn call(signature: &str, args: &[Abi]) -> Vec<u8> {
    let mut out = selector(signature).to_vec();
    encode_sequence(args, &mut out);
    out
}

/// The `n`-th 32-byte word of ABI-encoded data.
pub fn word(data: &[u8], n: usize) -> Option<[u8; 32]> {
    let start = n.checked_mul(32)?;
    data.get(start..start.checked_add(32)?)?.try_into().ok()
}

/// A word read as an unsigned integer, when it fits in 128 bits.
pub fn word_u128(w: &[u8; 32]) -> Option<u128> {
    if w[..16].iter().any(|b| *b != 0) {
        return None;
    }
    Some(u128::from_be_bytes(w[16..].try_into().ok()?))
}

/// The `bytes` value whose offset is the `n`-th head word. The offset and length come
/// from the node (or a contract): checked, never trusted to fit (the fuzzer found an
/// offset near `usize::MAX` overflowing the sum).
pub fn dynamic_bytes(data: &[u8], n: usize) -> Option<Vec<u8>> {
    let offset = usize::try_from(word_u128(&word(data, n)?)?).ok()?;
    let start = offset.checked_add(32)?;
    let len_word: [u8; 32] = data.get(offset..start)?.try_into().ok()?;
    let len = usize::try_from(word_u128(&len_word)?).ok()?;
    Some(data.get(start..start.checked_add(len)?)?.to_vec())
}

/// A human-readable reason from revert data: `Error(string)`, `Panic(uint256)`, or hex.
pub fn revert_reason(data: &[u8]) -> String {
    crate::revert::reason(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fuzzer's input (`fuzz/seeds/evm_input/crash-abi-offset-overflow`): a head word
    /// whose offset is near `u64::MAX` made `offset + 32` overflow. Now it is `None`, as is
    /// a length that would run past the end, and a well-formed value still decodes.
    #[test]
    fn offsets_and_lengths_from_the_node_never_overflow() {
        let mut data = vec![0u8; 32];
        data[16..].copy_from_slice(&(u64::MAX as u128 - 7).to_be_bytes());
        assert_eq!(dynamic_bytes(&data, 0), None);
        assert_eq!(word(&data, usize::MAX / 16), None);
        let mut long = uint_word(32).to_vec();
        long.extend(uint_word(u64::MAX as u128));
        assert_eq!(dynamic_bytes(&long, 0), None);
        let mut ok = uint_word(32).to_vec();
        ok.extend(uint_word(3));
        ok.extend([7, 8, 9]);
        assert_eq!(dynamic_bytes(&ok, 0), Some(vec![7, 8, 9]));
    }

    #[test]
    fn erc20_transfer_calldata() {
        // transfer(0x...01, 1000): the selector every ERC-20 tool agrees on.
        let mut to = [0u8; 20];
        to[19] = 1;
        let data = call(
            "transfer(address,uint256)",
            &[Abi::address(&to), Abi::uint(1000)],
        );
        assert_eq!(hex::encode(&data[..4]), "a9059cbb");
        assert_eq!(data.len(), 4 + 64);
        assert_eq!(data[4 + 31], 1);
        assert_eq!(&data[4 + 62..], &[0x03, 0xe8]);
    }

    #[test]
    fn dynamic_tuple_array_layout() {
        // f((address,uint256,bytes)[]) with one element whose bytes are 0xaabb.
        let call_item = Abi::Tuple(vec![
            Abi::address(&[0x11; 20]),
            Abi::uint(0),
            Abi::Bytes(vec![0xaa, 0xbb]),
        ]);
        let enc = encode(&[Abi::Array(vec![call_item])]);
        let words: Vec<String> = enc.chunks(32).map(hex::encode).collect();
        assert_eq!(words[0], format!("{:064x}", 0x20)); // offset of the array
        assert_eq!(words[1], format!("{:064x}", 1)); // length
        assert_eq!(words[2], format!("{:064x}", 0x20)); // offset of element 0 (dynamic tuple)
        assert!(words[3].ends_with(&"11".repeat(20)));
        assert_eq!(words[4], format!("{:064x}", 0));
        assert_eq!(words[5], format!("{:064x}", 0x60)); // offset of bytes inside the tuple
        assert_eq!(words[6], format!("{:064x}", 2));
        assert_eq!(&words[7][..4], "aabb");
        assert_eq!(enc.len(), 8 * 32);
    }

    #[test]
    fn revert_reasons_decode() {
        let data = call(
            "Error(string)",
            &[Abi::Bytes(b"TestToken: blocked".to_vec())],
        );
        assert_eq!(revert_reason(&data), "TestToken: blocked");
        assert_eq!(revert_reason(&[]), "reverted without a reason");
    }
}
