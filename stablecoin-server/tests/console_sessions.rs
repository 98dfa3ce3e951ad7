//! Sessions and sign-ins of the web consoles over real HTTP on loopback (issue #44):
//! stored sessions that sign-out, key revocation, staff disable and admin-token rotation
//! end at once; a sign-in form that expires after ten minutes; failed sign-ins
//! throttled per source and per credential (429 with `Retry-After`) on the dashboard,
//! the staff console and `/admin/v1`, and every checked sign-in audited; cookies
//! `__Host-` prefixed and `Secure` by configuration only.

use crate::common::console::Console;
use crate::common::*;
use stablecoin_server::config::{Secret, StorageConfig};

const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";
const OTHER_TOKEN: &str = "admin-token-rotated-0123456789abcdef-98";

fn with_admin(token: &str) -> stablecoin_server::config::Config {
    let mut c = test_config();
    c.admin.token = Some(Secret::new(token));
    c
}

async fn staff_sign_in(base: &str, secret: &str) -> Console {
    let mut c = Console::new(base);
    let csrf = c.csrf("/console/login").await;
    let r = c
        .post(
            "/console/login",
            &[("csrf", &csrf), ("staff_secret", secret)],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
    c
}

/// A client that presents `cookies` (copied from another) and nothing else.
fn replay(base: &str, from: &Console) -> Console {
    let mut c = Console::new(base);
    c.cookies = from.cookies.clone();
    c
}

#[tokio::test]
async fn a_cookie_replayed_after_sign_out_is_no_session() {
    let s = start_with(with_admin(ADMIN_TOKEN)).await;
    let acme = s.tenant("Acme", "0").await;

    let mut d = Console::sign_in(&s.base, &acme.live).await;
    let copy = replay(&s.base, &d);
    assert_eq!(replay(&s.base, &d).get("/dashboard").await.status, 200);
    let csrf = d.csrf("/dashboard").await;
    let r = d.post("/dashboard/logout", &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 303);
    let mut copy = copy;
    let r = copy.get("/dashboard").await;
    assert_eq!(r.status, 303, "the copied cookie died with the sign-out");
    assert_eq!(r.location.as_deref(), Some("/dashboard/login?ended=1"));
    // The key itself still works: signing out ended the session, not the key.
    s.get(&acme.live, "/v1/transfers").await.expect(200);

    let mut c = staff_sign_in(&s.base, ADMIN_TOKEN).await;
    let copy = replay(&s.base, &c);
    let csrf = c.csrf("/console").await;
    let r = c.post("/console/logout", &[("csrf", &csrf)]).await;
    assert_eq!(r.status, 303);
    let mut copy = copy;
    let r = copy.get("/console").await;
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(r.location.as_deref(), Some("/console/login?ended=1"));
}

#[tokio::test]
async fn rotating_the_admin_token_or_disabling_staff_ends_console_sessions() {
    let dir = temp_dir("console-rotation");
    let durable = |token: &str| {
        let mut c = with_admin(token);
        c.storage = StorageConfig::Sqlite {
            path: Some(dir.join("db.sqlite")),
            max_background: 4,
        };
        c
    };
    let mut s = start_with(durable(ADMIN_TOKEN)).await;
    let ada = s.app.engine().create_staff("ada").await.unwrap();
    let by_token = staff_sign_in(&s.base, ADMIN_TOKEN).await;
    let mut by_ada = staff_sign_in(&s.base, &ada.secret).await;
    assert_eq!(replay(&s.base, &by_token).get("/console").await.status, 200);
    assert_eq!(by_ada.get("/console").await.status, 200);
    s.app.engine().disable_staff(&ada.account.id).await.unwrap();
    let r = by_ada.get("/console").await;
    assert_eq!(r.location.as_deref(), Some("/console/login?ended=1"));
    s.shutdown().await;

    // The same deployment (store, seed) restarted with a rotated token.
    let s = start_with(durable(OTHER_TOKEN)).await;
    let r = replay(&s.base, &by_token).get("/console").await;
    assert_eq!(r.status, 303, "the old token's session ended: {}", r.body);
    assert_eq!(r.location.as_deref(), Some("/console/login?ended=1"));
    // The new token opens a session as before.
    let mut fresh = staff_sign_in(&s.base, OTHER_TOKEN).await;
    assert_eq!(fresh.get("/console").await.status, 200);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_sign_in_form_expires_after_ten_minutes() {
    let (s, clock) = start_shifted(test_config()).await;
    let acme = s.tenant("Acme", "0").await;
    let mut c = Console::new(&s.base);
    let csrf = c.csrf("/dashboard/login").await;
    clock.advance_ms(11 * 60_000);
    let r = c
        .post(
            "/dashboard/login",
            &[("csrf", &csrf), ("api_key", &acme.live)],
        )
        .await;
    assert_eq!(r.status, 403, "a form shown 11 minutes ago: {}", r.body);
    assert!(r.body.contains("CSRF_TOKEN_INVALID"));
    // A fresh form signs in.
    let csrf = c.csrf("/dashboard/login").await;
    let r = c
        .post(
            "/dashboard/login",
            &[("csrf", &csrf), ("api_key", &acme.live)],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
}

/// Posts the dashboard's sign-in form with `key`.
async fn dashboard_attempt(c: &mut Console, key: &str) -> crate::common::console::Page {
    let csrf = c.csrf("/dashboard/login").await;
    c.post("/dashboard/login", &[("csrf", &csrf), ("api_key", key)])
        .await
}

#[tokio::test]
async fn failed_sign_ins_are_throttled_per_source_and_every_attempt_is_audited() {
    let mut cfg = with_admin(ADMIN_TOKEN);
    cfg.consoles.sign_in_max_failures = 3;
    cfg.consoles.sign_in_lockout_s = 600;
    let s = start_with(cfg).await;
    let acme = s.tenant("Acme", "0").await;

    // The dashboard: a success is audited with the key's id.
    let mut ok = Console::new(&s.base);
    let r = dashboard_attempt(&mut ok, &acme.live).await;
    assert_eq!(r.status, 303);
    let mut c = Console::new(&s.base);
    for i in 0..3 {
        let r = dashboard_attempt(&mut c, &format!("svc_sk_live_{:032}", i)).await;
        assert_eq!(r.status, 401, "{}", r.body);
    }
    // Locked out: even the right key is not checked.
    let r = dashboard_attempt(&mut c, &acme.live).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.body.contains("RATE_LIMITED"));
    let wait: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=600).contains(&wait), "{wait}");
    // The same source on the staff console and on /admin/v1: locked out too.
    let mut st = Console::new(&s.base);
    let csrf = st.csrf("/console/login").await;
    let r = st
        .post(
            "/console/login",
            &[("csrf", &csrf), ("staff_secret", ADMIN_TOKEN)],
        )
        .await;
    assert_eq!(r.status, 429, "{}", r.body);
    let r = s
        .send(
            reqwest::Method::GET,
            "/admin/v1/audit",
            None,
            None,
            &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))],
        )
        .await;
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(r.header("retry-after").is_some());

    let (audit, _) = s.app.engine().staff_audit(100, 1).await.unwrap();
    let signins: Vec<_> = audit
        .iter()
        .filter(|a| a.action == "signin.dashboard")
        .collect();
    assert_eq!(
        signins.len(),
        4,
        "one success and three failures: {audit:?}"
    );
    assert!(signins.iter().any(|a| {
        a.staff_id == format!("key:{}", acme.live_key_id.0)
            && a.note
                .as_deref()
                .is_some_and(|n| n.starts_with("ok from 127.0.0.1"))
    }));
    assert_eq!(
        signins
            .iter()
            .filter(|a| a.staff_id == "unknown"
                && a.note
                    .as_deref()
                    .is_some_and(|n| n.starts_with("INVALID_API_KEY")))
            .count(),
        3
    );
    for a in &audit {
        assert!(
            !a.note.as_deref().unwrap_or("").contains("svc_sk_"),
            "no credential in the audit"
        );
    }
}

