//! Account-level test mode (spec 1 "Sandbox mode": "test-mode API keys and account test
//! mode prevent live mutations"), set through the API, the CLI and the dashboard's form,
//! over real HTTP on loopback: while it is on, a live key answers every mutation exactly
//! as a test key does and writes nothing live; only a live key changes it.

use crate::common::console::Console;
use crate::common::*;
use clap::Parser;
use reqwest::Method;
use serde_json::{Value, json};
use stablecoin_server::cli::{Cli, run_admin};

const A: &str = "+2250700000601";
const B: &str = "+2250700000602";

macro_rules! writes_nothing {
    ($s:expr, $e:expr) => {{
        let before = $s.commits();
        let r = $e;
        assert_eq!($s.commits(), before, "must write nothing: {}", r.text());
        r
    }};
}

/// The field names of a JSON object, sorted: two simulated answers differ in their
/// fresh ids and times, never in their shape.
fn shape(v: &Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    keys.sort_unstable();
    keys
}

async fn set_mode(s: &Server, key: &str, enabled: bool) -> Resp {
    s.post(
        key,
        "/v1/account/test-mode",
        &json!({"enabled": enabled}).to_string(),
    )
    .await
}

/// The mutations a test key has, with a live key of an account in test mode: the same
/// status, code and simulated answer as the test key, and nothing written.
async fn live_key_acts_as_test_key(s: &Server, t: &Tenant) {
    let cases: [(&str, Value); 6] = [
        (
            "/v1/users/provision",
            json!({"phone_number": "+2250700000699"}),
        ),
        (
            "/v1/users/fund",
            json!({"phone_number": A, "token": "USDC", "amount": "5"}),
        ),
        (
            "/v1/transfers/send",
            json!({"from_phone_number": A, "to_phone_number": B, "token": "USDC",
                "quote_id": "DIRECT_CRYPTO:USDC:5"}),
        ),
        (
            "/v1/swaps",
            json!({"phone_number": A, "token_in": "USDC", "token_out": "USDT",
                "amount_in": "5"}),
        ),
        (
            "/v1/webhook-endpoints",
            json!({"url": "https://example.com/hooks", "events": ["transfer.settled"]}),
        ),
        ("/v1/businesses", json!({"name": "Shop"})),
    ];
    for (path, body) in cases {
        let body = body.to_string();
        let live = writes_nothing!(s, s.post(&t.live, path, &body).await);
        let test = writes_nothing!(s, s.post(&t.test, path, &body).await);
        assert_eq!(live.status, test.status, "{path}: {}", live.text());
        assert_eq!(live.header("location"), None, "{path}");
        if live.status < 300 {
            assert_eq!(live.json()["simulated"], true, "{path}: {}", live.text());
            assert_eq!(shape(&live.json()), shape(&test.json()), "{path}");
            assert_eq!(live.json()["status"], test.json()["status"], "{path}");
        } else {
            assert_eq!(live.code(), test.code(), "{path}");
            assert_eq!(live.code(), "SANDBOX_UNSUPPORTED", "{path}");
        }
    }
}

