//! Stuck bundles on Anvil (issue #49): a bundle priced below a base fee that rose after
//! it was sent is replaced at its nonce, and the payments queued behind it settle; one
//! that would need more than the fee ceiling is cancelled, and its payment fails unpaid.
//!
//! Each test runs its own Anvil with automining off, so it decides what each block
//! holds, and raises the base fee with `anvil_setNextBlockBaseFeePerGas` before each
//! block it mines.

use serde_json::json;
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::KeyPurpose;
use stablecoin_core::ports::{LegRole, Rail, SubmissionStatus};
use stablecoin_rails::evm::rpc::hex0x;
use stablecoin_rails::evm::testkit::{
    Anvil, World, anvil_or_skip, confirmed_tx, rail_with_bundler, wallet,
};
use stablecoin_rails::evm::{Ceiling, EvmAddress, EvmRail, JsonRpc, Replacement, SelfBundler};
use std::sync::Arc;
use std::time::Duration;

const GWEI: u128 = 1_000_000_000;

/// A rail whose bundler replaces a bundle unmined `after` its send, checking at every
/// poll, up to `ceiling`.
fn rail_of(w: &World, after: Duration, ceiling: Ceiling) -> (EvmRail, Arc<SelfBundler>) {
    let bundler = Arc::new(
        SelfBundler::new(
            w.node.rpc.clone(),
            w.signer.clone(),
            KeyPurpose::Sponsor,
            w.config.entry_point,
            w.config.chain_id,
        )
        .with_replacement(Replacement {
            after,
            check_every: Duration::ZERO,
            ceiling,
            final_depth: 1,
        }),
    );
    let rail = rail_with_bundler(
        &w.config,
        w.node.rpc.clone(),
        w.signer.clone(),
        bundler.clone(),
    );
    (rail, bundler)
}

/// Mines one block whose base fee is `base_fee` wei.
async fn mine_at(w: &World, base_fee: u128) {
    w.node
        .rpc
        .request(
            "anvil_setNextBlockBaseFeePerGas",
            json!([format!("0x{base_fee:x}")]),
        )
        .await
        .expect("anvil_setNextBlockBaseFeePerGas");
    w.node.mine(1).await;
}

async fn mined_nonce(w: &World, who: &EvmAddress) -> u64 {
    w.node.eth().latest_nonce(who).await.expect("nonce")
}

async fn receipt_exists(w: &World, hash: &[u8; 32]) -> bool {
    w.node.eth().receipt(hash).await.expect("receipt").is_some()
}

#[tokio::test]
async fn a_bundle_below_a_risen_base_fee_is_replaced_and_the_queue_behind_it_settles() {
    if !anvil_or_skip() {
        return;
    }
    let anvil = Anvil::start(137, false);
    let w = World::deploy(&anvil.url, 137, false, |_| {}).await;
    // Long enough that A is not replaced while B and C are sent.
    let after = Duration::from_secs(5);
    let (rail, bundler) = rail_of(&w, after, Ceiling::Wei(1_000 * GWEI));
    let sponsor = bundler.address().await.unwrap();
    let payers = ["stuck_a", "stuck_b", "stuck_c"].map(wallet);
    let mut bobs = Vec::new();
    for (i, p) in payers.iter().enumerate() {
        let from = w.account(p).await;
        w.mint(w.usdc, &from, 10_000_000).await;
        bobs.push(w.account(&wallet(&format!("stuck_bob{i}"))).await);
    }
    let first_nonce = mined_nonce(&w, &sponsor).await;

    // A's bundle is priced for a 1 gwei base fee; then the base fee jumps to 50 gwei.
    // Anvil then drops it from its pool (geth would keep it, unminable): either way it
    // is not mined, and its nonce is not used.
    let a = w
        .payment(
            "op_a",
            &payers[0],
            vec![(bobs[0], 1_000_000, LegRole::Recipient)],
        )
        .await;
    let first = rail.submit(&a).await.expect("submit a");
    let first_hash = first.tx_hash.clone().expect("bundle hash");
    mine_at(&w, 50 * GWEI).await;
    assert_eq!(mined_nonce(&w, &sponsor).await, first_nonce, "A is stuck");

    // B and C are priced for the new fee, at the next nonces: they wait for A's.
    let mut later = Vec::new();
    for (i, id) in [(1, "op_b"), (2, "op_c")] {
        let p = w
            .payment(
                id,
                &payers[i],
                vec![(bobs[i], 2_000_000, LegRole::Recipient)],
            )
            .await;
        later.push(rail.submit(&p).await.expect("submit"));
    }
    mine_at(&w, 50 * GWEI).await;
    assert_eq!(
        mined_nonce(&w, &sponsor).await,
        first_nonce,
        "everything waits behind A"
    );

    // Once A has waited `after`, a status poll replaces its bundle at its nonce, priced
    // for the chain now (B and C, as old, are re-sent too).
    tokio::time::sleep(after).await;
    let report = bundler.replace_stuck().await.expect("a round");
    let replaced: Vec<u64> = report.replaced.iter().map(|(n, _)| *n).collect();
    assert!(replaced.contains(&first_nonce), "{report:?}");
    assert!(report.cancelled.is_empty(), "{report:?}");
    let sent = bundler.sent_at(first_nonce).await;
    assert_eq!(sent.len(), 2, "the first bundle and its replacement");
    let a_replaced = report
        .replaced
        .iter()
        .find(|(n, _)| *n == first_nonce)
        .unwrap();
    assert_eq!(sent[1], a_replaced.1);
    assert_eq!(hex0x(&sent[0]), first_hash);

    mine_at(&w, 50 * GWEI).await;
    // The rail finds A by its UserOperationEvent, in the replacement.
    let settled_a = confirmed_tx(&w.settle(&rail, "op_a").await);
    assert_eq!(settled_a, hex0x(&sent[1]), "A settled in its replacement");
    assert!(
        !receipt_exists(&w, &sent[0]).await,
        "the first bundle never mined"
    );
    for (id, sub) in [("op_b", &later[0]), ("op_c", &later[1])] {
        let tx = confirmed_tx(&w.settle(&rail, id).await);
        assert!(!tx.is_empty());
        assert!(sub.tx_hash.is_some());
    }
    // Each paid once, and the bundler's nonces have no gap.
    assert_eq!(w.usdc_of(&bobs[0]).await, w.base(1_000_000));
    assert_eq!(w.usdc_of(&bobs[1]).await, w.base(2_000_000));
    assert_eq!(w.usdc_of(&bobs[2]).await, w.base(2_000_000));
    let payer_a = w.account(&payers[0]).await;
    assert_eq!(w.usdc_of(&payer_a).await, w.base(9_000_000));
    assert_eq!(mined_nonce(&w, &sponsor).await, first_nonce + 3);
    // Nothing left to replace: the next round forgets all three.
    let report = bundler.replace_stuck().await.expect("a round");
    assert!(
        report.replaced.is_empty() && report.cancelled.is_empty(),
        "{report:?}"
    );
}

