//! EIP-1559 (type 2) transactions: RLP, the signing hash and the signed raw bytes the
//! bundler broadcasts. The transaction hash this yields is the `tx_hash` reported
//! everywhere (spec 6.1), never a user-operation hash.

use super::abi::keccak;
use super::address::EvmAddress;

/// RLP item.
enum Rlp<'a> {
    Bytes(&'a [u8]),
    List(Vec<Rlp<'a>>),
}

fn rlp_len_prefix(out: &mut Vec<u8>, len: usize, short: u8) {
    if len < 56 {
        out.push(short + len as u8);
    } else {
        let be = (len as u64).to_be_bytes();
        let skip = be.iter().take_while(|b| **b == 0).count();
        out.push(short + 55 + (8 - skip) as u8);
        out.extend_from_slice(&be[skip..]);
    }
}

fn rlp_encode(item: &Rlp<'_>, out: &mut Vec<u8>) {
    match item {
        Rlp::Bytes(b) if b.len() == 1 && b[0] < 0x80 => out.push(b[0]),
        Rlp::Bytes(b) => {
            rlp_len_prefix(out, b.len(), 0x80);
            out.extend_from_slice(b);
        }
        Rlp::List(items) => {
            let mut body = Vec::new();
            for i in items {
                rlp_encode(i, &mut body);
            }
            rlp_len_prefix(out, body.len(), 0xc0);
            out.extend_from_slice(&body);
        }
    }
}

/// Minimal big-endian bytes of an integer (RLP integers carry no leading zeros).
fn int_bytes(v: u128) -> Vec<u8> {
    let be = v.to_be_bytes();
    let skip = be.iter().take_while(|b| **b == 0).count();
    be[skip..].to_vec()
}

/// An unsigned EIP-1559 transaction (no access list).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Eip1559Tx {
    /// EIP-155 chain id: the signature is valid on this chain only.
    pub chain_id: u64,
    /// The sender's transaction count (`eth_getTransactionCount` at `pending`).
    pub nonce: u64,
    /// Tip per gas to the block producer, in wei.
    pub max_priority_fee_per_gas: u128,
    /// Cap on base fee plus tip per gas, in wei.
    pub max_fee_per_gas: u128,
    /// Gas units the transaction may use.
    pub gas_limit: u64,
    /// The callee (the EntryPoint, for a bundle); contract creation is not supported.
    pub to: EvmAddress,
    /// Native coin sent along, in wei (0 for a bundle).
    pub value: u128,
    /// Call data (`handleOps`, for a bundle).
    pub data: Vec<u8>,
}

impl Eip1559Tx {
    fn fields(&self) -> [Vec<u8>; 7] {
        [
            int_bytes(u128::from(self.chain_id)),
            int_bytes(u128::from(self.nonce)),
            int_bytes(self.max_priority_fee_per_gas),
            int_bytes(self.max_fee_per_gas),
            int_bytes(u128::from(self.gas_limit)),
            self.to.0.to_vec(),
            int_bytes(self.value),
        ]
    }

    fn encode(&self, signature: Option<(u8, &[u8], &[u8])>) -> Vec<u8> {
        let f = self.fields();
        let mut items: Vec<Rlp<'_>> = f.iter().map(|b| Rlp::Bytes(b)).collect();
        items.push(Rlp::Bytes(&self.data));
        items.push(Rlp::List(vec![]));
        let v;
        let (r, s);
        if let Some((parity, r_raw, s_raw)) = signature {
            v = int_bytes(u128::from(parity));
            r = strip(r_raw);
            s = strip(s_raw);
            items.push(Rlp::Bytes(&v));
            items.push(Rlp::Bytes(r));
            items.push(Rlp::Bytes(s));
        }
        let mut out = vec![0x02];
        rlp_encode(&Rlp::List(items), &mut out);
        out
    }

    /// The digest the sender signs: keccak(0x02 || rlp(fields)).
    pub fn signing_hash(&self) -> [u8; 32] {
        keccak(&self.encode(None))
    }

    /// The raw signed transaction and its hash, from a 65-byte r||s||v signature
    /// (v = recovery id 0/1, as the `Signer` port returns it).
    pub fn signed(&self, signature: &[u8]) -> Option<(Vec<u8>, [u8; 32])> {
        if signature.len() != 65 {
            return None;
        }
        let parity = match signature[64] {
            0 | 27 => 0,
            1 | 28 => 1,
            _ => return None,
        };
        let raw = self.encode(Some((parity, &signature[..32], &signature[32..64])));
        let hash = keccak(&raw);
        Some((raw, hash))
    }
}

fn strip(b: &[u8]) -> &[u8] {
    let skip = b.iter().take_while(|x| **x == 0).count();
    &b[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rlp_basics() {
        // The RLP spec's own examples.
        let mut out = Vec::new();
        rlp_encode(&Rlp::Bytes(b"dog"), &mut out);
        assert_eq!(out, [0x83, b'd', b'o', b'g']);
        out.clear();
        rlp_encode(
            &Rlp::List(vec![Rlp::Bytes(b"cat"), Rlp::Bytes(b"dog")]),
            &mut out,
        );
        assert_eq!(out, [0xc8, 0x83, b'c', b'a', b't', 0x83, b'd', b'o', b'g']);
        out.clear();
        rlp_encode(&Rlp::Bytes(&[]), &mut out);
        assert_eq!(out, [0x80]);
        out.clear();
        rlp_encode(&Rlp::List(vec![]), &mut out);
        assert_eq!(out, [0xc0]);
        out.clear();
        let long = [b'a'; 56];
        rlp_encode(&Rlp::Bytes(&long), &mut out);
        assert_eq!(&out[..2], &[0xb8, 56]);
        assert_eq!(int_bytes(0), Vec::<u8>::new());
        assert_eq!(int_bytes(1024), vec![0x04, 0x00]);
    }
}
