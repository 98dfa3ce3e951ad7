//! A customer's whole journey through two tenants, every step checked on the ledger and
//! the chain.

use super::harness::*;
use stablecoin_core::domain::fees::TenantPricing;
use stablecoin_core::domain::money::Token;
use stablecoin_core::engine::{FundRequest, SendRequest, accounts};
use stablecoin_core::ports::{ChainAddress, KeyPurpose, Rail, SmsKind, Store};

#[tokio::test]
async fn full_customer_journey() {
    let h = harness();
    let acme = h.tenant("Acme", "1000").await;
    let beta = h.tenant("Beta", "500").await;
    h.engine
        .set_pricing(
            &acme,
            TenantPricing::Percentage {
                fee_bps: 100,
                fee_cap_micros: 0,
            },
            Some(ChainAddress(
                "0x00000000000000000000000000000000000000aa".into(),
            )),
        )
        .await
        .unwrap();
    let alice = phone("+2250700000001");
    let bob = phone("+2340800000002");
    let carol = phone("+254700000003");

    // Provision: offline, outcomes per tenant.
    let p = h.engine.provision(&acme, &alice).await.unwrap();
    assert_eq!(p.outcome, "PROVISIONED");
    assert!(p.address.starts_with("0x"));
    assert_eq!(
        h.engine.provision(&acme, &alice).await.unwrap().outcome,
        "ALREADY_EXISTS"
    );
    let lr = h.engine.provision(&beta, &alice).await.unwrap();
    assert_eq!(lr.outcome, "LINK_REQUIRED");
    assert_eq!(lr.address, p.address, "same address, no rights");
    assert_eq!(
        h.engine.provision(&beta, &bob).await.unwrap().outcome,
        "PROVISIONED"
    );
    assert_eq!(h.sim.submit_count(), 0, "provisioning is offline");

    // Fund alice from Acme's treasury.
    let op = h
        .engine
        .fund(
            &acme,
            &FundRequest {
                phone_number: alice.clone(),
                token: Token::Usdc,
                amount: m("100"),
            },
            Some("fund-1"),
        )
        .await
        .unwrap();
    assert_eq!(op.status, "QUEUED");
    assert!(op.id.starts_with("fd_"));
    assert_eq!(
        h.engine.treasury_balance(&acme, Token::Usdc).await.unwrap(),
        m("900"),
        "held at once"
    );
    h.settle().await;
    let op = h.engine.operation(&acme, &op.id).await.unwrap();
    assert_eq!(op.status.as_str(), "SETTLED");
    assert!(op.tx_hash.is_some());
    assert_eq!(h.chain_balance(&alice).await, m("100"));
    let alice_w = h
        .engine
        .wallet(op.to_wallet.as_ref().unwrap())
        .await
        .unwrap();
    assert_eq!(
        h.ledger_available(&accounts::wallet(&alice_w.id, Token::Usdc).id)
            .await,
        100_000_000
    );
    assert_eq!(
        h.engine.balance(&acme, &alice).await.unwrap().balance_usdc,
        "100.000000"
    );
    h.assert_conserved().await;

    // Cross-tenant transfer alice (Acme) -> bob (Beta): 0.30% service + 1% Acme fee.
    let sent = h
        .engine
        .send(
            &acme,
            &SendRequest {
                from_phone_number: alice.clone(),
                to_phone_number: bob.clone(),
                token: Token::Usdc,
                quote_id: "DIRECT_CRYPTO:USDC:50".into(),
            },
            Some("send-1"),
        )
        .await
        .unwrap();
    assert_eq!(sent.service_fee.as_deref(), Some("0.150000"));
    assert_eq!(sent.tenant_fee.as_deref(), Some("0.500000"));
    assert_eq!(sent.recipient_amount.as_deref(), Some("49.350000"));
    h.settle().await;
    assert_eq!(
        h.engine
            .operation(&acme, &sent.id)
            .await
            .unwrap()
            .status
            .as_str(),
        "SETTLED"
    );
    assert_eq!(
        h.chain_balance(&alice).await,
        m("50"),
        "sender debited exactly the amount"
    );
    assert_eq!(h.chain_balance(&bob).await, m("49.35"));
    let fee_addr = ChainAddress("0x00000000000000000000000000000000000000aa".into());
    assert_eq!(
        h.sim.balance(&fee_addr, Token::Usdc).await.unwrap(),
        m("0.5")
    );
    let svc_addr = h.sim.address_for(&KeyPurpose::ServiceFees).await.unwrap();
    assert_eq!(
        h.sim.balance(&svc_addr, Token::Usdc).await.unwrap(),
        m("0.15")
    );
    assert_eq!(
        h.ledger_available(&accounts::service_fees(Token::Usdc).id)
            .await,
        150_000
    );
    assert_eq!(
        h.ledger_available(&accounts::tenant_fees(&acme, Token::Usdc).id)
            .await,
        500_000
    );
    // Beta receives transfer.received for bob; Acme transfer.settled.
    let events = h.store.outbox_after(0, 100).await.unwrap();
    assert!(
        events
            .iter()
            .any(|(_, e)| e.event_type == "transfer.received" && e.tenant == beta.0)
    );
    assert!(
        events
            .iter()
            .any(|(_, e)| e.event_type == "transfer.settled" && e.tenant == acme.0)
    );
    h.assert_conserved().await;

    // Send to a phone never provisioned: wallet on the fly, SMS once paid, no webhook.
    let before = h.store.outbox_len();
    let s2 = h
        .engine
        .send(
            &acme,
            &SendRequest {
                from_phone_number: alice.clone(),
                to_phone_number: carol.clone(),
                token: Token::Usdc,
                quote_id: "DIRECT_CRYPTO:USDC:10".into(),
            },
            None,
        )
        .await
        .unwrap();
    h.settle().await;
    assert_eq!(
        h.engine
            .operation(&acme, &s2.id)
            .await
            .unwrap()
            .status
            .as_str(),
        "SETTLED"
    );
    assert_eq!(h.chain_balance(&carol).await, m("9.870000"));
    assert!(
        h.notifier.last_to(&carol, SmsKind::MoneyReceived).is_some(),
        "recipient told by SMS"
    );
    let new_events = h.store.outbox_after(0, 100).await.unwrap();
    assert!(
        !new_events[before..]
            .iter()
            .any(|(_, e)| e.event_type == "transfer.received"),
        "no transfer.received for an unaffiliated wallet"
    );
    // The first tenant to provision carol adopts her wallet.
    assert_eq!(
        h.engine.provision(&beta, &carol).await.unwrap().outcome,
        "ADOPTED"
    );

    // Beta links alice with the code sent to alice's phone.
    let ch = h.engine.link_request(&beta, &alice).await.unwrap();
    assert!(ch.challenge_id.starts_with("otp_"));
    let code = h.notifier.last_code_to(&alice).unwrap();
    let wrong = if code == "000000" { "111111" } else { "000000" };
    assert_eq!(
        h.engine
            .link_confirm(&beta, &alice, wrong)
            .await
            .unwrap_err()
            .code(),
        "CODE_INVALID"
    );
    h.engine.link_confirm(&beta, &alice, &code).await.unwrap();
    assert_eq!(
        h.engine.provision(&beta, &alice).await.unwrap().outcome,
        "ALREADY_EXISTS"
    );
    let events = h.store.outbox_after(0, 1000).await.unwrap();
    assert!(
        events
            .iter()
            .any(|(_, e)| e.event_type == "user.linked" && e.tenant == acme.0)
    );
    assert!(h.engine.balance(&beta, &alice).await.is_ok());

    // Phone change: code to the NEW number; address, balance and history kept.
    let alice2 = phone("+2250700000099");
    h.engine
        .phone_change_request(&acme, &alice, &alice2)
        .await
        .unwrap();
    assert!(
        h.notifier.last_code_to(&alice).unwrap() == code,
        "no code to the old number"
    );
    let code2 = h.notifier.last_code_to(&alice2).unwrap();
    let changed = h
        .engine
        .phone_change_confirm(&acme, &alice, &code2)
        .await
        .unwrap();
    assert_eq!(changed.address, p.address);
    assert_eq!(
        h.engine.balance(&acme, &alice2).await.unwrap().balance_usdc,
        "40.000000"
    );
    assert_eq!(
        h.engine.balance(&acme, &alice).await.unwrap_err().code(),
        "NOT_FOUND"
    );
    let events = h.store.outbox_after(0, 1000).await.unwrap();
    let changed_to: Vec<_> = events
        .iter()
        .filter(|(_, e)| e.event_type == "user.phone_changed")
        .map(|(_, e)| e.tenant.clone())
        .collect();
    assert!(
        changed_to.contains(&acme.0) && changed_to.contains(&beta.0),
        "every member told"
    );
    h.assert_conserved().await;
}
