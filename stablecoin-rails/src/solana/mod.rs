//! `solana`: the Solana SPL rail (USDC and USDT), spec 1.5 and 4.3.
//!
//! - **Addresses** are durable: the wallet of a phone is the ed25519 key of
//!   [`KeyPurpose::PhoneWallet`](stablecoin_core::ports::KeyPurpose::PhoneWallet) from the
//!   [`Signer`](stablecoin_core::ports::Signer) port, so the same phone gets the same
//!   address on every machine sharing the master seed.
//! - **Provisioning** ([`SolanaRail::provision`], and `prepare_wallet` of the port)
//!   creates the USDC and USDT associated token accounts with idempotent
//!   `CreateIdempotent` instructions, the service paying fee and rent, and returns once
//!   the transaction is finalized. The customer signs nothing and holds no SOL.
//! - **Sends** are one transaction: first the Compute Budget program's
//!   `SetComputeUnitLimit` and `SetComputeUnitPrice` (a limit sized to the transaction,
//!   a priority fee from `getRecentPrioritizationFees` within the configured floor and
//!   ceiling: [`fees`], issue #49), then per leg a `CreateIdempotent` of the recipient's
//!   ATA if it does not exist (service pays: reported as `created_recipient_ata`), then
//!   SPL `TransferChecked` signed by the customer as token authority; the service signs
//!   as fee payer. Idempotent by payment id through the [`SendRecord`] journaled (core's
//!   `RailJournal`, durable with `StoreJournal`) before the broadcast; a lost response
//!   or an expired blockhash is reconciled by the signature's status
//!   (`getSignatureStatuses`, then the finalized block height against the
//!   blockhash's `lastValidBlockHeight`), never by a blind resend. Only identical signed
//!   bytes are ever rebroadcast. Native SOL and unknown mints are refused
//!   ([`SolanaRail::token_for_asset`]).
//! - **Deadlines**: a payment's `valid_until` is not encoded (a Solana transaction has
//!   no expiry field and the rail reads no clock). Its own proof is the recent
//!   blockhash: a signed transaction can land only until the finalized block height
//!   passes its `lastValidBlockHeight` (about a minute), and `status` answers `NotFound`
//!   only for an id never journaled or once that height is passed with the signature
//!   unseen. `status` rebroadcasts only the same signed bytes; a new transaction (a new
//!   blockhash) is signed only by a later `submit` of the id, which the engine never
//!   makes for an operation it may fail. What this does not cover: a `submit` that
//!   stalls before its journal write for longer than the payment window plus the
//!   engine's margin, then signs; every RPC call of the rail has a timeout, which bounds
//!   that stall in practice.
//! - **Balances** read the wallet's ATA; the **scanner** reads the watched ATAs'
//!   signatures at `finalized` and each transaction's token balance deltas.
//! - **Readiness** (spec 1.5): `DEGRADED` whenever monitoring is off (`scan_enabled`) or
//!   reads fail, `INBOUND_READY` when reads and zero-SOL provisioning work but sends are
//!   off or the fee payer is underfunded, `READY` otherwise.
//!
//! Layout (ARCHITECTURE §11.3): [`codec`] is pure encoding (addresses, ATAs,
//! instructions, message, wire bytes), [`scan`] the pure half of the scanner, [`rpc`] the
//! [`SolanaRpc`] transport trait, [`json_rpc`] its HTTP implementation, [`rail`] the
//! logic over any `SolanaRpc`. With feature `solana-test`, `testkit` adds an in-process
//! `SolanaRpc` over litesvm (the real SPL Token and ATA programs) and a JSON-RPC server
//! over it for end-to-end tests.

pub mod codec;
pub mod fees;
pub mod journal;
pub mod json_rpc;
pub mod rail;
pub mod rpc;
pub mod scan;
#[cfg(feature = "solana-test")]
pub mod testkit;

pub use fees::SolanaFeePolicy;
pub use journal::{SendRecord, SendState, SolanaSendInfo};
pub use json_rpc::JsonRpcClient;
pub use rail::{
    SignedTransaction, SolanaConfig, SolanaProvisioned, SolanaRail, SolanaSend, SolanaSendResult,
    sign_transaction,
};
pub use rpc::{Commitment, RpcError, SolanaRpc};
pub use solana_hash::Hash;
pub use solana_pubkey::Pubkey;
pub use solana_signature::Signature;
