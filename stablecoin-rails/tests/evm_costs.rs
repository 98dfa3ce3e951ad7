//! What a confirmed ERC-4337 payment cost the service (`SubmissionStatus::Confirmed::cost`,
//! metered by sponsorship budgets), on Anvil: the user operation's `actualGasCost`, which
//! must be exactly what the paymaster's deposit in the EntryPoint lost, with the service
//! as its own bundler and with Alto (whose `eth_getUserOperationReceipt` reports the same
//! figure). An operation that reverts in execution is charged too: its `Failed` carries
//! the same figure. Without Anvil (or Alto) the tests print SKIPPED and pass, unless
//! `EVM_REQUIRE_ANVIL` is set.
#![cfg(feature = "evm-test")]

use serde_json::json;
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{KeyPurpose, LegRole, Rail, SponsorCost, SubmissionStatus};
use stablecoin_rails::evm::abi::{self, Abi};
use stablecoin_rails::evm::rpc::hex0x;
use stablecoin_rails::evm::testkit::{
    Alto, Anvil, ENTRY_POINT_V08, World, alto_or_skip, anvil_or_skip, rail_with_bundler, wallet,
};
use stablecoin_rails::evm::{EvmAddress, EvmRail, HttpJsonRpc, JsonRpc, RpcBundler};
use std::sync::Arc;
use std::time::Duration;

/// The paymaster's deposit in the EntryPoint (`balanceOf(paymaster)`), in wei: what pays
/// every sponsored operation's gas.
async fn deposit(w: &World) -> u128 {
    w.node
        .eth()
        .call_uint(
            &w.config.entry_point,
            &abi::call("balanceOf(address)", &[Abi::address(&w.config.paymaster.0)]),
        )
        .await
        .expect("EntryPoint balanceOf")
}

fn cost_of(s: &SubmissionStatus) -> SponsorCost {
    match s {
        SubmissionStatus::Confirmed { cost, .. } => cost.expect("a confirmed payment's cost"),
        other => panic!("expected Confirmed, got {other:?}"),
    }
}

/// Sends `id` (USDC from `from` to `to`) on `rail`, waits for it to confirm and answers
/// its cost and the deposit's loss over it.
async fn pay(
    w: &World,
    rail: &EvmRail,
    id: &str,
    from: &KeyPurpose,
    legs: Vec<(EvmAddress, u64, LegRole)>,
) -> (SponsorCost, u128) {
    let before = deposit(w).await;
    let p = w.payment(id, from, legs).await;
    rail.submit(&p).await.expect("submit");
    let cost = cost_of(&w.settle(rail, id).await);
    let after = deposit(w).await;
    (cost, before - after)
}

#[tokio::test]
async fn a_self_bundled_payment_reports_what_the_paymaster_deposit_lost() {
    if !anvil_or_skip() {
        return;
    }
    let w = World::on_shared(137).await;
    let treasury = w.account(&KeyPurpose::Treasury).await;
    let alice_p = wallet("cost_alice");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("cost_bob")).await;
    let fees = w.account(&KeyPurpose::ServiceFees).await;
    w.mint(w.usdc, &treasury, 1_000_000_000).await;

    // The first payment deploys the treasury's account: its cost includes that.
    let (cost, lost) = pay(
        &w,
        &w.rail,
        "cost_fund",
        &KeyPurpose::Treasury,
        vec![(alice, 250_000_000, LegRole::Recipient)],
    )
    .await;
    assert!(lost > 0, "the deposit paid nothing");
    assert_eq!(
        cost,
        SponsorCost {
            native: lost,
            energy: 0,
            bandwidth: 0,
        }
    );
    // A two-leg payment from alice's account, deployed on the way too.
    let (cost2, lost2) = pay(
        &w,
        &w.rail,
        "cost_send",
        &alice_p,
        vec![
            (bob, 10_000_000, LegRole::Recipient),
            (fees, 30_000, LegRole::ServiceFee),
        ],
    )
    .await;
    assert_eq!(cost2.native, lost2);
    // A second send from the deployed account costs less than its deploying one.
    let (cost3, lost3) = pay(
        &w,
        &w.rail,
        "cost_send_again",
        &alice_p,
        vec![(bob, 1_000_000, LegRole::Recipient)],
    )
    .await;
    assert_eq!(cost3.native, lost3);
    assert!(cost3.native < cost2.native, "{cost3:?} vs {cost2:?}");
    // Polled again later, a confirmed payment reports the same cost.
    assert_eq!(cost_of(&w.rail.status("cost_fund").await.unwrap()), cost);
}

