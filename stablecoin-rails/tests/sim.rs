//! Behaviour of the simulated chain through the `Rail` port.

use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::memory::LocalSigner;
use stablecoin_core::ports::{
    ChainAddress, Inbound, KeyPurpose, LegRole, PaymentLeg, Rail, RailError, RailId, RailPayment,
    ReadinessStatus, Signer, SubmissionStatus,
};
use stablecoin_rails::{Fault, SimConfig, SimCosts, SimProfile, SimRail};
use std::sync::Arc;

const EVM: SimProfile = SimProfile::Evm(137);

fn signer() -> Arc<dyn Signer> {
    Arc::new(LocalSigner::from_seed([7; 32]))
}

/// A rail the test drives by hand (no auto-mining).
fn manual(profile: SimProfile) -> SimRail {
    let config = SimConfig {
        auto_mine: false,
        ..SimConfig::for_profile(profile)
    };
    SimRail::new(profile, signer(), config)
}

fn usdc(n: u64) -> Micros {
    Micros::from_whole_tokens(n).unwrap()
}

fn wallet(id: &str) -> KeyPurpose {
    KeyPurpose::Wallet(id.to_string())
}

async fn addr(rail: &SimRail, purpose: &KeyPurpose) -> ChainAddress {
    rail.address_for(purpose).await.unwrap()
}

/// Treasury funded with `amount` (mined, not necessarily confirmed).
async fn funded(rail: &SimRail, token: Token, amount: Micros) -> ChainAddress {
    let treasury = addr(rail, &KeyPurpose::Treasury).await;
    rail.mint(&treasury, token, amount).unwrap();
    rail.mine(1);
    treasury
}

async fn payment(
    rail: &SimRail,
    id: &str,
    token: Token,
    legs: &[(&ChainAddress, Micros, LegRole)],
) -> RailPayment {
    RailPayment {
        id: id.to_string(),
        from: KeyPurpose::Treasury,
        from_address: addr(rail, &KeyPurpose::Treasury).await,
        token,
        legs: legs
            .iter()
            .map(|(to, amount, role)| PaymentLeg {
                to: (*to).clone(),
                amount: *amount,
                role: *role,
            })
            .collect(),
        valid_until: None,
    }
}

fn is_base58(s: &str) -> bool {
    s.bytes()
        .all(|c| c.is_ascii_alphanumeric() && !matches!(c, b'0' | b'O' | b'I' | b'l'))
}

// ---- addresses ------------------------------------------------------------------------

#[tokio::test]
async fn addresses_are_deterministic_and_distinct_per_purpose() {
    for profile in [EVM, SimProfile::Tron, SimProfile::Solana] {
        let a = manual(profile);
        let b = manual(profile); // a second rail over the same seed
        let purposes = [
            wallet("w1"),
            wallet("w2"),
            KeyPurpose::PhoneWallet("+2250700000001".into()),
            KeyPurpose::EscrowDeal("deal-1".into()),
            KeyPurpose::Treasury,
            KeyPurpose::Sponsor,
            KeyPurpose::ServiceFees,
        ];
        let mut seen = std::collections::BTreeSet::new();
        for p in &purposes {
            let first = addr(&a, p).await;
            assert_eq!(first, addr(&a, p).await, "{profile:?} {p}");
            assert_eq!(first, addr(&b, p).await, "{profile:?} {p}");
            assert!(seen.insert(first), "{profile:?}: {p} collides");
        }
    }
}

#[tokio::test]
async fn address_formats_per_profile() {
    let evm = addr(&manual(EVM), &wallet("w1")).await.0;
    assert_eq!(evm.len(), 42);
    assert!(evm.starts_with("0x"));
    assert!(
        evm[2..]
            .bytes()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
    );

    let tron = addr(&manual(SimProfile::Tron), &wallet("w1")).await.0;
    assert_eq!(tron.len(), 34);
    assert!(tron.starts_with('T'));
    assert!(is_base58(&tron));

    // Solana: the address IS base58 of the ed25519 public key.
    let sol = addr(&manual(SimProfile::Solana), &wallet("w1")).await.0;
    assert!(is_base58(&sol) && (32..=44).contains(&sol.len()));
    let key = LocalSigner::from_seed([7; 32])
        .public_key(&wallet("w1"), stablecoin_core::ports::Curve::Ed25519)
        .await
        .unwrap();
    assert_eq!(key.bytes.len(), 32);

    // Different EVM chain ids share the key-derived address form but are separate rails.
    assert_eq!(manual(SimProfile::Evm(8453)).id(), RailId::Evm(8453));
    assert_eq!(manual(SimProfile::Tron).id(), RailId::Tron);
    assert_eq!(manual(SimProfile::Solana).id(), RailId::Solana);
}

#[tokio::test]
async fn invalid_addresses_are_refused() {
    let rail = manual(EVM);
    let tron_addr = ChainAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t".into());
    let err = rail.balance(&tron_addr, Token::Usdc).await;
    assert!(matches!(err, Err(RailError::InvalidAddress { .. })));
    let tron = manual(SimProfile::Tron);
    let evm_addr = ChainAddress("0x0000000000000000000000000000000000000000".into());
    let err = tron.balance(&evm_addr, Token::Usdt).await;
    assert!(matches!(err, Err(RailError::InvalidAddress { .. })));
    let sol = manual(SimProfile::Solana);
    let err = sol.balance(&tron_addr, Token::Usdc).await;
    assert!(matches!(err, Err(RailError::InvalidAddress { .. })));
}

// ---- balances and payments ------------------------------------------------------------

