//! The Solana rail on litesvm (the real SPL Token and ATA programs, in process), through
//! the same transaction-building code the JSON-RPC path uses.
#![cfg(feature = "solana-test")]

use serde_json::Value;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::{LocalSigner, MemoryStore, SystemClock};
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailError, RailPayment, ReadinessStatus,
    StoreJournal, SubmissionStatus,
};
use stablecoin_rails::solana::codec::{self, MAINNET_USDC_MINT, MAINNET_USDT_MINT};
use stablecoin_rails::solana::testkit::{LiteSvmRpc, SendFault, test_config};
use stablecoin_rails::solana::{Hash, Pubkey, SolanaConfig, SolanaRail, SolanaSend};
use std::str::FromStr;
use std::sync::Arc;

const SOL: u64 = 1_000_000_000;

struct Env {
    rpc: Arc<LiteSvmRpc>,
    rail: SolanaRail,
    /// Where the rail's send journal lives (a restarted rail over it finds its sends).
    store: Arc<MemoryStore>,
    signer: Arc<LocalSigner>,
    fee_payer: Pubkey,
}

fn config() -> SolanaConfig {
    test_config()
}

async fn env_with(seed: [u8; 32], config: SolanaConfig, fee_payer_lamports: u64) -> Env {
    let rpc = Arc::new(LiteSvmRpc::new());
    rpc.create_mint(&MAINNET_USDC_MINT, 6);
    rpc.create_mint(&MAINNET_USDT_MINT, 6);
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed(seed));
    let rail = SolanaRail::new(rpc.clone(), signer.clone(), config).with_journal(journal(&store));
    let fee_payer = rail.fee_payer().await.unwrap();
    if fee_payer_lamports > 0 {
        rpc.airdrop(&fee_payer, fee_payer_lamports);
    }
    Env {
        rpc,
        rail,
        store,
        signer,
        fee_payer,
    }
}

/// The send journal of a deployment: records in its store.
fn journal(store: &Arc<MemoryStore>) -> Arc<StoreJournal> {
    Arc::new(StoreJournal::new(store.clone(), Arc::new(SystemClock)))
}

async fn env() -> Env {
    env_with([42; 32], config(), 10 * SOL).await
}

fn key(a: &ChainAddress) -> Pubkey {
    Pubkey::from_str(&a.0).unwrap()
}

fn phone(p: &str) -> KeyPurpose {
    KeyPurpose::PhoneWallet(p.to_string())
}

