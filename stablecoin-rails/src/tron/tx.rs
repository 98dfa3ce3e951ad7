//! Pure transaction builders and parsers (no I/O): `raw_data` protobuf bytes, txID
//! (SHA-256 of `raw_data`), recoverable secp256k1 signatures and the signed
//! `Transaction` bytes `broadcasthex` takes.
//!
//! Signatures: the signed transaction carries 65 bytes r||s||v. We EMIT v = 27/28
//! (0x1b/0x1c, as java-tron's `ECKey`, TronLink and tronweb do) and ACCEPT v = 0/1
//! (tronpy) or 27/28 on input; java-tron accepts both.

use super::address::TronAddress;
use super::proto;
use prost::Message as _;
use sha2::{Digest as _, Sha256};
use sha3::Keccak256;
use stablecoin_core::ports::{Curve, KeyPurpose, Signer, SignerError};
use thiserror::Error;

/// Default `fee_limit` of a TRC-20 transfer: 100 TRX (enough for ~65k Energy at the
/// current price if nothing is delegated; with delegated Energy nothing is burnt).
pub const DEFAULT_FEE_LIMIT_SUN: i64 = 100_000_000;
/// How long a built transaction stays valid after its reference block's timestamp
/// (java-tron's and tronweb's default: 60 s).
pub const DEFAULT_EXPIRATION_MS: i64 = 60_000;
/// `transfer(address,uint256)` selector.
pub const TRANSFER_SELECTOR: [u8; 4] = [0xa9, 0x05, 0x9c, 0xbb];
/// `balanceOf(address)` selector.
pub const BALANCE_OF_SELECTOR: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];

/// Keccak-256 of `Transfer(address,address,uint256)`: topic 0 of TRC-20 transfer logs.
pub fn transfer_event_topic() -> [u8; 32] {
    Keccak256::digest(b"Transfer(address,address,uint256)").into()
}

/// Stake 2.0 resource codes (`ResourceCode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resource {
    /// Pays for a transaction's bytes.
    Bandwidth = 0,
    /// Pays for smart-contract execution (a TRC-20 transfer).
    Energy = 1,
}

impl Resource {
    /// java-tron's `ResourceCode` name (`BANDWIDTH`, `ENERGY`); the rail's journal records
    /// store it, so it must not change.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Bandwidth => "BANDWIDTH",
            Resource::Energy => "ENERGY",
        }
    }
}

/// TaPoS reference and validity window of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxHeader {
    /// Bytes 6..8 of the reference block id (its number, big-endian).
    pub ref_block_bytes: [u8; 2],
    /// Bytes 8..16 of the reference block id (its hash).
    pub ref_block_hash: [u8; 8],
    /// Creation time, Unix milliseconds.
    pub timestamp_ms: i64,
    /// Expiration, Unix milliseconds.
    pub expiration_ms: i64,
}

impl TxHeader {
    /// From a 32-byte block id (8 bytes of number, 24 of hash) and a block timestamp,
    /// with `timestamp = block time` and `expiration = block time + validity_ms`.
    pub fn from_block_id(block_id: &[u8; 32], block_timestamp_ms: i64, validity_ms: i64) -> Self {
        let mut ref_block_bytes = [0u8; 2];
        ref_block_bytes.copy_from_slice(&block_id[6..8]);
        let mut ref_block_hash = [0u8; 8];
        ref_block_hash.copy_from_slice(&block_id[8..16]);
        TxHeader {
            ref_block_bytes,
            ref_block_hash,
            timestamp_ms: block_timestamp_ms,
            expiration_ms: block_timestamp_ms.saturating_add(validity_ms),
        }
    }
}

/// An unsigned transaction: its `raw_data`, the exact bytes and the txID.
#[derive(Clone, Debug, PartialEq)]
pub struct UnsignedTx {
    /// The decoded `raw_data`.
    pub raw: proto::TransactionRaw,
    /// Its exact encoding, which the txID hashes (java-tron's `raw_data_hex`, as bytes).
    pub raw_bytes: Vec<u8>,
    /// SHA-256 of `raw_bytes`.
    pub txid: [u8; 32],
}

impl UnsignedTx {
    fn new(raw: proto::TransactionRaw) -> Self {
        let raw_bytes = raw.encode_to_vec();
        let txid = Sha256::digest(&raw_bytes).into();
        UnsignedTx {
            raw,
            raw_bytes,
            txid,
        }
    }

    /// The txID as 64 lowercase hex digits (how java-tron and explorers show it).
    pub fn txid_hex(&self) -> String {
        hex::encode(self.txid)
    }

    /// `raw_bytes` as lowercase hex (java-tron's `raw_data_hex`).
    pub fn raw_data_hex(&self) -> String {
        hex::encode(&self.raw_bytes)
    }

