//! The dashboard's export downloads (issue #52 item 3) in headless Chromium against a
//! real server on loopback: sign in, open Exports, and fetch what each form's Download
//! button asks for with the page's own session: the same file the API streams, for
//! operations, withdrawals, escrow deals, checkout sessions and payments.

use crate::common::browser::Browser;
use crate::common::*;
use serde_json::{Value, json};

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

/// What the form `#<export>-form` submits (a GET form) after `setup` ran in the page,
/// fetched with the page's cookies: status, Content-Disposition, body, query string.
async fn download(b: &mut Browser, export: &str, setup: &str) -> Value {
    b.eval(&format!(
        "(async () => {{ {setup}; const f = document.querySelector('#{export}-form'); \
         const u = new URL(f.action); \
         for (const [k, v] of new FormData(f)) if (v) u.searchParams.set(k, v); \
         const r = await fetch(u, {{credentials: 'same-origin'}}); \
         return [r.status, r.headers.get('content-disposition') || '', await r.text(), u.search]; }})()"
    ))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_export_downloads_in_chromium() {
    let Some(mut b) = Browser::launch("exports_browser").await else {
        return;
    };
    let s = start().await;
    let base = s.base.clone();
    let acme = s.tenant("Acme", "1000").await;
    s.provision(&acme.live, A).await;
    s.provision(&acme.live, B).await;
    s.fund_settled(&acme.live, A, "200").await;
    s.send_usdc(&acme.live, A, B, "12.5").await;
    s.settle().await;
    let body = json!({"amount": "5", "currency": "USDC", "reference": "=SUM(A1)",
        "description": "Two coffees", "networks": ["polygon"], "expires_in_secs": 600});
    s.post(
        &acme.business_live,
        "/api/v1/checkout/sessions",
        &body.to_string(),
    )
    .await
    .expect(201);

    b.navigate(&format!("{base}/dashboard")).await;
    b.fill("#api_key", &acme.live).await;
    b.click_and_load("form button[type=submit]").await;
    b.navigate(&format!("{base}/dashboard/exports")).await;
    let unlabelled = b
        .eval(
            "[...document.querySelectorAll('input:not([type=hidden]), select')]\
             .filter(el => !(el.labels && el.labels.length)).length",
        )
        .await;
    assert_eq!(unlabelled, json!(0), "every field has a label");
    let forms = b
        .eval("[...document.querySelectorAll('form.filters')].map(f => f.id)")
        .await;
    assert_eq!(
        forms,
        json!([
            "operations-form",
            "withdrawals-form",
            "escrows-form",
            "checkout_sessions-form",
            "payments-form"
        ])
    );
    b.shot("exports").await;

    // Operations, CSV, transfers only: the API's file.
    let got = download(
        &mut b,
        "operations",
        "document.querySelector('#operations-kind').value = 'transfer'",
    )
    .await;
    assert_eq!(got[0], json!(200), "{got}");
    assert_eq!(got[1], json!("attachment; filename=\"operations.csv\""));
    let query = got[3].as_str().unwrap();
    assert!(query.contains("kind=transfer"), "{query}");
    let csv = got[2].as_str().unwrap();
    assert_eq!(
        csv.lines().count(),
        2,
        "the header and the one transfer: {csv}"
    );
    let api = s
        .get(
            &acme.live,
            "/v1/exports/operations?format=csv&kind=transfer",
        )
        .await;
    assert_eq!(csv, api.text());

    // Operations, JSON lines, every kind.
    let got = download(
        &mut b,
        "operations",
        "document.querySelector('#operations-kind').value = ''; \
         document.querySelector('#operations-format').value = 'jsonl'",
    )
    .await;
    assert_eq!(got[0], json!(200), "{got}");
    assert_eq!(got[1], json!("attachment; filename=\"operations.jsonl\""));
    let api = s
        .get(&acme.live, "/v1/exports/operations?format=jsonl")
        .await;
    assert_eq!(got[2].as_str().unwrap(), api.text());
    assert_eq!(api.text().lines().count(), 2, "a funding and a transfer");

    // Withdrawals and escrows: their headers (none made).
    for (export, first) in [
        ("withdrawals", "id,status,"),
        ("escrows", "id,object,state,"),
    ] {
        let got = download(&mut b, export, "").await;
        assert_eq!(got[0], json!(200), "{export}: {got}");
        assert_eq!(
            got[1],
            json!(format!("attachment; filename=\"{export}.csv\""))
        );
        let text = got[2].as_str().unwrap();
        assert!(text.starts_with(first), "{export}: {text}");
        assert_eq!(text.lines().count(), 1);
    }

    // Checkout sessions of the default business, live: the business key's export.
    let got = download(&mut b, "checkout_sessions", "").await;
    assert_eq!(got[0], json!(200), "{got}");
    let api = s
        .get(
            &acme.business_live,
            "/api/v1/exports/checkout_sessions?format=csv",
        )
        .await;
    assert_eq!(got[2].as_str().unwrap(), api.text());
    assert!(
        api.text().contains(",'=SUM(A1),"),
        "neutralised: {}",
        api.text()
    );
    let got = download(&mut b, "payments", "").await;
    assert_eq!(got[0], json!(200), "{got}");
    assert!(got[2].as_str().unwrap().starts_with("session_id,"));

    // A bad parameter is the dashboard's error page, not a file.
    let got = download(
        &mut b,
        "operations",
        "document.querySelector('#operations-state').value = 'NOPE'",
    )
    .await;
    assert_eq!(got[0], json!(400), "{got}");
    assert_eq!(got[1], json!(""));
}
