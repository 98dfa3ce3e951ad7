//! ERC-4337 v0.8 user operations: the packed form `handleOps` takes, the EIP-712
//! user-operation hash the account signs (what `EntryPoint.getUserOpHash` returns), the
//! service paymaster's hash (`VerifyingPaymaster.getHash`), `executeBatch` call data,
//! `initCode` and the counterfactual account address (what
//! `SimpleAccountFactory.getAddress` returns), all offline.

use super::abi::{self, Abi, keccak};
use super::address::EvmAddress;

/// `nonce` = key (192 bits) << 64 | sequence. A distinct key per payment lets many
/// operations of one account be in flight at once (each key has its own sequence).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Nonce {
    /// The upper 192 bits: one key per payment ([`Nonce::key_for`]).
    pub key: [u8; 24],
    /// The lower 64 bits: the key's sequence, which the EntryPoint advances per executed
    /// operation (0 for a payment's only operation).
    pub seq: u64,
}

impl Nonce {
    /// The `uint256` the EntryPoint takes: `key << 64 | seq`.
    pub fn word(&self) -> [u8; 32] {
        let mut w = [0u8; 32];
        w[..24].copy_from_slice(&self.key);
        w[24..].copy_from_slice(&self.seq.to_be_bytes());
        w
    }

    /// The key of a payment id: the first 24 bytes of keccak(id). The same id always
    /// lands on the same key, so a second submission of one payment can only ever be the
    /// same operation (sequence 0 of its key), never a second transfer.
    pub fn key_for(payment_id: &str) -> [u8; 24] {
        let h = keccak(payment_id.as_bytes());
        let mut k = [0u8; 24];
        k.copy_from_slice(&h[..24]);
        k
    }
}

/// Paymaster fields carried in `paymasterAndData`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sponsorship {
    /// The VerifyingPaymaster contract.
    pub paymaster: EvmAddress,
    /// Gas for the paymaster's `validatePaymasterUserOp`.
    pub verification_gas_limit: u128,
    /// Gas for its `postOp` (the rail's sponsorships give 0: the paymaster has no post-op).
    pub post_op_gas_limit: u128,
    /// Unix seconds (48 bits); 0 = no limit.
    pub valid_until: u64,
    /// Unix seconds (48 bits) before which the operation is invalid; 0 = at once.
    pub valid_after: u64,
}

impl Sponsorship {
    /// `paymasterAndData` with the given 65-byte signature (or none, for hashing).
    pub fn encode(&self, signature: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + signature.len());
        out.extend_from_slice(&self.paymaster.0);
        out.extend_from_slice(&self.verification_gas_limit.to_be_bytes());
        out.extend_from_slice(&self.post_op_gas_limit.to_be_bytes());
        out.extend_from_slice(&self.valid_until.to_be_bytes()[2..]);
        out.extend_from_slice(&self.valid_after.to_be_bytes()[2..]);
        out.extend_from_slice(signature);
        out
    }
}

/// A v0.8 `PackedUserOperation`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserOp {
    /// The smart account that executes the operation (and is deployed by `init_code`).
    pub sender: EvmAddress,
    /// The EntryPoint nonce: the payment's key and its sequence.
    pub nonce: Nonce,
    /// factory || createAccount(owner, salt) on first use, empty after.
    pub init_code: Vec<u8>,
    /// What the account executes: `executeBatch` of the payment's transfers.
    pub call_data: Vec<u8>,
    /// Gas for the account's validation (and deployment, with `init_code`).
    pub verification_gas_limit: u128,
    /// Gas for executing `call_data`.
    pub call_gas_limit: u128,
    /// Gas paid to the bundler for what the EntryPoint does not meter (calldata, the
    /// bundle's overhead).
    pub pre_verification_gas: u128,
    /// Tip per gas, in wei.
    pub max_priority_fee_per_gas: u128,
    /// Cap on base fee plus tip per gas, in wei.
    pub max_fee_per_gas: u128,
    /// [`Sponsorship::encode`] with the paymaster's signature; empty when the account pays
    /// its own gas.
    pub paymaster_and_data: Vec<u8>,
    /// The owner key's 65-byte signature (r || s || v, v = 27/28) over [`UserOp::hash`].
    pub signature: Vec<u8>,
}

