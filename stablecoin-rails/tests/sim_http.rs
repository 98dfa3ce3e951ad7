//! The shared simulated chain over loopback HTTP (`sim-http`): `RemoteSimRail` passes the
//! rail conformance suite the in-process `SimRail` passes (each profile, over a real
//! 127.0.0.1 socket), two clients see one chain, and a transport failure is `Unknown`
//! (submits) or `Unavailable` (reads), never `Rejected`.

use async_trait::async_trait;
use axum::body::Bytes;
use axum::http::StatusCode;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailError, RailPayment, ReadinessStatus,
    SubmissionStatus,
};
use stablecoin_core::testkit::{RailHarness, rail_suite};
use stablecoin_rails::sim::http::{RemoteSimRail, SimChainServer};
use stablecoin_rails::{Fault, SimConfig, SimCosts, SimProfile, SimRail};
use std::sync::Arc;

/// A chain process (in this test's runtime) hosting `profiles`, and its URL.
async fn chain(profiles: &[SimProfile]) -> (SimChainServer, String) {
    let signer = Arc::new(LocalSigner::from_seed([7; 32]));
    let rails = profiles
        .iter()
        .map(|p| Arc::new(SimRail::new(*p, signer.clone(), SimConfig::for_profile(*p))));
    let server = SimChainServer::new(rails);
    let url = server.clone().spawn().await.expect("chain serves");
    (server, url)
}

struct RemoteHarness {
    rail: Arc<RemoteSimRail>,
    profile: SimProfile,
}

impl RemoteHarness {
    async fn new(profile: SimProfile) -> RemoteHarness {
        let (_, url) = chain(&[profile]).await;
        RemoteHarness {
            rail: Arc::new(RemoteSimRail::new(&url, profile).unwrap()),
            profile,
        }
    }
}

#[async_trait]
impl RailHarness for RemoteHarness {
    fn rail(&self) -> Arc<dyn Rail> {
        self.rail.clone()
    }

    fn configured_tokens(&self) -> Vec<Token> {
        self.profile.tokens()
    }

    fn confirmations(&self) -> u64 {
        self.profile.default_confirmations()
    }

    /// Addresses come from the chain process, whose simulated outage fails every call.
    fn addresses_offline(&self) -> bool {
        false
    }

    async fn fund(&self, to: &ChainAddress, token: Token, amount: Micros) -> String {
        self.rail.mint(to, token, amount).await.expect("mint")
    }

    async fn advance(&self, blocks: u64) {
        self.rail.mine(blocks).await.expect("mine");
    }

    async fn lose_next_response(&self) {
        self.rail.inject(Fault::LostResponse).await.expect("inject");
    }

