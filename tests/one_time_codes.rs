//! One-time codes through `Engine` alone: request limits, the lockout after too many
//! wrong codes across requests, and answers that do not depend on races (issue #26,
//! item 1: link-code brute force).

use stablecoin::core::domain::ids::TenantId;
use stablecoin::core::domain::otp::OtpPolicy;
use stablecoin::core::domain::phone::Phone;
use stablecoin::core::domain::time::Timestamp;
use stablecoin::core::engine::{Engine, EngineConfig, Ports};
use stablecoin::core::memory::{
    FixedRates, LocalSigner, ManualClock, MemoryNotifier, MemoryPayouts, MemoryStore, SeededEntropy,
};
use stablecoin::core::ports::Store;
use stablecoin::core::{CoreError, CoreResult};
use stablecoin::rails::sim::{SimConfig, SimProfile, SimRail};
use std::sync::Arc;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

struct H {
    engine: Engine,
    store: Arc<MemoryStore>,
    notifier: Arc<MemoryNotifier>,
    clock: Arc<ManualClock>,
}

fn phone(s: &str) -> Phone {
    Phone::parse(s).unwrap()
}

fn harness(otp: OtpPolicy) -> H {
    let store = Arc::new(MemoryStore::new());
    let signer = Arc::new(LocalSigner::from_seed([3; 32]));
    let sim = Arc::new(SimRail::new(
        SimProfile::Evm(137),
        signer.clone(),
        SimConfig::for_profile(SimProfile::Evm(137)),
    ));
    let notifier = Arc::new(MemoryNotifier::new());
    let clock = Arc::new(ManualClock::new(Timestamp::from_secs(1_795_341_600)));
    let ports = Ports {
        store: store.clone(),
        ledger: store.clone(),
        signer,
        notifier: notifier.clone(),
        rates: Arc::new(FixedRates::demo()),
        payouts: Arc::new(MemoryPayouts::new()),
        clock: clock.clone(),
        entropy: Arc::new(SeededEntropy::new(5)),
    };
    let config = EngineConfig {
        otp,
        ..Default::default()
    };
    H {
        engine: Engine::new(ports, vec![sim], config),
        store,
        notifier,
        clock,
    }
}

impl H {
    /// Acme owns A's wallet; Beta is the tenant asking to link.
    async fn two_tenants(&self) -> (TenantId, TenantId) {
        let acme = self.engine.create_tenant("Acme").await.unwrap().id;
        let beta = self.engine.create_tenant("Beta").await.unwrap().id;
        self.engine.provision(&acme, &phone(A)).await.unwrap();
        (acme, beta)
    }

    fn code_to(&self, p: &str) -> String {
        self.notifier
            .last_code_to(&phone(p))
            .expect("a code was sent")
    }

    fn sms_count(&self) -> usize {
        self.notifier.sent().len()
    }

    async fn confirm(&self, t: &TenantId, code: &str) -> CoreResult<String> {
        self.engine
            .link_confirm(t, &phone(A), code)
            .await
            .map(|v| v.outcome)
    }
}

/// A code that is not `code`.
fn wrong(code: &str, n: u32) -> String {
    let c: u32 = code.parse().unwrap();
    format!("{:06}", (c + 1 + n) % 1_000_000)
}

