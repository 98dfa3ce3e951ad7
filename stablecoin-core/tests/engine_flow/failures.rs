//! Money is never lost or moved twice: failed fundings, unknown submissions, non-members,
//! replayed idempotency keys and bad input.

use super::harness::*;
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::{FundRequest, SendRequest, accounts};
use stablecoin_rails::sim::Fault;

#[tokio::test]
async fn failed_funding_returns_value_to_the_tenant() {
    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    h.sim.inject(Fault::Revert);
    let op = h.fund_usdc(&t, &a, "60").await;
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap(),
        m("40")
    );
    h.settle().await;
    let op = h.engine.operation(&t, &op.id).await.unwrap();
    assert_eq!(op.status.as_str(), "FAILED");
    assert!(op.error_reason.is_some());
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap(),
        m("100"),
        "value back"
    );
    assert_eq!(h.chain_balance(&a).await, Micros::ZERO);
    // Rejected at submit fails too, before broadcast.
    h.sim.inject(Fault::Reject);
    let op = h.fund_usdc(&t, &a, "10").await;
    h.settle().await;
    assert_eq!(
        h.engine
            .operation(&t, &op.id)
            .await
            .unwrap()
            .status
            .as_str(),
        "FAILED"
    );
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap(),
        m("100")
    );
    h.assert_conserved().await;
}

#[tokio::test]
async fn unknown_submissions_are_reconciled_without_double_payment() {
    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    h.engine.provision(&t, &a).await.unwrap();
    h.engine.provision(&t, &b).await.unwrap();
    h.fund_usdc(&t, &a, "50").await;
    h.settle().await;
    let submits = h.sim.submit_count();

    // The response is lost but the payment landed: reconciled to SETTLED, paid once.
    h.sim.inject(Fault::LostResponse);
    let req = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:20".into(),
    };
    let s = h.engine.send(&t, &req, None).await.unwrap();
    let r = h.engine.tick().await;
    assert_eq!(r.unknown, 1);
    assert_eq!(
        h.engine.operation(&t, &s.id).await.unwrap().status.as_str(),
        "SUBMISSION_UNKNOWN"
    );
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &s.id).await.unwrap().status.as_str(),
        "SETTLED"
    );
    assert_eq!(h.sim.submit_count(), submits + 1, "never resubmitted");
    assert_eq!(h.chain_balance(&a).await, m("30"));

    // Dropped: never reached the network -> FAILED once its deadline has passed (not
    // before: until then it might still land), hold released, nothing moved.
    h.sim.inject(Fault::Drop);
    let s = h
        .engine
        .send(
            &t,
            &SendRequest {
                quote_id: "DIRECT_CRYPTO:USDC:5".into(),
                ..req.clone()
            },
            None,
        )
        .await
        .unwrap();
    h.settle().await;
    let op = h.engine.operation(&t, &s.id).await.unwrap();
    assert_eq!(
        op.status.as_str(),
        "SUBMISSION_UNKNOWN",
        "not before the deadline"
    );
    let deadline = op.payment.valid_until.expect("a deadline is set at submit");
    h.clock.set(deadline);
    h.settle().await;
    assert_eq!(
        h.engine.operation(&t, &s.id).await.unwrap().status.as_str(),
        "SUBMISSION_UNKNOWN",
        "at the deadline it could still land"
    );
    h.clock.advance_ms(1);
    h.settle().await;
    let op = h.engine.operation(&t, &s.id).await.unwrap();
    assert_eq!(op.status.as_str(), "FAILED");
    assert_eq!(h.chain_balance(&a).await, m("30"));
    let aw = op.from_wallet.unwrap();
    assert_eq!(
        h.ledger_available(&accounts::wallet(&aw, Token::Usdc).id)
            .await,
        30_000_000
    );
    h.assert_conserved().await;
}