fn pack128(high: u128, low: u128) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[..16].copy_from_slice(&high.to_be_bytes());
    w[16..].copy_from_slice(&low.to_be_bytes());
    w
}

const PACKED_USEROP_TYPE: &str = "PackedUserOperation(address sender,uint256 nonce,bytes initCode,bytes callData,bytes32 accountGasLimits,uint256 preVerificationGas,bytes32 gasFees,bytes paymasterAndData)";
const DOMAIN_TYPE: &str =
    "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)";

impl UserOp {
    /// `accountGasLimits`: verification gas (high 128 bits) and call gas (low) in one word.
    pub fn account_gas_limits(&self) -> [u8; 32] {
        pack128(self.verification_gas_limit, self.call_gas_limit)
    }

    /// `gasFees`: max priority fee (high 128 bits) and max fee (low) in one word.
    pub fn gas_fees(&self) -> [u8; 32] {
        pack128(self.max_priority_fee_per_gas, self.max_fee_per_gas)
    }

    /// The most the operation can cost its payer, in wei (what the paymaster's deposit
    /// must cover).
    pub fn max_cost(&self, sponsorship: &Sponsorship) -> u128 {
        (self.verification_gas_limit
            + self.call_gas_limit
            + self.pre_verification_gas
            + sponsorship.verification_gas_limit
            + sponsorship.post_op_gas_limit)
            .saturating_mul(self.max_fee_per_gas)
    }

    /// `EntryPoint.getUserOpHash(op)`: EIP-712 over the packed fields, domain
    /// ("ERC4337", "1", chain id, entry point).
    pub fn hash(&self, entry_point: &EvmAddress, chain_id: u64) -> [u8; 32] {
        let struct_hash = keccak(&abi::encode(&[
            Abi::Word(keccak(PACKED_USEROP_TYPE.as_bytes())),
            Abi::address(&self.sender.0),
            Abi::Word(self.nonce.word()),
            Abi::Word(keccak(&self.init_code)),
            Abi::Word(keccak(&self.call_data)),
            Abi::Word(self.account_gas_limits()),
            Abi::uint(self.pre_verification_gas),
            Abi::Word(self.gas_fees()),
            Abi::Word(keccak(&self.paymaster_and_data)),
        ]));
        let domain = keccak(&abi::encode(&[
            Abi::Word(keccak(DOMAIN_TYPE.as_bytes())),
            Abi::Word(keccak(b"ERC4337")),
            Abi::Word(keccak(b"1")),
            Abi::uint(u128::from(chain_id)),
            Abi::address(&entry_point.0),
        ]));
        let mut buf = Vec::with_capacity(66);
        buf.extend_from_slice(&[0x19, 0x01]);
        buf.extend_from_slice(&domain);
        buf.extend_from_slice(&struct_hash);
        keccak(&buf)
    }

    /// The digest the service's paymaster signer signs: EIP-191 over
    /// `VerifyingPaymaster.getHash(op, validUntil, validAfter)`.
    pub fn paymaster_digest(&self, sponsorship: &Sponsorship, chain_id: u64) -> [u8; 32] {
        let inner = keccak(&abi::encode(&[
            Abi::address(&self.sender.0),
            Abi::Word(self.nonce.word()),
            Abi::Word(keccak(&self.init_code)),
            Abi::Word(keccak(&self.call_data)),
            Abi::Word(self.account_gas_limits()),
            Abi::Word(pack128(
                sponsorship.verification_gas_limit,
                sponsorship.post_op_gas_limit,
            )),
            Abi::uint(self.pre_verification_gas),
            Abi::Word(self.gas_fees()),
            Abi::uint(u128::from(chain_id)),
            Abi::address(&sponsorship.paymaster.0),
            Abi::uint(u128::from(sponsorship.valid_until)),
            Abi::uint(u128::from(sponsorship.valid_after)),
        ]));
        personal_digest(&inner)
    }

