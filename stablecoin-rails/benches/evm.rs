//! EVM rail throughput (BENCHMARKS.md, "EVM rail"):
//!
//! 1. user operations built and signed per second, offline: `executeBatch` of three
//!    ERC-20 transfers, the paymaster's sponsorship digest signed by the service key, the
//!    EIP-712 user-operation hash signed by the owner key (two secp256k1 signatures);
//! 2. transfers settled per second end to end on Anvil (automine): `submit` (nonce read,
//!    build, sponsor, sign, `eth_estimateGas`, one `handleOps` bundle per operation) until
//!    `status` says Confirmed, for transfers from many accounts;
//! 3. swaps settled per second end to end on Anvil (BENCHMARKS.md, "Swaps on Anvil
//!    (Uniswap V2)"): [`UniswapV2Venue::execute`] (the approve and
//!    `swapExactTokensForTokens` in one sponsored `executeBatch`) until its `status` is
//!    Confirmed with the amount received, from as many accounts as (2), against one
//!    USDC/USDT pool; with the ratio to (2)'s rate, the ceiling of one bundle per
//!    operation.
//!
//! `cargo bench -p stablecoin-rails --features evm-test --bench evm`
//! (env `EVM_BENCH_OPS`, default 5000; `EVM_BENCH_TRANSFERS`, default 300;
//! `EVM_BENCH_SWAPS`, default 300; needs Anvil and the Uniswap artifacts:
//! `sh stablecoin-rails/scripts/evm/install_tools.sh`).

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, Curve, KeyPurpose, LegRole, Rail, Signer, SubmissionStatus, SwapOrder, SwapVenue,
};
use stablecoin_rails::evm::testkit::{
    Anvil, World, confirmed_tx, find_anvil, rail_over, uniswap_artifact, wallet,
};
use stablecoin_rails::evm::userop::{
    AccountFactory, Call, Nonce, Sponsorship, UserOp, erc20_transfer_call, execute_batch_call,
};
use stablecoin_rails::evm::{EvmAddress, UniswapV2Venue};
use std::sync::Arc;
use std::time::Instant;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn build_and_sign(n: usize) {
    let signer = LocalSigner::from_seed([5; 32]);
    let factory = AccountFactory {
        address: EvmAddress([0x11; 20]),
        proxy_creation_code: hex::decode(
            stablecoin_rails::evm::ERC1967_PROXY_V08
                .trim()
                .trim_start_matches("0x"),
        )
        .expect("proxy code"),
    };
    let entry_point = EvmAddress([0x43; 20]);
    let token = EvmAddress([0x55; 20]);
    let sponsorship = Sponsorship {
        paymaster: EvmAddress([0x77; 20]),
        verification_gas_limit: 80_000,
        post_op_gas_limit: 0,
        valid_until: 0,
        valid_after: 0,
    };
    let purpose = KeyPurpose::Wallet("wal_bench".into());
    let pk = signer
        .public_key(&purpose, Curve::Secp256k1)
        .await
        .expect("key");
    let owner = EvmAddress::from_public_key(&pk.bytes).expect("address");
    let sender = factory.account_address(&owner, 0);
    let to = [
        EvmAddress([1; 20]),
        EvmAddress([2; 20]),
        EvmAddress([3; 20]),
    ];
    let started = Instant::now();
    let mut check = 0u8;
    for i in 0..n {
        let calls: Vec<Call> = to
            .iter()
            .enumerate()
            .map(|(k, t)| Call {
                target: token,
                data: erc20_transfer_call(t, 1_000_000 + (i * 3 + k) as u128),
            })
            .collect();
        let mut op = UserOp {
            sender,
            nonce: Nonce {
                key: Nonce::key_for(&format!("op_{i}")),
                seq: 0,
            },
            init_code: Vec::new(),
            call_data: execute_batch_call(&calls),
            verification_gas_limit: 120_000,
            call_gas_limit: 250_000,
            pre_verification_gas: 60_000,
            max_priority_fee_per_gas: 1_000_000_000,
            max_fee_per_gas: 3_000_000_000,
            paymaster_and_data: Vec::new(),
            signature: Vec::new(),
        };
        let digest = op.paymaster_digest(&sponsorship, 137);
        let pm = signer
            .sign(&KeyPurpose::Sponsor, Curve::Secp256k1, &digest)
            .await
            .expect("sign");
        op.paymaster_and_data = sponsorship.encode(&pm.0);
        let hash = op.hash(&entry_point, 137);
        op.signature = signer
            .sign(&purpose, Curve::Secp256k1, &hash)
            .await
            .expect("sign")
            .0;
        check ^= op.signature[0];
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "user operations built+signed  {n} ops: {secs:.2} s, {:.0} ops/s (one core; checksum {check})",
        n as f64 / secs
    );
}