#[tokio::test]
async fn mint_executes_at_next_block() {
    let rail = manual(EVM);
    let w = addr(&rail, &wallet("w1")).await;
    assert_eq!(rail.head(), 0);
    rail.mint(&w, Token::Usdc, usdc(10)).unwrap();
    assert_eq!(rail.balance(&w, Token::Usdc).await.unwrap(), Micros::ZERO);
    assert_eq!(rail.mine(1), 1);
    assert_eq!(rail.head(), 1);
    assert_eq!(rail.balance(&w, Token::Usdc).await.unwrap(), usdc(10));
    assert_eq!(rail.balance(&w, Token::Usdt).await.unwrap(), Micros::ZERO);
}

#[tokio::test]
async fn submit_pending_then_confirmed_with_all_legs_moved() {
    let rail = manual(EVM);
    let treasury = funded(&rail, Token::Usdc, usdc(100)).await;
    let alice = addr(&rail, &wallet("alice")).await;
    let fees = addr(&rail, &KeyPurpose::ServiceFees).await;
    let tenant = addr(&rail, &wallet("tenant")).await;
    let p = payment(
        &rail,
        "op-1",
        Token::Usdc,
        &[
            (&alice, Micros(9_970_000), LegRole::Recipient),
            (&fees, Micros(30_000), LegRole::ServiceFee),
            (&tenant, Micros(5_000), LegRole::TenantFee),
        ],
    )
    .await;
    let sub = rail.submit(&p).await.unwrap();
    assert_eq!(sub.payment_id, "op-1");
    let hash = sub.tx_hash.clone().unwrap();
    assert!(hash.starts_with("0x") && hash.len() == 66);

    // In the mempool: pending, nothing moved.
    assert_eq!(
        rail.status("op-1").await.unwrap(),
        SubmissionStatus::Pending {
            tx_hash: Some(hash.clone())
        }
    );
    assert_eq!(
        rail.balance(&alice, Token::Usdc).await.unwrap(),
        Micros::ZERO
    );

    // Mined at block 2: executed, 1 confirmation of 3.
    rail.mine(1);
    assert_eq!(
        rail.status("op-1").await.unwrap(),
        SubmissionStatus::Pending {
            tx_hash: Some(hash.clone())
        }
    );
    assert_eq!(
        rail.balance(&alice, Token::Usdc).await.unwrap(),
        Micros(9_970_000)
    );
    assert_eq!(
        rail.balance(&fees, Token::Usdc).await.unwrap(),
        Micros(30_000)
    );
    assert_eq!(
        rail.balance(&tenant, Token::Usdc).await.unwrap(),
        Micros(5_000)
    );
    assert_eq!(
        rail.balance(&treasury, Token::Usdc).await.unwrap(),
        Micros(100_000_000 - 10_005_000)
    );

    rail.mine(1);
    assert!(matches!(
        rail.status("op-1").await.unwrap(),
        SubmissionStatus::Pending { .. }
    ));
    rail.mine(1);
    assert_eq!(
        rail.status("op-1").await.unwrap(),
        SubmissionStatus::Confirmed {
            tx_hash: hash,
            block: 2,
            created_recipient_account: false,
            cost: Some(SimCosts::for_profile(EVM).of(false)),
        }
    );
    assert_eq!(rail.submit_count(), 1);
}

#[tokio::test]
async fn tx_hash_is_deterministic_per_chain() {
    let a = manual(EVM);
    let b = manual(EVM);
    let c = manual(SimProfile::Evm(56));
    let mut hashes = Vec::new();
    for rail in [&a, &b, &c] {
        let w = addr(rail, &wallet("w")).await;
        funded(rail, Token::Usdc, usdc(5)).await;
        let p = payment(
            rail,
            "same-id",
            Token::Usdc,
            &[(&w, usdc(1), LegRole::Recipient)],
        )
        .await;
        hashes.push(rail.submit(&p).await.unwrap().tx_hash.unwrap());
    }
    assert_eq!(hashes[0], hashes[1]);
    assert_ne!(hashes[0], hashes[2]);
}

