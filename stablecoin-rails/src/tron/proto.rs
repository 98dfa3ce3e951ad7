//! Hand-written prost messages for the parts of java-tron's protocol the rail encodes,
//! with java-tron's field numbers (`core/Tron.proto`, `core/contract/*.proto`).
//! Fields are declared in tag order, so prost writes them as java-tron, protobufjs
//! (tronweb) and Google's protobuf runtime (tronpy) do; the golden vectors check it.

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    /// `type.googleapis.com/protocol.<name>`: which message `value` holds (see
    /// [`ContractType::type_url`]).
    #[prost(string, tag = "1")]
    pub type_url: String,
    /// The encoded contract message, e.g. a [`TriggerSmartContract`].
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// `protocol.Transaction`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Transaction {
    /// The signed part; the txID is the SHA-256 of its encoding.
    #[prost(message, optional, tag = "1")]
    pub raw_data: Option<TransactionRaw>,
    /// 65-byte r||s||v signatures, one per signing key (the rail signs with one).
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub signature: Vec<Vec<u8>>,
    /// Execution results the node fills in; empty in what the rail builds.
    #[prost(message, repeated, tag = "5")]
    pub ret: Vec<TransactionResult>,
}

/// `protocol.Transaction.Result` (only what a signed transaction may carry).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TransactionResult {
    /// Fee burnt, in sun.
    #[prost(int64, tag = "1")]
    pub fee: i64,
    /// `code`: 0 SUCESS (java-tron's spelling), 1 FAILED.
    #[prost(int32, tag = "2")]
    pub ret: i32,
    /// `contractRet`: a `contractResult` value (1 SUCCESS, 2 REVERT, ...).
    #[prost(int32, tag = "3")]
    pub contract_ret: i32,
}

/// `protocol.Transaction.raw`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TransactionRaw {
    /// TaPoS: bytes 6..8 of the reference block id (see [`TxHeader`](super::tx::TxHeader)).
    #[prost(bytes = "vec", tag = "1")]
    pub ref_block_bytes: Vec<u8>,
    /// Unused (TaPoS reads `ref_block_bytes`); the rail writes 0.
    #[prost(int64, tag = "3")]
    pub ref_block_num: i64,
    /// TaPoS: bytes 8..16 of the reference block id.
    #[prost(bytes = "vec", tag = "4")]
    pub ref_block_hash: Vec<u8>,
    /// Unix milliseconds after which no node includes the transaction.
    #[prost(int64, tag = "8")]
    pub expiration: i64,
    /// Memo.
    #[prost(bytes = "vec", tag = "10")]
    pub data: Vec<u8>,
    /// The operation; java-tron accepts exactly one.
    #[prost(message, repeated, tag = "11")]
    pub contract: Vec<Contract>,
    /// Unused; empty.
    #[prost(bytes = "vec", tag = "12")]
    pub scripts: Vec<u8>,
    /// Creation time, Unix milliseconds.
    #[prost(int64, tag = "14")]
    pub timestamp: i64,
    /// Most TRX a smart-contract call may burn, in sun (0 for system contracts).
    #[prost(int64, tag = "18")]
    pub fee_limit: i64,
}

/// `protocol.Transaction.Contract`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Contract {
    /// A [`ContractType`] value.
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    /// The contract message, packed as `Any`.
    #[prost(message, optional, tag = "2")]
    pub parameter: Option<Any>,
    /// Unused; empty.
    #[prost(bytes = "vec", tag = "3")]
    pub provider: Vec<u8>,
    /// `ContractName`: unused; empty.
    #[prost(bytes = "vec", tag = "4")]
    pub contract_name: Vec<u8>,
    /// `Permission_id`: the account permission that signs (0, the owner).
    #[prost(int32, tag = "5")]
    pub permission_id: i32,
}

/// `Transaction.Contract.ContractType` values the rail uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ContractType {
    /// Activates an account ([`AccountCreateContract`]).
    AccountCreateContract = 0,
    /// Moves TRX ([`TransferContract`]).
    TransferContract = 1,
    /// Calls a contract, e.g. a TRC-20 `transfer` ([`TriggerSmartContract`]).
    TriggerSmartContract = 31,
    /// Stakes TRX for a resource ([`FreezeBalanceV2Contract`]).
    FreezeBalanceV2Contract = 54,
    /// Lends a staked resource to another account ([`DelegateResourceContract`]).
    DelegateResourceContract = 57,
    /// Takes such a loan back ([`UnDelegateResourceContract`]).
    UnDelegateResourceContract = 58,
}

