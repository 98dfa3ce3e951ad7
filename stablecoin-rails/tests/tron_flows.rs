//! Flow tests of [`TronRail`] against the local TRON HTTP API node (the
//! `stablecoin-tron-node` crate), through the real HTTP transport ([`HttpTronApi`]), plus
//! the node's own protocol checks (SIGERROR, TRANSACTION_EXPIRATION_ERROR,
//! DUP_TRANSACTION_ERROR, TAPOS_ERROR).
#![cfg(feature = "tron-test")]

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::{LocalSigner, MemoryStore, SystemClock};
use stablecoin_core::ports::{
    ChainAddress, Curve, KeyPurpose, LegRole, PaymentLeg, Rail, RailError, RailPayment,
    ReadinessStatus, Signer, StoreJournal, SubmissionStatus,
};
use stablecoin_rails::tron::client::{BroadcastOutcome, HttpTronApi, TronApi};
use stablecoin_rails::tron::tx::{self, Resource, TxHeader};
use stablecoin_rails::tron::{TronAddress, TronConfig, TronRail};
use stablecoin_tron_node::{self as tron_node, NodeConfig, TokenBackend, TronNode};
use std::sync::Arc;
use std::time::Duration;

const TRX: u64 = 1_000_000;
const ENERGY: i32 = 1;
const BANDWIDTH: i32 = 0;

struct Env {
    node: TronNode,
    rail: TronRail,
    /// Where the rail's send journal lives (a restarted rail over it finds its sends).
    store: Arc<MemoryStore>,
    api: Arc<HttpTronApi>,
    signer: Arc<LocalSigner>,
    usdt: TronAddress,
}

fn raw(a: &TronAddress) -> [u8; 21] {
    *a.as_bytes()
}

async fn env_with(backend: TokenBackend, config_edit: impl FnOnce(&mut TronConfig)) -> Env {
    let node = TronNode::start(NodeConfig {
        backend,
        ..NodeConfig::default()
    })
    .await;
    let usdt = TronAddress::from_bytes(&node.chain().await.config.usdt_contract).unwrap();
    let signer = Arc::new(LocalSigner::from_seed([21; 32]));
    let api = Arc::new(HttpTronApi::new(node.url(), Duration::from_secs(5)).unwrap());
    let mut config = TronConfig::new(usdt);
    config.poll_interval = Duration::from_millis(5);
    config.inclusion_timeout = Duration::from_secs(3);
    config_edit(&mut config);
    let store = Arc::new(MemoryStore::new());
    let rail = TronRail::new(api.clone(), signer.clone(), config)
        .await
        .unwrap()
        .with_journal(Arc::new(StoreJournal::new(
            store.clone(),
            Arc::new(SystemClock),
        )));
    Env {
        node,
        rail,
        store,
        api,
        signer,
        usdt,
    }
}

async fn env() -> Env {
    env_with(TokenBackend::Native, |_| {}).await
}

/// Runs a flow on the native ledger and on the token's EVM bytecode under Anvil. Without
/// an anvil binary (scripts/tron/README.md) the Anvil run prints SKIPPED and returns,
/// unless `TRON_REQUIRE_ANVIL` is set, which makes it fail.
macro_rules! on_both_backends {
    ($flow:ident: $native:ident, $anvil:ident) => {
        #[tokio::test]
        async fn $native() {
            $flow(TokenBackend::Native).await
        }
        #[tokio::test]
        async fn $anvil() {
            if tron_node::find_anvil().is_none() {
                assert!(
                    std::env::var_os("TRON_REQUIRE_ANVIL").is_none(),
                    "TRON_REQUIRE_ANVIL is set but no anvil binary was found"
                );
                eprintln!(
                    "SKIPPED {}: no anvil binary (set ANVIL or run scripts/tron/install_tools.sh)",
                    stringify!($anvil)
                );
                return;
            }
            $flow(TokenBackend::Anvil).await
        }
    };
}

impl Env {
    /// Gives the sponsor TRX and Stake 2.0 stake for Energy and Bandwidth.
    async fn fund_sponsor(&self) {
        let s = raw(&self.rail.sponsor_address());
        self.node.create_account(&s, 1_000 * TRX).await;
        self.node.freeze(&s, ENERGY, 100_000 * TRX).await;
        self.node.freeze(&s, BANDWIDTH, 10_000 * TRX).await;
    }

