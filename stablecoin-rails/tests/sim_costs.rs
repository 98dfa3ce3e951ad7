//! What a confirmed payment cost the service on the simulated chain
//! (`SubmissionStatus::Confirmed::cost`, metered by sponsorship budgets): the documented
//! default figure of each profile, figures a test picks, and both legs of a treasury swap.
//! A payment a block included and that reverted there reports its cost on `Failed` too
//! (`SimCosts::failed`); one that expired unincluded, none.

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::time::Timestamp;
use stablecoin_core::memory::{LocalSigner, ManualClock, MemoryStore};
use stablecoin_core::ports::{
    ChainAddress, KeyPurpose, LegRole, PaymentLeg, Rail, RailPayment, Signer, SponsorCost,
    SubmissionStatus, SwapOrder, SwapVenue,
};
use stablecoin_rails::{
    Fault, SimConfig, SimCosts, SimProfile, SimRail, TreasuryRate, TreasuryVenue,
};
use std::sync::Arc;

fn signer() -> Arc<dyn Signer> {
    Arc::new(LocalSigner::from_seed([9; 32]))
}

fn manual(profile: SimProfile) -> SimRail {
    let config = SimConfig {
        auto_mine: false,
        ..SimConfig::for_profile(profile)
    };
    SimRail::new(profile, signer(), config)
}

fn wallet(id: &str) -> KeyPurpose {
    KeyPurpose::Wallet(id.to_string())
}

/// Pays `to` 1 USDT from the funded treasury, mines it to its confirmation depth and
/// answers its status.
async fn pay(rail: &SimRail, id: &str, to: &ChainAddress) -> SubmissionStatus {
    let treasury = rail.address_for(&KeyPurpose::Treasury).await.unwrap();
    let p = RailPayment {
        id: id.into(),
        from: KeyPurpose::Treasury,
        from_address: treasury,
        token: Token::Usdt,
        legs: vec![PaymentLeg {
            to: to.clone(),
            amount: Micros(1_000_000),
            role: LegRole::Recipient,
        }],
        valid_until: None,
    };
    rail.submit(&p).await.unwrap();
    rail.mine(rail.config().confirmations);
    rail.status(id).await.unwrap()
}

async fn funded(profile: SimProfile) -> SimRail {
    let rail = manual(profile);
    let treasury = rail.address_for(&KeyPurpose::Treasury).await.unwrap();
    rail.mint(&treasury, Token::Usdt, Micros(100_000_000))
        .unwrap();
    rail.mine(1);
    rail
}

fn cost_of(status: &SubmissionStatus) -> (Option<SponsorCost>, bool) {
    match status {
        SubmissionStatus::Confirmed {
            cost,
            created_recipient_account,
            ..
        } => (*cost, *created_recipient_account),
        other => panic!("expected Confirmed, got {other:?}"),
    }
}

#[tokio::test]
async fn every_profile_reports_its_documented_cost_per_confirmed_payment() {
    // EVM: 150,000 gas at 1 gwei, in wei.
    let evm = funded(SimProfile::Evm(137)).await;
    let to = evm.address_for(&wallet("a")).await.unwrap();
    let (cost, _) = cost_of(&pay(&evm, "e1", &to).await);
    assert_eq!(
        cost,
        Some(SponsorCost {
            native: 150_000_000_000_000,
            energy: 0,
            bandwidth: 0,
        })
    );

    // TRON: 65,000 Energy and 345 Bandwidth bytes, all burnt: 6,845,000 sun.
    let tron = funded(SimProfile::Tron).await;
    let to = tron.address_for(&wallet("a")).await.unwrap();
    let (cost, _) = cost_of(&pay(&tron, "t1", &to).await);
    assert_eq!(
        cost,
        Some(SponsorCost {
            native: 6_845_000,
            energy: 65_000,
            bandwidth: 345,
        })
    );

    // Solana: the 5,000-lamport fee, plus the token account's rent-exempt minimum when
    // the payment opened the recipient's account.
    let sol = funded(SimProfile::Solana).await;
    let fresh = sol.address_for(&wallet("fresh")).await.unwrap();
    let (cost, created) = cost_of(&pay(&sol, "s1", &fresh).await);
    assert!(created);
    assert_eq!(
        cost,
        Some(SponsorCost {
            native: 5_000 + 2_039_280,
            energy: 0,
            bandwidth: 0,
        })
    );
    // The account now exists: the next payment to it costs the fee only.
    let (cost, created) = cost_of(&pay(&sol, "s2", &fresh).await);
    assert!(!created);
    assert_eq!(cost.map(|c| c.native), Some(5_000));
    // A prepared wallet's account exists before its first payment.
    sol.prepare_wallet(&wallet("prepared")).await.unwrap();
    let prepared = sol.address_for(&wallet("prepared")).await.unwrap();
    let (cost, created) = cost_of(&pay(&sol, "s3", &prepared).await);
    assert!(!created);
    assert_eq!(cost.map(|c| c.native), Some(5_000));
}