#[tokio::test]
async fn brute_force_across_many_requests_locks_out_after_the_limit_in_total() {
    let policy = OtpPolicy {
        max_failed_attempts: 5,
        max_requests_per_subject: 100,
        ..OtpPolicy::default()
    };
    let h = harness(policy.clone());
    let (_, beta) = h.two_tenants().await;
    // A new request per guess: before the guard, each request reset the budget.
    for i in 0..4u32 {
        h.engine.link_request(&beta, &phone(A)).await.unwrap();
        let code = h.code_to(A);
        assert_eq!(
            h.confirm(&beta, &wrong(&code, i)).await,
            Err(CoreError::CodeInvalid {
                attempts_left: 4 - i
            }),
            "wrong code {i}"
        );
    }
    h.engine.link_request(&beta, &phone(A)).await.unwrap();
    let code = h.code_to(A);
    assert_eq!(
        h.confirm(&beta, &wrong(&code, 9)).await,
        Err(CoreError::TooManyAttempts {
            retry_after_ms: policy.lockout_ms
        }),
        "the fifth wrong code in total locks the subject out"
    );
    // Locked out: the right code is refused, and so is a new request (no SMS).
    let sent = h.sms_count();
    h.clock.advance_ms(1_000);
    assert_eq!(
        h.confirm(&beta, &code).await.unwrap_err().code(),
        "TOO_MANY_ATTEMPTS"
    );
    assert_eq!(
        h.engine
            .link_request(&beta, &phone(A))
            .await
            .unwrap_err()
            .retry_after_ms(),
        Some(policy.lockout_ms - 1_000)
    );
    assert_eq!(h.sms_count(), sent, "no SMS while locked out");
    // Another tenant is a different subject: not locked by Beta's guesses.
    let gamma = h.engine.create_tenant("Gamma").await.unwrap().id;
    h.engine.link_request(&gamma, &phone(A)).await.unwrap();
    // After the lockout Beta may ask again, and the right code links.
    h.clock.advance_ms(policy.lockout_ms);
    h.engine.link_request(&beta, &phone(A)).await.unwrap();
    let code = h.code_to(A);
    assert_eq!(h.confirm(&beta, &code).await.unwrap(), "LINKED");
}