    async fn address(&self, purpose: &KeyPurpose) -> TronAddress {
        let a = self.rail.address_for(purpose).await.unwrap();
        TronAddress::parse(&a.0).unwrap()
    }

    fn payment(
        &self,
        id: &str,
        from: &KeyPurpose,
        from_addr: &TronAddress,
        to: &TronAddress,
        amount: u64,
    ) -> RailPayment {
        RailPayment {
            id: id.into(),
            from: from.clone(),
            from_address: ChainAddress(from_addr.to_base58()),
            token: Token::Usdt,
            legs: vec![PaymentLeg {
                to: ChainAddress(to.to_base58()),
                amount: Micros(amount),
                role: LegRole::Recipient,
            }],
            valid_until: None,
        }
    }
}

#[tokio::test]
async fn provision_with_zero_trx() {
    let e = env().await;
    let p = KeyPurpose::Wallet("wal_1".into());
    let a = e.rail.address_for(&p).await.unwrap();
    assert!(a.0.starts_with('T') && a.0.len() == 34, "{a}");
    // Durable: same purpose, same address; another rail instance agrees.
    assert_eq!(e.rail.address_for(&p).await.unwrap(), a);
    let again = TronRail::new(e.api.clone(), e.signer.clone(), TronConfig::new(e.usdt))
        .await
        .unwrap();
    assert_eq!(again.address_for(&p).await.unwrap(), a);
    // It is the signer's key, Keccak-derived.
    let key = e.signer.public_key(&p, Curve::Secp256k1).await.unwrap();
    assert_eq!(
        TronAddress::from_public_key(&key.bytes)
            .unwrap()
            .to_base58(),
        a.0
    );
    e.rail.prepare_wallet(&p).await.unwrap();
    // Nothing happened on chain: no account, no TRX, no transaction.
    let addr = TronAddress::parse(&a.0).unwrap();
    assert!(e.node.account(&raw(&addr)).await.is_none());
    assert_eq!(e.node.accepted().await, 0);
    assert_eq!(e.rail.balance(&a, Token::Usdt).await.unwrap(), Micros::ZERO);
}

on_both_backends!(receive_and_scan: receive_usdt_and_read_balance_with_zero_trx_then_scan_it, receive_usdt_and_read_balance_with_zero_trx_then_scan_it_on_anvil);

