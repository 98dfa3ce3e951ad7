//! What a confirmed Solana send cost the service (`SubmissionStatus::Confirmed::cost`,
//! metered by sponsorship budgets): the lamports its fee payer lost to the landed
//! transaction (fee, priority fee, and the rent of a token account it created), equal to
//! the fee payer's balance change; a restarted rail and an older journal record report
//! the same; a send signed again after its first attempt expired unseen costs the landed
//! transaction only. A transaction that lands and fails costs its fee all the same, on
//! its `Failed`. On litesvm in process, and over JSON-RPC through a proxy that drops
//! sends.
#![cfg(feature = "solana-test")]

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, MemoryJournal, PaymentLeg, Rail, RailJournal, RailPayment,
    SponsorCost, SubmissionStatus,
};
use stablecoin_rails::fault_proxy::{Fault, FaultProxy};
use stablecoin_rails::solana::codec::{self, MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::rpc::SolanaRpc;
use stablecoin_rails::solana::testkit::server::RpcServer;
use stablecoin_rails::solana::testkit::{LiteSvmRpc, SendFault, test_config};
use stablecoin_rails::solana::{JsonRpcClient, Pubkey, SolanaRail};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

const SOL: u64 = 1_000_000_000;

fn key(a: &ChainAddress) -> Pubkey {
    Pubkey::from_str(&a.0).unwrap()
}

fn kit() -> Arc<LiteSvmRpc> {
    let kit = Arc::new(LiteSvmRpc::new());
    kit.create_mint(&MAINNET_USDC_MINT, 6);
    kit.create_mint(&MAINNET_USDT_MINT, 6);
    kit
}

fn rail(rpc: Arc<dyn SolanaRpc>, journal: Arc<MemoryJournal>) -> SolanaRail {
    SolanaRail::new(
        rpc,
        Arc::new(LocalSigner::from_seed([91; 32])),
        test_config(),
    )
    .with_journal(journal)
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

async fn settle(rail: &SolanaRail, id: &str) -> SponsorCost {
    for _ in 0..50 {
        match rail.status(id).await.unwrap() {
            SubmissionStatus::Pending { .. } => continue,
            SubmissionStatus::Confirmed { cost, .. } => return cost.expect("a confirmed cost"),
            other => panic!("{id}: {other:?}"),
        }
    }
    panic!("{id} did not settle");
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

fn lamports(n: u64) -> SponsorCost {
    SponsorCost {
        native: u128::from(n),
        energy: 0,
        bandwidth: 0,
    }
}

#[tokio::test]
async fn a_send_costs_what_its_fee_payer_lost_the_fee_or_the_fee_and_the_rent() {
    let kit = kit();
    let journal = Arc::new(MemoryJournal::new());
    let rail = rail(kit.clone(), journal.clone());
    let (a, b) = parties(&kit, &rail).await;
    let fee_payer = rail.fee_payer().await.unwrap();

    // To a provisioned recipient: the signature and priority fees only.
    let before = kit.lamports(&fee_payer);
    rail.submit(&pay("c-1", &a, &b, 1_000_000)).await.unwrap();
    let cost = settle(&rail, "c-1").await;
    let lost = before - kit.lamports(&fee_payer);
    assert_eq!(cost, lamports(lost));
    let info = rail.send_info("c-1").await.unwrap().unwrap();
    assert_eq!(
        lost,
        codec::transaction_fee_lamports(
            2,
            info.compute_unit_limit,
            info.compute_unit_price_micro_lamports
        )
    );

    // To a never-seen recipient: the fee and the rent-exempt minimum of its new token
    // account (2,039,280 lamports).
    let c = rail
        .address_for(&KeyPurpose::PhoneWallet("+never-seen".into()))
        .await
        .unwrap();
    let before = kit.lamports(&fee_payer);
    rail.submit(&pay("c-2", &a, &c, 1_000_000)).await.unwrap();
    let cost = settle(&rail, "c-2").await;
    let lost = before - kit.lamports(&fee_payer);
    assert_eq!(cost, lamports(lost));
    let info = rail.send_info("c-2").await.unwrap().unwrap();
    assert!(info.created_recipient_ata);
    assert_eq!(info.rent_paid_lamports, 2_039_280);
    assert_eq!(
        lost,
        2_039_280
            + codec::transaction_fee_lamports(
                2,
                info.compute_unit_limit,
                info.compute_unit_price_micro_lamports
            )
    );

    // A restarted rail over the same journal reports the same cost, from the record.
    let restarted = self::rail(kit.clone(), journal.clone());
    assert_eq!(settle(&restarted, "c-2").await, cost);
    // A record journaled before costs were kept: read from the chain once, then kept.
    let mut old = rail.send_record("c-2").await.unwrap().unwrap();
    old.info.fee_payer_spent_lamports = None;
    journal
        .save("solana", "c-2", &serde_json::to_value(&old).unwrap())
        .await
        .unwrap();
    let older = self::rail(kit.clone(), journal.clone());
    assert_eq!(settle(&older, "c-2").await, cost);
    let kept = older.send_record("c-2").await.unwrap().unwrap();
    assert_eq!(kept.info.fee_payer_spent_lamports, Some(lost));
}

#[tokio::test]
async fn a_send_signed_again_after_it_expired_unseen_costs_the_landed_transaction_only() {
    let kit = kit();
    let server = RpcServer::start(kit.clone()).await.unwrap();
    let client = |url: String| Arc::new(JsonRpcClient::new(url, Duration::from_secs(5)).unwrap());
    let direct = rail(client(server.url()), Arc::new(MemoryJournal::new()));
    let (a, b) = parties(&kit, &direct).await;
    let fee_payer = direct.fee_payer().await.unwrap();
    // Every send is dropped until the first attempt's blockhash expires.
    let proxy = FaultProxy::start(&server.url(), Fault::DropSolanaSends(u32::MAX))
        .await
        .unwrap();
    let rail = rail(client(proxy.url()), Arc::new(MemoryJournal::new()));
    let before = kit.lamports(&fee_payer);
    let p = pay("c-exp", &a, &b, 700_000);
    let first = rail.submit_with_info(&p).await.unwrap().info;
    assert!(matches!(
        rail.status("c-exp").await.unwrap(),
        SubmissionStatus::Pending { .. }
    ));
    kit.expire_blockhash();
    assert_eq!(
        rail.status("c-exp").await.unwrap(),
        SubmissionStatus::NotFound
    );
    proxy.set(Fault::Forward);
    let second = rail.submit_with_info(&p).await.unwrap().info;
    assert_ne!(second.signature, first.signature);
    let cost = settle(&rail, "c-exp").await;
    // The dead attempt was never charged: the fee payer lost the landed one's fee, which
    // is the cost, priced at the second attempt's (higher) compute-unit price.
    let lost = before - kit.lamports(&fee_payer);
    assert_eq!(cost, lamports(lost));
    assert_eq!(
        lost,
        codec::transaction_fee_lamports(
            2,
            second.compute_unit_limit,
            second.compute_unit_price_micro_lamports
        )
    );
    assert!(second.compute_unit_price_micro_lamports > first.compute_unit_price_micro_lamports);
}

#[tokio::test]
async fn a_send_that_lands_and_fails_costs_its_fee_payer_the_fee() {
    // Over JSON-RPC: the failed transaction's meta (err, pre/post balances) is read as a
    // validator renders it.
    let kit = kit();
    let server = RpcServer::start(kit.clone()).await.unwrap();
    let client = Arc::new(JsonRpcClient::new(server.url(), Duration::from_secs(5)).unwrap());
    let rail = rail(client, Arc::new(MemoryJournal::new()));
    let (a, b) = parties(&kit, &rail).await;
    let fee_payer = rail.fee_payer().await.unwrap();

    // The payment of all of +A's 5 USDC is accepted by the node but held (congestion);
    // meanwhile another payment of the same 5 USDC lands and drains the account.
    kit.inject(SendFault::Dropped);
    let info = rail
        .submit_with_info(&pay("c-fail", &a, &b, 5_000_000))
        .await
        .unwrap()
        .info;
    rail.submit(&pay("c-drain", &a, &b, 5_000_000))
        .await
        .unwrap();
    settle(&rail, "c-drain").await;
    // The held copy then reaches the leader with no new simulation: it executes against
    // the drained account, fails there, and its fee payer pays its fee.
    let before = kit.lamports(&fee_payer);
    kit.inject(SendFault::SkipPreflight);
    let mut status = rail.status("c-fail").await.unwrap();
    for _ in 0..50 {
        if !matches!(status, SubmissionStatus::Pending { .. }) {
            break;
        }
        status = rail.status("c-fail").await.unwrap();
    }
    let lost = before - kit.lamports(&fee_payer);
    let cost = match status {
        SubmissionStatus::Failed {
            reason,
            tx_hash,
            cost,
        } => {
            assert_eq!(tx_hash.as_deref(), Some(info.signature.as_str()));
            assert!(reason.contains("nsufficient"), "{reason}");
            cost.expect("a landed failure's cost")
        }
        other => panic!("expected Failed, got {other:?}"),
    };
    assert!(lost > 0, "the failed transaction cost nothing");
    assert_eq!(cost, lamports(lost));
    assert_eq!(
        lost,
        codec::transaction_fee_lamports(
            2,
            info.compute_unit_limit,
            info.compute_unit_price_micro_lamports
        )
    );
    // Nothing moved by it, and no token account was opened by it.
    assert_eq!(
        kit.token_amount(&key(&rail.token_account(&b, Token::Usdc).unwrap())),
        Some(5_000_000)
    );
    let kept = rail.send_info("c-fail").await.unwrap().unwrap();
    assert!(!kept.created_recipient_ata && kept.rent_paid_lamports == 0);
    // Polled again (from the record), the same cost.
    match rail.status("c-fail").await.unwrap() {
        SubmissionStatus::Failed { cost: again, .. } => assert_eq!(again, Some(cost)),
        other => panic!("{other:?}"),
    }
}
