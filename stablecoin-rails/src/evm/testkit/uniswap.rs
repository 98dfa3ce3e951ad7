//! Uniswap V2 on a test node: WETH9, the factory and Router02 deployed from the compiled
//! artifacts of the npm packages `@uniswap/v2-core` and `@uniswap/v2-periphery`
//! (installed into `scripts/evm/node_modules` by `scripts/evm/install_tools.sh`), and
//! the USDC/USDT pair of a [`World`] created with liquidity seeded by the dev account.
//! Shared by `tests/evm_uniswap.rs`, `benches/evm.rs` and the server's tests.

use super::{Node, World, anvil_or_skip};
use crate::evm::abi::{self, Abi, keccak};
use crate::evm::{EvmAddress, EvmRail, UniswapV2Venue};
use std::path::PathBuf;
use std::sync::Arc;

/// `scripts/evm/node_modules/@uniswap`, where `install_tools.sh` puts the packages.
pub fn uniswap_dir() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/evm/node_modules/@uniswap")
}

/// The creation code of a Uniswap V2 contract from its npm artifact: `name` is looked
/// up in `v2-core/build` then `v2-periphery/build` (`UniswapV2Factory`, `UniswapV2Pair`,
/// `UniswapV2Router02`, `WETH9`); the artifacts carry it, unprefixed hex, as `bytecode`
/// (and again as `evm.bytecode.object`). `None` when not installed.
pub fn uniswap_artifact(name: &str) -> Option<Vec<u8>> {
    ["v2-core", "v2-periphery"].iter().find_map(|pkg| {
        let path = uniswap_dir()
            .join(pkg)
            .join("build")
            .join(format!("{name}.json"));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
        let code = json["bytecode"]
            .as_str()
            .or_else(|| json["evm"]["bytecode"]["object"].as_str())?;
        hex::decode(code.trim_start_matches("0x")).ok()
    })
}

/// Whether the swap tests can run: Anvil ([`anvil_or_skip`]) and the Uniswap artifacts.
/// Without the artifacts: `false` after printing SKIPPED, or a failure when
/// `EVM_REQUIRE_ANVIL` is set (as `scripts/test` does, after `install_tools.sh`).
pub fn uniswap_or_skip() -> bool {
    if !anvil_or_skip() {
        return false;
    }
    if uniswap_artifact("UniswapV2Router02").is_some() {
        return true;
    }
    assert!(
        std::env::var_os("EVM_REQUIRE_ANVIL").is_none(),
        "EVM_REQUIRE_ANVIL is set but the Uniswap V2 artifacts are not installed in {}",
        uniswap_dir().display()
    );
    eprintln!("SKIPPED: no Uniswap V2 artifacts (run scripts/evm/install_tools.sh)");
    false
}

/// keccak of the pair's creation code: what the factory's CREATE2 uses and the router's
/// `UniswapV2Library.pairFor` has hard-coded (its `init code hash`).
pub fn pair_init_code_hash() -> [u8; 32] {
    keccak(&uniswap_artifact("UniswapV2Pair").expect("UniswapV2Pair artifact"))
}

/// Uniswap V2's `getAmountOut`: what `amount_in` buys against reserves `(r_in, r_out)`
/// after the 0.3% fee, rounded down: `amount_in·997·r_out / (r_in·1000 + amount_in·997)`,
/// in 256-bit arithmetic as the contract does (18-decimal amounts overflow 128 bits).
pub fn uniswap_amount_out(amount_in: u128, r_in: u128, r_out: u128) -> u128 {
    let in_with_fee = amount_in * 997;
    mul_div(in_with_fee, r_out, r_in * 1000 + in_with_fee)
}

/// `a·b / d` rounded down, the product in 256 bits; the quotient must fit in 128.
fn mul_div(a: u128, b: u128, d: u128) -> u128 {
    // a·b as (hi, lo) from 64-bit halves.
    let (a1, a0) = (a >> 64, a & u128::from(u64::MAX));
    let (b1, b0) = (b >> 64, b & u128::from(u64::MAX));
    let (lo_lo, mid1, mid2, hi_hi) = (a0 * b0, a0 * b1, a1 * b0, a1 * b1);
    let (mid, mid_carry) = mid1.overflowing_add(mid2);
    let (lo, lo_carry) = lo_lo.overflowing_add(mid << 64);
    let hi = hi_hi + (mid >> 64) + (u128::from(mid_carry) << 64) + u128::from(lo_carry);
    // Long division of (hi, lo) by d, bit by bit.
    let (mut rem, mut q) = (0u128, 0u128);
    for i in (0..256).rev() {
        let bit = if i >= 128 {
            (hi >> (i - 128)) & 1
        } else {
            (lo >> i) & 1
        };
        let carry = rem >> 127;
        rem = (rem << 1) | bit;
        if carry == 1 || rem >= d {
            rem = rem.wrapping_sub(d);
            assert!(i < 128, "quotient above 2^128");
            q |= 1 << i;
        }
    }
    q
}

#[cfg(test)]
mod tests {
    #[test]
    fn mul_div_is_exact_beyond_128_bits() {
        assert_eq!(super::mul_div(7, 9, 4), 15);
        let e24 = 10u128.pow(24);
        // 2.5e20 · 1e24 / 1e24 = 2.5e20, through a 2.5e44 product.
        assert_eq!(
            super::mul_div(25 * 10u128.pow(19), e24, e24),
            25 * 10u128.pow(19)
        );
        assert_eq!(super::mul_div(u128::MAX, u128::MAX, u128::MAX), u128::MAX);
        assert_eq!(super::mul_div(u128::MAX, 3, 6), u128::MAX / 2);
    }
}

