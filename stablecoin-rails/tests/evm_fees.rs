//! User-operation fees on Anvil (issue #49): taken from `eth_feeHistory` and held within
//! the chain's configured floors and ceilings, paid as configured on chain, and a payment
//! whose gas could cost more than the per-payment ceiling refused with a clear reason
//! before anything is sent. Each test runs its own Anvil, so no other test's blocks move
//! the base fee between a read and the rail's.

use serde_json::json;
use stablecoin_core::ports::{KeyPurpose, LegRole, Rail, RailError};
use stablecoin_rails::evm::abi::{self, keccak};
use stablecoin_rails::evm::rpc::{hash_of, quantity};
use stablecoin_rails::evm::testkit::{
    Anvil, World, anvil_or_skip, confirmed_tx, owner_of, rail_over, wallet,
};
use stablecoin_rails::evm::{FeePolicy, Fees, JsonRpc};

const GWEI: u128 = 1_000_000_000;

/// The next block's base fee, as the node reports it.
async fn next_base_fee(w: &World) -> u128 {
    let v = w
        .node
        .rpc
        .request("eth_feeHistory", json!(["0x1", "latest", [50]]))
        .await
        .unwrap();
    let bases = v["baseFeePerGas"].as_array().unwrap();
    quantity("eth_feeHistory", bases.last().unwrap()).unwrap()
}

#[tokio::test]
async fn operation_fees_follow_fee_history_within_the_chains_floor_and_ceiling() {
    if !anvil_or_skip() {
        return;
    }
    let anvil = Anvil::start(137, true);
    // A tip floor far above anything Anvil's blocks paid: the floor decides.
    let floor = 50 * GWEI;
    let w = World::deploy(&anvil.url, 137, true, |c| {
        c.fees = FeePolicy {
            priority_floor_wei: floor,
            ..FeePolicy::default()
        }
    })
    .await;
    let base = next_base_fee(&w).await;
    assert!(base > 0, "Anvil runs EIP-1559");
    assert_eq!(
        w.rail.fees().await.unwrap(),
        Fees {
            priority: floor,
            max_fee: 2 * base + floor
        }
    );

    // A max-fee ceiling below that: the cap is the ceiling, the tip never above it.
    let mut capped = w.config.clone();
    capped.fees.max_fee_ceiling_wei = Some(base + floor / 2);
    let rail = rail_over(&capped, w.node.rpc.clone(), w.signer.clone());
    assert_eq!(
        rail.fees().await.unwrap(),
        Fees {
            priority: base + floor / 2,
            max_fee: base + floor / 2
        }
    );
    // Without a floor the tip follows the blocks (Anvil's are far below 50 gwei).
    let mut free = w.config.clone();
    free.fees = FeePolicy::default();
    let free = rail_over(&free, w.node.rpc.clone(), w.signer.clone())
        .fees()
        .await
        .unwrap();
    assert!(free.priority < floor, "{free:?}");
    assert_eq!(free.max_fee, 2 * base + free.priority);

    // The operation is priced so on chain: the EntryPoint charges
    // min(maxFee, base fee + tip) per gas, here the block's base fee plus the floor.
    let alice_p = wallet("fee_alice");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("fee_bob")).await;
    w.mint(w.usdc, &alice, 5_000_000).await;
    let p = w
        .payment(
            "op_fee",
            &alice_p,
            vec![(bob, 1_000_000, LegRole::Recipient)],
        )
        .await;
    w.rail.submit(&p).await.expect("submit");
    let tx = confirmed_tx(&w.settle(&w.rail, "op_fee").await);
    let receipt = w
        .node
        .rpc
        .request("eth_getTransactionReceipt", json!([tx]))
        .await
        .unwrap();
    let block = w
        .node
        .rpc
        .request(
            "eth_getBlockByNumber",
            json!([receipt["blockNumber"].clone(), false]),
        )
        .await
        .unwrap();
    let block_base = quantity("block", &block["baseFeePerGas"]).unwrap();
    let topic = keccak(b"UserOperationEvent(bytes32,address,address,uint256,bool,uint256,uint256)");
    let event = receipt["logs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| hash_of("log", &l["topics"][0]).unwrap() == topic)
        .expect("UserOperationEvent");
    let data = hex::decode(event["data"].as_str().unwrap().trim_start_matches("0x")).unwrap();
    let word = |i| abi::word_u128(&abi::word(&data, i).unwrap()).unwrap();
    let (cost, used) = (word(2), word(3));
    assert_eq!(
        cost / used,
        block_base + floor,
        "paid base fee + the floor's tip"
    );
}

#[tokio::test]
async fn a_payment_whose_gas_could_cost_more_than_the_ceiling_is_refused_unsent() {
    if !anvil_or_skip() {
        return;
    }
    let anvil = Anvil::start(137, true);
    let w = World::deploy(&anvil.url, 137, true, |c| {
        c.fees = FeePolicy {
            priority_floor_wei: 10 * GWEI,
            // An operation asks for some 300k-900k gas: at 10+ gwei, far above 0.001 ETH.
            max_gas_cost_per_payment_wei: Some(1_000_000 * GWEI),
            ..FeePolicy::default()
        }
    })
    .await;
    let sponsor = owner_of(&*w.signer, &KeyPurpose::Sponsor).await;
    let alice_p = wallet("ceil_alice");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("ceil_bob")).await;
    w.mint(w.usdc, &alice, 5_000_000).await;
    let nonce = w.node.eth().latest_nonce(&sponsor).await.unwrap();
    let p = w
        .payment(
            "op_ceil",
            &alice_p,
            vec![(bob, 1_000_000, LegRole::Recipient)],
        )
        .await;
    match w.rail.submit(&p).await {
        Err(RailError::Rejected { reason }) => {
            assert!(reason.contains("max_gas_cost_per_payment_wei"), "{reason}");
            assert!(reason.contains("1000000000000000 wei"), "{reason}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        w.node.eth().latest_nonce(&sponsor).await.unwrap(),
        nonce,
        "nothing sent"
    );
    assert_eq!(w.usdc_of(&alice).await, w.base(5_000_000));
    assert_eq!(w.usdc_of(&bob).await, 0);

    // Under a ceiling it fits, the same payment goes through.
    let mut roomy = w.config.clone();
    roomy.fees.max_gas_cost_per_payment_wei = Some(10u128.pow(18));
    let rail = rail_over(&roomy, w.node.rpc.clone(), w.signer.clone());
    rail.submit(&p).await.expect("within the ceiling");
    confirmed_tx(&w.settle(&rail, "op_ceil").await);
    assert_eq!(w.usdc_of(&bob).await, w.base(1_000_000));
}
