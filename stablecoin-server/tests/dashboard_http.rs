//! The tenant dashboard (`/dashboard`) over real HTTP on loopback, as a browser without
//! JavaScript uses it: sign-in and its cookie, CSRF refusals, two tenants kept apart,
//! secrets shown once, revocation, and pricing that the next transfer follows.
//! `dashboard_browser.rs` drives the same pages in headless Chromium.

use crate::common::console::Console;
use crate::common::*;
use serde_json::json;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

/// Every page of the dashboard a signed-in tenant can read.
const PAGES: &[&str] = &[
    "/dashboard",
    "/dashboard/wallets",
    "/dashboard/operations",
    "/dashboard/escrows",
    "/dashboard/checkout",
    "/dashboard/webhooks",
    "/dashboard/keys",
    "/dashboard/pricing",
];

async fn transfer(s: &Server, key: &str, amount: &str) -> String {
    s.send_usdc(key, A, B, amount).await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn sign_in_gives_a_strict_http_only_session_and_refuses_what_is_not_a_tenant_key() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let mut c = Console::new(&s.base);

    // Not signed in: every page sends the browser to the sign-in page.
    for path in PAGES {
        let r = c.get(path).await;
        assert_eq!(r.status, 303, "{path}");
        assert_eq!(r.location.as_deref(), Some("/dashboard/login"), "{path}");
    }
    let login = c.get("/dashboard/login").await;
    assert_eq!(login.status, 200);
    assert!(
        login.headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("form-action 'self'")
    );
    assert_eq!(login.headers["cache-control"], "no-store");
    let csrf = login.csrf();

    // Without the sign-in form's token: refused, whatever the key.
    let r = c.post("/dashboard/login", &[("api_key", &acme.live)]).await;
    assert_eq!(r.status, 403);
    assert!(r.body.contains("CSRF_TOKEN_INVALID"));
    let mut stranger = Console::new(&s.base);
    let r = stranger
        .post(
            "/dashboard/login",
            &[("csrf", &csrf), ("api_key", &acme.live)],
        )
        .await;
    assert_eq!(r.status, 403, "a token without its pre-session cookie");

    // Unknown, malformed and business keys are refused with a stable code.
    for (key, code) in [
        (
            "svc_sk_live_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "INVALID_API_KEY",
        ),
        ("not a key <script>", "INVALID_API_KEY"),
        (acme.business_live.as_str(), "KEY_KIND_NOT_ALLOWED"),
    ] {
        let csrf = c.csrf("/dashboard/login").await;
        let r = c
            .post("/dashboard/login", &[("csrf", &csrf), ("api_key", key)])
            .await;
        assert_eq!(r.status, 401, "{key}: {}", r.body);
        assert!(r.body.contains(code), "{key}: {}", r.body);
        assert!(
            !r.body.contains(key) || key.starts_with("not"),
            "the key is never echoed"
        );
        assert!(!r.body.contains("<script>"));
    }

    // A tenant key: a session cookie, HttpOnly and SameSite=Strict, Secure only over TLS.
    let csrf = c.csrf("/dashboard/login").await;
    let r = c
        .post(
            "/dashboard/login",
            &[("csrf", &csrf), ("api_key", &acme.live)],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
    let session = r
        .set_cookies
        .iter()
        .find(|h| h.starts_with("sc_dashboard="))
        .expect("session cookie");
    assert!(session.contains("HttpOnly") && session.contains("SameSite=Strict"));
    assert!(!session.contains("Secure"), "plain HTTP on loopback");
    assert!(
        !session.contains(&acme.live),
        "the cookie carries no secret"
    );
    for path in PAGES {
        let r = c.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(r.body.contains("Acme"), "{path}");
        assert!(r.body.contains(">LIVE<"), "{path}: the mode badge");
        assert!(
            !r.body.contains(&acme.live),
            "{path}: the key is never shown"
        );
    }
    // A client's own X-Forwarded-Proto does not make the cookie Secure: only
    // configuration does (`consoles.public_url`, trusted proxies; see
    // `cookies_are_host_prefixed_and_secure_by_configuration_only`).
    let mut tls = Console::new(&s.base);
    tls.extra.push(("x-forwarded-proto".into(), "https".into()));
    let csrf = tls.csrf("/dashboard/login").await;
    let r = tls
        .post(
            "/dashboard/login",
            &[("csrf", &csrf), ("api_key", &acme.test)],
        )
        .await;
    let cookie = r
        .set_cookies
        .iter()
        .find(|h| h.starts_with("sc_dashboard="))
        .unwrap();
    assert!(!cookie.contains("Secure"), "{cookie}");
    let r = tls.get("/dashboard").await;
    assert!(
        r.body.contains("TEST MODE"),
        "a test key's session is the sandbox's"
    );

    // A forged cookie (another session's id under this signature) is no session.
    let mut forged = Console::new(&s.base);
    let value = c.cookies["sc_dashboard"].replacen("css_", "css_0", 1);
    forged.cookies.insert("sc_dashboard".into(), value);
    assert_eq!(forged.get("/dashboard").await.status, 303);

    // Signing out needs the token too, then clears the cookie.
    let r = c.post("/dashboard/logout", &[]).await;
    assert_eq!(r.status, 403);
    let csrf = c.csrf("/dashboard").await;
    let r = c.post("/dashboard/logout", &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 303);
    assert_eq!(c.get("/dashboard").await.status, 303);
}

#[tokio::test]
async fn forms_without_this_sessions_csrf_token_are_refused_and_change_nothing() {
    let mut cfg = test_config();
    cfg.webhooks_allow_loopback_http = true;
    let s = start_with(cfg).await;
    let acme = s.tenant("Acme", "0").await;
    let beta = s.tenant("Beta", "0").await;
    let mut a = Console::sign_in(&s.base, &acme.live).await;
    let mut b = Console::sign_in(&s.base, &beta.live).await;
    let a_token = a.csrf("/dashboard/keys").await;
    let b_token = b.csrf("/dashboard/keys").await;
    let a_other_session = Console::sign_in(&s.base, &acme.live).await;
    let keys_before = s
        .app
        .engine()
        .list_api_keys(&acme.id, 100, 0)
        .await
        .unwrap()
        .1;
    let posts: &[(&str, &[(&str, &str)])] = &[
        ("/dashboard/keys", &[("mode", "test")]),
        (
            "/dashboard/pricing",
            &[
                ("mode", "FLAT"),
                ("fee_flat", "1"),
                ("fee_address", "0x00000000000000000000000000000000000000aa"),
            ],
        ),
        (
            "/dashboard/webhooks",
            &[
                ("url", "http://127.0.0.1:9/hooks"),
                ("event:transfer.settled", "on"),
            ],
        ),
        ("/dashboard/keys/key_x/revoke", &[]),
        ("/dashboard/escrows/esc_x/release", &[]),
        ("/dashboard/webhook-events/evt_x/replay", &[]),
    ];
    for (path, fields) in posts {
        let before = s.commits();
        // No token, another tenant's token, and a token of another session of the same
        // tenant: all refused with 403 before anything is read or written.
        for token in [None, Some(b_token.as_str()), Some("0".repeat(64).as_str())] {
            let mut f: Vec<(&str, &str)> = fields.to_vec();
            if let Some(t) = token {
                f.push(("csrf", t));
            }
            let r = a.post(path, &f).await;
            assert_eq!(r.status, 403, "{path} {token:?}: {}", r.body);
            assert!(r.body.contains("CSRF_TOKEN_INVALID"));
        }
        assert_eq!(s.commits(), before, "{path}: a refused form writes nothing");
    }
    let _ = a_other_session;
    assert_eq!(
        s.app
            .engine()
            .list_api_keys(&acme.id, 100, 0)
            .await
            .unwrap()
            .1,
        keys_before
    );
    // With the session's own token the same form works (a live session issues live
    // keys).
    let r = a
        .post("/dashboard/keys", &[("csrf", &a_token), ("mode", "live")])
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(
        s.app
            .engine()
            .list_api_keys(&acme.id, 100, 0)
            .await
            .unwrap()
            .1,
        keys_before + 1
    );
}

#[tokio::test]
async fn no_page_shows_another_tenants_data() {
    let mut cfg = test_config();
    cfg.webhooks_allow_loopback_http = true;
    let s = start_with(cfg).await;
    let acme = s.tenant("Acme", "1000").await;
    let beta = s.tenant("Beta", "1000").await;
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    s.fund_settled(&acme.live, A, "100").await;
    let tr = transfer(&s, &acme.live, "10").await;
    s.settle().await;
    let r = s
        .post(
            &acme.live,
            "/v1/escrows",
            &json!({"buyer_phone_number": A, "seller_phone_number": B, "amount": "5",
                "reference": "acme-order-7"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let esc = r.json()["id"].as_str().unwrap().to_string();
    let (url, _got) = webhook_receiver::recording_receiver().await;
    let ep = s
        .post(
            &acme.live,
            "/v1/webhook-endpoints",
            &json!({"url": url, "events": ["transfer.settled"]}).to_string(),
        )
        .await;
    ep.expect(201);
    let ep_id = ep.json()["id"].as_str().unwrap().to_string();

    let mut a = Console::sign_in(&s.base, &acme.live).await;
    let mut b = Console::sign_in(&s.base, &beta.live).await;
    // Acme sees its own.
    let ops = a.get("/dashboard/operations?kind=transfer").await;
    assert!(ops.body.contains(&tr), "{}", ops.body);
    assert!(a.get("/dashboard/escrows").await.body.contains(&esc));
    assert!(a.get("/dashboard/webhooks").await.body.contains(&ep_id));
    assert_eq!(
        a.get(&format!("/dashboard/operations/{tr}")).await.status,
        200
    );
    assert_eq!(
        a.get(&format!("/dashboard/escrows/{esc}")).await.status,
        200
    );
    let acme_keys = s
        .app
        .engine()
        .list_api_keys(&acme.id, 100, 0)
        .await
        .unwrap()
        .0;

    // Beta sees none of it, on any page, listed or by id.
    let acme_marks: Vec<String> = [
        tr.clone(),
        esc.clone(),
        ep_id.clone(),
        "acme-order-7".into(),
        "Acme".into(),
        A.into(),
    ]
    .into_iter()
    .chain(acme_keys.iter().map(|k| k.id.0.clone()))
    .collect();
    let mut pages: Vec<String> = PAGES.iter().map(|p| p.to_string()).collect();
    for kind in ["funding", "transfer", "swap", "withdrawal"] {
        pages.push(format!("/dashboard/operations?kind={kind}"));
    }
    for path in &pages {
        let r = b.get(path).await;
        assert_eq!(r.status, 200, "{path}");
        for mark in &acme_marks {
            assert!(
                !r.body.contains(mark.as_str()),
                "{path} shows Acme's {mark}"
            );
        }
    }
    for path in [
        format!("/dashboard/operations/{tr}"),
        format!("/dashboard/escrows/{esc}"),
    ] {
        let r = b.get(&path).await;
        assert_eq!(r.status, 404, "{path}: {}", r.body);
        assert!(!r.body.contains("acme-order-7"));
    }
    // A member-only read: Beta is not a member of Acme's customer's wallet.
    let r = b
        .get("/dashboard/wallets?phone_number=%2B2250700000001")
        .await;
    assert!(
        r.status == 403 || r.status == 404,
        "{}: {}",
        r.status,
        r.body
    );
    assert!(
        !r.body.contains("0x"),
        "no address of a wallet Beta is not a member of"
    );
    // Beta's actions on Acme's objects are "not found", and change nothing.
    let token = b.csrf("/dashboard").await;
    let before = s.commits();
    for path in [
        format!("/dashboard/escrows/{esc}/cancel"),
        format!("/dashboard/webhooks/{ep_id}/rotate"),
        format!("/dashboard/webhooks/{ep_id}/disable"),
        format!("/dashboard/keys/{}/revoke", acme.live_key_id.0),
    ] {
        let r = b.post(&path, &[("csrf", &token)]).await;
        assert_eq!(r.status, 404, "{path}: {}", r.body);
    }
    assert_eq!(s.commits(), before);
    // Acme's key still works.
    s.get(&acme.live, "/v1/transfers").await.expect(200);
}

#[tokio::test]
async fn secrets_are_shown_once_and_never_again() {
    let mut cfg = test_config();
    cfg.webhooks_allow_loopback_http = true;
    let s = start_with(cfg).await;
    let acme = s.tenant("Acme", "0").await;
    let mut c = Console::sign_in(&s.base, &acme.live).await;
    let (url, _got) = webhook_receiver::recording_receiver().await;

    let token = c.csrf("/dashboard/webhooks").await;
    let r = c
        .post(
            "/dashboard/webhooks",
            &[
                ("csrf", &token),
                ("url", &url),
                ("event:transfer.settled", "on"),
            ],
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let secret = secret_in(&r.body);
    assert!(secret.starts_with("svcwh_"), "{secret}");
    let ep = s
        .app
        .state()
        .webhooks
        .list_endpoints(&acme.id, 10, 0)
        .await
        .unwrap()
        .0;
    let ep_id = ep[0].id.0.clone();

    let r = c
        .post(
            &format!("/dashboard/webhooks/{ep_id}/rotate"),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rotated = secret_in(&r.body);
    assert_ne!(rotated, secret);
    assert!(!r.body.contains(&secret));

    let r = c
        .post("/dashboard/keys", &[("csrf", &token), ("mode", "live")])
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let key = secret_in(&r.body);
    assert!(key.starts_with("svc_sk_live_"));
    // The new key works on the API.
    s.get(&key, "/v1/transfers").await.expect(200);

    // No page shows any of them again (nor the key the session signed in with).
    for path in PAGES {
        let r = c.get(path).await;
        assert_eq!(r.status, 200, "{path}");
        for secret in [&secret, &rotated, &key, &acme.live] {
            assert!(
                !r.body.contains(secret.as_str()),
                "{path} shows a secret again"
            );
        }
    }
}

/// The value in a page's one-time display.
fn secret_in(html: &str) -> String {
    let at = html.find("id=\"secret\">").expect("a secret shown once") + "id=\"secret\">".len();
    let end = html[at..].find('<').unwrap();
    html[at..at + end].to_string()
}

#[tokio::test]
async fn revoking_a_key_refuses_its_next_request_and_ends_its_sessions() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let mut c = Console::sign_in(&s.base, &acme.live).await;
    // A key issued from this session (the session may revoke it).
    let token = c.csrf("/dashboard/keys").await;
    let r = c
        .post("/dashboard/keys", &[("csrf", &token), ("mode", "live")])
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let extra = secret_in(&r.body);
    let extra_id = s.app.engine().authenticate(&extra).await.unwrap().key_id;
    s.get(&extra, "/v1/transfers").await.expect(200);
    let mut by_extra = Console::sign_in(&s.base, &extra).await;
    let r = c
        .post(
            &format!("/dashboard/keys/{}/revoke", extra_id.0),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("REVOKED"));
    s.get(&extra, "/v1/transfers")
        .await
        .expect_err(401, "API_KEY_REVOKED");
    let r = by_extra.get("/dashboard").await;
    assert_eq!(r.status, 303);
    assert_eq!(r.location.as_deref(), Some("/dashboard/login?ended=1"));
    // A test session cannot revoke a live key.
    let mut t = Console::sign_in(&s.base, &acme.test).await;
    let token = t.csrf("/dashboard/keys").await;
    let r = t
        .post(
            &format!("/dashboard/keys/{}/revoke", acme.live_key_id.0),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    s.get(&acme.live, "/v1/transfers").await.expect(200);
    // Revoking the session's own key signs it out.
    let token = c.csrf("/dashboard/keys").await;
    let r = c
        .post(
            &format!("/dashboard/keys/{}/revoke", acme.live_key_id.0),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(r.status, 303);
    assert_eq!(c.get("/dashboard").await.status, 303);
}

#[tokio::test]
async fn pricing_set_in_the_dashboard_prices_the_next_transfer() {
    let s = start().await;
    let acme = s.tenant("Acme", "1000").await;
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    s.fund_settled(&acme.live, A, "100").await;
    let mut c = Console::sign_in(&s.base, &acme.live).await;
    let token = c.csrf("/dashboard/pricing").await;
    let fee_address = "0x00000000000000000000000000000000000000fe";
    // Out of the spec's bounds: refused with the engine's code, nothing saved.
    let r = c
        .post(
            "/dashboard/pricing",
            &[
                ("csrf", &token),
                ("mode", "PERCENTAGE"),
                ("fee_bps", "1001"),
                ("fee_address", fee_address),
            ],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("INVALID_PRICING"), "{}", r.body);
    let r = c
        .post(
            "/dashboard/pricing",
            &[
                ("csrf", &token),
                ("mode", "PERCENTAGE"),
                ("fee_bps", "250"),
                ("fee_cap", "1.5"),
                ("fee_address", fee_address),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("Pricing saved"));
    let tr = transfer(&s, &acme.live, "20").await;
    let v = s
        .get(&acme.live, &format!("/v1/transfers/{tr}"))
        .await
        .json();
    assert_eq!(v["tenant_fee"], "0.500000", "2.5% of 20: {v}");
    let r = c
        .post(
            "/dashboard/pricing",
            &[
                ("csrf", &token),
                ("mode", "FLAT"),
                ("fee_flat", "0.25"),
                ("fee_address", fee_address),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let tr = transfer(&s, &acme.live, "20").await;
    let v = s
        .get(&acme.live, &format!("/v1/transfers/{tr}"))
        .await
        .json();
    assert_eq!(v["tenant_fee"], "0.250000", "{v}");
    let page = c.get(&format!("/dashboard/operations/{tr}")).await;
    assert!(page.body.contains("0.250000"), "the detail shows the fee");
    // A test session never changes the tenant's pricing.
    let mut t = Console::sign_in(&s.base, &acme.test).await;
    let token = t.csrf("/dashboard/pricing").await;
    let r = t
        .post("/dashboard/pricing", &[("csrf", &token), ("mode", "NONE")])
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    let tenant = s.app.engine().tenant(&acme.id).await.unwrap();
    assert!(matches!(
        tenant.pricing,
        stablecoin_core::domain::fees::TenantPricing::Flat {
            fee_flat_micros: 250_000
        }
    ));
}
