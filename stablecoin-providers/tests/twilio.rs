//! The Twilio notifier and its status callbacks against the fake: a real HTTP server on
//! loopback.

use stablecoin_core::domain::phone::Phone;
use stablecoin_core::ports::SmsDelivery;
use stablecoin_core::ports::{Notifier, SmsKind, SmsMessage};
use stablecoin_providers::testkit::{Behaviour, FakeTwilio};
use stablecoin_providers::twilio::{StatusCallback, Twilio, TwilioConfig, TwilioSender};
use std::time::Duration;

const SID: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "auth-token-1";

fn notifier(base: &str, token: &str, callback: Option<String>) -> Twilio {
    Twilio::new(TwilioConfig {
        base_url: base.into(),
        account_sid: SID.into(),
        auth_token: token.into(),
        sender: TwilioSender::MessagingService("MG0001".into()),
        status_callback: callback,
        timeout: Duration::from_millis(500),
    })
    .unwrap()
}

fn msg(text: &str) -> SmsMessage {
    SmsMessage {
        kind: SmsKind::PhoneChangeCode,
        text: text.into(),
    }
}

fn to() -> Phone {
    Phone::parse("+15005550006").unwrap()
}

#[tokio::test]
async fn a_message_is_created_and_its_sid_returned() {
    let fake = FakeTwilio::start(SID, TOKEN).await.unwrap();
    let n = notifier(fake.base_url(), TOKEN, None);
    let ok = n
        .send_sms(&to(), &msg("Your code is 654321 & expires soon"))
        .await
        .unwrap();
    assert!(ok.message_id.starts_with("SM"));
    let sent = fake.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].text, "Your code is 654321 & expires soon");
    assert_eq!(sent[0].from.as_deref(), Some("MG0001"));
    assert_eq!(fake.last_code_to("+15005550006").as_deref(), Some("654321"));
}

#[tokio::test]
async fn wrong_credentials_rate_limits_errors_and_timeouts() {
    let fake = FakeTwilio::start(SID, TOKEN).await.unwrap();
    let e = notifier(fake.base_url(), "wrong", None)
        .send_sms(&to(), &msg("code 111111"))
        .await
        .unwrap_err();
    assert!(
        e.reason.contains("401") && e.reason.contains("20003"),
        "{e:?}"
    );
    assert!(!e.reason.contains("111111"));
    let n = notifier(fake.base_url(), TOKEN, None);
    for code in [429, 500] {
        fake.set_behaviour(Behaviour::Status(code));
        let e = n.send_sms(&to(), &msg("x")).await.unwrap_err();
        assert!(e.retryable && e.reason.contains(&code.to_string()), "{e:?}");
    }
    fake.set_behaviour(Behaviour::Hang);
    let e = n.send_sms(&to(), &msg("x")).await.unwrap_err();
    assert!(e.retryable && e.reason.contains("timed out"), "{e:?}");
    fake.set_behaviour(Behaviour::Normal);
    fake.refuse_number("+15005550006");
    let e = n.send_sms(&to(), &msg("x")).await.unwrap_err();
    assert!(!e.retryable && e.reason.contains("21211"), "{e:?}");
    assert!(fake.sent().is_empty());
}

#[tokio::test]
async fn status_callbacks_arrive_signed_late_and_twice() {
    let fake = FakeTwilio::start(SID, TOKEN).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/cb/twilio", listener.local_addr().unwrap());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let verify_url = url.clone();
    let app = axum::Router::new().route(
        "/cb/twilio",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let tx = tx.clone();
                let verify_url = verify_url.clone();
                async move {
                    let sig = headers
                        .get("x-twilio-signature")
                        .and_then(|v| v.to_str().ok());
                    let r = StatusCallback::verify_and_parse(TOKEN, &verify_url, &body, sig);
                    let ok = r.is_ok();
                    let _ = tx.send(r);
                    if ok {
                        axum::http::StatusCode::OK
                    } else {
                        axum::http::StatusCode::FORBIDDEN
                    }
                }
            },
        ),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let sid = notifier(fake.base_url(), TOKEN, Some(url))
        .send_sms(&to(), &msg("hi"))
        .await
        .unwrap()
        .message_id;
    let task = fake
        .post_status_callback(&sid, "delivered", None, Duration::from_millis(200), 2)
        .unwrap();
    assert_eq!(task.await.unwrap(), vec![200, 200]);
    for _ in 0..2 {
        let cb = rx.recv().await.unwrap().unwrap();
        assert_eq!(cb.message_sid, sid);
        assert_eq!(cb.delivery(), SmsDelivery::Delivered);
    }
}
