//! The M-Pesa B2C payout adapter against its fake: a real HTTP server on loopback,
//! whose results are POSTed to a receiver standing in for the host's `ResultURL` route.

use axum::extract::Path;
use axum::http::StatusCode;
use rust_decimal::Decimal;
use stablecoin_core::domain::money::Micros;
use stablecoin_core::domain::phone::Phone;
use stablecoin_core::memory::MemoryStore;
use stablecoin_core::memory::ShiftedClock;
use stablecoin_core::ports::{Payout, PayoutError, PayoutProvider, PayoutStatus};
use stablecoin_providers::callback::CallbackKey;
use stablecoin_providers::mpesa::{Expected, MpesaB2c, MpesaConfig, MpesaResults, Recorded};
use stablecoin_providers::testkit::{Behaviour, FakeMpesa};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

const PHONE: &str = "+254708374149";
const PARTY_B: &str = "254708374149";

/// The callback secret the adapter and the host share.
const CB_SECRET: &str = "callback-secret-0123456789abcdef-0123";

/// What each payout id was submitted with (amount, payee), as the server reads it from
/// the withdrawal's payout leg: filled by [`payout`].
static EXPECTED: LazyLock<Mutex<HashMap<String, Expected>>> = LazyLock::new(Mutex::default);

/// The host's callback routes, as the server's: a body at a wrong token is refused
/// (403), one that does not match the payout is refused (409); the others go to the
/// shared store (in a database: here the memory store).
struct Host {
    base: String,
    result_url: String,
    results: Arc<MpesaResults>,
    /// The database the results live in (node 1's route writes it).
    store: Arc<MemoryStore>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

impl Host {
    async fn start() -> Host {
        let store = Arc::new(MemoryStore::new());
        let results = Arc::new(MpesaResults::new(store.clone()));
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let key = CallbackKey::new(CB_SECRET).unwrap();
        let (r, rec) = (results.clone(), recorded.clone());
        let app = axum::Router::new().route(
            "/result/{id}/{token}",
            axum::routing::post(
                move |Path((id, token)): Path<(String, String)>, body: axum::body::Bytes| {
                    let (r, rec, key) = (r.clone(), rec.clone(), key.clone());
                    async move {
                        if !key.verify(&id, &token) {
                            return StatusCode::FORBIDDEN;
                        }
                        let Some(e) = EXPECTED.lock().unwrap().get(&id).cloned() else {
                            return StatusCode::CONFLICT;
                        };
                        match r.record(&id, &e, &body).await {
                            Ok(x) => {
                                let ok = !matches!(x, Recorded::Mismatch { .. });
                                rec.lock().unwrap().push(x);
                                if ok {
                                    StatusCode::OK
                                } else {
                                    StatusCode::CONFLICT
                                }
                            }
                            Err(_) => StatusCode::BAD_REQUEST,
                        }
                    }
                },
            ),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Host {
            result_url: format!("{base}/result"),
            base,
            results,
            store,
            recorded,
        }
    }

    /// The result URL of payout `id`, with its right token.
    fn url_of(&self, id: &str) -> String {
        CallbackKey::new(CB_SECRET)
            .unwrap()
            .url(&self.result_url, id)
            .unwrap()
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

    fn mismatches(&self) -> usize {
        self.recorded
            .lock()
            .unwrap()
            .iter()
            .filter(|r| matches!(r, Recorded::Mismatch { .. }))
            .count()
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
        queue_timeout_url: format!("{}/timeout", host.base),
        callback_secret: CB_SECRET.into(),
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
    if let Ok(a) = amount.parse::<Decimal>() {
        EXPECTED.lock().unwrap().insert(
            id.to_string(),
            Expected {
                amount: a,
                party_b: PARTY_B.into(),
            },
        );
    }
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
    assert!(eventually(|| host.payment_callbacks("wd_1") >= 1).await);
    let hint = host
        .results
        .hint("wd_1")
        .await
        .expect("the B2C result arrived");
    assert_eq!(hint.receipt(), Some(reference.as_str()));
    // An id never submitted (a withdrawal whose submit never left) is NotFound, not a
    // failure.
    let _ = payout("wd_none", "100");
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
    // Daraja does not document that a re-used OriginatorConversationID is refused:
    // the adapter says so, and the engine never re-submits (see payouts_crash's
    // `mpesa_a_lost_acknowledgement_is_never_resubmitted_and_paid_once`). The fake's
    // default answers a duplicate 409 (Ok, nothing paid); its worst case would pay again.
    assert!(!a.resubmit_is_idempotent());
    assert_eq!(a.identity(), "mpesa:600000");
    a.submit(&payout("wd_l", "250")).await.unwrap();
    assert_eq!(fake.paid_count("wd_l"), 1);
    fake.set_duplicates_pay(true);
    a.submit(&payout("wd_l", "250")).await.unwrap();
    assert_eq!(
        fake.paid_count("wd_l"),
        2,
        "why the engine must not re-submit"
    );
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

/// POSTs `body` to `url`; the answer's status.
async fn post(url: &str, body: &str) -> u16 {
    reqwest::Client::new()
        .post(url)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn payment_callbacks_late_twice_missing_or_forged_do_not_change_the_status() {
    let (fake, host, a) = setup().await;
    // Missing: the status query alone decides.
    fake.set_payment_callbacks(0, Duration::ZERO);
    a.submit(&payout("wd_m", "100")).await.unwrap();
    delivered(&a.status("wd_m").await.unwrap());
    assert_eq!(host.results.hint("wd_m").await, None);
    // Held: pending until paid, whatever a forged callback says.
    fake.set_hold(true);
    fake.set_payment_callbacks(2, Duration::from_millis(1_000));
    a.submit(&payout("wd_h", "100")).await.unwrap();
    assert_eq!(a.status("wd_h").await.unwrap(), PayoutStatus::Pending);
    let forged = r#"{"Result":{"ResultType":0,"ResultCode":0,"ResultDesc":"ok",
      "OriginatorConversationID":"wd_h","ConversationID":"AG_forged","TransactionID":"FAKE1",
      "ResultParameters":{"ResultParameter":[{"Key":"TransactionReceipt","Value":"FAKE1"},
      {"Key":"TransactionAmount","Value":100}]}}}"#;
    // On the right path with a wrong token: refused before it is read.
    let wrong = format!("{}/wd_h/{}", host.result_url, "0".repeat(32));
    assert_eq!(post(&wrong, forged).await, 403);
    // With the right token (had it leaked): another ConversationID than Daraja
    // acknowledged: refused.
    assert_eq!(post(&host.url_of("wd_h"), forged).await, 409);
    assert_eq!(host.payment_callbacks("wd_h"), 0, "nothing recorded");
    assert_eq!(a.status("wd_h").await.unwrap(), PayoutStatus::Pending);
    // Paid; its callbacks come late and twice: the query knows before they arrive.
    fake.complete_held();
    let reference = delivered(&a.status("wd_h").await.unwrap());
    assert_ne!(reference, "FAKE1");
    assert_eq!(host.payment_callbacks("wd_h"), 0, "not yet arrived");
    assert!(
        eventually(|| host.payment_callbacks("wd_h") == 2).await,
        "both late callbacks arrived, the second a duplicate"
    );
    assert_eq!(delivered(&a.status("wd_h").await.unwrap()), reference);
    assert_eq!(fake.paid_count("wd_h"), 1);
    // Every callback the fake ever sent is answered: the held payment's two, so none
    // for the payment whose callbacks were missing (an event, not a wait).
    assert!(eventually(|| fake.callbacks_answered() == 2).await);
    assert_eq!(host.results.hint("wd_m").await, None);
}

#[tokio::test]
async fn results_for_another_payout_duplicated_or_late_change_nothing() {
    let (fake, host, a) = setup().await;
    fake.set_payment_callbacks(0, Duration::ZERO);
    a.submit(&payout("wd_a", "100")).await.unwrap();
    a.submit(&payout("wd_b", "200")).await.unwrap();
    let ra = delivered(&a.status("wd_a").await.unwrap());
    // Keep wd_b's status-query results: they arrive and are recorded, and a copy of
    // one is then replayed at wd_a's URL (right token, another payout's ids).
    fake.set_hold(false);
    fake.set_query_results(2, Duration::ZERO);
    let rb = delivered(&a.status("wd_b").await.unwrap());
    assert!(
        eventually(|| host.query_results("wd_b") >= 2).await,
        "duplicated"
    );
    assert_eq!(delivered(&a.status("wd_b").await.unwrap()), rb);
    let other = format!(
        r#"{{"Result":{{"ResultType":0,"ResultCode":0,"ResultDesc":"ok",
        "OriginatorConversationID":"q-b","ConversationID":"AG_b_query",
        "TransactionID":"{rb}","ResultParameters":{{"ResultParameter":[
        {{"Key":"OriginatorConversationID","Value":"wd_b"}},
        {{"Key":"TransactionStatus","Value":"Completed"}},{{"Key":"ReceiptNo","Value":"{rb}"}},
        {{"Key":"Amount","Value":200}},{{"Key":"CreditPartyName","Value":"{PARTY_B} - X"}}]}}}}}}"#
    );
    let before = host.mismatches();
    assert_eq!(post(&host.url_of("wd_a"), &other).await, 409);
    assert_eq!(host.mismatches(), before + 1);
    // A late "failed" answer to wd_a after its status said delivered: forward only.
    let late = r#"{"Result":{"ResultType":0,"ResultCode":0,"ResultDesc":"ok",
        "OriginatorConversationID":"q-a","ConversationID":"AG_late",
        "ResultParameters":{"ResultParameter":[
        {"Key":"OriginatorConversationID","Value":"wd_a"},
        {"Key":"TransactionStatus","Value":"Reversed"},{"Key":"ReasonType","Value":"x"}]}}}"#;
    post(&host.url_of("wd_a"), late).await;
    assert_eq!(delivered(&a.status("wd_a").await.unwrap()), ra);
    assert_eq!(fake.paid_count("wd_a"), 1);
    assert_eq!(fake.paid_count("wd_b"), 1);
}

#[tokio::test]
async fn results_reach_every_node_through_the_database() {
    // Two adapters (two nodes), each with its own results store over one database:
    // node 2 asks, Daraja answers at node 1's route, and node 2 reads the answer.
    let (fake, host, a) = setup().await;
    let own = Arc::new(MpesaResults::new(host.store.clone()));
    let node2 = MpesaB2c::new(config(&fake, &host), own).unwrap();
    a.submit(&payout("wd_n", "100")).await.unwrap();
    let r = delivered(&node2.status("wd_n").await.unwrap());
    assert_eq!(delivered(&a.status("wd_n").await.unwrap()), r);
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
