//! Swaps on a real DEX: Uniswap V2's factory, pair and Router02 from the compiled
//! artifacts of the npm packages `@uniswap/v2-core` 1.0.1 and `@uniswap/v2-periphery`
//! 1.1.0-beta.0 (installed by `scripts/evm/install_tools.sh`), deployed on Anvil with a
//! USDC/USDT pool of 1,000,000 each, traded by [`UniswapV2Venue`] from ERC-4337 smart
//! accounts whose approve and swap run in one sponsored `executeBatch`.
//!
//! Every test deploys its own contracts (EntryPoint, tokens, Uniswap) on the shared Anvil
//! of its chain id and uses its own keys. Without Anvil or the artifacts every test
//! prints SKIPPED and passes, unless `EVM_REQUIRE_ANVIL` is set (as `scripts/test` does).
#![cfg(feature = "evm-test")]

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, RailError, RailId, SubmissionStatus, SwapOrder, SwapStatus, SwapVenue,
};
use stablecoin_rails::evm::testkit::{
    Uniswap, World, pair_init_code_hash, rail_over, uniswap_amount_out, uniswap_or_skip, wallet,
};
use stablecoin_rails::evm::{EvmAddress, EvmRail, UniswapV2Venue};
use std::sync::Arc;
use std::time::Duration;

macro_rules! require_uniswap {
    () => {
        if !uniswap_or_skip() {
            return;
        }
    };
}

/// 1,000,000 of each token in the pool, in micro-units.
const POOL: u64 = 1_000_000_000_000;

/// A world with its Uniswap, and the venue over a rail of its own.
struct Dex {
    w: World,
    uni: Uniswap,
    rail: Arc<EvmRail>,
    venue: UniswapV2Venue,
}

impl Dex {
    async fn on(chain_id: u64) -> Dex {
        let w = World::on_shared(chain_id).await;
        let uni = w.deploy_uniswap(POOL).await;
        let rail = Arc::new(rail_over(&w.config, w.node.rpc.clone(), w.signer.clone()));
        let venue = uni.venue(rail.clone());
        Dex {
            w,
            uni,
            rail,
            venue,
        }
    }

    /// A funded wallet: its key and account, holding `usdc` micro-units of USDC.
    async fn wallet(&self, name: &str, usdc: u64) -> (KeyPurpose, EvmAddress) {
        let p = wallet(name);
        let a = self.w.account(&p).await;
        self.w.mint(self.w.usdc, &a, usdc).await;
        (p, a)
    }

    fn order(
        &self,
        id: &str,
        from: (&KeyPurpose, &EvmAddress),
        amount_in: u64,
        quoted: u64,
        min_out: u64,
    ) -> SwapOrder {
        SwapOrder {
            id: id.into(),
            from: from.0.clone(),
            from_address: ChainAddress(from.1.to_string()),
            token_in: Token::Usdc,
            token_out: Token::Usdt,
            amount_in: Micros(amount_in),
            quoted_amount_out: Micros(quoted),
            min_amount_out: Micros(min_out),
            valid_until: None,
        }
    }