async fn receive_and_scan(backend: TokenBackend) {
    let e = env_with(backend, |_| {}).await;
    let p = KeyPurpose::Wallet("wal_rx".into());
    let customer = e.address(&p).await;
    let other = e.address(&KeyPurpose::Wallet("wal_other".into())).await;
    let tx_hash = e.node.mint_usdt(&raw(&customer), 25_500_000).await;
    let addr = ChainAddress(customer.to_base58());
    assert_eq!(
        e.rail.balance(&addr, Token::Usdt).await.unwrap(),
        Micros(25_500_000)
    );
    // Zero TRX, and the account does not even exist.
    assert!(e.node.account(&raw(&customer)).await.is_none());
    assert_eq!(e.node.trx_balance(&raw(&customer)).await, 0);

    // Scanner: seen at once, confirmed at depth 19; the cursor waits for the depth.
    let b = e
        .rail
        .scan("", std::slice::from_ref(&addr), 100)
        .await
        .unwrap();
    assert_eq!(b.inbound.len(), 1);
    let d = &b.inbound[0];
    assert_eq!(d.tx_hash, tx_hash);
    assert_eq!(d.to, addr);
    assert_eq!(d.amount, Micros(25_500_000));
    assert_eq!(d.token, Token::Usdt);
    assert!(!d.confirmed);
    assert_eq!(b.cursor, "0", "no block is at the depth yet");
    // Not watched: nothing. Empty watch list: every transfer.
    let none = e
        .rail
        .scan("", &[ChainAddress(other.to_base58())], 100)
        .await
        .unwrap();
    assert!(none.inbound.is_empty());
    assert_eq!(e.rail.scan("", &[], 100).await.unwrap().inbound.len(), 1);

    e.node.mine(18).await;
    let b = e
        .rail
        .scan(&b.cursor, std::slice::from_ref(&addr), 100)
        .await
        .unwrap();
    assert_eq!(b.inbound.len(), 1);
    assert!(b.inbound[0].confirmed);
    assert_eq!(b.inbound[0].confirmations, 19);
    assert_eq!(b.cursor, "2");
    let b = e
        .rail
        .scan(&b.cursor, std::slice::from_ref(&addr), 100)
        .await
        .unwrap();
    assert!(b.inbound.is_empty());

    // Malformed input is typed.
    let err = e
        .rail
        .balance(
            &ChainAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u".into()),
            Token::Usdt,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ADDRESS");
    assert!(
        err.to_string().contains("TRON_ADDRESS_BAD_CHECKSUM"),
        "{err}"
    );
    assert_eq!(
        e.rail.balance(&addr, Token::Usdc).await.unwrap_err().code(),
        "UNSUPPORTED"
    );
    assert_eq!(
        e.rail.scan("x", &[], 1).await.unwrap_err().code(),
        "RAIL_REJECTED"
    );
}

#[tokio::test]
async fn readiness_inbound_ready_unfunded_then_ready_funded() {
    let e = env().await;
    let p = KeyPurpose::Wallet("wal_r".into());
    let customer = e.address(&p).await;
    let recipient = e.address(&KeyPurpose::Wallet("wal_r2".into())).await;
    e.node.mint_usdt(&raw(&customer), 5_000_000).await;

    let r = e.rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::InboundReady, "{r:?}");
    assert!(!r.can_send());
    assert!(
        r.reasons.iter().any(|m| m.contains("does not exist")),
        "{r:?}"
    );
    // Sends are unavailable (the server answers 503) and nothing is broadcast.
    let err = e
        .rail
        .submit(&e.payment("op-unfunded", &p, &customer, &recipient, 1_000_000))
        .await
        .unwrap_err();
    assert!(matches!(err, RailError::Unavailable { .. }), "{err:?}");
    assert_eq!(e.node.accepted().await, 0);
    assert_eq!(
        e.rail.status("op-unfunded").await.unwrap(),
        SubmissionStatus::NotFound
    );

    // TRX but no stake: still INBOUND_READY, with the missing stake named.
    let s = raw(&e.rail.sponsor_address());
    e.node.create_account(&s, 1_000 * TRX).await;
    let r = e.rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::InboundReady, "{r:?}");
    assert!(r.reasons.iter().any(|m| m.contains("ENERGY")), "{r:?}");

    e.fund_sponsor().await;
    let r = e.rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::Ready, "{r:?}");
    assert!(r.reasons.is_empty());

    // Read side down: DEGRADED.
    e.node.set_down(true).await;
    let r = e.rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::Degraded, "{r:?}");
    e.node.set_down(false).await;
}

on_both_backends!(sponsored_send: sponsored_send_settles_and_customer_keeps_zero_trx, sponsored_send_settles_and_customer_keeps_zero_trx_on_anvil);

