//! The embedder's one call: wallets, escrow and checkout on the kernel's `Runtime`, as
//! the `three_products` example shows it (issue #45).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wallets_escrow_and_checkout_run_on_one_runtime() {
    let status = crate::three_products_example::demo().await.unwrap();
    assert_eq!(
        status, "paid",
        "the runtime's checkout worker saw the payment"
    );
}
