//! Many user operations per bundle on Anvil: `Rail::submit_batch` packs the payments of
//! many accounts (undeployed ones, and two of one account) into one `handleOps`; every
//! operation reports the real bundle hash; a payment whose validation fails is isolated
//! and refused alone, never failing its neighbours; a batch resubmitted sends nothing.
#![cfg(feature = "evm-test")]

use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::ports::{KeyPurpose, LegRole, Rail, RailPayment, SubmissionStatus};
use stablecoin_rails::evm::testkit::{World, anvil_or_skip, confirmed_tx, rail_over, wallet};
use stablecoin_rails::evm::{JsonRpc, RpcError};
use std::collections::BTreeSet;

#[tokio::test]
async fn the_payments_of_many_accounts_share_one_bundle_and_a_failing_one_is_isolated() {
    if !anvil_or_skip() {
        return;
    }
    let w = World::on_shared(137).await;
    let n = 6;
    let recipient = w.account(&wallet("bundle-recipient")).await;
    let mut payments: Vec<RailPayment> = Vec::new();
    for i in 0..n {
        let from = wallet(&format!("bundle-payer-{i}"));
        let account = w.account(&from).await;
        w.mint(w.usdc, &account, 10_000_000).await;
        payments.push(
            w.payment(
                &format!("bundle-{i}"),
                &from,
                vec![(recipient, 1_000_000, LegRole::Recipient)],
            )
            .await,
        );
    }
    // A second payment of the first (still undeployed) account: the first one deploys it.
    payments.push(
        w.payment(
            "bundle-0-again",
            &wallet("bundle-payer-0"),
            vec![(recipient, 2_000_000, LegRole::Recipient)],
        )
        .await,
    );
    // A payment whose sponsorship has expired: the EntryPoint refuses it in validation
    // (AA32), which would revert the whole bundle.
    let mut expired = w
        .payment(
            "bundle-expired",
            &wallet("bundle-payer-1"),
            vec![(recipient, 1_000_000, LegRole::Recipient)],
        )
        .await;
    expired.valid_until = Some(Timestamp::from_secs(1_000));
    payments.insert(3, expired);

    let answers = w.rail.submit_batch(&payments).await;
    assert_eq!(answers.len(), payments.len());
    let mut bundles = BTreeSet::new();
    for (p, a) in payments.iter().zip(&answers) {
        if p.id == "bundle-expired" {
            assert!(a.is_err(), "{a:?}");
            continue;
        }
        let s = a.as_ref().unwrap_or_else(|e| panic!("{}: {e}", p.id));
        bundles.insert(s.tx_hash.clone().expect("a bundle hash"));
    }
    for p in &payments {
        let st = w.settle(&w.rail, &p.id).await;
        if p.id == "bundle-expired" {
            assert!(!matches!(st, SubmissionStatus::Confirmed { .. }), "{st:?}");
        } else {
            let tx = confirmed_tx(&st);
            assert!(
                bundles.contains(&tx),
                "{}: reports its real bundle {tx}",
                p.id
            );
        }
    }
    // The expired one was named by the EntryPoint (`FailedOp`), refused alone, and the 7
    // good payments went together in one bundle.
    assert_eq!(bundles.len(), 1, "{bundles:?}");
    assert_eq!(
        w.usdc_of(&recipient).await,
        (n as u128 + 1) * 1_000_000 + 1_000_000
    );
    let first = w.account(&wallet("bundle-payer-0")).await;
    assert_eq!(w.usdc_of(&first).await, 7_000_000);
    let second = w.account(&wallet("bundle-payer-1")).await;
    assert_eq!(
        w.usdc_of(&second).await,
        9_000_000,
        "the expired payment moved nothing"
    );

    // Submitting the batch again sends nothing new: the same answers.
    let again = w.rail.submit_batch(&payments).await;
    for (a, b) in answers.iter().zip(&again) {
        if let (Ok(a), Ok(b)) = (a, b) {
            assert_eq!(a.tx_hash, b.tx_hash);
        }
    }
    assert_eq!(
        w.usdc_of(&recipient).await,
        (n as u128 + 1) * 1_000_000 + 1_000_000
    );
}

#[tokio::test]
async fn without_a_failure_the_whole_batch_is_one_bundle() {
    if !anvil_or_skip() {
        return;
    }
    let w = World::on_shared(56).await;
    let recipient = w.account(&KeyPurpose::Treasury).await;
    let mut payments = Vec::new();
    for i in 0..5 {
        let from = wallet(&format!("one-bundle-{i}"));
        w.mint(w.usdc, &w.account(&from).await, 3_000_000).await;
        payments.push(
            w.payment(
                &format!("one-bundle-{i}"),
                &from,
                vec![(recipient, 3_000_000, LegRole::Recipient)],
            )
            .await,
        );
    }
    let answers = w.rail.submit_batch(&payments).await;
    let hashes: BTreeSet<String> = answers
        .iter()
        .map(|a| a.as_ref().unwrap().tx_hash.clone().unwrap())
        .collect();
    assert_eq!(hashes.len(), 1, "one handleOps for all five: {hashes:?}");
    for p in &payments {
        confirmed_tx(&w.settle(&w.rail, &p.id).await);
    }
    assert_eq!(w.usdc_of(&recipient).await, w.base(15_000_000));
}

/// Counts the receipt reads that reach the node.
struct CountingRpc {
    inner: std::sync::Arc<dyn JsonRpc>,
    receipts: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl JsonRpc for CountingRpc {
    async fn request(
        &self,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, RpcError> {
        if method == "eth_getTransactionReceipt" {
            self.receipts
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        self.inner.request(method, params).await
    }
}

#[tokio::test]
async fn the_polls_of_one_bundle_share_one_receipt_read() {
    if !anvil_or_skip() {
        return;
    }
    let w = World::on_shared(137).await;
    let rpc = std::sync::Arc::new(CountingRpc {
        inner: w.node.rpc.clone(),
        receipts: Default::default(),
    });
    let rail = rail_over(&w.config, rpc.clone(), w.signer.clone());
    let recipient = w.account(&KeyPurpose::Treasury).await;
    let mut payments = Vec::new();
    for i in 0..8 {
        let from = wallet(&format!("one-receipt-{i}"));
        w.mint(w.usdc, &w.account(&from).await, 1_000_000).await;
        payments.push(
            w.payment(
                &format!("one-receipt-{i}"),
                &from,
                vec![(recipient, 1_000_000, LegRole::Recipient)],
            )
            .await,
        );
    }
    let answers = rail.submit_batch(&payments).await;
    let hashes: BTreeSet<String> = answers
        .iter()
        .map(|a| a.as_ref().unwrap().tx_hash.clone().unwrap())
        .collect();
    assert_eq!(hashes.len(), 1, "one bundle: {hashes:?}");
    // Mined first (read around the counting client), so every poll finds it confirmed.
    let tx = hashes.into_iter().next().unwrap();
    for _ in 0..500 {
        let r = w
            .node
            .rpc
            .request("eth_getTransactionReceipt", serde_json::json!([tx]))
            .await
            .expect("receipt");
        if !r.is_null() {
            break;
        }
        if !w.node.automine {
            w.node.mine(1).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    rpc.receipts.store(0, std::sync::atomic::Ordering::SeqCst);
    // Eight polls side by side, as the worker polls its claimed operations.
    let statuses =
        futures_util::future::join_all(payments.iter().map(|p| rail.status(&p.id))).await;
    for s in statuses {
        confirmed_tx(&s.expect("status"));
    }
    assert_eq!(
        rpc.receipts.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the eight polls of one bundle read its receipt once"
    );
}
