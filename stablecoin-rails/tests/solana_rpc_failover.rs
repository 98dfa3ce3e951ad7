//! RPC failover on the Solana rail (issue #49): one `JsonRpcClient` over several URLs,
//! some of them a loopback [`FaultProxy`] in front of the testkit's JSON-RPC server that
//! fails (503), hangs past the client timeout, garbles its answer, or forwards a send and
//! swallows the node's answer. The rail keeps settling through the healthy URL, readiness
//! names the unhealthy ones by `host:port` only, and a send whose answer was lost is
//! reconciled by its signature on the next URL and lands once.

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailPayment, RpcEndpointHealth,
    SubmissionStatus,
};
use stablecoin_rails::fault_proxy::{Fault, FaultProxy};
use stablecoin_rails::solana::codec::{MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::testkit::server::RpcServer;
use stablecoin_rails::solana::testkit::{LiteSvmRpc, test_config};
use stablecoin_rails::solana::{JsonRpcClient, Pubkey, SolanaRail};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_millis(500);

struct Cluster {
    kit: Arc<LiteSvmRpc>,
    server: RpcServer,
}

async fn cluster() -> Cluster {
    let kit = Arc::new(LiteSvmRpc::new());
    kit.create_mint(&MAINNET_USDC_MINT, 6);
    kit.create_mint(&MAINNET_USDT_MINT, 6);
    let server = RpcServer::start(kit.clone()).await.unwrap();
    Cluster { kit, server }
}

fn rail_over(_c: &Cluster, urls: Vec<String>) -> SolanaRail {
    let client = JsonRpcClient::with_urls(urls, TIMEOUT).unwrap();
    SolanaRail::new(
        Arc::new(client),
        Arc::new(LocalSigner::from_seed([91; 32])),
        test_config(),
    )
}

fn pay(id: &str, from: &ChainAddress, phone: &str, to: &ChainAddress, micros: u64) -> RailPayment {
    RailPayment {
        id: id.into(),
        from: KeyPurpose::PhoneWallet(phone.into()),
        from_address: from.clone(),
        token: Token::Usdc,
        legs: vec![PaymentLeg {
            to: to.clone(),
            amount: Micros(micros),
            role: LegRole::Recipient,
        }],
        valid_until: None,
    }
}

async fn settle(rail: &SolanaRail, id: &str) -> SubmissionStatus {
    for _ in 0..50 {
        match rail.status(id).await.unwrap() {
            SubmissionStatus::Pending { .. } => continue,
            other => return other,
        }
    }
    panic!("{id} did not settle");
}

/// A funded sender (provisioned, 5 USDC) and a provisioned recipient.
async fn parties(c: &Cluster, rail: &SolanaRail) -> (ChainAddress, ChainAddress) {
    c.kit
        .airdrop(&rail.fee_payer().await.unwrap(), 10_000_000_000);
    let a = rail.provision("+233500000001").await.unwrap().address;
    let b = rail.provision("+233500000002").await.unwrap().address;
    c.kit
        .mint_to(
            &Pubkey::from_str(&a.0).unwrap(),
            &MAINNET_USDC_MINT,
            5_000_000,
        )
        .unwrap();
    (a, b)
}

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
    let c = cluster().await;
    let node = c.server.url();
    let failing = FaultProxy::start(&node, Fault::Unavailable).await.unwrap();
    let hanging = FaultProxy::start(&node, Fault::Hang).await.unwrap();
    let garbling = FaultProxy::start(&node, Fault::Malformed).await.unwrap();
    let rail = rail_over(
        &c,
        vec![failing.url(), hanging.url(), garbling.url(), node.clone()],
    );
    let (a, b) = parties(&c, &rail).await;
    rail.submit(&pay("sol_fo", &a, "+233500000001", &b, 2_000_000))
        .await
        .expect("submit through the healthy URL");
    assert!(matches!(
        settle(&rail, "sol_fo").await,
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(2_000_000)
    );
    assert_eq!(
        rail.balance(&a, Token::Usdc).await.unwrap(),
        Micros(3_000_000)
    );

    for proxy in [&failing, &hanging, &garbling] {
        assert!(!proxy.methods().is_empty(), "never tried");
    }
    let health = rail.rpc_endpoints();
    let got: Vec<_> = health
        .iter()
        .map(|h| (h.endpoint.clone(), h.healthy, h.last_error.clone()))
        .collect();
    let expect = |p: &FaultProxy, why: &str| (p.host_port(), false, Some(why.to_string()));
    assert_eq!(
        got[..3],
        [
            expect(&failing, "HTTP 503"),
            expect(&hanging, "timed out"),
            expect(&garbling, "malformed answer"),
        ]
    );
    assert!(health[3].healthy && health[3].consecutive_failures == 0);
    assert_redacted(&health);
    assert!(rail.readiness().await.status != stablecoin_core::ports::ReadinessStatus::Degraded);
}

#[tokio::test]
async fn a_send_whose_answer_a_url_swallowed_lands_once_through_the_next() {
    let c = cluster().await;
    let node = c.server.url();
    let proxy = FaultProxy::start(&node, Fault::SwallowAnswerOf("sendTransaction".into()))
        .await
        .unwrap();
    // Provisioning goes through a direct client: the proxy swallows every send.
    let direct = rail_over(&c, vec![node.clone()]);
    let (a, b) = parties(&c, &direct).await;
    let rail = rail_over(&c, vec![proxy.url(), node.clone()]);
    let txs = c.kit.transaction_count();

    let p = pay("sol_sw", &a, "+233500000001", &b, 1_500_000);
    assert_eq!(
        rail.submit(&p).await.unwrap_err().code(),
        "SUBMISSION_UNKNOWN",
        "the proxy forwarded the send and swallowed its answer"
    );
    assert!(matches!(
        settle(&rail, "sol_sw").await,
        SubmissionStatus::Confirmed { .. }
    ));
    rail.submit(&p).await.expect("asked again");
    assert_eq!(c.kit.transaction_count(), txs + 1, "landed once");
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(1_500_000)
    );

    // The next send goes to the healthy URL.
    rail.submit(&pay("sol_sw2", &a, "+233500000001", &b, 500_000))
        .await
        .expect("second send");
    assert!(matches!(
        settle(&rail, "sol_sw2").await,
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(c.kit.transaction_count(), txs + 2);
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(2_000_000)
    );
    let sends = proxy
        .methods()
        .iter()
        .filter(|m| *m == "sendTransaction")
        .count();
    assert_eq!(sends, 1, "only the first send went through the proxy");
    let health = rail.rpc_endpoints();
    assert_eq!(health[0].endpoint, proxy.host_port());
    assert_eq!(
        (health[0].healthy, health[0].last_error.as_deref()),
        (false, Some("HTTP 502"))
    );
    assert!(health[1].healthy);
    assert_redacted(&health);
}
