//! RPC failover on the TRON rail (issue #49): one `HttpTronApi` over several API roots,
//! the first ones a loopback [`FaultProxy`] in front of the local TRON node that fails
//! (503) or garbles its answer, or forwards a broadcast and swallows the node's answer.
//! The rail keeps sending through the healthy root, each root's health is shown by
//! `host:port` only, and a payment whose first broadcast (the sponsor's delegation)
//! lost its answer is reconciled on the next root and lands once.

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::{LocalSigner, MemoryStore, SystemClock};
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailPayment, StoreJournal,
    SubmissionStatus,
};
use stablecoin_rails::fault_proxy::{Fault, FaultProxy};
use stablecoin_rails::tron::client::HttpTronApi;
use stablecoin_rails::tron::{TronAddress, TronConfig, TronRail};
use stablecoin_tron_node::{NodeConfig, TokenBackend, TronNode};
use std::sync::Arc;
use std::time::Duration;

const TRX: u64 = 1_000_000;

async fn rail_over(node: &TronNode, urls: Vec<String>) -> TronRail {
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let api = HttpTronApi::with_urls(urls, Duration::from_millis(500)).unwrap();
    let mut config = TronConfig::new(usdt);
    config.poll_interval = Duration::from_millis(5);
    config.inclusion_timeout = Duration::from_secs(3);
    TronRail::new(
        Arc::new(api),
        Arc::new(LocalSigner::from_seed([33; 32])),
        config,
    )
    .await
    .unwrap()
    .with_journal(Arc::new(StoreJournal::new(
        Arc::new(MemoryStore::new()),
        Arc::new(SystemClock),
    )))
}

async fn address(rail: &TronRail, p: &KeyPurpose) -> TronAddress {
    TronAddress::parse(&rail.address_for(p).await.unwrap().0).unwrap()
}

fn pay(id: &str, from: &KeyPurpose, a: &TronAddress, to: &TronAddress, micros: u64) -> RailPayment {
    RailPayment {
        id: id.into(),
        from: from.clone(),
        from_address: ChainAddress(a.to_base58()),
        token: Token::Usdt,
        legs: vec![PaymentLeg {
            to: ChainAddress(to.to_base58()),
            amount: Micros(micros),
            role: LegRole::Recipient,
        }],
        valid_until: None,
    }
}

async fn confirm(node: &TronNode, rail: &TronRail, id: &str) {
    node.mine(19).await;
    for _ in 0..100 {
        match rail.status(id).await.unwrap() {
            SubmissionStatus::Confirmed { .. } => return,
            SubmissionStatus::Pending { .. } => {
                node.mine(1).await;
            }
            other => panic!("{id}: {other:?}"),
        }
    }
    panic!("{id} never confirmed");
}

#[tokio::test]
async fn tron_sends_move_past_a_failing_and_a_garbling_root_and_a_lost_broadcast_lands_once() {
    let node = TronNode::start(NodeConfig {
        backend: TokenBackend::Native,
        ..NodeConfig::default()
    })
    .await;
    let failing = FaultProxy::start_api(node.url(), Fault::Unavailable)
        .await
        .unwrap();
    let garbling = FaultProxy::start_api(node.url(), Fault::Malformed)
        .await
        .unwrap();
    let rail = rail_over(
        &node,
        vec![failing.url(), garbling.url(), node.url().to_string()],
    )
    .await;
    let sponsor = *rail.sponsor_address().as_bytes();
    node.create_account(&sponsor, 1_000 * TRX).await;
    node.freeze(&sponsor, 1, 100_000 * TRX).await;
    node.freeze(&sponsor, 0, 10_000 * TRX).await;
    let alice_p = KeyPurpose::Wallet("wal_fo_a".into());
    let alice = address(&rail, &alice_p).await;
    let bob = address(&rail, &KeyPurpose::Wallet("wal_fo_b".into())).await;
    node.mint_usdt(alice.as_bytes(), 10_000_000).await;

    rail.submit(&pay("tron-fo-1", &alice_p, &alice, &bob, 3_000_000))
        .await
        .expect("sent through the healthy root");
    confirm(&node, &rail, "tron-fo-1").await;
    assert_eq!(node.usdt_balance(bob.as_bytes()).await, 3_000_000);
    assert!(!failing.methods().is_empty() && !garbling.methods().is_empty());
    let health = rail.rpc_endpoints();
    let got: Vec<_> = health
        .iter()
        .map(|h| (h.endpoint.clone(), h.healthy, h.last_error.clone()))
        .collect();
    assert_eq!(
        got[..2],
        [
            (failing.host_port(), false, Some("HTTP 503".to_string())),
            (
                garbling.host_port(),
                false,
                Some("malformed answer".to_string())
            ),
        ]
    );
    assert!(health[2].healthy);
    let shown = serde_json::to_string(&health).unwrap();
    assert!(
        !shown.contains("pass-secret") && !shown.contains("user"),
        "{shown}"
    );

    // A root that forwards the payment's first broadcast and swallows the answer.
    let swallowing = FaultProxy::start_api(
        node.url(),
        Fault::SwallowAnswerOf("/wallet/broadcasthex".into()),
    )
    .await
    .unwrap();
    let rail = rail_over(&node, vec![swallowing.url(), node.url().to_string()]).await;
    let accepted = node.accepted().await;
    let outcome = rail
        .submit(&pay("tron-fo-2", &alice_p, &alice, &bob, 1_000_000))
        .await;
    confirm(&node, &rail, "tron-fo-2").await;
    rail.submit(&pay("tron-fo-2", &alice_p, &alice, &bob, 1_000_000))
        .await
        .expect("asked again");
    assert_eq!(
        node.usdt_balance(bob.as_bytes()).await,
        4_000_000,
        "paid once: {outcome:?}"
    );
    assert_eq!(node.usdt_balance(alice.as_bytes()).await, 6_000_000);
    let swallowed = swallowing
        .methods()
        .iter()
        .filter(|m| *m == "/wallet/broadcasthex")
        .count();
    assert_eq!(
        swallowed, 1,
        "the first broadcast went through the proxy, no other"
    );
    assert!(node.accepted().await > accepted);
    let health = rail.rpc_endpoints();
    assert_eq!(
        (health[0].healthy, health[0].last_error.as_deref()),
        (false, Some("HTTP 502"))
    );
}
