//! Solana sends under congestion (issue #49): every send carries a compute-unit limit and
//! a compute-unit price from `getRecentPrioritizationFees` (within the configured floor
//! and ceiling), which litesvm's runtime enforces and charges; a send the node accepts and
//! then drops is rebroadcast with the same signature while its blockhash is valid; once
//! the blockhash expires unseen it is reconciled as dead, and only then signed again (a
//! new signature, priced higher), and it is paid once. On litesvm in process, and over
//! JSON-RPC through a loopback proxy that drops the first sends.
#![cfg(feature = "solana-test")]

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailPayment, SubmissionStatus,
};
use stablecoin_rails::fault_proxy::{Fault, FaultProxy};
use stablecoin_rails::solana::codec::{self, MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::rpc::SolanaRpc;
use stablecoin_rails::solana::testkit::server::RpcServer;
use stablecoin_rails::solana::testkit::{LiteSvmRpc, SendFault, test_config};
use stablecoin_rails::solana::{
    Commitment, JsonRpcClient, Pubkey, SendState, Signature, SolanaConfig, SolanaFeePolicy,
    SolanaRail,
};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

const SOL: u64 = 1_000_000_000;

fn key(a: &ChainAddress) -> Pubkey {
    Pubkey::from_str(&a.0).unwrap()
}

fn usdc_ata(owner: &ChainAddress) -> Pubkey {
    codec::associated_token_address(&key(owner), &MAINNET_USDC_MINT, &codec::TOKEN_PROGRAM_ID)
}

fn kit() -> Arc<LiteSvmRpc> {
    let kit = Arc::new(LiteSvmRpc::new());
    kit.create_mint(&MAINNET_USDC_MINT, 6);
    kit.create_mint(&MAINNET_USDT_MINT, 6);
    kit
}

fn rail(rpc: Arc<dyn SolanaRpc>, fees: SolanaFeePolicy) -> SolanaRail {
    SolanaRail::new(
        rpc,
        Arc::new(LocalSigner::from_seed([77; 32])),
        SolanaConfig {
            fees,
            ..test_config()
        },
    )
}

fn pay(id: &str, from: &ChainAddress, to: &ChainAddress, micros: u64) -> RailPayment {
    RailPayment {
        id: id.into(),
        from: KeyPurpose::PhoneWallet("+A".into()),
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

/// A funded fee payer, a sender `+A` holding 5 USDC and a provisioned recipient `+B`.
async fn parties(kit: &LiteSvmRpc, rail: &SolanaRail) -> (ChainAddress, ChainAddress) {
    kit.airdrop(&rail.fee_payer().await.unwrap(), 10 * SOL);
    let a = rail.provision("+A").await.unwrap().address;
    let b = rail.provision("+B").await.unwrap().address;
    kit.mint_to(&key(&a), &MAINNET_USDC_MINT, 5_000_000)
        .unwrap();
    (a, b)
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

/// The compute-budget instructions of a journaled transaction, decoded from its wire
/// bytes: `(program, data)` of its first two instructions.
fn budget_of(wire_base64: &str) -> Vec<(Pubkey, Vec<u8>)> {
    use base64::Engine as _;
    let wire = base64::engine::general_purpose::STANDARD
        .decode(wire_base64)
        .unwrap();
    let tx: solana_transaction::Transaction = wincode::deserialize(&wire).unwrap();
    let keys = &tx.message.account_keys;
    tx.message.instructions[..2]
        .iter()
        .map(|ix| (keys[usize::from(ix.program_id_index)], ix.data.clone()))
        .collect()
}

fn limit_ix(units: u32) -> Vec<u8> {
    let mut d = vec![2];
    d.extend_from_slice(&units.to_le_bytes());
    d
}

fn price_ix(micro_lamports: u64) -> Vec<u8> {
    let mut d = vec![3];
    d.extend_from_slice(&micro_lamports.to_le_bytes());
    d
}

#[tokio::test]
async fn a_send_carries_a_limit_and_a_price_from_recent_fees_and_the_runtime_charges_them() {
    let kit = kit();
    let rail = rail(kit.clone(), SolanaFeePolicy::default());
    let (a, b) = parties(&kit, &rail).await;
    let fee_payer = rail.fee_payer().await.unwrap();
    // Eight recent slots; the 75th percentile (nearest rank) is the sixth: 200 000.
    kit.set_recent_prioritization_fees(Some(vec![
        0, 0, 50_000, 80_000, 120_000, 200_000, 250_000, 300_000,
    ]));
    let asked_before = kit.prioritization_fee_accounts().len();
    let before = kit.lamports(&fee_payer);
    let r = rail
        .submit_with_info(&pay("pf-1", &a, &b, 1_000_000))
        .await
        .unwrap();
    assert_eq!(
        r.info.compute_unit_limit, 20_400,
        "5 000 base + 1 transfer + the 4-byte payment-id memo (5 000 + 4 x 100)"
    );
    assert_eq!(r.info.compute_unit_price_micro_lamports, 200_000);
    // Asked about the accounts the send writes: fee payer, source and recipient ATAs.
    let asked = kit.prioritization_fee_accounts();
    assert_eq!(asked.len(), asked_before + 1);
    assert_eq!(
        asked.last().unwrap(),
        &vec![fee_payer, usdc_ata(&a), usdc_ata(&b)]
    );
    let rec = rail.send_record("pf-1").await.unwrap().unwrap();
    assert_eq!(
        budget_of(&rec.wire_base64),
        vec![
            (codec::COMPUTE_BUDGET_PROGRAM_ID, limit_ix(20_400)),
            (codec::COMPUTE_BUDGET_PROGRAM_ID, price_ix(200_000)),
        ]
    );
    assert!(matches!(
        settle(&rail, "pf-1").await,
        SubmissionStatus::Confirmed { .. }
    ));
    // The runtime charged two signatures plus ceil(20 400 x 200 000 / 10^6) = 4 080.
    let sig = Signature::from_str(&r.info.signature).unwrap();
    let landed = kit
        .get_transaction(&sig, Commitment::Finalized)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(landed.fee, 14_080);
    assert_eq!(before - kit.lamports(&fee_payer), 14_080);
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(1_000_000)
    );

    // A send creating its recipient's account asks 40 000 more units.
    let c = rail
        .address_for(&KeyPurpose::PhoneWallet("+C".into()))
        .await
        .unwrap();
    let r = rail
        .submit_with_info(&pay("pf-2", &a, &c, 500_000))
        .await
        .unwrap();
    assert!(r.info.created_recipient_ata);
    assert_eq!(r.info.compute_unit_limit, 60_400);
    assert!(matches!(
        settle(&rail, "pf-2").await,
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(
        rail.balance(&c, Token::Usdc).await.unwrap(),
        Micros(500_000)
    );
}

#[tokio::test]
async fn the_price_stays_within_the_floor_and_the_ceiling() {
    let kit = kit();
    let policy = SolanaFeePolicy {
        price_floor_micro_lamports: 2_000,
        price_ceiling_micro_lamports: 100_000,
        ..SolanaFeePolicy::default()
    };
    let rail = rail(kit.clone(), policy);
    let (a, b) = parties(&kit, &rail).await;
    let fee_payer = rail.fee_payer().await.unwrap();
    let cases: [(&str, Option<Vec<u64>>, u64); 3] = [
        // A fee spike: held at the ceiling.
        ("pf-spike", Some(vec![9_000_000; 10]), 100_000),
        // A quiet cluster (every slot at 0): the floor, never a zero price.
        ("pf-quiet", Some(vec![0; 10]), 2_000),
        // A node without the method: the floor, and the send still goes.
        ("pf-nofees", None, 2_000),
    ];
    // Amounts differ, though the payment-id memo alone keeps alike transfers apart
    // (tests/solana_memo.rs).
    for (i, (id, fees, want)) in cases.into_iter().enumerate() {
        kit.set_recent_prioritization_fees(fees);
        let before = kit.lamports(&fee_payer);
        let r = rail
            .submit_with_info(&pay(id, &a, &b, 100_000 + i as u64))
            .await
            .unwrap();
        assert_eq!(r.info.compute_unit_price_micro_lamports, want, "{id}");
        assert!(matches!(
            settle(&rail, id).await,
            SubmissionStatus::Confirmed { .. }
        ));
        assert_eq!(
            before - kit.lamports(&fee_payer),
            codec::transaction_fee_lamports(2, 20_000 + 100 * id.len() as u32, want),
            "{id}: what the runtime charged"
        );
    }
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(300_003)
    );
}

/// The limit is enforced as encoded: a send whose limit is below what its instructions
/// use is refused by the node's preflight, and nothing moves.
#[tokio::test]
async fn a_limit_below_what_the_transfer_uses_is_refused_and_moves_nothing() {
    let kit = kit();
    let policy = SolanaFeePolicy {
        compute_units_base: 0,
        compute_units_per_transfer: 1,
        compute_units_per_memo: 0,
        compute_units_per_memo_byte: 0,
        ..SolanaFeePolicy::default()
    };
    let rail = rail(kit.clone(), policy);
    let (a, b) = parties(&kit, &rail).await;
    let txs = kit.transaction_count();
    let err = rail
        .submit(&pay("pf-tight", &a, &b, 100_000))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "RAIL_REJECTED");
    assert!(
        err.to_string().contains("ComputationalBudgetExceeded"),
        "{err}"
    );
    assert_eq!(kit.transaction_count(), txs);
    assert_eq!(rail.balance(&b, Token::Usdc).await.unwrap(), Micros(0));
}

#[tokio::test]
async fn a_dropped_send_is_rebroadcast_with_the_same_signature_until_it_lands() {
    let kit = kit();
    let rail = rail(kit.clone(), SolanaFeePolicy::default());
    let (a, b) = parties(&kit, &rail).await;
    kit.set_auto_advance(false);
    // The node accepts the first three broadcasts and loses each.
    for _ in 0..3 {
        kit.inject(SendFault::Dropped);
    }
    let sends = kit.calls("sendTransaction");
    let txs = kit.transaction_count();
    let p = pay("pf-drop", &a, &b, 700_000);
    let first = rail
        .submit(&p)
        .await
        .expect("the node answered the signature");
    let signature = first.tx_hash.clone().unwrap();
    // While its blockhash is valid: never a new transaction, only the same bytes again.
    assert_eq!(
        rail.status("pf-drop").await.unwrap(),
        SubmissionStatus::Pending {
            tx_hash: Some(signature.clone())
        }
    );
    let again = rail.submit_with_info(&p).await.unwrap();
    assert_eq!(again.submission.tx_hash, Some(signature.clone()));
    assert_eq!(again.info.attempts, 1);
    assert_eq!(kit.transaction_count(), txs, "dropped three times so far");
    assert_eq!(kit.calls("sendTransaction"), sends + 3);
    kit.set_auto_advance(true);
    match settle(&rail, "pf-drop").await {
        SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(tx_hash, signature),
        other => panic!("{other:?}"),
    }
    assert_eq!(kit.transaction_count(), txs + 1, "landed once");
    let rec = rail.send_record("pf-drop").await.unwrap().unwrap();
    assert_eq!(rec.info.attempts, 1);
    assert!(rec.superseded.is_empty());
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(700_000)
    );
}

#[tokio::test]
async fn a_send_dropped_until_its_blockhash_expires_is_signed_again_once_priced_higher() {
    let kit = kit();
    let rail = rail(kit.clone(), SolanaFeePolicy::default());
    let (a, b) = parties(&kit, &rail).await;
    kit.set_recent_prioritization_fees(Some(vec![10_000]));
    kit.inject(SendFault::Dropped);
    let p = pay("pf-exp", &a, &b, 400_000);
    let first = rail.submit_with_info(&p).await.unwrap().info;
    assert_eq!(first.compute_unit_price_micro_lamports, 10_000);
    let first_wire = rail
        .send_record("pf-exp")
        .await
        .unwrap()
        .unwrap()
        .wire_base64;
    kit.expire_blockhash();
    // Unseen past its lastValidBlockHeight: dead, reported as never sent.
    assert_eq!(
        rail.status("pf-exp").await.unwrap(),
        SubmissionStatus::NotFound
    );
    let rec = rail.send_record("pf-exp").await.unwrap().unwrap();
    assert_eq!(rec.state, SendState::Expired);
    // It can no longer land: the node refuses its bytes now.
    use base64::Engine as _;
    let old = base64::engine::general_purpose::STANDARD
        .decode(&first_wire)
        .unwrap();
    assert!(kit.send_transaction(&old).await.is_err());
    // Asked again, the id is signed again: a new signature, priced 50% higher.
    let second = rail.submit_with_info(&p).await.unwrap().info;
    assert_ne!(second.signature, first.signature);
    assert_eq!(second.attempts, 2);
    assert_eq!(second.compute_unit_price_micro_lamports, 15_000);
    let rec = rail.send_record("pf-exp").await.unwrap().unwrap();
    assert_eq!(rec.superseded, vec![first.signature.clone()]);
    match settle(&rail, "pf-exp").await {
        SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(tx_hash, second.signature),
        other => panic!("{other:?}"),
    }
    let dead = Signature::from_str(&first.signature).unwrap();
    assert_eq!(
        kit.get_signature_statuses(&[dead]).await.unwrap(),
        vec![None],
        "the dead one never landed"
    );
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(400_000),
        "paid once"
    );
}

// ---- over JSON-RPC, through a proxy that drops sends ---------------------------------

struct Node {
    kit: Arc<LiteSvmRpc>,
    server: RpcServer,
}

async fn node() -> Node {
    let kit = kit();
    let server = RpcServer::start(kit.clone()).await.unwrap();
    Node { kit, server }
}

fn client(url: String) -> Arc<JsonRpcClient> {
    Arc::new(JsonRpcClient::new(url, Duration::from_secs(5)).unwrap())
}

fn sends_through(proxy: &FaultProxy) -> usize {
    proxy
        .methods()
        .iter()
        .filter(|m| *m == "sendTransaction")
        .count()
}

#[tokio::test]
async fn over_json_rpc_the_first_dropped_sends_are_rebroadcast_with_the_same_signature() {
    let n = node().await;
    // Provisioning straight to the node: the proxy is for the payment's sends.
    let direct = rail(client(n.server.url()), SolanaFeePolicy::default());
    let (a, b) = parties(&n.kit, &direct).await;
    let proxy = FaultProxy::start(&n.server.url(), Fault::DropSolanaSends(2))
        .await
        .unwrap();
    let rail = rail(client(proxy.url()), SolanaFeePolicy::default());
    n.kit
        .set_recent_prioritization_fees(Some(vec![40_000, 60_000]));
    let txs = n.kit.transaction_count();

    let r = rail
        .submit_with_info(&pay("pf-rpc", &a, &b, 1_200_000))
        .await
        .expect("the proxy answered the signature");
    assert_eq!(r.info.compute_unit_price_micro_lamports, 60_000);
    assert!(
        proxy
            .methods()
            .contains(&"getRecentPrioritizationFees".to_string())
    );
    assert_eq!(
        n.kit.transaction_count(),
        txs,
        "dropped: never reached the node"
    );
    match settle(&rail, "pf-rpc").await {
        SubmissionStatus::Confirmed { tx_hash, .. } => {
            assert_eq!(tx_hash, r.info.signature, "the same signature landed")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sends_through(&proxy), 3, "two dropped, the third forwarded");
    assert_eq!(n.kit.transaction_count(), txs + 1, "landed once");
    let rec = rail.send_record("pf-rpc").await.unwrap().unwrap();
    assert_eq!(rec.info.attempts, 1);
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(1_200_000)
    );
    assert_eq!(
        rail.balance(&a, Token::Usdc).await.unwrap(),
        Micros(3_800_000)
    );
}

#[tokio::test]
async fn over_json_rpc_a_send_dropped_until_expiry_is_retried_once_and_paid_once() {
    let n = node().await;
    let direct = rail(client(n.server.url()), SolanaFeePolicy::default());
    let (a, b) = parties(&n.kit, &direct).await;
    let proxy = FaultProxy::start(&n.server.url(), Fault::DropSolanaSends(u32::MAX))
        .await
        .unwrap();
    let rail = rail(client(proxy.url()), SolanaFeePolicy::default());
    let txs = n.kit.transaction_count();
    let p = pay("pf-rpc-exp", &a, &b, 900_000);
    let first = rail.submit_with_info(&p).await.unwrap().info;
    for _ in 0..3 {
        assert_eq!(
            rail.status("pf-rpc-exp").await.unwrap(),
            SubmissionStatus::Pending {
                tx_hash: Some(first.signature.clone())
            }
        );
    }
    assert_eq!(
        sends_through(&proxy),
        4,
        "the first send and three rebroadcasts"
    );
    n.kit.expire_blockhash();
    assert_eq!(
        rail.status("pf-rpc-exp").await.unwrap(),
        SubmissionStatus::NotFound
    );
    assert_eq!(
        sends_through(&proxy),
        4,
        "a dead transaction is not rebroadcast"
    );
    proxy.set(Fault::Forward);
    let second = rail.submit_with_info(&p).await.unwrap().info;
    assert_ne!(second.signature, first.signature);
    assert_eq!(second.attempts, 2);
    assert_eq!(
        second.compute_unit_price_micro_lamports,
        first.compute_unit_price_micro_lamports * 3 / 2
    );
    match settle(&rail, "pf-rpc-exp").await {
        SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(tx_hash, second.signature),
        other => panic!("{other:?}"),
    }
    // Asked again after it settled: the landed one, nothing new.
    let again = rail.submit(&p).await.unwrap();
    assert_eq!(again.tx_hash, Some(second.signature));
    assert_eq!(n.kit.transaction_count(), txs + 1, "paid once");
    assert_eq!(
        rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(900_000)
    );
}
