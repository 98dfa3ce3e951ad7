//! What a dashboard session may do and see, over real HTTP on loopback (issue #44): keys
//! of its own mode only, issued under its key and revoked with it; revoking only its
//! own keys; pricing with an EVM fee address, under the self-service ceiling, audited;
//! a test session seeing test-mode data only; and the dashboard counting against the
//! key's API rate limits.

use crate::common::console::Console;
use crate::common::*;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

/// The value in a page's one-time display.
fn secret_in(html: &str) -> String {
    let at = html.find("id=\"secret\">").expect("a secret shown once") + "id=\"secret\">".len();
    let end = html[at..].find('<').unwrap();
    html[at..at + end].to_string()
}

async fn issue(c: &mut Console, mode: &str) -> crate::common::console::Page {
    let token = c.csrf("/dashboard/keys").await;
    c.post("/dashboard/keys", &[("csrf", &token), ("mode", mode)])
        .await
}

#[tokio::test]
async fn keys_issued_in_a_session_have_its_mode_and_die_with_its_key() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let mut live = Console::sign_in(&s.base, &acme.live).await;
    let r = issue(&mut live, "test").await;
    assert_eq!(r.status, 403, "a live session issues live keys only");
    assert!(r.body.contains("KEY_OUT_OF_SCOPE"), "{}", r.body);
    let mut test = Console::sign_in(&s.base, &acme.test).await;
    let r = issue(&mut test, "live").await;
    assert_eq!(r.status, 403);
    assert!(r.body.contains("KEY_OUT_OF_SCOPE"), "{}", r.body);

    // A key minted from the live session, and one minted from a session of that key.
    let r = issue(&mut live, "live").await;
    assert_eq!(r.status, 201, "{}", r.body);
    let child = secret_in(&r.body);
    let mut by_child = Console::sign_in(&s.base, &child).await;
    let r = issue(&mut by_child, "live").await;
    assert_eq!(r.status, 201, "{}", r.body);
    let grandchild = secret_in(&r.body);
    s.get(&grandchild, "/v1/transfers").await.expect(200);

    // The child's session cannot revoke the key it was minted from, nor another key.
    let token = by_child.csrf("/dashboard/keys").await;
    let r = by_child
        .post(
            &format!("/dashboard/keys/{}/revoke", acme.live_key_id.0),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("KEY_OUT_OF_SCOPE"));
    s.get(&acme.live, "/v1/transfers").await.expect(200);

    // Revoking the leaked key (here by the service) takes what it minted with it.
    s.app
        .engine()
        .revoke_api_key(&acme.id, &acme.live_key_id)
        .await
        .unwrap();
    for key in [&acme.live, &child, &grandchild] {
        s.get(key, "/v1/transfers")
            .await
            .expect_err(401, "API_KEY_REVOKED");
    }
    assert_eq!(by_child.get("/dashboard").await.status, 303);
    // The test key, not minted from it, is untouched.
    s.get(&acme.test, "/v1/transfers").await.expect(200);
}

#[tokio::test]
async fn a_session_revokes_only_its_own_key_and_the_keys_it_issued() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let other = s
        .app
        .engine()
        .issue_api_key(
            &acme.id,
            stablecoin_core::engine::KeyKind::Tenant,
            stablecoin_core::engine::KeyMode::Live,
        )
        .await
        .unwrap();
    let mut c = Console::sign_in(&s.base, &acme.live).await;
    let token = c.csrf("/dashboard/keys").await;
    for id in [&other.key.id, &acme_business_key(&s, &acme).await] {
        let r = c
            .post(
                &format!("/dashboard/keys/{}/revoke", id.0),
                &[("csrf", &token)],
            )
            .await;
        assert_eq!(r.status, 403, "{}", r.body);
        assert!(r.body.contains("KEY_OUT_OF_SCOPE"), "{}", r.body);
    }
    s.get(&other.secret, "/v1/transfers").await.expect(200);
}

async fn acme_business_key(s: &Server, acme: &Tenant) -> stablecoin_core::domain::ids::ApiKeyId {
    s.app
        .engine()
        .authenticate(&acme.business_live)
        .await
        .unwrap()
        .key_id
}

async fn set_pricing(c: &mut Console, fields: &[(&str, &str)]) -> crate::common::console::Page {
    let token = c.csrf("/dashboard/pricing").await;
    let mut f = vec![("csrf", token.as_str())];
    f.extend_from_slice(fields);
    c.post("/dashboard/pricing", &f).await
}