    /// Polls the venue until the order is final.
    async fn settle(&self, venue: &UniswapV2Venue, order: &SwapOrder) -> SwapStatus {
        for _ in 0..1_500 {
            let s = venue.status(order).await.expect("status");
            if !matches!(s.status, SubmissionStatus::Pending { .. }) {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("swap {} never left Pending", order.id);
    }

    /// (USDC, USDT) of `who`, base units.
    async fn balances(&self, who: &EvmAddress) -> (u128, u128) {
        (
            self.w.node.token_balance(&self.w.usdc, who).await,
            self.w.node.token_balance(&self.w.usdt, who).await,
        )
    }

    async fn reserves(&self) -> (u128, u128) {
        self.uni
            .reserves(&self.w.node, &self.w.usdc, &self.w.usdt)
            .await
    }

    /// Asserts a failed order moved nothing: the wallet's balances, the pool's reserves,
    /// and no allowance left to the router.
    async fn assert_nothing_moved(
        &self,
        who: &EvmAddress,
        balances: (u128, u128),
        reserves: (u128, u128),
    ) {
        assert_eq!(self.balances(who).await, balances, "the wallet's tokens");
        assert_eq!(self.reserves().await, reserves, "the pool's reserves");
        assert_eq!(
            self.uni.allowance(&self.w.node, &self.w.usdc, who).await,
            0,
            "the approve was undone with the swap"
        );
    }
}

#[tokio::test]
async fn the_npm_routers_init_code_hash_is_the_npm_pairs() {
    require_uniswap!();
    let d = Dex::on(137).await;
    // The router finds pairs by CREATE2 with a hard-coded hash: it must be the keccak of
    // the pair code the factory deploys, or every swap would call an empty address.
    let hash = pair_init_code_hash();
    assert_eq!(
        hex::encode(hash),
        "96e8ac4277198ff8b6f785478aa9a39f403cb768dd02cbee326c3e7da348845f"
    );
    let router_code = d.w.node.eth().code(&d.uni.router).await.expect("code");
    assert!(
        router_code.windows(32).any(|w| w == hash),
        "the router's runtime code carries the pair's init code hash"
    );
    assert_eq!(d.uni.pair_for(&d.w.usdt, &d.w.usdc), d.uni.pair);
    assert_eq!(d.reserves().await, (d.w.base(POOL), d.w.base(POOL)));
}

async fn a_swap_settles_at_uniswaps_price(chain_id: u64) {
    let d = Dex::on(chain_id).await;
    let (p, a) = d
        .wallet(&format!("swap_ok_{chain_id}"), 1_000_000_000)
        .await;
    assert_eq!(d.venue.name(), "uniswap_v2");
    assert_eq!(d.venue.rail(), RailId::Evm(chain_id));
    // 250.123457 USDC: an amount whose output is not a round number.
    let amount_in = 250_123_457;
    let (r_in, r_out) = d.reserves().await;
    let expected = uniswap_amount_out(d.w.base(amount_in), r_in, r_out);
    let scale = d.w.base(1);
    // With 18 decimals Uniswap's out has dust below a micro-unit: the rounding is tested.
    assert!(scale == 1 || !expected.is_multiple_of(scale), "{expected}");
    let quote = d
        .venue
        .quote(Token::Usdc, Token::Usdt, Micros(amount_in))
        .await
        .expect("quote");
    assert_eq!(u128::from(quote.0), expected / scale, "quote, rounded down");
    assert!(quote.0 < amount_in && quote.0 > amount_in * 99 / 100);
    let order = d.order(
        &format!("sw_ok_{chain_id}"),
        (&p, &a),
        amount_in,
        quote.0,
        quote.0 - quote.0 / 100,
    );
    let sub = d.venue.execute(&order).await.expect("execute");
    assert_eq!(sub.payment_id, order.id);
    let s = d.settle(&d.venue, &order).await;
    assert!(
        matches!(s.status, SubmissionStatus::Confirmed { .. }),
        "{s:?}"
    );
    assert_eq!(s.amount_out, Some(quote), "status reads what arrived");
    // On chain, to the base unit: exactly amount_in left, exactly Uniswap's out arrived.
    assert_eq!(
        d.balances(&a).await,
        (d.w.base(1_000_000_000 - amount_in), expected)
    );
    assert_eq!(
        d.reserves().await,
        (r_in + d.w.base(amount_in), r_out - expected)
    );
    assert_eq!(d.uni.allowance(&d.w.node, &d.w.usdc, &a).await, 0);
    assert_eq!(d.w.node.native_balance(&a).await, 0, "gas was sponsored");
}

#[tokio::test]
async fn a_swap_settles_at_uniswaps_price_to_the_base_unit_on_polygon() {
    require_uniswap!();
    a_swap_settles_at_uniswaps_price(137).await;
}

#[tokio::test]
async fn a_swap_settles_at_uniswaps_price_to_the_base_unit_on_bsc_18_decimals() {
    require_uniswap!();
    a_swap_settles_at_uniswaps_price(56).await;
}

#[tokio::test]
async fn slippage_beyond_the_minimum_fails_and_moves_nothing() {
    require_uniswap!();
    let d = Dex::on(137).await;
    let (p, a) = d.wallet("swap_slip", 100_000_000).await;
    let quote = d
        .venue
        .quote(Token::Usdc, Token::Usdt, Micros(40_000_000))
        .await
        .expect("quote");
    let before = d.balances(&a).await;
    let reserves = d.reserves().await;
    // One micro-unit more than the pool gives.
    let order = d.order("sw_slip", (&p, &a), 40_000_000, quote.0, quote.0 + 1);
    d.venue.execute(&order).await.expect("execute");
    let s = d.settle(&d.venue, &order).await;
    match &s.status {
        SubmissionStatus::Failed {
            reason, tx_hash, ..
        } => {
            assert!(reason.contains("call 1 of the batch reverted"), "{reason}");
            assert!(
                reason.contains("UniswapV2Router: INSUFFICIENT_OUTPUT_AMOUNT"),
                "{reason}"
            );
            assert!(tx_hash.is_some());
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(s.amount_out, None);
    d.assert_nothing_moved(&a, before, reserves).await;
    // The same quote as the minimum trades.
    let ok = d.order("sw_slip_ok", (&p, &a), 40_000_000, quote.0, quote.0);
    d.venue.execute(&ok).await.expect("execute");
    assert_eq!(d.settle(&d.venue, &ok).await.amount_out, Some(quote));
}

#[tokio::test]
async fn a_reverted_batch_fails_and_moves_nothing() {
    require_uniswap!();
    let d = Dex::on(137).await;
    let (p, a) = d.wallet("swap_short", 10_000_000).await;
    let before = d.balances(&a).await;
    let reserves = d.reserves().await;
    // More than the wallet holds: the router's transferFrom reverts, and the batch with it.
    let order = d.order("sw_short", (&p, &a), 10_000_001, 9_000_000, 0);
    d.venue.execute(&order).await.expect("execute");
    let s = d.settle(&d.venue, &order).await;
    match &s.status {
        SubmissionStatus::Failed { reason, .. } => {
            assert!(reason.contains("call 1 of the batch reverted"), "{reason}");
            assert!(reason.contains("TRANSFER_FROM_FAILED"), "{reason}");
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(s.amount_out, None);
    d.assert_nothing_moved(&a, before, reserves).await;
}

#[tokio::test]
async fn an_order_executed_twice_trades_once_even_from_a_restarted_rail() {
    require_uniswap!();
    let d = Dex::on(137).await;
    let (p, a) = d.wallet("swap_twice", 100_000_000).await;
    let quote = d
        .venue
        .quote(Token::Usdc, Token::Usdt, Micros(30_000_000))
        .await
        .expect("quote");
    let order = d.order("sw_twice", (&p, &a), 30_000_000, quote.0, quote.0);
    let first = d.venue.execute(&order).await.expect("execute");
    let again = d.venue.execute(&order).await.expect("execute again");
    assert_eq!(first, again, "the second execute sent nothing");
    assert_eq!(d.settle(&d.venue, &order).await.amount_out, Some(quote));
    // A rail without this process's journal finds the order's nonce key used.
    let restarted = Arc::new(rail_over(
        &d.w.config,
        d.w.node.rpc.clone(),
        d.w.signer.clone(),
    ));
    let venue = d.uni.venue(restarted);
    let third = venue
        .execute(&order)
        .await
        .expect("execute after a restart");
    assert_eq!(third.tx_hash, first.tx_hash);
    assert_eq!(d.settle(&venue, &order).await.amount_out, Some(quote));
    let (usdc, usdt) = d.balances(&a).await;
    assert_eq!(usdc, d.w.base(70_000_000), "one trade's amount in left");
    assert_eq!(d.w.node.native_balance(&a).await, 0);
    assert_eq!(
        d.rail.received(&order.id, Token::Usdt).await,
        Ok(Some(quote))
    );
    assert_eq!(u128::from(quote.0), usdt / d.w.base(1));
}

#[tokio::test]
async fn quotes_refuse_what_the_pool_cannot_trade() {
    require_uniswap!();
    let d = Dex::on(137).await;
    let same = d.venue.quote(Token::Usdc, Token::Usdc, Micros(1_000)).await;
    assert!(matches!(same, Err(RailError::Rejected { .. })), "{same:?}");
    let zero = d.venue.quote(Token::Usdc, Token::Usdt, Micros(0)).await;
    assert!(matches!(zero, Err(RailError::Rejected { .. })), "{zero:?}");
    // A router with no pair for the tokens: getAmountsOut reverts.
    let other = World::on_shared(137).await;
    let empty = other.deploy_uniswap(POOL).await;
    let venue = empty.venue(d.rail.clone());
    let none = venue.quote(Token::Usdc, Token::Usdt, Micros(1_000)).await;
    assert!(matches!(none, Err(RailError::Rejected { .. })), "{none:?}");
    // More than the pool holds buys less than the pool: the curve, not a linear price.
    let big = d
        .venue
        .quote(Token::Usdc, Token::Usdt, Micros(POOL))
        .await
        .expect("quote");
    assert!(big.0 < POOL / 2 + 1, "{big:?}");
}