    /// Attaches a 65-byte r||s||v signature (v 0/1 or 27/28; stored as 27/28).
    pub fn with_signature(self, signature: &[u8]) -> Result<SignedTx, TxError> {
        let signature = normalize_signature(signature)?;
        Ok(SignedTx {
            unsigned: self,
            signature,
        })
    }
}

/// A signed transaction.
#[derive(Clone, Debug, PartialEq)]
pub struct SignedTx {
    /// The transaction that was signed.
    pub unsigned: UnsignedTx,
    /// r||s||v with v = 27/28.
    pub signature: [u8; 65],
}

impl SignedTx {
    /// The txID (SHA-256 of `raw_data`).
    pub fn txid(&self) -> [u8; 32] {
        self.unsigned.txid
    }

    /// The txID as 64 lowercase hex digits.
    pub fn txid_hex(&self) -> String {
        self.unsigned.txid_hex()
    }

    /// `raw_data.expiration`: Unix milliseconds after which no node includes it.
    pub fn expiration_ms(&self) -> i64 {
        self.unsigned.raw.expiration
    }

    /// The protobuf `Transaction` bytes (what `/wallet/broadcasthex` takes, hex-encoded).
    pub fn to_bytes(&self) -> Vec<u8> {
        proto::Transaction {
            raw_data: Some(self.unsigned.raw.clone()),
            signature: vec![self.signature.to_vec()],
            ret: vec![],
        }
        .encode_to_vec()
    }

    /// The address the signature recovers to.
    pub fn signer(&self) -> Result<TronAddress, TxError> {
        recover_signer(&self.unsigned.txid, &self.signature)
    }
}

/// Why a transaction could not be built, signed or decoded. Each variant has a stable
/// [`code`](TxError::code).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TxError {
    /// A signature that is not 65 bytes r||s||v.
    #[error("signature must be 65 bytes r||s||v, got {len}")]
    SignatureLength {
        /// The length received, in bytes.
        len: usize,
    },
    /// A recovery byte `v` other than 0, 1, 27 or 28.
    #[error("signature recovery byte {v} is not 0, 1, 27 or 28")]
    RecoveryByte {
        /// The byte received.
        v: u8,
    },
    /// r||s is not a valid secp256k1 signature, or no key recovers from it.
    #[error("invalid signature: {reason}")]
    InvalidSignature {
        /// Why, in k256's words.
        reason: String,
    },
    /// Bytes that do not decode as the expected protobuf message or ABI word.
    #[error("malformed transaction: {reason}")]
    Malformed {
        /// What failed to decode.
        reason: String,
    },
    /// An amount above `i64::MAX` sun, which TRON's protobuf fields cannot carry.
    #[error("amount {amount} does not fit TRON's int64")]
    AmountTooLarge {
        /// The amount asked for, in sun.
        amount: u128,
    },
    /// The [`Signer`] port failed; kept whole so the rail can tell an unavailable signer
    /// from a refusal.
    #[error("signer: {0}")]
    Signer(SignerError),
    /// The signature recovers to another address than the transaction's owner (a signer
    /// that used the wrong key); caught before anything is broadcast.
    #[error("signature recovers to {recovered}, not the owner {owner}")]
    WrongSigner {
        /// The address the signature recovers to.
        recovered: TronAddress,
        /// The account the transaction spends from.
        owner: TronAddress,
    },
}

impl TxError {
    /// A stable machine code per variant (`TRON_...`), carried in the rail's errors.
    pub fn code(&self) -> &'static str {
        match self {
            TxError::SignatureLength { .. } => "TRON_SIGNATURE_LENGTH",
            TxError::RecoveryByte { .. } => "TRON_SIGNATURE_RECOVERY_BYTE",
            TxError::InvalidSignature { .. } => "TRON_SIGNATURE_INVALID",
            TxError::Malformed { .. } => "TRON_TX_MALFORMED",
            TxError::AmountTooLarge { .. } => "TRON_AMOUNT_TOO_LARGE",
            TxError::Signer(_) => "TRON_SIGNER_ERROR",
            TxError::WrongSigner { .. } => "TRON_WRONG_SIGNER",
        }
    }
}

fn normalize_signature(sig: &[u8]) -> Result<[u8; 65], TxError> {
    if sig.len() != 65 {
        return Err(TxError::SignatureLength { len: sig.len() });
    }
    let mut out = [0u8; 65];
    out.copy_from_slice(sig);
    out[64] = match sig[64] {
        0 | 1 => sig[64] + 27,
        27 | 28 => sig[64],
        v => return Err(TxError::RecoveryByte { v }),
    };
    Ok(out)
}