#[tokio::test]
async fn pricing_needs_an_evm_fee_address_stays_under_the_ceiling_and_is_audited() {
    let s = start().await;
    let acme = s.tenant("Acme", "0").await;
    let mut c = Console::sign_in(&s.base, &acme.live).await;
    let addr = "0x00000000000000000000000000000000000000fe";
    for bad in [
        "not an address",
        "0x1234",
        "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf",
    ] {
        let r = set_pricing(
            &mut c,
            &[("mode", "FLAT"), ("fee_flat", "0.25"), ("fee_address", bad)],
        )
        .await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert!(r.body.contains("INVALID_PARAMETER"), "{}", r.body);
    }
    // 10% is within the spec's bounds, but above the self-service ceiling (3%).
    let r = set_pricing(
        &mut c,
        &[
            ("mode", "PERCENTAGE"),
            ("fee_bps", "1000"),
            ("fee_address", addr),
        ],
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("FEE_ABOVE_CEILING"), "{}", r.body);
    let r = set_pricing(
        &mut c,
        &[
            ("mode", "FLAT"),
            ("fee_flat", "5.01"),
            ("fee_address", addr),
        ],
    )
    .await;
    assert_eq!(r.status, 403, "{}", r.body);
    let t = s.app.engine().tenant(&acme.id).await.unwrap();
    assert_eq!(
        t.pricing,
        stablecoin_core::domain::fees::TenantPricing::None
    );
    // Within it: saved and audited with the key that did it.
    let r = set_pricing(
        &mut c,
        &[
            ("mode", "PERCENTAGE"),
            ("fee_bps", "300"),
            ("fee_address", addr),
        ],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let (audit, _) = s.app.engine().staff_audit(100, 1).await.unwrap();
    let set = audit
        .iter()
        .find(|a| a.action == "pricing.set")
        .expect("audited");
    assert_eq!(set.staff_id, format!("key:{}", acme.live_key_id.0));
    assert_eq!(set.target, acme.id.0);
    assert!(set.note.as_deref().unwrap().contains(addr), "{set:?}");
    // Staff (the service's command) may go above the ceiling.
    s.app
        .engine()
        .set_pricing(
            &acme.id,
            stablecoin_core::domain::fees::TenantPricing::from_parts(
                "PERCENTAGE",
                Some(1000),
                None,
                None,
            )
            .unwrap(),
            Some(stablecoin_core::ports::ChainAddress(addr.into())),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_test_session_shows_test_mode_data_only() {
    let s = start().await;
    let acme = s.tenant("Acme", "1000").await;
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    s.fund_settled(&acme.live, A, "100").await;
    let tr = s.send_usdc(&acme.live, A, B, "20").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut live = Console::sign_in(&s.base, &acme.live).await;
    let page = live.get("/dashboard/operations").await;
    assert!(page.body.contains(&tr), "the live session sees it");

    let mut t = Console::sign_in(&s.base, &acme.test).await;
    for path in [
        "/dashboard",
        "/dashboard/operations",
        "/dashboard/operations?kind=funding",
        &format!("/dashboard/operations/{tr}"),
        &format!("/dashboard/wallets?phone_number={}", A.replace('+', "%2B")),
        "/dashboard/escrows",
        "/dashboard/webhooks",
        "/dashboard/keys",
    ] {
        let r = t.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(!r.body.contains(&tr), "{path} shows a live operation");
        assert!(
            !r.body.contains(&acme.live_key_id.0),
            "{path} shows a live key id"
        );
        assert!(
            !r.body.contains("100.000000"),
            "{path} shows a live balance"
        );
        assert!(r.body.contains("TEST MODE"), "{path}");
    }
}

#[tokio::test]
async fn the_dashboard_counts_against_the_keys_rate_limit() {
    let mut cfg = test_config();
    cfg.rate_limits.read = 6;
    cfg.rate_limits.window_s = 3600;
    let s = start_with(cfg).await;
    let acme = s.tenant("Acme", "0").await;
    let mut c = Console::sign_in(&s.base, &acme.live).await;
    for _ in 0..6 {
        assert_eq!(c.get("/dashboard/wallets").await.status, 200);
    }
    // The key's read budget is spent by the pages: the API refuses it too, and the
    // dashboard answers 429 with Retry-After.
    let r = s.get(&acme.live, "/v1/transfers").await;
    r.expect_err(429, "RATE_LIMITED");
    let r = c.get("/dashboard").await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert!(r.headers.contains_key("retry-after"));
    // Another key of the tenant has its own budget.
    s.get(&acme.test, "/v1/transfers").await.expect(200);
}
