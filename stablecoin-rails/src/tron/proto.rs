//! Hand-written prost messages for the parts of java-tron's protocol the rail encodes,
//! with java-tron's field numbers (`core/Tron.proto`, `core/contract/*.proto`).
//! Fields are declared in tag order, so prost writes them as java-tron, protobufjs
//! (tronweb) and Google's protobuf runtime (tronpy) do; the golden vectors check it.

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// `protocol.Transaction`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Transaction {
    #[prost(message, optional, tag = "1")]
    pub raw_data: Option<TransactionRaw>,
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub signature: Vec<Vec<u8>>,
    #[prost(message, repeated, tag = "5")]
    pub ret: Vec<TransactionResult>,
}

/// `protocol.Transaction.Result` (only what a signed transaction may carry).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TransactionResult {
    #[prost(int64, tag = "1")]
    pub fee: i64,
    #[prost(int32, tag = "2")]
    pub ret: i32,
    #[prost(int32, tag = "3")]
    pub contract_ret: i32,
}

/// `protocol.Transaction.raw`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TransactionRaw {
    #[prost(bytes = "vec", tag = "1")]
    pub ref_block_bytes: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub ref_block_num: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub ref_block_hash: Vec<u8>,
    #[prost(int64, tag = "8")]
    pub expiration: i64,
    /// Memo.
    #[prost(bytes = "vec", tag = "10")]
    pub data: Vec<u8>,
    #[prost(message, repeated, tag = "11")]
    pub contract: Vec<Contract>,
    #[prost(bytes = "vec", tag = "12")]
    pub scripts: Vec<u8>,
    #[prost(int64, tag = "14")]
    pub timestamp: i64,
    #[prost(int64, tag = "18")]
    pub fee_limit: i64,
}

/// `protocol.Transaction.Contract`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Contract {
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub parameter: Option<Any>,
    #[prost(bytes = "vec", tag = "3")]
    pub provider: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    pub contract_name: Vec<u8>,
    #[prost(int32, tag = "5")]
    pub permission_id: i32,
}

/// `Transaction.Contract.ContractType` values the rail uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ContractType {
    AccountCreateContract = 0,
    TransferContract = 1,
    TriggerSmartContract = 31,
    FreezeBalanceV2Contract = 54,
    DelegateResourceContract = 57,
    UnDelegateResourceContract = 58,
}

impl ContractType {
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

    pub fn type_url(self) -> String {
        format!("type.googleapis.com/protocol.{}", self.name())
    }
}

/// `protocol.AccountCreateContract` (`core/contract/account_contract.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AccountCreateContract {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub account_address: Vec<u8>,
    /// `AccountType`: 0 Normal.
    #[prost(int32, tag = "3")]
    pub r#type: i32,
}

/// `protocol.TransferContract` (`core/contract/balance_contract.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TransferContract {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub to_address: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub amount: i64,
}

/// `protocol.TriggerSmartContract` (`core/contract/smart_contract.proto`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TriggerSmartContract {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub contract_address: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub call_value: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
    #[prost(int64, tag = "5")]
    pub call_token_value: i64,
    #[prost(int64, tag = "6")]
    pub token_id: i64,
}

/// `protocol.FreezeBalanceV2Contract` (Stake 2.0).
#[derive(Clone, PartialEq, prost::Message)]
pub struct FreezeBalanceV2Contract {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(int64, tag = "2")]
    pub frozen_balance: i64,
    #[prost(int32, tag = "3")]
    pub resource: i32,
}

/// `protocol.DelegateResourceContract` (Stake 2.0).
#[derive(Clone, PartialEq, prost::Message)]
pub struct DelegateResourceContract {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    /// `ResourceCode`: 0 BANDWIDTH, 1 ENERGY.
    #[prost(int32, tag = "2")]
    pub resource: i32,
    #[prost(int64, tag = "3")]
    pub balance: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub receiver_address: Vec<u8>,
    #[prost(bool, tag = "5")]
    pub lock: bool,
    #[prost(int64, tag = "6")]
    pub lock_period: i64,
}

/// `protocol.UnDelegateResourceContract` (Stake 2.0).
#[derive(Clone, PartialEq, prost::Message)]
pub struct UnDelegateResourceContract {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(int32, tag = "2")]
    pub resource: i32,
    #[prost(int64, tag = "3")]
    pub balance: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub receiver_address: Vec<u8>,
}