/// Recovers the signing address from a txID and a 65-byte r||s||v signature (v 0/1 or
/// 27/28).
pub fn recover_signer(txid: &[u8; 32], signature: &[u8]) -> Result<TronAddress, TxError> {
    let sig = normalize_signature(signature)?;
    let recid = k256::ecdsa::RecoveryId::from_byte(sig[64] - 27)
        .ok_or(TxError::RecoveryByte { v: sig[64] })?;
    let s =
        k256::ecdsa::Signature::from_slice(&sig[..64]).map_err(|e| TxError::InvalidSignature {
            reason: e.to_string(),
        })?;
    let key = k256::ecdsa::VerifyingKey::recover_from_prehash(txid, &s, recid).map_err(|e| {
        TxError::InvalidSignature {
            reason: e.to_string(),
        }
    })?;
    Ok(TronAddress::from_verifying_key(&key))
}

fn raw_with(
    header: &TxHeader,
    kind: proto::ContractType,
    parameter: Vec<u8>,
    fee_limit: i64,
) -> UnsignedTx {
    UnsignedTx::new(proto::TransactionRaw {
        ref_block_bytes: header.ref_block_bytes.to_vec(),
        ref_block_num: 0,
        ref_block_hash: header.ref_block_hash.to_vec(),
        expiration: header.expiration_ms,
        data: vec![],
        contract: vec![proto::Contract {
            r#type: kind as i32,
            parameter: Some(proto::Any {
                type_url: kind.type_url(),
                value: parameter,
            }),
            provider: vec![],
            contract_name: vec![],
            permission_id: 0,
        }],
        scripts: vec![],
        timestamp: header.timestamp_ms,
        fee_limit,
    })
}

/// ABI call data of `transfer(address,uint256)`.
pub fn trc20_transfer_data(to: &TronAddress, amount: u128) -> Vec<u8> {
    let mut data = Vec::with_capacity(68);
    data.extend_from_slice(&TRANSFER_SELECTOR);
    data.extend_from_slice(&[0u8; 12]);
    data.extend_from_slice(&to.evm_bytes());
    data.extend_from_slice(&[0u8; 16]);
    data.extend_from_slice(&amount.to_be_bytes());
    data
}

/// ABI call data of `balanceOf(address)`.
pub fn trc20_balance_of_data(owner: &TronAddress) -> Vec<u8> {
    let mut data = Vec::with_capacity(36);
    data.extend_from_slice(&BALANCE_OF_SELECTOR);
    data.extend_from_slice(&[0u8; 12]);
    data.extend_from_slice(&owner.evm_bytes());
    data
}

/// Reads a uint256 ABI word that must fit in a `u128`.
pub fn parse_uint256(word: &[u8]) -> Result<u128, TxError> {
    if word.len() != 32 {
        return Err(TxError::Malformed {
            reason: format!("uint256 word of {} bytes", word.len()),
        });
    }
    if word[..16].iter().any(|b| *b != 0) {
        return Err(TxError::Malformed {
            reason: "uint256 value exceeds u128".into(),
        });
    }
    let mut b = [0u8; 16];
    b.copy_from_slice(&word[16..]);
    Ok(u128::from_be_bytes(b))
}

/// TRC-20 `transfer(to, amount)` from `owner` as a `TriggerSmartContract`.
pub fn build_trc20_transfer(
    header: &TxHeader,
    owner: &TronAddress,
    contract: &TronAddress,
    to: &TronAddress,
    amount: u128,
    fee_limit_sun: i64,
) -> UnsignedTx {
    let param = proto::TriggerSmartContract {
        owner_address: owner.as_bytes().to_vec(),
        contract_address: contract.as_bytes().to_vec(),
        call_value: 0,
        data: trc20_transfer_data(to, amount),
        call_token_value: 0,
        token_id: 0,
    };
    raw_with(
        header,
        proto::ContractType::TriggerSmartContract,
        param.encode_to_vec(),
        fee_limit_sun,
    )
}

fn sun(amount: u64) -> Result<i64, TxError> {
    i64::try_from(amount).map_err(|_| TxError::AmountTooLarge {
        amount: amount as u128,
    })
}

/// TRX transfer of `amount_sun` (a transfer to a new address creates its account).
pub fn build_trx_transfer(
    header: &TxHeader,
    owner: &TronAddress,
    to: &TronAddress,
    amount_sun: u64,
) -> Result<UnsignedTx, TxError> {
    let param = proto::TransferContract {
        owner_address: owner.as_bytes().to_vec(),
        to_address: to.as_bytes().to_vec(),
        amount: sun(amount_sun)?,
    };
    Ok(raw_with(
        header,
        proto::ContractType::TransferContract,
        param.encode_to_vec(),
        0,
    ))
}