    async fn set_readiness(&self, status: ReadinessStatus) {
        self.rail
            .set_rpc_down(status == ReadinessStatus::Degraded)
            .await
            .unwrap();
        self.rail
            .set_sponsor_funded(status != ReadinessStatus::InboundReady)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn the_remote_evm_chain_conforms() {
    rail_suite(|| RemoteHarness::new(SimProfile::Evm(137))).await;
}

#[tokio::test]
async fn the_remote_tron_chain_conforms() {
    rail_suite(|| RemoteHarness::new(SimProfile::Tron)).await;
}

#[tokio::test]
async fn the_remote_solana_chain_conforms() {
    rail_suite(|| RemoteHarness::new(SimProfile::Solana)).await;
}

async fn treasury_payment(rail: &dyn Rail, id: &str, to: &ChainAddress) -> RailPayment {
    RailPayment {
        id: id.into(),
        from: KeyPurpose::Treasury,
        from_address: rail.address_for(&KeyPurpose::Treasury).await.unwrap(),
        token: Token::Usdc,
        legs: vec![PaymentLeg {
            to: to.clone(),
            amount: Micros(1_500_000),
            role: LegRole::Recipient,
        }],
        valid_until: None,
    }
}

async fn confirmed(rail: &dyn Rail, id: &str) -> SubmissionStatus {
    for _ in 0..20 {
        let s = rail.status(id).await.unwrap();
        if matches!(s, SubmissionStatus::Confirmed { .. }) {
            return s;
        }
    }
    panic!("{id} never confirmed");
}

#[tokio::test]
async fn two_clients_share_one_chain_and_a_batch_is_one_call() {
    let profile = SimProfile::Evm(8453);
    let (server, url) = chain(&[profile, SimProfile::Tron]).await;
    let hosted = RemoteSimRail::hosted(&url).await.unwrap();
    let names: Vec<_> = hosted.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["base", "tron"]);
    let a = RemoteSimRail::new(&url, profile).unwrap();
    let b = RemoteSimRail::new(&url, profile).unwrap();
    let treasury = a.address_for(&KeyPurpose::Treasury).await.unwrap();
    assert_eq!(
        b.address_for(&KeyPurpose::Treasury).await.unwrap(),
        treasury
    );
    a.mint(&treasury, Token::Usdc, Micros(10_000_000))
        .await
        .unwrap();
    a.mine(1).await.unwrap();
    assert_eq!(
        b.balance(&treasury, Token::Usdc).await.unwrap(),
        Micros(10_000_000)
    );

    let to = a
        .address_for(&KeyPurpose::Wallet("w1".into()))
        .await
        .unwrap();
    let p1 = treasury_payment(&a, "op-1", &to).await;
    let p2 = treasury_payment(&a, "op-2", &to).await;
    let mut too_big = treasury_payment(&a, "op-3", &to).await;
    too_big.legs[0].amount = Micros(1_000_000_000);
    let answers = a.submit_batch(&[p1.clone(), p2, too_big]).await;
    assert!(answers[0].is_ok() && answers[1].is_ok(), "{answers:?}");
    assert_eq!(answers[2].as_ref().unwrap_err().code(), "RAIL_REJECTED");
    // The other process sees the payments the first one sent, and a replay of the same id
    // from it pays nothing twice.
    assert!(matches!(
        confirmed(&b, "op-1").await,
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(b.submit(&p1).await.unwrap().payment_id, "op-1");
    confirmed(&b, "op-2").await;
    assert_eq!(b.submit_count().await.unwrap(), 2);
    assert_eq!(
        b.balance(&to, Token::Usdc).await.unwrap(),
        Micros(3_000_000)
    );
    // The hosting process reads the same chain.
    let local = server.chain("base").unwrap();
    assert_eq!(local.submit_count(), 2);
    assert_eq!(local.head(), a.head().await.unwrap());
}

#[tokio::test]
async fn a_confirmed_payment_carries_its_cost_across_the_wire() {
    // A chain process whose Solana chain has figures a budget test picked.
    let picked = SimCosts {
        native_per_payment: 11,
        native_per_account_opened: 1_000,
        energy_per_payment: 0,
        bandwidth_per_payment: 0,
    };
    let profile = SimProfile::Solana;
    let signer = Arc::new(LocalSigner::from_seed([7; 32]));
    let hosted =
        Arc::new(SimRail::new(profile, signer, SimConfig::for_profile(profile)).with_costs(picked));
    let url = SimChainServer::new([hosted]).spawn().await.unwrap();
    let rail = RemoteSimRail::new(&url, profile).unwrap();
    let treasury = rail.address_for(&KeyPurpose::Treasury).await.unwrap();
    rail.mint(&treasury, Token::Usdc, Micros(10_000_000))
        .await
        .unwrap();
    rail.mine(1).await.unwrap();
    let to = rail
        .address_for(&KeyPurpose::Wallet("fresh".into()))
        .await
        .unwrap();
    rail.submit(&treasury_payment(&rail, "op-1", &to).await)
        .await
        .unwrap();
    match confirmed(&rail, "op-1").await {
        SubmissionStatus::Confirmed {
            cost,
            created_recipient_account,
            ..
        } => {
            assert!(created_recipient_account);
            assert_eq!(cost, Some(picked.of(true)));
            assert_eq!(cost.map(|c| c.native), Some(1_011));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_transport_failure_is_unknown_or_unavailable_never_rejected() {
    // Nothing listens: the port of a listener just closed.
    let closed = {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let rail = RemoteSimRail::new(&closed, SimProfile::Evm(137)).unwrap();
    let to = ChainAddress(format!("0x{}", "11".repeat(20)));
    let payment = RailPayment {
        id: "op-x".into(),
        from: KeyPurpose::Treasury,
        from_address: to.clone(),
        token: Token::Usdc,
        legs: vec![PaymentLeg {
            to: to.clone(),
            amount: Micros(1),
            role: LegRole::Recipient,
        }],
        valid_until: None,
    };
    assert!(matches!(
        rail.submit(&payment).await,
        Err(RailError::Unknown { .. })
    ));
    let batch = rail.submit_batch(&[payment.clone(), payment.clone()]).await;
    assert_eq!(batch.len(), 2);
    assert!(
        batch
            .iter()
            .all(|r| matches!(r, Err(RailError::Unknown { .. })))
    );
    for e in [
        rail.status("op-x").await.unwrap_err(),
        rail.balance(&to, Token::Usdc).await.unwrap_err(),
        rail.address_for(&KeyPurpose::Treasury).await.unwrap_err(),
        rail.scan("", &[], 10).await.unwrap_err(),
    ] {
        assert!(matches!(e, RailError::Unavailable { .. }), "{e:?}");
    }
    let readiness = rail.readiness().await;
    assert_eq!(readiness.status, ReadinessStatus::Degraded);
    assert!(
        readiness.reasons[0].contains("unreachable"),
        "{readiness:?}"
    );
}

/// A hop in front of the chain that forwards every request and loses every answer
/// (502): the chain got the payment, the client never heard.
async fn lossy_hop(chain_url: String) -> String {
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri, body: Bytes| {
        let (client, chain_url) = (client.clone(), chain_url.clone());
        async move {
            let _ = client
                .post(format!("{chain_url}{uri}"))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
            StatusCode::BAD_GATEWAY
        }
    });
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(l, app).await });
    url
}

#[tokio::test]
async fn a_lost_answer_is_unknown_and_the_payment_is_found_by_status() {
    let profile = SimProfile::Solana;
    let (_, url) = chain(&[profile]).await;
    let direct = RemoteSimRail::new(&url, profile).unwrap();
    let lossy = RemoteSimRail::new(&lossy_hop(url.clone()).await, profile).unwrap();
    let treasury = direct.address_for(&KeyPurpose::Treasury).await.unwrap();
    direct
        .mint(&treasury, Token::Usdc, Micros(5_000_000))
        .await
        .unwrap();
    direct.mine(1).await.unwrap();
    let to = direct
        .address_for(&KeyPurpose::Wallet("w".into()))
        .await
        .unwrap();
    let one = treasury_payment(&direct, "op-lost", &to).await;
    let two = treasury_payment(&direct, "op-lost-2", &to).await;
    let err = lossy.submit(&one).await.unwrap_err();
    assert!(matches!(err, RailError::Unknown { .. }), "{err:?}");
    let batch = lossy.submit_batch(std::slice::from_ref(&two)).await;
    assert!(
        matches!(batch[0], Err(RailError::Unknown { .. })),
        "{batch:?}"
    );
    // Both landed: a rejection would have failed payments that were paid.
    confirmed(&direct, "op-lost").await;
    confirmed(&direct, "op-lost-2").await;
    assert_eq!(
        direct.balance(&to, Token::Usdc).await.unwrap(),
        Micros(3_000_000)
    );
    assert_eq!(direct.submit_count().await.unwrap(), 2);
}