#[tokio::test]
async fn account_test_mode_over_the_api_makes_live_keys_act_as_test_keys() {
    let s = start().await;
    let t = s.tenant("Acme", "1000").await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    s.fund_settled(&t.live, A, "100").await;

    let r = s.get(&t.live, "/v1/account").await;
    r.expect(200);
    assert_eq!(
        r.json(),
        json!({"tenant_id": t.id.0, "name": "Acme", "test_mode": false, "mode": "live"})
    );
    assert_eq!(s.get(&t.test, "/v1/account").await.json()["mode"], "test");
    // A test key never changes it (it would take the account live), and writes nothing.
    writes_nothing!(s, set_mode(&s, &t.test, true).await).expect_err(403, "SANDBOX_UNSUPPORTED");
    writes_nothing!(
        s,
        s.post(&t.live, "/v1/account/test-mode", r#"{"enabled":"yes"}"#)
            .await
    )
    .expect(400);

    let r = set_mode(&s, &t.live, true).await;
    r.expect(200);
    assert_eq!(r.json()["test_mode"], true);
    assert_eq!(r.json()["mode"], "test");
    assert_eq!(s.get(&t.live, "/v1/account").await.json()["mode"], "test");
    let treasury = s.treasury(&t).await;
    live_key_acts_as_test_key(&s, &t).await;
    // Checkout: a live business key creates a test session, as a test business key.
    let session = json!({"amount": "10", "currency": "USDC", "reference": "o-1",
        "networks": ["polygon"]})
    .to_string();
    let r = s
        .post(&t.business_live, "/api/v1/checkout/sessions", &session)
        .await;
    r.expect(201);
    assert_eq!(r.json()["mode"], "test", "{}", r.text());
    // Reads pass through: the live balance is still there; nothing moved.
    let bal = s
        .get(
            &t.live,
            &format!("/v1/users/balance?phone_number=%2B{}", &A[1..]),
        )
        .await;
    bal.expect(200);
    assert_eq!(bal.json()["balance_usdc"], "100.000000");
    assert_eq!(s.treasury(&t).await, treasury);
    // Setting it again changes nothing.
    writes_nothing!(s, set_mode(&s, &t.live, true).await).expect(200);

    // A live key takes it out: live again.
    let r = set_mode(&s, &t.live, false).await;
    r.expect(200);
    assert_eq!(r.json()["mode"], "live");
    let f = s.fund_settled(&t.live, A, "5").await;
    assert_eq!(f["status"], "SETTLED", "{f}");
    assert_eq!(s.treasury(&t).await.get(), treasury.get() - 5_000_000);

    let (audit, _) = s.app.engine().staff_audit(100, 1).await.unwrap();
    let notes: Vec<(String, Option<String>)> = audit
        .iter()
        .filter(|a| a.action == "test_mode.set")
        .map(|a| (a.staff_id.clone(), a.note.clone()))
        .collect();
    let by = format!("key:{}", t.live_key_id.0);
    assert_eq!(
        notes,
        vec![(by.clone(), Some("off".into())), (by, Some("on".into()))],
        "newest first"
    );
    // Another tenant is untouched.
    let other = s.tenant("Beta", "0").await;
    assert_eq!(
        s.get(&other.live, "/v1/account").await.json()["mode"],
        "live"
    );
}

#[tokio::test]
async fn the_cli_puts_an_account_in_test_mode_and_takes_it_out() {
    let s = start().await;
    let t = s.tenant("Acme", "1000").await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    s.fund_settled(&t.live, A, "100").await;
    let cmd = |enabled: &str| {
        Cli::try_parse_from([
            "stablecoin-server",
            "tenant",
            "test-mode",
            "--tenant",
            &t.id.0,
            "--enabled",
            enabled,
        ])
        .unwrap()
        .command
        .unwrap()
    };
    let out = run_admin(s.app.engine(), &cmd("true"), None).await.unwrap();
    assert_eq!(out, json!({"tenant_id": t.id.0, "test_mode": true}));
    live_key_acts_as_test_key(&s, &t).await;
    let out = run_admin(s.app.engine(), &cmd("false"), None)
        .await
        .unwrap();
    assert_eq!(out["test_mode"], false);
    let r = s
        .post(
            &t.live,
            "/v1/users/fund",
            &json!({"phone_number": A, "token": "USDC", "amount": "5"}).to_string(),
        )
        .await;
    r.expect(202);
    assert!(r.header("location").is_some(), "live again: {}", r.text());
    assert!(
        Cli::try_parse_from(["stablecoin-server", "tenant", "test-mode", "--tenant", "x"]).is_err()
    );
}

#[tokio::test]
async fn the_dashboard_form_puts_the_account_in_test_mode_and_takes_it_out() {
    let s = start().await;
    let t = s.tenant("Acme", "1000").await;
    s.provision(&t.live, A).await;
    s.provision(&t.live, B).await;
    s.fund_settled(&t.live, A, "100").await;
    let mut c = Console::sign_in(&s.base, &t.live).await;
    let token = c.csrf("/dashboard/keys").await;
    let page = c.get("/dashboard/keys").await;
    assert!(
        page.body.contains("Account test mode is <strong>off"),
        "{}",
        page.body
    );
    // Without this session's CSRF token: refused, nothing changes.
    let r = c
        .post(
            "/dashboard/test-mode",
            &[("csrf", "nope"), ("enabled", "true")],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(!s.app.engine().tenant(&t.id).await.unwrap().test_mode);
    let r = c
        .post(
            "/dashboard/test-mode",
            &[("csrf", &token), ("enabled", "maybe")],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);

    let r = c
        .post(
            "/dashboard/test-mode",
            &[("csrf", &token), ("enabled", "true")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains("Account test mode is <strong>on"),
        "{}",
        r.body
    );
    assert!(r.body.contains("TEST MODE"), "the badge: {}", r.body);
    live_key_acts_as_test_key(&s, &t).await;
    // The session acts as a test session too: its pricing form is refused.
    let r = c
        .post("/dashboard/pricing", &[("csrf", &token), ("mode", "NONE")])
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    // A test key's session cannot take the account out.
    let mut tc = Console::sign_in(&s.base, &t.test).await;
    let tt = tc.csrf("/dashboard/keys").await;
    let r = tc
        .post(
            "/dashboard/test-mode",
            &[("csrf", &tt), ("enabled", "false")],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("SANDBOX_UNSUPPORTED"), "{}", r.body);
    assert!(s.app.engine().tenant(&t.id).await.unwrap().test_mode);

    let r = c
        .post(
            "/dashboard/test-mode",
            &[("csrf", &token), ("enabled", "false")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body.contains("Account test mode is <strong>off"),
        "{}",
        r.body
    );
    let r = s
        .send(Method::GET, "/v1/account", Some(&t.live), None, &[])
        .await;
    assert_eq!(r.json()["mode"], "live");
}
