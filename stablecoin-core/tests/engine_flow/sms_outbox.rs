//! The durable SMS outbox: a message is a record of the commit that causes it, sent
//! once even across a crash, retried with backoff, erased once accepted, and never
//! printed.

use super::harness::{H, harness, phone};
use async_trait::async_trait;
use stablecoin_core::domain::money::Token;
use stablecoin_core::domain::otp::CodeKey;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::engine::{
    Engine, EngineConfig, SendRequest, SmsDelivery, SmsRecord, SmsStatus,
};
use stablecoin_core::memory::MemoryNotifier;
use stablecoin_core::ports::{
    ListQuery, Notifier, NotifyError, Rail, Record, SmsAccepted, SmsKind, SmsMessage, Store,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn config() -> EngineConfig {
    EngineConfig {
        poll_interval_ms: 0,
        unknown_grace_ms: 0,
        code_key: Some(CodeKey::new([7; 32])),
        ..Default::default()
    }
}

/// An engine over `h`'s store, rails, clock and entropy with another notifier.
fn engine_with(h: &H, notifier: Arc<dyn Notifier>, config: EngineConfig) -> Engine {
    let mut ports = h.engine.ports().clone();
    ports.notifier = notifier;
    let rails: Vec<Arc<dyn Rail>> = vec![h.sim.clone(), h.tron.clone()];
    Engine::new(ports, rails, config)
}

/// A gateway that never answers: the process "dies" inside the send.
struct Hanging(AtomicUsize);

#[async_trait]
impl Notifier for Hanging {
    async fn send_sms(&self, _: &Phone, _: &SmsMessage) -> Result<SmsAccepted, NotifyError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        std::future::pending().await
    }
}

/// A gateway that refuses every message for good (an invalid number).
struct Refusing;

#[async_trait]
impl Notifier for Refusing {
    async fn send_sms(&self, _: &Phone, _: &SmsMessage) -> Result<SmsAccepted, NotifyError> {
        Err(NotifyError::permanent("403 InvalidPhoneNumber"))
    }
}

/// The tenant's outbox records, newest first.
async fn sms_records(h: &H, tenant: &str) -> Vec<(SmsRecord, String)> {
    let (rows, _) = h
        .store
        .list(&ListQuery {
            kind: SmsRecord::KIND.into(),
            tenant: tenant.into(),
            subkind: None,
            status: None,
            limit: 100,
            offset: 0,
        })
        .await
        .unwrap();
    rows.iter()
        .map(|r| {
            (
                SmsRecord::from_stored(r).unwrap(),
                r.body.text().into_owned(),
            )
        })
        .collect()
}

/// A tenant and a wallet it did not create (so linking needs a code).
async fn linkable(h: &H) -> (stablecoin_core::domain::ids::TenantId, Phone) {
    let acme = h.tenant("Acme", "10").await;
    let beta = h.engine.create_tenant("Beta").await.unwrap().id;
    let alice = phone("+2250700000001");
    h.engine.provision(&acme, &alice).await.unwrap();
    (beta, alice)
}

#[tokio::test]
async fn a_crash_between_commit_and_send_still_sends_the_sms_once() {
    let h = harness();
    let (beta, alice) = linkable(&h).await;
    let hanging = Arc::new(Hanging(AtomicUsize::new(0)));
    let first = engine_with(&h, hanging.clone(), config());
    // The request commits its challenge and SMS record, then "crashes" in the send.
    let r = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        first.link_request(&beta, &alice),
    )
    .await;
    assert!(r.is_err(), "the send never returned");
    assert_eq!(hanging.0.load(Ordering::SeqCst), 1);
    drop(first);

    let notifier = Arc::new(MemoryNotifier::new());
    let second = engine_with(&h, notifier.clone(), config());
    // Held by the dead request for one lease: nobody sends it twice meanwhile.
    second.settle_all(10).await;
    assert!(notifier.sent().is_empty(), "held while the send may run");
    h.clock.advance_ms(config().claim_lease_ms + 1);
    let report = second.settle_all(10).await;
    assert_eq!(report.sms_sent, 1, "{report:?}");
    h.clock.advance_ms(60_000);
    second.settle_all(10).await;
    let sent = notifier.sent();
    assert_eq!(sent.len(), 1, "exactly once");
    assert_eq!(sent[0].0, alice);
    // The code it carried confirms the challenge the crashed request opened.
    let code = notifier.last_code_to(&alice).unwrap();
    second.link_confirm(&beta, &alice, &code).await.unwrap();
}