impl ContractType {
    /// The variant of a wire `Contract.type`; `None` for a type the rail does not use.
    pub fn from_i32(v: i32) -> Option<Self> {
        Some(match v {
            0 => ContractType::AccountCreateContract,
            1 => ContractType::TransferContract,
            31 => ContractType::TriggerSmartContract,
            54 => ContractType::FreezeBalanceV2Contract,
            57 => ContractType::DelegateResourceContract,
            58 => ContractType::UnDelegateResourceContract,
            _ => return None,
        })
    }

    /// The protobuf message name (`type.googleapis.com/protocol.<name>`).
    pub fn name(self) -> &'static str {
        match self {
            ContractType::AccountCreateContract => "AccountCreateContract",
            ContractType::TransferContract => "TransferContract",
            ContractType::TriggerSmartContract => "TriggerSmartContract",
            ContractType::FreezeBalanceV2Contract => "FreezeBalanceV2Contract",
            ContractType::DelegateResourceContract => "DelegateResourceContract",
            ContractType::UnDelegateResourceContract => "UnDelegateResourceContract",
        }
    }

    /// The `Any.type_url` of this contract's parameter.
    pub fn type_url(self) -> String {
        format!("type.googleapis.com/protocol.{}", self.name())
    }
}

/// `protocol.AccountCreateContract` (`core/contract/account_contract.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AccountCreateContract {
    /// The paying account, 21 bytes (`0x41` ++ 20).
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    /// The account to activate, 21 bytes.
    #[prost(bytes = "vec", tag = "2")]
    pub account_address: Vec<u8>,
    /// `AccountType`: 0 Normal.
    #[prost(int32, tag = "3")]
    pub r#type: i32,
}

/// `protocol.TransferContract` (`core/contract/balance_contract.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TransferContract {
    /// Sender, 21 bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    /// Recipient, 21 bytes (its account is created if it does not exist).
    #[prost(bytes = "vec", tag = "2")]
    pub to_address: Vec<u8>,
    /// TRX, in sun.
    #[prost(int64, tag = "3")]
    pub amount: i64,
}

/// `protocol.TriggerSmartContract` (`core/contract/smart_contract.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TriggerSmartContract {
    /// The caller, 21 bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    /// The called contract, 21 bytes.
    #[prost(bytes = "vec", tag = "2")]
    pub contract_address: Vec<u8>,
    /// TRX sent with the call, in sun (0 for a TRC-20 transfer).
    #[prost(int64, tag = "3")]
    pub call_value: i64,
    /// ABI call data: selector ++ arguments.
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
    /// TRC-10 amount sent with the call (the rail sends none: 0).
    #[prost(int64, tag = "5")]
    pub call_token_value: i64,
    /// TRC-10 token id of `call_token_value` (0).
    #[prost(int64, tag = "6")]
    pub token_id: i64,
}

/// `protocol.FreezeBalanceV2Contract` (Stake 2.0).
#[derive(Clone, PartialEq, prost::Message)]
pub struct FreezeBalanceV2Contract {
    /// The staking account, 21 bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    /// TRX to stake, in sun.
    #[prost(int64, tag = "2")]
    pub frozen_balance: i64,
    /// `ResourceCode`: 0 BANDWIDTH, 1 ENERGY.
    #[prost(int32, tag = "3")]
    pub resource: i32,
}

/// `protocol.DelegateResourceContract` (Stake 2.0).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DelegateResourceContract {
    /// The lending account, 21 bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    /// `ResourceCode`: 0 BANDWIDTH, 1 ENERGY.
    #[prost(int32, tag = "2")]
    pub resource: i32,
    /// Staked TRX, in sun, whose resource is lent.
    #[prost(int64, tag = "3")]
    pub balance: i64,
    /// The borrowing account, 21 bytes.
    #[prost(bytes = "vec", tag = "4")]
    pub receiver_address: Vec<u8>,
    /// Whether the loan is locked for `lock_period` (the rail never locks).
    #[prost(bool, tag = "5")]
    pub lock: bool,
    /// Lock length, in blocks, when `lock` is set.
    #[prost(int64, tag = "6")]
    pub lock_period: i64,
}

/// `protocol.UnDelegateResourceContract` (Stake 2.0).
#[derive(Clone, PartialEq, prost::Message)]
pub struct UnDelegateResourceContract {
    /// The lending account, 21 bytes.
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    /// `ResourceCode`: 0 BANDWIDTH, 1 ENERGY.
    #[prost(int32, tag = "2")]
    pub resource: i32,
    /// Staked TRX, in sun, whose loan is taken back.
    #[prost(int64, tag = "3")]
    pub balance: i64,
    /// The borrowing account, 21 bytes.
    #[prost(bytes = "vec", tag = "4")]
    pub receiver_address: Vec<u8>,
}