#[tokio::test]
async fn tron_and_solana_payment_hash_formats() {
    let tron = manual(SimProfile::Tron);
    let to = addr(&tron, &wallet("w")).await;
    funded(&tron, Token::Usdt, usdc(5)).await;
    let p = payment(
        &tron,
        "t-1",
        Token::Usdt,
        &[(&to, usdc(1), LegRole::Recipient)],
    )
    .await;
    let h = tron.submit(&p).await.unwrap().tx_hash.unwrap();
    assert!(h.len() == 64 && h.bytes().all(|c| c.is_ascii_hexdigit()));

    let sol = manual(SimProfile::Solana);
    let to = addr(&sol, &wallet("w")).await;
    funded(&sol, Token::Usdc, usdc(5)).await;
    let p = payment(
        &sol,
        "s-1",
        Token::Usdc,
        &[(&to, usdc(1), LegRole::Recipient)],
    )
    .await;
    let h = sol.submit(&p).await.unwrap().tx_hash.unwrap();
    assert!(is_base58(&h) && (80..=88).contains(&h.len()), "{h}");
    sol.mine(1);
    // Solana confirms at depth 1.
    assert!(matches!(
        sol.status("s-1").await.unwrap(),
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(sol.balance(&to, Token::Usdc).await.unwrap(), usdc(1));
}

#[tokio::test]
async fn resubmitting_the_same_id_pays_once() {
    let rail = manual(EVM);
    let treasury = funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let p = payment(
        &rail,
        "op-dup",
        Token::Usdc,
        &[(&bob, usdc(4), LegRole::Recipient)],
    )
    .await;
    let first = rail.submit(&p).await.unwrap();
    let second = rail.submit(&p).await.unwrap();
    assert_eq!(first, second);
    rail.mine(1);
    // After execution too.
    assert_eq!(rail.submit(&p).await.unwrap(), first);
    rail.mine(5);
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(4));
    assert_eq!(rail.balance(&treasury, Token::Usdc).await.unwrap(), usdc(6));
    assert_eq!(rail.submit_count(), 1);
}

#[tokio::test]
async fn insufficient_balance_is_rejected_counting_pending() {
    let rail = manual(EVM);
    let treasury = funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;

    let too_much = payment(
        &rail,
        "big",
        Token::Usdc,
        &[(&bob, usdc(11), LegRole::Recipient)],
    )
    .await;
    let err = rail.submit(&too_much).await.unwrap_err();
    assert!(matches!(err, RailError::Rejected { .. }), "{err:?}");
    assert_eq!(
        rail.status("big").await.unwrap(),
        SubmissionStatus::NotFound
    );

    // Wrong token: no USDT at all.
    let usdt = payment(
        &rail,
        "usdt",
        Token::Usdt,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    assert!(matches!(
        rail.submit(&usdt).await,
        Err(RailError::Rejected { .. })
    ));

    // 7 pending leaves 3 available.
    let a = payment(
        &rail,
        "a",
        Token::Usdc,
        &[(&bob, usdc(7), LegRole::Recipient)],
    )
    .await;
    rail.submit(&a).await.unwrap();
    let b = payment(
        &rail,
        "b",
        Token::Usdc,
        &[(&bob, usdc(4), LegRole::Recipient)],
    )
    .await;
    assert!(matches!(
        rail.submit(&b).await,
        Err(RailError::Rejected { .. })
    ));
    let c = payment(
        &rail,
        "c",
        Token::Usdc,
        &[(&bob, usdc(3), LegRole::Recipient)],
    )
    .await;
    rail.submit(&c).await.unwrap();
    rail.mine(1);
    assert_eq!(
        rail.balance(&treasury, Token::Usdc).await.unwrap(),
        Micros::ZERO
    );
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(10));
    assert_eq!(rail.submit_count(), 2);
}

#[tokio::test]
async fn invalid_payments_are_rejected() {
    let rail = manual(EVM);
    funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;

    let empty = payment(&rail, "e", Token::Usdc, &[]).await;
    assert!(matches!(
        rail.submit(&empty).await,
        Err(RailError::Rejected { .. })
    ));

    let zero = payment(
        &rail,
        "z",
        Token::Usdc,
        &[(&bob, Micros::ZERO, LegRole::Recipient)],
    )
    .await;
    assert!(matches!(
        rail.submit(&zero).await,
        Err(RailError::Rejected { .. })
    ));

    // from_address must be the address of the signing key.
    let mut wrong_from = payment(
        &rail,
        "w",
        Token::Usdc,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    wrong_from.from_address = bob.clone();
    assert!(matches!(
        rail.submit(&wrong_from).await,
        Err(RailError::Rejected { .. })
    ));

    let bad_leg = payment(
        &rail,
        "b",
        Token::Usdc,
        &[(&ChainAddress("nope".into()), usdc(1), LegRole::Recipient)],
    )
    .await;
    assert!(matches!(
        rail.submit(&bad_leg).await,
        Err(RailError::InvalidAddress { .. })
    ));
    assert_eq!(rail.submit_count(), 0);
}

#[tokio::test]
async fn external_transfer_fails_without_funds_and_moves_with_them() {
    let rail = manual(SimProfile::Tron);
    let outside = addr(&rail, &wallet("outside")).await;
    let inside = addr(&rail, &wallet("inside")).await;
    rail.external_transfer(&outside, &inside, Token::Usdt, usdc(1))
        .unwrap();
    rail.mine(1);
    assert_eq!(
        rail.balance(&inside, Token::Usdt).await.unwrap(),
        Micros::ZERO
    );
    rail.mint(&outside, Token::Usdt, usdc(2)).unwrap();
    rail.mine(1);
    rail.external_transfer(&outside, &inside, Token::Usdt, usdc(1))
        .unwrap();
    rail.mine(1);
    assert_eq!(rail.balance(&inside, Token::Usdt).await.unwrap(), usdc(1));
    assert_eq!(rail.balance(&outside, Token::Usdt).await.unwrap(), usdc(1));
}

// ---- faults ---------------------------------------------------------------------------

#[tokio::test]
async fn fault_reject_records_nothing() {
    let rail = manual(EVM);
    funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let p = payment(
        &rail,
        "r",
        Token::Usdc,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    rail.inject(Fault::Reject);
    assert!(matches!(
        rail.submit(&p).await,
        Err(RailError::Rejected { .. })
    ));
    assert_eq!(rail.status("r").await.unwrap(), SubmissionStatus::NotFound);
    assert_eq!(rail.submit_count(), 0);
    // The fault was one-shot: a retry under the same id goes through.
    rail.submit(&p).await.unwrap();
    rail.mine(1);
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(1));
}

#[tokio::test]
async fn fault_revert_fails_and_moves_nothing() {
    let rail = manual(EVM);
    let treasury = funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let fees = addr(&rail, &KeyPurpose::ServiceFees).await;
    let p = payment(
        &rail,
        "rev",
        Token::Usdc,
        &[
            (&bob, usdc(3), LegRole::Recipient),
            (&fees, usdc(1), LegRole::ServiceFee),
        ],
    )
    .await;
    rail.inject(Fault::Revert);
    let sub = rail.submit(&p).await.unwrap();
    assert!(matches!(
        rail.status("rev").await.unwrap(),
        SubmissionStatus::Pending { .. }
    ));
    rail.mine(1);
    match rail.status("rev").await.unwrap() {
        SubmissionStatus::Failed { tx_hash, .. } => assert_eq!(tx_hash, sub.tx_hash),
        other => panic!("expected Failed, got {other:?}"),
    }
    assert_eq!(
        rail.balance(&treasury, Token::Usdc).await.unwrap(),
        usdc(10)
    );
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), Micros::ZERO);
    assert_eq!(
        rail.balance(&fees, Token::Usdc).await.unwrap(),
        Micros::ZERO
    );
    // A resubmit of a failed id does not pay either.
    rail.submit(&p).await.unwrap();
    rail.mine(1);
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), Micros::ZERO);
}