#[tokio::test]
async fn non_members_cannot_move_money_out() {
    let h = harness();
    let acme = h.tenant("Acme", "100").await;
    let beta = h.tenant("Beta", "100").await;
    let (a, b) = (phone("+2250700000001"), phone("+2250700000002"));
    h.engine.provision(&acme, &a).await.unwrap();
    // Money-in is open: Beta may fund Acme's customer.
    h.fund_usdc(&beta, &a, "10").await;
    h.settle().await;
    assert_eq!(h.chain_balance(&a).await, m("10"));
    let commits = h.store.commit_count();
    let req = SendRequest {
        from_phone_number: a.clone(),
        to_phone_number: b.clone(),
        token: Token::Usdc,
        quote_id: "DIRECT_CRYPTO:USDC:1".into(),
    };
    assert_eq!(
        h.engine.send(&beta, &req, None).await.unwrap_err().code(),
        "NOT_A_MEMBER"
    );
    assert_eq!(
        h.engine
            .phone_change_request(&beta, &a, &b)
            .await
            .unwrap_err()
            .code(),
        "NOT_A_MEMBER"
    );
    assert_eq!(
        h.engine.balance(&beta, &a).await.unwrap_err().code(),
        "NOT_A_MEMBER"
    );
    assert_eq!(h.store.commit_count(), commits, "nothing written");
    assert!(
        !h.engine.wallet_exists(&b).await,
        "no recipient wallet created"
    );
}

#[tokio::test]
async fn replayed_idempotency_key_moves_money_once() {
    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    let req = FundRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: m("30"),
    };
    let first = h.engine.fund(&t, &req, Some("k-1")).await.unwrap();
    let again = h.engine.fund(&t, &req, Some("k-1")).await.unwrap();
    assert_eq!(first, again, "replay returns the first result");
    let other = FundRequest {
        amount: m("31"),
        ..req.clone()
    };
    assert_eq!(
        h.engine
            .fund(&t, &other, Some("k-1"))
            .await
            .unwrap_err()
            .code(),
        "IDEMPOTENCY_KEY_REUSED"
    );
    // Concurrent duplicates: exactly one executes.
    let (x, y) = tokio::join!(
        h.engine.fund(&t, &req, Some("k-2")),
        h.engine.fund(&t, &req, Some("k-2"))
    );
    assert_eq!(x.unwrap().id, y.unwrap().id);
    h.settle().await;
    assert_eq!(h.chain_balance(&a).await, m("60"));
    assert_eq!(
        h.engine.treasury_balance(&t, Token::Usdc).await.unwrap(),
        m("40")
    );
    let funding = stablecoin_core::domain::state::OpKind::Funding;
    let (ops, total) = h
        .engine
        .list_operations(&t, funding, None, 10, 0)
        .await
        .unwrap();
    assert_eq!((ops.len(), total), (2, 2));
    h.assert_conserved().await;
}

