//! RPC failover on the EVM rail (issue #49): one `HttpJsonRpc` over several URLs, some of
//! them a loopback [`FaultProxy`] in front of Anvil that fails (503), hangs past the
//! client timeout, garbles its answer, or forwards a bundle and swallows the node's
//! answer. The rail keeps settling through the healthy URL, readiness names the
//! unhealthy ones by `host:port` only, and a bundle whose answer was lost is reconciled
//! by its user operation's hash on the next URL, never sent twice.

use stablecoin_core::ports::{KeyPurpose, LegRole, Rail, RailError, RpcEndpointHealth};
use stablecoin_rails::evm::HttpJsonRpc;
use stablecoin_rails::evm::testkit::{
    World, anvil_or_skip, confirmed_tx, owner_of, rail_over, shared_anvil, wallet,
};
use stablecoin_rails::fault_proxy::{Fault, FaultProxy};
use std::sync::Arc;
use std::time::Duration;

/// Short enough that the hanging proxy costs half a second, long enough for Anvil.
const TIMEOUT: Duration = Duration::from_millis(500);

fn assert_redacted(health: &[RpcEndpointHealth]) {
    let shown = serde_json::to_string(health).unwrap();
    for secret in [
        "pass-secret",
        "path-secret",
        "query-secret",
        "user",
        "/v3",
        "http",
    ] {
        assert!(!shown.contains(secret), "{secret} shows in {shown}");
    }
}

#[tokio::test]
async fn reads_and_sends_move_past_a_failing_a_hanging_and_a_garbling_url() {
    if !anvil_or_skip() {
        return;
    }
    let w = World::on_shared(137).await;
    let anvil = shared_anvil(137);
    let failing = FaultProxy::start(anvil, Fault::Unavailable).await.unwrap();
    let hanging = FaultProxy::start(anvil, Fault::Hang).await.unwrap();
    let garbling = FaultProxy::start(anvil, Fault::Malformed).await.unwrap();
    let rpc = Arc::new(
        HttpJsonRpc::with_urls(
            vec![
                failing.url(),
                hanging.url(),
                garbling.url(),
                anvil.to_string(),
            ],
            TIMEOUT,
        )
        .unwrap(),
    );
    let rail = rail_over(&w.config, rpc, w.signer.clone());
    let alice_p = wallet("fo_alice");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("fo_bob")).await;
    w.mint(w.usdc, &alice, 10_000_000).await;

    let p = w
        .payment(
            "op_fo",
            &alice_p,
            vec![(bob, 4_000_000, LegRole::Recipient)],
        )
        .await;
    rail.submit(&p)
        .await
        .expect("submit through the healthy URL");
    confirmed_tx(&w.settle(&rail, "op_fo").await);
    assert_eq!(w.usdc_of(&bob).await, w.base(4_000_000));
    assert_eq!(w.usdc_of(&alice).await, w.base(6_000_000));

    // Each faulty URL was asked (and failed) before the healthy one answered.
    for proxy in [&failing, &hanging, &garbling] {
        assert!(!proxy.methods().is_empty(), "never tried");
    }
    let health = rail.rpc_endpoints();
    let expect = |p: &FaultProxy, why: &str| (p.host_port(), false, Some(why.to_string()));
    let got: Vec<_> = health
        .iter()
        .map(|h| (h.endpoint.clone(), h.healthy, h.last_error.clone()))
        .collect();
    assert_eq!(
        got[..3],
        [
            expect(&failing, "HTTP 503"),
            expect(&hanging, "timed out"),
            expect(&garbling, "malformed answer"),
        ]
    );
    assert!(health[..3].iter().all(|h| h.consecutive_failures >= 1));
    assert!(health[3].healthy && health[3].consecutive_failures == 0);
    assert_redacted(&health);
    // The rail itself is fine: it serves through the fourth URL.
    assert!(rail.readiness().await.can_send());
}

#[tokio::test]
async fn a_bundle_whose_answer_a_url_swallowed_settles_once_through_the_next() {
    if !anvil_or_skip() {
        return;
    }
    let w = World::on_shared(137).await;
    let anvil = shared_anvil(137);
    let proxy = FaultProxy::start(
        anvil,
        Fault::SwallowAnswerOf("eth_sendRawTransaction".into()),
    )
    .await
    .unwrap();
    let rpc =
        Arc::new(HttpJsonRpc::with_urls(vec![proxy.url(), anvil.to_string()], TIMEOUT).unwrap());
    let rail = rail_over(&w.config, rpc, w.signer.clone());
    let sponsor = owner_of(&*w.signer, &KeyPurpose::Sponsor).await;
    let alice_p = wallet("sw_alice");
    let alice = w.account(&alice_p).await;
    let bob = w.account(&wallet("sw_bob")).await;
    w.mint(w.usdc, &alice, 10_000_000).await;
    let nonce_before = w.node.eth().latest_nonce(&sponsor).await.unwrap();

    let p = w
        .payment(
            "op_sw",
            &alice_p,
            vec![(bob, 3_000_000, LegRole::Recipient)],
        )
        .await;
    // The proxy forwarded the bundle (Anvil mined it) and answered 502.
    match rail.submit(&p).await {
        Err(RailError::Unknown { .. }) => {}
        other => panic!("expected SUBMISSION_UNKNOWN, got {other:?}"),
    }
    confirmed_tx(&w.settle(&rail, "op_sw").await);
    // Asked again, it sends nothing new.
    assert!(rail.submit(&p).await.is_ok());
    assert_eq!(w.usdc_of(&bob).await, w.base(3_000_000), "paid once");
    assert_eq!(
        w.node.eth().latest_nonce(&sponsor).await.unwrap(),
        nonce_before + 1,
        "one bundle transaction"
    );

    // The next payment's bundle goes to the healthy URL and settles.
    let q = w
        .payment(
            "op_sw2",
            &alice_p,
            vec![(bob, 1_000_000, LegRole::Recipient)],
        )
        .await;
    rail.submit(&q).await.expect("second submit");
    confirmed_tx(&w.settle(&rail, "op_sw2").await);
    assert_eq!(w.usdc_of(&bob).await, w.base(4_000_000));
    assert_eq!(w.usdc_of(&alice).await, w.base(6_000_000));
    let sends = proxy
        .methods()
        .iter()
        .filter(|m| *m == "eth_sendRawTransaction")
        .count();
    assert_eq!(sends, 1, "only the first bundle went through the proxy");
    let health = rail.rpc_endpoints();
    assert_eq!(health[0].endpoint, proxy.host_port());
    assert!(!health[0].healthy);
    assert_eq!(health[0].last_error.as_deref(), Some("HTTP 502"));
    assert!(health[1].healthy);
    assert_redacted(&health);
}
