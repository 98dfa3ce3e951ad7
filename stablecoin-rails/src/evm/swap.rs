//! [`UniswapV2Venue`]: the [`SwapVenue`] of an EVM chain, a Uniswap V2 router (or a fork
//! with the same interface: PancakeSwap on BNB Smart Chain, QuickSwap on Polygon).
//!
//! - A quote is the router's `getAmountsOut(amountIn, [tokenIn, tokenOut])` (one hop,
//!   the pair's reserves and 0.3% fee), converted from the tokens' base units to
//!   micro-units rounding down.
//! - An order is ONE user operation of the wallet's smart account, sent by
//!   [`EvmRail::submit_calls`] under the order id: `approve(router, amountIn)` then
//!   `swapExactTokensForTokens(amountIn, amountOutMin, [in, out], account, deadline)` in
//!   its sponsored `executeBatch`. Atomic: when the swap reverts (below `amountOutMin`,
//!   past the deadline, short balance) the approve is undone with it and nothing moves;
//!   when it succeeds the router has spent exactly the allowance given.
//! - Its status is the rail's status of the id; a confirmed order's `amount_out` is what
//!   the account received of `token_out` in that operation's own logs.

use super::abi::{self, Abi};
use super::rail::parse_address;
use super::rpc::RpcError;
use super::userop::Call;
use super::{EvmAddress, EvmRail, EvmToken};
use async_trait::async_trait;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    Rail, RailError, RailId, Submission, SubmissionStatus, SwapOrder, SwapStatus, SwapVenue,
};

/// The deadline of a swap whose order has none: this long after it is built (seconds).
pub const DEFAULT_DEADLINE_SECS: u64 = 20 * 60;

/// A Uniswap V2 router on the chain of an [`EvmRail`] (see the module documentation).
pub struct UniswapV2Venue {
    rail: std::sync::Arc<EvmRail>,
    router: EvmAddress,
}

fn rejected(reason: impl Into<String>) -> RailError {
    RailError::Rejected {
        reason: reason.into(),
    }
}

impl UniswapV2Venue {
    /// The venue of `router` (a `UniswapV2Router02`) trading for the wallets of `rail`,
    /// in the two stablecoins its chain profile configures.
    pub fn new(rail: std::sync::Arc<EvmRail>, router: EvmAddress) -> Self {
        UniswapV2Venue { rail, router }
    }

    /// The router the venue trades through.
    pub fn router(&self) -> EvmAddress {
        self.router
    }

    fn pair(&self, token_in: Token, token_out: Token) -> Result<(EvmToken, EvmToken), RailError> {
        if token_in == token_out {
            return Err(rejected(format!(
                "{token_in:?} cannot be swapped for itself"
            )));
        }
        Ok((self.rail.token(token_in)?, self.rail.token(token_out)?))
    }

    /// `getAmountsOut(amount_in, [token_in, token_out])[1]`, in `token_out`'s base units.
    /// A revert (no pair, no liquidity, a zero amount) is `Rejected` with its reason.
    pub async fn amount_out_base(
        &self,
        token_in: &EvmToken,
        token_out: &EvmToken,
        amount_in_base: u128,
    ) -> Result<u128, RailError> {
        let data = abi::call(
            "getAmountsOut(uint256,address[])",
            &[
                Abi::uint(amount_in_base),
                Abi::Array(vec![
                    Abi::address(&token_in.address.0),
                    Abi::address(&token_out.address.0),
                ]),
            ],
        );
        let out = match self.rail.eth_call(&self.router, &data).await {
            Ok(out) => out,
            Err(RpcError::Node {
                data: Some(revert), ..
            }) => return Err(rejected(abi::revert_reason(&revert))),
            Err(RpcError::Node { message, .. }) if message.contains("revert") => {
                return Err(rejected(message));
            }
            Err(e) => {
                return Err(RailError::Unavailable {
                    reason: format!("getAmountsOut: {e}"),
                });
            }
        };
        // uint256[]: offset, length (2), amounts[0] (= amount_in), amounts[1].
        abi::word(&out, 3)
            .and_then(|w| abi::word_u128(&w))
            .ok_or_else(|| RailError::Unavailable {
                reason: "getAmountsOut answered no amount below 2^128".into(),
            })
    }

    /// The calls of `order` in its account's batch: the approve and the swap.
    fn calls(&self, order: &SwapOrder, account: &EvmAddress) -> Result<Vec<Call>, RailError> {
        let (tin, tout) = self.pair(order.token_in, order.token_out)?;
        if order.amount_in.is_zero() {
            return Err(rejected("a swap needs an amount in"));
        }
        let amount_in = tin.base_units(order.amount_in);
        let deadline = match order.valid_until {
            Some(t) => u128::try_from(t.unix_secs().max(1)).unwrap_or(1),
            None => u128::from(now_secs() + DEFAULT_DEADLINE_SECS),
        };
        Ok(vec![
            Call {
                target: tin.address,
                data: abi::call(
                    "approve(address,uint256)",
                    &[Abi::address(&self.router.0), Abi::uint(amount_in)],
                ),
            },
            Call {
                target: self.router,
                data: abi::call(
                    "swapExactTokensForTokens(uint256,uint256,address[],address,uint256)",
                    &[
                        Abi::uint(amount_in),
                        Abi::uint(tout.base_units(order.min_amount_out)),
                        Abi::Array(vec![
                            Abi::address(&tin.address.0),
                            Abi::address(&tout.address.0),
                        ]),
                        Abi::address(&account.0),
                        Abi::uint(deadline),
                    ],
                ),
            },
        ])
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[async_trait]
impl SwapVenue for UniswapV2Venue {
    fn name(&self) -> &str {
        "uniswap_v2"
    }

    fn rail(&self) -> RailId {
        self.rail.id()
    }

    /// The router: the wallet approves it and it takes `amount_in`.
    async fn counterparty(&self) -> Option<stablecoin_core::ports::ChainAddress> {
        Some(stablecoin_core::ports::ChainAddress(
            self.router.to_string(),
        ))
    }

    async fn quote(
        &self,
        token_in: Token,
        token_out: Token,
        amount_in: Micros,
    ) -> Result<Micros, RailError> {
        let (tin, tout) = self.pair(token_in, token_out)?;
        if amount_in.is_zero() {
            return Err(rejected("a swap needs an amount in"));
        }
        let out = self
            .amount_out_base(&tin, &tout, tin.base_units(amount_in))
            .await?;
        tout.micros(out)
            .ok_or_else(|| rejected("the amount out does not fit in micro-units"))
    }

    async fn execute(&self, order: &SwapOrder) -> Result<Submission, RailError> {
        let account = parse_address(&order.from_address)?;
        let calls = self.calls(order, &account)?;
        let gas = self.rail.config().gas;
        self.rail
            .submit_calls(
                &order.id,
                &order.from,
                &order.from_address,
                &calls,
                gas.call_gas_base + gas.call_gas_per_swap,
                order.valid_until,
            )
            .await
    }

    async fn status(&self, order: &SwapOrder) -> Result<SwapStatus, RailError> {
        let status = self.rail.status(&order.id).await?;
        let amount_out = match &status {
            SubmissionStatus::Confirmed { .. } => Some(
                self.rail
                    .received(&order.id, order.token_out)
                    .await?
                    .ok_or_else(|| RailError::Unavailable {
                        reason: "the confirmed swap's receipt could not be read".into(),
                    })?,
            ),
            _ => None,
        };
        Ok(SwapStatus { status, amount_out })
    }
}