fn payment(
    id: &str,
    from: &ChainAddress,
    from_phone: &str,
    token: Token,
    to: &ChainAddress,
    micros: u64,
) -> RailPayment {
    RailPayment {
        id: id.to_string(),
        from: phone(from_phone),
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

/// Polls `status` until it is terminal (each poll advances the emulated chain a slot).
async fn settle(rail: &SolanaRail, id: &str) -> SubmissionStatus {
    for _ in 0..50 {
        match rail.status(id).await.unwrap() {
            SubmissionStatus::Pending { .. } => continue,
            other => return other,
        }
    }
    panic!("payment {id} did not settle");
}

#[tokio::test]
async fn provision_creates_both_atas_paid_by_the_service() {
    let e = env().await;
    let token_rent = {
        use stablecoin_rails::solana::SolanaRpc;
        e.rpc
            .get_minimum_balance_for_rent_exemption(codec::TOKEN_ACCOUNT_LEN)
            .await
            .unwrap()
    };
    let before = e.rpc.lamports(&e.fee_payer);
    let p = e.rail.provision("+2250700000001").await.unwrap();
    assert!(p.created);
    let sig = p.signature.clone().expect("a provisioning transaction");
    let owner = key(&p.address);
    assert_eq!(
        p.address,
        e.rail.address_for(&phone("+2250700000001")).await.unwrap()
    );
    for (ata, mint) in [
        (&p.usdc_ata, MAINNET_USDC_MINT),
        (&p.usdt_ata, MAINNET_USDT_MINT),
    ] {
        let acc = e.rpc.account(&key(ata)).expect("ATA exists");
        assert_eq!(acc.owner, codec::TOKEN_PROGRAM_ID);
        assert_eq!(acc.lamports, token_rent, "rent-exempt, paid by the service");
        let st = codec::parse_token_account(&acc.data).unwrap();
        assert_eq!((st.owner, st.mint, st.amount), (owner, mint, 0));
        assert_eq!(
            *ata,
            e.rail
                .token_account(
                    &p.address,
                    if mint == MAINNET_USDC_MINT {
                        Token::Usdc
                    } else {
                        Token::Usdt
                    }
                )
                .unwrap()
        );
    }
    // The customer holds zero SOL; the service paid two rents and one signature fee.
    assert_eq!(e.rpc.lamports(&owner), 0);
    assert!(e.rpc.account(&owner).is_none());
    assert_eq!(
        before - e.rpc.lamports(&e.fee_payer),
        2 * token_rent + codec::LAMPORTS_PER_SIGNATURE
    );
    // Returned only once finalized.
    {
        use stablecoin_rails::solana::SolanaRpc;
        let st = e
            .rpc
            .get_signature_statuses(&[sig.parse().unwrap()])
            .await
            .unwrap();
        assert!(st[0].as_ref().unwrap().is_finalized());
    }
    // Idempotent: nothing is sent again.
    let txs = e.rpc.transaction_count();
    let paid = e.rpc.lamports(&e.fee_payer);
    let again = e.rail.provision("+2250700000001").await.unwrap();
    assert!(!again.created);
    assert_eq!(again.signature, None);
    assert_eq!(
        (again.address, again.usdc_ata, again.usdt_ata),
        (p.address.clone(), p.usdc_ata.clone(), p.usdt_ata.clone())
    );
    assert_eq!(e.rpc.transaction_count(), txs);
    assert_eq!(e.rpc.lamports(&e.fee_payer), paid);
    // Also through the port.
    e.rail
        .prepare_wallet(&phone("+2250700000001"))
        .await
        .unwrap();
    assert_eq!(e.rpc.transaction_count(), txs);
}

#[tokio::test]
async fn provisioning_completes_a_half_provisioned_wallet() {
    let e = env().await;
    let owner = key(&e.rail.address_for(&phone("+1")).await.unwrap());
    // Someone already opened the USDT account (a deposit from outside).
    e.rpc.mint_to(&owner, &MAINNET_USDT_MINT, 5).unwrap();
    let p = e.rail.provision("+1").await.unwrap();
    assert!(p.created);
    assert!(e.rpc.account(&key(&p.usdc_ata)).is_some());
    assert_eq!(e.rpc.token_amount(&key(&p.usdt_ata)), Some(5));
    assert_eq!(e.rpc.lamports(&owner), 0);
}

#[tokio::test]
async fn addresses_are_durable_across_rails_sharing_the_seed() {
    let a = env_with([9; 32], config(), 0).await;
    let b = env_with([9; 32], config(), 0).await;
    let c = env_with([10; 32], config(), 0).await;
    let p = phone("+2250700000009");
    let addr = a.rail.address_for(&p).await.unwrap();
    assert_eq!(addr, b.rail.address_for(&p).await.unwrap());
    assert_ne!(addr, c.rail.address_for(&p).await.unwrap());
    assert_ne!(
        addr,
        a.rail.address_for(&phone("+2250700000008")).await.unwrap()
    );
    codec::check_wallet_address(&key(&addr)).unwrap();
}

async fn provisioned_pair(e: &Env) -> (ChainAddress, ChainAddress) {
    let a = e.rail.provision("+A").await.unwrap().address;
    let b = e.rail.provision("+B").await.unwrap().address;
    e.rpc
        .mint_to(&key(&a), &MAINNET_USDC_MINT, 5_000_000)
        .unwrap();
    (a, b)
}

#[tokio::test]
async fn send_to_a_provisioned_recipient() {
    let e = env().await;
    let (a, b) = provisioned_pair(&e).await;
    let fee_before = e.rpc.lamports(&e.fee_payer);
    let pay = payment("op-1", &a, "+A", Token::Usdc, &b, 1_500_000);
    let sub = e.rail.submit(&pay).await.unwrap();
    let sig = sub.tx_hash.clone().unwrap();
    match settle(&e.rail, "op-1").await {
        SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(tx_hash, sig),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.rail.balance(&a, Token::Usdc).await.unwrap(),
        Micros(3_500_000)
    );
    assert_eq!(
        e.rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(1_500_000)
    );
    assert_eq!(e.rail.balance(&b, Token::Usdt).await.unwrap(), Micros(0));
    let info = e.rail.send_info("op-1").await.unwrap().unwrap();
    assert_eq!(info.signature, sig);
    assert!(!info.created_recipient_ata);
    assert!(info.created_token_accounts.is_empty());
    assert!(info.verified_on_chain);
    assert_eq!(info.rent_paid_lamports, 0);
    assert_eq!(info.fee_payer.0, e.fee_payer.to_string());
    // Customer signed as token authority only; the service paid both signature fees
    // and the priority fee (the compute-unit price on the limit, issue #49).
    assert_eq!(e.rpc.lamports(&key(&a)), 0);
    assert_eq!(
        fee_before - e.rpc.lamports(&e.fee_payer),
        codec::transaction_fee_lamports(
            2,
            info.compute_unit_limit,
            info.compute_unit_price_micro_lamports
        )
    );
    assert!(info.compute_unit_price_micro_lamports > 0);
    // Replaying the id never pays twice.
    let txs = e.rpc.transaction_count();
    let again = e.rail.submit(&pay).await.unwrap();
    assert_eq!(again.tx_hash, Some(sig));
    assert_eq!(e.rpc.transaction_count(), txs);
    assert_eq!(
        e.rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(1_500_000)
    );
    // The same id for a different payment is refused.
    let other = payment("op-1", &a, "+A", Token::Usdc, &b, 1);
    assert_eq!(
        e.rail.submit(&other).await.unwrap_err().code(),
        "RAIL_REJECTED"
    );
}

#[tokio::test]
async fn send_to_a_never_seen_recipient_creates_its_ata() {
    let e = env().await;
    let (a, _) = provisioned_pair(&e).await;
    let c = e.rail.address_for(&phone("+never-seen")).await.unwrap();
    let c_ata = e.rail.token_account(&c, Token::Usdc).unwrap();
    assert!(e.rpc.account(&key(&c_ata)).is_none());
    let rent = {
        use stablecoin_rails::solana::SolanaRpc;
        e.rpc
            .get_minimum_balance_for_rent_exemption(codec::TOKEN_ACCOUNT_LEN)
            .await
            .unwrap()
    };
    let fee_before = e.rpc.lamports(&e.fee_payer);
    let r = e
        .rail
        .submit_with_info(&payment("op-new", &a, "+A", Token::Usdc, &c, 2_000_000))
        .await
        .unwrap();
    assert!(r.info.created_recipient_ata);
    assert_eq!(r.info.created_token_accounts, vec![c_ata.clone()]);
    assert!(matches!(
        settle(&e.rail, "op-new").await,
        SubmissionStatus::Confirmed { .. }
    ));
    let info = e.rail.send_info("op-new").await.unwrap().unwrap();
    assert!(info.created_recipient_ata, "confirmed on chain");
    assert!(info.verified_on_chain);
    assert_eq!(info.rent_paid_lamports, rent);
    assert_eq!(
        e.rail.balance(&c, Token::Usdc).await.unwrap(),
        Micros(2_000_000)
    );
    let acc = e.rpc.account(&key(&c_ata)).unwrap();
    assert_eq!(
        codec::parse_token_account(&acc.data).unwrap().owner,
        key(&c)
    );
    // The service paid the rent and the fees (priority fee included); neither customer
    // holds SOL.
    assert_eq!(
        fee_before - e.rpc.lamports(&e.fee_payer),
        rent + codec::transaction_fee_lamports(
            2,
            info.compute_unit_limit,
            info.compute_unit_price_micro_lamports
        )
    );
    assert_eq!(e.rpc.lamports(&key(&c)), 0);
    assert_eq!(e.rpc.lamports(&key(&a)), 0);
    // A second send to the same recipient no longer creates anything.
    let r = e
        .rail
        .submit_with_info(&payment("op-new-2", &a, "+A", Token::Usdc, &c, 1))
        .await
        .unwrap();
    assert!(!r.info.created_recipient_ata);
}

#[tokio::test]
async fn fee_legs_travel_in_the_same_transaction() {
    let e = env().await;
    let (a, b) = provisioned_pair(&e).await;
    let fees = e.rail.address_for(&KeyPurpose::ServiceFees).await.unwrap();
    let pay = RailPayment {
        id: "op-fee".into(),
        from: phone("+A"),
        from_address: a.clone(),
        token: Token::Usdc,
        legs: vec![
            PaymentLeg {
                to: b.clone(),
                amount: Micros(997_000),
                role: LegRole::Recipient,
            },
            PaymentLeg {
                to: fees.clone(),
                amount: Micros(3_000),
                role: LegRole::ServiceFee,
            },
        ],
        valid_until: None,
    };
    let r = e.rail.submit_with_info(&pay).await.unwrap();
    // The fee account is new, the recipient's is not: no recipient rent to report.
    assert!(!r.info.created_recipient_ata);
    assert_eq!(
        r.info.created_token_accounts,
        vec![e.rail.token_account(&fees, Token::Usdc).unwrap()]
    );
    assert!(matches!(
        settle(&e.rail, "op-fee").await,
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(
        e.rail.balance(&a, Token::Usdc).await.unwrap(),
        Micros(4_000_000)
    );
    assert_eq!(
        e.rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(997_000)
    );
    assert_eq!(
        e.rail.balance(&fees, Token::Usdc).await.unwrap(),
        Micros(3_000)
    );
    let info = e.rail.send_info("op-fee").await.unwrap().unwrap();
    assert!(info.verified_on_chain && !info.created_recipient_ata);
}

#[tokio::test]
async fn insufficient_tokens_fail_cleanly() {
    let e = env().await;
    let (a, b) = provisioned_pair(&e).await;
    let txs = e.rpc.transaction_count();
    let lamports = e.rpc.lamports(&e.fee_payer);
    let err = e
        .rail
        .submit(&payment("op-big", &a, "+A", Token::Usdc, &b, 5_000_001))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, RailError::Rejected { reason } if reason.contains("insufficient USDC balance")),
        "{err:?}"
    );
    // Nothing signed, nothing sent, nothing paid, nothing recorded.
    assert_eq!(e.rpc.transaction_count(), txs);
    assert_eq!(e.rpc.calls("sendTransaction"), txs as u64);
    assert_eq!(e.rpc.lamports(&e.fee_payer), lamports);
    assert_eq!(
        e.rail.status("op-big").await.unwrap(),
        SubmissionStatus::NotFound
    );
    assert!(e.rail.send_info("op-big").await.unwrap().is_none());
    // A wallet that never held the token has a zero balance, not an error.
    let err = e
        .rail
        .submit(&payment("op-empty", &b, "+B", Token::Usdt, &a, 1))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "RAIL_REJECTED");
    assert_eq!(e.rail.balance(&b, Token::Usdt).await.unwrap(), Micros(0));
}

#[tokio::test]
async fn an_on_chain_failure_is_refused_by_preflight_and_moves_nothing() {
    // The USDT mint on chain has 9 decimals while the rail is configured for 6: the
    // SPL program itself refuses TransferChecked, and the node's preflight says so.
    let rpc = Arc::new(LiteSvmRpc::new());
    rpc.create_mint(&MAINNET_USDC_MINT, 6);
    rpc.create_mint(&MAINNET_USDT_MINT, 9);
    let rail = SolanaRail::new(
        rpc.clone(),
        Arc::new(LocalSigner::from_seed([42; 32])),
        config(),
    );
    rpc.airdrop(&rail.fee_payer().await.unwrap(), 10 * SOL);
    let a = rail.provision("+A").await.unwrap().address;
    let b = rail.provision("+B").await.unwrap().address;
    rpc.mint_to(&key(&a), &MAINNET_USDT_MINT, 5_000).unwrap();
    let txs = rpc.transaction_count();
    let err = rail
        .submit(&payment("op-dec", &a, "+A", Token::Usdt, &b, 1))
        .await
        .unwrap_err();
    match &err {
        RailError::Rejected { reason } => {
            assert!(
                reason.contains("preflight") && reason.contains("decimals mismatch"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(rpc.transaction_count(), txs);
    assert!(matches!(
        rail.status("op-dec").await.unwrap(),
        SubmissionStatus::Failed { tx_hash: None, .. }
    ));
    assert_eq!(
        rpc.token_amount(&key(&rail.token_account(&a, Token::Usdt).unwrap())),
        Some(5_000)
    );
    // The misconfiguration also shows in readiness.
    let r = rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::Degraded);
    assert!(r.reasons.iter().any(|x| x.contains("9 decimals")), "{r:?}");
}

#[tokio::test]
async fn readiness_in_all_three_states() {
    // READY: reads work, monitoring on, sends on, fee payer funded.
    let e = env().await;
    let r = e.rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::Ready, "{r:?}");
    assert!(r.reasons.is_empty());

    // INBOUND_READY: fee payer can pay provisioning rent but is below the send threshold.
    let e = env_with([1; 32], config(), SOL / 100).await;
    let r = e.rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::InboundReady, "{r:?}");
    assert!(!r.can_send());
    let p = e.rail.provision("+inbound").await.unwrap();
    assert!(p.created, "zero-SOL provisioning works while INBOUND_READY");
    assert_eq!(
        e.rail.balance(&p.address, Token::Usdc).await.unwrap(),
        Micros(0)
    );
    let other = e.rail.address_for(&phone("+x")).await.unwrap();
    e.rpc
        .mint_to(&key(&p.address), &MAINNET_USDC_MINT, 10)
        .unwrap();
    let err = e
        .rail
        .submit(&payment(
            "op-503",
            &p.address,
            "+inbound",
            Token::Usdc,
            &other,
            1,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "RAIL_UNAVAILABLE", "sends answer 503");

    // INBOUND_READY: sends switched off by configuration.
    let e = env_with(
        [2; 32],
        SolanaConfig {
            sends_enabled: false,
            ..config()
        },
        10 * SOL,
    )
    .await;
    assert_eq!(
        e.rail.readiness().await.status,
        ReadinessStatus::InboundReady
    );

    // DEGRADED whenever monitoring is disabled, even though reads work.
    let e = env_with(
        [3; 32],
        SolanaConfig {
            scan_enabled: false,
            ..config()
        },
        10 * SOL,
    )
    .await;
    let r = e.rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::Degraded);
    assert!(
        r.reasons.iter().any(|x| x.contains("SOLANA_SCAN_ENABLED")),
        "{r:?}"
    );
    let p = e.rail.provision("+degraded").await.unwrap();
    assert_eq!(
        e.rail.balance(&p.address, Token::Usdt).await.unwrap(),
        Micros(0)
    );
    assert_eq!(
        e.rail.scan("", &[], 10).await.unwrap_err().code(),
        "RAIL_UNAVAILABLE"
    );
    let err = e
        .rail
        .submit(&payment(
            "op-x",
            &p.address,
            "+degraded",
            Token::Usdc,
            &p.address,
            1,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "RAIL_UNAVAILABLE");

    // DEGRADED: the fee payer cannot fund zero-SOL provisioning.
    let e = env_with([4; 32], config(), 0).await;
    let r = e.rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::Degraded);
    assert!(r.reasons.iter().any(|x| x.contains("cannot fund")), "{r:?}");

    // DEGRADED: the node is unreachable.
    let e = env().await;
    e.rpc.set_down(true);
    assert_eq!(e.rail.readiness().await.status, ReadinessStatus::Degraded);
    e.rpc.set_down(false);
    assert_eq!(e.rail.readiness().await.status, ReadinessStatus::Ready);
}

#[tokio::test]
async fn native_sol_and_unknown_mints_are_refused() {
    let e = env().await;
    for asset in [
        "SOL",
        "sol",
        "WSOL",
        "So11111111111111111111111111111111111111112",
    ] {
        let err = e.rail.token_for_asset(asset).unwrap_err();
        assert_eq!(err.code(), "UNSUPPORTED", "{asset}");
        assert!(err.to_string().contains("native SOL"), "{asset}: {err}");
    }
    let bonk = "DezXAZ8z7PnrnRJjz3wXBoRgixCa6xjnB7YaB1pPB263";
    let err = e.rail.token_for_asset(bonk).unwrap_err();
    assert_eq!(err.code(), "UNSUPPORTED");
    assert!(
        err.to_string().contains(bonk) && err.to_string().contains("only USDC"),
        "{err}"
    );
    assert_eq!(
        e.rail.token_for_asset("BONK").unwrap_err().code(),
        "UNSUPPORTED"
    );
    assert_eq!(e.rail.token_for_asset("usdc").unwrap(), Token::Usdc);
    assert_eq!(
        e.rail
            .token_for_asset(&MAINNET_USDT_MINT.to_string())
            .unwrap(),
        Token::Usdt
    );

    let (a, b) = provisioned_pair(&e).await;
    let txs = e.rpc.transaction_count();
    let send = |asset: &str| SolanaSend {
        id: format!("op-{asset}"),
        from: phone("+A"),
        asset: asset.to_string(),
        legs: vec![PaymentLeg {
            to: b.clone(),
            amount: Micros(1),
            role: LegRole::Recipient,
        }],
    };
    assert_eq!(
        e.rail.send(&send("SOL")).await.unwrap_err().code(),
        "UNSUPPORTED"
    );
    assert_eq!(
        e.rail.send(&send(bonk)).await.unwrap_err().code(),
        "UNSUPPORTED"
    );
    assert_eq!(e.rpc.transaction_count(), txs);
    // A send by mint address of a supported token goes through.
    let ok = e
        .rail
        .send(&send(&MAINNET_USDC_MINT.to_string()))
        .await
        .unwrap();
    assert!(!ok.info.created_recipient_ata);
    // Paying a token account address (off-curve) instead of a wallet is refused.
    let a_ata = e.rail.token_account(&a, Token::Usdc).unwrap();
    let err = e
        .rail
        .submit(&payment("op-ata", &b, "+B", Token::Usdc, &a_ata, 1))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ADDRESS");
}

#[tokio::test]
async fn a_lost_response_is_reconciled_by_signature() {
    let e = env().await;
    let (a, b) = provisioned_pair(&e).await;
    e.rpc.inject(SendFault::LostResponse);
    let pay = payment("op-lost", &a, "+A", Token::Usdc, &b, 1_000_000);
    let err = e.rail.submit(&pay).await.unwrap_err();
    assert_eq!(err.code(), "SUBMISSION_UNKNOWN");
    let journaled = e
        .rail
        .send_info("op-lost")
        .await
        .unwrap()
        .unwrap()
        .signature;
    match settle(&e.rail, "op-lost").await {
        SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(tx_hash, journaled),
        other => panic!("{other:?}"),
    }
    // A retry of the same id returns the landed transaction; nothing is paid twice.
    let txs = e.rpc.transaction_count();
    assert_eq!(e.rail.submit(&pay).await.unwrap().tx_hash, Some(journaled));
    assert_eq!(e.rpc.transaction_count(), txs);
    assert_eq!(
        e.rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(1_000_000)
    );
}

/// A process that broadcast a send and died before learning its outcome: a new rail over
/// the same journal (a `StoreJournal` on one store) and the same chain reconciles the
/// payment by its journaled signature; neither its `status` nor a repeated `submit`
/// broadcasts anything.
#[tokio::test]
async fn a_send_survives_a_restart_between_broadcast_and_confirmation() {
    let e = env().await;
    let (a, b) = provisioned_pair(&e).await;
    // From here the chain only moves when the test says so: the send stays below
    // finality across the restart.
    e.rpc.set_auto_advance(false);
    e.rpc.inject(SendFault::LostResponse);
    let pay = payment("op-restart", &a, "+A", Token::Usdc, &b, 600_000);
    let broadcasts = e.rpc.calls("sendTransaction");
    assert_eq!(
        e.rail.submit(&pay).await.unwrap_err().code(),
        "SUBMISSION_UNKNOWN"
    );
    assert_eq!(e.rpc.calls("sendTransaction"), broadcasts + 1);
    let signature = e
        .rail
        .send_info("op-restart")
        .await
        .unwrap()
        .unwrap()
        .signature;
    let config = e.rail.config().clone();
    drop(e.rail);

    // Without the journal a new process would not know the payment at all.
    let amnesiac = SolanaRail::new(e.rpc.clone(), e.signer.clone(), config.clone());
    assert_eq!(
        amnesiac.status("op-restart").await.unwrap(),
        SubmissionStatus::NotFound
    );
    let restarted =
        SolanaRail::new(e.rpc.clone(), e.signer.clone(), config).with_journal(journal(&e.store));
    assert_eq!(
        restarted.status("op-restart").await.unwrap(),
        SubmissionStatus::Pending {
            tx_hash: Some(signature.clone())
        },
        "landed, not yet finalized"
    );
    e.rpc.set_auto_advance(true);
    match settle(&restarted, "op-restart").await {
        SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(tx_hash, signature),
        other => panic!("{other:?}"),
    }
    let again = restarted.submit(&pay).await.unwrap();
    assert_eq!(again.tx_hash, Some(signature));
    assert_eq!(
        e.rpc.calls("sendTransaction"),
        broadcasts + 1,
        "one broadcast, across the restart"
    );
    assert_eq!(
        restarted.balance(&b, Token::Usdc).await.unwrap(),
        Micros(600_000)
    );
    assert_eq!(
        restarted.balance(&a, Token::Usdc).await.unwrap(),
        Micros(4_400_000)
    );
}

#[tokio::test]
async fn a_dropped_send_is_rebroadcast_with_the_same_signature() {
    let e = env().await;
    let (a, b) = provisioned_pair(&e).await;
    e.rpc.inject(SendFault::Drop);
    let pay = payment("op-drop", &a, "+A", Token::Usdc, &b, 700_000);
    assert_eq!(
        e.rail.submit(&pay).await.unwrap_err().code(),
        "SUBMISSION_UNKNOWN"
    );
    let journaled = e
        .rail
        .send_info("op-drop")
        .await
        .unwrap()
        .unwrap()
        .signature;
    // Blockhash still valid: status rebroadcasts the identical bytes.
    match settle(&e.rail, "op-drop").await {
        SubmissionStatus::Confirmed { tx_hash, .. } => assert_eq!(tx_hash, journaled),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(700_000)
    );
}

#[tokio::test]
async fn a_lagging_node_that_does_not_know_the_blockhash_gets_a_fresh_transaction() {
    let e = env().await;
    let (a, b) = provisioned_pair(&e).await;
    e.rpc.inject(SendFault::BlockhashNotFound);
    let r = e
        .rail
        .submit_with_info(&payment("op-lag", &a, "+A", Token::Usdc, &b, 300_000))
        .await
        .unwrap();
    assert_eq!(r.info.attempts, 2, "the refused one never left the node");
    assert!(matches!(
        settle(&e.rail, "op-lag").await,
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(
        e.rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(300_000)
    );
}

#[tokio::test]
async fn an_expired_blockhash_is_reconciled_never_blindly_resent() {
    let e = env().await;
    let (a, b) = provisioned_pair(&e).await;
    e.rpc.inject(SendFault::Drop);
    let pay = payment("op-exp", &a, "+A", Token::Usdc, &b, 400_000);
    assert_eq!(
        e.rail.submit(&pay).await.unwrap_err().code(),
        "SUBMISSION_UNKNOWN"
    );
    let first = e.rail.send_info("op-exp").await.unwrap().unwrap();
    e.rpc.expire_blockhash();
    // Not seen and past lastValidBlockHeight: it can never land.
    assert_eq!(
        e.rail.status("op-exp").await.unwrap(),
        SubmissionStatus::NotFound
    );
    assert_eq!(e.rail.balance(&b, Token::Usdc).await.unwrap(), Micros(0));
    // Submitting the id again signs a fresh transaction (a new blockhash).
    let sub = e.rail.submit(&pay).await.unwrap();
    assert_ne!(sub.tx_hash.as_deref(), Some(first.signature.as_str()));
    let info = e.rail.send_info("op-exp").await.unwrap().unwrap();
    assert_eq!(info.attempts, 2);
    let rec = e.rail.send_record("op-exp").await.unwrap().unwrap();
    assert_eq!(rec.superseded, vec![first.signature]);
    assert!(matches!(
        settle(&e.rail, "op-exp").await,
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(
        e.rail.balance(&b, Token::Usdc).await.unwrap(),
        Micros(400_000)
    );
}

#[tokio::test]
async fn scanner_reports_finalized_deposits_with_a_cursor() {
    let e = env().await;
    let (a, b) = provisioned_pair(&e).await; // mint 5 USDC to a
    // From here the chain only moves when the test says so.
    e.rpc.set_auto_advance(false);
    let pay = payment("op-s", &a, "+A", Token::Usdc, &b, 1_250_000);
    let sig = e.rail.submit(&pay).await.unwrap().tx_hash.unwrap();
    let usdt_sig = e
        .rpc
        .mint_to(&key(&b), &MAINNET_USDT_MINT, 2_000_000)
        .unwrap();

    // Below finality: the last transactions are not reported yet.
    let first = e.rail.scan("", &[a.clone(), b.clone()], 100).await.unwrap();
    assert!(
        first
            .inbound
            .iter()
            .all(|i| i.tx_hash != usdt_sig.to_string())
    );
    e.rpc.advance_slots(3);
    let all = e.rail.scan("", &[a.clone(), b.clone()], 100).await.unwrap();
    let find = |tx: &str, to: &ChainAddress| {
        all.inbound
            .iter()
            .find(|i| i.tx_hash == tx && &i.to == to)
            .cloned()
    };
    let p2p = find(&sig, &b).expect("the transfer to b");
    assert_eq!(
        (p2p.from.clone(), p2p.token, p2p.amount),
        (a.clone(), Token::Usdc, Micros(1_250_000))
    );
    assert!(p2p.confirmed);
    let usdt = find(&usdt_sig.to_string(), &b).expect("the USDT mint to b");
    assert_eq!((usdt.token, usdt.amount), (Token::Usdt, Micros(2_000_000)));
    assert_eq!(usdt.from.0, MAINNET_USDT_MINT.to_string());
    let minted = all
        .inbound
        .iter()
        .find(|i| i.to == a)
        .expect("the mint to a");
    assert_eq!(minted.amount, Micros(5_000_000));
    // The sender's debit is not a deposit.
    assert_eq!(all.inbound.iter().filter(|i| i.tx_hash == sig).count(), 1);
    // Watching only b.
    let only_b = e
        .rail
        .scan("", std::slice::from_ref(&b), 100)
        .await
        .unwrap();
    assert!(only_b.inbound.iter().all(|i| i.to == b));
    assert_eq!(only_b.inbound.len(), 2);
    // From the returned cursor there is nothing new.
    let next = e
        .rail
        .scan(&all.cursor, &[a.clone(), b.clone()], 100)
        .await
        .unwrap();
    assert!(next.inbound.is_empty());
    assert_eq!(next.cursor, all.cursor);
    // An empty watch list reads the mints: the same deposits.
    let every = e.rail.scan("", &[], 100).await.unwrap();
    let mut x: Vec<_> = every
        .inbound
        .iter()
        .map(|i| (i.tx_hash.clone(), i.index))
        .collect();
    let mut y: Vec<_> = all
        .inbound
        .iter()
        .map(|i| (i.tx_hash.clone(), i.index))
        .collect();
    x.sort();
    y.sort();
    assert_eq!(x, y);
    // A small limit pages through the same deposits, slot by slot.
    let mut cursor = String::new();
    let mut paged = Vec::new();
    for _ in 0..10 {
        let batch = e
            .rail
            .scan(&cursor, &[a.clone(), b.clone()], 1)
            .await
            .unwrap();
        assert!(batch.inbound.len() <= 1);
        paged.extend(batch.inbound.iter().map(|i| (i.tx_hash.clone(), i.index)));
        if batch.cursor == cursor {
            break;
        }
        cursor = batch.cursor;
    }
    paged.sort();
    assert_eq!(paged, y);
    assert_eq!(
        e.rail.scan("nope", &[], 1).await.unwrap_err().code(),
        "RAIL_REJECTED"
    );
}

/// The bytes the rail sends are the independent implementations' bytes: with the
/// fixture seed and blockhash, provisioning and both transfers produce exactly the
/// fixture transactions (the transfers with their compute budget: the priced fixtures),
/// and litesvm's SPL programs accept them.
#[tokio::test]
async fn the_rail_sends_exactly_the_fixture_transactions() {
    let fx: Value = serde_json::from_str(include_str!("fixtures/solana/web3js.json")).unwrap();
    let e = env_with([0x2a; 32], config(), 10 * SOL).await;
    // The priced fixtures' compute-unit price; their limits are the default policy's.
    e.rpc.set_recent_prioritization_fees(Some(vec![25_000]));
    e.rpc.set_auto_advance(false);
    e.rpc.set_finality_lag(0);
    e.rpc
        .set_latest_blockhash(Hash::from_str(fx["blockhash"].as_str().unwrap()).unwrap());
    let want = |name: &str| -> String {
        fx["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["wire_hex"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let hex = |b64: &str| -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let p1 = e.rail.provision("+2250700000001").await.unwrap();
    let p2 = e.rail.provision("+2250700000002").await.unwrap();
    let p3 = e.rail.address_for(&phone("+2348012345678")).await.unwrap();
    // The provisioning transaction of phone 1, byte for byte.
    let sig = p1.signature.unwrap();
    let fx_prov: &Value = fx["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "provision_usdc_usdt")
        .unwrap();
    assert_eq!(sig, fx_prov["signatures"][0].as_str().unwrap());

    e.rpc
        .mint_to(&key(&p1.address), &MAINNET_USDC_MINT, 2_000_000)
        .unwrap();
    e.rpc
        .mint_to(&key(&p1.address), &MAINNET_USDT_MINT, 1_000_000)
        .unwrap();
    e.rail
        .submit(&payment(
            "fx-1",
            &p1.address,
            "+2250700000001",
            Token::Usdc,
            &p2.address,
            1_234_567,
        ))
        .await
        .unwrap();
    let rec = e.rail.send_record("fx-1").await.unwrap().unwrap();
    assert_eq!(
        hex(&rec.wire_base64),
        want("transfer_existing_recipient_priced")
    );
    let r = e
        .rail
        .submit_with_info(&payment(
            "fx-2",
            &p1.address,
            "+2250700000001",
            Token::Usdt,
            &p3,
            250_000,
        ))
        .await
        .unwrap();
    assert!(r.info.created_recipient_ata);
    let rec = e.rail.send_record("fx-2").await.unwrap().unwrap();
    assert_eq!(
        hex(&rec.wire_base64),
        want("transfer_creates_recipient_ata_priced")
    );
    // Both landed on the real programs.
    assert!(matches!(
        settle(&e.rail, "fx-1").await,
        SubmissionStatus::Confirmed { .. }
    ));
    assert!(matches!(
        settle(&e.rail, "fx-2").await,
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(
        e.rail.balance(&p2.address, Token::Usdc).await.unwrap(),
        Micros(1_234_567)
    );
    assert_eq!(
        e.rail.balance(&p3, Token::Usdt).await.unwrap(),
        Micros(250_000)
    );
}
