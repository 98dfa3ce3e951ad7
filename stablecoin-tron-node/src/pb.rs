//! java-tron's protobuf messages (field numbers as in java-tron), the node's own copies:
//! it shares no encoding code with the rail it checks.

#[derive(Clone, PartialEq, prost::Message)]
pub struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}
#[derive(Clone, PartialEq, prost::Message)]
pub struct Transaction {
    #[prost(message, optional, tag = "1")]
    pub raw_data: Option<Raw>,
    #[prost(bytes = "vec", repeated, tag = "2")]
    pub signature: Vec<Vec<u8>>,
}
#[derive(Clone, PartialEq, prost::Message)]
pub struct Raw {
    #[prost(bytes = "vec", tag = "1")]
    pub ref_block_bytes: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub ref_block_num: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub ref_block_hash: Vec<u8>,
    #[prost(int64, tag = "8")]
    pub expiration: i64,
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
#[derive(Clone, PartialEq, prost::Message)]
pub struct Contract {
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub parameter: Option<Any>,
    #[prost(int32, tag = "5")]
    pub permission_id: i32,
}
#[derive(Clone, PartialEq, prost::Message)]
pub struct AccountCreate {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub account_address: Vec<u8>,
}
#[derive(Clone, PartialEq, prost::Message)]
pub struct Transfer {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub to_address: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub amount: i64,
}
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trigger {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub contract_address: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub call_value: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
}
#[derive(Clone, PartialEq, prost::Message)]
pub struct Delegate {
    #[prost(bytes = "vec", tag = "1")]
    pub owner_address: Vec<u8>,
    #[prost(int32, tag = "2")]
    pub resource: i32,
    #[prost(int64, tag = "3")]
    pub balance: i64,
    #[prost(bytes = "vec", tag = "4")]
    pub receiver_address: Vec<u8>,
    #[prost(bool, tag = "5")]
    pub lock: bool,
}

pub(crate) const ACCOUNT_CREATE: i32 = 0;
pub(crate) const TRANSFER: i32 = 1;
pub(crate) const TRIGGER: i32 = 31;
pub(crate) const DELEGATE: i32 = 57;
pub(crate) const UNDELEGATE: i32 = 58;
pub(crate) const BANDWIDTH: i32 = 0;
pub(crate) const ENERGY: i32 = 1;
pub(crate) const MAX_RESULT_SIZE_IN_TX: u64 = 64;
pub(crate) const MAX_FEE_LIMIT: i64 = 15_000_000_000;