    /// The operation as an ABI tuple (an element of `handleOps`' first argument).
    pub fn to_abi(&self) -> Abi {
        Abi::Tuple(vec![
            Abi::address(&self.sender.0),
            Abi::Word(self.nonce.word()),
            Abi::Bytes(self.init_code.clone()),
            Abi::Bytes(self.call_data.clone()),
            Abi::Word(self.account_gas_limits()),
            Abi::uint(self.pre_verification_gas),
            Abi::Word(self.gas_fees()),
            Abi::Bytes(self.paymaster_and_data.clone()),
            Abi::Bytes(self.signature.clone()),
        ])
    }
}

/// The ABI type of a v0.8 `PackedUserOperation`, as it appears in `handleOps`' signature.
pub const PACKED_USEROP_ABI: &str =
    "(address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes)";

/// `handleOps(ops, beneficiary)` call data.
pub fn handle_ops_call(ops: &[UserOp], beneficiary: &EvmAddress) -> Vec<u8> {
    abi::call(
        &format!("handleOps({PACKED_USEROP_ABI}[],address)"),
        &[
            Abi::Array(ops.iter().map(UserOp::to_abi).collect()),
            Abi::address(&beneficiary.0),
        ],
    )
}

/// EIP-191 `personal_sign` digest of a 32-byte hash.
pub fn personal_digest(hash: &[u8; 32]) -> [u8; 32] {
    let mut buf = b"\x19Ethereum Signed Message:\n32".to_vec();
    buf.extend_from_slice(hash);
    keccak(&buf)
}

/// One call of an account's `executeBatch`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The contract called (a token, for a payment leg).
    pub target: EvmAddress,
    /// Its call data; no native coin is sent.
    pub data: Vec<u8>,
}

/// `executeBatch((address,uint256,bytes)[])`: every call or none (the account reverts
/// the whole batch when one call fails).
pub fn execute_batch_call(calls: &[Call]) -> Vec<u8> {
    abi::call(
        "executeBatch((address,uint256,bytes)[])",
        &[Abi::Array(
            calls
                .iter()
                .map(|c| {
                    Abi::Tuple(vec![
                        Abi::address(&c.target.0),
                        Abi::uint(0),
                        Abi::Bytes(c.data.clone()),
                    ])
                })
                .collect(),
        )],
    )
}

/// ERC-20 `transfer(to, value)` call data.
pub fn erc20_transfer_call(to: &EvmAddress, value: u128) -> Vec<u8> {
    abi::call(
        "transfer(address,uint256)",
        &[Abi::address(&to.0), Abi::uint(value)],
    )
}

/// The SimpleAccountFactory of one chain, enough to derive accounts offline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountFactory {
    /// The deployed SimpleAccountFactory (v0.8).
    pub address: EvmAddress,
    /// ERC1967Proxy's creation code as the factory embeds it.
    pub proxy_creation_code: Vec<u8>,
}

impl AccountFactory {
    /// The account implementation the factory's constructor deployed: the factory's
    /// first CREATE (a contract's nonce starts at 1).
    pub fn implementation(&self) -> EvmAddress {
        EvmAddress::create(&self.address, 1)
    }

    /// `factory.getAddress(owner, salt)`, offline.
    pub fn account_address(&self, owner: &EvmAddress, salt: u128) -> EvmAddress {
        let init_call = abi::call("initialize(address)", &[Abi::address(&owner.0)]);
        let mut init = self.proxy_creation_code.clone();
        init.extend_from_slice(&abi::encode(&[
            Abi::address(&self.implementation().0),
            Abi::Bytes(init_call),
        ]));
        EvmAddress::create2(&self.address, &abi::uint_word(salt), &keccak(&init))
    }

    /// `initCode` deploying the account on its first operation.
    pub fn init_code(&self, owner: &EvmAddress, salt: u128) -> Vec<u8> {
        let mut out = self.address.0.to_vec();
        out.extend_from_slice(&abi::call(
            "createAccount(address,uint256)",
            &[Abi::address(&owner.0), Abi::uint(salt)],
        ));
        out
    }
}