/// `AccountCreateContract`: `owner` activates `account` (pays the creation fee; the new
/// account holds zero TRX).
pub fn build_account_create(
    header: &TxHeader,
    owner: &TronAddress,
    account: &TronAddress,
) -> UnsignedTx {
    let param = proto::AccountCreateContract {
        owner_address: owner.as_bytes().to_vec(),
        account_address: account.as_bytes().to_vec(),
        r#type: 0,
    };
    raw_with(
        header,
        proto::ContractType::AccountCreateContract,
        param.encode_to_vec(),
        0,
    )
}

/// Stake 2.0 `DelegateResourceContract` (no lock): `owner` lends the resource of
/// `balance_sun` staked TRX to `receiver`.
pub fn build_delegate_resource(
    header: &TxHeader,
    owner: &TronAddress,
    receiver: &TronAddress,
    resource: Resource,
    balance_sun: u64,
) -> Result<UnsignedTx, TxError> {
    let param = proto::DelegateResourceContract {
        owner_address: owner.as_bytes().to_vec(),
        resource: resource as i32,
        balance: sun(balance_sun)?,
        receiver_address: receiver.as_bytes().to_vec(),
        lock: false,
        lock_period: 0,
    };
    Ok(raw_with(
        header,
        proto::ContractType::DelegateResourceContract,
        param.encode_to_vec(),
        0,
    ))
}

/// Stake 2.0 `UnDelegateResourceContract`: `owner` takes back what it lent `receiver`.
pub fn build_undelegate_resource(
    header: &TxHeader,
    owner: &TronAddress,
    receiver: &TronAddress,
    resource: Resource,
    balance_sun: u64,
) -> Result<UnsignedTx, TxError> {
    let param = proto::UnDelegateResourceContract {
        owner_address: owner.as_bytes().to_vec(),
        resource: resource as i32,
        balance: sun(balance_sun)?,
        receiver_address: receiver.as_bytes().to_vec(),
    };
    Ok(raw_with(
        header,
        proto::ContractType::UnDelegateResourceContract,
        param.encode_to_vec(),
        0,
    ))
}

/// Signs the txID with the key of `purpose` through the [`Signer`] port and checks that
/// the signature recovers to `owner` (a KMS handing back the wrong key is caught here,
/// before anything is broadcast).
pub async fn sign_tx(
    signer: &dyn Signer,
    purpose: &KeyPurpose,
    owner: &TronAddress,
    unsigned: UnsignedTx,
) -> Result<SignedTx, TxError> {
    let sig = signer
        .sign(purpose, Curve::Secp256k1, &unsigned.txid)
        .await
        .map_err(TxError::Signer)?;
    let signed = unsigned.with_signature(&sig.0)?;
    let recovered = signed.signer()?;
    if recovered != *owner {
        return Err(TxError::WrongSigner {
            recovered,
            owner: *owner,
        });
    }
    Ok(signed)
}

/// Decodes a signed `Transaction` (as broadcast), recomputing the txID from `raw_data`.
pub fn parse_signed_tx(bytes: &[u8]) -> Result<(proto::Transaction, [u8; 32]), TxError> {
    let tx = proto::Transaction::decode(bytes).map_err(|e| TxError::Malformed {
        reason: e.to_string(),
    })?;
    let raw = tx.raw_data.as_ref().ok_or_else(|| TxError::Malformed {
        reason: "no raw_data".into(),
    })?;
    let txid = Sha256::digest(raw.encode_to_vec()).into();
    Ok((tx, txid))
}

/// Decodes `raw_data` bytes.
pub fn parse_raw_data(bytes: &[u8]) -> Result<proto::TransactionRaw, TxError> {
    proto::TransactionRaw::decode(bytes).map_err(|e| TxError::Malformed {
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_topic_is_the_erc20_one() {
        assert_eq!(
            hex::encode(transfer_event_topic()),
            "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
        );
        assert_eq!(
            &Keccak256::digest(b"transfer(address,uint256)")[..4],
            &TRANSFER_SELECTOR
        );
        assert_eq!(
            &Keccak256::digest(b"balanceOf(address)")[..4],
            &BALANCE_OF_SELECTOR
        );
    }

    #[test]
    fn signature_recovery_byte_forms() {
        let mut sig = [1u8; 65];
        sig[64] = 2;
        assert_eq!(
            normalize_signature(&sig).unwrap_err().code(),
            "TRON_SIGNATURE_RECOVERY_BYTE"
        );
        sig[64] = 0;
        assert_eq!(normalize_signature(&sig).unwrap()[64], 27);
        sig[64] = 28;
        assert_eq!(normalize_signature(&sig).unwrap()[64], 28);
        assert_eq!(
            normalize_signature(&sig[..64]).unwrap_err().code(),
            "TRON_SIGNATURE_LENGTH"
        );
    }
}
