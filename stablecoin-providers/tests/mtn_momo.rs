//! The MTN MoMo Disbursement payout adapter against its fake: a real HTTP server on
//! loopback, whose callbacks go to a receiver standing in for the host's route.

use rust_decimal::Decimal;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::memory::ShiftedClock;
use stablecoin_core::ports::{Payout, PayoutError, PayoutProvider, PayoutStatus};
use stablecoin_providers::mtn_momo::{MtnMomoConfig, MtnMomoDisbursement, reference_id};
use stablecoin_providers::testkit::{Behaviour, FakeMtnMomo};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PHONE: &str = "+46733123453";

/// The host's callback route: collects every body.
async fn receiver() -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let app = axum::Router::new().route(
        "/cb",
        axum::routing::put(move |body: axum::body::Bytes| {
            let g = g.clone();
            async move {
                g.lock().unwrap().push(body.to_vec());
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/cb", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

fn config(fake: &FakeMtnMomo, callback_url: Option<String>) -> MtnMomoConfig {
    MtnMomoConfig {
        base_url: fake.base_url().into(),
        api_user: "c72025f5-5cd1-4630-99e4-8ba4722fad56".into(),
        api_key: "key".into(),
        subscription_key: "sub".into(),
        target_environment: "sandbox".into(),
        callback_url,
        payer_message: "Withdrawal".into(),
        payee_note: "Your withdrawal".into(),
        timeout: Duration::from_millis(500),
    }
}

async fn setup() -> (FakeMtnMomo, MtnMomoDisbursement) {
    let fake = FakeMtnMomo::start("c72025f5-5cd1-4630-99e4-8ba4722fad56", "key", "sub")
        .await
        .unwrap();
    let a = MtnMomoDisbursement::new(config(&fake, None)).unwrap();
    (fake, a)
}

fn payout(id: &str, phone: &str, amount: &str) -> Payout {
    Payout {
        id: id.into(),
        phone: Phone::parse(phone).unwrap(),
        currency: "EUR".into(),
        amount: amount.parse::<Decimal>().unwrap(),
        source_micros: Micros(5_000_000),
    }
}

/// Waits up to 5 s for `cond` (callbacks arrive on their own time on a busy machine).
async fn eventually(cond: impl Fn() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while !cond() && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cond()
}

fn delivered(s: &PayoutStatus) -> String {
    match s {
        PayoutStatus::Delivered { reference } => reference.clone(),
        other => panic!("expected Delivered, got {other:?}"),
    }
}

#[tokio::test]
async fn a_transfer_is_paid_once_under_a_reference_derived_from_the_payout_id() {
    let (fake, a) = setup().await;
    a.submit(&payout("wd_1", PHONE, "5.50")).await.unwrap();
    let t = fake.transfers();
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].0, reference_id("wd_1"));
    assert_eq!(t[0].1["amount"], "5.5");
    assert_eq!(t[0].1["currency"], "EUR");
    assert_eq!(t[0].1["externalId"], "wd_1");
    assert_eq!(t[0].1["payee"]["partyId"], "46733123453");
    assert_eq!(t[0].1["payerMessage"], "Withdrawal");
    let reference = delivered(&a.status("wd_1").await.unwrap());
    assert!(!reference.is_empty());
    // A re-submit reuses the reference: 409, Ok, nothing paid again.
    a.submit(&payout("wd_1", PHONE, "5.50")).await.unwrap();
    assert_eq!(fake.paid_count("wd_1"), 1);
    assert_eq!(fake.transfers().len(), 1);
    assert_eq!(delivered(&a.status("wd_1").await.unwrap()), reference);
    assert_eq!(a.status("wd_never").await.unwrap(), PayoutStatus::NotFound);
}

#[tokio::test]
async fn a_refused_currency_or_amount_is_rejected_and_nothing_is_held() {
    let (fake, a) = setup().await;
    let mut p = payout("wd_c", PHONE, "5");
    p.currency = "XOF".into();
    let e = a.submit(&p).await.unwrap_err();
    assert!(
        matches!(&e, PayoutError::Rejected(r) if r.contains("INVALID_CURRENCY")),
        "{e:?}"
    );
    assert!(fake.transfers().is_empty());
    let requests = fake.requests();
    assert!(matches!(
        a.submit(&payout("wd_0", PHONE, "0")).await,
        Err(PayoutError::Rejected(_))
    ));
    assert_eq!(fake.requests(), requests, "refused before sending");
}

#[tokio::test]
async fn rate_limits_server_errors_and_hangs_are_unknown_and_status_resolves_them() {
    let (fake, a) = setup().await;
    for code in [429, 500, 503] {
        fake.set_behaviour(Behaviour::Status(code));
        let e = a.submit(&payout("wd_r", PHONE, "5")).await.unwrap_err();
        assert!(
            matches!(&e, PayoutError::Unknown(r) if r.contains(&code.to_string())),
            "{e:?}"
        );
        assert!(matches!(
            a.status("wd_r").await,
            Err(PayoutError::Unknown(_))
        ));
    }
    fake.set_behaviour(Behaviour::Hang);
    // A hang guard, not a stopwatch: the submit ends on its own with the client's timeout.
    let e = tokio::time::timeout(
        Duration::from_secs(30),
        a.submit(&payout("wd_r", PHONE, "5")),
    )
    .await
    .expect("the client gave up on the hanging provider")
    .unwrap_err();
    assert!(
        matches!(&e, PayoutError::Unknown(r) if r.contains("timed out")),
        "{e:?}"
    );
    fake.set_behaviour(Behaviour::Normal);
    assert_eq!(a.status("wd_r").await.unwrap(), PayoutStatus::NotFound);
    a.submit(&payout("wd_r", PHONE, "5")).await.unwrap();
    delivered(&a.status("wd_r").await.unwrap());
    assert_eq!(fake.paid_count("wd_r"), 1);
}

#[tokio::test]
async fn a_lost_answer_is_found_paid_by_status_and_never_paid_again() {
    let (fake, a) = setup().await;
    fake.set_lose_answers(true);
    let e = a.submit(&payout("wd_l", PHONE, "7")).await.unwrap_err();
    assert!(matches!(e, PayoutError::Unknown(_)), "{e:?}");
    fake.set_lose_answers(false);
    delivered(&a.status("wd_l").await.unwrap());
    a.submit(&payout("wd_l", PHONE, "7")).await.unwrap();
    assert_eq!(fake.paid_count("wd_l"), 1);
}

#[tokio::test]
async fn the_sandbox_failure_numbers_are_failed_by_status() {
    let (fake, a) = setup().await;
    for (i, (number, code)) in [
        ("+46733123450", "PAYEE_FAILED"),
        ("+46733123455", "NOT_ENOUGH_FUNDS"),
        ("+46733123457", "PAYEE_NOT_FOUND"),
        ("+46733123462", "INTERNAL_PROCESSING_ERROR"),
    ]
    .into_iter()
    .enumerate()
    {
        let id = format!("wd_f{i}");
        a.submit(&payout(&id, number, "5")).await.unwrap();
        let s = a.status(&id).await.unwrap();
        assert!(
            matches!(&s, PayoutStatus::Failed { reason } if reason.contains(code)),
            "{number}: {s:?}"
        );
        assert_eq!(fake.paid_count(&id), 0);
    }
}

#[tokio::test]
async fn callbacks_late_twice_missing_or_forged_do_not_change_the_status() {
    let fake = FakeMtnMomo::start("c72025f5-5cd1-4630-99e4-8ba4722fad56", "key", "sub")
        .await
        .unwrap();
    let (url, got) = receiver().await;
    let a = MtnMomoDisbursement::new(config(&fake, Some(url.clone()))).unwrap();
    // Missing: the GET alone decides.
    fake.set_callbacks(0, Duration::ZERO);
    a.submit(&payout("wd_m", PHONE, "5")).await.unwrap();
    delivered(&a.status("wd_m").await.unwrap());
    assert!(got.lock().unwrap().is_empty());
    // Held: pending, whatever a forged callback says.
    fake.set_hold(true);
    fake.set_callbacks(2, Duration::from_millis(1_000));
    a.submit(&payout("wd_h", PHONE, "5")).await.unwrap();
    let forged = r#"{"externalId":"wd_h","status":"SUCCESSFUL","financialTransactionId":"1"}"#;
    let code = reqwest::Client::new()
        .put(&url)
        .body(forged)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(code, 200);
    let hint = MtnMomoDisbursement::parse_callback(forged.as_bytes()).unwrap();
    assert!(matches!(
        hint.payout_status(),
        PayoutStatus::Delivered { .. }
    ));
    assert_eq!(a.status("wd_h").await.unwrap(), PayoutStatus::Pending);
    // Paid; callbacks late and twice: the GET knows first, and they agree with it.
    fake.complete_held();
    let reference = delivered(&a.status("wd_h").await.unwrap());
    assert_ne!(reference, "1");
    assert_eq!(got.lock().unwrap().len(), 1, "only the forged one so far");
    assert!(eventually(|| got.lock().unwrap().len() == 3).await);
    // Every callback the fake ever sent is answered: the held payment's two, so none
    // for the payment whose callbacks were missing (an event, not a wait).
    assert!(eventually(|| fake.callbacks_answered() == 2).await);
    let bodies = got.lock().unwrap().clone();
    for b in &bodies[1..] {
        let t = MtnMomoDisbursement::parse_callback(b).unwrap();
        assert_eq!(t.external_id.as_deref(), Some("wd_h"));
        assert_eq!(
            t.payout_status(),
            PayoutStatus::Delivered {
                reference: reference.clone()
            }
        );
    }
    assert_eq!(delivered(&a.status("wd_h").await.unwrap()), reference);
    assert_eq!(fake.paid_count("wd_h"), 1);
}

#[tokio::test]
async fn wrong_credentials_or_environment_are_unknown_and_pay_nothing() {
    let (fake, _a) = setup().await;
    for broken in [
        MtnMomoConfig {
            api_key: "wrong".into(),
            ..config(&fake, None)
        },
        MtnMomoConfig {
            subscription_key: "wrong".into(),
            ..config(&fake, None)
        },
        MtnMomoConfig {
            target_environment: "mtnuganda".into(),
            ..config(&fake, None)
        },
    ] {
        let b = MtnMomoDisbursement::new(broken).unwrap();
        let e = b.submit(&payout("wd_w", PHONE, "5")).await.unwrap_err();
        assert!(
            matches!(&e, PayoutError::Unknown(r) if r.contains("401") || r.contains("403")),
            "{e:?}"
        );
        assert!(!format!("{e:?}").contains("wrong"));
        assert!(matches!(
            b.status("wd_w").await,
            Err(PayoutError::Unknown(_))
        ));
    }
    assert!(fake.transfers().is_empty());
}

#[tokio::test]
async fn one_token_serves_many_calls_and_is_refreshed_on_expiry_and_on_401() {
    let (fake, a) = setup().await;
    let a = Arc::new(a);
    let mut tasks = Vec::new();
    for i in 0..5 {
        let a = a.clone();
        tasks.push(tokio::spawn(async move {
            a.submit(&payout(&format!("wd_t{i}"), PHONE, "1")).await?;
            a.status(&format!("wd_t{i}")).await
        }));
    }
    for t in tasks {
        delivered(&t.await.unwrap().unwrap());
    }
    assert_eq!(fake.token_requests(), 1);
    fake.revoke_tokens();
    a.submit(&payout("wd_t5", PHONE, "1")).await.unwrap();
    assert_eq!(fake.token_requests(), 2);
    fake.set_token_ttl(1);
    // The token's lifetime runs on a clock the test moves (no sleeping until 0.8 s).
    let clock = Arc::new(ShiftedClock::new());
    let b = MtnMomoDisbursement::new(config(&fake, None))
        .unwrap()
        .with_clock(clock.clone());
    b.submit(&payout("wd_t6", PHONE, "1")).await.unwrap();
    assert_eq!(fake.token_requests(), 3);
    clock.advance_ms(900);
    b.submit(&payout("wd_t7", PHONE, "1")).await.unwrap();
    assert_eq!(
        fake.token_requests(),
        4,
        "refreshed at 0.8 s, before the 401"
    );
    assert!((0..8).all(|i| fake.paid_count(&format!("wd_t{i}")) == 1));
}