#[tokio::test]
async fn admin_api_and_console_failures_are_throttled_per_credential_behind_a_trusted_proxy() {
    let mut cfg = with_admin(ADMIN_TOKEN);
    cfg.consoles.sign_in_max_failures = 3;
    cfg.consoles.trusted_proxies = vec!["127.0.0.1/32".into()];
    let s = start_with(cfg).await;
    let bad = "wrong-token-0123456789abcdef-0123456789";
    let admin = |token: &'static str, client: &'static str| {
        let s = &s;
        async move {
            s.send(
                reqwest::Method::GET,
                "/admin/v1/audit",
                None,
                None,
                &[
                    ("authorization", &format!("Bearer {token}")),
                    ("x-forwarded-for", client),
                ],
            )
            .await
        }
    };
    // The same wrong token from three addresses (as the trusted proxy reports them).
    for ip in ["203.0.113.1", "203.0.113.2", "203.0.113.3"] {
        admin(bad, ip).await.expect_err(401, "ADMIN_TOKEN_REQUIRED");
    }
    // A fourth address with that token: the credential is locked out.
    let r = admin(bad, "203.0.113.4").await;
    assert_eq!(r.status, 429, "{}", r.text());
    // The right token from a fresh address still works (neither is locked).
    admin(ADMIN_TOKEN, "203.0.113.5").await.expect(200);
    let (audit, _) = s.app.engine().staff_audit(100, 1).await.unwrap();
    let fails: Vec<_> = audit
        .iter()
        .filter(|a| a.action == "signin.admin_api" && a.staff_id == "unknown")
        .collect();
    assert_eq!(fails.len(), 3, "{audit:?}");
    assert!(fails.iter().any(|a| a.target == "203.0.113.2"));
    // The success is audited once per credential and source, not per request.
    admin(ADMIN_TOKEN, "203.0.113.5").await.expect(200);
    let (audit, _) = s.app.engine().staff_audit(100, 1).await.unwrap();
    let ok: Vec<_> = audit
        .iter()
        .filter(|a| a.action == "signin.admin_api" && a.staff_id == "admin-token")
        .collect();
    assert_eq!(ok.len(), 1, "{audit:?}");
    assert_eq!(ok[0].target, "203.0.113.5");

    // Without a trusted proxy, a client's X-Forwarded-For is ignored: it cannot
    // dodge its own lockout by naming another address.
    let mut cfg = with_admin(ADMIN_TOKEN);
    cfg.consoles.sign_in_max_failures = 2;
    let s = start_with(cfg).await;
    for (i, ip) in ["198.51.100.1", "198.51.100.2"].into_iter().enumerate() {
        let mut c = Console::new(&s.base);
        c.extra.push(("x-forwarded-for".into(), ip.into()));
        let csrf = c.csrf("/console/login").await;
        let r = c
            .post(
                "/console/login",
                &[("csrf", &csrf), ("staff_secret", &format!("nope-{i}"))],
            )
            .await;
        assert_eq!(r.status, 401, "{}", r.body);
    }
    let mut c = Console::new(&s.base);
    c.extra
        .push(("x-forwarded-for".into(), "198.51.100.9".into()));
    let csrf = c.csrf("/console/login").await;
    let r = c
        .post(
            "/console/login",
            &[("csrf", &csrf), ("staff_secret", ADMIN_TOKEN)],
        )
        .await;
    assert_eq!(r.status, 429, "{}", r.body);
    let (audit, _) = s.app.engine().staff_audit(100, 1).await.unwrap();
    assert!(
        audit
            .iter()
            .filter(|a| a.action == "signin.console")
            .all(|a| a.target == "127.0.0.1"),
        "{audit:?}"
    );
}