#[tokio::test]
async fn an_alto_bundled_payment_reports_the_deposit_loss_and_alto_agrees() {
    if !alto_or_skip() {
        return;
    }
    const CHAIN: u64 = 8453;
    let anvil = Anvil::start(CHAIN, true);
    let signer = Arc::new(LocalSigner::from_seed([83; 32]));
    let w = World::deploy_canonical(&anvil.url, CHAIN, signer, |_| {}).await;
    assert_eq!(w.config.entry_point, ENTRY_POINT_V08);
    let alto = Alto::start(&w.node, &anvil.url).await;
    let bundler = Arc::new(RpcBundler::http(
        &alto.url,
        ENTRY_POINT_V08,
        Duration::from_secs(10),
    ));
    let rail = rail_with_bundler(&w.config, w.node.rpc.clone(), w.signer.clone(), bundler);
    let treasury = w.account(&KeyPurpose::Treasury).await;
    let bob = w.account(&wallet("alto_cost_bob")).await;
    w.mint(w.usdc, &treasury, 1_000_000_000).await;

    let (cost, lost) = pay(
        &w,
        &rail,
        "alto_cost",
        &KeyPurpose::Treasury,
        vec![(bob, 5_000_000, LegRole::Recipient)],
    )
    .await;
    assert!(lost > 0, "the deposit paid nothing");
    assert_eq!(cost.native, lost);
    assert_eq!((cost.energy, cost.bandwidth), (0, 0));
    // Alto's `eth_getUserOperationReceipt` reports the same `actualGasCost`.
    let op_hash = rail.submitted("alto_cost").expect("journaled").user_op_hash;
    let alto_rpc = HttpJsonRpc::new(alto.url.clone(), Duration::from_secs(10));
    let receipt = alto_rpc
        .request("eth_getUserOperationReceipt", json!([hex0x(&op_hash)]))
        .await
        .expect("eth_getUserOperationReceipt");
    let reported = match &receipt["actualGasCost"] {
        serde_json::Value::String(h) => u128::from_str_radix(h.trim_start_matches("0x"), 16).ok(),
        serde_json::Value::Number(n) => n.as_u64().map(u128::from),
        _ => None,
    }
    .unwrap_or_else(|| panic!("no actualGasCost in {receipt}"));
    assert_eq!(reported, cost.native);
}

#[tokio::test]
async fn a_user_operation_that_reverts_in_execution_reports_what_the_deposit_lost() {
    if !anvil_or_skip() {
        return;
    }
    let w = World::on_shared(137).await;
    let alice_p = wallet("revcost_alice");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("revcost_bob")).await;
    w.mint(w.usdc, &alice, 20_000_000).await;
    // The token refuses bob: validation passes (the paymaster sponsors the operation),
    // then its call reverts in execution and nothing moves.
    w.node
        .send(
            Some(w.usdc),
            abi::call(
                "setBlocked(address,bool)",
                &[Abi::address(&bob.0), Abi::uint(1)],
            ),
            0,
        )
        .await;
    let before = deposit(&w).await;
    let p = w
        .payment(
            "revcost",
            &alice_p,
            vec![(bob, 5_000_000, LegRole::Recipient)],
        )
        .await;
    w.rail.submit(&p).await.expect("submit");
    let cost = match w.settle(&w.rail, "revcost").await {
        SubmissionStatus::Failed { reason, cost, .. } => {
            assert!(reason.contains("TestToken: blocked"), "{reason}");
            cost.expect("a reverted operation's cost")
        }
        other => panic!("expected Failed, got {other:?}"),
    };
    let lost = before - deposit(&w).await;
    // The EntryPoint charged the reverted operation's gas to the paymaster all the same.
    assert!(lost > 0, "the deposit paid nothing");
    assert_eq!(
        cost,
        SponsorCost {
            native: lost,
            energy: 0,
            bandwidth: 0,
        }
    );
    assert_eq!(w.usdc_of(&alice).await, w.base(20_000_000));
    assert_eq!(w.usdc_of(&bob).await, 0);
    // Polled again, the failure reports the same cost.
    match w.rail.status("revcost").await.unwrap() {
        SubmissionStatus::Failed { cost: again, .. } => assert_eq!(again, Some(cost)),
        other => panic!("{other:?}"),
    }
}