#[tokio::test]
async fn a_failing_gateway_is_retried_with_backoff_until_it_accepts() {
    let h = harness();
    let (beta, alice) = linkable(&h).await;
    h.notifier.set_failing(true);
    // The request still answers: the code is queued, not lost.
    h.engine.link_request(&beta, &alice).await.unwrap();
    let (rec, body) = sms_records(&h, &beta.0).await.remove(0);
    assert_eq!((rec.status, rec.attempts), (SmsStatus::Queued, 1));
    assert!(
        rec.has_text() && body.contains("Your code"),
        "queued with its text"
    );
    let first_wait = EngineConfig::default().sms.retry_first_ms;
    // Not before the backoff.
    h.clock.advance_ms(first_wait - 1);
    assert_eq!(h.engine.settle_all(10).await.errors.len(), 0);
    assert_eq!(sms_records(&h, &beta.0).await[0].0.attempts, 1);
    // The second attempt fails too; the next wait doubles.
    h.clock.advance_ms(1);
    let r = h.engine.settle_all(10).await;
    assert_eq!(r.errors.len(), 1, "{r:?}");
    assert_eq!(sms_records(&h, &beta.0).await[0].0.attempts, 2);
    h.notifier.set_failing(false);
    h.clock.advance_ms(2 * first_wait - 1);
    assert_eq!(h.engine.settle_all(10).await.sms_sent, 0);
    assert!(h.notifier.sent().is_empty());
    h.clock.advance_ms(1);
    assert_eq!(h.engine.settle_all(10).await.sms_sent, 1);
    let code = h.notifier.last_code_to(&alice).unwrap();
    let (rec, body) = sms_records(&h, &beta.0).await.remove(0);
    assert_eq!(rec.status, SmsStatus::Accepted);
    assert!(rec.gateway_message_id.is_some());
    assert!(
        !rec.has_text() && !body.contains(&code),
        "text erased: {body}"
    );
    h.engine.link_confirm(&beta, &alice, &code).await.unwrap();
}

#[tokio::test]
async fn the_code_is_gone_from_the_store_once_accepted_and_never_printed() {
    let h = harness();
    let (beta, alice) = linkable(&h).await;
    h.engine.link_request(&beta, &alice).await.unwrap();
    let code = h.notifier.last_code_to(&alice).unwrap();
    let (rec, body) = sms_records(&h, &beta.0).await.remove(0);
    assert_eq!(rec.status, SmsStatus::Accepted);
    assert!(!body.contains(&code), "{body}");
    assert!(!body.contains("Your code"), "{body}");

    let (_, msg) = h.notifier.sent().remove(0);
    assert!(msg.text.contains(&code));
    let printed = format!("{msg:?} {msg:#?}");
    assert!(!printed.contains(&code), "{printed}");
    assert!(printed.contains("LinkCode"), "{printed}");
    // A queued record (text still held) prints no code either.
    h.notifier.set_failing(true);
    let other = phone("+2250700000002");
    h.engine
        .provision(&h.engine.create_tenant("Gamma").await.unwrap().id, &other)
        .await
        .unwrap();
    h.engine.link_request(&beta, &other).await.unwrap();
    let (queued, body) = sms_records(&h, &beta.0)
        .await
        .into_iter()
        .find(|(r, _)| r.status == SmsStatus::Queued)
        .unwrap();
    assert!(queued.has_text());
    let digits: String = body
        .split(|c: char| !c.is_ascii_digit())
        .find(|w| w.len() == 6)
        .unwrap()
        .to_string();
    let printed = format!("{queued:?}");
    assert!(!printed.contains(&digits), "{printed}");
}

#[tokio::test]
async fn a_permanent_refusal_fails_the_request_and_erases_the_text() {
    let h = harness();
    let (beta, alice) = linkable(&h).await;
    let refusing = engine_with(&h, Arc::new(Refusing), config());
    let e = refusing.link_request(&beta, &alice).await.unwrap_err();
    assert_eq!(e.code(), "NOTIFIER_ERROR");
    let (rec, body) = sms_records(&h, &beta.0).await.remove(0);
    assert_eq!(rec.status, SmsStatus::GaveUp);
    assert!(!body.contains("Your code"), "{body}");
    assert_eq!(
        rec.last_error.as_deref(),
        Some("403 InvalidPhoneNumber"),
        "the reason is kept"
    );
}