#[tokio::test]
async fn insufficient_balance_at_execution_fails_whole_tx() {
    let rail = manual(EVM);
    let treasury = funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let thief = addr(&rail, &wallet("thief")).await;
    let p = payment(
        &rail,
        "late",
        Token::Usdc,
        &[(&bob, usdc(8), LegRole::Recipient)],
    )
    .await;
    rail.inject(Fault::Delay(2));
    rail.submit(&p).await.unwrap();
    // Someone with the key drains the source before the delayed tx lands.
    rail.external_transfer(&treasury, &thief, Token::Usdc, usdc(5))
        .unwrap();
    rail.mine(3);
    assert_eq!(
        rail.status("late").await.unwrap(),
        SubmissionStatus::Failed {
            reason: "insufficient balance at execution".into(),
            tx_hash: p_hash(&rail, "late").await,
            // Included in a block and reverted there: paid for like a real revert.
            cost: Some(SimCosts::for_profile(EVM).failed()),
        }
    );
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), Micros::ZERO);
    assert_eq!(rail.balance(&treasury, Token::Usdc).await.unwrap(), usdc(5));
}

async fn p_hash(rail: &SimRail, id: &str) -> Option<String> {
    match rail.status(id).await.unwrap() {
        SubmissionStatus::Pending { tx_hash } | SubmissionStatus::Failed { tx_hash, .. } => tx_hash,
        SubmissionStatus::Confirmed { tx_hash, .. } => Some(tx_hash),
        SubmissionStatus::NotFound => None,
    }
}

#[tokio::test]
async fn fault_lost_response_lands_once() {
    let rail = manual(EVM);
    let treasury = funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let p = payment(
        &rail,
        "lost",
        Token::Usdc,
        &[(&bob, usdc(2), LegRole::Recipient)],
    )
    .await;
    rail.inject(Fault::LostResponse);
    let err = rail.submit(&p).await.unwrap_err();
    assert!(matches!(err, RailError::Unknown { .. }), "{err:?}");
    assert_eq!(err.code(), "SUBMISSION_UNKNOWN");
    // The reconciler asks status and finds it.
    assert!(matches!(
        rail.status("lost").await.unwrap(),
        SubmissionStatus::Pending { tx_hash: Some(_) }
    ));
    rail.mine(3);
    assert!(matches!(
        rail.status("lost").await.unwrap(),
        SubmissionStatus::Confirmed { block: 2, .. }
    ));
    // A retry under the same id returns the recorded submission and pays nothing more.
    let again = rail.submit(&p).await.unwrap();
    assert_eq!(again.tx_hash, p_hash(&rail, "lost").await);
    rail.mine(1);
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(2));
    assert_eq!(rail.balance(&treasury, Token::Usdc).await.unwrap(), usdc(8));
    assert_eq!(rail.submit_count(), 1);
}

#[tokio::test]
async fn fault_drop_never_lands() {
    let rail = manual(EVM);
    let treasury = funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let p = payment(
        &rail,
        "dropped",
        Token::Usdc,
        &[(&bob, usdc(2), LegRole::Recipient)],
    )
    .await;
    rail.inject(Fault::Drop);
    assert!(matches!(
        rail.submit(&p).await,
        Err(RailError::Unknown { .. })
    ));
    rail.mine(5);
    assert_eq!(
        rail.status("dropped").await.unwrap(),
        SubmissionStatus::NotFound
    );
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), Micros::ZERO);
    assert_eq!(
        rail.balance(&treasury, Token::Usdc).await.unwrap(),
        usdc(10)
    );
    assert_eq!(rail.submit_count(), 0);
    // NotFound means it never reached the network: resubmitting the same id is safe.
    rail.submit(&p).await.unwrap();
    rail.mine(3);
    assert!(matches!(
        rail.status("dropped").await.unwrap(),
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(2));
    assert_eq!(rail.submit_count(), 1);
}

#[tokio::test]
async fn fault_delay_holds_the_tx_in_the_mempool() {
    let rail = manual(EVM);
    funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let p = payment(
        &rail,
        "slow",
        Token::Usdc,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    rail.inject(Fault::Delay(4));
    rail.submit(&p).await.unwrap(); // head 1: would normally land in block 2
    rail.mine(4); // head 5
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), Micros::ZERO);
    assert!(matches!(
        rail.status("slow").await.unwrap(),
        SubmissionStatus::Pending { .. }
    ));
    rail.mine(1); // block 6 includes it
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(1));
    rail.mine(2);
    assert!(matches!(
        rail.status("slow").await.unwrap(),
        SubmissionStatus::Confirmed { block: 6, .. }
    ));
}

