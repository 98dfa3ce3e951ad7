//! The tenant dashboard and the staff console in headless Chromium (Debian's package,
//! over the DevTools protocol) against a real server on loopback: the journeys of issue
//! #32, a screenshot of every page under `target/screenshots/dashboard_browser/`, and
//! the accessibility basics (labels, keyboard focus, a phone's width).

use crate::common::browser::Browser;
use crate::common::*;
use serde_json::{Value, json};
use stablecoin_core::domain::money::{Micros, Token};
use stablecoin_core::ports::{ChainAddress, RailId};
use std::time::Duration;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";
const FEE_ADDRESS: &str = "0x00000000000000000000000000000000000000fe";
const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef-0123456789";

async fn text(b: &mut Browser) -> String {
    b.eval("document.body.innerText")
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Every form control has a label, every image a text alternative, and the first Tab
/// lands on the skip link: checked on each page visited.
async fn accessible(b: &mut Browser, page: &str) {
    let unlabelled = b
        .eval(
            "[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]\
             .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')).length",
        )
        .await;
    assert_eq!(
        unlabelled,
        json!(0),
        "{page}: a form control without a label"
    );
    let unnamed = b
        .eval("[...document.querySelectorAll('svg[role=img]')].filter(s => !s.getAttribute('aria-label')).length")
        .await;
    assert_eq!(unnamed, json!(0), "{page}: a chart without a name");
    assert_eq!(b.eval("document.documentElement.lang").await, json!("en"));
    let fits = b
        .eval("document.documentElement.scrollWidth <= window.innerWidth + 1 || !!document.querySelector('.scroll')")
        .await;
    assert_eq!(
        fits,
        json!(true),
        "{page}: wider than a phone outside a scroll box"
    );
}

async fn visit(b: &mut Browser, base: &str, path: &str, shot: &str) -> String {
    b.navigate(&format!("{base}{path}")).await;
    accessible(b, path).await;
    b.shot(shot).await;
    text(b).await
}

async fn transfer(s: &Server, key: &str, amount: &str) -> Value {
    s.send_usdc(key, A, B, amount).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tenant_dashboard_in_chromium() {
    let Some(mut b) = Browser::launch("dashboard_browser").await else {
        return;
    };
    let mut cfg = test_config();
    cfg.webhooks_allow_loopback_http = true;
    cfg.admin.token = Some(stablecoin_server::config::Secret::new(ADMIN_TOKEN));
    let s = start_with(cfg).await;
    let base = s.base.clone();
    let acme = s.tenant("Acme Wallets", "1000").await;
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    s.fund_settled(&acme.live, A, "200").await;
    let first = transfer(&s, &acme.live, "12.5").await;
    s.settle().await;
    let biz = s
        .post(
            &acme.live,
            "/v1/businesses",
            &json!({"name": "Acme Coffee"}).to_string(),
        )
        .await;
    biz.expect(201);
    let biz_live = biz.json()["live_key"].as_str().unwrap().to_string();
    s.post(
        &biz_live,
        "/api/v1/checkout/sessions",
        &json!({"amount": "25", "currency": "USDC", "reference": "order-1042",
            "description": "Two coffees", "customer_name": "Ada", "customer_email": "ada@example.com",
            "networks": ["polygon"], "expires_in_secs": 600})
        .to_string(),
    )
    .await
    .expect(201);

    // Sign in.
    b.navigate(&format!("{base}/dashboard")).await;
    assert!(
        text(&mut b).await.contains("Tenant API key"),
        "redirected to sign-in"
    );
    accessible(&mut b, "/dashboard/login").await;
    b.press_tab().await;
    assert_eq!(
        b.eval("document.activeElement.className").await,
        json!("skip"),
        "the first Tab reaches the skip link"
    );
    b.shot("sign-in").await;
    b.fill("#api_key", &acme.live).await;
    b.click_and_load("form button[type=submit]").await;
    let overview = text(&mut b).await;
    assert!(overview.contains("Treasury USDC"), "{overview}");
    assert!(overview.contains("LIVE"));
    accessible(&mut b, "/dashboard").await;
    b.shot("overview").await;

    // Create a webhook endpoint; its secret is shown once.
    let (hook_url, got) = webhook_receiver::recording_receiver().await;
    visit(&mut b, &base, "/dashboard/webhooks", "webhooks-empty").await;
    b.fill("#url", &hook_url).await;
    b.fill("input[name='event:transfer.settled']", "on").await;
    b.fill("input[name='event:transfer.received']", "on").await;
    b.click_and_load("form[action='/dashboard/webhooks'] button[type=submit]")
        .await;
    let secret = b
        .eval("document.getElementById('secret').textContent")
        .await
        .as_str()
        .unwrap()
        .to_string();
    assert!(secret.starts_with("svcwh_"), "{secret}");
    b.shot("webhook-secret-shown-once").await;
    b.navigate(&format!("{base}/dashboard/webhooks")).await;
    assert!(
        !b.html().await.contains(&secret),
        "the secret is gone after its display"
    );

    // A transfer: its delivery appears, with status and latency; replay it.
    let tr = transfer(&s, &acme.live, "7").await;
    let tr_id = tr["id"].as_str().unwrap().to_string();
    s.settle().await;
    s.app.state().webhooks.round().await.unwrap();
    assert!(
        !got.lock().unwrap().is_empty(),
        "the receiver got the event"
    );
    b.navigate(&format!("{base}/dashboard/webhooks")).await;
    b.wait_for(
        "document.body.innerText.includes('transfer.settled') && document.body.innerText.includes('DELIVERED')",
        Duration::from_secs(10),
    )
    .await;
    assert!(text(&mut b).await.contains(" ms"), "latency shown");
    b.shot("webhook-delivered").await;
    let received = got.lock().unwrap().len();
    b.click_and_load("form[action$='/replay'] button").await;
    assert!(text(&mut b).await.contains("queued again"));
    s.app.state().webhooks.round().await.unwrap();
    assert!(
        got.lock().unwrap().len() > received,
        "the replay was delivered"
    );
    b.navigate(&format!("{base}/dashboard/webhooks")).await;
    b.shot("webhook-replayed").await;

    // Rotate the secret: a new one, shown once.
    b.click_and_load("form[action$='/rotate'] button").await;
    let rotated = b
        .eval("document.getElementById('secret').textContent")
        .await
        .as_str()
        .unwrap()
        .to_string();
    assert!(rotated.starts_with("svcwh_") && rotated != secret);
    b.shot("webhook-secret-rotated").await;
    b.navigate(&format!("{base}/dashboard/webhooks")).await;
    let html = b.html().await;
    assert!(!html.contains(&rotated) && !html.contains(&secret));

    // Pricing: the next transfer's fees follow it.
    visit(&mut b, &base, "/dashboard/pricing", "pricing-before").await;
    b.fill("#mode", "FLAT").await;
    b.fill("#fee_flat", "0.75").await;
    b.fill("#fee_address", FEE_ADDRESS).await;
    b.click_and_load("form[action='/dashboard/pricing'] button")
        .await;
    assert!(text(&mut b).await.contains("Pricing saved"));
    b.shot("pricing-saved").await;
    let priced = transfer(&s, &acme.live, "10").await;
    assert_eq!(priced["tenant_fee"], "0.750000", "{priced}");
    let priced_id = priced["id"].as_str().unwrap();
    s.settle().await;
    let ops = visit(
        &mut b,
        &base,
        "/dashboard/operations?kind=transfer",
        "operations",
    )
    .await;
    assert!(ops.contains(priced_id) && ops.contains(&tr_id));
    let detail = visit(
        &mut b,
        &base,
        &format!("/dashboard/operations/{priced_id}"),
        "operation-detail",
    )
    .await;
    assert!(
        detail.contains("0.750000") && detail.contains("State history"),
        "{detail}"
    );
    let _ = first;

    // Wallets, escrows, checkout.
    let w = visit(
        &mut b,
        &base,
        "/dashboard/wallets?phone_number=%2B2250700000001",
        "wallet",
    )
    .await;
    assert!(w.contains("Balances per rail"), "{w}");
    let deal = s
        .post(
            &acme.live,
            "/v1/escrows",
            &json!({"buyer_phone_number": A, "seller_phone_number": B, "amount": "60",
                "reference": "phone-resale-311"})
            .to_string(),
        )
        .await;
    deal.expect(201);
    let deal = deal.json();
    let esc = deal["id"].as_str().unwrap().to_string();
    s.app
        .sim_rail(RailId::Tron)
        .unwrap()
        .mint(
            &ChainAddress(deal["escrow_address"].as_str().unwrap().into()),
            Token::Usdt,
            Micros(60_000_000),
        )
        .unwrap();
    s.settle_escrows().await;
    let list = visit(&mut b, &base, "/dashboard/escrows", "escrows").await;
    assert!(
        list.contains("phone-resale-311") && list.contains("FUNDED"),
        "{list}"
    );
    // The tenant opens a dispute from the escrow's page.
    visit(
        &mut b,
        &base,
        &format!("/dashboard/escrows/{esc}"),
        "escrow-funded",
    )
    .await;
    b.fill("#reason-dispute", "buyer says the phone is locked")
        .await;
    b.click_and_load(&format!(
        "form[action='/dashboard/escrows/{esc}/dispute'] button"
    ))
    .await;
    assert!(text(&mut b).await.contains("DISPUTED"));
    b.shot("escrow-disputed").await;
    let c = visit(&mut b, &base, "/dashboard/checkout", "checkout-sessions").await;
    assert!(c.contains("order-1042"), "{c}");
    b.click_and_load("td a[href^='/dashboard/checkout/']").await;
    assert!(text(&mut b).await.contains("Deposits"));
    b.shot("checkout-session").await;

    // API keys: issue one (shown once), use it, revoke it, see it refused.
    visit(&mut b, &base, "/dashboard/keys", "keys").await;
    b.fill("#mode", "live").await;
    b.click_and_load("form[action='/dashboard/keys'] button")
        .await;
    let key = b
        .eval("document.getElementById('secret').textContent")
        .await
        .as_str()
        .unwrap()
        .to_string();
    assert!(key.starts_with("svc_sk_live_"));
    b.shot("key-issued-once").await;
    s.get(&key, "/v1/transfers").await.expect(200);
    let key_id = s
        .app
        .engine()
        .list_api_keys(&acme.id, 1, 0)
        .await
        .unwrap()
        .0[0]
        .id
        .0
        .clone();
    b.navigate(&format!("{base}/dashboard/keys")).await;
    assert!(!b.html().await.contains(&key));
    b.click_and_load(&format!(
        "form[action='/dashboard/keys/{key_id}/revoke'] button"
    ))
    .await;
    b.shot("key-revoked").await;
    s.get(&key, "/v1/transfers")
        .await
        .expect_err(401, "API_KEY_REVOKED");

    // As staff: resolve the dispute in the console; the payout settles and the tenant
    // sees the resolution_note.
    let ada = s.app.engine().create_staff("ada").await.unwrap();
    b.navigate(&format!("{base}/console")).await;
    assert!(
        text(&mut b).await.contains("Staff secret"),
        "redirected to sign-in"
    );
    accessible(&mut b, "/console/login").await;
    b.shot("console-sign-in").await;
    b.fill("#staff_secret", &ada.secret).await;
    b.click_and_load("form button[type=submit]").await;
    let queue = text(&mut b).await;
    assert!(queue.contains(&esc) && queue.contains("dispute"), "{queue}");
    accessible(&mut b, "/console").await;
    b.shot("console-queue").await;
    b.click_and_load(&format!("a[href='/console/escrows/{esc}']"))
        .await;
    accessible(&mut b, "/console/escrows/{id}").await;
    b.shot("console-deal").await;
    let note = "The seller sent the unlock code late; refund the buyer in full.";
    b.fill("#resolution", "REFUND").await;
    b.fill("#resolution_note", note).await;
    b.click_and_load(&format!(
        "form[action='/console/escrows/{esc}/resolve'] button"
    ))
    .await;
    assert!(text(&mut b).await.contains("Resolved"));
    b.shot("console-resolved").await;
    s.settle_escrows().await;
    let audit = visit(&mut b, &base, "/console/audit", "console-audit").await;
    assert!(audit.contains("escrow.resolve") && audit.contains("unlock code"));
    let tenant_view = visit(
        &mut b,
        &base,
        &format!("/dashboard/escrows/{esc}"),
        "escrow-resolved-tenant-view",
    )
    .await;
    assert!(tenant_view.contains("REFUNDED"), "{tenant_view}");
    assert!(tenant_view.contains(note), "{tenant_view}");
    assert!(!b.html().await.contains(&ada.secret));

    // Overview again, with the day's operations in the chart.
    let o = visit(&mut b, &base, "/dashboard", "overview-after").await;
    assert!(o.contains("Operations, last 7 days"));
    // The same page on a desktop screen (the README's screenshot).
    b.set_viewport(1280, 900).await;
    b.navigate(&format!("{base}/dashboard/webhooks")).await;
    b.shot("webhooks-desktop").await;
    b.navigate(&format!("{base}/dashboard")).await;
    b.shot("overview-desktop").await;
}

/// Account test mode from the API keys page, in Chromium: the live session's button puts
/// the account in test mode (the badge and notice say so, and the live key's API calls
/// are simulated), and takes it out again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_test_mode_from_the_dashboard_in_chromium() {
    let Some(mut b) = Browser::launch("dashboard_browser_test_mode").await else {
        return;
    };
    let s = start().await;
    let base = s.base.clone();
    let acme = s.tenant("Acme Wallets", "1000").await;
    s.provision(&acme.live, A).await;
    b.navigate(&format!("{base}/dashboard")).await;
    b.fill("#api_key", &acme.live).await;
    b.click_and_load("form button[type=submit]").await;
    let keys = visit(&mut b, &base, "/dashboard/keys", "keys-live").await;
    assert!(keys.contains("Account test mode is off"), "{keys}");
    b.click_and_load("form[action='/dashboard/test-mode'] button")
        .await;
    let on = text(&mut b).await;
    assert!(on.contains("The account is in test mode"), "{on}");
    assert!(on.contains("Account test mode is on"), "{on}");
    assert!(on.contains("TEST MODE"), "the badge: {on}");
    accessible(&mut b, "/dashboard/keys (test mode)").await;
    b.shot("keys-account-test-mode").await;
    let fund = json!({"phone_number": A, "token": "USDC", "amount": "5"}).to_string();
    let before = s.commits();
    let r = s.post(&acme.live, "/v1/users/fund", &fund).await;
    r.expect(202);
    assert_eq!(r.json()["simulated"], true, "{}", r.text());
    assert_eq!(s.commits(), before, "nothing live written");

    b.click_and_load("form[action='/dashboard/test-mode'] button")
        .await;
    let off = text(&mut b).await;
    assert!(off.contains("The account is live again"), "{off}");
    assert!(off.contains("LIVE"), "{off}");
    let r = s.post(&acme.live, "/v1/users/fund", &fund).await;
    r.expect(202);
    assert!(r.header("location").is_some(), "live again: {}", r.text());
}
