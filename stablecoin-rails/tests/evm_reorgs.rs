//! Reorganisations on Anvil (issue #49, `anvil_reorg`): a deposit taken out of the chain
//! before its confirmation depth is never reported confirmed, and a payment whose
//! including block is taken out is re-sent at its nonce by the bundler and settles once.
//!
//! Each test runs its own Anvil (automining off) with three confirmations.

use serde_json::json;
use stablecoin_core::ports::KeyPurpose;
use stablecoin_core::ports::{ChainAddress, LegRole, Rail, SubmissionStatus};
use stablecoin_rails::evm::abi::{self, Abi};
use stablecoin_rails::evm::rpc::hex0x;
use stablecoin_rails::evm::testkit::{
    Anvil, World, anvil_or_skip, confirmed_tx, rail_with_bundler, wallet,
};
use stablecoin_rails::evm::{Ceiling, JsonRpc, Replacement, SelfBundler};
use std::sync::Arc;
use std::time::Duration;

const CONFIRMATIONS: u64 = 3;

/// Replaces the last `depth` blocks with as many empty ones (`anvil_reorg`).
async fn reorg(w: &World, depth: u64) {
    w.node
        .rpc
        .request("anvil_reorg", json!([depth, []]))
        .await
        .expect("anvil_reorg");
}

#[tokio::test]
async fn a_deposit_reorganised_away_before_its_depth_is_never_confirmed() {
    if !anvil_or_skip() {
        return;
    }
    let anvil = Anvil::start(137, false);
    let w = World::deploy(&anvil.url, 137, false, |c| c.confirmations = CONFIRMATIONS).await;
    let start = w.node.eth().block_number().await.unwrap();
    let alice = w.account(&wallet("reorg_dep")).await;
    w.mint(w.usdt, &w.node.dev, 9_000_000).await;
    w.node
        .send(
            Some(w.usdt),
            abi::call(
                "transfer(address,uint256)",
                &[Abi::address(&alice.0), Abi::uint(w.base(2_500_000))],
            ),
            0,
        )
        .await;
    let watched = [ChainAddress(alice.to_string())];
    let first = w
        .rail
        .scan(&start.to_string(), &watched, 100)
        .await
        .unwrap();
    assert_eq!(first.inbound.len(), 1, "{first:?}");
    let seen = first.inbound[0].clone();
    assert!(!seen.confirmed, "one block deep of three");

    // The block holding it is replaced by an empty one, and the chain grows past the
    // depth the deposit would have needed.
    reorg(&w, 1).await;
    w.node.mine(CONFIRMATIONS + 2).await;
    assert!(
        w.node
            .eth()
            .receipt(&hash32(&seen.tx_hash))
            .await
            .unwrap()
            .is_none(),
        "the transfer is out of the chain"
    );
    let later = w.rail.scan(&first.cursor, &watched, 100).await.unwrap();
    assert!(
        later.inbound.iter().all(|i| i.tx_hash != seen.tx_hash),
        "reported after its reorganisation: {later:?}"
    );
    assert_eq!(w.node.token_balance(&w.usdt, &alice).await, 0);
}

fn hash32(hex: &str) -> [u8; 32] {
    hex::decode(hex.trim_start_matches("0x"))
        .unwrap()
        .try_into()
        .unwrap()
}

#[tokio::test]
async fn a_payment_whose_block_is_reorganised_away_is_sent_again_and_settles_once() {
    if !anvil_or_skip() {
        return;
    }
    let anvil = Anvil::start(137, false);
    let w = World::deploy(&anvil.url, 137, false, |c| c.confirmations = CONFIRMATIONS).await;
    let bundler = Arc::new(
        SelfBundler::new(
            w.node.rpc.clone(),
            w.signer.clone(),
            KeyPurpose::Sponsor,
            w.config.entry_point,
            w.config.chain_id,
        )
        .with_replacement(Replacement {
            after: Duration::ZERO,
            check_every: Duration::ZERO,
            ceiling: Ceiling::TimesFirst(10),
            final_depth: CONFIRMATIONS,
        }),
    );
    let rail = rail_with_bundler(
        &w.config,
        w.node.rpc.clone(),
        w.signer.clone(),
        bundler.clone(),
    );
    let sponsor = bundler.address().await.unwrap();
    let payer = wallet("reorg_pay");
    let from = w.account(&payer).await;
    let bob = w.account(&wallet("reorg_bob")).await;
    w.mint(w.usdc, &from, 10_000_000).await;
    let nonce = w.node.eth().latest_nonce(&sponsor).await.unwrap();

    let p = w
        .payment("op_r", &payer, vec![(bob, 3_000_000, LegRole::Recipient)])
        .await;
    let first = rail.submit(&p).await.unwrap().tx_hash.unwrap();
    w.node.mine(1).await;
    assert!(
        matches!(
            rail.status("op_r").await.unwrap(),
            SubmissionStatus::Pending { .. }
        ),
        "one block deep of three"
    );
    assert_eq!(w.usdc_of(&bob).await, w.base(3_000_000), "mined once");

    // Its block is replaced by an empty one: the payment is no longer on chain.
    reorg(&w, 1).await;
    assert_eq!(w.usdc_of(&bob).await, 0, "reorganised away");
    assert_eq!(w.node.eth().latest_nonce(&sponsor).await.unwrap(), nonce);

    // The bundler still holds it (not final) and sends it again at its nonce (a node
    // that did not keep the reorganised transaction has it back).
    let report = bundler.replace_stuck().await.expect("a round");
    let again = report
        .replaced
        .iter()
        .find(|(n, _)| *n == nonce)
        .map(|(_, h)| hex0x(h))
        .unwrap_or_else(|| panic!("not re-sent: {report:?}"));
    assert_ne!(again, first);
    w.node.mine(1).await;
    let tx = confirmed_tx(&w.settle(&rail, "op_r").await);
    // Anvil, like geth, also puts a reorganised transaction back in its pool: either
    // version may be mined, never both (one nonce).
    assert!(tx == again || tx == first, "{tx} is neither version");
    w.node.mine(CONFIRMATIONS).await;
    assert_eq!(w.usdc_of(&bob).await, w.base(3_000_000), "paid once");
    assert_eq!(w.usdc_of(&from).await, w.base(7_000_000));
    assert_eq!(
        w.node.eth().latest_nonce(&sponsor).await.unwrap(),
        nonce + 1,
        "one transaction at the nonce"
    );
    // Final now: forgotten, nothing more is sent.
    let report = bundler.replace_stuck().await.expect("a round");
    assert_eq!(report.mined, 1, "{report:?}");
    assert!(report.replaced.is_empty() && report.cancelled.is_empty());
}
