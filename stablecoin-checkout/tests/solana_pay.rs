//! The Solana Pay `reference` of a session (issue #50), through the engine alone on the
//! simulated EVM and Solana chains: a session with a Solana option stores its reference
//! and is found by it in one read; a session without one has none; the reference in its
//! wallet request is the stored one; a payment link's session carries the link.

use stablecoin_checkout::links::CreatePaymentLinkRequest;
use stablecoin_checkout::wallet_links::{WalletNetwork, decode_solana_pay, solana_reference};
use stablecoin_checkout::*;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::engine::{Engine, EngineConfig, Ports};
use stablecoin_core::memory::*;
use stablecoin_core::ports::Rail;
use stablecoin_rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;

#[tokio::test]
async fn a_solana_session_is_found_by_its_reference_and_its_request_carries_it() {
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([11; 32]));
    let rail = |p| {
        Arc::new(SimRail::new(
            p,
            signer.clone(),
            SimConfig {
                confirmations: 1,
                auto_mine: false,
            },
        )) as Arc<dyn Rail>
    };
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer: signer.clone(),
        notifier: Arc::new(MemoryNotifier::new()),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: Arc::new(ManualClock::new(Timestamp::from_secs(1_800_000_000))),
        entropy: Arc::new(SeededEntropy::new(5)),
    };
    let core = Engine::new(
        ports,
        vec![rail(SimProfile::Evm(137)), rail(SimProfile::Solana)],
        EngineConfig::default(),
    );
    let tenant = core.create_tenant("Shop").await.unwrap().id;
    let checkout = CheckoutEngine::new(core.kernel(), CheckoutConfig::default()).unwrap();
    let b = checkout.create_business(&tenant, "Kiosk").await.unwrap();
    let live = core
        .authenticate(b.live_key.as_deref().unwrap())
        .await
        .unwrap();
    let req = |networks: &[&str]| CreateSessionRequest {
        amount: "4.2".into(),
        currency: "USDC".into(),
        networks: Some(networks.iter().map(|n| n.to_string()).collect()),
        ..Default::default()
    };

    let sol = checkout
        .create_session(&live, &req(&["solana", "polygon"]), None)
        .await
        .unwrap();
    let (stored, _, _) = checkout
        .public_session(&sol.session_id)
        .await
        .unwrap()
        .unwrap();
    let reference = stored.solana_reference.clone().expect("a Solana option");
    assert_eq!(reference, solana_reference(&sol.session_id));
    let found = checkout
        .session_by_solana_reference(&reference)
        .await
        .unwrap()
        .expect("found by its reference");
    assert_eq!(found.id, sol.session_id);
    assert!(
        checkout
            .session_by_solana_reference(&solana_reference("cs_other"))
            .await
            .unwrap()
            .is_none()
    );

    // The wallet request of its Solana option names the same key.
    let option = stored
        .options
        .iter()
        .find(|o| o.network == "solana")
        .unwrap();
    let mint = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
    let dir = WalletNetwork::Solana {
        tokens: [(Token::Usdc, (mint.to_string(), 6))].into(),
    };
    let uri = dir
        .request_uri(
            option.token,
            &option.address,
            Micros::parse_positive("4.2").unwrap(),
            &stored.id,
        )
        .unwrap();
    let t = decode_solana_pay(&uri).unwrap();
    assert_eq!(t.references, vec![reference]);
    assert_eq!(t.amount.as_deref(), Some("4.2"));
    assert_eq!(t.recipient, option.address);

    // Without a Solana option there is no reference.
    let evm = checkout
        .create_session(&live, &req(&["polygon"]), None)
        .await
        .unwrap();
    let (stored, _, _) = checkout
        .public_session(&evm.session_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.solana_reference, None);

    // A payment link's session: on every network, with the link's id and a reference.
    let link = checkout
        .create_payment_link(
            &live,
            &CreatePaymentLinkRequest {
                amount: Some("3".into()),
                currency: "USDC".into(),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let opened = checkout
        .open_link_session(&link.link_id, None)
        .await
        .unwrap();
    assert_eq!(
        opened.payment_link_id.as_deref(),
        Some(link.link_id.as_str())
    );
    let networks: Vec<&str> = opened
        .payment_options
        .iter()
        .map(|o| o.network.as_str())
        .collect();
    assert!(networks.contains(&"solana") && networks.contains(&"polygon"));
    assert!(
        checkout
            .session_by_solana_reference(&solana_reference(&opened.session_id))
            .await
            .unwrap()
            .is_some()
    );
}