/// Uniswap V2 deployed on a node, and the USDC/USDT pair of one [`World`].
#[derive(Clone, Copy, Debug)]
pub struct Uniswap {
    /// WETH9 (the router's constructor wants one; the stablecoin pair never uses it).
    pub weth: EvmAddress,
    /// UniswapV2Factory (`feeToSetter`: the world's dev account; no protocol fee).
    pub factory: EvmAddress,
    /// UniswapV2Router02: what [`UniswapV2Venue`] trades through.
    pub router: EvmAddress,
    /// The world's USDC/USDT pair.
    pub pair: EvmAddress,
}

async fn deploy_artifact(node: &Node, name: &str, args: &[Abi]) -> EvmAddress {
    let mut data = uniswap_artifact(name).unwrap_or_else(|| panic!("{name} artifact"));
    data.extend(abi::encode(args));
    let r = node.send(None, data, 0).await;
    r["contractAddress"]
        .as_str()
        .expect("contractAddress")
        .parse()
        .expect("address")
}

impl World {
    /// Deploys WETH9, the factory and the router, and creates the world's USDC/USDT pair
    /// through the router's `addLiquidity` with `liquidity_micros` of each token (minted
    /// to the dev account, which keeps the LP tokens): a 1:1 pool.
    pub async fn deploy_uniswap(&self, liquidity_micros: u64) -> Uniswap {
        let node = &self.node;
        let weth = deploy_artifact(node, "WETH9", &[]).await;
        let factory = deploy_artifact(node, "UniswapV2Factory", &[Abi::address(&node.dev.0)]).await;
        let router = deploy_artifact(
            node,
            "UniswapV2Router02",
            &[Abi::address(&factory.0), Abi::address(&weth.0)],
        )
        .await;
        let amount = self.base(liquidity_micros);
        for token in [self.usdc, self.usdt] {
            self.mint(token, &node.dev, liquidity_micros).await;
            node.send(
                Some(token),
                abi::call(
                    "approve(address,uint256)",
                    &[Abi::address(&router.0), Abi::uint(amount)],
                ),
                0,
            )
            .await;
        }
        node.send(
            Some(router),
            abi::call(
                "addLiquidity(address,address,uint256,uint256,uint256,uint256,address,uint256)",
                &[
                    Abi::address(&self.usdc.0),
                    Abi::address(&self.usdt.0),
                    Abi::uint(amount),
                    Abi::uint(amount),
                    Abi::uint(amount),
                    Abi::uint(amount),
                    Abi::address(&node.dev.0),
                    Abi::uint(u128::from(u64::MAX)),
                ],
            ),
            0,
        )
        .await;
        let pair_word = node
            .eth()
            .call(
                &factory,
                &abi::call(
                    "getPair(address,address)",
                    &[Abi::address(&self.usdc.0), Abi::address(&self.usdt.0)],
                ),
            )
            .await
            .expect("getPair");
        let pair = crate::evm::rpc::topic_address(&abi::word(&pair_word, 0).expect("a word"));
        assert_ne!(pair, EvmAddress::ZERO, "addLiquidity created the pair");
        Uniswap {
            weth,
            factory,
            router,
            pair,
        }
    }
}

impl Uniswap {
    /// A [`UniswapV2Venue`] on `rail` through this router.
    pub fn venue(&self, rail: Arc<EvmRail>) -> UniswapV2Venue {
        UniswapV2Venue::new(rail, self.router)
    }

    /// The pair's reserves as `(reserve of token_in, reserve of token_out)`, base units.
    pub async fn reserves(
        &self,
        node: &Node,
        token_in: &EvmAddress,
        token_out: &EvmAddress,
    ) -> (u128, u128) {
        let out = node
            .eth()
            .call(&self.pair, &abi::call("getReserves()", &[]))
            .await
            .expect("getReserves");
        let r = |n| {
            abi::word(&out, n)
                .and_then(|w| abi::word_u128(&w))
                .expect("reserve")
        };
        let (r0, r1) = (r(0), r(1));
        // token0 is the lower address.
        assert!(token_in != token_out);
        if token_in.0 < token_out.0 {
            (r0, r1)
        } else {
            (r1, r0)
        }
    }

    /// The pair's address as the router derives it: CREATE2 by the factory, salt
    /// keccak(token0 ‖ token1), with [`pair_init_code_hash`].
    pub fn pair_for(&self, a: &EvmAddress, b: &EvmAddress) -> EvmAddress {
        let (t0, t1) = if a.0 < b.0 { (a, b) } else { (b, a) };
        let mut packed = t0.0.to_vec();
        packed.extend_from_slice(&t1.0);
        EvmAddress::create2(&self.factory, &keccak(&packed), &pair_init_code_hash())
    }

    /// `owner`'s allowance of `token` to the router, in base units.
    pub async fn allowance(&self, node: &Node, token: &EvmAddress, owner: &EvmAddress) -> u128 {
        node.eth()
            .call_uint(
                token,
                &abi::call(
                    "allowance(address,address)",
                    &[Abi::address(&owner.0), Abi::address(&self.router.0)],
                ),
            )
            .await
            .expect("allowance")
    }
}
