//! `SwapVenue`: where a wallet's USDC becomes USDT (or back). A venue quotes, executes an
//! order on chain, and answers where an order stands, with the same idempotency rules as
//! a [`Rail`](super::Rail): an order id executed twice trades once, and an unknown outcome
//! is resolved by asking [`SwapVenue::status`] about the same id, never by a second order.
//!
//! Two venues ship with the workspace (`stablecoin-rails`): a Uniswap V2 router on an EVM
//! chain, whose approve and swap run in the smart account's one sponsored `executeBatch`
//! (atomic), and the treasury venue, an internal conversion against the service treasury
//! at a configured rate and spread, for rails without a DEX.

use crate::domain::money::{Micros, Token};
use crate::domain::time::Timestamp;
use crate::ports::rail::{ChainAddress, RailError, RailId, Submission, SubmissionStatus};
use crate::ports::signer::KeyPurpose;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// One swap order, fixed when the swap is accepted so every execution of it is the same
/// order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapOrder {
    /// Idempotency id (the operation id, `sw_...`).
    pub id: String,
    /// The key that signs for the trading wallet.
    pub from: KeyPurpose,
    /// The wallet's address on the venue's rail: it gives `token_in` and receives
    /// `token_out`.
    pub from_address: ChainAddress,
    /// The token given.
    pub token_in: Token,
    /// The token received.
    pub token_out: Token,
    /// Micro-units of `token_in` given, exactly.
    pub amount_in: Micros,
    /// What the venue quoted for `amount_in` when the swap was accepted.
    pub quoted_amount_out: Micros,
    /// The least `token_out` the wallet accepts (the quote less the slippage allowed):
    /// below it the venue must trade nothing (Uniswap's `amountOutMin`).
    pub min_amount_out: Micros,
    /// No venue may execute the order after this instant (set at the first execution);
    /// what makes a `NotFound` after it a proof that the order never traded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Timestamp>,
}

/// Where an order stands, as [`SwapVenue::status`] answers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwapStatus {
    /// The on-chain state of the order's transaction(s), with the rails' meaning:
    /// `Confirmed` is final, `Failed` moved nothing, `NotFound` proves nothing before the
    /// order's deadline.
    pub status: SubmissionStatus,
    /// Micro-units of `token_out` the wallet received, read from the chain; `Some` when
    /// `status` is `Confirmed`.
    pub amount_out: Option<Micros>,
}

/// A place to trade one stablecoin for another on one rail (see the module docs).
#[async_trait]
pub trait SwapVenue: Send + Sync {
    /// Stable name (`"uniswap_v2"`, `"treasury"`), recorded with each swap and used in its
    /// ledger accounts.
    fn name(&self) -> &str;

    /// The rail whose wallets this venue trades for.
    fn rail(&self) -> RailId;

    /// The address a swap's `amount_in` is paid to (a DEX router, the treasury), which
    /// the engine screens like any payment's destination (issue #51) before it holds
    /// anything. `None` (the default) when the venue cannot name one: nothing to screen.
    async fn counterparty(&self) -> Option<ChainAddress> {
        None
    }

    /// What `amount_in` of `token_in` buys now, in micro-units of `token_out`.
    /// `Rejected` for a pair the venue does not trade or a trade it cannot fill
    /// (liquidity); `Unavailable` when it cannot tell now.
    async fn quote(
        &self,
        token_in: Token,
        token_out: Token,
        amount_in: Micros,
    ) -> Result<Micros, RailError>;

    /// Executes the order (idempotent by `order.id`). `Rejected` proves nothing was sent;
    /// any other error leaves the outcome unknown, to be asked with [`status`](Self::status).
    async fn execute(&self, order: &SwapOrder) -> Result<Submission, RailError>;

    /// Where `order` stands on chain; a venue may continue an order it executes in
    /// several steps here (each step idempotent by an id derived from the order's).
    async fn status(&self, order: &SwapOrder) -> Result<SwapStatus, RailError>;
}
