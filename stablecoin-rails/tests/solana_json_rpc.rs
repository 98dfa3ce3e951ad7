//! The Solana rail end to end over HTTP: `JsonRpcClient` (reqwest) talking to the
//! testkit's JSON-RPC server (axum on 127.0.0.1:0) over litesvm, with the validator's
//! JSON shapes.
#![cfg(feature = "solana-test")]

use serde_json::json;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailError, RailPayment, ReadinessStatus,
    SubmissionStatus,
};
use stablecoin_rails::solana::codec::{self, MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::testkit::server::RpcServer;
use stablecoin_rails::solana::testkit::{LiteSvmRpc, SendFault, test_config};
use stablecoin_rails::solana::{JsonRpcClient, Pubkey, RpcError, SolanaRail};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

const SOL: u64 = 1_000_000_000;

struct Http {
    kit: Arc<LiteSvmRpc>,
    client: Arc<JsonRpcClient>,
    rail: SolanaRail,
    _server: RpcServer,
}

async fn http(usdt_decimals: u8) -> Http {
    let kit = Arc::new(LiteSvmRpc::new());
    kit.create_mint(&MAINNET_USDC_MINT, 6);
    kit.create_mint(&MAINNET_USDT_MINT, usdt_decimals);
    let server = RpcServer::start(kit.clone()).await.unwrap();
    let client = Arc::new(JsonRpcClient::new(server.url(), Duration::from_secs(10)).unwrap());
    let rail = SolanaRail::new(
        client.clone(),
        Arc::new(LocalSigner::from_seed([77; 32])),
        test_config(),
    );
    kit.airdrop(&rail.fee_payer().await.unwrap(), 10 * SOL);
    Http {
        kit,
        client,
        rail,
        _server: server,
    }
}

fn key(a: &ChainAddress) -> Pubkey {
    Pubkey::from_str(&a.0).unwrap()
}

fn pay(
    id: &str,
    from: &ChainAddress,
    phone: &str,
    token: Token,
    to: &ChainAddress,
    micros: u64,
) -> RailPayment {
    RailPayment {
        id: id.into(),
        from: KeyPurpose::PhoneWallet(phone.into()),
        from_address: from.clone(),
        token,
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

#[tokio::test]
async fn every_flow_over_http() {
    let h = http(6).await;
    assert_eq!(h.rail.readiness().await.status, ReadinessStatus::Ready);

    // Provisioning, finalized, zero SOL for the customer.
    let a = h.rail.provision("+233200000001").await.unwrap();
    assert!(a.created);
    assert_eq!(h.kit.lamports(&key(&a.address)), 0);
    assert!(h.kit.account(&key(&a.usdc_ata)).is_some());
    assert!(h.kit.account(&key(&a.usdt_ata)).is_some());
    assert!(!h.rail.provision("+233200000001").await.unwrap().created);

    // Balances: an existing empty account and a missing one both read 0.
    let stranger = h
        .rail
        .address_for(&KeyPurpose::PhoneWallet("+stranger".into()))
        .await
        .unwrap();
    assert_eq!(
        h.rail.balance(&a.address, Token::Usdc).await.unwrap(),
        Micros(0)
    );
    assert_eq!(
        h.rail.balance(&stranger, Token::Usdc).await.unwrap(),
        Micros(0)
    );
    h.kit
        .mint_to(&key(&a.address), &MAINNET_USDC_MINT, 3_000_000)
        .unwrap();
    assert_eq!(
        h.rail.balance(&a.address, Token::Usdc).await.unwrap(),
        Micros(3_000_000)
    );

    // A send to a never-seen recipient creates its ATA at the service's cost.
    let r = h
        .rail
        .submit_with_info(&pay(
            "http-1",
            &a.address,
            "+233200000001",
            Token::Usdc,
            &stranger,
            1_000_000,
        ))
        .await
        .unwrap();
    assert!(r.info.created_recipient_ata);
    match settle(&h.rail, "http-1").await {
        SubmissionStatus::Confirmed { tx_hash, .. } => {
            assert_eq!(Some(tx_hash), r.submission.tx_hash)
        }
        other => panic!("{other:?}"),
    }
    let info = h.rail.send_info("http-1").await.unwrap().unwrap();
    assert!(
        info.created_recipient_ata && info.verified_on_chain,
        "{info:?}"
    );
    assert!(info.rent_paid_lamports > 0);
    assert_eq!(
        h.rail.balance(&stranger, Token::Usdc).await.unwrap(),
        Micros(1_000_000)
    );
    assert_eq!(h.kit.lamports(&key(&stranger)), 0);

    // Insufficient tokens: refused before anything is sent.
    let sent = h.kit.calls("sendTransaction");
    let err = h
        .rail
        .submit(&pay(
            "http-2",
            &a.address,
            "+233200000001",
            Token::Usdc,
            &stranger,
            2_000_001,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "RAIL_REJECTED");
    assert_eq!(h.kit.calls("sendTransaction"), sent);

    // A lost HTTP response is reconciled by signature, not resent.
    h.kit.inject(SendFault::LostResponse);
    let p = pay(
        "http-3",
        &a.address,
        "+233200000001",
        Token::Usdc,
        &stranger,
        500_000,
    );
    assert_eq!(
        h.rail.submit(&p).await.unwrap_err().code(),
        "SUBMISSION_UNKNOWN"
    );
    assert!(matches!(
        settle(&h.rail, "http-3").await,
        SubmissionStatus::Confirmed { .. }
    ));
    let txs = h.kit.transaction_count();
    h.rail.submit(&p).await.unwrap();
    assert_eq!(h.kit.transaction_count(), txs);
    assert_eq!(
        h.rail.balance(&stranger, Token::Usdc).await.unwrap(),
        Micros(1_500_000)
    );

    // The scanner over HTTP: getSignaturesForAddress + getTransaction.
    h.kit.advance_slots(5);
    let batch = h
        .rail
        .scan("", std::slice::from_ref(&stranger), 100)
        .await
        .unwrap();
    let mut amounts: Vec<u64> = batch.inbound.iter().map(|i| i.amount.get()).collect();
    amounts.sort();
    assert_eq!(amounts, vec![500_000, 1_000_000]);
    assert!(
        batch
            .inbound
            .iter()
            .all(|i| i.from == a.address && i.to == stranger && i.confirmed)
    );
    let again = h
        .rail
        .scan(&batch.cursor, std::slice::from_ref(&stranger), 100)
        .await
        .unwrap();
    assert!(again.inbound.is_empty());

    // Node unreachable: degraded, sends unavailable or unknown, never a panic.
    h.kit.set_down(true);
    assert_eq!(h.rail.readiness().await.status, ReadinessStatus::Degraded);
    assert_eq!(
        h.rail
            .balance(&a.address, Token::Usdc)
            .await
            .unwrap_err()
            .code(),
        "RAIL_UNAVAILABLE"
    );
    h.kit.set_down(false);
    assert_eq!(h.rail.readiness().await.status, ReadinessStatus::Ready);
}

#[tokio::test]
async fn preflight_failures_arrive_as_rejections_with_the_program_error() {
    let h = http(9).await; // USDT mint with 9 decimals: TransferChecked(decimals 6) fails
    let a = h.rail.provision("+1").await.unwrap();
    let b = h.rail.provision("+2").await.unwrap();
    h.kit
        .mint_to(&key(&a.address), &MAINNET_USDT_MINT, 1_000)
        .unwrap();
    let err = h
        .rail
        .submit(&pay(
            "http-dec",
            &a.address,
            "+1",
            Token::Usdt,
            &b.address,
            1,
        ))
        .await
        .unwrap_err();
    match err {
        RailError::Rejected { reason } => {
            assert!(reason.contains("decimals mismatch"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        h.rail.status("http-dec").await.unwrap(),
        SubmissionStatus::Failed { tx_hash: None, .. }
    ));
    assert_eq!(h.rail.readiness().await.status, ReadinessStatus::Degraded);
}

#[tokio::test]
async fn the_server_speaks_json_rpc() {
    let h = http(6).await;
    let missing = Pubkey::new_from_array([5; 32]);
    match h
        .client
        .call("getTokenAccountBalance", json!([missing.to_string()]))
        .await
    {
        Err(RpcError::Server { code, message, .. }) => {
            assert_eq!(code, -32602);
            assert!(message.contains("could not find account"));
        }
        other => panic!("{other:?}"),
    }
    match h.client.call("getBlockProduction", json!([])).await {
        Err(RpcError::Server { code, .. }) => assert_eq!(code, -32601),
        other => panic!("{other:?}"),
    }
    let v = h
        .client
        .call(
            "getAccountInfo",
            json!([MAINNET_USDC_MINT.to_string(), {"encoding": "base64"}]),
        )
        .await
        .unwrap();
    assert_eq!(v["value"]["owner"], codec::TOKEN_PROGRAM_ID.to_string());
    assert_eq!(v["value"]["data"][1], "base64");
    assert!(v["context"]["slot"].is_u64());
    let rent = h
        .client
        .call("getMinimumBalanceForRentExemption", json!([165]))
        .await
        .unwrap();
    assert_eq!(rent, json!(2_039_280u64));
    let garbage = h
        .client
        .call("sendTransaction", json!(["AQID", {"encoding": "base64"}]))
        .await;
    assert!(
        matches!(garbage, Err(RpcError::Server { code: -32602, .. })),
        "{garbage:?}"
    );
}
