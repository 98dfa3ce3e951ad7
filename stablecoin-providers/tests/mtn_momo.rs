//! The MTN MoMo Disbursement payout adapter against its fake: a real HTTP server on
//! loopback, whose callbacks go to a receiver standing in for the host's route.

use axum::extract::Path;
use axum::http::StatusCode;
use rust_decimal::Decimal;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::memory::ShiftedClock;
use stablecoin_core::ports::{Payout, PayoutError, PayoutProvider, PayoutStatus};
use stablecoin_providers::callback::CallbackKey;
use stablecoin_providers::mtn_momo::{MtnMomoConfig, MtnMomoDisbursement, reference_id};
use stablecoin_providers::testkit::{Behaviour, FakeMtnMomo};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

const PHONE: &str = "+46733123453";

const CB_SECRET: &str = "callback-secret-0123456789abcdef-0123";

/// What each payout id was submitted with (amount, payee), as the server reads it from
/// the withdrawal's payout leg: filled by [`payout`].
static EXPECTED: LazyLock<Mutex<HashMap<String, (Decimal, String)>>> =
    LazyLock::new(Mutex::default);

/// The host's callback route, as the server's: `PUT /cb/{id}/{token}`; a wrong token
/// is 403, a body that is not a transfer 400, one that does not match the payout 409;
/// the accepted bodies are collected.
async fn receiver() -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let key = CallbackKey::new(CB_SECRET).unwrap();
    let app = axum::Router::new().route(
        "/cb/{id}/{token}",
        axum::routing::put(
            move |Path((id, token)): Path<(String, String)>, body: axum::body::Bytes| {
                let (g, key) = (g.clone(), key.clone());
                async move {
                    if !key.verify(&id, &token) {
                        return StatusCode::FORBIDDEN;
                    }
                    let Ok(t) = MtnMomoDisbursement::parse_callback(&body) else {
                        return StatusCode::BAD_REQUEST;
                    };
                    let Some((amount, party)) = EXPECTED.lock().unwrap().get(&id).cloned() else {
                        return StatusCode::CONFLICT;
                    };
                    if t.mismatch(&id, amount, "EUR", &party).is_some() {
                        return StatusCode::CONFLICT;
                    }
                    g.lock().unwrap().push(body.to_vec());
                    StatusCode::OK
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/cb", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

/// `url` of payout `id` with its right token.
fn url_of(base: &str, id: &str) -> String {
    CallbackKey::new(CB_SECRET).unwrap().url(base, id).unwrap()
}

async fn put(url: &str, body: &str) -> u16 {
    reqwest::Client::new()
        .put(url)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

fn config(fake: &FakeMtnMomo, callback_url: Option<String>) -> MtnMomoConfig {
    MtnMomoConfig {
        base_url: fake.base_url().into(),
        api_user: "c72025f5-5cd1-4630-99e4-8ba4722fad56".into(),
        api_key: "key".into(),
        subscription_key: "sub".into(),
        target_environment: "sandbox".into(),
        callback_url,
        callback_secret: Some(CB_SECRET.into()),
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
    if let Ok(a) = amount.parse::<Decimal>() {
        EXPECTED.lock().unwrap().insert(
            id.to_string(),
            (a, phone.trim_start_matches('+').to_string()),
        );
    }
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
    // Each transfer's callback URL is its own, with its token.
    fake.set_hold(true);
    fake.set_callbacks(2, Duration::from_millis(1_000));
    a.submit(&payout("wd_h", PHONE, "5")).await.unwrap();
    a.submit(&payout("wd_o", PHONE, "7")).await.unwrap();
    // A forged "paid" callback, posted to the host's route as MTN would: at the right
    // path with a wrong token it is refused (403); with the right token (had it leaked)
    // but another payout's ids, amount or payee, refused (409). Nothing collected.
    let forged = |id: &str, amount: &str, party: &str| {
        format!(
            r#"{{"externalId":"{id}","amount":"{amount}","currency":"EUR","status":"SUCCESSFUL",
            "financialTransactionId":"1","payee":{{"partyIdType":"MSISDN","partyId":"{party}"}}}}"#
        )
    };
    let right = forged("wd_h", "5", "46733123453");
    let wrong_token = format!("{url}/wd_h/{}", "0".repeat(32));
    assert_eq!(put(&wrong_token, &right).await, 403);
    assert_eq!(
        put(&url_of(&url, "wd_h"), &forged("wd_o", "7", "46733123453")).await,
        409,
        "another payout's callback"
    );
    assert_eq!(
        put(&url_of(&url, "wd_h"), &forged("wd_h", "50", "46733123453")).await,
        409,
        "another amount"
    );
    assert_eq!(
        put(&url_of(&url, "wd_h"), &forged("wd_h", "5", "46733123400")).await,
        409,
        "another payee"
    );
    assert!(got.lock().unwrap().is_empty(), "nothing accepted");
    // Even one that matches is only a hint: the GET says pending.
    assert_eq!(put(&url_of(&url, "wd_h"), &right).await, 200);
    assert_eq!(a.status("wd_h").await.unwrap(), PayoutStatus::Pending);
    // Paid; callbacks late and twice: the GET knows first, and they agree with it.
    fake.complete_held();
    let reference = delivered(&a.status("wd_h").await.unwrap());
    assert_ne!(reference, "1");
    assert_eq!(got.lock().unwrap().len(), 1, "only the test's own so far");
    assert!(
        eventually(|| fake.callbacks_answered() == 4).await,
        "2 each"
    );
    // wd_h's two (a duplicate), wd_o's two: all at their own URLs, all accepted.
    assert_eq!(got.lock().unwrap().len(), 5);
    let bodies = got.lock().unwrap().clone();
    for b in &bodies[1..] {
        let t = MtnMomoDisbursement::parse_callback(b).unwrap();
        assert!(matches!(t.payout_status(), PayoutStatus::Delivered { .. }));
    }
    // Late callbacks after the status answer change nothing.
    assert_eq!(delivered(&a.status("wd_h").await.unwrap()), reference);
    assert_eq!(fake.paid_count("wd_h"), 1);
    assert_eq!(fake.paid_count("wd_o"), 1);
}

#[tokio::test]
async fn a_resubmit_after_a_lost_acknowledgement_pays_once() {
    // MTN documents X-Reference-Id as the idempotency key: the engine may re-submit.
    let (fake, a) = setup().await;
    assert!(a.resubmit_is_idempotent());
    fake.set_lose_answers(true);
    assert!(a.submit(&payout("wd_x", PHONE, "3")).await.is_err());
    fake.set_lose_answers(false);
    a.submit(&payout("wd_x", PHONE, "3")).await.unwrap();
    a.submit(&payout("wd_x", PHONE, "3")).await.unwrap();
    assert_eq!(fake.transfer_requests(), 3);
    assert_eq!(fake.paid_count("wd_x"), 1, "paid exactly once");
    delivered(&a.status("wd_x").await.unwrap());
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