#[tokio::test]
async fn a_message_is_given_up_after_max_attempts() {
    let h = harness();
    let (beta, alice) = linkable(&h).await;
    let mut cfg = config();
    cfg.sms.max_attempts = 3;
    cfg.sms.retry_first_ms = 10;
    cfg.sms.retry_max_ms = 10;
    let notifier = Arc::new(MemoryNotifier::new());
    notifier.set_failing(true);
    let e = engine_with(&h, notifier.clone(), cfg);
    e.link_request(&beta, &alice).await.unwrap();
    for _ in 0..5 {
        h.clock.advance_ms(10);
        e.settle_all(3).await;
    }
    let (rec, body) = sms_records(&h, &beta.0).await.remove(0);
    assert_eq!((rec.status, rec.attempts), (SmsStatus::GaveUp, 3));
    assert!(!body.contains("Your code"), "{body}");
}

#[tokio::test]
async fn a_replaced_challenge_does_not_get_its_queued_code_sent() {
    let h = harness();
    let (beta, alice) = linkable(&h).await;
    h.notifier.set_failing(true);
    h.engine.link_request(&beta, &alice).await.unwrap();
    h.notifier.set_failing(false);
    h.engine.link_request(&beta, &alice).await.unwrap();
    assert_eq!(h.notifier.sent().len(), 1, "the new code went out");
    h.clock.advance_ms(3_600_000);
    h.engine.settle_all(10).await;
    assert_eq!(h.notifier.sent().len(), 1, "the replaced code is not sent");
    let recs = sms_records(&h, &beta.0).await;
    let statuses: Vec<_> = recs.iter().map(|(r, _)| r.status).collect();
    assert!(statuses.contains(&SmsStatus::Cancelled), "{statuses:?}");
    assert!(recs.iter().all(|(r, _)| !r.has_text()));
}

#[tokio::test]
async fn delivery_reports_find_the_message_by_gateway_id_and_final_states_stay() {
    let h = harness();
    let (beta, alice) = linkable(&h).await;
    h.engine.link_request(&beta, &alice).await.unwrap();
    let id = sms_records(&h, &beta.0).await[0]
        .0
        .gateway_message_id
        .clone()
        .unwrap();
    let r = h
        .engine
        .record_sms_report(&id, SmsDelivery::InProgress, "Buffered", false)
        .await
        .unwrap();
    assert_eq!(r.status, SmsStatus::Accepted);
    let r = h
        .engine
        .record_sms_report(&id, SmsDelivery::Delivered, "delivered", true)
        .await
        .unwrap();
    assert_eq!((r.status, r.report_verified), (SmsStatus::Delivered, true));
    // Twice, late and out of order: nothing changes.
    for d in [
        SmsDelivery::Delivered,
        SmsDelivery::Failed {
            reason: "30003".into(),
        },
        SmsDelivery::InProgress,
    ] {
        let r = h
            .engine
            .record_sms_report(&id, d, "late", false)
            .await
            .unwrap();
        assert_eq!(r.status, SmsStatus::Delivered);
        assert_eq!(r.gateway_status.as_deref(), Some("delivered"));
    }
    let e = h
        .engine
        .record_sms_report("ATXid_unknown", SmsDelivery::Delivered, "Success", false)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "NOT_FOUND");
}

#[tokio::test]
async fn money_received_carries_the_recipient_countrys_ussd_instructions() {
    let h = harness();
    let mut cfg = config();
    cfg.sms.ussd_instructions.insert(
        "225".into(),
        "Composez le *133# pour votre portefeuille.".into(),
    );
    let notifier = Arc::new(MemoryNotifier::new());
    let e = engine_with(&h, notifier.clone(), cfg);
    let acme = h.tenant("Acme", "1000").await;
    let alice = phone("+2250700000001");
    e.provision(&acme, &alice).await.unwrap();
    h.fund_usdc(&acme, &alice, "100").await;
    e.settle_all(100).await;
    for (to, expected) in [
        ("+2250700000077", "Composez le *133#"),
        ("+254700000077", "Dial *144#"),
    ] {
        let to = phone(to);
        e.send(
            &acme,
            &SendRequest {
                from_phone_number: alice.clone(),
                to_phone_number: to.clone(),
                token: Token::Usdc,
                quote_id: "DIRECT_CRYPTO:USDC:10".into(),
            },
            None,
        )
        .await
        .unwrap();
        let r = e.settle_all(100).await;
        assert!(r.sms_sent >= 1, "{r:?}");
        let msg = notifier.last_to(&to, SmsKind::MoneyReceived).unwrap();
        assert!(msg.text.contains(expected), "{}", msg.text);
        assert!(msg.text.contains("You received"), "{}", msg.text);
    }
}