/// A chain with a clock honours payment deadlines: a payment past its `valid_until` is
/// refused at submit, and one still in the mempool when a block is mined past it never
/// executes (so the rail's answer after the deadline is final). A chain without a clock
/// has no time and ignores them.
#[tokio::test]
async fn deadlines_refuse_late_payments_at_submit_and_in_the_mempool() {
    use stablecoin_core::domain::time::Timestamp;
    use stablecoin_core::memory::ManualClock;
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_000)));
    let rail = manual(EVM).with_clock(clock.clone());
    let treasury = funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let deadline = Timestamp::from_secs(1_060);
    let with_deadline = |mut p: RailPayment| {
        p.valid_until = Some(deadline);
        p
    };

    // Submitted before the deadline, mined after it: never executes.
    let late = with_deadline(
        payment(
            &rail,
            "late",
            Token::Usdc,
            &[(&bob, usdc(2), LegRole::Recipient)],
        )
        .await,
    );
    rail.inject(Fault::Delay(2));
    rail.submit(&late).await.unwrap();
    clock.set(deadline);
    rail.mine(1); // at the deadline: still valid, but delayed
    clock.advance_ms(1);
    rail.mine(5);
    match rail.status("late").await.unwrap() {
        SubmissionStatus::Failed { reason, .. } => assert!(reason.contains("expired"), "{reason}"),
        other => panic!("expected Failed (expired), got {other:?}"),
    }
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), Micros::ZERO);

    // Past the deadline at submit: refused, nothing recorded.
    let refused = with_deadline(
        payment(
            &rail,
            "refused",
            Token::Usdc,
            &[(&bob, usdc(1), LegRole::Recipient)],
        )
        .await,
    );
    assert!(matches!(
        rail.submit(&refused).await,
        Err(RailError::Rejected { .. })
    ));
    assert_eq!(
        rail.status("refused").await.unwrap(),
        SubmissionStatus::NotFound
    );

    // In time: lands as usual.
    let mut on_time = payment(
        &rail,
        "on_time",
        Token::Usdc,
        &[(&bob, usdc(3), LegRole::Recipient)],
    )
    .await;
    on_time.valid_until = Some(stablecoin_core::ports::Clock::now(&*clock).plus_millis(60_000));
    rail.submit(&on_time).await.unwrap();
    rail.mine(3);
    assert!(matches!(
        rail.status("on_time").await.unwrap(),
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(3));
    assert_eq!(rail.balance(&treasury, Token::Usdc).await.unwrap(), usdc(7));

    // Without a clock no deadline ever passes.
    let timeless = manual(EVM);
    funded(&timeless, Token::Usdc, usdc(10)).await;
    let p = with_deadline(
        payment(
            &timeless,
            "old",
            Token::Usdc,
            &[(&bob, usdc(1), LegRole::Recipient)],
        )
        .await,
    );
    timeless.submit(&p).await.unwrap();
    timeless.mine(3);
    assert!(matches!(
        timeless.status("old").await.unwrap(),
        SubmissionStatus::Confirmed { .. }
    ));
}

#[tokio::test]
async fn faults_apply_to_successive_submits() {
    let rail = manual(EVM);
    funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    rail.inject(Fault::Revert);
    rail.inject(Fault::Drop);
    let a = payment(
        &rail,
        "a",
        Token::Usdc,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    let b = payment(
        &rail,
        "b",
        Token::Usdc,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    let c = payment(
        &rail,
        "c",
        Token::Usdc,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    rail.submit(&a).await.unwrap();
    assert!(matches!(
        rail.submit(&b).await,
        Err(RailError::Unknown { .. })
    ));
    rail.submit(&c).await.unwrap();
    rail.mine(3);
    assert!(matches!(
        rail.status("a").await.unwrap(),
        SubmissionStatus::Failed { .. }
    ));
    assert_eq!(rail.status("b").await.unwrap(), SubmissionStatus::NotFound);
    assert!(matches!(
        rail.status("c").await.unwrap(),
        SubmissionStatus::Confirmed { .. }
    ));
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(1));
}

// ---- readiness ------------------------------------------------------------------------

#[tokio::test]
async fn readiness_states() {
    let rail = manual(SimProfile::Tron);
    let r = rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::Ready);
    assert!(r.reasons.is_empty() && r.can_send());

    rail.set_sponsor_funded(false);
    let r = rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::InboundReady);
    assert!(
        r.reasons
            .iter()
            .any(|m| m.contains("sponsor") && m.contains("sends disabled"))
    );

    rail.set_monitoring(false);
    assert_eq!(rail.readiness().await.status, ReadinessStatus::Degraded);
    rail.set_monitoring(true);
    rail.set_sponsor_funded(true);
    assert_eq!(rail.readiness().await.status, ReadinessStatus::Ready);

    rail.set_rpc_down(true);
    let r = rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::Degraded);
    assert!(!r.reasons.is_empty());
    rail.set_rpc_down(false);
    assert_eq!(rail.readiness().await.status, ReadinessStatus::Ready);
}