/// `n` transfers from 20 accounts settled on a fresh Anvil. `batch` 1: one `submit` per
/// transfer, so one `handleOps` per operation (the single-op self-bundler); above 1:
/// `submit_batch` of `batch` payments at a time, packed into multi-op bundles.
async fn settle_on_anvil(n: usize, batch: usize) -> Option<f64> {
    if find_anvil().is_none() {
        println!(
            "transfers settled on Anvil: SKIPPED (no anvil; run scripts/evm/install_tools.sh)"
        );
        return None;
    }
    let anvil = Anvil::start(137, true);
    let w = World::deploy(&anvil.url, 137, true, |_| {}).await;
    let senders = 20.min(n.max(1));
    let mut from = Vec::new();
    for s in 0..senders {
        let p = wallet(&format!("bench_{s}"));
        let a = w.account(&p).await;
        w.mint(w.usdc, &a, 1_000_000_000).await;
        from.push(p);
    }
    let to = w.account(&wallet("bench_to")).await;
    let mut payments = Vec::with_capacity(n);
    for i in 0..n {
        payments.push(
            w.payment(
                &format!("op_bench_{i}"),
                &from[i % senders],
                vec![(to, 1_000_000, LegRole::Recipient)],
            )
            .await,
        );
    }
    let started = Instant::now();
    let mut pending = Vec::new();
    if batch <= 1 {
        for p in &payments {
            w.rail.submit(p).await.expect("submit");
            pending.push(p.id.clone());
        }
    } else {
        for chunk in payments.chunks(batch) {
            for a in w.rail.submit_batch(chunk).await {
                a.expect("submit");
            }
            pending.extend(chunk.iter().map(|p| p.id.clone()));
        }
    }
    let submitted = started.elapsed().as_secs_f64();
    // Confirmations polled side by side, as the engine's worker polls its claimed
    // operations.
    for st in futures_util::future::join_all(pending.iter().map(|id| w.settle(&w.rail, id))).await {
        confirmed_tx(&st);
    }
    let secs = started.elapsed().as_secs_f64();
    let received = w
        .rail
        .balance(
            &stablecoin_core::ports::ChainAddress(to.to_string()),
            stablecoin_core::domain::money::Token::Usdc,
        )
        .await
        .expect("balance");
    assert_eq!(received.0, 1_000_000 * n as u64, "every transfer arrived");
    let mode = if batch <= 1 {
        "single-op bundles".to_string()
    } else {
        format!("submit_batch of {batch}, multi-op bundles")
    };
    println!(
        "transfers settled on Anvil    {n} transfers from {senders} accounts (the first of each deploys it), {mode}: submitted in {submitted:.2} s, settled in {secs:.2} s, {:.0} transfers/s",
        n as f64 / secs
    );
    Some(n as f64 / secs)
}

async fn swaps_on_anvil(n: usize, transfers_per_sec: Option<f64>) {
    if find_anvil().is_none() || uniswap_artifact("UniswapV2Router02").is_none() {
        println!(
            "swaps settled on Anvil: SKIPPED (no anvil or Uniswap artifacts; run scripts/evm/install_tools.sh)"
        );
        return;
    }
    let anvil = Anvil::start(137, true);
    let w = World::deploy(&anvil.url, 137, true, |_| {}).await;
    let uni = w.deploy_uniswap(1_000_000_000_000).await;
    let venue: UniswapV2Venue = uni.venue(Arc::new(rail_over(
        &w.config,
        w.node.rpc.clone(),
        w.signer.clone(),
    )));
    let senders = 20.min(n.max(1));
    let mut from = Vec::new();
    for s in 0..senders {
        let p = wallet(&format!("swap_bench_{s}"));
        let a = w.account(&p).await;
        w.mint(w.usdc, &a, 1_000_000_000).await;
        from.push((p, a));
    }
    let amount_in = Micros(1_000_000);
    let started = Instant::now();
    let mut orders = Vec::new();
    for i in 0..n {
        // A fresh quote per order, as the engine takes one when it accepts a swap.
        let quote = venue
            .quote(Token::Usdc, Token::Usdt, amount_in)
            .await
            .expect("quote");
        let (p, a) = &from[i % senders];
        let order = SwapOrder {
            id: format!("sw_bench_{i}"),
            from: p.clone(),
            from_address: ChainAddress(a.to_string()),
            token_in: Token::Usdc,
            token_out: Token::Usdt,
            amount_in,
            quoted_amount_out: quote,
            min_amount_out: Micros(quote.0 - quote.0 / 100),
            valid_until: None,
        };
        venue.execute(&order).await.expect("execute");
        orders.push(order);
    }
    let mut out = 0u64;
    for order in &orders {
        loop {
            let s = venue.status(order).await.expect("status");
            match s.status {
                SubmissionStatus::Pending { .. } => {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
                SubmissionStatus::Confirmed { .. } => {
                    out += s.amount_out.expect("amount out").0;
                    break;
                }
                other => panic!("swap {} did not settle: {other:?}", order.id),
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let mut received = 0u128;
    for (_, a) in &from {
        received += w.node.token_balance(&w.usdt, a).await;
    }
    assert_eq!(received, u128::from(out), "every swap's amount out arrived");
    let rate = n as f64 / secs;
    let ratio = transfers_per_sec.map_or(String::new(), |t| {
        format!(" ({:.0}% of the transfers' rate)", 100.0 * rate / t)
    });
    println!(
        "swaps settled on Anvil        {n} Uniswap V2 swaps from {senders} accounts (the first of each deploys it): {secs:.2} s, {rate:.0} swaps/s{ratio}"
    );
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return; // `cargo test` builds benches; only `cargo bench` runs this.
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        build_and_sign(env("EVM_BENCH_OPS", 5_000)).await;
        let transfers = settle_on_anvil(env("EVM_BENCH_TRANSFERS", 300), 1).await;
        let batched = settle_on_anvil(env("EVM_BENCH_TRANSFERS", 300), 64).await;
        if let (Some(single), Some(multi)) = (transfers, batched) {
            println!(
                "multi-op against single-op    {:.1}x in this run",
                multi / single
            );
        }
        swaps_on_anvil(env("EVM_BENCH_SWAPS", 300), transfers).await;
    });
}
