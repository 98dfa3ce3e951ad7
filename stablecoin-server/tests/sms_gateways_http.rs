//! The link and phone-change flows over HTTP with a real SMS gateway adapter talking to
//! a fake gateway on loopback: every code is read from what the fake received, never
//! from process memory. Delivery reports come back to the callback routes: Twilio's
//! only when signed, Africa's Talking's only for a known message id.

use crate::common;

use serde_json::json;
use stablecoin_core::engine::{SmsRecord, SmsStatus};
use stablecoin_core::ports::{ListQuery, Record};
use stablecoin_providers::testkit::{FakeAfricasTalking, FakeTwilio};
use stablecoin_server::App;
use stablecoin_server::config::{Secret, SmsSettings};
use std::time::Duration;

/// Twilio auth tokens are 32 characters; the server refuses a shorter one (#44).
const TWILIO_TOKEN: &str = "tw-auth-token-0123456789abcdef0123";

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

/// Beta links A with the code the gateway received; Acme moves A to B with the code
/// sent to B. Returns Beta's tenant id.
async fn link_and_move(s: &common::Server, last_code: impl Fn(&str) -> Option<String>) -> String {
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, A).await;
    s.post(
        &beta.live,
        "/v1/users/link/request",
        &json!({"phone_number": A}).to_string(),
    )
    .await
    .expect(200);
    let code = last_code(A).expect("the gateway received the code");
    s.post(
        &beta.live,
        "/v1/users/link/confirm",
        &json!({"phone_number": A, "code": code}).to_string(),
    )
    .await
    .expect(200);
    s.post(
        &acme.live,
        "/v1/users/phone-change/request",
        &json!({"phone_number": A, "new_phone_number": B}).to_string(),
    )
    .await
    .expect(200);
    let code = last_code(B).expect("the code went to the new number");
    let r = s
        .post(
            &acme.live,
            "/v1/users/phone-change/confirm",
            &json!({"phone_number": A, "code": code}).to_string(),
        )
        .await;
    r.expect(200);
    assert_eq!(r.json()["phone_number"], B);
    assert!(
        s.app.state().notifier.sent().is_empty(),
        "nothing went to the in-process notifier"
    );
    beta.id.0
}

async fn records(s: &common::Server, tenant: &str) -> Vec<SmsRecord> {
    let (rows, _) = s
        .app
        .state()
        .storage
        .store
        .list(&ListQuery {
            kind: SmsRecord::KIND.into(),
            tenant: tenant.into(),
            subkind: None,
            status: None,
            limit: 10,
            offset: 0,
        })
        .await
        .unwrap();
    rows.iter()
        .map(|r| SmsRecord::from_stored(r).unwrap())
        .collect()
}

#[tokio::test]
async fn africastalking_carries_the_codes_and_its_reports_are_hints_for_known_ids() {
    let fake = FakeAfricasTalking::start("sandbox", "at-key")
        .await
        .unwrap();
    let mut config = common::test_config();
    config.sms = SmsSettings::AfricasTalking {
        base_url: fake.base_url().into(),
        username: "sandbox".into(),
        api_key: Secret::new("at-key"),
        from: None,
        timeout_ms: 2_000,
    };
    let s = common::start_with(config).await;
    let beta = link_and_move(&s, |p| fake.last_code_to(p)).await;
    assert_eq!(fake.sent().len(), 2);

    let rec = records(&s, &beta).await.remove(0);
    assert_eq!(rec.status, SmsStatus::Accepted);
    assert!(!rec.has_text(), "the code is erased once accepted");
    let id = rec.gateway_message_id.clone().unwrap();
    assert_eq!(id, fake.sent()[0].message_id);

    let url = format!("{}/v1/callbacks/sms/africastalking", s.base);
    // Late and twice: recorded once, the second changes nothing.
    let statuses = fake
        .post_delivery_report(&url, &id, "Success", None, Duration::from_millis(100), 2)
        .await
        .unwrap();
    assert_eq!(statuses, vec![204, 204]);
    let rec = records(&s, &beta).await.remove(0);
    assert_eq!(rec.status, SmsStatus::Delivered);
    assert!(!rec.report_verified, "unsigned: a hint");
    // An id this deployment never sent is refused.
    let statuses = fake
        .post_delivery_report(&url, "ATXid_forged", "Failed", None, Duration::ZERO, 1)
        .await
        .unwrap();
    assert_eq!(statuses, vec![404]);
    // The other gateway's route is not served.
    let r = s
        .client
        .post(format!("{}/v1/callbacks/sms/twilio", s.base))
        .body("MessageSid=SM1&MessageStatus=delivered")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn twilio_carries_the_codes_and_only_signed_callbacks_count() {
    let fake = FakeTwilio::start("AC1", TWILIO_TOKEN).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let callback = format!(
        "http://{}/v1/callbacks/sms/twilio",
        listener.local_addr().unwrap()
    );
    let mut config = common::test_config();
    config.sms = SmsSettings::Twilio {
        base_url: fake.base_url().into(),
        account_sid: "AC1".into(),
        auth_token: Secret::new(TWILIO_TOKEN),
        from: Some("+15005550006".into()),
        messaging_service_sid: None,
        status_callback_url: Some(callback.clone()),
        timeout_ms: 2_000,
    };
    let app = App::build(config).await.unwrap();
    let s = common::serve_on(app, listener).await;
    let beta = link_and_move(&s, |p| fake.last_code_to(p)).await;

    let sid = records(&s, &beta).await[0]
        .gateway_message_id
        .clone()
        .unwrap();
    // A forged callback (no or a wrong signature) is refused and changes nothing.
    for sig in [None, Some("AAAA")] {
        let mut req = s
            .client
            .post(&callback)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!(
                "MessageSid={sid}&MessageStatus=failed&ErrorCode=30003"
            ));
        if let Some(sig) = sig {
            req = req.header("X-Twilio-Signature", sig);
        }
        assert_eq!(req.send().await.unwrap().status(), 403);
    }
    assert_eq!(records(&s, &beta).await[0].status, SmsStatus::Accepted);
    let statuses = fake
        .post_status_callback(&sid, "delivered", None, Duration::from_millis(100), 2)
        .unwrap()
        .await
        .unwrap();
    assert_eq!(statuses, vec![204, 204]);
    let rec = records(&s, &beta).await.remove(0);
    assert_eq!(rec.status, SmsStatus::Delivered);
    assert!(rec.report_verified);
}