async fn sponsored_send(backend: TokenBackend) {
    let e = env_with(backend, |_| {}).await;
    e.fund_sponsor().await;
    let sponsor = raw(&e.rail.sponsor_address());
    let sponsor_trx_before = e.node.trx_balance(&sponsor).await;
    let p = KeyPurpose::Wallet("wal_s".into());
    let customer = e.address(&p).await;
    let recipient = e.address(&KeyPurpose::Wallet("wal_s2".into())).await;
    e.node.mint_usdt(&raw(&customer), 10_000_000).await;

    let payment = e.payment("op-send-1", &p, &customer, &recipient, 4_000_000);
    let sub = e.rail.submit(&payment).await.unwrap();
    let tx_hash = sub.tx_hash.clone().unwrap();
    assert_eq!(tx_hash.len(), 64);
    assert_eq!(
        e.node.contract_ret(&tx_hash).await.as_deref(),
        Some("SUCCESS")
    );
    // Paid with the delegated Energy (within the 65 000 lent): nothing burnt.
    let txid: [u8; 32] = hex::decode(&tx_hash).unwrap().try_into().unwrap();
    let info = e.api.transaction_info(&txid).await.unwrap().unwrap();
    eprintln!(
        "{backend:?}: transfer used {} Energy",
        info.energy_usage_total
    );
    assert!(
        (10_000..=65_000).contains(&info.energy_usage_total),
        "{backend:?}: {info:?}"
    );
    assert_eq!((info.energy_fee_sun, info.fee_sun), (0, 0));
    // activation + energy + bandwidth delegation + transfer
    assert_eq!(e.node.accepted().await, 4);

    // Below the depth: pending; the delegations come back once the transfer is in a block.
    match e.rail.status("op-send-1").await.unwrap() {
        SubmissionStatus::Pending { tx_hash: Some(h) } => assert_eq!(h, tx_hash),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.node.delegated(&sponsor, &raw(&customer), ENERGY).await, 0);
    assert_eq!(
        e.node.delegated(&sponsor, &raw(&customer), BANDWIDTH).await,
        0
    );
    assert_eq!(e.node.accepted().await, 6, "two undelegations");

    e.node.mine(19).await;
    match e.rail.status("op-send-1").await.unwrap() {
        SubmissionStatus::Confirmed { tx_hash: h, .. } => assert_eq!(h, tx_hash),
        other => panic!("{other:?}"),
    }
    assert_eq!(e.node.usdt_balance(&raw(&recipient)).await, 4_000_000);
    assert_eq!(
        e.rail
            .balance(&ChainAddress(customer.to_base58()), Token::Usdt)
            .await
            .unwrap(),
        Micros(6_000_000)
    );
    // The customer's account exists now and holds zero TRX; nothing was burnt from it.
    let acct = e.node.account(&raw(&customer)).await.unwrap();
    assert_eq!(acct.balance, 0);
    assert_eq!(acct.acquired_energy, 0);
    // The sponsor paid the activation (1 TRX) and nothing else in TRX (staked bandwidth).
    assert_eq!(sponsor_trx_before - e.node.trx_balance(&sponsor).await, TRX);

    // Idempotent by payment id: same hash, nothing new on chain.
    let again = e.rail.submit(&payment).await.unwrap();
    assert_eq!(again.tx_hash.as_deref(), Some(tx_hash.as_str()));
    assert_eq!(e.node.accepted().await, 6);
    assert_eq!(e.node.usdt_balance(&raw(&recipient)).await, 4_000_000);

    // A second send from the activated account: no activation this time.
    let sub2 = e
        .rail
        .submit(&e.payment("op-send-2", &p, &customer, &recipient, 1_000_000))
        .await
        .unwrap();
    assert_eq!(e.node.accepted().await, 9, "two delegations + transfer");
    e.node.mine(19).await;
    assert!(matches!(
        e.rail.status("op-send-2").await.unwrap(),
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(e.node.usdt_balance(&raw(&recipient)).await, 5_000_000);
    assert_eq!(e.node.trx_balance(&raw(&customer)).await, 0);
    assert_ne!(sub2.tx_hash, sub.tx_hash);

    // The deposit scanner sees the payments to the recipient.
    let b = e
        .rail
        .scan("", &[ChainAddress(recipient.to_base58())], 100)
        .await
        .unwrap();
    assert_eq!(b.inbound.len(), 2);
    assert!(
        b.inbound
            .iter()
            .any(|d| d.tx_hash == tx_hash && d.confirmed)
    );
}

on_both_backends!(send_without_energy: send_without_delegated_energy_fails_cleanly, send_without_delegated_energy_fails_cleanly_on_anvil);

async fn send_without_energy(backend: TokenBackend) {
    // The sponsor lends no Energy: the customer's transfer runs out of Energy on chain.
    let e = env_with(backend, |c| c.energy_per_transfer = 0).await;
    e.fund_sponsor().await;
    let p = KeyPurpose::Wallet("wal_oe".into());
    let customer = e.address(&p).await;
    let recipient = e.address(&KeyPurpose::Wallet("wal_oe2".into())).await;
    e.node.mint_usdt(&raw(&customer), 3_000_000).await;

    let sub = e
        .rail
        .submit(&e.payment("op-oe", &p, &customer, &recipient, 2_000_000))
        .await
        .unwrap();
    let tx_hash = sub.tx_hash.unwrap();
    assert_eq!(
        e.node.contract_ret(&tx_hash).await.as_deref(),
        Some("OUT_OF_ENERGY")
    );
    e.node.mine(19).await;
    match e.rail.status("op-oe").await.unwrap() {
        SubmissionStatus::Failed {
            reason,
            tx_hash: Some(h),
            ..
        } => {
            assert!(reason.starts_with("OUT_OF_ENERGY"), "{reason}");
            assert_eq!(h, tx_hash);
        }
        other => panic!("{other:?}"),
    }
    // Value not lost: the USDT stayed with the customer; no TRX was taken from it.
    assert_eq!(e.node.usdt_balance(&raw(&customer)).await, 3_000_000);
    assert_eq!(e.node.usdt_balance(&raw(&recipient)).await, 0);
    assert_eq!(e.node.trx_balance(&raw(&customer)).await, 0);
    // The Bandwidth lent for it came back.
    let sponsor = raw(&e.rail.sponsor_address());
    assert_eq!(
        e.node.delegated(&sponsor, &raw(&customer), BANDWIDTH).await,
        0
    );
}

on_both_backends!(lost_response: lost_broadcast_response_is_reconciled_by_txid_without_a_second_send, lost_broadcast_response_is_reconciled_by_txid_without_a_second_send_on_anvil);

async fn lost_response(backend: TokenBackend) {
    let e = env_with(backend, |_| {}).await;
    e.fund_sponsor().await;
    let p = KeyPurpose::Wallet("wal_lost".into());
    let customer = e.address(&p).await;
    let recipient = e.address(&KeyPurpose::Wallet("wal_lost2".into())).await;
    e.node.mint_usdt(&raw(&customer), 7_000_000).await;

    e.node.lose_next_broadcast_response(31).await;
    let payment = e.payment("op-lost", &p, &customer, &recipient, 7_000_000);
    let err = e.rail.submit(&payment).await.unwrap_err();
    assert!(matches!(err, RailError::Unknown { .. }), "{err:?}");
    assert_eq!(err.code(), "SUBMISSION_UNKNOWN");
    let recorded = e.rail.tx_hash_of("op-lost").unwrap();
    // It did reach the node.
    assert_eq!(
        e.node.contract_ret(&recorded).await.as_deref(),
        Some("SUCCESS")
    );
    let accepted = e.node.accepted().await;

    // Reconciled by txID: pending, then confirmed, with the same hash.
    assert!(matches!(
        e.rail.status("op-lost").await.unwrap(),
        SubmissionStatus::Pending { .. }
    ));
    e.node.mine(19).await;
    match e.rail.status("op-lost").await.unwrap() {
        SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(tx_hash, recorded),
        other => panic!("{other:?}"),
    }
    // A retry under the same id does not send again.
    let again = e.rail.submit(&payment).await.unwrap();
    assert_eq!(again.tx_hash.as_deref(), Some(recorded.as_str()));
    assert_eq!(e.node.usdt_balance(&raw(&recipient)).await, 7_000_000);
    assert_eq!(e.node.usdt_balance(&raw(&customer)).await, 0);
    assert_eq!(
        e.node.accepted().await,
        accepted + 2,
        "only the two undelegations"
    );

    // A rail restarted over the same journal reconciles by txID and sends nothing.
    let journaled = TronRail::new(e.api.clone(), e.signer.clone(), e.rail.config().clone())
        .await
        .unwrap()
        .with_journal(Arc::new(StoreJournal::new(
            e.store.clone(),
            Arc::new(SystemClock),
        )));
    match journaled.status("op-lost").await.unwrap() {
        SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(tx_hash, recorded),
        other => panic!("{other:?}"),
    }
    let again = journaled.submit(&payment).await.unwrap();
    assert_eq!(again.tx_hash.as_deref(), Some(recorded.as_str()));
    assert_eq!(e.node.accepted().await, accepted + 2, "nothing sent again");
    assert_eq!(e.node.usdt_balance(&raw(&recipient)).await, 7_000_000);

    // A rail restarted without a journal finds it again once re-seeded from the
    // engine's persisted tx_hash.
    let restarted = TronRail::new(e.api.clone(), e.signer.clone(), e.rail.config().clone())
        .await
        .unwrap();
    assert_eq!(
        restarted.status("op-lost").await.unwrap(),
        SubmissionStatus::NotFound
    );
    restarted
        .restore_submission(
            "op-lost",
            &recorded,
            &ChainAddress(customer.to_base58()),
            None,
        )
        .unwrap();
    assert!(matches!(
        restarted.status("op-lost").await.unwrap(),
        SubmissionStatus::Confirmed { .. }
    ));
}

#[tokio::test]
async fn invalid_payments_are_refused_before_anything_is_sent() {
    let e = env().await;
    e.fund_sponsor().await;
    let p = KeyPurpose::Wallet("wal_v".into());
    let customer = e.address(&p).await;
    let recipient = e.address(&KeyPurpose::Wallet("wal_v2".into())).await;
    e.node.mint_usdt(&raw(&customer), 1_000_000).await;

    // More than the balance.
    let err = e
        .rail
        .submit(&e.payment("op-big", &p, &customer, &recipient, 2_000_000))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "RAIL_REJECTED", "{err:?}");
    // USDC, fee legs: not on TRON.
    let mut usdc = e.payment("op-usdc", &p, &customer, &recipient, 1);
    usdc.token = Token::Usdc;
    assert_eq!(
        e.rail.submit(&usdc).await.unwrap_err().code(),
        "UNSUPPORTED"
    );
    let mut fee = e.payment("op-fee", &p, &customer, &recipient, 1);
    fee.legs.push(PaymentLeg {
        to: ChainAddress(recipient.to_base58()),
        amount: Micros(1),
        role: LegRole::ServiceFee,
    });
    assert_eq!(e.rail.submit(&fee).await.unwrap_err().code(), "UNSUPPORTED");
    // A from_address that is not the key's.
    let wrong = e.payment("op-wrong", &KeyPurpose::Treasury, &customer, &recipient, 1);
    assert_eq!(
        e.rail.submit(&wrong).await.unwrap_err().code(),
        "RAIL_REJECTED"
    );
    // Malformed recipient.
    let mut bad = e.payment("op-bad", &p, &customer, &recipient, 1);
    bad.legs[0].to = ChainAddress("T-not-an-address".into());
    assert_eq!(
        e.rail.submit(&bad).await.unwrap_err().code(),
        "INVALID_ADDRESS"
    );
    assert_eq!(e.node.accepted().await, 0);
}

/// A funded plain account that signs its own transactions.
async fn funded_account(e: &Env, purpose: &KeyPurpose) -> TronAddress {
    let a = e.address(purpose).await;
    e.node.create_account(&raw(&a), 100 * TRX).await;
    a
}

async fn header(e: &Env) -> TxHeader {
    let head = e.api.now_block().await.unwrap();
    TxHeader::from_block_id(&head.id, head.timestamp_ms, 60_000)
}

fn rejected_code(o: BroadcastOutcome) -> (String, String) {
    match o {
        BroadcastOutcome::Rejected { code, message } => (code, message),
        BroadcastOutcome::Accepted => panic!("accepted"),
    }
}

#[tokio::test]
async fn node_rejects_bad_signatures_expired_duplicate_and_unknown_reference_blocks() {
    let e = env().await;
    let alice_p = KeyPurpose::Treasury;
    let alice = funded_account(&e, &alice_p).await;
    let bob = e.address(&KeyPurpose::Wallet("bob".into())).await;
    let signer = e.signer.as_ref();

    // Signed by another key: SIGERROR.
    let h = header(&e).await;
    let unsigned = tx::build_trx_transfer(&h, &alice, &bob, TRX).unwrap();
    let stolen = tx::build_trx_transfer(&h, &alice, &bob, 5 * TRX).unwrap();
    let sig = signer
        .sign(&KeyPurpose::ServiceFees, Curve::Secp256k1, &stolen.txid)
        .await
        .unwrap();
    let forged = stolen.clone().with_signature(&sig.0).unwrap();
    let (code, message) = rejected_code(e.api.broadcast(&forged).await.unwrap());
    assert_eq!(code, "SIGERROR");
    assert!(message.starts_with("validate signature error"), "{message}");
    // As in java-tron, the refused txID stays in the broadcast cache, even with the
    // owner's signature (the txID does not cover the signature).
    let owners = tx::sign_tx(signer, &alice_p, &alice, stolen).await.unwrap();
    let (code, message) = rejected_code(e.api.broadcast(&owners).await.unwrap());
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("DUP_TRANSACTION_ERROR", "")
    );

    // A signature over different bytes (tampered amount): SIGERROR.
    let good = tx::sign_tx(signer, &alice_p, &alice, unsigned.clone())
        .await
        .unwrap();
    let other = tx::build_trx_transfer(&h, &alice, &bob, 2 * TRX).unwrap();
    let tampered = other.with_signature(&good.signature).unwrap();
    assert_eq!(
        rejected_code(e.api.broadcast(&tampered).await.unwrap()).0,
        "SIGERROR"
    );

    // Expired: TRANSACTION_EXPIRATION_ERROR.
    let mut old = h;
    old.expiration_ms = e.node.head_timestamp().await;
    let expired = tx::sign_tx(
        signer,
        &alice_p,
        &alice,
        tx::build_trx_transfer(&old, &alice, &bob, TRX).unwrap(),
    )
    .await
    .unwrap();
    let (code, message) = rejected_code(e.api.broadcast(&expired).await.unwrap());
    assert_eq!(code, "TRANSACTION_EXPIRATION_ERROR");
    assert_eq!(message, "transaction expired");

    // Unknown reference block: TAPOS_ERROR.
    let mut forked = h;
    forked.ref_block_hash = [0xee; 8];
    let forked = tx::sign_tx(
        signer,
        &alice_p,
        &alice,
        tx::build_trx_transfer(&forked, &alice, &bob, TRX).unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(
        rejected_code(e.api.broadcast(&forked).await.unwrap()).0,
        "TAPOS_ERROR"
    );
    assert_eq!(e.node.accepted().await, 0);

    // The good one is accepted (creating bob's account), then is a duplicate.
    assert_eq!(
        e.api.broadcast(&good).await.unwrap(),
        BroadcastOutcome::Accepted
    );
    assert_eq!(e.node.trx_balance(&raw(&bob)).await, TRX);
    let (code, _) = rejected_code(e.api.broadcast(&good).await.unwrap());
    assert_eq!(code, "DUP_TRANSACTION_ERROR");
    assert_eq!(e.node.accepted().await, 1);
    let info = e.api.transaction_info(&good.txid()).await.unwrap().unwrap();
    assert!(info.succeeded());
    assert!(e.api.transaction_known(&good.txid()).await.unwrap());

    // A tronpy-style v (0/1) is accepted as well.
    let h = header(&e).await;
    let u = tx::build_trx_transfer(&h, &alice, &bob, 3).unwrap();
    let mut sig = signer
        .sign(&alice_p, Curve::Secp256k1, &u.txid)
        .await
        .unwrap()
        .0;
    assert!(sig[64] <= 1);
    let raw_bytes = stablecoin_rails::tron::proto::Transaction {
        raw_data: Some(u.raw.clone()),
        signature: vec![sig.clone()],
        ret: vec![],
    };
    let hexed = hex::encode(prost::Message::encode_to_vec(&raw_bytes));
    let resp: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/wallet/broadcasthex", e.node.url()))
        .json(&serde_json::json!({ "transaction": hexed }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(resp["result"], true, "{resp}");
    sig[64] += 27;
    assert_eq!(tx::recover_signer(&u.txid, &sig).unwrap(), alice);
}

on_both_backends!(contracts_and_resources: node_validates_contracts_and_resources, node_validates_contracts_and_resources_on_anvil);

async fn contracts_and_resources(backend: TokenBackend) {
    let e = env_with(backend, |_| {}).await;
    let alice_p = KeyPurpose::Treasury;
    let alice = funded_account(&e, &alice_p).await;
    let ghost_p = KeyPurpose::Wallet("ghost".into());
    let ghost = e.address(&ghost_p).await;
    let signer = e.signer.as_ref();
    let usdt = e.usdt;
    e.node.mint_usdt(&raw(&ghost), 1_000).await;

    // A TRC-20 transfer from an account that does not exist: refused, nothing moves.
    let h = header(&e).await;
    let t = tx::sign_tx(
        signer,
        &ghost_p,
        &ghost,
        tx::build_trc20_transfer(&h, &ghost, &usdt, &alice, 1_000, 100_000_000),
    )
    .await
    .unwrap();
    let (code, message) = rejected_code(e.api.broadcast(&t).await.unwrap());
    assert_eq!(code, "CONTRACT_VALIDATE_ERROR");
    assert!(message.contains("does not exist"), "{message}");

    // Delegating without stake: refused.
    let d = tx::sign_tx(
        signer,
        &alice_p,
        &alice,
        tx::build_delegate_resource(&h, &alice, &usdt, Resource::Energy, 5 * TRX).unwrap(),
    )
    .await
    .unwrap();
    let (code, message) = rejected_code(e.api.broadcast(&d).await.unwrap());
    assert_eq!(code, "CONTRACT_VALIDATE_ERROR");
    assert!(message.contains("available FreezeEnergyV2"), "{message}");

    // An activated account with TRX but no Energy burns TRX for it.
    let act = tx::sign_tx(
        signer,
        &alice_p,
        &alice,
        tx::build_account_create(&h, &alice, &ghost),
    )
    .await
    .unwrap();
    assert_eq!(
        e.api.broadcast(&act).await.unwrap(),
        BroadcastOutcome::Accepted
    );
    let h = header(&e).await;
    let t = tx::sign_tx(
        signer,
        &alice_p,
        &alice,
        tx::build_trc20_transfer(&h, &alice, &usdt, &ghost, 1, 100_000_000),
    )
    .await
    .unwrap();
    // alice holds no USDT: the call reverts in its block (broadcast still accepted).
    assert_eq!(
        e.api.broadcast(&t).await.unwrap(),
        BroadcastOutcome::Accepted
    );
    let info = e.api.transaction_info(&t.txid()).await.unwrap().unwrap();
    assert_eq!(info.receipt_result.as_deref(), Some("REVERT"));
    assert!(info.energy_fee_sun > 0, "{info:?}");
    // Worded as every rail words a revert (the node returns no revert data here).
    assert_eq!(info.failure_reason(), "execution reverted");
}

/// A payment's deadline maps to the transfer's expiration (never later, whatever the
/// configured validity), and a payment already past it at the head block is refused
/// before the sponsor spends anything.
#[tokio::test]
async fn a_payment_deadline_caps_the_transfer_expiration_and_a_late_payment_is_refused() {
    use stablecoin_core::domain::time::Timestamp;
    use stablecoin_core::ports::Store;
    let e = env().await;
    e.fund_sponsor().await;
    let p = KeyPurpose::Wallet("wal_deadline".into());
    let customer = e.address(&p).await;
    let recipient = e
        .address(&KeyPurpose::Wallet("wal_deadline_to".into()))
        .await;
    e.node.mint_usdt(&raw(&customer), 10_000_000).await;
    let accepted = e.node.accepted().await;

    let mut late = e.payment("op-late", &p, &customer, &recipient, 1_000_000);
    late.valid_until = Some(Timestamp(e.node.head_timestamp().await - 1));
    match e.rail.submit(&late).await {
        Err(RailError::Rejected { reason }) => assert!(reason.contains("deadline"), "{reason}"),
        other => panic!("expected Rejected, got {other:?}"),
    }
    assert_eq!(
        e.node.accepted().await,
        accepted,
        "no activation, no delegation"
    );
    assert_eq!(
        e.rail.status("op-late").await.unwrap(),
        SubmissionStatus::NotFound
    );

    let mut payment = e.payment("op-deadline", &p, &customer, &recipient, 4_000_000);
    let deadline = Timestamp(e.node.head_timestamp().await + 30_000);
    payment.valid_until = Some(deadline);
    e.rail.submit(&payment).await.unwrap();
    let entry = e
        .store
        .get("rail_journal", "tron/op-deadline")
        .await
        .unwrap()
        .expect("journaled before the broadcast")
        .body
        .to_value()
        .unwrap();
    let expiration = entry["expiration_ms"].as_i64().unwrap();
    assert!(
        expiration <= deadline.millis(),
        "expires by the deadline: {expiration} > {}",
        deadline.millis()
    );
    e.node.mine(19).await;
    assert!(matches!(
        e.rail.status("op-deadline").await.unwrap(),
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(e.node.usdt_balance(&raw(&recipient)).await, 4_000_000);
}
