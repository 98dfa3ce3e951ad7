//! The M-Pesa B2C payout adapter against its fake: a real HTTP server on loopback,
//! whose results are POSTed to a receiver standing in for the host's `ResultURL` route.

use rust_decimal::Decimal;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::memory::ShiftedClock;
use stablecoin_core::ports::{Payout, PayoutError, PayoutProvider, PayoutStatus};
use stablecoin_providers::mpesa::{MpesaB2c, MpesaConfig, MpesaResults, Recorded};
use stablecoin_providers::testkit::{Behaviour, FakeMpesa};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PHONE: &str = "+254708374149";
const PARTY_B: &str = "254708374149";

/// The host's callback routes: every result body goes to the shared store.
struct Host {
    result_url: String,
    results: Arc<MpesaResults>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

impl Host {
    async fn start() -> Host {
        let results = Arc::new(MpesaResults::new());
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let (r, rec) = (results.clone(), recorded.clone());
        let app = axum::Router::new().route(
            "/result",
            axum::routing::post(move |body: axum::body::Bytes| {
                let (r, rec) = (r.clone(), rec.clone());
                async move {
                    match r.record(&body) {
                        Ok(x) => {
                            rec.lock().unwrap().push(x);
                            axum::http::StatusCode::OK
                        }
                        Err(_) => axum::http::StatusCode::BAD_REQUEST,
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let result_url = format!("http://{}/result", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Host {
            result_url,
            results,
            recorded,
        }
    }

    fn payment_callbacks(&self, id: &str) -> usize {
        self.count(Recorded::Payment {
            payout_id: id.into(),
        })
    }

    fn query_results(&self, id: &str) -> usize {
        self.count(Recorded::StatusQuery {
            payout_id: id.into(),
        })
    }

    fn count(&self, want: Recorded) -> usize {
        self.recorded
            .lock()
            .unwrap()
            .iter()
            .filter(|r| **r == want)
            .count()
    }
}

fn config(fake: &FakeMpesa, host: &Host) -> MpesaConfig {
    MpesaConfig {
        base_url: fake.base_url().into(),
        consumer_key: "ck".into(),
        consumer_secret: "cs".into(),
        initiator_name: "testapi".into(),
        security_credential: "ENC==".into(),
        shortcode: "600000".into(),
        result_url: host.result_url.clone(),
        queue_timeout_url: format!("{}/timeout", host.result_url),
        timeout: Duration::from_millis(500),
        result_wait: Duration::from_secs(1),
        ..MpesaConfig::default()
    }
}

async fn setup() -> (FakeMpesa, Host, MpesaB2c) {
    let fake = FakeMpesa::start("ck", "cs", "testapi", "ENC==")
        .await
        .unwrap();
    let host = Host::start().await;
    let a = MpesaB2c::new(config(&fake, &host), host.results.clone()).unwrap();
    (fake, host, a)
}

fn payout(id: &str, amount: &str) -> Payout {
    Payout {
        id: id.into(),
        phone: Phone::parse(PHONE).unwrap(),
        currency: "KES".into(),
        amount: amount.parse::<Decimal>().unwrap(),
        source_micros: Micros(10_000_000),
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
async fn a_payout_is_paid_once_and_the_status_query_shows_its_receipt() {
    let (fake, host, a) = setup().await;
    a.submit(&payout("wd_1", "1500")).await.unwrap();
    assert_eq!(
        fake.payments(),
        vec![("wd_1".into(), PARTY_B.into(), "1500".into())]
    );
    let reference = delivered(&a.status("wd_1").await.unwrap());
    assert!(reference.starts_with("SIM"), "{reference}");
    // A re-submit of the same id: Ok, and nothing paid again.
    a.submit(&payout("wd_1", "1500")).await.unwrap();
    assert_eq!(fake.paid_count("wd_1"), 1);
    assert_eq!(delivered(&a.status("wd_1").await.unwrap()), reference);
    assert!(eventually(|| host.results.hint("wd_1").is_some()).await);
    let hint = host.results.hint("wd_1").expect("the B2C result arrived");
    assert_eq!(hint.receipt(), Some(reference.as_str()));
    // An id never submitted is NotFound, not a failure.
    assert_eq!(a.status("wd_none").await.unwrap(), PayoutStatus::NotFound);
}

#[tokio::test]
async fn a_fractional_or_non_kes_amount_is_rejected_before_sending() {
    let (fake, _host, a) = setup().await;
    let e = a.submit(&payout("wd_c", "1500.50")).await.unwrap_err();
    assert!(
        matches!(&e, PayoutError::Rejected(r) if r.contains("whole")),
        "{e:?}"
    );
    let mut eur = payout("wd_e", "10");
    eur.currency = "EUR".into();
    assert!(matches!(
        a.submit(&eur).await,
        Err(PayoutError::Rejected(_))
    ));
    assert!(matches!(
        a.submit(&payout("wd_z", "0")).await,
        Err(PayoutError::Rejected(_))
    ));
    assert_eq!(fake.requests(), 0);
    assert_eq!(fake.token_requests(), 0, "nothing sent at all");
}

#[tokio::test]
async fn an_invalid_party_b_is_rejected_and_nothing_is_held() {
    let (fake, _host, a) = setup().await;
    let mut p = payout("wd_us", "100");
    p.phone = Phone::parse("+15551234567").unwrap();
    let e = a.submit(&p).await.unwrap_err();
    assert!(
        matches!(&e, PayoutError::Rejected(r) if r.contains("400.002.02") && r.contains("PartyB")),
        "{e:?}"
    );
    assert!(fake.payments().is_empty());
}

#[tokio::test]
async fn rate_limits_server_errors_and_hangs_are_unknown_and_status_resolves_them() {
    let (fake, _host, a) = setup().await;
    for code in [429, 500, 503] {
        fake.set_behaviour(Behaviour::Status(code));
        let e = a.submit(&payout("wd_r", "100")).await.unwrap_err();
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
    let e = tokio::time::timeout(Duration::from_secs(30), a.submit(&payout("wd_r", "100")))
        .await
        .expect("the client gave up on the hanging provider")
        .unwrap_err();
    assert!(
        matches!(&e, PayoutError::Unknown(r) if r.contains("timed out")),
        "{e:?}"
    );
    fake.set_behaviour(Behaviour::Normal);
    // None of those reached the ledger: the query says so, and the engine re-submits.
    assert_eq!(a.status("wd_r").await.unwrap(), PayoutStatus::NotFound);
    a.submit(&payout("wd_r", "100")).await.unwrap();
    delivered(&a.status("wd_r").await.unwrap());
    assert_eq!(fake.paid_count("wd_r"), 1);
}

#[tokio::test]
async fn a_lost_answer_is_found_paid_by_the_status_query_and_never_paid_again() {
    let (fake, _host, a) = setup().await;
    fake.set_lose_answers(true);
    let e = a.submit(&payout("wd_l", "250")).await.unwrap_err();
    assert!(matches!(e, PayoutError::Unknown(_)), "{e:?}");
    fake.set_lose_answers(false);
    assert_eq!(fake.paid_count("wd_l"), 1, "it was processed");
    delivered(&a.status("wd_l").await.unwrap());
    // The engine re-submits after a crash: the duplicate answer is Ok, nothing paid.
    a.submit(&payout("wd_l", "250")).await.unwrap();
    assert_eq!(fake.paid_count("wd_l"), 1);
}

#[tokio::test]
async fn a_definitive_failure_is_failed_by_the_status_query() {
    let (fake, host, a) = setup().await;
    fake.fail_party(PARTY_B, "2040", "The receiver is not registered");
    a.submit(&payout("wd_f", "100")).await.unwrap();
    let s = a.status("wd_f").await.unwrap();
    assert!(
        matches!(&s, PayoutStatus::Failed { reason } if reason.contains("2040")),
        "{s:?}"
    );
    assert_eq!(fake.paid_count("wd_f"), 0);
    // A wrong security credential: accepted, then failed with 2001.
    let mut c = config(&fake, &host);
    c.security_credential = "WRONG==".into();
    let b = MpesaB2c::new(c, host.results.clone()).unwrap();
    let mut p = payout("wd_i", "100");
    p.phone = Phone::parse("+254711000002").unwrap();
    b.submit(&p).await.unwrap();
    let s = b.status("wd_i").await.unwrap();
    assert!(
        matches!(&s, PayoutStatus::Failed { reason } if reason.contains("2001")),
        "{s:?}"
    );
    assert_eq!(fake.paid_count("wd_i"), 0);
}

#[tokio::test]
async fn payment_callbacks_late_twice_missing_or_forged_do_not_change_the_status() {
    let (fake, host, a) = setup().await;
    // Missing: the status query alone decides.
    fake.set_payment_callbacks(0, Duration::ZERO);
    a.submit(&payout("wd_m", "100")).await.unwrap();
    delivered(&a.status("wd_m").await.unwrap());
    assert_eq!(host.results.hint("wd_m"), None);
    // Held: pending until paid, whatever a forged callback says.
    fake.set_hold(true);
    fake.set_payment_callbacks(2, Duration::from_millis(1_000));
    a.submit(&payout("wd_h", "100")).await.unwrap();
    assert_eq!(a.status("wd_h").await.unwrap(), PayoutStatus::Pending);
    let forged = r#"{"Result":{"ResultType":0,"ResultCode":0,"ResultDesc":"ok",
      "OriginatorConversationID":"wd_h","ConversationID":"AG_forged","TransactionID":"FAKE1",
      "ResultParameters":{"ResultParameter":[{"Key":"TransactionReceipt","Value":"FAKE1"}]}}}"#;
    let code = reqwest::Client::new()
        .post(&host.result_url)
        .body(forged)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(code, 200);
    assert_eq!(host.payment_callbacks("wd_h"), 1, "recorded as a hint");
    assert_eq!(a.status("wd_h").await.unwrap(), PayoutStatus::Pending);
    // Paid; its callbacks come late and twice: the query knows before they arrive.
    fake.complete_held();
    let reference = delivered(&a.status("wd_h").await.unwrap());
    assert_ne!(reference, "FAKE1");
    assert_eq!(host.payment_callbacks("wd_h"), 1, "not yet arrived");
    assert!(
        eventually(|| host.payment_callbacks("wd_h") == 3).await,
        "both late callbacks arrived"
    );
    assert_eq!(delivered(&a.status("wd_h").await.unwrap()), reference);
    assert_eq!(fake.paid_count("wd_h"), 1);
    // Every callback the fake ever sent is answered: the held payment's two, so none
    // for the payment whose callbacks were missing (an event, not a wait).
    assert!(eventually(|| fake.callbacks_answered() == 2).await);
    assert_eq!(host.results.hint("wd_m"), None);
}

#[tokio::test]
async fn a_missing_or_late_query_result_is_pending_until_it_arrives() {
    let (fake, host, a) = setup().await;
    fake.set_query_results(0, Duration::ZERO);
    a.submit(&payout("wd_q", "100")).await.unwrap();
    assert_eq!(a.status("wd_q").await.unwrap(), PayoutStatus::Pending);
    fake.set_query_results(1, Duration::from_millis(1_300));
    assert_eq!(
        a.status("wd_q").await.unwrap(),
        PayoutStatus::Pending,
        "not within the result wait"
    );
    assert!(
        eventually(|| host.query_results("wd_q") == 1).await,
        "the late result arrived"
    );
    fake.set_query_results(0, Duration::ZERO);
    let requests = fake.requests();
    delivered(&a.status("wd_q").await.unwrap());
    assert_eq!(
        fake.requests(),
        requests,
        "a final result is not asked again"
    );
}

#[tokio::test]
async fn wrong_credentials_are_unknown_and_pay_nothing() {
    let (fake, host, _a) = setup().await;
    let mut c = config(&fake, &host);
    c.consumer_secret = "wrong".into();
    let b = MpesaB2c::new(c, host.results.clone()).unwrap();
    let e = b.submit(&payout("wd_w", "100")).await.unwrap_err();
    assert!(
        matches!(&e, PayoutError::Unknown(r) if r.contains("401")),
        "{e:?}"
    );
    assert!(!format!("{e:?}").contains("wrong"));
    assert!(matches!(
        b.status("wd_w").await,
        Err(PayoutError::Unknown(_))
    ));
    assert!(fake.payments().is_empty());
    assert_eq!(fake.requests(), 0, "no payment request without a token");
}

#[tokio::test]
async fn one_token_serves_many_calls_and_is_refreshed_on_expiry_and_on_401() {
    let (fake, host, a) = setup().await;
    let a = Arc::new(a);
    let mut tasks = Vec::new();
    for i in 0..5 {
        let a = a.clone();
        tasks.push(tokio::spawn(async move {
            a.submit(&payout(&format!("wd_t{i}"), "10")).await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    a.status("wd_t0").await.unwrap();
    assert_eq!(fake.token_requests(), 1);
    // Revoked: the 401 fetches a new token once and the call goes through.
    fake.revoke_tokens();
    a.submit(&payout("wd_t5", "10")).await.unwrap();
    assert_eq!(fake.token_requests(), 2);
    assert_eq!(fake.paid_count("wd_t5"), 1);
    // A short-lived token is replaced before it expires.
    fake.set_token_ttl(1);
    // The token's lifetime runs on a clock the test moves (no sleeping until 0.8 s).
    let clock = Arc::new(ShiftedClock::new());
    let b = MpesaB2c::new(config(&fake, &host), host.results.clone())
        .unwrap()
        .with_clock(clock.clone());
    b.submit(&payout("wd_t6", "10")).await.unwrap();
    assert_eq!(fake.token_requests(), 3);
    clock.advance_ms(900);
    b.submit(&payout("wd_t7", "10")).await.unwrap();
    assert_eq!(
        fake.token_requests(),
        4,
        "refreshed at 0.8 s, before the 401"
    );
    assert_eq!(fake.payments().len(), 8);
    assert!((0..8).all(|i| fake.paid_count(&format!("wd_t{i}")) == 1));
}