#[tokio::test]
async fn cookies_are_host_prefixed_and_secure_by_configuration_only() {
    // `public_url` with https: `__Host-` and `Secure`, and the session works.
    let mut cfg = test_config();
    cfg.consoles.public_url = Some("https://pay.example.com".into());
    let s = start_with(cfg).await;
    let acme = s.tenant("Acme", "0").await;
    let mut c = Console::new(&s.base);
    let login = c.get("/dashboard/login").await;
    assert!(
        login
            .set_cookies
            .iter()
            .any(|h| h.starts_with("__Host-sc_dashboard_signin=") && h.contains("; Secure")),
        "{:?}",
        login.set_cookies
    );
    let r = c
        .post(
            "/dashboard/login",
            &[("csrf", &login.csrf()), ("api_key", &acme.live)],
        )
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
    let session = r
        .set_cookies
        .iter()
        .find(|h| h.starts_with("__Host-sc_dashboard="))
        .expect("a __Host- session cookie");
    assert!(session.contains("; Path=/;") && session.ends_with("; Secure"));
    assert!(!session.contains("Domain"));
    assert_eq!(c.get("/dashboard").await.status, 200);
    // The unprefixed name is not the session there.
    let mut bare = Console::new(&s.base);
    bare.cookies.insert(
        "sc_dashboard".into(),
        c.cookies["__Host-sc_dashboard"].clone(),
    );
    assert_eq!(bare.get("/dashboard").await.status, 303);

    // Plain HTTP: a client's X-Forwarded-Proto is believed only from a trusted proxy.
    let mut cfg = test_config();
    cfg.consoles.trusted_proxies = vec!["127.0.0.1".into()];
    let s = start_with(cfg).await;
    let mut via_proxy = Console::new(&s.base);
    via_proxy
        .extra
        .push(("x-forwarded-proto".into(), "https".into()));
    let login = via_proxy.get("/dashboard/login").await;
    assert!(
        login
            .set_cookies
            .iter()
            .any(|h| h.starts_with("__Host-") && h.ends_with("; Secure")),
        "{:?}",
        login.set_cookies
    );
    let s = start().await;
    let mut direct = Console::new(&s.base);
    direct
        .extra
        .push(("x-forwarded-proto".into(), "https".into()));
    let login = direct.get("/dashboard/login").await;
    assert!(
        login
            .set_cookies
            .iter()
            .all(|h| !h.starts_with("__Host-") && !h.contains("Secure")),
        "{:?}",
        login.set_cookies
    );
}
