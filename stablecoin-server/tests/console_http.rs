//! The staff console (`/console`) over real HTTP on loopback: sign-in with a staff
//! account or the admin token (never a tenant key), CSRF refusals, resolving a dispute
//! of any tenant to settlement with the tenant seeing the `resolution_note` in its own
//! dashboard, the two-person rule, the audit log, and a disabled account's session
//! ending. `dashboard_browser.rs` drives the same pages in headless Chromium.

use crate::common::console::Console;
use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{ChainAddress, RailId};

const BUYER: &str = "+2250700000001";
const SELLER: &str = "+2250700000002";
const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";

async fn settle(s: &Server) {
    s.settle_escrows().await;
}

/// A funded, then DISPUTED deal of `t` for `whole` USDT.
async fn disputed(s: &Server, t: &Tenant, whole: u64, reference: &str) -> String {
    let r = s
        .post(
            &t.live,
            "/v1/escrows",
            &json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
                "amount": whole.to_string(), "reference": reference})
            .to_string(),
        )
        .await;
    r.expect(201);
    let e: Value = r.json();
    s.app
        .sim_rail(RailId::Tron)
        .unwrap()
        .mint(
            &ChainAddress(e["escrow_address"].as_str().unwrap().into()),
            Token::Usdt,
            Micros(whole * 1_000_000),
        )
        .unwrap();
    settle(s).await;
    let id = e["id"].as_str().unwrap().to_string();
    s.post(
        &t.live,
        &format!("/v1/escrows/{id}/dispute"),
        r#"{"reason":"goods damaged","on_behalf_of":"BUYER"}"#,
    )
    .await
    .expect(200);
    id
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
    assert_eq!(r.location.as_deref(), Some("/console"));
    c
}

async fn server(second_approval_above: Option<&str>) -> Server {
    let mut c = test_config();
    c.admin.token = Some(stablecoin_server::config::Secret::new(ADMIN_TOKEN));
    c.admin.second_approval_above = second_approval_above.map(str::to_string);
    start_with(c).await
}