#[tokio::test]
async fn figures_a_test_picks_replace_the_defaults_and_a_reverted_payment_costs_them_too() {
    let picked = SimCosts {
        native_per_payment: 7,
        native_per_account_opened: 100,
        energy_per_payment: 3,
        bandwidth_per_payment: 2,
    };
    let rail = manual(SimProfile::Solana).with_costs(picked);
    assert_eq!(rail.costs(), picked);
    let treasury = rail.address_for(&KeyPurpose::Treasury).await.unwrap();
    rail.mint(&treasury, Token::Usdt, Micros(100_000_000))
        .unwrap();
    rail.mine(1);
    let to = rail.address_for(&wallet("a")).await.unwrap();
    assert_eq!(
        cost_of(&pay(&rail, "p1", &to).await).0,
        Some(SponsorCost {
            native: 107,
            energy: 3,
            bandwidth: 2,
        })
    );
    // A payment that a block included and that reverted there is Failed, and was paid
    // for like a real reverted transaction: the per-payment figure, no account's rent
    // (nothing was opened).
    rail.inject(Fault::Revert);
    let fresh = rail.address_for(&wallet("never_paid")).await.unwrap();
    match pay(&rail, "p2", &fresh).await {
        SubmissionStatus::Failed { reason, cost, .. } => {
            assert!(reason.contains("reverted"), "{reason}");
            assert_eq!(
                cost,
                Some(SponsorCost {
                    native: 7,
                    energy: 3,
                    bandwidth: 2,
                })
            );
            assert_eq!(cost, Some(picked.failed()));
        }
        other => panic!("expected Failed, got {other:?}"),
    }
    // The default figures of a profile apply to a revert the same way.
    let evm = funded(SimProfile::Evm(137)).await;
    let to = evm.address_for(&wallet("a")).await.unwrap();
    evm.inject(Fault::Revert);
    match pay(&evm, "e-rev", &to).await {
        SubmissionStatus::Failed { cost, .. } => assert_eq!(
            cost,
            Some(SponsorCost {
                native: 150_000_000_000_000,
                energy: 0,
                bandwidth: 0,
            })
        ),
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_payment_that_expired_before_any_block_included_it_costs_nothing() {
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_000)));
    let rail = funded(SimProfile::Tron).await.with_clock(clock.clone());
    let treasury = rail.address_for(&KeyPurpose::Treasury).await.unwrap();
    let to = rail.address_for(&wallet("late")).await.unwrap();
    let deadline = Timestamp::from_secs(1_010);
    let p = RailPayment {
        id: "late".into(),
        from: KeyPurpose::Treasury,
        from_address: treasury,
        token: Token::Usdt,
        legs: vec![PaymentLeg {
            to,
            amount: Micros(1_000_000),
            role: LegRole::Recipient,
        }],
        valid_until: Some(deadline),
    };
    rail.inject(Fault::Delay(2));
    rail.submit(&p).await.unwrap();
    clock.set(deadline);
    clock.advance_ms(1);
    rail.mine(5);
    match rail.status("late").await.unwrap() {
        SubmissionStatus::Failed { reason, cost, .. } => {
            assert!(reason.contains("expired"), "{reason}");
            assert_eq!(cost, None);
        }
        other => panic!("expected Failed (expired), got {other:?}"),
    }
}