#[tokio::test]
async fn inbound_ready_refuses_sends_but_reads_and_scans() {
    let rail = manual(SimProfile::Tron);
    let treasury = funded(&rail, Token::Usdt, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    rail.set_sponsor_funded(false);
    let p = payment(
        &rail,
        "x",
        Token::Usdt,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    let err = rail.submit(&p).await.unwrap_err();
    assert_eq!(err.code(), "RAIL_UNAVAILABLE");
    assert_eq!(rail.status("x").await.unwrap(), SubmissionStatus::NotFound);
    assert_eq!(
        rail.balance(&treasury, Token::Usdt).await.unwrap(),
        usdc(10)
    );
    assert_eq!(
        rail.scan("", &[treasury], 10).await.unwrap().inbound.len(),
        1
    );
    rail.prepare_wallet(&wallet("bob")).await.unwrap();
    rail.set_sponsor_funded(true);
    rail.submit(&p).await.unwrap();
}

#[tokio::test]
async fn solana_monitoring_disabled_is_degraded_and_stops_scans() {
    let rail = manual(SimProfile::Solana);
    rail.set_monitoring(false);
    let r = rail.readiness().await;
    assert_eq!(r.status, ReadinessStatus::Degraded);
    assert!(r.reasons.iter().any(|m| m.contains("monitoring")));
    let w = addr(&rail, &wallet("w")).await;
    // Balance reads still work.
    assert_eq!(rail.balance(&w, Token::Usdc).await.unwrap(), Micros::ZERO);
    assert!(matches!(
        rail.scan("", &[w], 10).await,
        Err(RailError::Unavailable { .. })
    ));
}

#[tokio::test]
async fn rpc_down_makes_every_call_unavailable() {
    let rail = manual(EVM);
    funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let p = payment(
        &rail,
        "x",
        Token::Usdc,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    rail.submit(&p).await.unwrap();
    rail.set_rpc_down(true);
    let unavailable = |r: Result<(), RailError>| matches!(r, Err(RailError::Unavailable { .. }));
    assert!(unavailable(
        rail.address_for(&KeyPurpose::Treasury).await.map(|_| ())
    ));
    assert!(unavailable(
        rail.prepare_wallet(&KeyPurpose::Treasury).await
    ));
    assert!(unavailable(
        rail.balance(&bob, Token::Usdc).await.map(|_| ())
    ));
    assert!(unavailable(rail.submit(&p).await.map(|_| ())));
    assert!(unavailable(rail.status("x").await.map(|_| ())));
    assert!(unavailable(
        rail.scan("", std::slice::from_ref(&bob), 10)
            .await
            .map(|_| ())
    ));
    rail.set_rpc_down(false);
    rail.mine(1);
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(1));
}

#[tokio::test]
async fn solana_prepare_wallet_opens_token_accounts() {
    let rail = manual(SimProfile::Solana);
    let w = addr(&rail, &KeyPurpose::PhoneWallet("+2250700000001".into())).await;
    assert!(!rail.token_account_exists(&w, Token::Usdc));
    rail.prepare_wallet(&KeyPurpose::PhoneWallet("+2250700000001".into()))
        .await
        .unwrap();
    assert!(rail.token_account_exists(&w, Token::Usdc));
    assert!(rail.token_account_exists(&w, Token::Usdt));
    assert_eq!(rail.balance(&w, Token::Usdt).await.unwrap(), Micros::ZERO);

    // A first incoming transfer opens the recipient's account too.
    let other = addr(&rail, &wallet("other")).await;
    rail.mint(&other, Token::Usdc, usdc(1)).unwrap();
    rail.mine(1);
    assert!(rail.token_account_exists(&other, Token::Usdc));
    assert!(!rail.token_account_exists(&other, Token::Usdt));

    // Elsewhere there are no token accounts to prepare.
    let evm = manual(EVM);
    evm.prepare_wallet(&wallet("x")).await.unwrap();
    assert!(evm.token_account_exists(&addr(&evm, &wallet("y")).await, Token::Usdc));
}

// ---- scanning -------------------------------------------------------------------------

fn keys(batch: &[Inbound]) -> Vec<(String, u32)> {
    batch.iter().map(|i| (i.tx_hash.clone(), i.index)).collect()
}

#[tokio::test]
async fn scan_returns_deposits_to_watched_addresses_only() {
    let rail = manual(EVM);
    let watched = addr(&rail, &wallet("watched")).await;
    let other = addr(&rail, &wallet("other")).await;
    let h1 = rail.mint(&watched, Token::Usdc, usdc(5)).unwrap();
    rail.mint(&other, Token::Usdc, usdc(6)).unwrap();
    let h3 = rail.mint(&watched, Token::Usdt, usdc(7)).unwrap();
    rail.mine(1);

    let batch = rail
        .scan("", std::slice::from_ref(&watched), 100)
        .await
        .unwrap();
    assert_eq!(keys(&batch.inbound), vec![(h1.clone(), 0), (h3, 0)]);
    let first = &batch.inbound[0];
    assert_eq!(first.to, watched);
    assert_eq!(first.from, rail.faucet_address());
    assert_eq!(
        (first.token, first.amount, first.block),
        (Token::Usdc, usdc(5), 1)
    );
    assert_eq!(first.confirmations, 1);
    assert!(!first.confirmed);
    // Nothing confirmed yet: the cursor stays.
    assert_eq!(batch.cursor, "0");

    // Addresses in a different case name the same EVM account.
    let upper = ChainAddress(format!("0x{}", watched.0[2..].to_ascii_uppercase()));
    assert_eq!(rail.scan("", &[upper], 100).await.unwrap().inbound.len(), 2);
    // An empty watch list means every transfer (the engine filters by its own index).
    assert!(rail.scan("", &[], 100).await.unwrap().inbound.len() >= 2);
}

#[tokio::test]
async fn scan_cursor_passes_only_confirmed_blocks() {
    let rail = manual(EVM); // 3 confirmations
    let w = addr(&rail, &wallet("w")).await;
    let watched = [w.clone()];
    let h1 = rail.mint(&w, Token::Usdc, usdc(1)).unwrap();
    rail.mine(1); // block 1
    let h2 = rail.mint(&w, Token::Usdc, usdc(2)).unwrap();
    rail.mine(1); // block 2, head 2

    let batch = rail.scan("", &watched, 100).await.unwrap();
    assert_eq!(keys(&batch.inbound), vec![(h1.clone(), 0), (h2.clone(), 0)]);
    assert_eq!(batch.inbound[0].confirmations, 2);
    assert_eq!(batch.cursor, "0");

    rail.mine(1); // head 3: block 1 has 3 confirmations
    let batch = rail.scan(&batch.cursor, &watched, 100).await.unwrap();
    assert_eq!(keys(&batch.inbound), vec![(h1.clone(), 0), (h2.clone(), 0)]);
    assert!(batch.inbound[0].confirmed);
    assert!(!batch.inbound[1].confirmed);
    assert_eq!(batch.cursor, "1");

    // Block 1 is behind the cursor now: only block 2 comes back.
    let batch = rail.scan(&batch.cursor, &watched, 100).await.unwrap();
    assert_eq!(keys(&batch.inbound), vec![(h2.clone(), 0)]);
    assert_eq!(batch.cursor, "1");

    rail.mine(1); // head 4: block 2 confirmed
    let batch = rail.scan("1", &watched, 100).await.unwrap();
    assert_eq!(keys(&batch.inbound), vec![(h2, 0)]);
    assert!(batch.inbound[0].confirmed);
    assert_eq!(batch.inbound[0].confirmations, 3);
    assert_eq!(batch.cursor, "2");

    // Empty confirmed blocks are passed too.
    rail.mine(10);
    let batch = rail.scan("2", &watched, 100).await.unwrap();
    assert!(batch.inbound.is_empty());
    assert_eq!(batch.cursor, "12"); // head 14, confirmed through 12
}

#[tokio::test]
async fn scan_reports_every_leg_of_a_payment_with_its_index() {
    let rail = manual(SimProfile::Solana); // 1 confirmation
    funded(&rail, Token::Usdc, usdc(10)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let fees = addr(&rail, &KeyPurpose::ServiceFees).await;
    let p = payment(
        &rail,
        "multi",
        Token::Usdc,
        &[
            (&bob, usdc(3), LegRole::Recipient),
            (&fees, usdc(1), LegRole::ServiceFee),
        ],
    )
    .await;
    let hash = rail.submit(&p).await.unwrap().tx_hash.unwrap();
    rail.mine(1);
    let batch = rail
        .scan("1", &[bob.clone(), fees.clone()], 100)
        .await
        .unwrap();
    assert_eq!(keys(&batch.inbound), vec![(hash.clone(), 0), (hash, 1)]);
    assert!(batch.inbound.iter().all(|i| i.confirmed && i.block == 2));
    assert_eq!(batch.inbound[1].to, fees);
    assert_eq!(batch.cursor, "2");
}

#[tokio::test]
async fn scan_limit_stops_at_block_boundaries() {
    let rail = manual(SimProfile::Solana);
    let w = addr(&rail, &wallet("w")).await;
    for block in 0..4u64 {
        rail.mint(&w, Token::Usdc, usdc(block + 1)).unwrap();
        rail.mint(&w, Token::Usdt, usdc(block + 1)).unwrap();
        rail.mine(1);
    }
    // Each block holds 2 deposits; a limit of 3 returns one whole block.
    let batch = rail.scan("", std::slice::from_ref(&w), 3).await.unwrap();
    assert_eq!(batch.inbound.len(), 2);
    assert_eq!(batch.cursor, "1");
    let batch = rail
        .scan(&batch.cursor, std::slice::from_ref(&w), 4)
        .await
        .unwrap();
    assert_eq!(batch.inbound.len(), 4);
    assert_eq!(batch.cursor, "3");
    // A limit below one block's size still makes progress.
    let batch = rail
        .scan(&batch.cursor, std::slice::from_ref(&w), 1)
        .await
        .unwrap();
    assert_eq!(batch.inbound.len(), 2);
    assert_eq!(batch.cursor, "4");
}

#[tokio::test]
async fn scan_rejects_invalid_cursor() {
    let rail = manual(EVM);
    for bad in ["x", "-1", "1.5", " 2"] {
        let err = rail.scan(bad, &[], 10).await.unwrap_err();
        assert!(matches!(err, RailError::Rejected { .. }), "{bad}: {err:?}");
    }
}

// ---- auto mining ----------------------------------------------------------------------

#[tokio::test]
async fn auto_mine_drives_the_chain_from_status_and_scan() {
    let rail = SimRail::new(EVM, signer(), SimConfig::for_profile(EVM));
    assert!(rail.config().auto_mine);
    let treasury = addr(&rail, &KeyPurpose::Treasury).await;
    let bob = addr(&rail, &wallet("bob")).await;
    rail.mint(&treasury, Token::Usdc, usdc(10)).unwrap();

    // scan mines block 1 (the deposit) before reading.
    let batch = rail
        .scan("", std::slice::from_ref(&treasury), 10)
        .await
        .unwrap();
    assert_eq!(rail.head(), 1);
    assert_eq!(batch.inbound.len(), 1);
    // balance and submit do not mine.
    assert_eq!(
        rail.balance(&treasury, Token::Usdc).await.unwrap(),
        usdc(10)
    );
    let p = payment(
        &rail,
        "auto",
        Token::Usdc,
        &[(&bob, usdc(4), LegRole::Recipient)],
    )
    .await;
    rail.submit(&p).await.unwrap();
    assert_eq!(rail.head(), 1);

    // Each status call mines one block: executed at 2, confirmed at depth 3 (head 4).
    let mut polls = 0;
    loop {
        polls += 1;
        match rail.status("auto").await.unwrap() {
            SubmissionStatus::Confirmed { block, .. } => {
                assert_eq!(block, 2);
                break;
            }
            SubmissionStatus::Pending { .. } => assert!(polls < 10),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(polls, 3);
    assert_eq!(rail.head(), 4);
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(4));
}

#[tokio::test]
async fn tron_auto_mine_needs_nineteen_polls() {
    let rail = SimRail::new(
        SimProfile::Tron,
        signer(),
        SimConfig::for_profile(SimProfile::Tron),
    );
    let w = addr(&rail, &wallet("w")).await;
    rail.mint(&w, Token::Usdt, usdc(1)).unwrap();
    let mut cursor = String::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut confirmed = None;
    for poll in 1..=30 {
        let batch = rail
            .scan(&cursor, std::slice::from_ref(&w), 10)
            .await
            .unwrap();
        for i in &batch.inbound {
            seen.insert((i.tx_hash.clone(), i.index));
            if i.confirmed && confirmed.is_none() {
                confirmed = Some(poll);
            }
        }
        cursor = batch.cursor;
    }
    assert_eq!(seen.len(), 1);
    // Mined at block 1 on the first poll; 19 confirmations at head 19.
    assert_eq!(confirmed, Some(19));
    assert_eq!(cursor, (30 - 19 + 1).to_string());
}

#[tokio::test]
async fn concurrent_submits_of_one_id_pay_once() {
    let rail = Arc::new(manual(EVM));
    let treasury = funded(&rail, Token::Usdc, usdc(100)).await;
    let bob = addr(&rail, &wallet("bob")).await;
    let p = payment(
        &rail,
        "race",
        Token::Usdc,
        &[(&bob, usdc(1), LegRole::Recipient)],
    )
    .await;
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let rail = rail.clone();
        let p = p.clone();
        tasks.push(tokio::spawn(async move { rail.submit(&p).await.unwrap() }));
    }
    let mut subs = Vec::new();
    for t in tasks {
        subs.push(t.await.unwrap());
    }
    assert!(subs.windows(2).all(|w| w[0] == w[1]));
    rail.mine(1);
    assert_eq!(rail.submit_count(), 1);
    assert_eq!(rail.balance(&bob, Token::Usdc).await.unwrap(), usdc(1));
    assert_eq!(
        rail.balance(&treasury, Token::Usdc).await.unwrap(),
        usdc(99)
    );
}

#[tokio::test]
async fn scan_with_no_watched_addresses_returns_every_transfer() {
    use stablecoin_core::domain::money::{Micros, Token};
    use stablecoin_core::memory::LocalSigner;
    use stablecoin_core::ports::{ChainAddress, Rail};
    use stablecoin_rails::{SimConfig, SimProfile, SimRail};
    use std::sync::Arc;
    let rail = SimRail::new(
        SimProfile::Evm(137),
        Arc::new(LocalSigner::from_seed([1; 32])),
        SimConfig {
            confirmations: 1,
            auto_mine: false,
        },
    );
    let a = ChainAddress("0x00000000000000000000000000000000000000a1".into());
    let b = ChainAddress("0x00000000000000000000000000000000000000b2".into());
    rail.mint(&a, Token::Usdc, Micros::new(5)).unwrap();
    rail.mint(&b, Token::Usdt, Micros::new(7)).unwrap();
    rail.mine(1);
    let all = rail.scan("", &[], 100).await.unwrap();
    assert_eq!(all.inbound.len(), 2);
    let only_a = rail.scan("", std::slice::from_ref(&a), 100).await.unwrap();
    assert_eq!(only_a.inbound.len(), 1);
    assert_eq!(only_a.inbound[0].to, a);
}

#[tokio::test]
async fn a_reorganisation_undoes_the_newest_blocks_and_their_transactions_land_again_once() {
    let rail = manual(EVM); // 3 confirmations
    let treasury = funded(&rail, Token::Usdc, usdc(100)).await; // block 1
    let alice = addr(&rail, &wallet("alice")).await;
    let p = payment(
        &rail,
        "op-1",
        Token::Usdc,
        &[(&alice, usdc(10), LegRole::Recipient)],
    )
    .await;
    let hash = rail.submit(&p).await.unwrap().tx_hash.unwrap();
    let deposit = rail.mint(&alice, Token::Usdc, usdc(1)).unwrap();
    rail.mine(1); // block 2: the payment and the deposit
    assert_eq!(rail.balance(&alice, Token::Usdc).await.unwrap(), usdc(11));

    // Block 2 is abandoned for two empty blocks (head 3): everything it did is undone
    // and waits again, and the scan no longer sees it.
    assert_eq!(rail.reorg(1), 2);
    assert_eq!(rail.head(), 3);
    assert_eq!(rail.balance(&alice, Token::Usdc).await.unwrap(), usdc(0));
    assert_eq!(
        rail.balance(&treasury, Token::Usdc).await.unwrap(),
        usdc(100)
    );
    assert_eq!(
        rail.status("op-1").await.unwrap(),
        SubmissionStatus::Pending {
            tx_hash: Some(hash.clone())
        }
    );
    let batch = rail
        .scan("", std::slice::from_ref(&alice), 100)
        .await
        .unwrap();
    assert!(batch.inbound.is_empty(), "{:?}", batch.inbound);

    // The next block includes both again, under the same hashes, once.
    rail.mine(3); // block 4 includes them; head 6
    assert_eq!(rail.balance(&alice, Token::Usdc).await.unwrap(), usdc(11));
    assert_eq!(
        rail.balance(&treasury, Token::Usdc).await.unwrap(),
        usdc(90)
    );
    assert_eq!(
        rail.status("op-1").await.unwrap(),
        SubmissionStatus::Confirmed {
            tx_hash: hash.clone(),
            block: 4,
            created_recipient_account: false,
            cost: Some(SimCosts::for_profile(EVM).of(false)),
        }
    );
    let batch = rail
        .scan("", std::slice::from_ref(&alice), 100)
        .await
        .unwrap();
    assert_eq!(keys(&batch.inbound), vec![(hash, 0), (deposit, 0)]);
    assert!(batch.inbound.iter().all(|i| i.block == 4 && i.confirmed));
    assert_eq!(rail.submit_count(), 1);
}

#[tokio::test]
async fn a_reorganised_solana_transfer_closes_the_token_account_it_opened() {
    let rail = manual(SimProfile::Solana);
    let bob = addr(&rail, &wallet("bob")).await;
    rail.mint(&bob, Token::Usdc, usdc(1)).unwrap();
    rail.mine(1);
    assert!(rail.token_account_exists(&bob, Token::Usdc));
    rail.reorg(1);
    assert!(!rail.token_account_exists(&bob, Token::Usdc));
    rail.mine(1);
    assert!(rail.token_account_exists(&bob, Token::Usdc));
}