#[tokio::test]
async fn staff_resolve_a_dispute_in_the_console_and_the_tenant_sees_the_note() {
    let s = server(None).await;
    let acme = s.tenant("Acme", "0").await;
    s.provision(&acme.live, BUYER).await;
    s.provision(&acme.live, SELLER).await;
    let id = disputed(&s, &acme, 40, "acme-order-9").await;
    let ada = s.app.engine().create_staff("ada").await.unwrap();

    // Only staff credentials open the console: not a tenant key, not a made-up secret.
    let mut stranger = Console::new(&s.base);
    assert_eq!(
        stranger.get("/console").await.location.as_deref(),
        Some("/console/login")
    );
    for bad in [
        acme.live.as_str(),
        "stf_sk_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "nope",
    ] {
        let csrf = stranger.csrf("/console/login").await;
        let r = stranger
            .post("/console/login", &[("csrf", &csrf), ("staff_secret", bad)])
            .await;
        assert_eq!(r.status, 401, "{bad}: {}", r.body);
        assert!(r.body.contains("ADMIN_TOKEN_REQUIRED"), "{}", r.body);
    }
    // A tenant's dashboard session is no console session.
    let dash = Console::sign_in(&s.base, &acme.live).await;
    let mut as_tenant = Console::new(&s.base);
    as_tenant
        .cookies
        .insert("sc_console".into(), dash.cookies["sc_dashboard"].clone());
    assert_eq!(as_tenant.get("/console").await.status, 303);

    let mut c = staff_sign_in(&s.base, &ada.secret).await;
    let q = c.get("/console").await;
    assert_eq!(q.status, 200, "{}", q.body);
    assert!(
        q.body.contains(&id) && q.body.contains(&acme.id.0),
        "{}",
        q.body
    );
    assert!(!q.body.contains(&ada.secret));
    let page = c.get(&format!("/console/escrows/{id}")).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("goods damaged") && page.body.contains("Resolve the dispute"));
    let token = page.csrf();

    // Without the session's token: refused, nothing changes.
    let before = s.commits();
    let r = c
        .post(
            &format!("/console/escrows/{id}/resolve"),
            &[("resolution", "REFUND"), ("resolution_note", "x")],
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(s.commits(), before);
    // Without a note: the engine's 400.
    let r = c
        .post(
            &format!("/console/escrows/{id}/resolve"),
            &[
                ("csrf", &token),
                ("resolution", "REFUND"),
                ("resolution_note", ""),
            ],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("MISSING_PARAMETER"), "{}", r.body);
    let note = "Photos show the parcel crushed in transit; refund the buyer.";
    let r = c
        .post(
            &format!("/console/escrows/{id}/resolve"),
            &[
                ("csrf", &token),
                ("resolution", "REFUND"),
                ("resolution_note", note),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    settle(&s).await;

    // The tenant sees the outcome and the note, in its API and in its dashboard.
    let v = s.get(&acme.live, &format!("/v1/escrows/{id}")).await.json();
    assert_eq!(v["state"], "REFUNDED", "{v}");
    assert_eq!(v["resolution_note"], note);
    let mut dash = dash;
    let tenant_view = dash.get(&format!("/dashboard/escrows/{id}")).await;
    assert!(tenant_view.body.contains("REFUNDED"));
    assert!(
        tenant_view
            .body
            .contains("Photos show the parcel crushed in transit")
    );
    // It left the queue; the audit log says who, what and why.
    assert!(!c.get("/console").await.body.contains(&id));
    let audit = c.get("/console/audit").await;
    assert!(audit.body.contains("escrow.resolve") && audit.body.contains(&ada.account.id));
    assert!(audit.body.contains("Photos show the parcel crushed"));

    // Disabling the account ends its session on the next request.
    s.app.engine().disable_staff(&ada.account.id).await.unwrap();
    let r = c.get("/console").await;
    assert_eq!(r.status, 303);
    assert_eq!(r.location.as_deref(), Some("/console/login?ended=1"));
}

#[tokio::test]
async fn above_the_threshold_a_second_staff_member_must_agree() {
    let s = server(Some("100")).await;
    let acme = s.tenant("Acme", "0").await;
    s.provision(&acme.live, BUYER).await;
    s.provision(&acme.live, SELLER).await;
    let id = disputed(&s, &acme, 500, "big-order").await;
    let ada = s.app.engine().create_staff("ada").await.unwrap();
    let bob = s.app.engine().create_staff("bob").await.unwrap();
    let mut a = staff_sign_in(&s.base, &ada.secret).await;
    let token = a.csrf(&format!("/console/escrows/{id}")).await;
    let path = format!("/console/escrows/{id}/resolve");
    let r = a
        .post(
            &path,
            &[
                ("csrf", &token),
                ("resolution", "RELEASE"),
                ("resolution_note", "seller proved delivery"),
            ],
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(r.body.contains("Awaiting a second approval"));
    // The same staff member cannot approve their own proposal.
    let r = a
        .post(
            &path,
            &[
                ("csrf", &token),
                ("resolution", "RELEASE"),
                ("resolution_note", "again"),
            ],
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.body.contains("SECOND_APPROVER_REQUIRED"));
    // The admin token is a second identity; so is Bob.
    let mut b = staff_sign_in(&s.base, &bob.secret).await;
    let token = b.csrf(&format!("/console/escrows/{id}")).await;
    let r = b
        .post(
            &path,
            &[
                ("csrf", &token),
                ("resolution", "RELEASE"),
                ("resolution_note", "agreed"),
            ],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    settle(&s).await;
    let v = s.get(&acme.live, &format!("/v1/escrows/{id}")).await.json();
    assert_eq!(v["state"], "RELEASED", "{v}");
    assert_eq!(v["resolution_note"], "seller proved delivery");
    let mut t = staff_sign_in(&s.base, ADMIN_TOKEN).await;
    let audit = t.get("/console/audit").await;
    assert!(audit.body.contains("escrow.resolve.proposed"));
    assert!(audit.body.contains(&bob.account.id));
}

#[tokio::test]
async fn staff_return_an_excess_deposit_from_the_console() {
    let s = server(None).await;
    let acme = s.tenant("Acme", "0").await;
    s.provision(&acme.live, BUYER).await;
    s.provision(&acme.live, SELLER).await;
    let r = s
        .post(
            &acme.live,
            "/v1/escrows",
            &json!({"buyer_phone_number": BUYER, "seller_phone_number": SELLER,
                "amount": "10", "reference": "overpaid"})
            .to_string(),
        )
        .await;
    r.expect(201);
    let e: Value = r.json();
    let id = e["id"].as_str().unwrap().to_string();
    s.app
        .sim_rail(RailId::Tron)
        .unwrap()
        .mint(
            &ChainAddress(e["escrow_address"].as_str().unwrap().into()),
            Token::Usdt,
            Micros(13_500_000),
        )
        .unwrap();
    settle(&s).await;
    let mut c = staff_sign_in(&s.base, ADMIN_TOKEN).await;
    let q = c.get("/console").await;
    assert!(
        q.body.contains(&id) && q.body.contains("recoverable deposit"),
        "{}",
        q.body
    );
    let page = c.get(&format!("/console/escrows/{id}")).await;
    assert!(page.body.contains("Recoverable balances"), "{}", page.body);
    assert!(page.body.contains("3.500000 USDT EXCESS"), "{}", page.body);
    let token = page.csrf();
    let path = format!("/console/escrows/{id}/recoveries");
    // The note is required (the engine's 400), and the token (403).
    let r = c
        .post(
            &path,
            &[
                ("csrf", &token),
                ("kind", "EXCESS"),
                ("token", "USDT"),
                ("note", ""),
            ],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = c
        .post(
            &path,
            &[("kind", "EXCESS"), ("token", "USDT"), ("note", "n")],
        )
        .await;
    assert_eq!(r.status, 403);
    let r = c
        .post(
            &path,
            &[
                ("csrf", &token),
                ("kind", "EXCESS"),
                ("token", "USDT"),
                ("note", "buyer overpaid"),
            ],
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(r.body.contains("3.500000 USDT claimed"), "{}", r.body);
    settle(&s).await;
    let page = c.get(&format!("/console/escrows/{id}")).await;
    assert!(!page.body.contains("Recoverable balances"));
    assert!(page.body.contains("escrow.recovered"));
    assert!(
        !c.get("/console").await.body.contains(&id),
        "it left the queue"
    );
    let audit = c.get("/console/audit").await;
    assert!(audit.body.contains("escrow.recovery") && audit.body.contains("admin-token"));
}