#[tokio::test]
async fn a_treasury_swap_counts_the_treasury_leg_that_reverted_before_one_landed() {
    let picked = SimCosts {
        native_per_payment: 1_000,
        native_per_account_opened: 0,
        energy_per_payment: 10,
        bandwidth_per_payment: 1,
    };
    let rail = Arc::new(
        SimRail::new(
            SimProfile::Evm(137),
            signer(),
            SimConfig::for_profile(SimProfile::Evm(137)),
        )
        .with_costs(picked),
    );
    let treasury = rail.address_for(&KeyPurpose::Treasury).await.unwrap();
    let trader = rail.address_for(&wallet("trader")).await.unwrap();
    rail.mint(&treasury, Token::Usdt, Micros(50_000_000))
        .unwrap();
    rail.mint(&trader, Token::Usdc, Micros(10_000_000)).unwrap();
    rail.mine(1);
    let venue = TreasuryVenue::new(
        rail.clone(),
        Arc::new(MemoryStore::new()),
        TreasuryRate::default(),
        Micros(50_000_000),
    );
    let out = venue
        .quote(Token::Usdc, Token::Usdt, Micros(5_000_000))
        .await
        .unwrap();
    let order = SwapOrder {
        id: "sw_rev".into(),
        from: wallet("trader"),
        from_address: trader.clone(),
        token_in: Token::Usdc,
        token_out: Token::Usdt,
        amount_in: Micros(5_000_000),
        quoted_amount_out: out,
        min_amount_out: out,
        valid_until: None,
    };
    venue.execute(&order).await.unwrap();
    // The treasury's first leg (the next submit) reverts in its block.
    rail.inject(Fault::Revert);
    for _ in 0..30 {
        let s = venue.status(&order).await.unwrap();
        if let SubmissionStatus::Confirmed { cost, .. } = s.status {
            // The wallet's leg, the reverted treasury leg and the landed one.
            assert_eq!(
                cost,
                Some(SponsorCost {
                    native: 3_000,
                    energy: 30,
                    bandwidth: 3,
                })
            );
            match rail.status("sw_rev:out:0").await.unwrap() {
                SubmissionStatus::Failed { reason, cost, .. } => {
                    assert_eq!(reason, "execution reverted");
                    assert_eq!(cost, Some(picked.failed()));
                }
                other => panic!("expected the first treasury leg Failed, got {other:?}"),
            }
            assert_eq!(rail.balance(&trader, Token::Usdt).await.unwrap(), out);
            return;
        }
    }
    panic!("the swap never confirmed");
}

#[tokio::test]
async fn a_treasury_swap_reports_what_both_of_its_transactions_cost() {
    let picked = SimCosts {
        native_per_payment: 1_000,
        native_per_account_opened: 0,
        energy_per_payment: 10,
        bandwidth_per_payment: 1,
    };
    let rail = Arc::new(
        SimRail::new(
            SimProfile::Evm(137),
            signer(),
            SimConfig::for_profile(SimProfile::Evm(137)),
        )
        .with_costs(picked),
    );
    let treasury = rail.address_for(&KeyPurpose::Treasury).await.unwrap();
    let trader = rail.address_for(&wallet("trader")).await.unwrap();
    rail.mint(&treasury, Token::Usdt, Micros(50_000_000))
        .unwrap();
    rail.mint(&trader, Token::Usdc, Micros(10_000_000)).unwrap();
    rail.mine(1);
    let venue = TreasuryVenue::new(
        rail.clone(),
        Arc::new(MemoryStore::new()),
        TreasuryRate::default(),
        Micros(50_000_000),
    );
    let out = venue
        .quote(Token::Usdc, Token::Usdt, Micros(5_000_000))
        .await
        .unwrap();
    let order = SwapOrder {
        id: "sw_1".into(),
        from: wallet("trader"),
        from_address: trader,
        token_in: Token::Usdc,
        token_out: Token::Usdt,
        amount_in: Micros(5_000_000),
        quoted_amount_out: out,
        min_amount_out: out,
        valid_until: None,
    };
    venue.execute(&order).await.unwrap();
    // The rail auto-mines on every status call: poll until the treasury's leg lands.
    for _ in 0..20 {
        let s = venue.status(&order).await.unwrap();
        if let SubmissionStatus::Confirmed { cost, .. } = s.status {
            assert_eq!(
                cost,
                Some(SponsorCost {
                    native: 2_000,
                    energy: 20,
                    bandwidth: 2,
                })
            );
            assert_eq!(s.amount_out, Some(out));
            return;
        }
    }
    panic!("the swap never confirmed");
}
