//! The dashboard's statement download (issue #52) in headless Chromium against a real
//! server on loopback: sign in, open Statements, fill the form as a user would, and
//! fetch what its Download button asks for with the page's own session: a CSV
//! attachment identical to the API's, adding up to the ledger.

use crate::common::browser::Browser;
use crate::common::*;
use serde_json::json;

const A: &str = "+2250700000001";
const B: &str = "+2250700000002";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_statement_download_in_chromium() {
    let Some(mut b) = Browser::launch("statements_browser").await else {
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
    // Fan-out records the events (what the events list reads).
    s.app.state().webhooks.fan_out().await.unwrap();

    b.navigate(&format!("{base}/dashboard")).await;
    b.fill("#api_key", &acme.live).await;
    b.click_and_load("form button[type=submit]").await;
    b.navigate(&format!("{base}/dashboard/statements")).await;
    let unlabelled = b
        .eval(
            "[...document.querySelectorAll('input:not([type=hidden]), select')]\
             .filter(el => !(el.labels && el.labels.length)).length",
        )
        .await;
    assert_eq!(unlabelled, json!(0), "every field has a label");
    b.shot("statements").await;
    b.eval("document.querySelector('#account').value = 'wallet'")
        .await;
    b.fill("#phone_number", A).await;
    // What the Download button submits (a GET form), fetched with the page's cookies.
    let got = b
        .eval(
            "(async () => { const f = document.querySelector('#statement-form'); \
             const u = new URL(f.action); \
             for (const [k, v] of new FormData(f)) if (v) u.searchParams.set(k, v); \
             const r = await fetch(u, {credentials: 'same-origin'}); \
             return [r.status, r.headers.get('content-disposition') || '', await r.text(), u.search]; })()",
        )
        .await;
    assert_eq!(got[0], json!(200), "{got}");
    assert!(
        got[1]
            .as_str()
            .unwrap()
            .contains("statement-wallet-USDC.csv")
    );
    let csv = got[2].as_str().unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(rows[0][0], "row_type");
    let sum: i128 = rows
        .iter()
        .filter(|r| r[0] == "entry")
        .map(|r| {
            let (neg, v) = match r[6].strip_prefix('-') {
                Some(v) => (true, v),
                None => (false, r[6]),
            };
            let x = i128::from(m(v).0);
            if neg { -x } else { x }
        })
        .sum();
    let closing = rows.last().unwrap();
    assert_eq!(closing[0], "closing");
    assert_eq!(
        i128::from(m(closing[7]).0),
        sum,
        "opening 0 + entries = closing"
    );
    assert!(sum > 0 && rows.iter().filter(|r| r[0] == "entry").count() >= 2);
    // The same statement over the API (the closing row's time aside).
    let api = s
        .get(
            &acme.live,
            &format!("/v1/statements{}", got[3].as_str().unwrap()),
        )
        .await;
    api.expect(200);
    let body = |t: &str| {
        t.lines()
            .filter(|l| !l.starts_with("closing,"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(body(csv), body(&api.text()));

    // The events download on the same page: JSON lines, the /v1/events objects.
    let got = b
        .eval(
            "(async () => { const f = document.querySelector('#events-form'); \
             const u = new URL(f.action); \
             for (const [k, v] of new FormData(f)) if (v) u.searchParams.set(k, v); \
             const r = await fetch(u, {credentials: 'same-origin'}); \
             return [r.status, r.headers.get('content-type') || '', await r.text()]; })()",
        )
        .await;
    assert_eq!(got[0], json!(200), "{got}");
    assert_eq!(got[1], json!("application/x-ndjson"));
    let listed = s.get(&acme.live, "/v1/events?limit=100").await.text();
    let lines: Vec<&str> = got[2].as_str().unwrap().lines().collect();
    assert!(!lines.is_empty());
    for line in lines {
        assert!(listed.contains(line), "{line}");
    }
}
