//! The Africa's Talking notifier against its fake: a real HTTP server on loopback.

use stablecoin_core::domain::phone::Phone;
use stablecoin_core::ports::{Notifier, SmsKind, SmsMessage};
use stablecoin_providers::africastalking::{AfricasTalking, AfricasTalkingConfig, DeliveryReport};
use stablecoin_providers::testkit::{Behaviour, FakeAfricasTalking};
use std::time::Duration;

fn notifier(base: &str, key: &str) -> AfricasTalking {
    AfricasTalking::new(AfricasTalkingConfig {
        base_url: base.into(),
        username: "sandbox".into(),
        api_key: key.into(),
        from: Some("STABLE".into()),
        timeout: Duration::from_millis(500),
    })
    .unwrap()
}

fn msg(text: &str) -> SmsMessage {
    SmsMessage {
        kind: SmsKind::LinkCode,
        text: text.into(),
    }
}

fn to() -> Phone {
    Phone::parse("+254711000001").unwrap()
}

#[tokio::test]
async fn a_message_is_sent_and_its_id_returned() {
    let fake = FakeAfricasTalking::start("sandbox", "key-1").await.unwrap();
    let n = notifier(fake.base_url(), "key-1");
    let text = "Your code to link your wallet is 123456. Never share it.";
    let ok = n.send_sms(&to(), &msg(text)).await.unwrap();
    assert!(ok.message_id.starts_with("ATXid_"), "{ok:?}");
    let sent = fake.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].to, "+254711000001");
    assert_eq!(sent[0].text, text, "form encoding round-trips the text");
    assert_eq!(sent[0].from.as_deref(), Some("STABLE"));
    assert_eq!(sent[0].message_id, ok.message_id);
    assert_eq!(
        fake.last_code_to("+254711000001").as_deref(),
        Some("123456")
    );
}

#[tokio::test]
async fn a_wrong_key_is_401_and_nothing_is_sent() {
    let fake = FakeAfricasTalking::start("sandbox", "key-1").await.unwrap();
    let e = notifier(fake.base_url(), "wrong")
        .send_sms(&to(), &msg("code 123456"))
        .await
        .unwrap_err();
    assert!(e.reason.contains("401"), "{e:?}");
    assert!(
        e.retryable,
        "credentials can be fixed; the outbox bounds the attempts"
    );
    assert!(!e.reason.contains("123456"), "no text in errors");
    assert!(fake.sent().is_empty());
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retryable() {
    let fake = FakeAfricasTalking::start("sandbox", "k").await.unwrap();
    let n = notifier(fake.base_url(), "k");
    for code in [429, 500, 503] {
        fake.set_behaviour(Behaviour::Status(code));
        let e = n.send_sms(&to(), &msg("hello")).await.unwrap_err();
        assert!(e.retryable && e.reason.contains(&code.to_string()), "{e:?}");
    }
    fake.set_behaviour(Behaviour::Status(400));
    assert!(
        !n.send_sms(&to(), &msg("hello"))
            .await
            .unwrap_err()
            .retryable
    );
    fake.set_behaviour(Behaviour::Normal);
    n.send_sms(&to(), &msg("hello")).await.unwrap();
    assert_eq!(fake.sent().len(), 1);
}

#[tokio::test]
async fn a_hanging_gateway_times_out_retryably() {
    let fake = FakeAfricasTalking::start("sandbox", "k").await.unwrap();
    fake.set_behaviour(Behaviour::Hang);
    // A hang guard, not a stopwatch: the send ends on its own with the client's timeout.
    let n = notifier(fake.base_url(), "k");
    let e = tokio::time::timeout(Duration::from_secs(30), n.send_sms(&to(), &msg("hello")))
        .await
        .expect("the client gave up on the hanging gateway")
        .unwrap_err();
    assert!(e.retryable && e.reason.contains("timed out"), "{e:?}");
}

#[tokio::test]
async fn a_refused_number_is_a_permanent_error_other_codes_retry() {
    let fake = FakeAfricasTalking::start("sandbox", "k").await.unwrap();
    let n = notifier(fake.base_url(), "k");
    fake.refuse_number("+254711000001", 403, "InvalidPhoneNumber");
    let e = n.send_sms(&to(), &msg("hello")).await.unwrap_err();
    assert!(!e.retryable && e.reason.contains("403"), "{e:?}");
    fake.refuse_number("+254711000001", 405, "InsufficientBalance");
    assert!(
        n.send_sms(&to(), &msg("hello"))
            .await
            .unwrap_err()
            .retryable
    );
    assert!(fake.sent().is_empty());
}

#[tokio::test]
async fn delivery_reports_arrive_late_and_twice_and_parse() {
    let fake = FakeAfricasTalking::start("sandbox", "k").await.unwrap();
    let id = notifier(fake.base_url(), "k")
        .send_sms(&to(), &msg("hello"))
        .await
        .unwrap()
        .message_id;
    // A receiver standing in for the host's callback route.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let app = axum::Router::new().route(
        "/cb",
        axum::routing::post(move |body: axum::body::Bytes| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(body.to_vec());
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/cb", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let task = fake.post_delivery_report(
        &url,
        &id,
        "Failed",
        Some("AbsentSubscriber"),
        Duration::from_millis(300),
        2,
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(150), rx.recv())
            .await
            .is_err(),
        "late: nothing before the delay"
    );
    assert_eq!(task.await.unwrap(), vec![200, 200]);
    for _ in 0..2 {
        let body = rx.recv().await.unwrap();
        let r = DeliveryReport::parse(&body).unwrap();
        assert_eq!(r.id, id);
        assert_eq!(r.status, "Failed");
        assert_eq!(r.failure_reason.as_deref(), Some("AbsentSubscriber"));
        assert_eq!(r.phone_number.as_deref(), Some("+254711000001"));
    }
}