#[tokio::test]
async fn a_flood_of_requests_is_rate_limited_and_sends_no_more_sms() {
    let policy = OtpPolicy::default();
    let h = harness(policy.clone());
    let (_, beta) = h.two_tenants().await;
    let before = h.sms_count();
    let mut limited = 0;
    for _ in 0..30 {
        match h.engine.link_request(&beta, &phone(A)).await {
            Ok(_) => {}
            Err(e @ CoreError::RateLimited { .. }) => {
                assert!(e.retry_after_ms().unwrap() > 0);
                assert!(e.is_retryable());
                limited += 1;
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    let allowed = policy.max_requests_per_subject as usize;
    assert_eq!(limited, 30 - allowed);
    assert_eq!(
        h.sms_count() - before,
        allowed,
        "one SMS per allowed request"
    );
    // The window passes: requests are allowed again.
    h.clock.advance_ms(policy.request_window_ms);
    h.engine.link_request(&beta, &phone(A)).await.unwrap();
}

#[tokio::test]
async fn requests_are_limited_per_destination_phone_and_per_tenant() {
    let policy = OtpPolicy {
        max_requests_per_subject: 100,
        max_requests_per_phone: 3,
        max_requests_per_tenant: 4,
        ..OtpPolicy::default()
    };
    let h = harness(policy);
    let (acme, beta) = h.two_tenants().await;
    // Phone: three tenants ask A's phone; the fourth request to that phone is refused
    // whoever asks.
    let gamma = h.engine.create_tenant("Gamma").await.unwrap().id;
    let delta = h.engine.create_tenant("Delta").await.unwrap().id;
    for t in [&beta, &gamma, &delta] {
        h.engine.link_request(t, &phone(A)).await.unwrap();
    }
    let e = h.engine.link_request(&beta, &phone(A)).await.unwrap_err();
    assert_eq!(e.code(), "RATE_LIMITED");
    assert!(e.to_string().contains("phone number"), "{e}");
    // Tenant: Acme's SMS quota covers all its customers (phone changes to new numbers).
    for i in 0..4 {
        let p = format!("+22507000001{i:02}");
        h.engine.provision(&acme, &phone(&p)).await.unwrap();
        h.engine
            .phone_change_request(&acme, &phone(&p), &phone(&format!("+22507000002{i:02}")))
            .await
            .unwrap();
    }
    h.engine.provision(&acme, &phone(B)).await.unwrap();
    let e = h
        .engine
        .phone_change_request(&acme, &phone(B), &phone("+2250700000399"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "RATE_LIMITED");
    assert!(e.to_string().contains("tenant"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_wrong_guesses_are_each_counted_and_never_answer_conflict() {
    let policy = OtpPolicy {
        max_failed_attempts: 8,
        ..OtpPolicy::default()
    };
    let h = Arc::new(harness(policy));
    let (_, beta) = h.two_tenants().await;
    h.engine.link_request(&beta, &phone(A)).await.unwrap();
    let code = h.code_to(A);
    let mut tasks = Vec::new();
    for i in 0..24u32 {
        let (h, beta, guess) = (h.clone(), beta.clone(), wrong(&code, i));
        tasks.push(tokio::spawn(async move { h.confirm(&beta, &guess).await }));
    }
    let mut invalid = 0;
    let mut locked = 0;
    for t in tasks {
        match t.await.unwrap() {
            Err(CoreError::CodeInvalid { .. }) => invalid += 1,
            Err(CoreError::TooManyAttempts { .. }) => locked += 1,
            other => panic!("a wrong guess answered {other:?}"),
        }
    }
    assert_eq!(invalid, 7, "seven guesses counted before the lockout");
    assert_eq!(locked, 24 - 7);
    assert_eq!(
        h.confirm(&beta, &code).await.unwrap_err().code(),
        "TOO_MANY_ATTEMPTS",
        "every concurrent guess counted: the subject is locked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_right_code_racing_wrong_guesses_links() {
    let policy = OtpPolicy {
        max_failed_attempts: 100,
        ..OtpPolicy::default()
    };
    let h = Arc::new(harness(policy));
    let (_, beta) = h.two_tenants().await;
    h.engine.link_request(&beta, &phone(A)).await.unwrap();
    let code = h.code_to(A);
    let mut tasks = Vec::new();
    for i in 0..12u32 {
        let (h, beta) = (h.clone(), beta.clone());
        let guess = if i == 6 {
            code.clone()
        } else {
            wrong(&code, i)
        };
        tasks.push(tokio::spawn(
            async move { (i, h.confirm(&beta, &guess).await) },
        ));
    }
    for t in tasks {
        let (i, r) = t.await.unwrap();
        if i == 6 {
            assert_eq!(r.as_deref(), Ok("LINKED"), "the right code wins its races");
        } else {
            // Before the link a wrong guess is CODE_INVALID; after it the wallet is
            // already linked, or the code used (no open request is left: NOT_FOUND).
            // Never a CONFLICT.
            let code = r.unwrap_err().code();
            assert!(
                matches!(
                    code,
                    "CODE_INVALID" | "ALREADY_A_MEMBER" | "CODE_ALREADY_USED" | "NOT_FOUND"
                ),
                "guess {i} answered {code}"
            );
        }
    }
}

#[tokio::test]
async fn the_stored_challenge_holds_a_keyed_hash_not_the_code() {
    let h = harness(OtpPolicy::default());
    let (_, beta) = h.two_tenants().await;
    let view = h.engine.link_request(&beta, &phone(A)).await.unwrap();
    let code = h.code_to(A);
    let stored = h
        .store
        .get("challenge", &view.challenge_id)
        .await
        .unwrap()
        .expect("the challenge is stored");
    let body = stored.body.text();
    assert!(!body.contains(&code), "{body}");
    // The unkeyed hash of the previous scheme does not match: a dump alone is not enough.
    use sha2::{Digest, Sha256};
    let unkeyed = Sha256::digest(format!("{}:{code}", view.challenge_id));
    let unkeyed: String = unkeyed.iter().map(|b| format!("{b:02x}")).collect();
    assert!(!body.contains(&unkeyed));
}