#[tokio::test]
async fn bad_input_is_typed_and_writes_nothing() {
    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    let commits = h.store.commit_count();
    assert_eq!(
        Phone::parse("0700000001").unwrap_err().code(),
        "INVALID_PHONE"
    );
    assert_eq!(
        Micros::parse_positive("-1").unwrap_err().code(),
        "INVALID_AMOUNT"
    );
    assert_eq!(
        Micros::parse_positive("1.0000001").unwrap_err().code(),
        "INVALID_AMOUNT"
    );
    assert_eq!("DAI".parse::<Token>().unwrap_err().code(), "UNKNOWN_TOKEN");
    let fund0 = FundRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: Micros::ZERO,
    };
    assert_eq!(
        h.engine.fund(&t, &fund0, None).await.unwrap_err().code(),
        "INVALID_AMOUNT"
    );
    let too_much = FundRequest {
        phone_number: a.clone(),
        token: Token::Usdc,
        amount: m("1000"),
    };
    assert_eq!(
        h.engine.fund(&t, &too_much, None).await.unwrap_err().code(),
        "INSUFFICIENT_FUNDS"
    );
    let b = phone("+2250700000002");
    for (quote, code) in [
        ("DIRECT_CRYPTO:USDC:-1", "INVALID_QUOTE_ID"),
        ("DIRECT_CRYPTO:SOL:1", "INVALID_QUOTE_ID"),
        ("fx_nope", "INVALID_QUOTE_ID"),
        ("DIRECT_CRYPTO:USDC:1000", "INSUFFICIENT_FUNDS"),
    ] {
        let req = SendRequest {
            from_phone_number: a.clone(),
            to_phone_number: b.clone(),
            token: Token::Usdc,
            quote_id: quote.into(),
        };
        assert_eq!(
            h.engine
                .send(&t, &req, Some("bad"))
                .await
                .unwrap_err()
                .code(),
            code,
            "{quote}"
        );
    }
    assert_eq!(
        h.engine
            .link_confirm(&t, &a, "123456")
            .await
            .unwrap_err()
            .code(),
        "ALREADY_A_MEMBER"
    );
    assert_eq!(
        h.store.commit_count(),
        commits,
        "nothing written by bad input"
    );
    assert!(!h.engine.wallet_exists(&b).await);

    // Expired and exhausted codes.
    let other = h.tenant("Other", "1").await;
    h.engine.link_request(&other, &a).await.unwrap();
    h.clock.advance_ms(10 * 60 * 1000);
    let code = h.notifier.last_code_to(&a).unwrap();
    assert_eq!(
        h.engine
            .link_confirm(&other, &a, &code)
            .await
            .unwrap_err()
            .code(),
        "CODE_EXPIRED"
    );
    h.engine.link_request(&other, &a).await.unwrap();
    let code = h.notifier.last_code_to(&a).unwrap();
    let wrong = if code == "999999" { "999998" } else { "999999" };
    for _ in 0..4 {
        assert_eq!(
            h.engine
                .link_confirm(&other, &a, wrong)
                .await
                .unwrap_err()
                .code(),
            "CODE_INVALID"
        );
    }
    assert_eq!(
        h.engine
            .link_confirm(&other, &a, wrong)
            .await
            .unwrap_err()
            .code(),
        "TOO_MANY_ATTEMPTS"
    );
    assert_eq!(
        h.engine
            .link_confirm(&other, &a, &code)
            .await
            .unwrap_err()
            .code(),
        "TOO_MANY_ATTEMPTS"
    );
}

/// A payment that reverts on chain still cost the sponsor (the reverted user operation's
/// gas): its failure meters that cost in the tenant's budget, in the failure's commit,
/// and a confirmed one after it adds its own.
#[tokio::test]
async fn a_funding_that_reverts_on_chain_meters_what_it_cost() {
    use stablecoin_core::domain::sponsorship::{BudgetCaps, Caps};
    use stablecoin_core::kernel::staff::StaffIdentity;
    use stablecoin_core::ports::Rail;

    let h = harness();
    let t = h.tenant("Acme", "100").await;
    let a = phone("+2250700000001");
    h.engine.provision(&t, &a).await.unwrap();
    let rail = h.sim.id();
    let caps = BudgetCaps {
        daily: Caps {
            native: Some(u128::MAX / 2),
            ..Default::default()
        },
        ..Default::default()
    };
    h.engine
        .set_sponsor_budget(&StaffIdentity::admin_token(), &t, rail, caps)
        .await
        .unwrap();
    let spent = |b: Vec<stablecoin_core::engine::SponsorBudget>| {
        let b = b.into_iter().find(|b| b.rail == rail).unwrap();
        (b.spend.day.native, b.spend.payments)
    };

    h.sim.inject(Fault::Revert);
    let op = h.fund_usdc(&t, &a, "60").await;
    h.settle().await;
    let view = h.engine.operation(&t, &op.id).await.unwrap();
    assert_eq!(view.status.as_str(), "FAILED");
    let failed = h.sim.costs().failed();
    assert!(
        failed.native > 0,
        "the sim's reverted payment costs something"
    );
    assert_eq!(
        spent(h.engine.sponsor_budgets(&t).await.unwrap()),
        (failed.native, 1),
        "the reverted payment's gas is metered"
    );
    // Polling again meters nothing more: the failure was committed once.
    h.settle().await;
    assert_eq!(
        spent(h.engine.sponsor_budgets(&t).await.unwrap()).0,
        failed.native
    );

    let op = h.fund_usdc(&t, &a, "10").await;
    h.settle().await;
    let view = h.engine.operation(&t, &op.id).await.unwrap();
    assert_eq!(view.status.as_str(), "SETTLED");
    let (native, payments) = spent(h.engine.sponsor_budgets(&t).await.unwrap());
    assert!(
        native > failed.native,
        "the confirmed one adds its own cost"
    );
    assert_eq!(payments, 2);
    h.assert_conserved().await;
}
