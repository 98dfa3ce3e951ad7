//! The hosted payment page (`stablecoin_server::pages::pay`) on a loopback server: in
//! headless Chromium (live updates without a reload, accessibility, escaping, a phone's
//! width, screenshots under target/screenshots/), and as raw HTML without JavaScript.

use crate::common::browser::Browser;
use serde_json::{Value, json};
use stablecoin_server::pages::{PayDeposit, PayOption, PaySource, PayView, pay_routes};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const ID: &str = "cs_01HX3Y4Z5A6B7C8D9E0F1G2H3J";
const ADDRESS: &str = "0x52908400098527886E0F7030069857D2E4169EE7";
const TRON_ADDRESS: &str = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8";
const UPDATE: Duration = Duration::from_secs(10);

/// A source of one session whose view the test changes as it goes.
struct TestSource(Arc<Mutex<PayView>>);

#[async_trait::async_trait]
impl PaySource for TestSource {
    async fn pay_view(&self, session_id: &str) -> Option<PayView> {
        let view = self.0.lock().unwrap().clone();
        (view.session_id == session_id).then_some(view)
    }
}

fn awaiting() -> PayView {
    PayView {
        session_id: ID.into(),
        business_name: "Acme Coffee Roasters".into(),
        reference: Some("order-1042".into()),
        description: Some("2 × Ethiopia Yirgacheffe, 250 g".into()),
        amount: "25.000000".into(),
        currency: "USDC".into(),
        status: "pending".into(),
        phase: "awaiting_payment".into(),
        amount_received: "0.000000".into(),
        amount_pending: "0.000000".into(),
        amount_due: "25.000000".into(),
        excess: "0.000000".into(),
        late: false,
        failure_reason: None,
        expires_at: "2030-01-01T00:15:00Z".into(),
        expires_in_secs: 14 * 60 + 32,
        options: vec![
            PayOption {
                network: "polygon".into(),
                token: "USDC".into(),
                address: ADDRESS.into(),
                wallet_uri: None,
            },
            PayOption {
                network: "tron".into(),
                token: "USDT".into(),
                address: TRON_ADDRESS.into(),
                wallet_uri: None,
            },
        ],
        deposits: vec![],
        sandbox: true,
        refunds: Vec::new(),
    }
}

fn deposit(amount: &str, status: &str, confirmations: u64) -> PayDeposit {
    PayDeposit {
        network: "polygon".into(),
        token: "USDC".into(),
        amount: amount.into(),
        status: status.into(),
        confirmations,
        tx_hash: Some("0x8f2a61c4b5e7d9013f6a2b4c8d0e1f3a5b7c9d1e2f4a6b8c0d2e4f6a8b0c2d4e".into()),
    }
}

