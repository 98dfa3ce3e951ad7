//! One-time codes over HTTP: a flood of link requests gets 429 with `Retry-After` and
//! sends no more SMS; wrong codes across many requests lock the subject out (429), and
//! then even the right code is refused.

use crate::common;

use serde_json::json;
use stablecoin_core::domain::phone::Phone;

const A: &str = "+2250700000001";

#[tokio::test]
async fn a_flood_of_link_requests_is_429_and_sends_no_more_sms() {
    let s = common::start().await;
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, A).await;
    let notifier = s.app.state().notifier.clone();
    let before = notifier.sent().len();
    let body = json!({"phone_number": A}).to_string();
    let mut ok = 0;
    for _ in 0..30 {
        let r = s.post(&beta.live, "/v1/users/link/request", &body).await;
        if r.status == 200 {
            ok += 1;
            continue;
        }
        r.expect_err(429, "RATE_LIMITED");
        let retry: u64 = r
            .header("retry-after")
            .expect("Retry-After")
            .parse()
            .unwrap();
        assert!((1..=3600).contains(&retry), "{retry}");
    }
    assert_eq!(ok, 5, "the default allows five codes per wallet an hour");
    assert_eq!(notifier.sent().len() - before, 5, "no SMS past the limit");
}

#[tokio::test]
async fn wrong_codes_across_requests_lock_out_and_then_the_right_code_is_refused() {
    let s = common::start().await;
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    s.provision(&acme.live, A).await;
    let notifier = s.app.state().notifier.clone();
    let phone = Phone::parse(A).unwrap();
    let request = json!({"phone_number": A}).to_string();
    let mut code = String::new();
    for i in 0..5 {
        s.post(&beta.live, "/v1/users/link/request", &request)
            .await
            .expect(200);
        code = notifier.last_code_to(&phone).unwrap();
        let wrong = format!("{:06}", (code.parse::<u32>().unwrap() + 1) % 1_000_000);
        let r = s
            .post(
                &beta.live,
                "/v1/users/link/confirm",
                &json!({"phone_number": A, "code": wrong}).to_string(),
            )
            .await;
        if i < 4 {
            r.expect_err(422, "CODE_INVALID");
        } else {
            r.expect_err(429, "TOO_MANY_ATTEMPTS");
            assert_eq!(r.header("retry-after").as_deref(), Some("3600"));
        }
    }
    s.post(
        &beta.live,
        "/v1/users/link/confirm",
        &json!({"phone_number": A, "code": code}).to_string(),
    )
    .await
    .expect_err(429, "TOO_MANY_ATTEMPTS");
    s.post(&beta.live, "/v1/users/link/request", &request)
        .await
        .expect_err(429, "TOO_MANY_ATTEMPTS");
}