#[tokio::test]
async fn a_bundle_past_the_fee_ceiling_is_cancelled_and_its_payment_fails_unpaid() {
    if !anvil_or_skip() {
        return;
    }
    let anvil = Anvil::start(137, false);
    let w = World::deploy(&anvil.url, 137, false, |_| {}).await;
    // A ceiling of 3x the first fee cap: a 50 gwei base fee is past it.
    let (rail, bundler) = rail_of(&w, Duration::ZERO, Ceiling::TimesFirst(3));
    let sponsor = bundler.address().await.unwrap();
    let payer = wallet("cancel_a");
    let from = w.account(&payer).await;
    let bob = w.account(&wallet("cancel_bob")).await;
    w.mint(w.usdc, &from, 10_000_000).await;
    let nonce = mined_nonce(&w, &sponsor).await;

    let head = w.node.eth().block_number().await.unwrap();
    let now_s = w.node.eth().block_timestamp(head).await.unwrap();
    let mut a = w
        .payment("op_x", &payer, vec![(bob, 1_000_000, LegRole::Recipient)])
        .await;
    a.valid_until = Some(Timestamp::from_millis(((now_s + 120) * 1_000) as i64));
    rail.submit(&a).await.expect("submit");
    mine_at(&w, 50 * GWEI).await;
    assert_eq!(mined_nonce(&w, &sponsor).await, nonce, "stuck");

    let report = bundler.replace_stuck().await.expect("a round");
    assert_eq!(report.cancelled.len(), 1, "{report:?}");
    assert!(report.replaced.is_empty(), "{report:?}");
    let (cancelled_nonce, cancel_hash) = report.cancelled[0];
    assert_eq!(cancelled_nonce, nonce);
    mine_at(&w, 50 * GWEI).await;
    let cancel = w
        .node
        .eth()
        .receipt(&cancel_hash)
        .await
        .unwrap()
        .expect("the cancellation mined");
    assert!(cancel.success);
    assert_eq!(
        mined_nonce(&w, &sponsor).await,
        nonce + 1,
        "the nonce is freed"
    );

    // Past the payment's deadline, the rail knows it can never land.
    w.node
        .rpc
        .request("evm_increaseTime", json!([600]))
        .await
        .unwrap();
    mine_at(&w, GWEI).await;
    assert_eq!(
        rail.status("op_x").await.unwrap(),
        SubmissionStatus::NotFound
    );
    assert_eq!(w.usdc_of(&bob).await, 0, "nothing paid");
    assert_eq!(w.usdc_of(&from).await, w.base(10_000_000));

    // The next payment uses the next nonce and settles.
    let b = w
        .payment("op_y", &payer, vec![(bob, 2_000_000, LegRole::Recipient)])
        .await;
    rail.submit(&b).await.expect("submit");
    confirmed_tx(&w.settle(&rail, "op_y").await);
    assert_eq!(w.usdc_of(&bob).await, w.base(2_000_000));
    assert_eq!(mined_nonce(&w, &sponsor).await, nonce + 2, "no gap");
}