/// Serves the payment routes on a loopback port; returns the base URL.
async fn serve(view: Arc<Mutex<PayView>>) -> String {
    let app: axum::Router = pay_routes(Arc::new(TestSource(view)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// The page's text as a person sees it.
async fn text(b: &mut Browser) -> String {
    b.eval("document.body.innerText")
        .await
        .as_str()
        .unwrap()
        .to_string()
}

/// True when the page was not reloaded since the test marked it.
async fn same_page(b: &mut Browser, mark: &Value) {
    assert_eq!(&b.eval("window.__loadId").await, mark, "the page reloaded");
}

#[tokio::test]
async fn pay_page_goes_live_through_every_phase_in_chromium() {
    let Some(mut b) = Browser::launch("pay_page_live").await else {
        return;
    };
    let view = Arc::new(Mutex::new(awaiting()));
    let base = serve(view.clone()).await;
    b.navigate(&format!("{base}/pay/{ID}")).await;

    let t = text(&mut b).await;
    for shown in [
        ADDRESS,
        TRON_ADDRESS,
        "25.000000",
        "USDC",
        "Acme Coffee Roasters",
        "TEST MODE",
    ] {
        assert!(t.contains(shown), "{shown:?} not shown in:\n{t}");
    }
    assert!(t.contains("Awaiting payment"), "{t}");
    assert!(t.contains("Expires in 14:"), "{t}");
    // The stylesheet and the script loaded under the CSP: styled, and the copy buttons
    // (hidden without JS) are shown.
    let styled = b
        .eval("getComputedStyle(document.querySelector('.address')).overflowWrap")
        .await;
    assert_eq!(styled, "anywhere");
    b.wait_for(
        "document.querySelectorAll('button.copy:not([hidden])').length === 2",
        UPDATE,
    )
    .await;
    // Nothing wider than a phone, at 390 px and at 360 px.
    let fits = "document.documentElement.scrollWidth <= window.innerWidth";
    assert_eq!(b.eval(fits).await, true);
    let mark = b.eval("window.__loadId = Math.random()").await;
    b.shot("awaiting").await;

    // The countdown ticks down by itself.
    let before = b
        .eval("document.getElementById('countdown').textContent")
        .await;
    b.wait_for(
        &format!("document.getElementById('countdown').textContent !== {before}"),
        Duration::from_secs(3),
    )
    .await;

    // Seen, not yet confirmed.
    {
        let mut v = view.lock().unwrap();
        v.phase = "confirming".into();
        v.amount_pending = "25.000000".into();
        v.deposits = vec![deposit("25.000000", "detected", 2)];
    }
    b.wait_for(
        "document.getElementById('phase-text').textContent === \
         'Payment received, confirming (2 confirmations)'",
        UPDATE,
    )
    .await;
    let t = text(&mut b).await;
    assert!(
        t.contains("25.000000 USDC on Polygon — confirming (2 confirmations)"),
        "{t}"
    );
    assert!(t.contains("Confirming"), "{t}");
    // While it confirms, the page does not ask for the money again.
    assert_eq!(
        b.eval("document.getElementById('options').hidden").await,
        true
    );
    same_page(&mut b, &mark).await;
    b.shot("confirming").await;

    // Confirmed, but short.
    {
        let mut v = view.lock().unwrap();
        v.phase = "underpaid".into();
        v.amount_received = "20.000000".into();
        v.amount_pending = "0.000000".into();
        v.amount_due = "5.000000".into();
        v.deposits = vec![deposit("20.000000", "confirmed", 12)];
    }
    b.wait_for(
        "document.getElementById('phase-text').textContent === \
         'Underpaid: 5.000000 USDC still due'",
        UPDATE,
    )
    .await;
    let t = text(&mut b).await;
    assert!(
        t.contains("Still due\n5.000000 USDC") || t.contains("Still due\t5.000000 USDC"),
        "{t}"
    );
    assert_eq!(
        b.eval("document.getElementById('options').hidden").await,
        false
    );
    assert_eq!(
        b.eval("document.querySelector('#opt-0 [data-field=amount_due]').textContent")
            .await,
        "5.000000"
    );
    assert_eq!(
        b.eval("document.getElementById('status').className").await,
        "status status-warn"
    );
    assert!(
        b.eval("document.getElementById('live').textContent")
            .await
            .as_str()
            .is_some()
    );
    same_page(&mut b, &mark).await;
    b.shot("underpaid").await;

    // Paid: the addresses and the countdown go away; polling stops.
    {
        let mut v = view.lock().unwrap();
        v.status = "paid".into();
        v.phase = "paid".into();
        v.amount_received = "25.000000".into();
        v.amount_due = "0.000000".into();
        v.deposits.push(deposit("5.000000", "confirmed", 12));
    }
    b.wait_for(
        "document.getElementById('phase-text').textContent === 'Paid'",
        UPDATE,
    )
    .await;
    assert_eq!(
        b.eval("document.getElementById('options').hidden").await,
        true
    );
    assert_eq!(
        b.eval("document.getElementById('countdown-line').hidden")
            .await,
        true
    );
    assert_eq!(
        b.eval("document.getElementById('status').className").await,
        "status status-ok"
    );
    b.wait_for(
        "document.getElementById('live').textContent === 'Payment status: Paid'",
        UPDATE,
    )
    .await;
    same_page(&mut b, &mark).await;
    b.shot("paid").await;

    // Expired, with a payment that came late (a fresh load: a final page polls no more).
    *view.lock().unwrap() = PayView {
        status: "expired".into(),
        phase: "expired".into(),
        late: true,
        expires_in_secs: 0,
        amount_received: "25.000000".into(),
        amount_due: "0.000000".into(),
        deposits: vec![deposit("25.000000", "confirmed", 3)],
        sandbox: false,
        ..awaiting()
    };
    b.navigate(&format!("{base}/pay/{ID}")).await;
    let t = text(&mut b).await;
    assert!(t.contains("Expired — late payment received"), "{t}");
    assert!(!t.contains(ADDRESS) && !t.contains("TEST MODE"), "{t}");
    b.shot("expired-late").await;

    // At 360 px the page still fits.
    *view.lock().unwrap() = awaiting();
    b.set_viewport(360, 740).await;
    b.navigate(&format!("{base}/pay/{ID}")).await;
    assert_eq!(b.eval(fits).await, true);
    b.shot("awaiting-360px").await;
}

#[tokio::test]
async fn pay_page_is_accessible_and_escapes_what_the_business_wrote() {
    let Some(mut b) = Browser::launch("pay_page_a11y").await else {
        return;
    };
    let hostile = "<script>alert(1)</script>";
    let view = Arc::new(Mutex::new(PayView {
        description: Some(hostile.into()),
        reference: Some("\"><img src=x onerror=alert(2)>".into()),
        business_name: "Tom & Jerry's".into(),
        options: vec![awaiting().options[0].clone()],
        sandbox: false,
        ..awaiting()
    }));
    let base = serve(view).await;
    b.navigate(&format!("{base}/pay/{ID}")).await;

    // Escaped: shown as text, nothing injected.
    assert_eq!(
        b.eval("document.querySelectorAll('script').length").await,
        1
    );
    assert_eq!(b.eval("document.querySelectorAll('img').length").await, 0);
    assert_eq!(
        b.eval("document.querySelector('.description').textContent")
            .await,
        hostile
    );
    assert_eq!(
        b.eval("document.querySelector('.merchant').textContent")
            .await,
        "Tom & Jerry's"
    );

    // Landmarks, language, heading, labels.
    assert_eq!(b.eval("document.documentElement.lang").await, "en");
    assert_eq!(b.eval("document.querySelectorAll('main').length").await, 1);
    assert_eq!(
        b.eval("document.querySelector('h1').textContent").await,
        "Pay 25.000000 USDC"
    );
    let label = "document.getElementById(document.getElementById('addr-0')\
                 .getAttribute('aria-labelledby')).textContent";
    assert_eq!(b.eval(label).await, "Deposit address (Polygon)");
    assert_eq!(
        b.eval("document.querySelector('#live').getAttribute('aria-live')")
            .await,
        "polite"
    );

    // The copy button: a real button, reachable with Tab, and it does something.
    b.wait_for("!document.querySelector('button.copy').hidden", UPDATE)
        .await;
    assert_eq!(
        b.eval("document.querySelector('button.copy').tagName")
            .await,
        "BUTTON"
    );
    assert!(
        b.eval("document.querySelector('button.copy').tabIndex")
            .await
            .as_i64()
            .unwrap()
            >= 0
    );
    let mut reached = false;
    for _ in 0..20 {
        b.press_tab().await;
        if b.eval("document.activeElement.classList.contains('copy')")
            .await
            == true
        {
            reached = true;
            break;
        }
    }
    assert!(reached, "Tab never reaches the copy button");
    let outline = b
        .eval("getComputedStyle(document.activeElement).outlineStyle")
        .await;
    assert_eq!(outline, "solid", "no visible focus outline");
    b.shot("copy-focused").await;
    b.eval("document.activeElement.click()").await;
    b.wait_for(
        "document.querySelector('button.copy').textContent !== 'Copy address'",
        UPDATE,
    )
    .await;
}

#[tokio::test]
async fn pay_page_works_without_javascript() {
    let view = Arc::new(Mutex::new(PayView {
        phase: "underpaid".into(),
        amount_received: "20.000000".into(),
        amount_due: "5.000000".into(),
        deposits: vec![deposit("20.000000", "confirmed", 12)],
        ..awaiting()
    }));
    let base = serve(view).await;
    let r = reqwest::get(format!("{base}/pay/{ID}")).await.unwrap();
    assert_eq!(r.status(), 200);
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(
        csp,
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert_eq!(r.headers()["referrer-policy"], "no-referrer");
    assert_eq!(r.headers()["cache-control"], "no-store");
    let html = r.text().await.unwrap();
    for shown in [
        ADDRESS,
        TRON_ADDRESS,
        "25.000000",
        "USDC",
        "Underpaid: 5.000000 USDC still due",
        "Expires in 14:32",
        "20.000000 USDC on Polygon",
        "<noscript><meta http-equiv=\"refresh\" content=\"10\"></noscript>",
        "<svg class=\"qr\"",
    ] {
        assert!(html.contains(shown), "{shown:?} not in the raw HTML");
    }

    let status: Value = reqwest::get(format!("{base}/pay/{ID}/status"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["phase"], "underpaid");
    assert_eq!(status["amount_due"], "5.000000");
}

#[tokio::test]
async fn unknown_or_malformed_ids_answer_a_bare_404() {
    let base = serve(Arc::new(Mutex::new(awaiting()))).await;
    let mut pages = vec![];
    for id in [
        "cs_00000000000000000000000000",
        "cs_nope",
        "pi_123",
        "cs_%22%3E%3C",
    ] {
        let r = reqwest::get(format!("{base}/pay/{id}")).await.unwrap();
        assert_eq!(r.status(), 404, "{id}");
        assert!(r.headers().contains_key("content-security-policy"));
        let html = r.text().await.unwrap();
        for secret in [ID, ADDRESS, "Acme", "25.000000", "order-1042"] {
            assert!(!html.contains(secret), "{id}: the 404 shows {secret}");
        }
        pages.push(html);

        let r = reqwest::get(format!("{base}/pay/{id}/status"))
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{id}");
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["error"]["code"], json!("NOT_FOUND"));
        assert!(!body.to_string().contains("Acme"));
    }
    assert!(
        pages.windows(2).all(|w| w[0] == w[1]),
        "unknown and malformed differ"
    );

    let js = reqwest::get(format!("{base}/pay/assets/pay.js"))
        .await
        .unwrap();
    assert_eq!(js.status(), 200);
    assert_eq!(
        js.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let css = reqwest::get(format!("{base}/pay/assets/pay.css"))
        .await
        .unwrap();
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
}
